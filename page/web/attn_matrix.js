// js_on_load of the hidden gr.HTML "attn-matrix": the QueryBook of the shown attention map (each
// patch as the query, as the server paints it: vizvit/views/attention.py, matrix_for_page), kept for
// page/web/attention_map.js, which draws a click on the map from it at once.
const take = () => { window.__vizvitAttnMatrix = props.value; };
take();
watch('value', take);
