// Paint first, then tell Gradio: run before the scripts that draw in the page
// (page/web/attention_map.js, page/web/flipbook.js; see web.on_load). Gradio's own handling
// of one event keeps this large page's main thread busy for 100-300 ms, and a new picture paints
// only when the thread is free. So the user's input event is held until the page's picture is
// decoded and two frames have passed (at most 300 ms), then dispatched again, unchanged, for
// Gradio. The user's next action first releases whatever is still held: Gradio sees every action
// in the order it was made (a click on the map right after a head change would otherwise be
// answered first, then overwritten by the held head change, sent with no query).
// One queue for the whole page, installed once (window.__vizvitHandOn), whichever script mounts first.
window.__vizvitHandOn = window.__vizvitHandOn || (() => {
  const handedOn = new WeakSet();  // the events dispatched again: let through untouched
  const waiting = [];  // [target, event] held, in order
  const release = () => { while (waiting.length) { const [t, ev] = waiting.shift(); t.dispatchEvent(ev); } };
  // Hold event e (dispatched again on `target`) until `ready` (a promise) settles and two frames
  // pass, or `limit` ms (a page asked of the server waits longer: flipbook.js, ask).
  const handOn = (e, target, ready, limit = 300) => {
    e.stopImmediatePropagation();
    const again = e instanceof MouseEvent
      ? new MouseEvent(e.type, { bubbles: true, cancelable: true, clientX: e.clientX, clientY: e.clientY })
      : new Event(e.type, { bubbles: true });
    handedOn.add(again);
    waiting.push([target, again]);
    const later = () => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(release, 0)));
    Promise.race([Promise.resolve(ready), new Promise((r) => setTimeout(r, limit))]).then(later, later);
  };
  for (const type of ['pointerdown', 'keydown', 'click']) {
    document.addEventListener(type, (e) => { if (!handedOn.has(e)) release(); }, true);
  }
  return { handOn, handedOn, release, held: () => waiting.length };
})();
