// The page (re)loaded: the room its Lesson tab opened before (lesson_room_keep.js) goes to the hidden box,
// whose input event asks the server to show it again; the server checks it (page/tabs/lesson.restore_room).
// Nothing kept: no call at all (every student's page load runs this).
() => {
  const ID = VIZVIT_IDS;
  const read = () => { try { return sessionStorage.getItem('vizvit-' + ID.LESSON_ROOM_SAVED); } catch (e) { return null; } };
  // The room this tab shows, closed elsewhere (its host view's Close, or 30 min without the host page): the tab
  // went on saying "Room X is open" beside its QR code on the projector, for students to scan into a closed
  // room. Asked every 10 s while the tab keeps a room (one cheap read: the room's view); a closed one is said
  // closed (style.css hides the invitation and shows data-closed), until a new room is opened (lesson_room_keep.js).
  const watch = async () => {
    let room = null;
    try { room = JSON.parse(read() || 'null'); } catch (e) { room = null; }
    const box = document.getElementById(ID.LESSON_ROOM_BOX), code = room && room.code;
    if (box && typeof code === 'string' && /^[A-Z0-9]{4,16}$/.test(code) && !box.classList.contains('vv-room-closed')) {
      try {
        const r = await fetch(`vizvit_room/${encodeURIComponent(code)}?v=-2`, { cache: 'no-store' });
        const view = r.ok ? await r.json() : null;  // a 5xx (the store down a moment) is no closed room
        let now = null;
        try { now = JSON.parse(read() || 'null'); } catch (e) { now = null; }
        if (view && view.closed === true && now && now.code === code) {  // still this tab's room
          box.dataset.closed = `Room ${code} is closed: its code and QR code let no one in. ` +
                               'Open a room for this class opens a new one.';
          box.classList.add('vv-room-closed');
        }
      } catch (e) { /* out of reach: asked again */ }
    }
    setTimeout(watch, 10_000);
  };
  setTimeout(watch, 10_000);
  const saved = read();
  if (!saved) return;
  let tries = 0;
  const put = () => {  // the box is drawn with the page: asked again until it is there (10 s at most)
    const box = document.querySelector(`#${ID.LESSON_ROOM_SAVED} textarea, #${ID.LESSON_ROOM_SAVED} input`);
    if (!box) { if (++tries < 50) setTimeout(put, 200); return; }
    box.value = saved;
    box.dispatchEvent(new Event('input', { bubbles: true }));
  };
  put();
}
