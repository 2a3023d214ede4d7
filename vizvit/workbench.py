"""Process-wide state behind the page: loaded models, uploaded photos, cached analyses.

Sessions hold only a small key, ``PhotoKey``; everything heavy lives here, bounded.
This module is plain Python (no gradio), so the benchmark and tests drive it directly.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Hashable

from PIL import Image

from .catalog import Catalog
from .cnn import load_cnn
from .errors import UserError
from .forward import Analysis, AnalysisCache, analyze
from .images import ImageInput, View, image_sha1, load_image
from .models import VitModel, load_model


@dataclass(frozen=True)
class PhotoKey:
    """What a browser session remembers: which model and which photo. No tensors."""

    model_id: str
    sha1: str


class Workbench:
    """Loads models once, keeps recent photos, and caches analyses and derived results."""

    def __init__(self, cache_bytes: int = 1 << 30, photo_bytes: int = 256 << 20, max_models: int = 2,
                 device: str = "auto", cnn: str | None = None, catalog: Catalog | None = None):
        # catalog: the page's model list, the one gate every model id passes before anything
        # loads; a model that fails to load leaves it. None in notebooks and scripts: any id loads.
        self.catalog = catalog
        self.cache = AnalysisCache(cache_bytes)
        self.device = device
        self.photo_bytes = photo_bytes  # decoded uploads kept (RGB, 3 bytes a pixel)
        self.max_models = max_models
        self._photos: OrderedDict[str, Image.Image] = OrderedDict()
        self._models: OrderedDict[str, VitModel] = OrderedDict()
        self._lock = threading.Lock()
        self._model_locks: dict[str, threading.Lock] = {}
        self.cnn = load_cnn(cnn, device) if cnn else None  # optional, beside the ViT in the shift sweep

    # -- models ---------------------------------------------------------------
    def model(self, model_id: str) -> VitModel:
        """The loaded model for model_id, loading it once (other models may be dropped).
        Raises UserError, before any loading, for an id the gate refuses."""
        if self.catalog is not None:
            model_id = self.catalog.check(model_id)
        with self._lock:
            if model_id in self._models:
                self._models.move_to_end(model_id)
                return self._models[model_id]
            lock = self._model_locks.setdefault(model_id, threading.Lock())
        with lock:
            with self._lock:
                if model_id in self._models:
                    return self._models[model_id]
            try:
                vm = load_model(model_id, self.device)
            except ValueError:
                if self.catalog is not None:
                    self.catalog.drop(model_id)  # for every visitor, not only the one who tried
                raise
            with self._lock:
                self._models[model_id] = vm
                while len(self._models) > self.max_models:
                    self._models.popitem(last=False)
            return vm

    def add_model(self, vm: VitModel) -> None:
        """Register an already-loaded model (tests, notebooks)."""
        with self._lock:
            self._models[vm.id] = vm

    # -- photos ---------------------------------------------------------------
    def add_photo(self, src: ImageInput) -> str:
        """Decode and keep a photo; returns its content hash. Raises ValueError for bad input."""
        image = load_image(src)
        sha1 = image_sha1(image)
        with self._lock:
            self._photos[sha1] = image
            self._photos.move_to_end(sha1)
            # Keep the full upload (the processor resizes from it), bounded in bytes.
            while len(self._photos) > 1 and self.photos_nbytes > self.photo_bytes:
                self._photos.popitem(last=False)
        return sha1

    @property
    def photos_nbytes(self) -> int:
        return sum(3 * im.width * im.height for im in self._photos.values())

    def photo(self, sha1: str) -> Image.Image:
        with self._lock:
            image = self._photos.get(sha1)
        if image is None:
            raise UserError("This photo is no longer in memory (the server was restarted or busy). "
                             "Please upload it again.")
        return image

    # -- analyses -------------------------------------------------------------
    def analysis(self, key: PhotoKey, view: View = View()) -> Analysis:
        """The cached Analysis of (model, photo, view); one forward pass on a miss."""
        vm = self.model(key.model_id)
        return self.cache.get_or_compute(
            ("analysis", key.model_id, key.sha1, view),
            lambda: analyze(vm, self.photo(key.sha1), view),
        )

    def derived(self, key: PhotoKey, name: Hashable, compute: Callable[[], Any]) -> Any:
        """Cache anything computed from a photo's analyses (rollout stacks, relevance...)."""
        return self.cache.get_or_compute(("derived", key.model_id, key.sha1, name), compute)

    def peek_derived(self, key: PhotoKey, name: Hashable) -> Any | None:
        """The cached derived result, or None: for streamed computations that store at the end."""
        return self.cache.get(("derived", key.model_id, key.sha1, name))
