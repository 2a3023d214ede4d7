// js= of the event after the work ahead (page/kit.py: Ctx.show_visible): its inputs are the closed
// tabs' first pictures just drawn ahead. A closed tab that has never been opened has no <img> yet,
// so the browser would fetch and decode its picture only when the tab mounts, while Gradio's own
// handling of the tab's select event holds the main thread: each is fetched and decoded now, kept
// in memory until the next photo's. (The same pictures again, when the work ahead was skipped or
// cancelled: nothing new.)
(...pictures) => {
  const urls = pictures.filter((p) => p && p.url).map((p) => p.url);
  const held = window.__vizvitPreloaded;
  if (held && held.length === urls.length && held.every((im, i) => im.dataset.url === urls[i])) return [];
  window.__vizvitPreloaded = urls.map((url) => {
    const im = new Image();
    im.decoding = 'async';
    im.dataset.url = url;
    im.src = url;
    im.decode().catch(() => null);
    return im;
  });
  return [];
}
