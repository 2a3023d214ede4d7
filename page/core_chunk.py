"""Gradio's core chunk, served patched: the page's load without a scan of every event per component (issue 52).

Gradio 6.31's frontend, as it lays the page out, gives each layout node the names of the events
attached to it (`find_attached_events`): for every node it filters ALL the dependencies and scans
their targets, reading the node's id through a Svelte proxy at each step. On this page (461
components, 184 events) that is a fifth of the load's CPU. The patched method builds one Map
(target id -> event names) per dependencies array, at its first call in a layout pass, and reads
each node's list from it: the same names in the same order (a dependency counted once per node, at
its first target naming the node; empty names dropped, as the original's filter(Boolean)).

The server answers the chunk's URL with the patched text (routes(): one plain route before Gradio's
own /assets/ route), with Gradio's own headers for it: no Cache-Control, an ETag and Last-Modified,
compressed by Gradio's Brotli/gzip middleware like every .js it serves. Another Gradio version (the
chunk missing, or the method's text not found exactly once) gets no route: Gradio serves its own
file, unchanged, and the log says so in one line. tests/page/test_core_chunk.py fails on the pinned
version if the patch no longer applies, and checks the two methods agree on this page's config.
"""

from __future__ import annotations

import hashlib
import logging
from email.utils import formatdate
from pathlib import Path

from fastapi.routing import APIRoute
from gradio.route_utils import BUILD_PATH_LIB
from starlette.responses import Response

log = logging.getLogger("vizvit.app")

CHUNK = "core-Bdx9080F.js"  # Gradio 6.31.0's (requirements.txt pins it): Vite names a chunk by its content
PATH = "/assets/" + CHUNK

# Gradio 6.31.0's method, exactly as minified in the chunk.
ORIGINAL = ("find_attached_events(e,t){let n=t.filter(t=>t.targets.find(([t])=>t===e.id)).map(t=>{let "
            "n=t.targets.find(([t])=>t===e.id);return n?n[1]:null}).filter(Boolean);"
            "return e.props.shared_props.attached_events=n,e}")

# The same result from a Map built once per dependencies array (t) and layout pass: the pass
# (postprocess's traverse) is synchronous, so the Map is dropped at the next microtask and a later
# pass over the same array, changed or not, builds its own. Each node gets its own copy of the list,
# as it got a fresh array before. (Map keys match as ===, but for NaN: ids are integers.)
PATCHED = """find_attached_events(e,t){
let c=this.vizvit_attached;
if(!c||c.deps!==t){
  let by_id=new Map;
  for(let d of t){
    let seen=new Set;
    for(let[id,name]of d.targets){
      if(seen.has(id))continue;
      seen.add(id);
      if(!name)continue;
      let names=by_id.get(id);
      names?names.push(name):by_id.set(id,[name])
    }
  }
  c=this.vizvit_attached={deps:t,by_id};
  queueMicrotask(()=>{this.vizvit_attached=null})
}
let n=c.by_id.get(e.id);
return e.props.shared_props.attached_events=n?[...n]:[],e}"""


def chunk_file() -> Path:
    """Where Gradio's build keeps the chunk, the folder its /assets/ route serves (another version may
    have none of that name)."""
    return Path(BUILD_PATH_LIB) / CHUNK


def patch(source: str) -> str | None:
    """The chunk's text with the method replaced; None unless ORIGINAL occurs exactly once."""
    if source.count(ORIGINAL) != 1:
        return None
    return source.replace(ORIGINAL, PATCHED)


def routes() -> list[APIRoute]:
    """The patched chunk's route, or none (Gradio's own file is served) when the patch does not apply."""
    path = chunk_file()
    patched = patch(path.read_text(encoding="utf-8")) if path.is_file() else None
    if patched is None:
        log.warning("Gradio's %s: %s; served unpatched (page/core_chunk.py)", CHUNK,
                    "the method to patch is not in it" if path.is_file() else "not found")
        return []
    body = patched.encode()
    headers = {"ETag": f'"{hashlib.md5(body, usedforsecurity=False).hexdigest()}"',  # a cache tag, as Gradio's
               "Last-Modified": formatdate(path.stat().st_mtime, usegmt=True)}

    async def chunk() -> Response:
        return Response(body, media_type="application/javascript", headers=headers)

    return [APIRoute(PATH, chunk, methods=["GET"])]
