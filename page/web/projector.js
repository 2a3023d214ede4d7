// Projector mode (the checkbox, or ?projector=1): bigger type, black on white (style.css), and every
// chart's text at >= CHART_PX px (figures.PROJECTOR_CHART_PX; page/shell.py puts the number in).
// The charts are plotly figures the server lays out for a desk. CSS that enlarged their text after
// plotly's layout clipped the labels (issue 17), and 16 px was all it could give; so plotly itself is
// asked (Plotly.relayout / restyle): its automargins then make room for the larger labels. A chart that has a
// title and a panel label gets its title placed below the label (they overlapped: issue 43).
// Gradio and the flipbooks draw every new figure with Plotly.react, which brings the server's sizes
// back: a chart is enlarged again after each such draw ('plotly_afterplot' with a new layout), and
// charts that appear later (a tab opened) are found by a MutationObserver. Leaving the mode puts
// back the sizes each figure came with.
(on) => {
  document.body.classList.toggle('vizvit-projector', on);
  const vv = window.vizvitProjector ??= (() => {
    const PX = CHART_PX;
    const st = { on: false };
    const get = (obj, path) => path.replace(/\[(\d+)\]/g, '.$1').split('.')
      .reduce((o, k) => (o == null ? undefined : o[k]), obj);
    const big = (v) => Math.max(PX, v || 0);

    // A panel label floats over the chart's top edge: the title goes below it, the plot below both.
    // How far the label reaches into the chart is measured, so it is measured again later (sweep):
    // a chart drawn before its label was laid out had its title under the label.
    const labelOver = (gd) => {
      const block = gd.closest('.block');
      const label = block && block.querySelector('[data-testid="block-label"]');
      return label && label.offsetParent ? Math.ceil(Math.max(0, label.getBoundingClientRect().bottom - gd.getBoundingClientRect().top)) : 0;
    };
    const room = (gd, fl, titlePx, top) => {
      const over = labelOver(gd);
      gd.__vvOver = over;
      if (fl.title && fl.title.text) {
        return { 'title.yref': 'container', 'title.y': 1, 'title.yanchor': 'top', 'title.pad.t': over + 6,
                 'margin.t': Math.max(top, Math.ceil(over + 6 + 1.5 * titlePx * ((fl.title.text.match(/<br>/g) || []).length + 1) + 10)) };
      }
      return over ? { 'margin.t': Math.max(top, over + 6) } : {};
    };
    // The layout's and each trace's font sizes in projector mode: [layout update, trace update, traces].
    const sizes = (gd) => {
      const fl = gd._fullLayout;
      const lay = { 'font.size': big(fl.font && fl.font.size) };
      const base = (fl.font && fl.font.size) || 12;
      for (const k of Object.keys(fl)) {
        if (/^[xy]axis\d*$/.test(k) && fl[k] && fl[k].visible !== false) {
          lay[k + '.tickfont.size'] = big(fl[k].tickfont && fl[k].tickfont.size);
          lay[k + '.title.font.size'] = big(fl[k].title && fl[k].title.font && fl[k].title.font.size);
        } else if (/^coloraxis\d*$/.test(k) && fl[k] && fl[k].colorbar) {
          lay[k + '.colorbar.tickfont.size'] = PX;
          lay[k + '.colorbar.title.font.size'] = PX;
        }
      }
      if (fl.title && fl.title.text) lay['title.font.size'] = big(fl.title.font && fl.title.font.size);
      if (fl.showlegend) lay['legend.font.size'] = big(fl.legend && fl.legend.font && fl.legend.font.size);
      (fl.annotations || []).forEach((a, i) => { lay[`annotations[${i}].font.size`] = big(a.font && a.font.size); });
      // Larger labels need more room: a chart that is not tall already grows with its text.
      // Measured below the title: a title broken into lines (figures.title_lines) adds its own height,
      // and a contest chart of 504 px with a 2-line title was no longer grown (a reviewer).
      const h = fl.height;
      if (gd.layout.height && h - (fl.margin.t || 0) < 460) lay.height = Math.round(h * Math.min(1.5, Math.max(1, PX / base)));
      Object.assign(lay, room(gd, fl, lay['title.font.size'] || PX, fl.margin.t));
      const keys = ['textfont.size', 'insidetextfont.size', 'outsidetextfont.size', 'marker.colorbar.tickfont.size',
                    'marker.colorbar.title.font.size', 'colorbar.tickfont.size', 'colorbar.title.font.size'];
      const tr = {};
      const idx = gd._fullData.map((d) => d.index);
      for (const key of keys) {
        const vals = gd._fullData.map((d) => {
          if (key.includes('colorbar') && !(key.startsWith('marker') ? d.marker && d.marker.showscale : d.showscale)) return undefined;
          const v = get(d, key);
          return v === undefined ? undefined : big(v);
        });
        if (vals.some((v) => v !== undefined)) tr[key] = vals;
      }
      return [lay, tr, idx];
    };

    // A title given as a plain string ("yaxis.title": "depth") has no .font to set: plotly refuses
    // "yaxis.title.font.size" ("container is not an object"); set the whole title instead.
    const titled = (layout, upd) => {
      const out = {};
      for (const [k, v] of Object.entries(upd)) {
        const parts = k.split('.');
        const at = parts.findIndex((_, i) => i > 0 && typeof get(layout, parts.slice(0, i).join('.')) === 'string');
        if (at < 0) { out[k] = v; continue; }
        const head = parts.slice(0, at).join('.');
        const title = out[head] || { text: get(layout, head) };  // several keys under one title
        parts.slice(at).reduce((o, p, i, all) => (o[p] = i === all.length - 1 ? v : (o[p] || {})), title);
        out[head] = title;
      }
      return out;
    };
    const enlarge = (gd) => {
      if (!gd._fullLayout || !gd._fullData || gd.__vvLayout === gd.layout || !window.Plotly) return;
      if (!gd.offsetParent) return;  // in a closed tab: its panel label cannot be measured yet
      const [lay0, tr, idx] = sizes(gd);
      const lay = titled(gd.layout, lay0);
      // What the figure came with, to put back when the mode is left (null: plotly's default).
      const none = (v) => (v === undefined ? null : v);
      const back = [Object.fromEntries(Object.keys(tr).map((k) => [k, idx.map((i) => none(get(gd.data[i], k)))])),
                    Object.fromEntries(Object.keys(lay).map((k) => [k, none(get(gd.layout, k))])), idx];
      if (back[1].height === null) back[1].autosize = true;
      gd.__vvBack = back;
      gd.__vvLayout = gd.layout;  // Plotly.update changes this object; a new figure brings another
      apply(gd, tr, lay, idx);
    };
    // The layout first, then one trace attribute at a time: plotly refuses some of them on some trace
    // types ("container is not an object": a heatmap's colorbar title), and one refusal must not keep
    // the rest of the chart small.
    const apply = (gd, tr, lay, idx) => {
      const run = (what, f) => {
        try { Promise.resolve(f()).catch((e) => console.warn('projector: ' + what, e)); } catch (e) { console.warn('projector: ' + what, e); }
      };
      run('layout', () => window.Plotly.relayout(gd, lay));
      for (const [k, v] of Object.entries(tr)) run(k, () => window.Plotly.restyle(gd, { [k]: v }, idx));
    };
    const restore = (gd) => {
      const back = gd.__vvBack;
      gd.__vvBack = null;
      gd.__vvLayout = null;
      if (back && gd._fullLayout && window.Plotly) apply(gd, back[0], back[1], back[2]);
    };
    const hook = (gd) => {
      if (gd.__vvHooked || typeof gd.on !== 'function') return;
      gd.__vvHooked = true;
      gd.on('plotly_afterplot', () => { if (st.on) enlarge(gd); });
    };
    const sweep = () => {
      for (const gd of document.querySelectorAll('.js-plotly-plot')) {
        hook(gd);
        if (st.on) enlarge(gd); else if (gd.__vvBack) restore(gd);
        if (st.on && gd.__vvBack && gd.offsetParent && Math.abs(labelOver(gd) - gd.__vvOver) > 3) {
          // Measured again (see room): the title and margin only, from the sizes the figure came with.
          const upd = room(gd, gd._fullLayout, gd._fullLayout.title.font.size, gd.__vvBack[1]['margin.t'] || 0);
          if (Object.keys(upd).length) apply(gd, {}, upd, []);
        } else if (st.on && gd.__vvBack && gd.offsetParent) {
          // plotly sets a title of several lines higher than its pad says: move it down by what overlaps
          // the label floating over the chart, or, with the label on its own line (style.css), by what
          // sticks out above the chart (a three-line title's first line was cut: issue 51).
          const title = gd.querySelector('.gtitle');
          const label = gd.closest('.block').querySelector('[data-testid="block-label"]');
          const floor = Math.max(gd.getBoundingClientRect().top, gd.__vvOver && label ? label.getBoundingClientRect().bottom : -Infinity);
          const gap = title ? Math.ceil(floor + 4 - title.getBoundingClientRect().top) : 0;
          if (gap > 0) {
            const fl = gd._fullLayout;
            apply(gd, {}, { 'title.pad.t': fl.title.pad.t + gap, 'margin.t': fl.margin.t + gap }, []);
          }
        }
      }
    };
    let queued = false;
    new MutationObserver(() => {
      if (!st.on || queued) return;
      queued = true;
      requestAnimationFrame(() => { queued = false; sweep(); });
    }).observe(document.body, { childList: true, subtree: true });
    setInterval(() => { if (st.on) sweep(); }, 1000);  // a tab opened shows charts drawn while hidden
    st.sweep = sweep;
    return st;
  })();
  vv.on = on;
  vv.sweep();
}
