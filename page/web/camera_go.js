// Open a page beside this one: the live camera (?model=...), or, after Freeze, the main page on
// the frozen frame (?photo=<its key>). The value is a relative link, so the app's root path (a
// Space's, a proxy's) is kept. Projector mode goes along (?projector=1): a lecturer on the projector
// found the camera page, and the frozen frame's page after it, back in desk type.
(target) => {
  if (!target) return;
  const url = new URL(target, window.location.href);
  if (document.body.classList.contains('vizvit-projector')) url.searchParams.set('projector', '1');
  window.location.href = url.href;
}
