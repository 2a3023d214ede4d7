// After a save, start the download: wait until the file box BOX links the NEW file (each
// save has its own name), then click that link. The box stays, to download again.
() => {
  const last = (window.__vizvitLastFile = window.__vizvitLastFile || {});
  let tries = 0;
  const timer = setInterval(() => {
    const a = document.querySelector('BOX a');
    if (a && a.href && a.href !== last['BOX']) { clearInterval(timer); last['BOX'] = a.href; a.click(); }
    else if (++tries > 100) clearInterval(timer);
  }, 100);
}
