// A lesson step's link (?lesson=1&step=N) opened on a phone: the header (photo, model, examples) fills
// the first screen, so the page lands on the step itself: once, when its question first shows.
() => {
  const ID = VIZVIT_IDS;  // the element ids (page/ids.py), written in as the script is read
  if (window.__vizvitLessonLanded || !/[?&]lesson=(1|true|yes|on)(&|$)/i.test(location.search)) return;
  const el = document.querySelector(`#${ID.LESSON_STEP}`);
  if (!el || !/\S/.test(el.innerText)) return;
  window.__vizvitLessonLanded = true;
  const land = () => el.scrollIntoView({block: 'start'});
  land();
  // Pictures above it (the examples) may still load and push it down: land again while nobody scrolled
  // or touched the page (a jump as a student taps Reveal would move the button from under the finger).
  let at = window.scrollY, touched = false;
  for (const type of ['pointerdown', 'keydown', 'wheel', 'touchstart']) {
    window.addEventListener(type, () => { touched = true; }, {once: true, capture: true, passive: true});
  }
  for (const ms of [300, 1000, 2500]) {
    setTimeout(() => {
      if (!touched && Math.abs(window.scrollY - at) < 2) { land(); at = window.scrollY; }
      if (ms === 2500) document.body.dataset.vizvitLanding = 'done';  // its last try (tests wait on it)
    }, ms);
  }
}
