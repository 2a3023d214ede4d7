// Installed once at page load (web.page_scripts): the time of the person's last input, for
// after_quiet.js (a tab's follow-up waits until the person pauses). Trusted events only: the
// events hand_on.js dispatches again for Gradio are the same input, not a new one.
() => {
  if (window.__vizvitInputClock) return;
  window.__vizvitInputClock = true;
  const mark = (e) => { if (e.isTrusted) window.__vizvitInputAt = performance.now(); };
  for (const type of ['pointerdown', 'keydown', 'input', 'wheel']) {
    document.addEventListener(type, mark, { capture: true, passive: true });
  }
}
