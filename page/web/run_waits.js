// A button that needs the photo (class NEEDS_PHOTO_CLASS: run the contest or the sweep, which heads matter, a class
// map, the mask presets) clicked before the page's first photo is in. The server then had no photo key and said
// "Upload a photo first." while a deep link's example (?example=chelsea&tab=experiments), or a file just put in the
// box, sat in the box being read. Now the click is held while the photo is read, a line says so, and the button is
// clicked again once the photo's key is in (photo_in.js, on the key's change) and the page has every answer that
// key asked for: the open tab's show, answered after a contest begun at once, wrote "not run yet" over it. If no
// photo comes (the box emptied by a refusal, the status line changed without a key: a file that could not be used,
// or a link whose example was not found: link_read.js), the held click goes through and the server's answer
// stands. Installed once at page load.
() => {
  const ID = VIZVIT_IDS;  // the element ids (page/ids.py), written in as the script is read
  if (window.__vizvitRunWaits) return;
  const SETTLE_MS = 30000;  // at most this long after the key for the page's answers, then the click goes anyway
  const w = {photo: false, linkRead: !/[?&]example=/.test(location.search), held: [], passing: false, timer: 0,
             inAt: 0, calm: 0};
  window.__vizvitRunWaits = w;
  const statusText = () => document.getElementById(ID.STATUS)?.innerText ?? '';
  const firstStatus = statusText();  // the key comes with a new status line: another one without it is no photo
  const box = () => document.getElementById(ID.UPLOAD);
  const boxFilled = () => !!box() && !box().querySelector('input[type=file]');  // a filled gr.File has no input
  // The line while a link's example is read (vizvit/views/common.reading_example) is no answer either.
  const waitingLine = () => statusText() === firstStatus || statusText().startsWith(LINK_READING);
  const reading = () => !w.photo && waitingLine() && (boxFilled() || !w.linkRead);
  // The page's events still unanswered (answer_stream.js) and those waiting to be sent (after_quiet.js).
  const owed = () => Object.values(window.__vizvitAnswers?.sessions ?? {}).reduce((n, s) => n + s.owed.size, 0)
    + Number(document.body.dataset.vizvitWaiting || 0);
  const note = document.createElement('div');
  note.className = 'vv-run-wait';
  note.setAttribute('aria-live', 'polite');  // said as it appears
  const release = () => {
    clearInterval(w.timer);
    w.timer = 0;
    note.remove();
    const buttons = w.held.splice(0);
    w.passing = true;
    try {
      for (const b of buttons) {
        b.removeAttribute('aria-busy');
        if (b.isConnected) b.click();
      }
    } finally {
      w.passing = false;
    }
  };
  const check = () => {
    if (!w.photo) {
      if (!reading()) release();
      return;
    }
    w.calm = owed() === 0 ? w.calm + 1 : 0;  // twice in a row: an answer's next event has had its moment
    if (w.calm >= 2 || Date.now() - w.inAt > SETTLE_MS) release();
  };
  w.photoIn = () => {
    w.photo = true;
    w.inAt = Date.now();
  };
  w.linkDone = () => { w.linkRead = true; };
  document.addEventListener('click', (e) => {
    if (w.passing || !(e.target instanceof Element)) return;
    const b = e.target.closest('.NEEDS_PHOTO_CLASS');
    if (!b || !(reading() || w.held.length)) return;  // once one waits, the next waits behind it
    e.preventDefault();
    e.stopImmediatePropagation();
    if (!w.held.includes(b)) w.held.push(b);
    b.setAttribute('aria-busy', 'true');
    note.textContent = SAY_READING;
    if (!note.isConnected) document.body.append(note);
    if (!w.timer) w.timer = setInterval(check, 150);
  }, true);
}
