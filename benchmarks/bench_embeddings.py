"""Server time of the Embeddings tab's events, as ratios to one forward pass.

    python benchmarks/bench_embeddings.py [--model random:vit-base-patch16-224] [--repeat 5]

Each event is timed as the app runs it: the panel functions plus what Gradio does with
their results (PNG encoding of images, plotly JSON). Median of --repeat runs. Events
other than the first opening of the tab must run no forward pass (checked with a hook).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vizvit.service.threads import configure_threads

configure_threads()

import numpy as np  # noqa: E402
from gradio.processing_utils import encode_pil_to_bytes  # noqa: E402  (what gr.Image does)
from PIL import Image  # noqa: E402

from vizvit.readings import embeddings as emb  # noqa: E402
from vizvit.session import PhotoKey, Workbench  # noqa: E402
from vizvit.views import embeddings as ep  # noqa: E402

PHOTO = Path(__file__).resolve().parent.parent / "assets" / "examples" / "chelsea.jpg"


def ship(*outs) -> None:
    """What Gradio does with a handler's outputs: encode images in the format app.py gives
    their gr.Image (slider/click images "jpeg", per-photo ones "png"), JSON-encode figures."""
    for o in outs:
        if isinstance(o, tuple):  # (array, format)
            encode_pil_to_bytes(Image.fromarray(o[0]), o[1])
        elif isinstance(o, np.ndarray):
            encode_pil_to_bytes(Image.fromarray(o), "jpeg")
        elif hasattr(o, "to_json"):
            o.to_json()


from timing import median_s  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="random:vit-base-patch16-224")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    wb = Workbench(device="cpu")
    vm = wb.model(args.model)
    key = PhotoKey(vm.id, wb.add_photo(PHOTO))
    g = vm.geometry
    wb.analysis(key)  # warm-up: first forward pays for lazy init
    from vizvit.model.engine import analyze

    forward = median_s(lambda: analyze(vm, wb.photo(key.sha1)), args.repeat)
    a = wb.analysis(key)

    def data():
        return wb.derived(key, "embeddings", lambda: emb.prepare(vm, a))

    def open_tab():
        d = data()
        st = ep.stage_panel(vm, d)
        p = ep.depth_panel(vm, a, d, 0, None)
        s = ep.similarity_panel(vm, a, d, 0, None)
        ship(p.pca_over_photo, p.maps, s.image, ep.scatter_figure(vm, d, 0, "row"),
             (ep.cls_similarity_image(vm, d), "png"), (ep.filters_image(d), "png"))
        return st

    t0 = time.perf_counter()
    open_tab()
    first_open = time.perf_counter() - t0
    depths = iter(range(10**6))

    def depth_event():  # app.py: show_depth, then show_scatter
        depth = next(depths) % (g.num_layers + 1)
        d = data()
        p = ep.depth_panel(vm, a, d, depth, (3, 4))
        s = ep.similarity_panel(vm, a, d, depth, (3, 4))
        ship(p.pca_over_photo, p.maps, s.image)

    def depth_scatter():
        ship(ep.scatter_figure(vm, data(), next(depths) % (g.num_layers + 1), "row"))

    def click_event():
        r, c, _ = ep.clicked_token(g, 300, 200)
        d = data()
        s = ep.similarity_panel(vm, a, d, 6, (r, c))
        ship(ep.pca_over_photo(vm, d, 6, (r, c)), s.image)

    def colour_event():
        ship(ep.scatter_figure(vm, data(), 6, "rollout"))

    forwards = []
    hook = vm.model.register_forward_hook(lambda *_: forwards.append(1))
    rows = [("open tab (first: prepare + render)", first_open),
            ("open tab (cached)", median_s(open_tab, args.repeat)),
            ("depth slider: pictures", median_s(depth_event, args.repeat)),
            ("depth slider: then the scatter", median_s(depth_scatter, args.repeat)),
            ("click a patch", median_s(click_event, args.repeat)),
            ("colour the scatter", median_s(colour_event, args.repeat))]
    hook.remove()
    print(f"model {vm.id} on {vm.device}; one forward pass: {forward * 1000:.0f} ms "
          f"(median of {args.repeat})")
    for name, t in rows:
        print(f"  {name:38s} {t * 1000:8.1f} ms   {t / forward:6.3f}× forward")
    print(f"forward passes during the events: {len(forwards)} (must be 0)")


if __name__ == "__main__":
    main()
