// The live room's page (issue 45): the lecturer's (?host=1) and a student's (?code=XXXXXXXX), plain JS
// over the public API (gradio_api/call/room_*) and the room's plain routes vizvit_room/{code}/...
// Issue 50: nothing from the address, a response or storage ever becomes markup. Every value reaches the
// DOM as text or as a property (el() below: no innerHTML anywhere), every URL path part passes through
// encodeURIComponent (roomPath), and a room code is checked against its alphabet and length (parseCode)
// before it is used at all. The alphabet, the length and the sentences come from vizvit.classroom.room
// (window.VIZVIT_ROOM, written into the page by page/room.py's page_html).
(function () {
  const CFG = window.VIZVIT_ROOM;
  const root = new URL(".", location.href).href;  // the app's root, wherever it is mounted
  const q = new URLSearchParams(location.search);
  const app = document.getElementById("app");

  // el("p", { className: "error" }, "text", child, ...): props set as properties (aria-* as attributes),
  // children appended as nodes or as text, never parsed.
  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k.startsWith("aria-")) e.setAttribute(k, v);
      else if (k === "dataset") Object.assign(e.dataset, v);
      else if (k === "style") Object.assign(e.style, v);
      else e[k] = v;
    }
    for (const c of children.flat()) if (c != null && c !== false) e.append(c instanceof Node ? c : String(c));
    return e;
  }
  // Every redraw replaces the page's nodes: the focused control (by id, or an option by its key) is
  // focused again after it, so a keyboard user keeps their place (WCAG 2.4.3).
  function show(...children) {
    const was = document.activeElement, id = was && was.id, k = was && was.dataset && was.dataset.k;
    app.replaceChildren(...children.flat().filter((c) => c != null && c !== false));
    const again = (id && document.getElementById(id)) || (k && app.querySelector(`[data-k="${CSS.escape(k)}"]`));
    if (again && again !== was) again.focus();
  }
  // What changed, read out by a screen reader (a polite live region outside the redrawn part, WCAG 4.1.3).
  const said = document.getElementById("said");
  let lastSaid = "";
  function say(text) {
    if (!said || !text || text === lastSaid) return;
    lastSaid = text;
    said.textContent = text;
  }
  // A dropped connection's TypeError ("Failed to fetch") in words a lecturer can act on; a host page's
  // own loop says it is asking again.
  const UNREACHABLE = "The server cannot be reached: try again in a moment.";
  const RESENDING = "The server cannot be reached: this page sends your answer again by itself.";
  const RECONNECTING = "The server cannot be reached: reconnecting…";
  const RECONNECTED = "The server answers again: you are back in the room.";
  const plain = (e) => (e instanceof TypeError ? UNREACHABLE
    : e && (e.name === "TimeoutError" || e.name === "AbortError") ? "The server took too long to answer: try again." : e.message);

  // vizvit.classroom.room.parse_code, the same rule: spaces and dashes dropped, upper-cased, CFG.length of CFG.alphabet.
  function parseCode(raw) {
    if (typeof raw !== "string" || raw.length > 4 * CFG.length) return null;
    const t = raw.replace(/[\s-]/g, "").toUpperCase();
    return t.length === CFG.length && [...t].every((c) => CFG.alphabet.includes(c)) ? t : null;
  }
  const roomPath = (code, ...parts) => `${root}vizvit_room/${[code, ...parts].map((p) => encodeURIComponent(String(p))).join("/")}`;
  const sleep = (ms) => new Promise((res) => setTimeout(res, ms));
  // A route this server does not have yet (an older server): Starlette's 404/405, not a room's refusal.
  const absent = (r) => (r.status === 404 || r.status === 405) && !r.body.error;
  // A 429's wait, in ms: Retry-After, else the sentence's "wait N s", else 5 s.
  const waitMs = (r) => 1000 * (Number(r.retry) || Number((/wait (\d+) s/.exec(r.body.error || "") || [])[1]) || 5);

  // A plain route's answer: { ok, status, body (always an object), retry }; a dropped connection throws.
  async function fetchJSON(url, init) {
    const r = await fetch(url, { cache: "no-store", ...init });
    let body = null;
    try { body = await r.json(); } catch (e) { /* not JSON: an empty object below */ }
    return { ok: r.ok, status: r.status, body: body && typeof body === "object" ? body : {}, retry: r.headers.get("Retry-After") };
  }
  // A plain route answers in milliseconds (a reveal measured on the spot: seconds): one that has not in
  // `ms` is a lost connection (a fetch that never settles would stop the host page's tick, and with it the
  // heartbeat that keeps the room open). AbortSignal.timeout is Safari 16+: an older phone gets a timer.
  function timeout(ms) {
    if (typeof AbortSignal !== "undefined" && typeof AbortSignal.timeout === "function") return AbortSignal.timeout(ms);
    if (typeof AbortController === "undefined") return undefined;
    const c = new AbortController();
    setTimeout(() => c.abort(), ms);
    return c.signal;
  }
  // A plain route's 5xx (the server restarting behind a proxy, its room store down: 503) is a server out of
  // reach, as a dropped connection is: thrown, so each caller says "reconnecting…" and asks again. A review
  // found a Redis outage read as a refusal (a student's page stopped asking) or a closed room.
  const reachable = (r) => { if (r.status >= 500) throw new Error("unreachable"); return r; };
  const post = (url, body, ms = 20_000) => fetchJSON(url, { method: "POST", headers: { "Content-Type": "application/json" },
                                                            body: JSON.stringify(body), signal: timeout(ms) });

  async function call(endpoint, data) {  // the public API (Gradio's queue): room_open, room_close
    const r = await fetch(`${root}gradio_api/call/${encodeURIComponent(endpoint)}`, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ data }) });
    const body = await r.json();
    if (!r.ok) throw new Error(typeof body.detail === "string" ? body.detail : "The server refused that.");
    const text = await (await fetch(`${root}gradio_api/call/${encodeURIComponent(endpoint)}/${encodeURIComponent(body.event_id)}`)).text();
    const kinds = [...text.matchAll(/^event: (\w+)/gm)].map((m) => m[1]);
    const datas = [...text.matchAll(/^data: (.*)$/gm)].map((m) => m[1]);
    const payload = JSON.parse(datas[datas.length - 1] || "null");
    if (kinds[kinds.length - 1] !== "complete") throw new Error((payload && payload.error) || "Something went wrong.");
    return payload[0];
  }

  // A step's bars: an option step has one bar per option, in the lesson's order, labelled with its words
  // and drawn at 0 when nobody chose it (a bar only for the answers given hid the options nobody took, and
  // "b" alone said nothing); a number step has the server's bars (vizvit.classroom.room.number_bars: the
  // most given numbers, the truth among them) and one for every other number given.
  const OTHERS = "\u0000others";  // a key no answer can be
  function bars(tally, truth, own, step) {
    const got = (tally && tally.answers) || {};
    const count = (a) => Number(got[a]) || 0;
    let entries;
    if (step && !step.is_number && Array.isArray(step.options) && step.options.length) {
      entries = step.options.map(([k]) => [k, count(k)]);
    } else if (tally && Array.isArray(tally.bars)) {
      entries = tally.bars.map(([a, n]) => [String(a), Number(n) || 0]);
      if (Number(tally.others) > 0) entries.push([OTHERS, Number(tally.others)]);
    } else {  // an older server: a bar per number given
      entries = Object.keys(got).map((a) => [a, count(a)]);
      if (truth != null && !entries.some(([a]) => a === truth)) entries.push([truth, 0]);
    }
    const most = Math.max(1, ...entries.map(([, n]) => n));
    const mineElsewhere = own != null && !entries.some(([a]) => a === own);
    const label = (a) => (a === OTHERS ? "other numbers" : step && !step.is_number ? optionText(step, a) : a);
    const you = (a) => a === own || (a === OTHERS && mineElsewhere);
    const right = (a) => a === truth || (rightNumber(step, truth, a) && a !== OTHERS);
    return el("div", { className: "bars" }, entries.map(([a, n]) => el("div", { className: "bar" + (right(a) ? " truth" : "") },
      el("span", { className: "label" }, `${label(a)}${right(a) ? " ✓" : ""}${you(a) ? " (you)" : ""}`),
      el("span", { className: "fill", style: { width: `${Math.round(50 * n / most)}%` } }),
      el("span", { className: "count" }, String(n)))));
  }

  // A number step's "within" (the Lesson tab's tolerance, lesson.toml): a guess that far off counts as right.
  function rightNumber(step, truth, a) {
    const w = step && step.is_number ? Number(step.within) || 0 : 0, t = Number(truth), x = Number(a);
    return w > 0 && truth != null && a != null && Number.isFinite(t) && Number.isFinite(x) && Math.abs(x - t) <= w;
  }
  // "4 of 5 answered": the answers against the room's pages (State.joined counts page ids: a student's
  // hello or first answer), apart only where the count of pages cannot hold them (a network turned away).
  function answeredText(total, joined) {
    const t = Number(total) || 0;
    return Number.isInteger(joined) && joined >= t && joined > 0 ? `${t} of ${joined} answered` : `${t} answered`;
  }
  // The server names each step's truth (readings.lesson.truth_label): a truth of the model alone is not "on
  // this photo", and the dropout step's number is the paper's p on this photo, not "for this model".
  const truthLabel = (s) => String(s.truth_label || "The truth");
  const truthText = (s, truth) => (s.is_number ? `${truth}${Number(s.within) > 0 ? ` (±${s.within} counts as right)` : ""}` : optionText(s, truth));

  // The step's picture: the photo as the model sees it while the question is open, the step's figure
  // once revealed (the figure may show the answer). The address changes when the picture does.
  // A wide figure (the dropout step's two panels, 3.5:1) is marked "wide": the host page gives it the whole
  // column instead of the floated 42%, where its captions shrank to 9 px on a 1366-pixel projector. The
  // sources seen wide are remembered, so a redraw draws them wide at once.
  // zoom (the host page): a click, Enter or Space gives the figure the whole column and takes it back. Floated
  // at 380 px on a 1366-pixel projector, a figure's captions and numbers were 8-10 px (the positions step's
  // panel titles, the shift step's 196 cosines): unreadable from the hall. Kept per picture across redraws.
  // A wide one is still no taller than the screen leaves above the question and the moves (room.html: a
  // square figure the column's width was 881 px tall at 1366x900 and pushed back, Reveal and next below the
  // fold): its shape (--ar, width / height, remembered per picture so a redraw keeps its size) lets the
  // style give it the width at which it fits. An enlarged one goes under the moves instead (placePicture).
  const wideSrc = new Set(), zoomed = new Set(), ratio = new Map();
  function picture(code, n, shown, title, zoom = false) {
    const revealed = !!(shown && shown.picture);
    const src = revealed ? `${roomPath(code, "picture", n)}?revealed=1` : roomPath(code, "picture", 0);
    const big = () => wideSrc.has(src) || zoomed.has(src);
    const toggle = (e) => {
      if (e.type === "keydown" && e.key !== "Enter" && e.key !== " ") return;
      e.preventDefault();
      if (zoomed.has(src)) zoomed.delete(src); else zoomed.add(src);
      e.target.classList.toggle("wide", big());
      e.target.classList.toggle("zoomed", zoomed.has(src));
      e.target.setAttribute("aria-pressed", String(zoomed.has(src)));
      placePicture(e.target);
      e.target.focus({ preventScroll: true });
    };
    const img = el("img", { id: "step-picture", alt: revealed ? `Step ${n}, ${title}: the figure the truth is measured on` : "The photo as the model sees it",
                       src, className: (big() ? "wide" : "") + (zoom && zoomed.has(src) ? " zoomed" : ""), onload: (e) => {
                         const img = e.target, wide = img.naturalWidth >= 2 * img.naturalHeight;
                         if (wide) wideSrc.add(src);
                         ratio.set(src, img.naturalWidth / img.naturalHeight);
                         img.style.setProperty("--ar", String(ratio.get(src)));
                         img.classList.toggle("wide", big());
                       },
                       ...(zoom ? { tabIndex: 0, role: "button", title: "Click to enlarge or shrink the picture", "aria-pressed": String(zoomed.has(src)),
                                    onclick: toggle, onkeydown: toggle } : {}) });
    if (ratio.has(src)) img.style.setProperty("--ar", String(ratio.get(src)));
    return img;
  }
  // Enlarged, the host's picture takes the column's whole width under the step's line, the question and the
  // moves (room.html's .zoomed), and may run below the fold: capped to the screen's height, step 12's 12x3 head
  // grid (730x1060) was 434x630 with its layer labels ~12 px (a walk-through), and under the picture the moves
  // went below the fold. Back in place (first, floated beside the question) once it is shrunk.
  function placePicture(img) {
    const after = document.getElementById("host-err");
    if (!after || !img.parentElement) return;
    if (img.classList.contains("zoomed")) after.after(img); else img.parentElement.prepend(img);
  }

  // An option as every page shows it: a letter key with its words ("b: 196 patches…", so "most of you said b"
  // matches the phones' buttons), a word key by its words alone ("same: Yes: exactly…" read as two answers).
  const keyed = (key, text) => (key.length === 1 ? `${key}: ${text}` : text);
  function optionText(step, key) {
    const o = (step.options || []).find((x) => x[0] === key);
    return o ? keyed(key, o[1]) : key;
  }

  const lessonOk = (r) => r.ok && Array.isArray(r.body.steps) && !r.body.error;
  // A step's meaning, written for the Lesson tab's Markdown, as plain text (this page draws no markup).
  const plainText = (md) => String(md).replace(/\*\*|`/g, "").replace(/\s*\n\s*/g, " ").trim();

  // ---------------------------------------------------------------- the join form (no code, or a bad one)
  function joinForm(message, typed = "") {  // typed: a well-formed code of no open room, kept to be mended
    const input = el("input", { id: "code", name: "code", autocapitalize: "characters", autocomplete: "off",
                                maxLength: 2 * CFG.length, "aria-label": "Room code", value: typed });
    const err = el("p", { className: "error", id: "join-error" }, message || "");
    const form = el("form", { onsubmit: (e) => {
      e.preventDefault();
      const c = parseCode(input.value);
      if (!input.value.trim()) err.textContent = CFG.no_code;
      else if (!c) err.textContent = CFG.bad_code;
      else location.search = `?code=${encodeURIComponent(c)}`;
    } }, input, " ", el("button", { className: "primary", id: "join" }, "Join"));
    show(el("h1", {}, "Join a live room"), el("p", {}, "Type the code the lecturer shows:"), form, err,
         el("p", {}, el("a", { href: "?host=1" }, "Lecturer: open a room")));
  }

  // ---------------------------------------------------------------- a student
  async function hello(code, id, held, unreachable) {
    // Registers this page in the room (the room counts who joined; a locked room refuses newcomers).
    // A server without the route: the first answer registers instead. Too many at once: wait, again.
    // Accepted, it hands held() the answers the room holds for this student: a page opened again shows them.
    // Out of reach (a dropped connection, a 5xx): unreachable() says so and it asks again; it waited in
    // silence, a blank or stale page for as long as the server was away.
    for (let tries = 0; tries < 20; tries++) {
      let r;
      try { r = reachable(await post(roomPath(code, "hello"), { student: id })); } catch (e) {
        unreachable(); tries--; await sleep(2000); continue;
      }
      if (absent(r)) return "";
      if (r.status === 429) { show(el("p", { className: "muted" }, r.body.error || "Busy: waiting…")); await sleep(waitMs(r)); continue; }
      const refused = !r.ok || r.body.error || r.body.ok === false || r.body.accepted === false || r.body.joined === false;
      if (!refused && held && r.body.answers && typeof r.body.answers === "object" && !Array.isArray(r.body.answers)) held(r.body.answers);
      return refused ? String(r.body.error || r.body.reason || "The room refused to let this page in.") : "";
    }
    return "The server is too busy: reload the page in a minute.";
  }

  async function student(code) {
    let id = localStorage.getItem("vizvit-student");
    if (!id || !/^[A-Za-z0-9][A-Za-z0-9_-]{7,63}$/.test(id)) {
      id = "s-" + crypto.getRandomValues(new Uint32Array(3)).join("-");
      localStorage.setItem("vizvit-student", id);
    }
    let mine = {};
    try { mine = JSON.parse(sessionStorage.getItem("vizvit-answers-" + code) || "{}") || {}; } catch (e) { mine = {}; }
    if (typeof mine !== "object" || Array.isArray(mine)) mine = {};
    let got;
    try {
      // the room's store down for a moment (503): said, and asked again, not a refusal of the room
      while ((got = await fetchJSON(roomPath(code, "lesson"))).status >= 500) {
        show(el("h1", {}, `Room ${code}`), el("p", { className: "muted", id: "student-err" }, RECONNECTING));
        await sleep(2000);
      }
    } catch (e) { return joinForm("The server cannot be reached: reload the page.", code); }
    if (!lessonOk(got)) return joinForm(got.body.error || "That room cannot be opened.", code);
    const lesson = got.body;
    // The room's record of this student's answers replaces the tab's own copy: the tab's was lost with a
    // closed tab (the page then said "You did not answer" under a tally counting the answer).
    const keepHeld = (answers) => {
      mine = {};
      for (const [n, a] of Object.entries(answers)) if (/^[1-9]\d*$/.test(n) && typeof a === "string") mine[n] = a;
      sessionStorage.setItem("vizvit-answers-" + code, JSON.stringify(mine));
    };
    // Refused (locked, full, its network's share taken): the page says why and asks again while the room
    // is open, after 10 s, then 20, then every 30 s, since the lecturer may unlock it or let the network
    // in; a network turned away every 60 s; a room that is gone ends it.
    const away = () => show(el("h1", {}, `Room ${code}`), el("p", { className: "muted", id: "student-err" }, RECONNECTING));
    for (let refused = await hello(code, id, keepHeld, away), tries = 1; refused;
         refused = await hello(code, id, keepHeld, away), tries++) {
      let open = false;
      // a 5xx (the store down a moment) is a server out of reach, as a dropped connection: asked again
      try { const r = await fetchJSON(roomPath(code)); open = r.status >= 500 || (r.ok && !r.body.closed && !r.body.error); } catch (e) { open = true; }
      // a network turned away may be let back in: asked again, but only once a minute
      const again = open, wait = refused === CFG.barred ? 60 : Math.min(10 * tries, 30);
      show(el("h1", {}, `Room ${code}`), el("p", { className: "error", id: "refused" }, refused),
           again ? el("p", { className: "muted" }, `This page asks again by itself in ${wait} seconds.`) : null);
      say(refused);
      if (!again) return;
      await sleep(wait * 1000);
    }
    let state = null, looking = null, message = "", lost = false, draft = null;  // draft: a refused number, kept to mend
    let turnedSeen = null;  // the room's count of networks turned away, as this page last saw it
    let gone = false;  // this page was turned away: an answer still on its way draws nothing
    function render() {
      if (!state || gone) return;
      if (state.closed) return show(el("h1", {}, "The room is closed"), el("p", {}, state.error || ""));
      const n = looking || state.step, s = lesson.steps[n - 1], shown = (state.shown || {})[String(n)];
      if (!s) return;
      const open = n === state.step && !shown;
      // An answer the server has not got yet (its connection dropped) is shown as such: the page read "Your
      // prediction, before the lecturer reveals." with no option marked, as if nothing had been chosen.
      const waiting = open && unsent && unsent.n === n ? String(unsent.value) : null;
      const chosen = waiting != null ? waiting : mine[n];
      const given = mine[n] != null ? (s.is_number ? mine[n] : optionText(s, mine[n])) : null;
      const parts = [el("h1", {}, `Room ${code} · step ${n} of ${state.n_steps}`),
                     el("p", { className: "muted" }, s.title), el("p", { className: "question" }, s.question)];
      if (open) {
        if (s.is_number) {
          const typed = () => document.getElementById("num").value.trim();
          parts.push(el("input", { id: "num", inputMode: "decimal", enterKeyHint: "send", value: draft != null ? draft : mine[n] || "",
                                   "aria-label": "Your answer", onkeydown: (e) => { if (e.key === "Enter") { e.preventDefault(); send(n, typed()); } } }), " ",
                     el("button", { className: "primary", id: "send", onclick: () => send(n, typed()) }, "Send"));
        } else {
          parts.push(...s.options.map(([k, t]) => el("div", {}, el("button", {
            className: chosen === k ? (waiting != null ? "chosen unsent" : "chosen") : "", "aria-pressed": String(chosen === k),
            dataset: { k }, onclick: () => send(n, k) }, keyed(k, t)))));
        }
        parts.push(waiting != null ? el("p", { id: "unsent" }, "Your answer (not sent yet): ", el("b", {}, s.is_number ? waiting : optionText(s, waiting)))
                   : given != null ? el("p", {}, "Your answer: ", el("b", {}, given), " (you may change it until the reveal)")
                   : el("p", {}, "Your prediction, before the lecturer reveals."));
      } else if (shown) {
        // No answer is said as such: "none" beside an option called "none" read as an answer (issue 51)
        parts.push(given != null ? el("p", {}, "Your answer: ", el("b", {}, given))
                                 : el("p", { id: "no-answer" }, "You did not answer this step."),
                   el("p", { className: "total" }, `The room: ${answeredText(shown.tally.total, state.joined)}`), bars(shown.tally, shown.truth, mine[n], s));
        if (shown.truth != null) parts.push(el("p", {}, `${truthLabel(s)}: `, el("b", {}, truthText(s, shown.truth))));
        if (shown.line) parts.push(el("p", { className: "muted" }, String(shown.line).replace(/\*\*|`/g, "")));
        if (s.meaning) parts.push(el("p", { id: "meaning" }, plainText(s.meaning)));
      } else {
        parts.push(el("p", { className: "muted" }, "This question is closed."));
      }
      parts.push(picture(code, n, shown, s.title), el("p", { className: "error", id: "student-err" }, message),
                 el("div", {}, el("button", { id: "back", disabled: n <= 1, onclick: () => { looking = Math.max(1, n - 1); render(); } }, "← look back"),
                    " ", el("button", { id: "fwd", disabled: n >= state.step, onclick: () => { looking = n + 1 >= state.step ? null : n + 1; render(); } }, "forward →")),
                 el("p", { className: "muted" }, `The lecturer is on step ${state.step}. You follow: you may look back, not ahead.`));
      show(parts);
    }
    // An answer lost to a dropped connection (a phone's flaky Wi-Fi) is kept to send again by itself once the
    // server answers the page's poll, while its question is open: the page cleared "try again" at the
    // reconnection and showed the question as if the answer were in, which the room never counted.
    let pending = null;  // { n, value }
    // The answer last sent that the server never got, until a send is answered (pending is emptied while its
    // resend is on its way; this stays, so the page goes on saying "not sent yet" meanwhile).
    let unsent = null;  // { n, value }
    const RESEND_MS = 3000;
    const open = (n) => !!state && !state.closed && n === state.step && !(state.shown || {})[String(n)];
    async function send(n, value) {
      const s = lesson.steps[n - 1];
      try {
        const a = reachable(await post(roomPath(code, "answer"), { student: id, step: n, answer: value }));
        pending = null; unsent = null;
        if (a.body.accepted) {
          mine[n] = String(a.body.answer != null ? a.body.answer : value);  // as tallied: "12,5" is 12.5
          sessionStorage.setItem("vizvit-answers-" + code, JSON.stringify(mine)); message = ""; draft = null;
          say(`Your answer is in: ${s.is_number ? mine[n] : optionText(s, mine[n])}`);
        } else { message = String(a.body.reason || a.body.error || "The server refused that answer."); draft = value; }
      } catch (e) {
        message = RESENDING; draft = value;
        const p = pending = unsent = { n, value };
        // asked again every few seconds too: a long poll still hanging on the old connection answers late
        setTimeout(() => { if (pending === p && open(p.n)) { pending = null; send(p.n, p.value); } }, RESEND_MS);
      }
      say(message);
      render();
    }
    // The server cannot be reached (restarting, or a proxy's 502 meanwhile): said on the page, as the host
    // page says it (the student's page went on showing the question as if all were well), and cleared by the
    // first answer after; that first poll asks for the room at once (v=-2), not after a 20-s wait.
    const note = (text) => { const p = document.getElementById("student-err"); if (p) p.textContent = text; };
    function unreachable() {
      lost = true; v = -2;
      if (message && message !== UNREACHABLE) return;  // a refusal of the student's answer stays
      message = RECONNECTING; note(message); say(message);
    }
    let v = -2;
    for (;;) {
      try {
        const r = await fetchJSON(`${roomPath(code)}?v=${v}`);
        if (r.status === 429 || (!r.ok && !r.body.closed)) {
          if (r.status >= 500) unreachable();
          await sleep(r.status === 429 ? waitMs(r) : 2000);
          continue;
        }
        const next = r.body;
        // 200 with no room in it (a proxy's or a captive portal's page): a server out of reach, asked again
        // after a wait (its v=-2 was answered at once, hundreds of times a second)
        if (!Number.isInteger(next.version)) { unreachable(); await sleep(2000); continue; }
        const moved = !state || next.step !== state.step;
        const revealedNow = (x) => !!(x && (x.shown || {})[String(x.step)]);
        const revealed = !moved && !revealedNow(state) && revealedNow(next);
        state = next;
        v = Number.isInteger(state.version) ? state.version : -2;
        // A network was turned away: is this page's among them? Its answers are gone then, and it says so.
        // Each page waits 0-3 s first: a room's 300 pages asking at the same moment queue behind each other.
        if (Number.isInteger(state.turned) && turnedSeen !== null && state.turned !== turnedSeen && !state.closed) {
          turnedSeen = state.turned;
          await sleep(Math.random() * 3000);
          if (await hello(code, id, null, unreachable) === CFG.barred) {  // not a busy server's or a proxy's refusal: those pass
            gone = true;  // this page's answers and drawing end here; the refusal's page takes over
            sessionStorage.removeItem("vizvit-answers-" + code);
            return student(code);
          }
        }
        if (Number.isInteger(state.turned)) turnedSeen = state.turned;
        if (moved) { looking = null; draft = null; }  // the lecturer moved: follow
        // A refusal of this page's answer ends with its question: it stayed under the reveal and on the next
        // steps ("must be a number" under an option step) until an answer was taken. The server answers here.
        if ((moved || revealed) && !lost) message = "";
        // back: the live region said "reconnecting…", and a screen reader heard nothing after it (it still read
        // so at the page's end) while the page's own line was cleared; now it hears the server is back
        let back = false;
        if (lost) { lost = false; if (message === UNREACHABLE || message === RECONNECTING) { message = ""; note(""); back = true; } }
        // A number half typed is kept through a mere count change; a move or a reveal ends the question.
        const typing = document.activeElement && document.activeElement.id === "num";
        if (!typing || moved || revealed || state.closed) render();
        const s = lesson.steps[state.step - 1];
        if (state.closed) say("The room is closed.");
        else if (revealed) say(`Step ${state.step} revealed: see the room's answers and the truth.`);
        else if (moved && s) say(`Step ${state.step} of ${state.n_steps}: ${s.question}`);
        else if (back) say(RECONNECTED);
        if (state.closed) return;
        if (pending) {  // the server answers again: the answer it never got, while its question is open
          const p = pending;
          pending = null;
          if (open(p.n)) send(p.n, p.value);
        }
      } catch (e) {
        unreachable();
        await sleep(1000);  // a dropped connection (a server restarting): ask again
      }
    }
  }

  // ---------------------------------------------------------------- the lecturer
  async function defaultModel() {
    const info = await (await fetch(`${root}gradio_api/info`)).json();
    const p = info.named_endpoints["/room_open"].parameters.find((x) => x.parameter_name === "model");
    return p.parameter_default;
  }

  async function upload(blob, name) {
    const fd = new FormData();
    fd.append("files", blob, name);
    const r = await fetch(`${root}gradio_api/upload`, { method: "POST", body: fd });
    if (!r.ok) throw new Error("The photo could not be uploaded.");
    return { path: (await r.json())[0], meta: { _type: "gradio.FileData" } };
  }

  // The rooms this browser opened, kept across tabs (localStorage): the tab's own copy (sessionStorage) went
  // with a projector tab closed by mistake, and with it the only way back to a room full of answers (it
  // stayed open 30 minutes, holding one of the lecturer's rooms). The start page offers each one still open
  // whose host view ran in the last CFG.hosted_fresh_s: a lecture hall's shared computer offered the last
  // lecturer's room, with its key, to whoever sat down next (a review). As many as one address may hold.
  const HOSTED = "vizvit-hosted";
  const LECTURER_KEY = "vizvit-lecturer-key";  // sessionStorage: gone with the tab, never shared across tabs
  function hostedRooms() {
    let got = [];
    try { got = JSON.parse(localStorage.getItem(HOSTED) || "[]"); } catch (e) { got = []; }
    const fresh = Date.now() - 1000 * CFG.hosted_fresh_s;
    return Array.isArray(got) ? got.filter((r) => r && parseCode(r.code) === r.code && typeof r.host_key === "string"
                                                && r.host_key && Number(r.seen) > fresh && Number(r.seen) <= Date.now() + 60_000) : [];
  }
  function keepHosted(code, key) {  // again at each heartbeat: `seen` is when the host view last ran
    const rest = hostedRooms().filter((r) => r.code !== code);
    localStorage.setItem(HOSTED, JSON.stringify([...rest, { code, host_key: key, seen: Date.now() }].slice(-CFG.hosted_max)));
  }
  const forgetHosted = (code) => localStorage.setItem(HOSTED, JSON.stringify(hostedRooms().filter((r) => r.code !== code)));
  async function offerHosted(box) {  // a button back to each room this browser opened that is still open
    for (const r of hostedRooms().reverse()) {
      let view;
      try { view = await fetchJSON(roomPath(r.code)); } catch (e) { continue; }  // unreachable: asked next time
      if (view.ok && !view.body.closed && !view.body.error) {
        const n = Number(view.body.step) || 1, of = Number(view.body.n_steps) || n;
        box.append(el("p", {}, el("button", { className: "primary", dataset: { room: r.code }, onclick: () => {
          sessionStorage.setItem("vizvit-host", JSON.stringify(r)); host(r); } }, `Back to your room ${r.code} (step ${n} of ${of})`)));
      } else if (view.body.closed) forgetHosted(r.code);  // closed, or forgotten by the server
    }
  }

  function hostStart(message) {
    const err = el("p", { className: "error", id: "err" }, message || "");
    const back = el("div", { id: "hosted" });
    const go = async (blobPromise, name) => {
      try {
        err.textContent = "Opening…";
        const photo = await upload(await blobPromise, name);
        const lecturerKey = CFG.needs_key ? document.getElementById("lkey").value : "";
        if (CFG.needs_key) sessionStorage.setItem(LECTURER_KEY, lecturerKey);  // this tab's next room: not typed again
        const opened = await call("room_open", [photo, await defaultModel(), lecturerKey]);
        const kept = { code: parseCode(opened.code), host_key: String(opened.host_key) };
        sessionStorage.setItem("vizvit-host", JSON.stringify(kept));
        host(kept);
      } catch (e) { err.textContent = e.message; }
    };
    const own = el("input", { type: "file", id: "own", accept: "image/*", style: { width: "auto" },
                              onchange: (e) => e.target.files[0] && go(Promise.resolve(e.target.files[0]), e.target.files[0].name) });
    // A server started with a lecturer key (VIZVIT_LECTURER_KEY) opens rooms only for those who type it.
    const key = CFG.needs_key ? el("p", {}, el("label", { htmlFor: "lkey" }, "Lecturer key (this server opens rooms for its lecturers only): "),
                                   el("input", { type: "password", id: "lkey", autocomplete: "current-password", maxLength: CFG.key_max,
                                                 value: sessionStorage.getItem(LECTURER_KEY) || "" })) : null;
    show(el("h1", {}, "Open a live room"),
         el("p", {}, "Students follow your steps on their phones and answer each question; you see the room's answers."), key,
         el("button", { className: "primary", id: "ex", onclick: () => go(fetch(`${root}room/example.jpg`).then((r) => r.blob()), "chelsea.jpg") },
            "Open a room on the example photo (the cat)"),
         el("p", {}, el("label", { htmlFor: "own" }, "or on your own photo: "), own), err, back);
    offerHosted(back);
  }

  // The lecturer's room is gone (closed, idle, the server lost it): say so and why, offer a new one.
  function gone(code, why) {
    sessionStorage.removeItem("vizvit-host");
    forgetHosted(code);
    show(el("h1", {}, "Your room is gone"),
         el("p", { className: "error", id: "gone" }, `Room ${code} is no longer open: ${why || "the server no longer holds it."}`),
         el("button", { className: "primary", id: "new-room", onclick: () => hostStart() }, "Open a new room"));
  }

  // A host request that survives a server restart: a dropped connection is asked again (the host key
  // is kept in sessionStorage), until `alive()` says the page has moved on.
  async function patiently(ask, alive) {
    const reconnecting = () => {  // said while it waits: a dropped connection, a 5xx (the store down)
      const note = document.getElementById("host-err");
      if (note) note.textContent = RECONNECTING;
      else app.append(el("p", { className: "muted", id: "host-err" }, RECONNECTING));
    };
    for (let wait = 1000; alive(); wait = Math.min(10_000, wait * 2)) {
      try {
        const r = await ask();
        // A 200 that is no JSON object (a captive portal's or a proxy's page) is not this server: it read as
        // a room gone, and the page forgot the room's key (a review).
        const foreign = r.ok && Object.keys(r.body).length === 0;
        if (r.status !== 429 && r.status < 500 && !foreign) return r;
        if (r.status !== 429) reconnecting();
        await sleep(r.status === 429 ? waitMs(r) : wait);
      } catch (e) {
        reconnecting();
        await sleep(wait);
      }
    }
    return null;
  }

  async function host(opened, note) {  // note: a sentence the host view opens with (why it is back)
    const code = parseCode(opened && opened.code), key = opened && typeof opened.host_key === "string" ? opened.host_key : "";
    if (!code || !key) { sessionStorage.removeItem("vizvit-host"); return hostStart(CFG.bad_code); }
    let alive = true;
    const live = () => alive;
    const lessonR = await patiently(() => fetchJSON(roomPath(code, "lesson")), live);
    if (!lessonOk(lessonR)) return gone(code, lessonR.body.error);
    const lesson = lessonR.body;
    // The key is checked before the lecturer's view is drawn: a wrong one (a student's guess, a link cut
    // short) drew the whole host view, its buttons failing one by one, and was kept as the browser's room.
    const keyR = await patiently(() => post(roomPath(code, "host"), { host_key: key }), live);
    if (keyR && !absent(keyR) && keyR.body.error && !Number.isInteger(keyR.body.version)) {
      let view = null;
      try { view = await fetchJSON(roomPath(code)); } catch (e) { /* said below as the refusal */ }
      if (view && view.body.closed) return gone(code, view.body.error);
      sessionStorage.removeItem("vizvit-host");
      return hostStart(String(keyR.body.error));
    }
    keepHosted(code, key);
    const joinR = await patiently(() => fetchJSON(roomPath(code, "join")), live);
    const join = joinR && joinR.ok && !joinR.body.error ? joinR.body : {};
    const stR = await patiently(() => fetchJSON(roomPath(code)), live);
    if (!stR.ok || stR.body.closed) return gone(code, stR.body.error);
    let st = stR.body, tally = { answers: {}, total: 0 }, err = note || "";
    let timer = null, ticks = 0, gen = 0, closing = false, lost = false;
    let turning = null, turned = null;  // the network being asked about; the one last turned away: { network, n }
    const stop = () => { alive = false; clearTimeout(timer); };
    const end = (why) => { stop(); gone(code, why); };

    const qrSrc = typeof join.qr === "string" && join.qr.startsWith("data:image/png;base64,") ? join.qr : null;
    let link = null;
    try { const u = new URL(join.url); if (u.protocol === "http:" || u.protocol === "https:") link = u.href; } catch (e) { /* none */ }

    function lockText() { return st.locked ? "Unlock: let new students in" : "Lock: no new students"; }
    // Pages, not people: one phone's id is one page, and ids can be made up (a walk-through's four forged ids
    // raised "5 joined" to 9); the server cannot tell a student from an id that only said hello.
    function joinedText() {
      return Number.isInteger(st.joined) ? `${st.joined} ${st.joined === 1 ? "page" : "pages"} joined${st.locked ? " · locked" : ""}` : "";
    }
    const totalLine = (total) => el("p", { className: "total", id: "total", dataset: { total: String(Number(total) || 0) } }, answeredText(total, st.joined));

    // The networks other than the lecturer's (Rooms.host's "crowd"): the one with the most students may be
    // another network's hall (staff and student Wi-Fi apart), or one caller minting ids to stuff the
    // answers. Only the lecturer can tell which, so the page says how many and offers both: let it in,
    // or turn it away (asked first: their answers go too; undone by letting it in again).
    const crowdOf = (v) => (v && v.crowd && typeof v.crowd === "object" ? v.crowd : {});
    const named = (c) => (typeof c.network === "string" ? c : null);
    function crowdBox() {
      const all = crowdOf(st), c = named(all), parts = [];
      if (turned) parts.push(el("p", { className: "muted", id: "turned" }, `Turned away ${turned.n} students of one network.`),
        el("button", { id: "let-back", onclick: () => letIn(turned.network, false) }, "Let that network in again"));
      if (turning) {
        return el("div", { id: "crowd" }, ...parts, el("div", { role: "alertdialog", "aria-labelledby": "crowd-q", id: "turn-ask",
                                                        onkeydown: (e) => { if (e.key === "Escape") document.getElementById("turn-no").click(); } },
          el("p", { id: "crowd-q" }, `Turn away the ${turning.n} students of that network? Their answers are deleted, and that network cannot join this room again.`),
          el("button", { id: "turn-yes", className: "primary", onclick: turnAway }, "Yes, turn them away"), " ",
          el("button", { id: "turn-no", onclick: () => { turning = null; render(); (document.getElementById("turn-away") || document.getElementById("lock")).focus(); } }, "Keep them")));
      }
      const others = Number(all.others) || 0;
      if (others > (c ? Number(c.students) : 0)) parts.push(el("p", { className: "muted", id: "crowd-all" }, `${others} of them from networks other than yours.`));
      if (c) {
        const ask = () => { turning = { network: c.network, n: c.students }; render(); document.getElementById("turn-no").focus(); };
        parts.push(el("p", { className: "muted", id: "crowd-text" }, c.trusted ? `${c.students} of them from one network you let in.`
          : `${c.students} of them from one network other than yours: another network's students, or one caller posing as many.${
            c.full ? " That is the most one network may bring: more of them may be waiting." : ""}`));
        if (!c.trusted) parts.push(el("button", { id: "let-in", onclick: () => letIn(c.network, true) }, "They are my students"), " ");
        parts.push(el("button", { id: "turn-away", onclick: ask }, "Turn them away…"));
      }
      return el("div", { id: "crowd" }, ...parts);
    }

    function render() {
      const s = lesson.steps[st.step - 1], shown = (st.shown || {})[String(st.step)];
      if (!s) return;
      const shownTally = shown ? shown.tally : tally;
      // The lecturer's buttons right under the question: on a 900-pixel projector they stay on screen
      // whatever the bars and the revealed sentence below them take (a reveal pushed them off, below the
      // fold). The options are listed only while the bars are hidden: the bars carry their words.
      const left = el("div", {}, el("h1", { className: "sr-only" }, `Room ${code}: the lecturer's view`), picture(code, st.step, shown, s.title, true),
        el("p", { className: "muted" }, `Step ${st.step} of ${st.n_steps} · ${s.title}`),
        el("p", { className: "question" }, s.question),
        el("div", { id: "moves" },
          el("button", { id: "back", disabled: st.step <= 1, onclick: () => step(st.step - 1, false) }, "← back"), " ",
          el("button", { className: "primary", id: "reveal", disabled: !!shown, onclick: () => step(st.step, true) }, "Reveal"), " ",
          el("button", { id: "next", disabled: st.step >= st.n_steps, onclick: () => step(st.step + 1, false) }, "next →")),
        el("p", { className: "error", id: "host-err", role: "status" }, err),
        s.is_number || (!hidden() || shown) ? null : el("ul", { className: "muted" }, s.options.map(([k, t]) => el("li", {}, keyed(k, t)))),
        totalLine(shownTally.total),
        el("div", { id: "tally" }, liveBars(shownTally, shown, s)),
        shown && shown.truth != null ? el("p", { className: "question" }, `${truthLabel(s)}: ${truthText(s, shown.truth)}`) : null,
        shown && shown.line ? el("p", { className: "muted" }, String(shown.line).replace(/\*\*|`/g, "")) : null,
        shown && s.meaning ? el("p", { id: "meaning" }, plainText(s.meaning)) : null);
      const right = el("div", {}, el("p", { className: "muted" }, "Room code"), el("div", { id: "room-code" }, code),
        el("p", { id: "joined", className: "total" }, joinedText()),
        el("button", { id: "lock", onclick: lock }, lockText()),
        // Beside Lock, with the room's other setting: under the tally it went below the fold once a reveal's
        // sentences came (a lecturer's walk-through), where it is wanted before the next step's answers.
        el("p", {}, el("label", { id: "hide-label" }, el("input", { type: "checkbox", id: "hide-bars", checked: hidden(),
          onchange: (e) => { sessionStorage.setItem(HIDE, e.target.checked ? "1" : ""); render(); } }),
          " Hide the answers until the reveal")),
        // Close and the CSV with the room's other settings, near the top: under the tally they were below the
        // fold of a 900-pixel projector once a reveal's sentences came, or once the step's figure was enlarged
        // (a walk-through); the question asked before closing comes here too, beside its button.
        el("div", { id: "ending" },
          el("button", { id: "close", onclick: () => { closing = true; render(); } }, "Close the room"), " ",
          el("button", { id: "csv", onclick: downloadCsv }, "Download the answers (CSV)")),
        closing ? el("div", { id: "close-ask", role: "alertdialog", "aria-labelledby": "close-q",
                              onkeydown: (e) => { if (e.key === "Escape") document.getElementById("close-no").click(); } },
          el("p", { className: "question", id: "close-q" }, "Close the room? Every answer is deleted at once: download them first if you want them."),
          el("button", { id: "close-yes", className: "primary", onclick: closeRoom }, "Yes, close it"), " ",
          el("button", { id: "close-no", onclick: () => { closing = false; render(); document.getElementById("close").focus(); } }, "Keep it open")) : null,
        crowdBox(),
        el("div", { id: "qr" }, qrSrc ? el("img", { alt: "QR code of the students' link", src: qrSrc }) : null),
        link ? el("p", {}, el("a", { href: link, target: "_blank", rel: "noopener" }, link)) : null,
        join.note ? el("p", { className: "note" }, String(join.note).replace(/\*\*|`/g, "")) : null);
      show(el("div", { id: "host" }, left, right));
      const img = document.getElementById("step-picture");
      if (img && img.classList.contains("zoomed")) {  // moved after show() kept the focus: kept again
        const had = document.activeElement === img;
        placePicture(img);
        if (had) img.focus({ preventScroll: true });
      }
      // The question in view with its buttons: the focus alone scrolled only as far as "Keep it open", and the
      // question above it stayed cut off at the top of a projector scrolled down to Close (a walk-through).
      const ask = (box, button) => {
        document.getElementById(box).scrollIntoView({ block: "nearest" });
        document.getElementById(button).focus({ preventScroll: true });
      };
      if (closing && !document.getElementById("close-ask").contains(document.activeElement)) ask("close-ask", "close-no");
      else if (turning && !document.getElementById("turn-ask").contains(document.activeElement)) ask("turn-ask", "turn-no");
    }

    // The live bars can sway the answers still to come (the first few answers pull the rest): the
    // lecturer may hide them until the reveal, as Mentimeter does. Only the count is shown meanwhile.
    const HIDE = "vizvit-hide-bars";
    const hidden = () => sessionStorage.getItem(HIDE) === "1";
    function liveBars(t, shown, s) {
      if (hidden() && !shown) return el("p", { className: "muted", id: "bars-hidden" }, "Answers hidden until the reveal.");
      return bars(t, shown ? shown.truth : null, null, s);
    }

    async function downloadCsv() {  // every answer of the room, one row per step and student
      try {
        const r = await fetch(roomPath(code, "answers.csv"), { method: "POST", cache: "no-store",
          headers: { "Content-Type": "application/json" }, body: JSON.stringify({ host_key: key }) });
        if (!r.ok) {
          let why = "The answers could not be read.";
          try { why = (await r.json()).error || why; } catch (e) { /* not JSON */ }
          throw new Error(why);
        }
        const url = URL.createObjectURL(await r.blob());
        const a = el("a", { href: url, download: `room-${code}-answers.csv` });
        document.body.append(a); a.click(); a.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10000);
        err = "";
      } catch (e) { err = plain(e); render(); }
    }

    let moves = 0;  // the lecturer's moves so far: a move still waiting for the server gives way to a newer one
    async function step(n, reveal) {
      const move = ++moves;
      try {  // a plain route, not a Gradio event: the move skips the queue where the answers wait
        // Asked again while the server is out of reach (a restart, a dropped Wi-Fi): a move pressed then was
        // dropped with "reconnecting…", and the lecturer had to press it again. A move names its step, so
        // asking twice moves the room once.
        const r = await patiently(() => post(roomPath(code, "step"), { host_key: key, step: n, reveal }, 180_000),
                                  () => alive && move === moves);  // a reveal may measure
        if (!r) return;  // the page moved on, or a newer move replaced this one
        if (r.body.error) throw new Error(r.body.error);
        st = r.body; tally = { answers: {}, total: 0 }; err = "";
        const s = lesson.steps[st.step - 1];
        if (s) say(reveal ? `Step ${st.step} revealed.` : `Step ${st.step} of ${st.n_steps}: ${s.question}`);
      } catch (e) { err = plain(e); }
      render(); tick();
      // the button pressed may be disabled now (Reveal once revealed, next on the last step): the keyboard
      // goes on from the next move instead of from the page's top
      const at = document.activeElement;
      if (!at || at === document.body || at.disabled) {
        const to = ["reveal", "next", "back", "close"].map((b) => document.getElementById(b)).find((b) => b && !b.disabled);
        if (to) to.focus();
      }
    }

    async function lock() {
      try {
        const r = await post(roomPath(code, "lock"), { host_key: key, locked: !st.locked });
        if (absent(r)) throw new Error("This server cannot lock a room yet.");
        if (r.body.error) throw new Error(r.body.error);
        if (Number.isInteger(r.body.version)) st = { ...st, ...r.body };
        else if (typeof r.body.locked === "boolean") st.locked = r.body.locked;
        err = "";
        say(st.locked ? "Locked: no new students." : "Unlocked: new students may join.");
      } catch (e) { err = plain(e); }
      render();
    }

    async function turnAway() {
      const asked = turning, yes = document.getElementById("turn-yes");
      if (!asked || (yes && yes.disabled)) return;
      if (yes) yes.disabled = true;  // one click, one network: a second would find the next one the largest
      try {
        const r = await post(roomPath(code, "turn_away"), { host_key: key, network: asked.network });
        if (r.body.error) throw new Error(r.body.error);
        if (absent(r) || !r.ok) throw new Error("The server could not turn them away: try again.");
        err = ""; turned = { network: asked.network, n: Number(r.body.turned_away) || 0 };
        if (Number.isInteger(r.body.version)) st = { ...st, ...r.body };
        say(`${turned.n} students turned away.`);
      } catch (e) { err = plain(e); }
      turning = null;
      render(); tick();  // the tally without their answers now, not at the next second
      const b = document.getElementById("let-back") || document.getElementById("lock");
      if (b) b.focus();
    }

    async function letIn(network, trust) {
      try {
        const r = await post(roomPath(code, "let_in"), { host_key: key, network, trust });
        if (r.body.error) throw new Error(r.body.error);
        if (absent(r) || !r.ok) throw new Error("The server could not let them in: try again.");
        err = ""; turned = null;
        if (Number.isInteger(r.body.version)) st = { ...st, ...r.body };
        say(trust ? "That network's students now join as yours." : "That network may join again.");
      } catch (e) { err = plain(e); }
      render();
      const b = document.getElementById("lock");
      if (b) b.focus();
    }

    async function closeRoom() {
      stop();
      try { await call("room_close", [code, key]); } catch (e) {
        // Closed already, or not closed at all (the store down): only a room the server says is closed is
        // forgotten; the other is kept, with its key, and its view comes back saying why (a review: a close
        // during an outage forgot a room that stayed open with every answer).
        let view = null;
        try { view = await fetchJSON(roomPath(code)); } catch (x) { view = null; }
        if (!view || !view.body.closed) {
          const why = `The room is still open: ${e.message || UNREACHABLE}`;
          show(el("h1", {}, `Room ${code}`), el("p", { className: "error", id: "close-err" }, why));
          return host({ code, host_key: key }, why);
        }
      }
      // The lecturer closed the room: done with this computer (a lecture hall's, shared). The department's key
      // kept for the tab's next room was typed again in the start page's box for whoever sat down next.
      sessionStorage.removeItem(LECTURER_KEY);
      sessionStorage.removeItem("vizvit-host"); forgetHosted(code); hostStart();
    }

    // The room's view (joined, locked, closed), re-read now and then; a gone room ends the page's loop.
    function took(view) {
      if (view.closed) { end(view.error); return false; }
      if (!Number.isInteger(view.version)) return true;
      if (view.version !== st.version) { st = view; render(); return true; }
      const was = crowdOf(st), now = crowdOf(view);
      st = { ...st, joined: view.joined, locked: view.locked, crowd: view.crowd };
      const j = document.getElementById("joined"), b = document.getElementById("lock");
      if (j) j.textContent = joinedText();
      if (b) b.textContent = lockText();
      const t = document.getElementById("total");  // "n of m answered": m is the count just read
      if (t) t.replaceWith(totalLine(t.dataset.total));
      if (named(now) && !now.trusted && (!named(was) || was.network !== now.network)) say(`${now.students} students joined from one network other than yours.`);
      const box = document.getElementById("crowd");
      if (JSON.stringify(was) !== JSON.stringify(now) && box && !turning && !box.contains(document.activeElement)) box.replaceWith(crowdBox());
      return true;
    }

    async function tick() {  // the live tally once a second while the step is open; the view every 5 s
      clearTimeout(timer);
      const mine = ++gen;
      try {
        if (!(st.shown || {})[String(st.step)]) {
          const t = reachable(await post(roomPath(code, "tally"), { host_key: key, step: st.step }));
          // the lecturer moved or revealed while this was on its way: a newer tick runs; this one ends
          if (mine !== gen || !alive) return;
          if (t.body.error) ticks = 4;  // a refusal: the view says whether the room is gone
          else if (t.ok) {
            tally = t.body;
            const box = document.getElementById("tally");
            const s = lesson.steps[st.step - 1];
            if (box && s) { box.replaceChildren(liveBars(tally, null, s)); document.getElementById("total").replaceWith(totalLine(tally.total)); }
          }
        }
        if (++ticks % 5 === 0) {  // the host's call every 5 s: the room stays open, and its view comes back
          await beat();
          if (mine !== gen || !alive) return;
        }
        if (lost || err === UNREACHABLE) {  // the server answers again: its silence is no longer news
          lost = false; err = "";
          const note = document.getElementById("host-err");
          if (note) note.textContent = "";
        }
      } catch (e) {  // a dropped connection (a server restarting): said, and the next tick asks again
        lost = true; err = RECONNECTING;
        const note = document.getElementById("host-err");
        if (note) note.textContent = err;
      }
      if (mine === gen && alive) timer = setTimeout(tick, 1000);
    }

    // The host is present: the room stays open while this page is (it closes 30 min after the host's
    // last sign); its view (joined, locked, closed, the largest network) comes back.
    async function beat() {
      if (!alive) return;
      const r = reachable(await post(roomPath(code, "host"), { host_key: key }));
      if (alive && absent(r)) {  // an older server without the host's call: its view, read as before
        const view = await fetchJSON(roomPath(code));
        if (view.status !== 429) took(view.body);
      } else if (alive && r.status !== 429) {
        if (r.body.closed || (r.body.error && !Number.isInteger(r.body.version))) {
          const view = await fetchJSON(roomPath(code));
          if (view.body.closed) end(view.body.error);
        } else if (Number.isInteger(r.body.version)) { took(r.body); keepHosted(code, key); }
      }
    }
    render(); beat().catch(() => { /* the tick reconnects */ }); tick();
  }

  // ---------------------------------------------------------------- which page
  const rawCode = q.get("code");
  if (q.get("host") === "1" && rawCode != null && location.hash.startsWith("#key=")) {
    // opened from the Lesson tab: the key travels in the fragment, and leaves the address bar at once
    // (the host view goes on the projector)
    let key = "";
    try { key = decodeURIComponent(location.hash.slice(5)); } catch (e) { key = ""; }
    history.replaceState(null, "", `${location.pathname}?host=1`);
    const code = parseCode(rawCode);
    if (!code || !key) hostStart(CFG.bad_code);
    else {
      sessionStorage.setItem("vizvit-host", JSON.stringify({ code, host_key: key }));
      host({ code, host_key: key });
    }
  } else if (q.get("host") === "1") {
    let kept = null;
    try { kept = JSON.parse(sessionStorage.getItem("vizvit-host") || "null"); } catch (e) { kept = null; }
    kept ? host(kept) : hostStart();
  } else if (rawCode != null) {
    const code = parseCode(rawCode);
    code ? student(code) : joinForm(rawCode.trim() ? CFG.bad_code : CFG.no_code);
  } else {
    joinForm("");
  }
})();
