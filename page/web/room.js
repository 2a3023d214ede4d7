// The live room's page (issue 45): the lecturer's (?host=1) and a student's (?code=XXXXX), plain JS
// over the public API (gradio_api/call/room_*) and the long-poll route vizvit_room/{code}.
(function () {
  const root = new URL(".", location.href).href;  // the app's root, wherever it is mounted
  const q = new URLSearchParams(location.search);
  const app = document.getElementById("app");
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));

  async function call(endpoint, data) {
    const r = await fetch(`${root}gradio_api/call/${endpoint}`, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ data }) });
    const body = await r.json();
    if (!r.ok) throw new Error(typeof body.detail === "string" ? body.detail : "The server refused that.");
    const text = await (await fetch(`${root}gradio_api/call/${endpoint}/${body.event_id}`)).text();
    const kinds = [...text.matchAll(/^event: (\w+)/gm)].map((m) => m[1]);
    const datas = [...text.matchAll(/^data: (.*)$/gm)].map((m) => m[1]);
    const payload = JSON.parse(datas[datas.length - 1] || "null");
    if (kinds[kinds.length - 1] !== "complete") throw new Error((payload && payload.error) || "Something went wrong.");
    return payload[0];
  }

  // The room's plain routes (page/room.py): a JSON POST, a JSON answer; no Gradio queue to wait in.
  async function post(path, body) {
    const r = await fetch(`${root}${path}`, { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body) });
    return r.json();
  }

  function bars(tally, truth, own) {
    const entries = Object.entries(tally.answers || {});
    if (truth != null && !entries.some(([a]) => a === truth)) entries.push([truth, 0]);
    const most = Math.max(1, ...entries.map(([, n]) => n));
    return `<div class="bars">${entries.map(([a, n]) => `<div class="bar${a === truth ? " truth" : ""}">
      <span class="label">${esc(a)}${a === truth ? " ✓" : ""}${a === own ? " (you)" : ""}</span>
      <span class="fill" style="width:${Math.round(50 * n / most)}%"></span><span class="count">${n}</span></div>`).join("")}</div>`;
  }

  // The step's picture: the photo as the model sees it while the question is open, the step's figure
  // once revealed (the figure may show the answer). The address changes when the picture does.
  function picture(code, n, shown) {
    const src = shown && shown.picture ? `picture/${n}?revealed=1` : "picture/0";
    return `<img id="step-picture" alt="${shown && shown.picture ? "The view this number comes from" : "The photo as the model sees it"}" src="${root}vizvit_room/${code}/${src}">`;
  }

  function optionText(step, key) {
    const o = (step.options || []).find((x) => x[0] === key);
    return o ? `${key}: ${o[1]}` : key;
  }

  async function lessonOf(code) {
    const r = await fetch(`${root}vizvit_room/${code}/lesson`);
    return r.json();
  }

  // ---------------------------------------------------------------- a student
  async function student(code) {
    let id = localStorage.getItem("vizvit-student");
    if (!id) { id = "s-" + crypto.getRandomValues(new Uint32Array(3)).join("-"); localStorage.setItem("vizvit-student", id); }
    const mine = JSON.parse(sessionStorage.getItem("vizvit-answers-" + code) || "{}");
    const lesson = await lessonOf(code);
    if (lesson.error) { app.innerHTML = `<p class="error">${esc(lesson.error)}</p>`; return; }
    let state = null, looking = null, message = "";
    function render() {
      if (!state) return;
      if (state.closed) { app.innerHTML = `<h1>The room is closed</h1><p>${esc(state.error || "")}</p>`; return; }
      const n = looking || state.step, s = lesson.steps[n - 1], shown = state.shown[String(n)];
      const open = n === state.step && !shown;
      let html = `<h1>Room ${esc(code)} · step ${n} of ${state.n_steps}</h1>
        <p class="muted">${esc(s.title)}</p><p class="question">${esc(s.question)}</p>`;
      const pic = picture(code, n, shown);
      if (open) {
        html += s.is_number
          ? `<input id="num" inputmode="decimal" value="${esc(mine[n] || "")}" aria-label="Your answer"> <button class="primary" id="send">Send</button>`
          : s.options.map(([k, t]) => `<div><button data-k="${esc(k)}" class="${mine[n] === k ? "chosen" : ""}">${esc(t)}</button></div>`).join("");
        html += `<p>${mine[n] != null ? `Your answer: <b>${esc(s.is_number ? mine[n] : optionText(s, mine[n]))}</b> (you may change it until the reveal)` : "Your prediction, before the lecturer reveals."}</p>`;
      } else if (shown) {
        html += `<p>Your answer: <b>${mine[n] != null ? esc(s.is_number ? mine[n] : optionText(s, mine[n])) : "none"}</b></p>`;
        html += `<p class="total">The room: ${shown.tally.total} answered</p>${bars(shown.tally, shown.truth, mine[n])}`;
        if (shown.truth != null) html += `<p>The truth on this photo: <b>${esc(s.is_number ? shown.truth : optionText(s, shown.truth))}</b></p>`;
        if (shown.line) html += `<p class="muted">${esc(shown.line.replace(/\*\*/g, ""))}</p>`;
      } else {
        html += `<p class="muted">This question is closed.</p>`;
      }
      html += `${pic}<p class="error">${esc(message)}</p><div>
        <button id="back" ${n <= 1 ? "disabled" : ""}>← look back</button>
        <button id="fwd" ${n >= state.step ? "disabled" : ""}>forward →</button></div>
        <p class="muted">The lecturer is on step ${state.step}. You follow: you may look back, not ahead.</p>`;
      app.innerHTML = html;
      const send = async (value) => {
        try {
          const a = await post(`vizvit_room/${code}/answer`, { student: id, step: n, answer: value });
          if (a.accepted) { mine[n] = String(value); sessionStorage.setItem("vizvit-answers-" + code, JSON.stringify(mine)); message = ""; }
          else message = a.reason;
        } catch (e) { message = e.message; }
        render();
      };
      app.querySelectorAll("button[data-k]").forEach((b) => (b.onclick = () => send(b.dataset.k)));
      const sb = document.getElementById("send");
      if (sb) sb.onclick = () => send(document.getElementById("num").value.trim());
      document.getElementById("back").onclick = () => { looking = Math.max(1, n - 1); render(); };
      document.getElementById("fwd").onclick = () => { looking = n + 1 >= state.step ? null : n + 1; render(); };
    }
    let v = -2;
    for (;;) {
      try {
        const r = await fetch(`${root}vizvit_room/${code}?v=${v}`, { cache: "no-store" });
        const next = await r.json();
        const moved = !state || next.step !== state.step;
        state = next;
        v = state.version;
        if (moved) looking = null;  // the lecturer moved: follow
        const typing = document.activeElement && document.activeElement.id === "num";
        if (!typing || moved || state.closed) render();
        if (state.closed) return;
      } catch (e) {
        await new Promise((res) => setTimeout(res, 1000));  // a dropped connection: ask again
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

  function hostStart() {
    app.innerHTML = `<h1>Open a live room</h1>
      <p>Students follow your steps on their phones and answer each question; you see the room's answers.</p>
      <button class="primary" id="ex">Open a room on the example photo (the cat)</button>
      <p>or on your own photo: <input type="file" id="own" accept="image/*" style="width:auto"></p>
      <p class="error" id="err"></p>`;
    const go = async (blobPromise, name) => {
      try {
        document.getElementById("err").textContent = "Opening…";
        const photo = await upload(await blobPromise, name);
        const opened = await call("room_open", [photo, await defaultModel()]);
        sessionStorage.setItem("vizvit-host", JSON.stringify(opened));
        host(opened);
      } catch (e) { document.getElementById("err").textContent = e.message; }
    };
    document.getElementById("ex").onclick = () => go(fetch(`${root}room/example.jpg`).then((r) => r.blob()), "chelsea.jpg");
    document.getElementById("own").onchange = (e) => e.target.files[0] && go(Promise.resolve(e.target.files[0]), e.target.files[0].name);
  }

  async function host(opened) {
    const { code, host_key: key } = opened;
    const lesson = await lessonOf(code);
    if (lesson.error) { sessionStorage.removeItem("vizvit-host"); return hostStart(); }
    const join = await (await fetch(`${root}vizvit_room/${code}/join`)).json();
    let st = await (await fetch(`${root}vizvit_room/${code}`)).json(), revealed = null, tally = { answers: {}, total: 0 }, err = "";
    function render() {
      const s = lesson.steps[st.step - 1], shown = st.shown[String(st.step)];
      app.innerHTML = `<div id="host"><div>${picture(code, st.step, shown)}
        <p class="muted">Step ${st.step} of ${st.n_steps} · ${esc(s.title)}</p>
        <p class="question">${esc(s.question)}</p>
        ${s.is_number ? "" : `<ul class="muted">${s.options.map(([k, t]) => `<li>${esc(k)}: ${esc(t)}</li>`).join("")}</ul>`}
        <p class="total" id="total">${(shown ? shown.tally : tally).total} answered</p>
        <div id="tally">${bars(shown ? shown.tally : tally, shown ? shown.truth : null, null)}</div>
        ${shown && shown.truth != null ? `<p class="question">Truth on this photo: ${esc(s.is_number ? shown.truth : optionText(s, shown.truth))}</p>` : ""}
        ${shown && shown.line ? `<p class="muted">${esc(shown.line.replace(/\*\*/g, ""))}</p>` : ""}
        <div><button id="back" ${st.step <= 1 ? "disabled" : ""}>← back</button>
        <button class="primary" id="reveal" ${shown ? "disabled" : ""}>Reveal</button>
        <button id="next" ${st.step >= st.n_steps ? "disabled" : ""}>next →</button>
        <button id="close">Close the room</button></div><p class="error">${esc(err)}</p></div>
        <div><p class="muted">Room code</p><div id="room-code">${esc(code)}</div>
        <div id="qr"><img alt="QR code of the students' link" src="${join.qr}"></div>
        <p><a href="${esc(join.url)}">${esc(join.url)}</a></p><p class="note">${esc(join.note.replace(/\*\*|\x60/g, ""))}</p></div></div>`;
      const step = async (n, reveal) => {
        try {  // a plain route, not a Gradio event: the move skips the queue where the answers wait
          const body = await post(`vizvit_room/${code}/step`, { host_key: key, step: n, reveal });
          if (body.error) throw new Error(body.error);
          st = body; tally = { answers: {}, total: 0 }; err = "";
        }
        catch (e) { err = e.message; }
        render(); poll();
      };
      document.getElementById("back").onclick = () => step(st.step - 1, false);
      document.getElementById("next").onclick = () => step(st.step + 1, false);
      document.getElementById("reveal").onclick = () => step(st.step, true);
      document.getElementById("close").onclick = async () => {
        try { await call("room_close", [code, key]); } catch (e) { /* closed already */ }
        sessionStorage.removeItem("vizvit-host"); hostStart();
      };
    }
    let polling = null;
    let polls = 0;
    async function poll() {  // the live tally, once a second while the step is open
      clearTimeout(polling);
      const mine = ++polls;
      if (st.shown[String(st.step)]) return;
      try {
        const t0 = await post(`vizvit_room/${code}/tally`, { host_key: key, step: st.step });
        if (t0.error) throw new Error(t0.error);
        // the lecturer moved or revealed while this was on its way: a newer poll runs; this one ends
        if (mine !== polls) return;
        tally = t0;
        const t = document.getElementById("tally");
        if (t) { t.innerHTML = bars(tally, null, null); document.getElementById("total").textContent = `${tally.total} answered`; }
      } catch (e) { if (/no open room/.test(e.message)) { sessionStorage.removeItem("vizvit-host"); return hostStart(); } }
      polling = setTimeout(poll, 1000);
    }
    render(); poll();
  }

  if (q.get("host") === "1" && q.get("code") && location.hash.startsWith("#key=")) {
    // opened from the Lesson tab: the key travels in the fragment, and leaves the address bar at once
    // (the host view goes on the projector)
    const opened = { code: q.get("code").trim().toUpperCase(), host_key: decodeURIComponent(location.hash.slice(5)) };
    history.replaceState(null, "", `${location.pathname}?host=1`);
    sessionStorage.setItem("vizvit-host", JSON.stringify(opened));
    host(opened);
  } else if (q.get("host") === "1") {
    const kept = sessionStorage.getItem("vizvit-host");
    kept ? host(JSON.parse(kept)) : hostStart();
  } else if (q.get("code")) {
    student(q.get("code").trim().toUpperCase());
  } else {
    app.innerHTML = `<h1>Join a live room</h1><p>Type the code the lecturer shows:</p>
      <form><input name="code" autocapitalize="characters" maxlength="8" aria-label="Room code"> <button class="primary">Join</button></form>
      <p><a href="?host=1">Lecturer: open a room</a></p>`;
  }
})();
