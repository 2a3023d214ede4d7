// The live camera's picture drawn in the page from one frame's book (camera.py beside this file:
// live_book), the picture compose draws on the server: the model-input view enlarged with its patch
// grid, the Attention tab's map beside it (map_draw.js, put before this file: the same drawing),
// the captions and the top-5 with their probability bars under them, each where the book says.
// js_on_load of the camera page's camera component: installs window.__vizvitCamDraw once.
window.__vizvitCamDraw || (window.__vizvitCamDraw = (() => {
  const D = window.__vizvitMapDraw;
  const small = document.createElement('canvas'), map = document.createElement('canvas');
  const rgb = (c) => `rgb(${c.join(',')})`;

  // The book (parsed) drawn on canvas cv, which takes the picture's size. Resolves once drawn: the
  // view is decoded first, then everything is drawn at once (no half-drawn picture is painted).
  // still: when given, asked after the decode; false leaves cv as it was (a camera stopped meanwhile).
  const draw = async (b, cv, still = null) => {
    const [h, w] = b.size, L = b.layout, m = b.map;
    const view = await D.pixels(b.view, b.size);  // RGBA, h × w
    if (still && !still()) return cv;
    const right = D.render({ ...b, view, lut: D.bytes(b.lut) },
                           { index: D.bytes(m.index), lo: m.lo, hi: m.hi, keep: m.keep ? D.bytes(m.keep) : null,
                             bars: m.bars, art: m.art, at: null }, map);
    if (cv.width !== L.width) cv.width = L.width;  // a canvas resized is cleared: only when it changes
    if (cv.height !== L.height) cv.height = L.height;
    const x = cv.getContext('2d');
    x.fillStyle = '#fff';
    x.fillRect(0, 0, L.width, L.height);
    // render.draw_grid(render.enlarge(view, SCALE), lines=True): nearest-neighbour enlargement, then
    // one-pixel lines at round(k · step), step a patch's side (render.patch_step), k = gh closing a
    // grid that stops short of the edge (a side not a multiple of P).
    small.width = w; small.height = h;
    small.getContext('2d').putImageData(new ImageData(view, w, h), 0, 0);
    x.imageSmoothingEnabled = false;
    x.drawImage(small, 0, 0, L.side, L.side);
    D.gridLines(x, view, w, h, L.side, L.side, b.grid, L.side * b.patch / h, b.grid_lines);
    x.drawImage(right, L.map_x, 0);
    x.fillStyle = rgb(b.bar_color);
    for (const [bx, by, bw, bh] of b.bars) x.fillRect(bx, by, bw, bh);
    x.font = `bold ${b.style.text_px}px sans-serif`;  // as the map's colour bar (put_text's strokes are thick)
    x.fillStyle = '#000';
    for (const [text, tx, ty, most] of b.texts) x.fillText(text, tx, ty, most);
    return cv;
  };
  return { draw };
})());
