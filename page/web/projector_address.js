// Projector mode in the page's address as the checkbox shows it: ?projector=1 while it is on, none once it is off.
// Before, only the Lesson tab's step (lesson_address.js) wrote the address: a lecturer who unchecked projector
// mode kept ?projector=1 there, and the link copied from the address bar gave students the projector layout; one
// who checked it had a reload back in desk type. The rest of the query is kept as written (only projector= parts
// go), the path and the hash too; the address is replaced, not pushed: Back does not toggle the mode.
(on) => {
  const parts = location.search.replace(/^\?/, '').split('&').filter((p) => p !== '');
  if (on && parts.includes('projector=1')) return;
  const kept = parts.filter((p) => p.split('=')[0] !== 'projector');
  if (on) kept.push('projector=1');
  const query = kept.length ? '?' + kept.join('&') : '';
  if (query === location.search) return;
  try {
    history.replaceState(history.state, '', location.pathname + query + location.hash);
  } catch (e) { /* a sandboxed frame refuses: the address stays as it was */ }
}
