// Page script, installed once at page load (not on a tab's select: a deep link opens a
// tab without one). Five parts, in order: the plotly listener helper, the token
// scatter's hover thumbnail, the distance chart's click, holding a click on a picture
// that is still loading, and the class search box that empties on focus.
() => {
  const ID = VIZVIT_IDS;  // the element ids (page/ids.py), written in as the script is read
  // gr.Plot passes no plotly events to Python. Page scripts listen to plotly's own events instead,
  // through this helper (installed once, at page load): window.__vizvitOnPlot(selector, handlers)
  // attaches `handlers` ({event name: function}) to the chart under `selector`, and again after
  // every re-plot (Gradio re-plots on each update, which drops plotly listeners). A chart that
  // has its listeners carries gd.__vizvitEv === gd._ev (the browser tests wait for that).
  const onPlot = () => {
    if (window.__vizvitOnPlot) return;
    window.__vizvitOnPlot = (selector, handlers) => setInterval(() => {
      const gd = document.querySelector(selector + ' .js-plotly-plot');
      if (!gd || !gd.on || (gd._ev && gd.__vizvitEv === gd._ev)) return;
      gd.__vizvitEv = gd._ev;
      for (const [name, fn] of Object.entries(handlers)) gd.on(name, fn);
    }, 300);
  };

  // A hover thumbnail for the token scatter. plotly's hover labels render text only (no
  // <img>), and gr.Plot has no hover event; so a tiny script, installed once (after
  // onPlot), listens to plotly_hover on the plot and shows the point's
  // customdata[4] image next to the cursor.
  const scatterHover = () => {
    if (window.__vizvitThumb) return;
    window.__vizvitThumb = true;
    const box = document.createElement('div');
    box.id = ID.EMB_THUMB;
    box.style.cssText = 'position:fixed;display:none;pointer-events:none;z-index:10000;background:#fff;' +
      'border:1px solid #444;border-radius:4px;padding:4px;font:12px sans-serif;color:#111;';
    const img = document.createElement('img');
    img.style.cssText = 'width:96px;height:96px;image-rendering:pixelated;display:block;';
    const cap = document.createElement('div');
    box.append(img, cap);
    document.body.append(box);
    window.__vizvitOnPlot(`#${ID.EMB_SCATTER}`, {
      plotly_hover: (ev) => {
        const pt = ev.points && ev.points[0];
        if (!pt || !pt.customdata) return;
        img.src = pt.customdata[4];
        cap.textContent = 'row ' + pt.customdata[0] + ', col ' + pt.customdata[1];
        const e = ev.event || {clientX: 0, clientY: 0};
        // Left of and above the cursor: plotly puts its own hover label on the right.
        box.style.left = Math.max(4, e.clientX - 130) + 'px';
        box.style.top = Math.max(4, e.clientY - 140) + 'px';
        box.style.display = 'block';
      },
      plotly_unhover: () => { box.style.display = 'none'; },
    });
  };

  // gr.Plot has no click event. This page script (installed once, at page load, after
  // onPlot) listens to plotly's own click on the distance chart and types
  // "layer,head,click count" into a hidden textbox, whose change event opens that head like the
  // list does.
  const distanceClick = () => {
    if (window.__vizvitDistance) return;
    window.__vizvitDistance = true;
    let clicks = 0;
    window.__vizvitOnPlot(`#${ID.ATTN_DISTANCE}`, {
      plotly_click: (ev) => {
        const pt = ev.points && ev.points[0];
        const box = document.querySelector(`#${ID.ATTN_DISTANCE_CLICK} textarea, #${ID.ATTN_DISTANCE_CLICK} input`);
        if (!pt || !box) return;
        box.value = pt.x + ',' + pt.customdata + ',' + (++clicks);
        box.dispatchEvent(new Event('input', {bubbles: true}));
      },
    });
  };

  // Gradio 6.31 maps a click on a picture through img.naturalWidth, which Chromium resets to 0
  // while the next picture loads (its src just changed): such a click was dropped without a word
  // (e.g. a click on the attention map right after a layer change). Hold it until the picture
  // is decoded, then hand the same click on at the same point.
  const holdClicks = () => {
    if (window.__vizvitHold) return;
    window.__vizvitHold = true;
    const held = new WeakSet();
    document.addEventListener('click', (e) => {
      if (held.has(e) || !(e.target instanceof Element)) return;
      const img = e.target.closest('.image-container button')?.querySelector('img');
      if (!img || img.naturalWidth > 0 || !img.getAttribute('src')) return;
      e.stopImmediatePropagation();
      e.preventDefault();
      const again = () => {
        const ev = new MouseEvent('click', {clientX: e.clientX, clientY: e.clientY, bubbles: true, cancelable: true});
        held.add(ev);
        img.dispatchEvent(ev);
      };
      img.decode().then(again, again);
    }, true);
  };

  // The class search box behaves like a search box: Gradio's filterable dropdown keeps the chosen
  // label ("Egyptian cat (82.2%)") in its input on focus, so typing went into that text and the
  // list filtered to nothing. Emptied on focus (the input event tells Gradio, which then lists
  // every class), typing filters, Enter or a click picks; leaving without a pick, Gradio puts the
  // chosen label back. Only this box: the model box takes custom values, where an empty one
  // left behind would be a choice.
  const searchBox = () => {
    if (window.__vizvitSearch) return;
    window.__vizvitSearch = true;
    document.addEventListener('focusin', (e) => {
      const input = e.target;
      if (!(input instanceof HTMLInputElement) || !input.closest(`#${ID.ATTN_CLASS}`) || !input.value) return;
      input.value = '';
      input.dispatchEvent(new Event('input', {bubbles: true}));
    }, true);
  };

  onPlot();
  scatterHover();
  distanceClick();
  holdClicks();
  searchBox();
}
