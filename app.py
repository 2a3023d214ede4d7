"""vizvit: launch settings. The page is built in page/ (page.shell.build_demo), every computation in `vizvit`.

    python app.py                                  # google/vit-base-patch16-224, 127.0.0.1:7860
    python app.py --model random:vit-base-patch16-224   # offline; --model ./my_checkpoint --device cuda
"""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path
from typing import Any

import gradio as gr
from starlette.middleware import Middleware

import gradio_patch
import page  # noqa: F401 - first: the thread settings, before torch loads
from page import sessions, web
from page.body_limit import BodyLimit
from page.config_cache import ConfigCache
from page.jobs import COSTLY_THREADS
from page.shell import EXAMPLES, THEME, build_demo
from page.stream_grace import StreamGrace
from page.upload_budget import UploadBudget
from vizvit import views
from vizvit.classroom.room import LECTURER_KEY_ENV, Rooms, open_store
from vizvit.classroom.roomstore import REDIS_URL_ENV
from vizvit.launch import own_upload_folder, server_address, start, start_model  # noqa: F401 - start_model: for callers
from vizvit.model import hub
from vizvit.model.catalog import Catalog
from vizvit.model.models import DEFAULT_MODEL
from vizvit.service.threads import CROWD_S, follow_crowd, start_trimming
from vizvit.session import Workbench

log = logging.getLogger("vizvit.app")
HERE = Path(__file__).resolve().parent
MAX_FILE_SIZE = "20mb"


def launch_kwargs(demo: gr.Blocks | None = None) -> dict[str, Any]:
    """Safe defaults shared by `python app.py` and the tests; with the demo, its own HTTP routes
    (build_demo's `vizvit_routes`: the live camera's frames), which its camera page needs."""
    routes = list(getattr(demo, "vizvit_routes", ()))
    os.environ.setdefault("FORWARDED_ALLOW_IPS", "")  # uvicorn trusts no X-Forwarded-For: page.jobs.caller_of reads it
    # Gradio's HTTP errors without the server's paths (gradio_patch.HTTP_HANDLERS); bodies bounded before anything
    # reads one (page/body_limit.py), uploads on disk (upload_budget.py); the HTML and /config built once, compressed
    # (page/config_cache.py); an API client's answer stream kept open a moment.
    middleware = [Middleware(BodyLimit), Middleware(UploadBudget), Middleware(ConfigCache), Middleware(StreamGrace)]
    app_kwargs: dict[str, Any] = {"exception_handlers": dict(gradio_patch.HTTP_HANDLERS), "middleware": middleware}
    return dict(
        app_kwargs={**app_kwargs, "routes": routes} if routes else app_kwargs,
        max_file_size=MAX_FILE_SIZE,
        # Gradio's 40 worker threads, plus one for each costly job running or waiting its turn
        # (page.jobs.COSTLY_THREADS): a full line of waiting jobs never takes the page's threads.
        max_threads=40 + COSTLY_THREADS,
        ssr_mode=False,  # CVE-2026-134825 affects Gradio 6.27–6.31 with SSR on
        run_history=False,
        state_session_capacity=sessions.MAX_SESSIONS,  # Gradio's 10,000 sessions: ~5.5 GB (page/sessions.py)
        enable_monitoring=False,
        strict_cors=True,
        show_error=True,  # our gr.Error messages; never tracebacks (see `safe`)
        allowed_paths=[str(HERE / "assets" / "examples")],
        theme=THEME,
        css=web.asset("style.css"),
        js=web.page_scripts(),  # page.js and a11y.js
        head=web.page_head(),  # the drawing scripts, once for the page: each component's js_on_load calls one
    )


# Events computed at once, per event. Forwards do not need this limit: they wait in the session's
# one forward worker (vizvit/model/forwards.py), batched. It is what lets an answer that needs no forward
# (a cached photo, a control) be computed while other visitors' forwards wait (issue 28).
CONCURRENCY = 16
QUEUE_SIZE = 64


def configure_queue(demo: gr.Blocks, max_size: int = QUEUE_SIZE, concurrency: int = CONCURRENCY) -> gr.Blocks:
    return demo.queue(max_size=max_size, default_concurrency_limit=concurrency)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="vizvit: watch a Vision Transformer read your photo")
    parser.add_argument("--model", default=os.environ.get("VIZVIT_MODEL", DEFAULT_MODEL),
                        help="hub id, local save_pretrained directory, or random:vit-base-patch16-224")
    parser.add_argument("--device", default="auto", help="auto (cuda, mps, cpu), cpu, cuda, mps")
    parser.add_argument("--host", default=None,
                        help="address (default: $GRADIO_SERVER_NAME, else 0.0.0.0 with $PORT, else 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None,
                        help="port (default: $GRADIO_SERVER_PORT, else $PORT, else 7860; 7860 on a Space)")
    parser.add_argument("--share", action="store_true")
    parser.add_argument("--cache-mb", type=int, default=int(os.environ.get("VIZVIT_CACHE_MB", 1024)),
                        help="memory budget of the analysis cache")
    parser.add_argument("--photo-mb", type=int, default=int(os.environ.get("VIZVIT_PHOTO_MB", 256)),
                        help="memory budget of decoded uploads kept for re-analysis")
    parser.add_argument("--cnn", default=os.environ.get("VIZVIT_CNN"),
                        help="a CNN classifier to show beside the ViT in the shift sweep, e.g. microsoft/resnet-50")
    parser.add_argument("--rooms-db", default=None, metavar="PATH",
                        help="the live rooms' SQLite file: a restarted server keeps every room (default: "
                             "$VIZVIT_ROOMS_DB, else ~/.local/share/vizvit/rooms.sqlite3)")
    parser.add_argument("--redis-url", default=os.environ.get(REDIS_URL_ENV) or None, metavar="URL",
                        help="keep the live rooms in Redis instead (redis://host:port/db; default $VIZVIT_REDIS_URL): "
                             "every replica behind one proxy sees every room")
    parser.add_argument("--queue-size", type=int, default=QUEUE_SIZE, help="requests waiting; more get 'queue full'")
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY,
                        help="events of one kind computed at once (forwards wait in one batched worker)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    host, port = server_address(args.host, args.port, os.environ)
    own_upload_folder(port, os.environ)  # before the page is built: its examples are filed there
    online = hub.ensure_hub_or_offline()  # one short check, instead of the hub client's retry ladder per load
    try:
        wb = Workbench(cache_bytes=args.cache_mb << 20, photo_bytes=args.photo_mb << 20, device=args.device,
                       cnn=args.cnn)
    except ValueError as e:  # the CNN is optional: say so and go on without it
        log.warning("no CNN beside the ViT: %s", e)
        wb = Workbench(cache_bytes=args.cache_mb << 20, photo_bytes=args.photo_mb << 20, device=args.device)
    # The catalog first: it names a local directory by its folder (the page never shows the path),
    # and a model that fails to load leaves it, its twin taking its place.
    catalog = Catalog(args.model)
    wb.catalog = catalog
    started = start(wb, catalog.public(args.model))  # a model that fails: its stand-in, and why (the banner)
    model_id = started.model
    views.attach(wb)  # so warm() below also prepares what the tabs need of the model and the examples
    # The examples under the start model before the page is served (the first minute of a lecture:
    # "open the cat"), and under any other model once it is first picked.
    wb.warm(model_id, EXAMPLES)
    wb.warm_photos = tuple(EXAMPLES)
    if not online:
        dropped = catalog.keep_cached_only(keep=model_id)
        if dropped:
            log.info("offline: not in the list (no local copy): %s", ", ".join(dropped))
    rooms = Rooms(open_store(args.rooms_db, args.redis_url), lecturer_key=os.environ.get(LECTURER_KEY_ENV))
    log.info("live rooms in %s%s", args.redis_url or rooms.store.path, " (lecturer key needed)" * rooms.needs_key)
    demo = configure_queue(build_demo(wb, model_id, catalog, offline=not online, start=started, rooms=rooms),
                           args.queue_size, args.concurrency)
    # Memory that keeps to the budgets (docs/memory.md): idle sessions dropped whole, glibc's free
    # heap pages given back.
    sessions.start_forgetting(demo)
    start_trimming()
    # Every core for one visitor's forward, one core fewer for a crowd's (vizvit.service.threads).
    wb.forwards.threads = follow_crowd(lambda: sessions.callers_within(demo, CROWD_S))
    log.info("serving on http://%s:%d", host, port)
    demo.launch(server_name=host, server_port=port, share=args.share, **launch_kwargs(demo))


if __name__ == "__main__":
    main()
