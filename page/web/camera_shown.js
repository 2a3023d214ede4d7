// Freeze: the camera page's token and the number of the live picture it shows (views/camera.py:
// freeze keeps that picture's frame, which may be a picture behind the last one the server made);
// the map's controls (layer, heads, mode) pass as they are.
(sid, picture, ...controls) => [sid, document.querySelector(`#${VIZVIT_IDS.CAM_PICTURE} .vv-live`)?.dataset.frame || '', ...controls]
