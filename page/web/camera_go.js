// Open a page beside this one: the live camera (?model=...), or, after Freeze, the main page on
// the frozen frame (?photo=<its key>). The value is a relative link, so the app's root path (a
// Space's, a proxy's) is kept.
(target) => { if (target) window.location.href = new URL(target, window.location.href).href; }
