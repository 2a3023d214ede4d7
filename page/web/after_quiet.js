// js= of the step before a tab's follow-up (page/kit.py _after_quiet: on_show's `then`, the open
// tab's charts and slow parts), a step with no inputs, so the follow-up gathers the controls as they
// are once this wait ends: as after_paint.js, wait until the pictures of SELECTOR are painted; then until the person has
// not touched the page for QUIET_MS (input_clock.js keeps the time of the last input), at most
// LIMIT_MS from the start, and for an idle moment. The follow-up's answer keeps this page's main
// thread busy for 100-300 ms (Gradio's handling of its outputs, Plotly's first render of a chart):
// landing while a control was moved right after a tab's first open, it held that control's new
// picture back (issue 52: a layer moved 0.3 s after the Attention tab's first open, 187 ms).
// While it waits, <body data-vizvit-waiting> counts the events held (tests/settle.py: every answer in).
// From its start (and again as it is sent: its tab may have opened meanwhile) the follow-up's charts
// on screen (BUSY: CSS selectors) are marked as being redrawn (aria-busy, and the class UPDATING:
// dimmed, style.css) until the step after it (follow_done.js) ends this follow-up's (KEY) marks:
// after a new photo they still show the photo before's (a review found them with nothing said).
// A chart another follow-up still marks stays marked (the open tab's and a new photo's may overlap:
// the first to end cleared the other's marks). A minute at most, should that step never come.
async (...inputs) => {
  const b = document.body;
  b.dataset.vizvitWaiting = Number(b.dataset.vizvitWaiting || 0) + 1;
  const marks = (window.__vvBusy = window.__vvBusy || {});
  window.__vvUnbusy = window.__vvUnbusy || ((key, only) => {  // only: end these marks, if still the key's
    const mine = marks[key];
    if (!mine || (only && only !== mine)) return;
    delete marks[key];
    const held = new Set(Object.values(marks).flatMap((m) => [...m]));
    for (const e of mine) {
      if (held.has(e)) continue;
      e.removeAttribute('aria-busy');
      e.classList.remove(UPDATING);
    }
  });
  const busy = (marks[KEY] = marks[KEY] || new Set());
  const mark = () => {
    for (const e of BUSY.flatMap((s) => [...document.querySelectorAll(s)])) {
      if (e.offsetParent === null) continue;
      busy.add(e);
      e.setAttribute('aria-busy', 'true');
      e.classList.add(UPDATING);
    }
  };
  mark();
  setTimeout(() => window.__vvUnbusy(KEY, busy), 60000);
  try {
    const t0 = performance.now();
    const imgs = [...document.querySelectorAll('SELECTOR')].filter((i) => i.offsetParent !== null);
    const decoded = Promise.all(imgs.map((i) => (i.decode ? i.decode().catch(() => null) : null)));
    await Promise.race([decoded, new Promise((r) => setTimeout(r, 1000))]);
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    for (;;) {
      const left = Math.min((window.__vizvitInputAt ?? -Infinity) + QUIET_MS, t0 + LIMIT_MS) - performance.now();
      if (left <= 0) break;
      await new Promise((r) => setTimeout(r, left));
    }
    await new Promise((r) => (window.requestIdleCallback ? requestIdleCallback(r, { timeout: 100 }) : setTimeout(r, 0)));
    mark();
    return inputs.length === 1 ? inputs[0] : inputs;
  } finally {
    b.dataset.vizvitWaiting = Number(b.dataset.vizvitWaiting) - 1;
  }
}
