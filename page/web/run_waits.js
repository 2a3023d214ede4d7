// A button that needs the photo (class NEEDS_PHOTO_CLASS: run the contest or the sweep, which heads matter, a class
// map, the mask presets; the heads switched off: Enter in their box, "all heads on", the ablation's mode) clicked
// before the page's first photo is in. The server then had no photo key and said
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
    const held = w.held.splice(0);
    w.passing = true;
    try {
      for (const h of held) {
        h.el.removeAttribute('aria-busy');
        h.redo();
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
  // What was held, and how to do it again once the photo is in. The photo's answers set the tab's controls
  // (its box emptied, its radio put back, their elements drawn anew), so a choice or a text is found again by
  // its block's id and made again, not replayed on the element first clicked.
  const hold = (e, el, redo) => {
    e.preventDefault();
    e.stopImmediatePropagation();
    // The last of several on one control stands (Enter on "1.2", then on "1.3"; one radio choice, then another)
    w.held = w.held.filter((h) => h.el !== el);
    w.held.push({el, redo});
    el.setAttribute('aria-busy', 'true');
    note.textContent = SAY_READING;
    if (!note.isConnected) document.body.append(note);
    if (!w.timer) w.timer = setInterval(check, 150);
  };
  const waits = () => reading() || w.held.length;  // once one waits, the next waits behind it
  const again = (block) => document.getElementById(block.id) ?? block;
  document.addEventListener('click', (e) => {
    if (w.passing || !(e.target instanceof Element)) return;
    const b = e.target.closest('.NEEDS_PHOTO_CLASS');
    if (!b || !waits()) return;
    // A radio's choice: the same choice made again (a click on the group itself would choose nothing)
    const choice = e.target.closest('label')?.control ?? (e.target.matches('input') ? e.target : null);
    if (choice && b.contains(choice) && b.id) {
      const value = choice.value;
      hold(e, b, () => [...again(b).querySelectorAll('input')].find((i) => i.value === value)?.click());
    } else hold(e, b, () => { if (b.isConnected) b.click(); });
  }, true);
  // Enter in a box that needs the photo (the heads switched off): held the same way; its text is put back in the
  // box and Enter pressed again (keydown, then keypress, as a key does).
  document.addEventListener('keydown', (e) => {
    if (w.passing || e.key !== 'Enter' || !(e.target instanceof Element)) return;
    const box = e.target.matches('input, textarea') ? e.target.closest('.NEEDS_PHOTO_CLASS') : null;
    if (!box || !box.id || !waits()) return;
    const text = e.target.value;
    hold(e, box, () => {
      const t = again(box).querySelector('textarea, input');
      if (!t) return;
      t.value = text;
      t.dispatchEvent(new Event('input', {bubbles: true}));
      for (const type of ['keydown', 'keypress'])
        t.dispatchEvent(new KeyboardEvent(type, {key: 'Enter', code: 'Enter', keyCode: 13, bubbles: true,
                                                 cancelable: true}));
    });
  }, true);
}
