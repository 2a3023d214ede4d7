// The lesson's step on show kept in the address bar: its own link's query, as the server wrote it in the
// hidden box (?lesson=1&step=N&example=… or &photo=<key>, the link its QR code shows). A reload then opens
// that step on that photo, as the link does; it went back to the page's first view. Only a query of
// URL-safe characters is written, the path and the hash kept: the box is a page value, not a place to go.
// Projector mode stays in it (?projector=1, not in the step's link: its QR code is for phones): a reload, which
// a restarted server asks for, brought the projector back in desk type.
(query) => {
  if (typeof query !== 'string' || !/^\?[A-Za-z0-9._~%=&+-]*$/.test(query)) return;
  if (document.body.classList.contains('vizvit-projector')) query += (query.length > 1 ? '&' : '') + 'projector=1';
  if (query === location.search) return;
  try {
    history.replaceState(history.state, '', location.pathname + query + location.hash);
  } catch (e) { /* a sandboxed frame refuses: a reload shows the first view, as before */ }
}
