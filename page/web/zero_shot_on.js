// Show the zero-shot boxes (class vv-zero-shot-only) while the page's model is CLIP / SigLIP:
// a class on <body> that style.css reads, instead of the containers' `visible` (page/events.py says why).
(on) => { document.body.classList.toggle('vv-zero-shot', on === 'on'); }
