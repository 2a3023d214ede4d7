// Tab follows what the eye sees (WCAG 2.4.3). Projector mode puts a tab's pictures first with CSS
// `order` alone (style.css: the Embeddings, Experiments and Compare tabs, and the header's row), so the
// browser's Tab, which follows the DOM, went from the tab strip to the controls under the pictures and
// then jumped back up to them. The DOM stays as it is (Gradio's Svelte owns it, and the desk layout
// wants it), and Tab / Shift+Tab move in the order-modified document order instead (CSS Flexbox §5.4:
// `order` applied at every flex or grid container, boxes with display: contents looked through).
// Where that order's next stop is the DOM's own next stop, nothing is done: the browser moves the
// focus itself, so every page without `order` keeps its native Tab.
() => {
  if (window.__vizvitFocusOrder) return;
  window.__vizvitFocusOrder = true;
  const TABBABLE = 'a[href], button, input:not([type=hidden]), select, textarea, summary, iframe, [tabindex], [contenteditable]';

  const focusOrder = () => {
    const styles = new Map();  // one getComputedStyle per element per key press
    const css = (e) => { if (!styles.has(e)) styles.set(e, getComputedStyle(e)); return styles.get(e); };
    const shown = (e) => e.getClientRects().length > 0 && css(e).visibility !== 'hidden';
    const stop = (e) => e.tabIndex >= 0 && !e.disabled && !e.closest('[inert]') && shown(e);
    // Chromium makes a scrolling box with nothing focusable inside a Tab stop of its own (a table's wrap).
    const scroller = (e) => {
      if (e.scrollHeight <= e.clientHeight + 1 && e.scrollWidth <= e.clientWidth + 1) return false;
      const s = css(e);
      return /auto|scroll/.test(s.overflowX + s.overflowY) && !e.querySelector(TABBABLE) && shown(e);
    };
    const all = [...document.body.querySelectorAll('*')].filter((e) => (e.matches(TABBABLE) ? stop(e) : scroller(e)));
    // A radio group is one stop: the focused button, else the checked one, else the first.
    const groups = new Map();
    for (const r of all) if (r.type === 'radio' && r.name) groups.set(r.name, [...(groups.get(r.name) || []), r]);
    const one = (g) => g.find((r) => r === document.activeElement) || g.find((r) => r.checked) || g[0];
    const stops = all.filter((e) => !(e.type === 'radio' && e.name) || one(groups.get(e.name)) === e);

    // An element's place: from the body down, at each box its [order, element] among its box-tree siblings.
    const parentBox = (e) => { let p = e.parentElement; while (p && css(p).display === 'contents') p = p.parentElement; return p; };
    const place = (e) => {
      const out = [];
      for (let x = e, p = parentBox(e); p; x = p, p = parentBox(p)) {
        out.unshift([/flex|grid/.test(css(p).display) ? parseInt(css(x).order, 10) || 0 : 0, x]);
        if (p === document.body) break;
      }
      return out;
    };
    const dom = (a, b) => (a === b ? 0 : a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1);
    const places = new Map(stops.map((e) => [e, place(e)]));
    const seen = (a, b) => {
      const pa = places.get(a) || place(a), pb = places.get(b) || place(b);
      for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
        if (pa[i][1] === pb[i][1]) continue;
        return pa[i][0] - pb[i][0] || dom(pa[i][1], pb[i][1]);
      }
      return pa.length - pb.length;  // an ancestor first
    };
    return { stops, dom, seen };
  };

  // The stop after (or before) `at` in an order; `at` itself need not be a stop (a panel the skip link focused).
  const after = (stops, cmp, at, back) => {
    const sorted = [...stops].sort(cmp);
    return back ? sorted.findLast((s) => s !== at && cmp(s, at) < 0) : sorted.find((s) => s !== at && cmp(at, s) < 0);
  };

  // Capture, on the window: before a dropdown's own Tab handling (a11y.js part 4 stops the event at the document).
  window.addEventListener('keydown', (e) => {
    if (e.key !== 'Tab' || e.altKey || e.ctrlKey || e.metaKey || e.defaultPrevented) return;
    const at = document.activeElement;
    if (!at || at === document.body || !document.body.contains(at)) return;
    const { stops, dom, seen } = focusOrder();
    const want = after(stops, seen, at, e.shiftKey);
    if (!want || want === after(stops, dom, at, e.shiftKey)) return;  // the browser's own move is the same
    e.preventDefault();
    want.focus();
  }, true);
}
