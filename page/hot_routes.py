"""The routes every call takes, looked at first, and their login check run inline.

FastAPI (0.165) finds a request's route by trying each route in order, twice (whether its router
matches, then which route), through a few Python calls each. Gradio 6.31 declares ~60 API routes,
and the ones every event takes come late: /queue/join is the 41st, /queue/data the 45th, /upload the
50th. So each of a student's requests tried ~110 routes: a sixth of what the server's event loop
spent in a hall (issue 52: server CPU a student, cProfile of the loop thread).

install() wraps Gradio's App.create_app: the app's API router then lists HOT first, each only where
no route before it could take its requests (see takes()), so every request reaches the same route
as before, sooner. Only the order of the list changes; if FastAPI's router is not the shape this
expects, nothing changes. Idempotent.

It also runs Gradio's login check inline. Nearly every API route depends on `login_check`, a plain
def (a look at the app's auth and the caller's cookie, no I/O), so FastAPI ran it in a worker thread:
one thread hop per request, ~1,500 in a hall of 100 (issue 52). inline_login_check gives each route's
dependency an async wrapper of the same function: the same answer, the same refusal (HTTP 401), on
the event loop. (An app that overrides login_check through dependency_overrides would no longer
match it: Gradio sets none.)
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from gradio.routes import App

# In the order a hall's requests take them most: an event's join, its answers' stream, a photo's upload,
# a client's heartbeat.
HOT = ("/gradio_api/queue/join", "/gradio_api/queue/data", "/gradio_api/upload", "/gradio_api/heartbeat/{session_hash}")


def takes(route: Any, path: str, methods: set[str]) -> bool:
    """Whether `route` could take a request that the route declared at `path` takes, by one of
    `methods`. A literal path: the route's pattern matches it. A pattern ({param}): the two literal
    beginnings, up to their first parameter, are not apart (one begins the other), which keeps more
    than it must, never less. The methods overlap (a route without methods takes every one); a route
    this cannot read (a mount, a host) takes everything."""
    regex, own = getattr(route, "path_regex", None), getattr(route, "methods", None)
    if regex is None:
        return True
    if "{" in path:
        mine, theirs = path.split("{")[0], route.path.split("{")[0]
        near = mine.startswith(theirs) or theirs.startswith(mine)
    else:
        near = regex.match(path) is not None
    return near and (not own or bool(own & methods))


def hot_first(routes: Sequence[Any], hot: Sequence[str] = HOT) -> list[Any]:
    """`routes` with each route whose path is in `hot` moved to the front (in hot's order), where no
    route before it takes its requests; the others keep their order."""
    routes = list(routes)
    moved = []
    for path in hot:
        for i, route in enumerate(routes):
            if getattr(route, "path", None) != path or route in moved:
                continue
            methods = set(getattr(route, "methods", None) or ())
            if methods and not any(takes(r, path, methods) for r in routes[:i] if r not in moved):
                moved.append(route)
    return moved + [r for r in routes if r not in moved]


def _dependants(dependant: Any) -> Iterator[Any]:
    """Every sub-dependency of a FastAPI Dependant, depth first."""
    for sub in getattr(dependant, "dependencies", None) or ():
        yield sub
        yield from _dependants(sub)


def _inline(check: Callable[..., Any]) -> Callable[..., Any]:
    """An async def that calls the plain def `check` on the event loop (FastAPI awaits it instead
    of sending it to a worker thread)."""
    @functools.wraps(check)
    async def inline(**values: Any) -> Any:
        return check(**values)

    return inline


def _is_login_check(call: Any) -> bool:
    """Gradio's own plain-def login_check (routes.App.create_app's)."""
    return (getattr(call, "__module__", None) == "gradio.routes" and getattr(call, "__name__", None) == "login_check"
            and inspect.isfunction(call) and not inspect.iscoroutinefunction(call))


def inline_login_check(routes: Sequence[Any]) -> None:
    """Swap Gradio's plain-def login_check, wherever a route depends on it, for its inline wrapper
    (one wrapper per function), in both places FastAPI reads:
    the route's declared dependencies (each `Depends`, from which an included router builds the
    dependant it serves with, once told its routes changed) and the dependant a route built itself
    (what an app's own routes, /config, serve with)."""
    wrappers: dict[Any, Callable[..., Any]] = {}
    for route in routes:
        declared = getattr(route, "dependencies", None)
        if isinstance(declared, list):
            for i, dep in enumerate(declared):
                if _is_login_check(getattr(dep, "dependency", None)):
                    declared[i] = dataclasses.replace(dep, dependency=wrappers.setdefault(dep.dependency,
                                                                                         _inline(dep.dependency)))
        for sub in _dependants(getattr(route, "dependant", None)):
            if _is_login_check(sub.call):
                sub.call = wrappers.setdefault(sub.call, _inline(sub.call))


def _reordered(create_app: Any) -> Any:
    @functools.wraps(create_app)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        app = create_app(*args, **kwargs)
        for included in app.router.routes:
            router = getattr(included, "original_router", None)  # FastAPI's _IncludedRouter
            if router is not None and hasattr(router, "_mark_routes_changed"):
                router.routes[:] = hot_first(router.routes)
                inline_login_check(router.routes)
                router._mark_routes_changed()  # FastAPI caches each router's candidates (and dependants) until told
        inline_login_check(app.router.routes)  # the app's own routes (/config, /gradio_api/deep_link)
        return app

    wrapper.vizvit_hot_first = True  # type: ignore[attr-defined]
    return wrapper


def install() -> None:
    """App.create_app wrapped: hot routes first, the login check inline (idempotent)."""
    if not getattr(App.create_app, "vizvit_hot_first", False):
        App.create_app = staticmethod(_reordered(App.create_app))  # type: ignore[method-assign]
