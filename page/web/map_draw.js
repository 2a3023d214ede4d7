// A map picture drawn in the page, as vizvit.pictures.render / views/attention.py: map_image draws it: the
// shared drawing of the Attention tab's main map (attention_map.js) and the live camera's picture
// (web/camera_live.js). js_on_load of a component on each page that draws maps: installs
// window.__vizvitMapDraw once. Every constant shared with the server comes in the book b
// (views/attention.py: page_drawing), none is written here.
window.__vizvitMapDraw || (window.__vizvitMapDraw = (() => {
  const st = {};
  const bytes = (b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  // A picture (a data: URL) -> its RGBA pixels, h × w.
  const pixels = async (src, [h, w]) => {
    const img = new Image();
    img.src = src;
    await img.decode();
    const c = document.createElement('canvas');
    c.width = w; c.height = h;
    const x = c.getContext('2d', { willReadFrequently: true });
    x.drawImage(img, 0, 0);
    return x.getImageData(0, 0, w, h).data;
  };
  // cv2.addWeighted(heat, α, view, 1 − α, 0) of one 8-bit channel, as OpenCV's SIMD code computes it:
  // fma(heat, α, fma(view, 1 − α, 0)) in float32 (one rounding of heat·α + the rounded view·(1 − α);
  // exact in doubles first), then rounded half to even. Two separate float32 products differ at
  // ~0.2 % of the pixels for α = 0.65 (tests/page: the embeddings' pixel test found it).
  const blend = (heat, view, fa, fb) => roundHalfEven(Math.fround(heat * fa + Math.fround(view * fb)));
  const roundHalfEven = (v) => (Math.abs(v % 1) === 0.5 ? 2 * Math.round(v / 2) : Math.round(v));
  // render.color_index: the colour-table row of value v in the range lo … hi (numpy rounds half to even).
  const colorIndex = (v, lo, hi) => roundHalfEven((hi > lo ? Math.min(1, Math.max(0, (v - lo) / (hi - lo))) : 0) * 255);

  // render.draw_grid's lines on context x, over a picture drawn from src (RGBA pixels, sw × sh) enlarged
  // nearest-neighbour by an integer factor to W × H: one-pixel lines at round(k · step), k = gh closing a
  // grid that stops short of the edge. Each patch's side along a line is lines.color, or lines.on_light
  // where the pixels under it have a mean luminance of at least lines.light (render._line_colors: a white
  // line did not show on a white picture; decided side by side, in integers (lines.luma), as the server
  // does); crossings take the picture's colour, as on the server. lines: render.grid_lines_style.
  const gridLines = (x, src, sw, sh, W, H, [gh, gw], step, lines) => {
    const gH = Math.min(H, roundHalfEven(gh * step)), gW = Math.min(W, roundHalfEven(gw * step));
    const sy = sh / H, sx = sw / W, [wr, wg, wb] = lines.luma;
    const starts = (n, len) => Array.from({ length: n }, (_, k) => roundHalfEven(k * step)).filter((s) => s < len);
    // one ImageData line of len pixels; at(p): src's byte of the picture's pixel p along it; sides: starts
    const paint = (len, wide, at, sides) => {
      const line = wide ? new ImageData(len, 1) : new ImageData(1, len);
      sides.forEach((s, j) => {
        const e = j + 1 < sides.length ? sides[j + 1] : len;
        let sum = 0;
        for (let p = s; p < e; p++) { const i = at(p); sum += wr * src[i] + wg * src[i + 1] + wb * src[i + 2]; }
        const c = sum >= lines.light * 1000 * (e - s) ? lines.on_light : lines.color;
        for (let p = s; p < e; p++) line.data.set([c[0], c[1], c[2], 255], p * 4);
      });
      return line;
    };
    const across = starts(gw, gW), down = starts(gh, gH);
    for (let k = 1; k <= gh; k++) {
      const y = roundHalfEven(k * step);
      if (y >= H || gW < 1) continue;
      const row = Math.floor(y * sy) * sw;
      x.putImageData(paint(gW, true, (c) => (row + Math.floor(c * sx)) * 4, across), 0, y);
    }
    for (let k = 1; k <= gw; k++) {
      const c = roundHalfEven(k * step);
      if (c >= W || gH < 1) continue;
      const col = Math.floor(c * sx);
      x.putImageData(paint(gH, false, (y) => (Math.floor(y * sy) * sw + col) * 4, down), c, 0);
    }
  };

  // render.outline on context x: corners p0, p1 (x, y) inclusive, each edge t px wide, (t + 1) // 2 px
  // outward for t > 1, square corners, clipped to the picture's [w, h].
  const box = (x, [x0, y0], [x1, y1], t, color, [w, h]) => {
    const e = t <= 1 ? 0 : Math.floor((t + 1) / 2), side = 2 * e + 1;
    x.fillStyle = `rgb(${color})`;
    x.save();
    x.beginPath();
    x.rect(0, 0, w, h);
    x.clip();
    x.fillRect(x0 - e, y0 - e, x1 - x0 + side, side);
    x.fillRect(x0 - e, y1 - e, x1 - x0 + side, side);
    x.fillRect(x0 - e, y0 - e, side, y1 - y0 + side);
    x.fillRect(x1 - e, y0 - e, side, y1 - y0 + side);
    x.restore();
  };

  // One map -> the picture, as vizvit.pictures.render draws it (overlay, _dim_outside, enlarge, outline,
  // with_colorbar). The map: its colour-table rows (mp.index, computed by the server). Drawn on
  // `cv` (default: one canvas kept here); returns it.
  const render = (b, mp, cv = null) => {
    const [gh, gw] = b.grid, [h, w] = b.size, s = b.scale, n = gh * gw, S = b.style;
    const { index, lo, hi, keep, bars } = mp;
    // cv2.addWeighted(heat, α, view, 1 − α): blend, with α and 1 − α in float32.
    const fa = Math.fround(b.alpha), fb = Math.fround(1 - b.alpha);
    // Each patch's colour (render.colorize: the lut's row render.color_index).
    const tile = new Uint8Array(3 * n);
    for (let i = 0; i < n; i++) {
      const j = index[i];
      tile.set(b.lut.subarray(3 * j, 3 * j + 3), 3 * i);
    }
    // At model-input size: cv2.addWeighted(heat, α, view, 1 − α) rounded; outside τ: view · DIM.
    // render.upsample_map: patch (r, c) on its own P×P pixels; the grid covers gh·P rows and gw·P
    // columns, and past them (a side not a multiple of P) no patch reads: blended grey, as a NaN is.
    const small = new ImageData(w, h);
    const out = small.data, v = b.view, gy = Math.min(h, gh * b.patch), gx = Math.min(w, gw * b.patch);
    for (let y = 0; y < h; y++) {
      const r = Math.floor(y * gh / gy);
      for (let x = 0; x < w; x++) {
        const c = Math.floor(x * gw / gx), i = r * gw + c, o = 4 * (y * w + x);
        if (y >= gy || x >= gx) {
          for (let ch = 0; ch < 3; ch++) out[o + ch] = blend(128, v[o + ch], fa, fb);
        } else if (keep && !keep[i]) {
          for (let ch = 0; ch < 3; ch++) out[o + ch] = Math.floor(v[o + ch] * S.dim);
        } else {
          for (let ch = 0; ch < 3; ch++) out[o + ch] = blend(tile[3 * i + ch], v[o + ch], fa, fb);
        }
        out[o + 3] = 255;
      }
    }
    cv = cv || st.canvas || (st.canvas = document.createElement('canvas'));
    const H = s * h, W = b.width;
    cv.width = W; cv.height = H;
    const x = cv.getContext('2d');
    x.fillStyle = '#fff';
    x.fillRect(0, 0, W, H);
    const sc = st.small || (st.small = document.createElement('canvas'));
    sc.width = w; sc.height = h;
    sc.getContext('2d').putImageData(small, 0, 0);
    x.imageSmoothingEnabled = false;  // render.enlarge: nearest neighbour, an integer factor
    x.drawImage(sc, 0, 0, w * s, h * s);
    // draw_grid's outline of a cell: render.outline, clipped to the map.
    const outline = ([r, c], t, color) => {
      const step = s * b.patch;  // render.patch_step
      box(x, [Math.round(c * step), Math.round(r * step)], [Math.round((c + 1) * step) - 1, Math.round((r + 1) * step) - 1],
          t, color, [w * s, h * s]);
    };
    // Artifact tokens first (render.outline_patches in map_image), the query's outline on top.
    for (const i of mp.art || []) outline([Math.floor(i / gw), i % gw], b.artifact_outline, b.colors.artifact);
    if (mp.at) outline(mp.at, b.outline, b.colors.highlight);
    // render.colorbar: vmax on top, row y holds linspace(vmax, vmin, H)[y].
    const bw = S.bar, bx = w * s + S.gap, bar = new ImageData(bw, H);
    for (let row = 0; row < H; row++) {
      const val = H > 1 ? hi - (hi - lo) * row / (H - 1) : hi;
      const j = 3 * colorIndex(val, lo, hi);
      for (let xx = 0; xx < bw; xx++) {
        const o = 4 * (row * bw + xx);
        bar.data[o] = b.lut[j]; bar.data[o + 1] = b.lut[j + 1]; bar.data[o + 2] = b.lut[j + 2]; bar.data[o + 3] = 255;
      }
    }
    x.putImageData(bar, bx, 0);
    x.font = `bold ${S.text_px}px sans-serif`;  // put_text draws thick strokes: bold reads alike
    x.textBaseline = 'alphabetic';
    const tx = bx + bw + S.label_offset;
    for (const [row, ty, text, mark] of bars) {
      if (mark && row === null) {
        x.fillStyle = `rgb(${b.colors.mark_text})`;  // a level off the bar: its label only
      } else if (mark) {
        const y0 = Math.max(0, row - 1), y1 = Math.min(H, row + 2);
        x.fillStyle = `rgb(${b.colors.mark})`;
        x.fillRect(bx, y0, bw + S.overhang, y1 - y0);
        x.fillStyle = '#fff';
        x.fillRect(bx + Math.floor(bw / 3), y0, Math.floor(2 * bw / 3) - Math.floor(bw / 3), y1 - y0);
        x.fillStyle = `rgb(${b.colors.mark_text})`;
      } else {
        x.fillStyle = '#000';
        x.fillRect(bx + bw, row, S.tick, 1);
      }
      x.fillText(text, tx, ty, W - tx);
    }
    return cv;
  };

  const fmt3g = (v) => {
    if (v === 0) return '0';
    const [mant, ex] = v.toExponential(2).split('e');
    const e = Number(ex), strip = (t) => (t.includes('.') ? t.replace(/0+$/, '').replace(/\.$/, '') : t);
    if (e < -4 || e >= 3) return strip(mant) + 'e' + (e < 0 ? '-' : '+') + String(Math.abs(e)).padStart(2, '0');
    return strip(v.toFixed(2 - e));
  };
  const colorbarLabels = (H, lo, hi, b) => {
    const S = b.style, cap = S.cap, line = Math.floor(cap * S.line_spacing), span = hi > lo ? hi - lo : 1;
    const n = Math.min(S.ticks[1], Math.max(S.ticks[0], Math.floor(H / (2 * line))));
    const step = (hi - lo) / (n - 1);
    const ticks = hi > lo ? Array.from({ length: n }, (_, k) => (k === n - 1 ? hi : k * step + lo)) : [lo];
    const row = (v) => roundHalfEven((hi - Math.min(Math.max(v, lo), hi)) / span * (H - 1));
    const baseline = (r) => Math.min(Math.max(r + Math.floor(cap / 2), cap + S.label_top), H - S.label_bottom);
    // A level on the bar gets a line at its row; one off it, no row (no line) and its label one line
    // inside the end tick's, which stays (render.colorbar_labels).
    const u = b.uniform, out = [], taken = [];
    if (u >= lo && u <= hi) {
      out.push([row(u), baseline(row(u)), S.mark, true]);
      taken.push(row(u));
    } else {
      const above = u > hi, at = above ? baseline(0) + line : baseline(H - 1) - line;
      out.push([null, Math.min(Math.max(at, cap + S.label_top), H - S.label_bottom), S.mark + (above ? S.above : S.below), true]);
      taken.push(at - Math.floor(cap / 2));
    }
    for (const t of ticks) {
      const r = row(t);
      if (taken.every((my) => Math.abs(r - my) >= line)) out.push([r, baseline(r), fmt3g(t), false]);
    }
    return out;
  };
  const bits = (u8, n) => Uint8Array.from({ length: n }, (_, i) => (u8[i >> 3] >> (7 - (i & 7))) & 1);  // np.packbits
  return { bytes, pixels, roundHalfEven, colorIndex, blend, box, gridLines, render, fmt3g, colorbarLabels, bits };
})());
