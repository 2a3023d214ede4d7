// Flipbooks (vizvit/views/flip.py, page/flip.py): js_on_load of a hidden gr.HTML "flip-NAME" whose
// value is a book {name, look, merge, controls: [elem ids], pages: {key: {target elem id: a picture's
// path, or a chart}}, rows, toggle}, or marks {kind: "marks", ...} (flip.Marks).
// A page's key is the controls' values as shown here, joined by '|' (flip.page_key). When the user
// moves a control to a position the book holds (drag, keys, number box, a picked option, a table
// row, a click that toggles a cell), its pictures are put in the targets' <img> (its charts drawn)
// at once, with no round trip, and the event is then handed on to Gradio, unchanged, for the rest
// of the view (texts, other charts). The pictures are the server's own files: its answer for that
// position carries the same URLs and changes nothing on screen. An older answer arriving after a
// newer move (a held-back slider event) is put back to the page of the user's last move.
// Runs at every mount: the state lives in window.__vizvitFlip, installed once.
const F = window.__vizvitFlip || (window.__vizvitFlip = (() => {
  // name -> {look, controls, pages, rows, toggle + state (the page's set), urls: Set (its pictures),
  // held: [Image] (kept decoded), want + from (the user's last move, and the key before it), charted}
  const books = {};
  const root = () => window.gradio_config?.root || location.origin;
  const fileUrl = (path) => root() + '/gradio_api/file=' + path;
  // A number as Python's flip.key_value writes it: "3", not "3.0".
  const norm = (v) => (v !== '' && Number.isFinite(Number(v)) ? String(Number(v)) : v);

  // A control's value as the page shows it; the event's own input leads (a slider's number box
  // holds the new value before Gradio copies it to the range).
  const valueOf = (id, ev) => {
    const el = document.getElementById(id);
    if (!el) return null;
    const t = ev && ev.target;
    if (t instanceof HTMLInputElement && el.contains(t)) {
      if (t.type === 'range' || t.type === 'number') return norm(t.value);
      if (t.type === 'radio' && t.checked) return t.value;
      if (t.type === 'checkbox') return String(t.checked);
    }
    const range = el.querySelector('input[type=range]');
    if (range) return norm(range.value);
    const radios = el.querySelectorAll('input[type=radio]');
    if (radios.length) { const c = el.querySelector('input[type=radio]:checked'); return c ? c.value : null; }
    const box = el.querySelector('input[type=checkbox]');
    if (box) return String(box.checked);
    const inp = el.querySelector('input, textarea');
    return inp ? inp.value : null;
  };
  // A book with a toggle (flip.Toggle) keys its pages by the set the page holds too, last.
  const keyOf = (b, ev) => b.controls.map((id) => valueOf(id, ev)).concat(b.toggle ? [b.state] : []).join('|');
  const imgOf = (id) => document.querySelector('#' + id + ' img');

  // A chart page, as Gradio's own plot component draws a figure (its PlotlyPlot: responsive,
  // autosize, a top margin for a titled chart with a label), or a restyle of one trace.
  const drawChart = (id, v) => {
    const gd = document.querySelector('#' + id + ' .js-plotly-plot');
    if (!gd || !window.Plotly) return null;
    guardChart(gd, id);
    if (v.restyle) {
      const update = Object.fromEntries(Object.entries(v.restyle).map(([k, val]) => [k, [val]]));
      return window.Plotly.restyle(gd, update, [v.trace]);
    }
    const e = JSON.parse(v.figure);
    e.config = e.config || {};
    e.config.responsive = true;
    e.layout.autosize = true;
    e.layout.margin ??= {};
    if (e.layout.title && v.show_label) e.layout.margin.t = Math.max(100, e.layout.margin.t || 0);
    e.layout.margin.autoexpand = true;
    drawing = true;  // this react is ours: not an older answer's
    try { return window.Plotly.react(gd, e.data, e.layout, e.config); } finally { drawing = false; }
  };
  // The charts' side of "an older answer never replaces the user's last move": after Gradio draws
  // an answer's figure, a book whose page for the user's last move is another chart draws it again.
  let drawing = false;
  const guardChart = (gd, id) => {
    if (gd.__flipGuard) return;
    gd.__flipGuard = true;
    gd.on('plotly_react', () => {
      if (drawing) return;
      for (const b of Object.values(books)) {
        const key = b.want === null ? null : wanted(b);
        const v = key !== null && b.pages[key] && b.pages[key][id];
        if (!v || typeof v === 'string') continue;
        const same = v.figure ? JSON.stringify(gd.data) === JSON.stringify(JSON.parse(v.figure).data) : false;
        if (!same) drawChart(id, v);  // a restyle is put back in any case: it is cheap and idempotent
      }
    });
  };

  // A page the book does not hold, from a book with a `fetch` URL (page/flip.py: Fetcher), asked
  // of the server at once over plain HTTP (one forward), not through a Gradio event. One request
  // per book at a time: a newer move waiting replaces an older one (as always_last does). A promise
  // that settles once the answer is drawn, or is no longer wanted; a refusal draws nothing (the
  // Gradio event, handed on after it, brings the message).
  const asking = {};  // book name -> {busy: the key asked, now: its promise, next: [key, resolve]}
  const ask = (name, key) => {
    const q = asking[name] || (asking[name] = { busy: null, now: null, next: null });
    if (q.next) { q.next[1](); q.next = null; }  // superseded: its held event goes on, unasked
    if (q.busy === key) return q.now;
    const p = new Promise((resolve) => { q.next = [key, resolve]; });
    pump(name);
    return p;
  };
  const pump = (name) => {
    const q = asking[name], b = books[name];
    if (q.busy !== null || !q.next || !b) return;
    const [key, resolve] = q.next;
    q.next = null;
    if (b.pages[key]) { resolve(); pump(name); return; }
    const look = b.look;
    q.busy = key;
    q.now = fetch(new URL(b.fetch + '&key=' + encodeURIComponent(key), root() + '/').href, { cache: 'no-store' })
      // A refusal's body is read too: left unread, the request stayed open (never finished) in the browser.
      .then((r) => (r.ok ? r.text() : r.text().then(() => null)))
      // The photo may have changed on the way: an answer of another look is dropped.
      .then((text) => (text && books[name] && books[name].look === look ? Promise.all(setBook(text)) : null))
      .catch(() => null)
      .finally(() => { q.busy = null; q.now = null; resolve(); pump(name); });
  };
  const ASK_LIMIT_MS = 5000;  // the longest an event waits for an asked page before it goes to Gradio

  // A target showing a picture this book does not hold: the screen is newer than the book (a new
  // photo's picture drawn ahead, page/kit.py: the work ahead; a new photo's or a click's answer;
  // a mark drawn on it) until the answer that brings the new book. Its pages would draw the photo
  // before over the new one, so such a book draws nothing and asks for nothing (the event goes to
  // Gradio). A book that is current holds every picture on its targets: the server's answer for a
  // position carries the same URLs as the book's page for it.
  const behind = (b) => {
    const ids = new Set(Object.values(b.pages).flatMap((page) =>
      Object.entries(page).filter(([, v]) => typeof v === 'string').map(([id]) => id)));
    return [...ids].some((id) => { const s = imgOf(id)?.getAttribute('src'); return s && !b.urls.has(s); });
  };

  // Show book b's page `key`: a promise per target drawn (the picture decoded, the chart drawn),
  // or null if the book has no such page.
  const draw = (b, key) => {
    const page = b.pages[key];
    if (!page || behind(b)) return null;
    const done = [], charts = [];
    for (const [id, v] of Object.entries(page)) {
      if (typeof v !== 'string') {  // a chart: drawn once per move (a restyle is not idempotent to time)
        if (b.charted[id] !== key) { b.charted[id] = key; charts.push([id, v]); }
        continue;
      }
      const img = imgOf(id), url = fileUrl(v);
      if (img && img.getAttribute('src') !== url) {
        img.src = url;
        img.dataset.flipped = url;  // the browser tests and the latency benchmark read this
        done.push(img.decode());
      }
    }
    // Beside pictures, a chart is drawn after the frame that paints them (Plotly's work would hold
    // that frame back); alone, at once.
    const drawCharts = () => Promise.all(charts.map(([id, v]) => drawChart(id, v)));
    if (charts.length) {
      done.push(done.length ? new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0))).then(drawCharts) : drawCharts());
    }
    return done.filter(Boolean);
  };
  // The position to show: the user's last move (b.want: a number box leads its range until Gradio
  // has copied it over), or the controls as they are.
  // Once nothing is held, a control the server has moved since (a clicked table row, a deep link)
  // is the new word: the user's last move is forgotten.
  // (b.from: the controls as the page read them at that move; until Gradio has taken the move in,
  // a number box's range or a dropdown's input still reads so.)
  const wanted = (b) => {
    const now = keyOf(b);
    if (b.want !== null && !window.__vizvitHandOn.held() && now !== b.want && now !== b.from) b.want = null;
    return b.want ?? now;
  };
  const move = (b, key) => { b.from = keyOf(b); b.want = key; };

  // A click's pixel on a picture's own pixels, as Gradio maps it (the picture drawn centred,
  // object-fit contain, never enlarged).
  const pixelOf = (img, e) => {
    const n = img.getBoundingClientRect(), s = Math.min(n.width / img.naturalWidth, n.height / img.naturalHeight, 1);
    return [Math.round((e.clientX - n.left - (n.width - img.naturalWidth * s) / 2) / s),
            Math.round((e.clientY - n.top - (n.height - img.naturalHeight * s) / 2) / s)];
  };

  // Marks (flip.Marks): a picture with a mark on one cell; a click on another cell is drawn here
  // from the picture without the mark and the mark alone, both the server's pixels.
  const marks = {};  // name -> the raw marks + their loaded pictures
  const load = (path) => { const im = new Image(); im.src = fileUrl(path); return im; };
  const setMarks = (raw) => { marks[raw.name] = { ...raw, baseImg: load(raw.base), markImg: load(raw.mark) }; };
  const drawMark = (m, [r, c]) => {
    const base = m.baseImg, cv = document.createElement('canvas');
    cv.width = base.naturalWidth;
    cv.height = base.naturalHeight;
    const x = cv.getContext('2d');
    x.drawImage(base, 0, 0);
    x.drawImage(m.markImg, c * m.step[0] + m.offset[0], r * m.step[1] + m.offset[1]);  // clipped to the picture
    return cv.toDataURL('image/png');
  };

  const setBook = (text) => {
    const raw = text ? JSON.parse(text) : null;
    if (!raw || !raw.name) return;
    if (raw.kind === 'marks') { setMarks(raw); return; }
    const old = books[raw.name];
    const b = raw.merge && old && old.look === raw.look
      ? { ...old, pages: { ...old.pages, ...raw.pages } }
      : { look: raw.look, controls: raw.controls, rows: raw.rows, pages: { ...raw.pages }, urls: new Set(), held: [],
          want: old && old.look === raw.look ? old.want : null, charted: {} };
    b.fetch = raw.fetch || b.fetch || null;  // a fetched answer names no URL: keep the book's
    // The set a toggle book holds: the server's word when it gives one (a new photo, a button),
    // else the page's own (it has seen every click; this answer may be an older click's).
    b.toggle = raw.toggle || null;
    if (b.toggle) b.state = raw.toggle.state ?? (old && old.look === raw.look ? old.state : '');
    // Fetch and decode every new picture now (kept alive, so a swap is drawn from memory).
    for (const page of Object.values(raw.pages)) {
      for (const path of Object.values(page)) {
        if (typeof path !== 'string') continue;  // a chart
        const url = fileUrl(path);
        if (b.urls.has(url)) continue;
        b.urls.add(url);
        const im = new Image();
        im.decoding = 'async';
        im.src = url;
        b.held.push(im);
      }
    }
    books[raw.name] = b;
    // The user may have moved while the book was on its way: a promise per target drawn.
    return (b.want !== null && draw(b, wanted(b))) || [];
  };

  // Held until the new pictures are painted, then handed to Gradio (hand_on.js, run before this).
  const { handedOn } = window.__vizvitHandOn;
  const handOn = (e, drawn, limit) => window.__vizvitHandOn.handOn(
    e, e.target, Promise.all(drawn.map((p) => Promise.resolve(p).catch(() => null))), limit);
  // A user's move to `key`: its page drawn, or asked of the server (then held longer): [promises,
  // the hold's limit], or null when the book neither holds nor can ask for it.
  const show = (name, b, key) => {
    const drawn = draw(b, key);
    if (drawn) return [drawn, undefined];
    return b.fetch && !behind(b) ? [[ask(name, key)], ASK_LIMIT_MS] : null;
  };
  const onInput = (e) => {
    const t = e.target;
    if (!(t instanceof Element) || handedOn.has(e)) return;
    for (const [name, b] of Object.entries(books)) {
      if (!b.controls.some((id) => t.closest('#' + id))) continue;
      move(b, keyOf(b, e));
      const shown = show(name, b, b.want);
      if (shown && e.isTrusted) handOn(e, ...shown);
      return;
    }
  };
  document.addEventListener('input', onInput, true);
  document.addEventListener('change', onInput, true);

  // A click on a marked picture: the clicked cell, found as the server finds it (the click's pixel
  // on the picture as Gradio computes it, floor of that over the cell step).
  document.addEventListener('click', (e) => {
    const t = e.target;
    if (!(t instanceof Element) || handedOn.has(e) || !e.isTrusted) return;
    for (const m of Object.values(marks)) {
      const img = t.closest('#' + m.target) && t.closest('#' + m.target).querySelector('img');
      const base = m.baseImg;
      if (!img || !img.naturalWidth || !base.naturalWidth || !m.markImg.naturalWidth) continue;
      if (img.naturalWidth !== base.naturalWidth || img.naturalHeight !== base.naturalHeight) continue;  // another picture
      const [x, y] = pixelOf(img, e);
      const rc = [Math.floor(y / m.step[1]), Math.floor(x / m.step[0])];
      if (x < 0 || y < 0 || rc[0] >= m.cells[0] || rc[1] >= m.cells[1]) continue;  // off the cells: the server says so
      const url = drawMark(m, rc);
      img.src = url;
      img.dataset.flipped = url;
      handOn(e, [img.decode()]);
      return;
    }
  }, true);

  // The table's own cell selection (on pointer down) costs a frame's worth of work before the
  // page can paint: a read-only table whose rows a book reads needs none.
  for (const type of ['pointerdown', 'mousedown']) {
    document.addEventListener(type, (e) => {
      const t = e.target;
      if (!(t instanceof Element)) return;
      if (Object.values(books).some((b) => b.rows && t.closest('#' + b.rows + ' [data-row]'))) e.stopImmediatePropagation();
    }, true);
  }
  // An option picked from a dropdown that is a book's control (Gradio takes it on mousedown, with
  // no input event): drawn at once. The mousedown goes on to Gradio at once too: held, it would
  // reach a list the input's blur has already closed.
  document.addEventListener('mousedown', (e) => {
    const t = e.target, opt = t instanceof Element && t.closest('[role=option]');
    if (!opt || handedOn.has(e)) return;
    for (const b of Object.values(books)) {
      const id = b.controls.find((c) => opt.closest('#' + c));
      if (!id) continue;
      const v = opt.getAttribute('aria-label') ?? opt.dataset.value ?? opt.textContent.trim();
      move(b, b.controls.map((c) => (c === id ? v : valueOf(c))).concat(b.toggle ? [b.state] : []).join('|'));
      draw(b, b.want);
      return;
    }
  }, true);

  // A click on a toggle book's picture: the cell under it toggles in the page's set (as the
  // server's click toggles it), the set goes to the box for the server, and a page for the new
  // set is drawn at once (the click then goes on to Gradio after the paint).
  document.addEventListener('click', (e) => {
    const t = e.target;
    if (!(t instanceof Element) || handedOn.has(e) || !e.isTrusted) return;
    for (const [name, b] of Object.entries(books)) {
      const tg = b.toggle, img = tg && t.closest('#' + tg.target) && t.closest('#' + tg.target).querySelector('img');
      if (!img || !img.naturalWidth) continue;
      const [x, y] = pixelOf(img, e);
      const r = Math.floor(y / tg.cell), c = Math.floor(x / tg.cell);
      if (x < 0 || y < 0 || r >= tg.cells[0] || c >= tg.cells[1]) return;  // off the grid: the server says so
      const id = r * tg.cells[1] + c, set = new Set(b.state ? b.state.split(',').map(Number) : []);
      if (set.has(id)) set.delete(id); else set.add(id);
      b.state = [...set].sort((p, q) => p - q).join(',');
      const box = tg.box && document.querySelector('#' + tg.box + ' textarea, #' + tg.box + ' input');
      if (box) { box.value = tg.prefix + b.state; box.dispatchEvent(new Event('input', { bubbles: true })); }
      move(b, keyOf(b));
      const shown = show(name, b, b.want);
      if (shown) handOn(e, ...shown);
      return;
    }
  }, true);

  // A click on row k of a book's table sets its one control to k: drawn here, then the control's
  // events go to Gradio (after the paint) as if the user had moved it.
  document.addEventListener('click', (e) => {
    const t = e.target;
    if (!(t instanceof Element) || !e.isTrusted) return;
    for (const b of Object.values(books)) {
      const cell = b.rows && t.closest('#' + b.rows + ' [data-row]');
      const range = cell && document.querySelector('#' + b.controls[0] + ' input[type=range]');
      if (!range) continue;
      // The table's own click (its select event, a round trip that sets the same control) would
      // hold the paint back: the control's events below carry the change instead.
      e.stopImmediatePropagation();
      range.value = cell.dataset.row;
      move(b, keyOf(b));
      const drawn = draw(b, b.want) || [];
      const later = () => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(() => {
        for (const type of ['input', 'change']) { const ev = new Event(type, { bubbles: true }); handedOn.add(ev); range.dispatchEvent(ev); }
      }, 0)));
      Promise.race([Promise.all(drawn.map((p) => Promise.resolve(p).catch(() => null))), new Promise((r) => setTimeout(r, 300))]).then(later, later);
      return;
    }
  }, true);

  // An answer that puts another page of a book on screen (sent for a position the user has left
  // since) is replaced by the page of the user's last move, before it paints. With no move of the
  // user's pending, the server's answer is the word (a new photo, new labels). (A new position set
  // by the server, a new photo or a deep link, comes with a new book, which forgets b.want.)
  new MutationObserver((records) => {
    for (const r of records) {
      const img = r.target;
      if (!(img instanceof HTMLImageElement)) continue;
      for (const b of Object.values(books)) {
        if (b.want !== null && b.urls.has(img.getAttribute('src'))) draw(b, wanted(b));
      }
    }
  }).observe(document.documentElement, { subtree: true, attributes: true, attributeFilter: ['src'] });
  return { setBook, books, marks, drawMark };
})());
F.setBook(props.value);
watch('value', () => F.setBook(props.value));
