// js= of an event chained after pictures (e.g. the token scatter after a depth change): wait
// until the pictures of SELECTOR are decoded and painted (two frames), then pass the inputs on
// unchanged. Gradio's own handling of the next event keeps this large page busy for ~100 ms or
// more, and a picture only paints once the page is idle: without this, the pictures the user
// asked for wait for the chart that follows them.
// Only pictures on screen: one in a closed tab (or lazy, below the fold) is never loaded, and its
// decode() would hold the event for as long (a deep link to another tab waited 15-40 s after an
// upload for the Patches tab's grid). At most a second in any case.
// While it waits, <body data-vizvit-waiting> counts the events held (tests/settle.py: every answer in).
async (...inputs) => {
  const b = document.body;
  b.dataset.vizvitWaiting = Number(b.dataset.vizvitWaiting || 0) + 1;
  try {
    const imgs = [...document.querySelectorAll('SELECTOR')].filter((i) => i.offsetParent !== null);
    const decoded = Promise.all(imgs.map((i) => (i.decode ? i.decode().catch(() => null) : null)));
    await Promise.race([decoded, new Promise((r) => setTimeout(r, 1000))]);
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    return inputs.length === 1 ? inputs[0] : inputs;
  } finally {
    b.dataset.vizvitWaiting = Number(b.dataset.vizvitWaiting) - 1;
  }
}
