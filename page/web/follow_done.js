// js= of the step after a tab's follow-up (page/kit.py): its charts (BUSY: CSS selectors), marked by
// after_quiet.js while it was on its way, are no longer marked. It runs whether the follow-up
// answered or failed.
() => {
  for (const s of BUSY) {
    for (const e of document.querySelectorAll(s)) {
      e.removeAttribute('aria-busy');
      e.classList.remove(UPDATING);
    }
  }
}
