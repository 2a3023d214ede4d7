// The Lesson tab's room (its code and host key, as the server wrote it in the hidden box) kept for this
// browser tab across a reload, as the room page keeps its host's room (room.js: sessionStorage); an empty
// box (a room that is gone, or a kept text the server refused) forgets it.
// It also joins this browser's list of rooms it opened (room.js's "vizvit-hosted", localStorage), which
// /room?host=1 offers as "Back to your room …": a room opened or restored here was missing from that list
// until its host view had run, so a lecturer who closed the tab had no way back from the start page.
(saved) => {
  const KEY = 'vizvit-' + VIZVIT_IDS.LESSON_ROOM_SAVED;
  // room.js's list, at most as long as its hosted_max: the server's rooms an address may hold (Rooms.owners.roomy,
  // written in by page/tabs/lesson.keep_js)
  const HOSTED = 'vizvit-hosted', MOST = HOSTED_MAX;
  // a new room (or none): the last one's "closed" (lesson_room_load.js) is not this one's
  const box = document.getElementById(VIZVIT_IDS.LESSON_ROOM_BOX);
  if (box) { box.classList.remove('vv-room-closed'); delete box.dataset.closed; }
  try {
    if (saved) sessionStorage.setItem(KEY, saved);
    else sessionStorage.removeItem(KEY);
    const room = saved ? JSON.parse(saved) : null;
    if (room && typeof room.code === 'string' && typeof room.host_key === 'string') {
      let rooms = [];
      try { rooms = JSON.parse(localStorage.getItem(HOSTED) || '[]'); } catch (e) { rooms = []; }
      if (!Array.isArray(rooms)) rooms = [];
      rooms = rooms.filter((r) => r && r.code !== room.code);
      // seen: now, as room.js's keepHosted writes it (the start page offers a room 10 minutes after it)
      rooms.push({ code: room.code, host_key: room.host_key, seen: Date.now() });
      localStorage.setItem(HOSTED, JSON.stringify(rooms.slice(-MOST)));
    }
  } catch (e) { /* storage refused (private mode): a reload forgets the room, as before */ }
  return saved;
}
