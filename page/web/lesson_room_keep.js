// The Lesson tab's room (its code and host key, as the server wrote it in the hidden box) kept for this
// browser tab across a reload, as the room page keeps its host's room (room.js: sessionStorage); an empty
// box (a room that is gone, or a kept text the server refused) forgets it.
(saved) => {
  const KEY = 'vizvit-' + VIZVIT_IDS.LESSON_ROOM_SAVED;
  try {
    if (saved) sessionStorage.setItem(KEY, saved);
    else sessionStorage.removeItem(KEY);
  } catch (e) { /* storage refused (private mode): a reload forgets the room, as before */ }
  return saved;
}
