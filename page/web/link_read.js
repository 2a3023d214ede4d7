// The page's link is read and its example, if any, put in the box (page/shell.py): a click held for a link's
// example that never came goes through now (run_waits.js).
() => { window.__vizvitRunWaits?.linkDone(); }
