"""The page's list of models, and the one gate every model id passes.

A visitor (or an API caller) may only name a model on this list: the curated hub
ids plus what the command line added. Local paths and other hub ids never come from
a request. A model that fails to load leaves the list for every visitor, and its
random-weights twin (same architecture, untrained) takes its place.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from .errors import UserError
from .hub import is_cached
from .models import RANDOM_ARCHS, RANDOM_PREFIX, short_name

OFFLINE_FALLBACK = RANDOM_PREFIX + "vit-base-patch16-224"
# Hub ids a visitor may pick, with the download size of their weights (MB, safetensors),
# said while the first load downloads them.
CURATED: dict[str, int] = {
    "google/vit-base-patch16-224": 346,
    "google/vit-base-patch32-384": 353,
    "google/vit-large-patch16-224": 1220,
    "facebook/deit-base-patch16-224": 346,
    "facebook/dino-vitb16": 343,
    "facebook/deit-base-distilled-patch16-224": 349,
    "facebook/dinov2-small": 88,
    "facebook/dinov2-with-registers-small": 88,
    "microsoft/beit-base-patch16-224": 347,
    # image-text models: the image tower is the ViT, the typed labels its classes (both towers load)
    "openai/clip-vit-base-patch16": 599,
    "openai/clip-vit-base-patch32": 605,
    "google/siglip-base-patch16-224": 813,
    OFFLINE_FALLBACK: 0,
}


def random_twin(model_id: str) -> str | None:
    """random:<arch> with the architecture a hub id names (google/vit-base-patch32-384 ->
    random:vit-base-patch32-384), or None: what to offer when the weights cannot be had."""
    arch = model_id.rsplit("/", 1)[-1]
    return RANDOM_PREFIX + arch if arch in RANDOM_ARCHS and not model_id.startswith(RANDOM_PREFIX) else None


def is_hub_id(model_id: str) -> bool:
    return not model_id.startswith(RANDOM_PREFIX) and short_name(model_id) == model_id


@dataclass(frozen=True)
class Choice:
    label: str  # what the dropdown shows: never a server path
    id: str


class Catalog:
    """Thread-safe: one per process, shared by every session."""

    def __init__(self, default: str, extra: tuple[str, ...] = (), curated: tuple[str, ...] = tuple(CURATED)):
        self._ids = list(dict.fromkeys([*extra, default, *curated]))
        self._gone: set[str] = set()
        self._lock = threading.Lock()

    @property
    def ids(self) -> list[str]:
        with self._lock:
            return [m for m in self._ids if m not in self._gone]

    def choices(self) -> list[tuple[str, str]]:
        """(label, id) pairs for a dropdown."""
        return [(short_name(m), m) for m in self.ids]

    def check(self, model_id: object) -> str:
        """The gate: the id itself when it is on the list; otherwise UserError, before any loading."""
        if not isinstance(model_id, str) or model_id not in self.ids:
            raise UserError("Choose a model from the page's list. Other models, hub ids and local "
                            "paths can only be added by whoever starts the server (--model).")
        return model_id

    def drop(self, model_id: str) -> None:
        """A model failed to load: take it off every visitor's list, and offer its random twin."""
        twin = random_twin(model_id)
        with self._lock:
            if model_id not in self._ids:
                return
            self._gone.add(model_id)
            if twin and twin not in self._ids:
                self._ids.insert(self._ids.index(model_id) + 1, twin)

    def twin(self, model_id: str) -> str | None:
        """The random-weights twin of a model, when it is on the list."""
        t = random_twin(model_id)
        return t if t in self.ids else None

    def keep_cached_only(self, keep: str) -> list[str]:
        """Offline: hub ids without a local copy cannot load, so they leave the list now (with
        their twins offered) instead of failing when picked. `keep` stays whatever. Returns the
        ids dropped."""
        dropped = [m for m in self.ids if m != keep and is_hub_id(m) and not is_cached(m)]
        for m in dropped:
            self.drop(m)
        return dropped

    def loading_text(self, model_id: str) -> str:
        """What the page says at once when a model is picked, before it is loaded."""
        name = short_name(model_id)
        if model_id.startswith(RANDOM_PREFIX):
            return f"⏳ Building **{name}** (random weights, no download)…"
        mb = CURATED.get(model_id)
        if is_hub_id(model_id) and not is_cached(model_id):
            size = f" (about {mb} MB)" if mb else ""
            return f"⏳ Downloading **{name}**{size} from the Hugging Face hub, then loading it…"
        return f"⏳ Loading **{name}**…"
