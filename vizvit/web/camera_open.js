// Projector mode: opening the Camera tab brings the tab bar to the top of the screen, so the whole
// live picture (view, map, top-5) fits a 1366×900 projector under it.
() => { if (document.body.classList.contains('vizvit-projector')) document.querySelector('#tabs').scrollIntoView({block: 'start'}); }
