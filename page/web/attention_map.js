// The Attention tab's main map, drawn in the page (issue 16): js_on_load of the hidden gr.HTML
// "attn-book", whose value is a MapBook (attention.py beside this file, book_for_page): every layer ×
// (each head, then each fusion) of the main map under the other controls, on every colour scale.
// A layer, head, fusion or colour-scale change is drawn here at once, with no round trip; the server still sends the readout,
// the grid and the strip. The picture is map_image's: the view blended with the colour map,
// the τ dimming, the integer enlargement, the query's outline and the colour bar (its numbers in
// the browser's font), the same size, so a click on it maps to the same patch (the drawing itself:
// map_draw.js, shared with the live camera, put before this file).
// Every constant shared with the server's drawing comes in the book (b.style: page_style()), none
// is written here.
// Runs at every mount of the component: the state lives in window.__vizvitAttn, installed once.
const A = window.__vizvitAttn || (window.__vizvitAttn = (() => {
  const ID = VIZVIT_IDS;  // the element ids (page/ids.py), written in as the script is read
  const st = { book: null, drawn: null, seq: 0 };
  const $ = (sel) => document.querySelector(sel);
  const D = window.__vizvitMapDraw, { bytes, colorbarLabels, bits } = D;  // map_draw.js, run before this
  // A map drawn on this tab's one canvas (st.canvas: the browser tests read what is on screen from it).
  const render = (b, mp) => D.render(b, mp, st.canvas || (st.canvas = document.createElement('canvas')));

  // The controls as the page shows them. st.pick: the heads choice the user just made, until
  // the radio shows it alone (a head-slider move means "one head", as on the server; and for a
  // moment after a click, Gradio's radio has two buttons checked).
  const checked = (id = ID.ATTN_SHOW) => [...document.querySelectorAll('#' + id + ' input:checked')].map((i) => i.value);
  // scale: the colour scale, st.scalePick likewise until the radio shows it alone.
  const controls = () => {
    const layer = Number($(`#${ID.ATTN_LAYER} input[type=range]`)?.value);
    const head = Number($(`#${ID.ATTN_HEAD} input[type=range]`)?.value);
    const show = st.pick || checked()[0];
    const scale = st.scalePick || checked(ID.ATTN_SCALE)[0];
    return { layer, head, show, scale, key: layer + '|' + head + '|' + show };
  };

  const decode = async (b) => {
    const scales = Object.fromEntries(Object.entries(b.scales || {}).map(([k, v]) => [k, { ...v, index: bytes(v.index) }]));
    return { ...b, view: await D.pixels(b.view, b.size), index: bytes(b.index), scales,
             keep: b.keep ? bytes(b.keep) : null, lut: bytes(b.lut) };
  };

  // The map (l, k) of the book: its colour-table rows (computed by the server), colour range, τ mask
  // and colour-bar labels, on the book's colour scale or another of its scales (null: not in the book).
  const bookMap = (b, layer, head, show, scale) => {
    const on = !scale || scale === b.scale_name ? b : b.scales[scale];
    if (!on) return null;
    const [gh, gw] = b.grid, K = b.heads + b.fusions.length, n = gh * gw;
    const one = b.style.one_head, f = b.fusions.indexOf(show), k = show === one ? head - 1 : b.heads + f;
    if (!Number.isInteger(layer) || !Number.isInteger(head) || (show !== one && f < 0)
        || layer < 1 || layer > b.layers || head < 1 || head > b.heads) return null;
    const m = (layer - 1) * K + k;
    return { index: on.index.subarray(m * n, (m + 1) * n), lo: on.lo_hi[2 * m], hi: on.lo_hi[2 * m + 1],
             keep: b.keep ? b.keep.subarray(m * n, (m + 1) * n) : null, at: b.highlight,
             bars: on === b ? b.bars[layer - 1][k] : colorbarLabels(b.scale * b.size[0], on.lo_hi[2 * m], on.lo_hi[2 * m + 1], b),
             art: b.artifacts[layer - 1] };
  };

  // ---- a clicked patch as the query, from the QueryBook of the shown map (matrix_for_page): each
  // patch's map as the server paints it (colour rows, range, τ mask); map_draw.js's colorbarLabels
  // lays out its colour bar, for main_panel's very picture.
  const matrix = () => {
    const text = window.__vizvitAttnMatrix;
    if (!text) return null;
    if (st.mxText !== text) {
      const mx = JSON.parse(text), index = bytes(mx.index);
      st.mx = { ...mx, index, lo_hi: new Float64Array(bytes(mx.lo_hi).buffer),
                keep: mx.keep ? bits(bytes(mx.keep), index.length) : null };
      st.mxText = text;
    }
    return st.mx;
  };
  const queryMap = (b, mx, [r, c], layer) => {
    const n = b.grid[0] * b.grid[1], i = r * b.grid[1] + c, lo = mx.lo_hi[2 * i], hi = mx.lo_hi[2 * i + 1];
    return { index: mx.index.subarray(i * n, (i + 1) * n), lo, hi, keep: mx.keep ? mx.keep.subarray(i * n, (i + 1) * n) : null,
             bars: colorbarLabels(b.scale * b.size[0], lo, hi, b), at: [r, c], art: b.artifacts[layer - 1] };
  };

  // Show the map for the page's controls in the main picture's <img> (not a canvas on top: a
  // click on it then maps through Gradio's own select handler, and a right-click saves what is
  // seen). Redrawn when the controls moved, or when something else replaced the <img>'s picture.
  const draw = () => {
    const b = st.book, img = $(`#${ID.ATTN_MAIN} img`);
    if (!b || !img || st.pending) return;
    if (st.local && performance.now() < st.local) return;  // a clicked query waits for its book
    const c = controls(), src = img.getAttribute('src');
    if (st.drawn && st.drawn.key === c.key && st.drawn.scale === c.scale && st.drawn.src === src) return;
    const mp = bookMap(b, c.layer, c.head, c.show, c.scale);
    if (mp) show(img, render(b, mp), c.key, c.scale);
  };
  const show = (img, cv, key, scale) => {
    const url = cv.toDataURL('image/jpeg', 0.92);  // JPEG, as the server sends: ~3× faster than PNG
    img.src = url;
    img.dataset.drawn = key;  // the browser tests and the latency benchmark read this
    st.drawn = { key, scale, src: url };
    // A newer picture replacing this one before it decodes rejects the promise: not an error.
    st.painted = img.decode().catch(() => {});
  };

  const setBook = async (text) => {
    const seq = ++st.seq;
    const raw = text ? JSON.parse(text) : null;
    if (!raw || !raw.index) { st.book = null; st.pending = false; return; }
    st.pending = true;
    let b;
    try { b = await decode(raw); } catch (err) { if (seq === st.seq) { st.pending = false; st.book = null; } return; }
    if (seq !== st.seq) return;  // a newer book came while this one decoded
    st.book = b;
    st.local = null;
    if (!b.highlight && b.direction === 'row') st.summary = b;  // kept for "back to the summary token": its row
    st.pending = false;
    // The server's picture that came with the book shows b.for: keep it, unless the controls
    // have moved since, or the <img> still holds a picture drawn here (Gradio skips an update
    // equal to its last one, which would leave an older book's drawing on screen).
    const c = controls(), img = $(`#${ID.ATTN_MAIN} img`), src = img && img.getAttribute('src');
    st.drawn = (c.key === b.for.join('|') && c.scale === b.scale_name && src && !src.startsWith('data:'))
      ? { key: c.key, scale: c.scale, src } : null;
    draw();
  };

  // A layer, head or fusion the user picks is painted first, then handed on to Gradio: its own
  // handling of an event keeps this large page busy for ~100 ms, and an <img> only paints once
  // the page is idle. So the user's event is held for two frames (the new picture is painted in
  // the first) and then dispatched again, unchanged, to Gradio, which asks the server for the readout,
  // the grid and the strip. A layer or head typed in the slider's number box is drawn the same
  // way: its value goes to the range input at once (Gradio would put it there only after its own
  // handling of the event, ~100 ms later), then the event is handed on.
  const { handedOn, release: dispatchWaiting } = window.__vizvitHandOn;
  const handOn = (e, t) => window.__vizvitHandOn.handOn(e, t, st.painted);
  // A number typed in a slider's box -> that slider's range input, when it is a value the range
  // holds exactly (a whole number within its bounds; "" or "1" on the way to "12" of 6 layers is
  // not: the server hears of it, as before). Returns whether it was taken.
  const typed = (box) => {
    const r = box.closest(`#${ID.ATTN_LAYER}, #${ID.ATTN_HEAD}`).querySelector('input[type=range]');
    const v = Number(box.value);
    if (!r || box.value.trim() === '' || !Number.isInteger(v) || v < Number(r.min) || v > Number(r.max)) return false;
    r.value = String(v);
    return true;
  };
  const onInput = (e) => {
    const t = e.target;
    if (!(t instanceof Element) || handedOn.has(e)) return;
    const range = t.matches(`#${ID.ATTN_LAYER} input[type=range], #${ID.ATTN_HEAD} input[type=range]`);
    const inBox = e.type === 'input' && t.matches(`#${ID.ATTN_LAYER} input[type=number], #${ID.ATTN_HEAD} input[type=number]`);
    const box = inBox && st.book && e.isTrusted && typed(t);
    if (inBox && !box) dispatchWaiting();  // it goes to Gradio now: after the events still held
    const radio = t.matches(`#${ID.ATTN_SHOW} input[type=radio], #${ID.ATTN_SCALE} input[type=radio]`);
    if (t.closest(`#${ID.ATTN_HEAD}`)) st.pick = st.book ? st.book.style.one_head : null;
    else if (radio && t.checked && t.closest(`#${ID.ATTN_SCALE}`)) st.scalePick = t.value;
    else if (radio && t.checked) st.pick = t.value;
    else if (!t.closest(`#${ID.ATTN_LAYER}`)) return;
    if (t.closest(`#${ID.ATTN_HEAD}, #${ID.ATTN_SHOW}, #${ID.ATTN_SCALE}`)) st.pickAt = performance.now();
    draw();
    setTimeout(draw, 0);
    if ((range || radio || box) && st.book && e.isTrusted) handOn(e, t);
  };
  document.addEventListener('input', onInput, true);
  document.addEventListener('change', onInput, true);

  // "Query: back to the summary token": the summary token's row book of the same look (a column
  // map goes back to the row: the direction is the one setting that may differ) is still here,
  // so it is drawn at once; the click is handed on to Gradio as above (the server then sends the
  // same picture, the readout, grid and strip, and sets the direction radio to row).
  document.addEventListener('click', (e) => {
    const t = e.target;
    if (!(t instanceof Element) || !t.closest(`#${ID.ATTN_TO_CLS}`) || handedOn.has(e) || !e.isTrusted) return;
    const b = st.book, back = st.summary;
    if (!b || !b.highlight || !back || back.look !== b.row_look || back.photo !== b.photo || st.pending) return;
    st.book = back;
    st.drawn = null;
    st.local = null;
    draw();
    handOn(e, t);
  }, true);
  // A click on the map: the clicked patch's map from the shown map's QueryBook is drawn at once
  // (Gradio maps the click to a pixel the same way); the click is then handed on,
  // and the server's book for that query follows. A picture still loading: page.js holds the
  // click until it is decoded, then this sees it again.
  document.addEventListener('click', (e) => {
    const t = e.target;
    if (!(t instanceof Element) || handedOn.has(e)) return;
    const img = t.closest(`#${ID.ATTN_MAIN} .image-container button`)?.querySelector('img');
    const b = st.book, mx = matrix(), c = controls();
    if (!img || !img.naturalWidth || !b || st.pending || !mx || mx.for !== c.key || mx.look !== b.look
        || mx.photo !== b.photo || c.scale !== b.scale_name) return;
    const n = img.getBoundingClientRect(), r = Math.min(n.width / img.naturalWidth, n.height / img.naturalHeight, 1);
    const x = Math.round((e.clientX - n.left - (n.width - img.naturalWidth * r) / 2) / r);
    const y = Math.round((e.clientY - n.top - (n.height - img.naturalHeight * r) / 2) / r);
    const cell = b.patch * b.scale, row = Math.floor(y / cell), col = Math.floor(x / cell);
    if (!(row >= 0 && row < b.grid[0] && col >= 0 && col < b.grid[1])) return;  // the colour bar: the server says so
    // The same patch again: its book is already here, and the server's answer will be the same
    // book (which fires no update): nothing to draw ahead of it.
    if (b.highlight && b.highlight[0] === row && b.highlight[1] === col) return;
    show(img, render(b, queryMap(b, mx, [row, col], c.layer)), c.key + '|' + row + ',' + col);
    st.local = performance.now() + 5000;  // the book for it clears this; 5 s if no answer comes
    handOn(e, t);
  }, true);

  // Changes the server makes (a grid cell, a head from the list, a deep link) fire no input event.
  setInterval(() => {
    const c = checked();
    // The user's pick, until the radio shows it alone, or at most 1.5 s: after that, what the
    // radio shows is the server's word (e.g. a head change's answer arriving after a fusion click).
    if (st.pick && ((c.length === 1 && c[0] === st.pick) || performance.now() - st.pickAt > 1500)) st.pick = null;
    const sc = checked(ID.ATTN_SCALE);
    if (st.scalePick && ((sc.length === 1 && sc[0] === st.scalePick) || performance.now() - st.pickAt > 1500)) st.scalePick = null;
    if (st.book && $(`#${ID.ATTN_MAIN} img`)?.offsetParent) draw();
  }, 100);
  return { setBook, render, bookMap, queryMap, matrix, state: st };
})());
A.setBook(props.value);
watch('value', () => A.setBook(props.value));
