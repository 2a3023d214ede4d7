// The photo box replaces its photo in one step. A filled gr.File has no file input and ignores a
// drop: a new photo needed × first, which blanked the status while the tabs still showed the old
// one. Installed once at page load: a file dropped on the filled box, an image pasted anywhere but
// in a text field, or a file chosen by a click on the box's file name goes into Gradio's own file
// input (the box is cleared first when filled), as if it had been dropped on the empty box.
() => {
  const ID = VIZVIT_IDS;  // the element ids (page/ids.py), written in as the script is read
  if (window.__vizvitReplace) return;
  window.__vizvitReplace = true;
  const box = () => document.querySelector(`#${ID.UPLOAD}`);
  const input = () => box()?.querySelector('input[type=file]');
  const put = async (file) => {
    if (!box() || !file) return;
    let i = input();
    if (!i) {
      box().querySelector("button[aria-label='Clear']")?.click();
      for (let n = 0; n < 100 && !(i = input()); n++) await new Promise((r) => setTimeout(r, 50));
      if (!i) return;
    }
    const dt = new DataTransfer();
    dt.items.add(file);
    i.files = dt.files;
    i.dispatchEvent(new Event('change', {bubbles: true}));
  };
  const onFilledBox = (e) => e.target instanceof Element && e.target.closest(`#${ID.UPLOAD}`) && !input();
  document.addEventListener('dragover', (e) => { if (onFilledBox(e)) e.preventDefault(); }, true);
  document.addEventListener('drop', (e) => {
    const f = e.dataTransfer?.files?.[0];
    if (!f || !onFilledBox(e)) return;  // the empty box: Gradio's own drop
    e.preventDefault();
    e.stopPropagation();
    put(f);
  }, true);
  document.addEventListener('paste', (e) => {
    if (e.target instanceof Element && e.target.closest('input, textarea, [contenteditable=""], [contenteditable=true]')) return;
    const f = [...(e.clipboardData?.files || [])].find((x) => x.type.startsWith('image/'));
    if (!f) return;
    e.preventDefault();
    put(f);
  });
  const chooser = document.createElement('input');
  chooser.type = 'file';
  chooser.accept = 'image/*,.heic,.heif,.avif,.tif,.tiff';
  chooser.style.display = 'none';
  chooser.addEventListener('change', () => { put(chooser.files?.[0]); chooser.value = ''; });
  document.body.append(chooser);
  document.addEventListener('click', (e) => {
    if (!onFilledBox(e) || e.target.closest('a, button')) return;  // the download link and × stay theirs
    if (!e.target.closest('.file-preview-holder')) return;
    chooser.click();
  });
}
