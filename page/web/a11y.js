// Accessibility (issue 51), installed once at page load after page.js. Three parts:
// 1. Names (and the radio groups' one name each): a clickable picture is a <button> around an <img> in Gradio 6.31, with no text: a screen
//    reader said "button" (axe: button-name, critical). It gets its block's label as its name (from
//    Gradio's config where show_label=False leaves the label empty). An empty chart's
//    placeholder carries aria-label on a plain <div> (axe: aria-prohibited-attr): it becomes role=img.
// 2. Keys: a picture whose block has the class CELLS_CLASS-<rows>x<cols>[-<left>-<top>-<step x>-<step y>]
//    (set from Python: page/web/__init__.py's cells_class; the Patches grid, the attention map and the
//    layers × heads grids, the Embeddings pictures, the mask grid, the Positions tiles, the Inside heads)
//    is a grid of cells: the arrow keys move a focus mark from cell to cell, Enter or Space clicks the
//    marked cell's centre with the same click event a mouse sends, so Gradio's image select (which reads
//    clientX/clientY against the <img>) and the page's own drawing of a click answer as for a mouse.
//    Without the four numbers the cells fill the picture; with them, cell (r, c) starts at
//    (left + c·step x, top + r·step y) of the picture's own pixels (past its labels).
// 3. The same names again whenever Gradio redraws (a MutationObserver, one pass per frame).
// 4. A dropdown's open list leaves the Tab order (below, at the keydown listener for Tab).
// 5. The tab strip answers the arrow keys, Home and End, as a tab list does (WAI-ARIA's tabs pattern).
//    It is one Tab stop: the open tab (part 1's pass).
// 6. Announcements: the status line, the readouts that answer a pick and a long run's last line are said once
//    they settle.
// 7. The focus stays in the photo box when Gradio redraws it (an upload, a clear).
// 8. The skip link (the first Tab stop) puts the focus in the open tab's panel.
// 9. A link to a place on the page (href="#methods") goes there without leaving the page.
() => {
  if (window.__vizvitA11y) return;
  window.__vizvitA11y = true;
  const PREFIX = 'CELLS_CLASS-';
  let groups = 0;

  // The block's label; Gradio 6.31 leaves a show_label=False block's label empty (the layers × heads
  // grid was named "picture"), so then the label the page was built with (Gradio's own config, by elem_id).
  const configLabel = (id) => {
    const c = id && ((window.gradio_config && window.gradio_config.components) || []).find((k) => k.props && k.props.elem_id === id);
    return (c && c.props.label) || '';
  };
  const labelOf = (block) => {
    const label = block && block.querySelector('[data-testid="block-label"]');
    return (label && label.textContent.trim()) || (block && configLabel(block.id)) || '';
  };
  // A chart's words: its title, then each bar's class and value (with its change, where the chart writes one
  // on its right axis), the top bar first as drawn; a heat map's range and where its highest value is; a
  // scatter's count of points. Plotly's own data (the numbers drawn), in the page's words.
  const plain = (s) => String(s ?? '').replace(/<br\s*\/?>/gi, ', ').replace(/<[^>]+>/g, '').replace(/\s+/g, ' ').trim();
  const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? String(+v.toPrecision(3)) : plain(v));
  const chartText = (gd) => {
    const lay = gd.layout || {}, y2 = lay.yaxis2 || {}, parts = [];
    const axis = (a) => plain(a && a.title && (a.title.text ?? a.title)) || '';
    const change = new Map((y2.tickvals || []).map((v, i) => [String(v), plain((y2.ticktext || [])[i])]));
    for (const t of gd._fullData) {
      if (t.visible !== true || t.hoverinfo === 'skip') continue;
      if (t.type === 'bar') {
        const h = t.orientation === 'h', cats = Array.from((h ? t.y : t.x) || []), vals = Array.from((h ? t.x : t.y) || []);
        const rows = cats.map((c, i) => {
          const v = Array.isArray(t.text) && t.text[i] !== undefined ? plain(t.text[i]) : num(vals[i]);
          const d = change.get(String(c));
          return `${plain(c)} ${v}${d ? ` (${d})` : ''}`;
        });
        parts.push((h ? rows.reverse() : rows).join(', '));
      } else if (t.type === 'heatmap' && t.z) {
        let lo = Infinity, hi = -Infinity, at = null;
        Array.from(t.z).forEach((row, r) => Array.from(row).forEach((v, c) => {
          if (typeof v !== 'number' || !Number.isFinite(v)) return;
          if (v < lo) lo = v;
          if (v > hi) { hi = v; at = [r, c]; }
        }));
        if (at) {
          const x = t.x ? plain(t.x[at[1]]) : at[1], y = t.y ? plain(t.y[at[0]]) : at[0];
          parts.push(`values ${num(lo)} to ${num(hi)}, highest at ${axis(lay.xaxis) || 'x'} ${x}, ${axis(lay.yaxis) || 'y'} ${y}`);
        }
      } else if (t.type === 'scatter' && t.x && t.x.length > 1) {
        parts.push(`${t.x.length} points${t.name && !/^trace \d+$/.test(t.name) ? ` (${plain(t.name)})` : ''}`);
      }
    }
    return `${plain(lay.title && (lay.title.text ?? lay.title)) || 'chart'}: ${parts.join('; ') || 'no data'}`;
  };
  // A picture's name said what it is, never what this photo's picture shows: the readout beside it gives that in
  // numbers (the attention map's query, its max and where; the picked patch; the masked patches...). Each such
  // picture is described by its readout (aria-describedby: read after its name, the same words as shown).
  const ID = VIZVIT_IDS;
  const DESCRIBED = {
    [ID.PATCH_GRID]: ID.PATCH_INFO, [ID.ATTN_MAIN]: ID.ATTN_READOUT, [ID.ATTN_GRID]: ID.ATTN_READOUT,
    [ID.EMB_PCA]: ID.EMB_SIM_INFO, [ID.EMB_SIM]: ID.EMB_SIM_INFO, [ID.EMB_CLS]: ID.EMB_CLS_INFO,
    [ID.MASK_GRID]: ID.MASK_INFO, [ID.MASKED_VIEW]: ID.MASK_INFO, [ID.SHIFT_VIEW]: ID.SHIFT_INFO,
    [ID.SHIFT_COS]: ID.SHIFT_INFO, [ID.ABLATE_GRID]: ID.ABLATE_TEXT, [ID.POS_GRID]: ID.POS_TEXT,
  };
  const name = () => {
    for (const btn of document.querySelectorAll('.image-container button:not(.icon-button)')) {
      if (!btn.querySelector('img')) continue;
      const block = btn.closest('.block');
      const about = block && DESCRIBED[block.id];
      if (about && btn.getAttribute('aria-describedby') !== about) btn.setAttribute('aria-describedby', about);
      const text = labelOf(block) || 'picture';
      const cells = cellsOf(block);
      const want = cells ? `${text}. Arrow keys choose a cell, Enter clicks it.` : text;
      if (btn.getAttribute('aria-label') !== want) btn.setAttribute('aria-label', want);
    }
    for (const div of document.querySelectorAll('div.empty[aria-label]:not([role])')) div.setAttribute('role', 'img');
    // The photo box was "Click to upload or drop files": not that it takes a photo, nor which kinds (its visible
    // label is not tied to the button). Its label first, then its visible words (WCAG 2.5.3, label in name).
    const up = document.querySelector(`#${ID.UPLOAD} button.upload-container`);
    const upName = up && `${labelOf(up.closest('.block'))}: Click to Upload, or drop a file here`;
    if (up && up.getAttribute('aria-label') !== upName) up.setAttribute('aria-label', upName);
    // A picture's Download was two Tab stops: Gradio's link and the button inside it (a control in a control).
    // The link stays the one stop (named by the button's label, Enter downloads); the button leaves the Tab order.
    for (const b of document.querySelectorAll('a[download] button')) if (b.tabIndex !== -1) b.tabIndex = -1;
    // A table wider than its box scrolls sideways in it (style.css): a Tab stop then, so the arrow keys scroll it.
    for (const t of document.querySelectorAll('.prose table')) {
      const wide = t.scrollWidth > t.clientWidth + 1;
      if (wide && t.tabIndex !== 0) t.tabIndex = 0;
      else if (!wide && t.hasAttribute('tabindex')) t.removeAttribute('tabindex');
    }
    // A chart (plotly) was its SVG's loose words: the top-5's "0.0% 0.5% 7.7% 9.3% 82.2% 0% 20% … hare lynx
    // tiger cat tabby Egyptian cat", no value beside its class, the worst first. Its drawing gets one name
    // from the chart's own data (chartText), and its drawn words and its title's second SVG leave the tree (the name holds them).
    for (const gd of document.querySelectorAll('.js-plotly-plot')) {
      const [svg, ...rest] = gd.querySelectorAll('svg.main-svg');
      if (!svg || !gd._fullData) continue;
      const text = chartText(gd);
      if (svg.getAttribute('aria-label') !== text) svg.setAttribute('aria-label', text);
      if (svg.getAttribute('role') !== 'img') svg.setAttribute('role', 'img');
      for (const o of [...rest, ...svg.children]) if (o.getAttribute('aria-hidden') !== 'true') o.setAttribute('aria-hidden', 'true');
    }
    // Gradio 6.31 names each option of a gr.Radio apart (radio-2, radio-3...): each was a group of its own,
    // so the arrow keys did not move between the options and Tab stopped at every one. One name per
    // gr.Radio makes them one group, as the browser's own keys expect (the change event is unchanged).
    // (Gradio sets a name again when it redraws an option: the observer below watches names too.)
    for (const r of document.querySelectorAll('input[type=radio]')) {
      const block = r.closest('.block');
      if (!block) continue;
      block.__vvGroup ??= `vv-radio-${++groups}`;
      if (r.name !== block.__vvGroup) r.name = block.__vvGroup;
    }
    // A tab strip is one Tab stop, its open tab (WAI-ARIA's tabs pattern; the arrow keys move in it: part 5). Each
    // of the ten tabs was a stop of its own: from the open tab to its first control went through the other nine.
    for (const t of document.querySelectorAll('[role=tablist] button[role=tab]')) {
      const want = t.getAttribute('aria-selected') === 'true' ? 0 : -1;
      if (t.tabIndex !== want) t.tabIndex = want;
    }
  };
  let queued = false;
  new MutationObserver(() => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; name(); });
  }).observe(document.body, { childList: true, subtree: true, attributes: true, attributeFilter: ['name', 'aria-selected'] });
  name();

  // {rows, cols, box: [left, top, step x, step y] or null} from the block's class, or null: a picture
  // without cells keeps Gradio's behaviour.
  const cellsOf = (block) => {
    const cls = block && [...block.classList].find((c) => c.startsWith(PREFIX));
    const m = cls && cls.slice(PREFIX.length).match(/^(\d+)x(\d+)(?:-(\d+)-(\d+)-(\d+)-(\d+))?$/);
    return m ? { rows: Number(m[1]), cols: Number(m[2]), box: m[3] === undefined ? null : m.slice(3, 7).map(Number) } : null;
  };
  // The drawn picture's box (object-fit: contain centres it in the <img> box), as Gradio maps a click.
  const drawn = (img) => {
    const b = img.getBoundingClientRect();
    const s = Math.min(b.width / img.naturalWidth, b.height / img.naturalHeight, 1);
    const w = img.naturalWidth * s, h = img.naturalHeight * s;
    return { left: b.left + (b.width - w) / 2, top: b.top + (b.height - h) / 2, w, h };
  };
  // Cell [r, c]'s box on the screen: {left, top, w, h} in client pixels.
  const cellBox = (img, cells, [r, c]) => {
    const d = drawn(img);
    if (!cells.box) return { left: d.left + (c * d.w) / cells.cols, top: d.top + (r * d.h) / cells.rows, w: d.w / cells.cols, h: d.h / cells.rows };
    const k = d.w / img.naturalWidth, [x0, y0, sx, sy] = cells.box;
    return { left: d.left + (x0 + c * sx) * k, top: d.top + (y0 + r * sy) * k, w: sx * k, h: sy * k };
  };
  const place = (btn, img, cells) => {
    let mark = btn.querySelector('.vv-cell-mark');
    if (!mark) {
      mark = document.createElement('span');
      mark.className = 'vv-cell-mark';
      mark.setAttribute('aria-hidden', 'true');
      btn.append(mark);
    }
    const x = cellBox(img, cells, btn.__vvCell), b = btn.getBoundingClientRect();
    Object.assign(mark.style, { left: `${x.left - b.left}px`, top: `${x.top - b.top}px`,
                                width: `${x.w}px`, height: `${x.h}px`, display: 'block' });
  };
  const MOVES = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
  document.addEventListener('keydown', (e) => {
    const btn = e.target instanceof Element && e.target.matches('.image-container button:not(.icon-button)') ? e.target : null;
    const cells = btn && cellsOf(btn.closest('.block'));
    const img = btn && btn.querySelector('img');
    if (!cells || !img || !img.naturalWidth) return;
    const { rows, cols } = cells;
    // A new grid (another model: 16 × 16 patches, 12 layers): the mark starts again in the middle.
    const fits = btn.__vvCell && btn.__vvCell[0] < rows && btn.__vvCell[1] < cols;
    const at = fits ? btn.__vvCell : [Math.floor(rows / 2), Math.floor(cols / 2)];
    if (MOVES[e.key]) {
      const [dr, dc] = MOVES[e.key];
      btn.__vvCell = [Math.min(rows - 1, Math.max(0, at[0] + dr)), Math.min(cols - 1, Math.max(0, at[1] + dc))];
      place(btn, img, cells);
      e.preventDefault();
    } else if (e.key === 'Enter' || e.key === ' ') {
      btn.__vvCell = at;
      place(btn, img, cells);
      const box = cellBox(img, cells, at);
      // The step's centre: inside the cell itself, whose separator (2 px) ends the step.
      const x = box.left + box.w / 2, y = box.top + box.h / 2;
      e.preventDefault();  // else the button's own click (at 0, 0) follows
      img.dispatchEvent(new MouseEvent('click', { clientX: x, clientY: y, bubbles: true, cancelable: true }));
    }
  }, true);
  // The mark shows where the keys are; on leaving the picture (or a mouse click) it goes.
  document.addEventListener('focusout', (e) => {
    const mark = e.target instanceof Element && e.target.querySelector && e.target.querySelector('.vv-cell-mark');
    if (mark) mark.style.display = 'none';
  }, true);
  // The page's own answer redraws the picture: the mark follows a new size (a phone turned); a table's
  // width against its box is measured again.
  window.addEventListener('resize', () => {
    name();
    for (const btn of document.querySelectorAll('.image-container button')) {
      const img = btn.querySelector('img'), cells = cellsOf(btn.closest('.block'));
      if (btn.__vvCell && img && cells && document.activeElement === btn) place(btn, img, cells);
    }
  });
  // 4. Tab out of a dropdown (the Model list) left its list open over the status line, for good: Gradio
  //    6.31's dropdown reads every key but the arrows, Home, End, Enter and Escape as typing, after a
  //    tick, so Tab's keydown opened the list again (filtered to the value) just after the focus had left
  //    and the list had closed; Escape and clicks no longer reached it. Tab is not typing: its keydown
  //    stops here, before the dropdown's handler, and the browser still moves the focus. And a long list
  //    scrolls, and Chromium makes a scrolling box a Tab stop of its own, so the focus went into the list
  //    and then fell to the page; the list is worked from its input (arrow keys, Enter): it leaves the
  //    Tab order.
  document.addEventListener('keydown', (e) => {
    if (e.key !== 'Tab' || !(e.target instanceof Element) || e.target.getAttribute('role') !== 'combobox') return;
    const list = document.getElementById(e.target.getAttribute('aria-controls') || '');
    if (list) list.tabIndex = -1;
    e.stopPropagation();
  }, true);
  // 5. Gradio 6.31's tab strip takes Enter only: each of the ten tabs was a Tab stop of its own and the arrow
  //    keys did nothing. Left / Right move to the previous / next tab (round the ends), Home / End to the
  //    first / last, and open it (automatic activation: a tab opens quickly, its pictures drawn ahead).
  document.addEventListener('keydown', (e) => {
    const tab = e.target instanceof Element && e.target.closest('button[role=tab]');
    if (!tab || e.altKey || e.ctrlKey || e.metaKey || !['ArrowLeft', 'ArrowRight', 'Home', 'End'].includes(e.key)) return;
    const tabs = [...tab.closest('[role=tablist]').querySelectorAll('button[role=tab]')].filter((t) => !t.disabled && t.offsetParent);
    const i = tabs.indexOf(tab);
    const next = { ArrowLeft: i - 1, ArrowRight: i + 1, Home: 0, End: tabs.length - 1 }[e.key];
    const to = tabs[(next + tabs.length) % tabs.length];
    if (!to || to === tab) return;
    e.preventDefault();
    to.focus();
    to.click();
  }, true);
  // 6. A screen reader heard nothing of the page's answers: neither the status line (a photo's top-1) nor
  //    the readout a picked cell fills were live regions. Gradio's own live region said "common.complete"
  //    (an untranslated key) and "Loading" after answers instead: it is silenced, and one polite region says
  //    each watched element's first line once it has stood still for SETTLE ms (the status line's "running…" steps,
  //    a slider's every step, are not said one by one). A readout on a hidden tab is not said.
  const SAY = [ID.STATUS, ID.PATCH_INFO, ID.EMB_SIM_INFO, ID.ATTN_READOUT, ID.MASK_INFO, ID.SHIFT_INFO,
               ID.ABLATE_TEXT, ID.LESSON_ANSWER, ID.CURVES_STALE, ID.SWEEP_STALE, ID.SWEEP_TEXT, ID.CURVES_TEXT,
               ID.CMP_VERDICT, ID.POS_TILE];
  const SETTLE = 700;
  // A long run's steps (the sweep's "Running… 8 of 33", the contest's "8 of 10 parts so far") are not said, one
  // a second on a slow machine: its last line is ("Done: 33 of 33 …"; the sweep and contest were not said at all).
  const STEP = /^(Running…|\d+ of \d+ parts so far)/;
  const said = document.createElement('div');
  said.id = 'vv-said';
  said.className = 'vv-sr-only';
  said.setAttribute('aria-live', 'polite');
  said.setAttribute('aria-atomic', 'true');
  document.body.append(said);
  // Its first line: the status line's model and top-1, a readout's headline, a chart's title (the picked Positions
  // tile's "Position (r, c) …"); the attention readout's table and its paragraph on artifact tokens are read
  // where they stand, not said at each pick.
  const textOf = (e) => {
    const title = e.querySelector('.gtitle');
    const text = (title && title.textContent) || e.innerText;
    return text.split('\n').map((l) => l.replace(/\s+/g, ' ').trim()).find(Boolean) || '';
  };
  const heard = new Map();  // id -> the text last said (or found when first watched)
  let timer = null;
  const announce = () => {
    const now = [];
    for (const id of SAY) {
      const e = document.getElementById(id);
      if (!e) continue;
      const t = textOf(e);
      if (heard.get(id) !== t && t && !STEP.test(t) && e.offsetParent !== null) now.push(t);
      heard.set(id, t);
    }
    if (now.length) said.textContent = now.join(' ');
  };
  const watched = new WeakSet();
  const changed = () => { clearTimeout(timer); timer = setTimeout(announce, SETTLE); };
  const watch = () => {
    for (const id of SAY) {
      const e = document.getElementById(id);
      if (!e || watched.has(e)) continue;
      watched.add(e);
      heard.set(id, textOf(e));
      new MutationObserver(changed).observe(e, { childList: true, subtree: true, characterData: true });
    }
    for (const g of document.querySelectorAll('.sr-only[aria-live]:not([aria-live=off])')) g.setAttribute('aria-live', 'off');
  };
  // 7. Space on the photo box, a file chosen: Gradio replaces the box's button by the file's row and the focus fell
  //    to <body> (a screen reader started again from the top); Clear did the same. If the focus was in the box
  //    and is lost, it goes to the box's new content: the file's row (not a Tab stop of its own), else the
  //    empty box's button. A click elsewhere, or the focus moved elsewhere, leaves the box.
  let inBox = false;
  document.addEventListener('focusin', (e) => { inBox = e.target instanceof Element && !!e.target.closest(`#${ID.UPLOAD}`); });
  document.addEventListener('pointerdown', (e) => { if (!(e.target instanceof Element && e.target.closest(`#${ID.UPLOAD}`))) inBox = false; }, true);
  const keepInBox = () => {
    if (!inBox || (document.activeElement && document.activeElement !== document.body)) return;
    const to = document.querySelector(`#${ID.UPLOAD} .file-preview`) || document.querySelector(`#${ID.UPLOAD} button.upload-container`);
    if (!to) return;
    if (!to.matches('button')) to.tabIndex = -1;
    to.focus({ preventScroll: true });
  };
  // 8. WCAG 2.4.1: the skip link (page/shell.py, seen once focused: style.css). Its href alone scrolls to the
  //    tabs but leaves the focus behind; the focus goes to the open tab's panel (not a Tab stop of its own), so
  //    the next Tab is that tab's first control.
  document.addEventListener('click', (e) => {
    const a = e.target instanceof Element && e.target.closest(`#${ID.SKIP} a`);
    if (!a) return;
    const panel = [...document.querySelectorAll(`#${ID.TABS} [role=tabpanel]`)].find((p) => p.offsetParent !== null);
    if (!panel) return;  // no tab shown yet: the href's own scroll
    e.preventDefault();
    if (!panel.hasAttribute('tabindex')) panel.tabIndex = -1;
    panel.focus({ preventScroll: true });
    panel.scrollIntoView({ block: 'start' });
  });
  // 9. Gradio's page has <base href="./">, so a fragment link (the tabs' "Methods and sources" link, the methods'
  //    own cross-references) was a link to "./#methods": the page reloaded without its query, and the photo, the
  //    tab and the deep link's settings were gone. It scrolls to its target instead, opens it where it is a
  //    closed accordion (the methods), and moves the focus there; the address is left as it is.
  document.addEventListener('click', (e) => {
    const a = e.target instanceof Element && e.target.closest('a[href^="#"]');
    if (!a || a.closest(`#${ID.SKIP}`) || e.defaultPrevented) return;
    e.preventDefault();  // a name not on the page: nothing, rather than a reload
    let id = '';
    try { id = decodeURIComponent(a.getAttribute('href').slice(1)); } catch (err) { return; }
    const to = id && document.getElementById(id);
    if (!to) return;
    const toggle = to.querySelector(':scope > .label-wrap, :scope > button.label-wrap');  // a gr.Accordion's
    if (toggle && !toggle.classList.contains('open')) {
      // Its text comes from the server as it opens (page/shell.py): at the page's end there was no room to
      // scroll it up until then, so it is scrolled to again as it grows, for 5 s or until the person scrolls.
      const again = new ResizeObserver(() => to.scrollIntoView({ block: 'start' }));
      const stop = () => {
        again.disconnect();
        for (const k of ['wheel', 'touchmove', 'keydown']) removeEventListener(k, stop, true);
      };
      for (const k of ['wheel', 'touchmove', 'keydown']) addEventListener(k, stop, true);
      again.observe(to);
      setTimeout(stop, 5000);
      toggle.click();
    }
    const focus = toggle || to;
    if (!focus.matches('a, button, input, select, textarea, [tabindex]')) focus.tabIndex = -1;
    focus.focus({ preventScroll: true });
    to.scrollIntoView({ block: 'start' });
  });
  let looking = false;
  const look = () => { if (!looking) { looking = true; requestAnimationFrame(() => { looking = false; watch(); keepInBox(); }); } };
  watch();
  new MutationObserver(look).observe(document.body, { childList: true, subtree: true });
}
