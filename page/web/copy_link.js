// Put the link to this view on the clipboard, where the browser allows it.
(url) => { if (url && navigator.clipboard) { navigator.clipboard.writeText(url).catch(() => {}); } }
