// Projector mode: bigger type, black on white (see style.css).
(on) => { document.body.classList.toggle('vizvit-projector', on); }
