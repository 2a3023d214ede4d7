// The camera page's loop (views/camera.py: live_markup, FRAME_PATH). Start asks for the camera and
// sends frames to the frames' route, a JPEG in the request body; the answer is the live picture's
// book (camera.py: live_book), drawn here (page/web/camera_draw.js). One frame on its way while that
// paints SMOOTH_FPS pictures a second: each picture then shows the newest frame it can. Below that
// pace, where the server's own work would keep it, two (IN_FLIGHT): the next frame leaves while the
// last one's forward runs, timed to reach the server as that forward ends, so the server never
// waits for the page's drawing, a frame never waits long behind an older one, and no frame is
// captured that the server would drop: more pictures a second, each about a forward older.
// The map's controls are read from the page for each frame. sid: this page's camera token; side:
// the short side a frame is sent at (views/camera.py: frame_side), no bigger than the camera's.
(sid, side) => {
  const ID = VIZVIT_IDS;  // the element ids (page/ids.py), written in as the script is read
  const box = document.querySelector(`#${ID.CAM_LIVE}`);
  if (!box || box.dataset.wired) return;
  box.dataset.wired = '1';
  box.dataset.sid = sid;  // this page's own token (tests read it)
  let cfg = JSON.parse(box.dataset.config);  // read again at each Start
  const video = box.querySelector(`#${ID.CAM_VIDEO}`), status = box.querySelector(`#${ID.CAM_STATUS}`);
  const startBtn = box.querySelector(`#${ID.CAM_START}`), stopBtn = box.querySelector(`#${ID.CAM_STOP}`);
  const url = new URL(cfg.path, (window.gradio_config?.root || location.origin) + '/').href;
  const canvas = document.createElement('canvas');
  let stream = null, running = false;

  const say = (text) => { status.textContent = text; };
  // The live top-1 for a screen reader (the book's top1: [class, words]; views/camera.py top1_of): the top-5 is
  // drawn on a canvas. Said in a polite region when its class differs from the one last said, at most once every
  // cfg.say_ms: a class seen meanwhile waits for the end of that time, and only the newest is then said (one that
  // flickers back to the class said is not said at all). Never once a picture.
  const heard = box.querySelector(`#${ID.CAM_SAID}`);
  let saidClass = null, saidAt = -Infinity, newest = null, sayLater = null;
  const sayTop1 = (top1) => {
    newest = top1;
    if (sayLater || !heard || !newest) return;
    const now = () => {
      sayLater = null;
      if (!running || !newest || newest[0] === saidClass) return;
      [saidClass] = newest;
      heard.textContent = newest[1];
      saidAt = performance.now();
    };
    const wait = saidAt + cfg.say_ms - performance.now();
    if (wait > 0) sayLater = setTimeout(now, wait); else now();
  };
  const value = (id) => {  // a control's value as the page shows it
    const el = document.querySelector('#' + id);
    if (!el) return '';
    const checked = el.querySelector('input[type=radio]:checked');
    if (checked) return checked.value;
    const input = el.querySelector('input[type=number], input:not([type]), input[type=text]');
    return input ? input.value : '';
  };
  // Where the live picture is drawn (page/web/camera_draw.js): made at the first picture, and put in
  // the page once drawn (an empty canvas would show a blank box while the first view decodes).
  const picture = () => {
    const cv = document.querySelector(`#${ID.CAM_PICTURE} canvas.vv-live`);
    if (cv) return cv;
    const made = document.createElement('canvas');
    made.className = 'vv-live';
    made.setAttribute('role', 'img');
    made.setAttribute('aria-label', 'the live camera picture: model input with patch grid, attention map, top-5');
    made.style.cssText = 'width:100%;height:auto';
    return made;
  };
  // The screen's next frame, or 100 ms at most: a hidden tab runs no animation frames, and the loop
  // must go on (its next frame's answer is how the run's time limit reaches the page).
  const painted = () => new Promise((ok) => {
    const t = setTimeout(ok, 100);
    requestAnimationFrame(() => { clearTimeout(t); setTimeout(ok, 0); });
  });
  // The frame as the camera sees it, as JPEG bytes. Only the preview is mirrored (style.css), as a
  // mirror shows you: text held up to the camera must reach the model as it reads, not reversed.
  const capture = () => {
    const k = Math.min(1, (side || 1e9) / Math.min(video.videoWidth, video.videoHeight));
    const w = Math.round(video.videoWidth * k), h = Math.round(video.videoHeight * k);
    canvas.width = w; canvas.height = h;
    const ctx = canvas.getContext('2d');
    ctx.drawImage(video, 0, 0, w, h);
    // toDataURL, not toBlob: Chromium encodes a toBlob in the page's idle time, which added
    // ~17 ms before each frame left; a small frame encodes in ~1 ms here.
    const bin = atob(canvas.toDataURL('image/jpeg', cfg.quality).split(',')[1]);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return bytes;
  };
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  // The server's account of a frame (Server-Timing: 'wait;dur=2.1, idle;dur=0.0, ...') -> {wait: 2.1, ...}
  const timing = (r) => Object.fromEntries((r.headers.get('Server-Timing') || '').split(',')
    .map((e) => e.trim().match(/^([\w-]+);dur=([\d.]+)$/)).filter(Boolean).map((m) => [m[1], +m[2]]));

  // run: this run's number. A loop whose run is over (Stop, then Start again while its fetch was
  // on its way) ends at its next step, so one run never has frames of two loops in flight.
  // With two frames on their way (`ahead` below; views/camera.py: IN_FLIGHT): while one frame's forward
  // runs, the next is captured `lead` ms after that frame was sent, so that it reaches the server as
  // the forward ends: lead is the server's recent work on a frame up to its forward's end (the
  // median of the last five, from its Server-Timing) and an offset that follows its account of each
  // frame: the frame waited for the forward before it (sent too early: later next time) or the
  // server stood idle before it came (too late: sooner).
  // Answers are drawn in the order sent, one drawing at a time; an answer older than the picture
  // shown is not drawn.
  let run = 0;
  // The run's frames on their way: Stop aborts them, so a Start right after never has the old run's
  // frame in flight beside its own (seen under load: three at once).
  let runAbort = null;
  const WAIT_MS = 2;  // what a frame sent ahead should wait for the forward before it: a little, never idle
  const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  async function loop(mine) {
    let restart = true, sent = 0, lead = 0, offset = 0, seq = 0, shown = 0, drawing = Promise.resolve();
    const works = [];
    // The frames on their way at once (box.dataset.inFlight; tests and the benchmark read it), chosen
    // by the pictures a second each choice paints here, measured over its last PACE_N pictures. One
    // while that reaches cfg.smooth_fps. Below it, cfg.in_flight, but only where the server's own work
    // on a frame (decode and forward, the median of the last five) fits 1/cfg.smooth_fps s: then
    // what sending ahead hides is the rest of the trip (HTTP, drawing, a far server's round trip).
    // Where the forward itself is slower (1.15 of that, a margin), one: a frame sent ahead would only
    // wait for it (random ViT-B/16 here: ~5 pictures/s either way, 191 -> 217 ms capture to paint).
    // A frame sent ahead waits for the forward before it, so while two are on their way one frame at
    // a time is tried again, after cfg.retry_ms, then twice that, up to ten times (it may suffice now:
    // another model, a quieter machine). An estimate from two's own trips would not do: with the
    // page's drawing beside each forward on the same cores, the forwards take longer than they would
    // alone. For the same reason, after two gave way to one because the work grew, two are not
    // chosen again before that wait (else a forward just under the time alone and over it beside the
    // drawing would switch the choice about once a second).
    // No cfg.smooth_fps: cfg.in_flight always (no pace to keep).
    const PACE_N = 8, PROBE_MS = cfg.retry_ms, PROBE_MAX_MS = 10 * cfg.retry_ms;
    let ahead = 0, modeAt = 0, probeMs = PROBE_MS, holdUntil = 0;
    const drawn = [];  // the current choice's pictures, when each was drawn (the last PACE_N)
    const choose = (k) => {
      ahead = k; modeAt = performance.now(); drawn.length = 0;
      box.dataset.inFlight = String(k);
    };
    choose(cfg.smooth_fps ? 1 : cfg.in_flight);
    const pace = () => {
      if (!cfg.smooth_fps) return;
      const now = performance.now();
      drawn.push(now);
      if (drawn.length > PACE_N) drawn.shift();
      const budget = 1000 / cfg.smooth_fps, work = works.length ? median(works) : 0;
      if (ahead > 1) {
        if (work > 1.15 * budget || now - modeAt > probeMs) {
          if (work > 1.15 * budget) holdUntil = now + probeMs;
          probeMs = Math.min(2 * probeMs, PROBE_MAX_MS);
          choose(1);
        }
        return;
      }
      if (drawn.length < PACE_N) return;
      const rate = 1000 * (PACE_N - 1) / (now - drawn[0]);
      if (rate >= cfg.smooth_fps) probeMs = PROBE_MS;  // one suffices: a later slowdown is tried early
      else if (work < budget && now >= holdUntil) choose(cfg.in_flight);
    };
    const flying = new Set();
    const live = () => running && run === mine;
    const aborting = new AbortController();
    runAbort = aborting;
    const fail = (e) => {  // anything unexpected: say it and stop, rather than hang with the camera on
      if (live()) stop('The camera stopped: ' + (e && e.message || e) + '. Press Start again.');
    };
    // One frame's trip: sent, answered, drawn (in turn).
    async function trip(frame, q, n) {
      let r;
      try {
        r = await fetch(url + '?' + q, { method: 'POST', body: frame, headers: { 'Content-Type': 'image/jpeg' },
                                         signal: aborting.signal });
      } catch (e) {
        if (!live()) return;  // stopped: its frames were called back
        say('The server cannot be reached: retrying…'); await sleep(1000); return;
      }
      if (!live()) return;
      if (q.get('restart') === '1') restart = false;
      if (r.status === 204) return;  // a newer frame of this camera took its place
      if (!r.ok) {
        let msg = r.statusText;
        try { msg = (await r.json()).error || msg; } catch (e) { /* not JSON */ }
        stop(msg);
        return;
      }
      const t = timing(r);
      if ('forward' in t) {
        works.push((t.decode || 0) + t.forward);  // not the book: it runs beside the next frame's forward
        if (works.length > 5) works.shift();
        const work = median(works);  // the median: one slow forward moves it little
        if (works.length > 1) offset = Math.max(-work / 2, Math.min(work / 2, offset + 0.3 * ((t.wait || 0) - (t.idle || 0) - WAIT_MS)));
        lead = work + offset;
      }
      const book = JSON.parse(await r.text());
      drawing = drawing.then(async () => {
        if (!live() || n < shown) return;  // stopped, or a newer picture is on screen
        const cv = await window.__vizvitCamDraw.draw(book, picture(), live);
        if (!live()) return;  // stopped while the view decoded: nothing drawn, the stop's message stays
        shown = n;
        pace();
        if (!cv.isConnected) document.querySelector(`#${ID.CAM_PICTURE}`).replaceChildren(cv);
        cv.style.maxWidth = book.layout.width + 'px';
        cv.dataset.side = r.headers.get('X-Side');
        cv.dataset.frame = r.headers.get('X-Frame');  // last: the capture probe and Freeze read it
        say('');
        sayTop1(book.top1);
        if (r.headers.get('X-Note') === '1') document.querySelector(`#${ID.CAM_NOTE_REFRESH}`)?.click();
      }).catch(fail);
      await drawing;
    }
    while (live()) {
      try {
        if (!video.videoWidth) { await sleep(50); continue; }
        // The first frame (the run's restart) goes alone; then at most `ahead` at once.
        if (flying.size && (restart || flying.size >= ahead)) { await Promise.race(flying); continue; }
        if (flying.size) {  // one on its way: the next leaves as that one's forward is about to end
          const wait = sent + lead - performance.now();
          if (wait > 0) await Promise.race([sleep(wait), ...flying]);
          if (!live()) break;
          if (flying.size >= ahead) continue;
        } else if (seq) {
          // Nothing on its way (one at a time, or the answer came before `lead`): let the
          // picture just drawn be painted before this capture takes the page's time.
          await painted();
        }
        const wait = cfg.min_interval_ms - (performance.now() - sent);
        if (wait > 0) await sleep(wait);
        if (!live()) break;
        sent = performance.now();
        const frame = capture();
        // run and n: the frame's place, so that the server drops one that reaches it after a newer one.
        const q = new URLSearchParams({ sid, layer: value(ID.CAM_LAYER), heads: value(ID.CAM_HEADS),
                                        mode: value(ID.CAM_MODE), restart: restart ? '1' : '0',
                                        run: String(mine), n: String(++seq) });
        const job = trip(frame, q, seq).catch(fail).finally(() => flying.delete(job));
        flying.add(job);
      } catch (e) {
        fail(e);
        break;
      }
    }
  }

  // Start disables itself while the browser asks, and a disabled button drops the focus to <body> (a screen
  // reader started again from the top): the focus goes on to the button of the next step, unless it has moved on.
  const handOn = (to) => {
    const at = document.activeElement;
    if (!at || at === document.body || at === startBtn || at === stopBtn) to.focus();
  };

  function stop(msg) {
    running = false;
    clearTimeout(sayLater);
    sayLater = null; saidClass = null;  // a new Start says its first top-1 (the region keeps the last one said)
    run++;
    if (runAbort) runAbort.abort();
    runAbort = null;
    if (stream) stream.getTracks().forEach((t) => t.stop());
    stream = null;
    video.srcObject = null;
    startBtn.disabled = false; stopBtn.disabled = true;
    handOn(startBtn);
    say(msg || '');
  }

  startBtn.addEventListener('click', async () => {
    if (running || startBtn.disabled) return;
    if (!navigator.mediaDevices?.getUserMedia) {  // browsers give the camera to secure pages only
      say('This browser gives the camera only to https:// pages and to localhost: open the page that way.');
      return;
    }
    startBtn.disabled = true;  // one camera per page: a second click while the browser asks does nothing
    cfg = JSON.parse(box.dataset.config);
    say('Asking for the camera…');
    try {
      stream = await navigator.mediaDevices.getUserMedia(cfg.constraints);
    } catch (e) {
      startBtn.disabled = false;
      handOn(startBtn);
      say(e && e.name === 'NotAllowedError' ? 'The camera was not allowed: allow it in the browser, then Start.'
                                             : 'No camera could be opened here (' + (e && e.name || e) + ').');
      return;
    }
    // The camera unplugged or taken by another program: say so, rather than wait for frames.
    stream.getVideoTracks().forEach((t) => t.addEventListener('ended', () => stop('The camera went away. Press Start again.')));
    video.srcObject = stream;
    await video.play().catch(() => {});
    running = true;
    stopBtn.disabled = false;
    handOn(stopBtn);
    say('');
    loop(++run);
  });
  stopBtn.addEventListener('click', () => stop(''));
  startBtn.disabled = false;
}
