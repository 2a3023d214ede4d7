// The Embeddings tab's clicked token, drawn in the page (issue 27): js_on_load of the hidden gr.HTML
// "emb-tokens", whose value is a TokenBook (embeddings.py beside this file: token_book) for the
// depth shown. A click on either picture is drawn here at once: the PCA picture with the clicked
// patch outlined (pca_over_photo) and the clicked token's similarity to every patch
// (similarity_panel), the server's very pixels, from the book's colour-table rows, on canvases
// laid over the pictures. The clicked patch then goes to the server through a hidden box (#emb-click),
// whose answer brings the same pictures and the text; the canvases stay until the last click's answer is in (an older
// click's answer never shows: each answer's text names its patch). map_draw.js (run before this file) has the shared pieces.
// Runs at every mount: the state lives in window.__vizvitEmb, installed once.
const E = window.__vizvitEmb || (window.__vizvitEmb = (() => {
  const ID = VIZVIT_IDS;  // the element ids (page/ids.py), written in as the script is read
  const D = window.__vizvitMapDraw;
  const st = { book: null, view: null, seq: 0, pending: [], shown: null, clicks: 0 };
  const IDS = { pca: ID.EMB_PCA, sim: ID.EMB_SIM };
  const imgOf = (kind) => document.querySelector('#' + IDS[kind] + ' img');

  const setBook = async (text) => {
    const seq = ++st.seq;
    const raw = text ? JSON.parse(text) : null;
    if (!raw || !raw.sim) { st.book = null; return; }
    let view = st.view && st.view.look === raw.look ? st.view : null;
    if (raw.view) {
      try { view = { look: raw.look, px: await D.pixels(raw.view, raw.size) }; } catch (e) { view = null; }
    }
    if (seq !== st.seq) return;  // a newer book came while this one decoded
    st.view = view;
    st.book = view ? { ...raw, sim: D.bytes(raw.sim), pca: D.bytes(raw.pca), lut: D.bytes(raw.lut) } : null;
    // Draw and encode once while the page is idle: the first click then runs warm code (cold, it
    // took ~150 ms where later clicks take ~60).
    const b = st.book;
    if (b && !st.warm) {
      st.warm = true;
      (window.requestIdleCallback || setTimeout)(() => { for (const k of Object.keys(IDS)) picture(b, view.px, k, [0, 0]).toDataURL('image/jpeg', 0.92); });
    }
  };

  // The picture `kind` ('pca' or 'sim') with patch [r, c] clicked, as the server draws it: the
  // colours blended over the view (cv2.addWeighted: map_draw.js's blend), enlarged by
  // nearest neighbour, the grid's lines (the PCA picture), the clicked patch's outline
  // (draw_grid's highlight) and the artifact tokens' boxes (_outline_cells). Returns the canvas.
  const picture = (b, view, kind, [r, c]) => {
    const [gh, gw] = b.grid, [h, w] = b.size, s = b.scale, n = gh * gw, H = h * s, W = w * s;
    const tile = new Uint8Array(3 * n);
    if (kind === 'sim') {
      const row = b.sim.subarray((r * gw + c) * n, (r * gw + c + 1) * n);
      for (let i = 0; i < n; i++) tile.set(b.lut.subarray(3 * row[i], 3 * row[i] + 3), 3 * i);
    } else {
      tile.set(b.pca.subarray(0, 3 * n));
    }
    const fa = Math.fround(b.alpha[kind]), fb = Math.fround(1 - b.alpha[kind]);
    // render.tile_picture: patch (r, c) on its own P×P pixels; past the gh·P × gw·P the grid covers
    // (a side not a multiple of P) no patch reads: grey 128, blended.
    const small = new ImageData(w, h), out = small.data, gy = Math.min(h, gh * b.patch), gx = Math.min(w, gw * b.patch);
    for (let y = 0; y < h; y++) {
      const pr = Math.floor(y * gh / gy);
      for (let x = 0; x < w; x++) {
        const i = pr * gw + Math.floor(x * gw / gx), o = 4 * (y * w + x), unread = y >= gy || x >= gx;
        for (let ch = 0; ch < 3; ch++) out[o + ch] = D.blend(unread ? 128 : tile[3 * i + ch], view[o + ch], fa, fb);
        out[o + 3] = 255;
      }
    }
    const sc = document.createElement('canvas');
    sc.width = w; sc.height = h;
    sc.getContext('2d').putImageData(small, 0, 0);
    const cv = document.createElement('canvas');
    cv.width = W; cv.height = H;
    const x = cv.getContext('2d');
    x.imageSmoothingEnabled = false;
    x.drawImage(sc, 0, 0, W, H);
    const step = s * b.patch, C = b.colors;  // render.patch_step
    if (kind === 'pca') D.gridLines(x, small.data, w, h, W, H, [gh, gw], step, C.grid);  // draw_grid(lines=True)
    D.box(x, [D.roundHalfEven(c * step), D.roundHalfEven(r * step)],
          [D.roundHalfEven((c + 1) * step) - 1, D.roundHalfEven((r + 1) * step) - 1], b.outline, C.highlight, [W, H]);
    const sy = step, sx = step, k = b.inset;  // _outline_cells over the photo: a patch's side
    for (const i of b.excluded) {
      const rr = Math.floor(i / gw), cc = i % gw;
      const x0 = Math.trunc(cc * sx), y0 = Math.trunc(rr * sy), x1 = Math.trunc((cc + 1) * sx) - 1, y1 = Math.trunc((rr + 1) * sy) - 1;
      D.box(x, [x0, y0], [x1, y1], b.box, C.artifact, [W, H]);
      if (x1 - x0 > 2 * k + 1) D.box(x, [x0 + k, y0 + k], [x1 - k, y1 - k], 1, [255, 255, 255], [W, H]);
    }
    return cv;
  };

  // Lay the drawn pictures over the two <img>, where each shows its picture (object-fit contain,
  // never enlarged), until the server's answer for the last click is decoded in them: a canvas
  // paints at the next frame, where a picture put in the <img> first waited for the browser's image
  // decoder (~100 ms when it was busy with the depth book's pictures). The canvases let clicks
  // through to the <img> (pointer-events: none), so Gradio's select handler maps them as ever.
  const cover = (canvases, cell) => {
    for (const [kind, cv] of Object.entries(canvases)) {
      const img = imgOf(kind);
      if (!img) continue;
      const box = img.parentElement;
      if (getComputedStyle(box).position === 'static') box.style.position = 'relative';
      const k = Math.min(img.clientWidth / img.naturalWidth, img.clientHeight / img.naturalHeight, 1);
      const w = img.naturalWidth * k, h = img.naturalHeight * k;
      cv.className = 'vv-drawn';
      cv.dataset.drawn = cell.join(',');  // the browser tests and the latency benchmark read this
      cv.style.cssText = `position:absolute;pointer-events:none;width:${w}px;height:${h}px;`
        + `left:${img.offsetLeft + (img.clientWidth - w) / 2}px;top:${img.offsetTop + (img.clientHeight - h) / 2}px`;
      box.querySelector('canvas.vv-drawn')?.remove();
      box.appendChild(cv);
    }
    return new Promise((ok) => requestAnimationFrame(() => ok()));
  };
  const uncover = () => {
    const imgs = Object.keys(IDS).map(imgOf).filter(Boolean);
    Promise.all(imgs.map((i) => i.decode().catch(() => null))).then(() => {
      if (st.pending.length) return;  // another click came meanwhile: its drawing stays
      for (const i of imgs) i.parentElement.querySelector('canvas.vv-drawn')?.remove();
    });
  };

  // A click's pixel on a picture's own pixels, as Gradio maps it (centred, object-fit contain,
  // never enlarged), and the patch under it as the server finds it (patches.patch_at).
  const cellOf = (b, img, e) => {
    const n = img.getBoundingClientRect(), k = Math.min(n.width / img.naturalWidth, n.height / img.naturalHeight, 1);
    const px = Math.round((e.clientX - n.left - (n.width - img.naturalWidth * k) / 2) / k);
    const py = Math.round((e.clientY - n.top - (n.height - img.naturalHeight * k) / 2) / k);
    const size = b.patch * b.scale, r = Math.floor(py / size), c = Math.floor(px / size);
    return r >= 0 && r < b.grid[0] && c >= 0 && c < b.grid[1] ? [r, c] : null;
  };
  const depthNow = () => Number(document.querySelector(`#${ID.EMB_DEPTH} input[type=range]`)?.value);

  const { handedOn } = window.__vizvitHandOn;
  document.addEventListener('click', (e) => {
    const t = e.target;
    // (A click page.js held while the picture loaded comes again, untrusted: drawn here too.)
    if (!(t instanceof Element) || handedOn.has(e)) return;
    const kind = Object.keys(IDS).find((k) => t.closest('#' + IDS[k] + ' .image-container button'));
    const img = kind && imgOf(kind), b = st.book;
    // Only what the book holds: its depth, a decoded picture of the photo's size (else the server draws).
    if (!img || !img.naturalWidth || !b || !st.view || depthNow() !== b.depth
        || img.naturalWidth !== b.size[1] * b.scale) return;
    const cell = cellOf(b, img, e);
    if (!cell) return;
    const canvases = {};
    for (const k of Object.keys(IDS)) canvases[k] = picture(b, st.view.px, k, cell);
    st.shown = { cell };
    st.pending.push(performance.now());  // one server answer to come for this click
    // Not Gradio's select event (it loses a click made while the last one is answered): the patch
    // goes to the hidden box the server's click handler reads, once the drawing is painted.
    e.stopImmediatePropagation();
    const n = ++st.clicks;
    cover(canvases, cell).then(() => requestAnimationFrame(() => setTimeout(() => {
      const box = document.querySelector(`#${ID.EMB_CLICK} textarea, #${ID.EMB_CLICK} input`);
      if (!box) return;
      box.value = cell.join(',') + ',' + n;
      box.dispatchEvent(new Event('input', { bubbles: true }));
    }, 0)));
  }, true);

  // An answer from the server (the similarity picture's <img> takes a new picture, its text names the
  // patch) for the last click drawn here: its pictures replace the drawings laid over them. An
  // older click's answer leaves them (the box's event runs always_last: a click made while one is
  // answered is answered next). No answer in 5 s (the server said no): uncovered too.
  const answered = () => {
    const m = /Patch \(row (\d+), col (\d+)\)/.exec(document.querySelector(`#${ID.EMB_SIM_INFO}`)?.innerText || '');
    return st.shown && m && Number(m[1]) === st.shown.cell[0] && Number(m[2]) === st.shown.cell[1];
  };
  new MutationObserver((records) => {
    if (!st.pending.length || !records.some((r) => r.target === imgOf('sim'))) return;
    requestAnimationFrame(() => { if (st.pending.length && answered()) { st.pending = []; uncover(); } });
  }).observe(document.documentElement, { subtree: true, attributes: true, attributeFilter: ['src'] });
  setInterval(() => {
    const now = performance.now(), before = st.pending.length;
    st.pending = st.pending.filter((t0) => now - t0 < 5000);
    if (before && !st.pending.length) uncover();
  }, 500);
  // A new photo, model or depth: its book replaces the last (and older clicks' answers are moot).
  const onBook = (text) => { if (st.pending.length) { st.pending = []; uncover(); } return setBook(text); };
  return { setBook: onBook, picture, state: st };
})());
E.setBook(props.value);
watch('value', () => E.setBook(props.value));
