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

A second patch (FIND_ORIGINAL -> FIND_PATCHED) spares get_state its walk of the whole tree: at load the
event manager asks the state of every event target (twice: at its construction and at Blocks' reload),
and each ask searched the proxied tree depth-first from the root. The patched get_state finds the node
through an index (id -> path from the root), built by one walk per tree and synchronous run, and
checks the path still leads from the current root to a node of that id before it trusts it; an id
not in the index, or a path broken by a change, falls back to Gradio's own search. Both patches apply
or neither does.
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

# Gradio 6.31.0's get_state, exactly as minified: Z(root, id) is its depth-first search (first node of
# that id in preorder, or null).
FIND_ORIGINAL = ("async get_state(e){let t=this.#s.get(e),n=Z(this.root,e);return!t&&!n?null:t?await t():"
                 "n?Promise.resolve({value:n.props.props.value}):null}")

# The same node as Z's: the index keeps, per id, the first path preorder meets (as Z returns the first
# match), and a hit is used only if that path still leads, child by child, from the current root to a
# node of that id; else Z searches. The index is dropped when the root changes and at the next
# microtask, so a change within one run (a rerender replacing children) is caught by the path check.
# Reading the tree through Svelte's proxies outside a reaction tracks nothing: get_state's callers
# (the event manager's constructor and reload, run untracked, and gather_state) are not reactions.
FIND_PATCHED = """vizvit_find(e){
let root=this.root,c=this.vizvit_index;
if(!c||c.root!==root){
  let by_id=new Map,nodes=[],idx=[];
  let walk=n=>{
    nodes.push(n);
    by_id.has(n.id)||by_id.set(n.id,{nodes:[...nodes],idx:[...idx]});
    if(n.children){let i=0;for(let m of n.children){idx.push(i++);walk(m);idx.pop()}}
    nodes.pop()
  };
  walk(root);
  c=this.vizvit_index={root,by_id};
  queueMicrotask(()=>{this.vizvit_index=null})
}
let p=c.by_id.get(e);
if(p&&p.nodes[0]===root&&p.nodes[p.nodes.length-1].id===e&&
   p.idx.every((i,k)=>p.nodes[k].children?.[i]===p.nodes[k+1]))return p.nodes[p.nodes.length-1];
return Z(root,e)
}
async get_state(e){let t=this.#s.get(e),n=this.vizvit_find(e);return!t&&!n?null:t?await t():"""\
    """n?Promise.resolve({value:n.props.props.value}):null}"""

PATCHES = ((ORIGINAL, PATCHED), (FIND_ORIGINAL, FIND_PATCHED))


def chunk_file() -> Path:
    """Where Gradio's build keeps the chunk, the folder its /assets/ route serves (another version may
    have none of that name)."""
    return Path(BUILD_PATH_LIB) / CHUNK


def patch(source: str) -> str | None:
    """The chunk's text with every patch applied; None unless each original occurs exactly once."""
    if any(source.count(original) != 1 for original, _ in PATCHES):
        return None
    for original, patched in PATCHES:
        source = source.replace(original, patched)
    return source


def routes() -> list[APIRoute]:
    """The patched chunk's route, or none (Gradio's own file is served) when the patch does not apply."""
    path = chunk_file()
    patched = patch(path.read_text(encoding="utf-8")) if path.is_file() else None
    if patched is None:
        log.warning("Gradio's %s: %s; served unpatched (page/core_chunk.py)", CHUNK,
                    "a method to patch is not in it" if path.is_file() else "not found")
        return []
    body = patched.encode()
    headers = {"ETag": f'"{hashlib.md5(body, usedforsecurity=False).hexdigest()}"',  # a cache tag, as Gradio's
               "Last-Modified": formatdate(path.stat().st_mtime, usegmt=True)}

    async def chunk() -> Response:
        return Response(body, media_type="application/javascript", headers=headers)

    return [APIRoute(PATH, chunk, methods=["GET"])]
