// The photo key changed (page/shell.py): a click held while the first photo was read goes once the page has its
// answers (run_waits.js).
() => { window.__vizvitRunWaits?.photoIn(); }
