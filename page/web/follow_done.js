// js= of the step after a tab's follow-up (page/kit.py): the marks its wait (after_quiet.js, the same
// KEY) put on its charts end, but where another follow-up still marks a chart. It runs whether the
// follow-up answered or failed.
() => {
  if (window.__vvUnbusy) window.__vvUnbusy(KEY);
}
