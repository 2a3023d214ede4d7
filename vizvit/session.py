"""Process-wide state behind the page: loaded models, uploaded photos, ONE cache.

Sessions hold only a small key, ``PhotoKey``; everything heavy lives here, bounded.
Every cache key is made here (``analysis_key``, ``derived_key``, ``model_key``). Views
never see keys: they get a ``Photo`` handle (one photo under one model) and ask it for
analyses and derived results, which it computes once. ``python -m vizvit export`` uses
the same handle, so it shares these caches. Plain Python (no gradio).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from PIL import Image

from vizvit.errors import UserError
from vizvit.model.ablation import Ablation
from vizvit.model.catalog import Catalog, ModelId
from vizvit.model.cnn import load_cnn
from vizvit.model.engine import (
    Analysis,
    Prediction,
    Request,
    ablation_hooks,
    load_model,
    nbytes,
    predict_batch,
    text_embeddings,
    top_predictions,
    with_zero_shot,
)
from vizvit.model.forwards import MAX_BATCH, ForwardQueue
from vizvit.model.hooks import Hook
from vizvit.model.images import ImageInput, View, apply_view, image_sha1, load_image, model_input_view
from vizvit.model.models import VitModel
from vizvit.model.zeroshot import ZeroShotHead, check_template, head_of, prompts, required_labels
from vizvit.service.threads import lower_priority


def _file_digest(src: ImageInput, max_bytes: int = 64 << 20) -> bytes | None:
    """The BLAKE2b digest of a photo file's bytes (a path or the bytes themselves); None for a
    decoded picture, or a file that cannot be read or is bigger than max_bytes (decoded each time;
    load_image refuses most of those anyway)."""
    if isinstance(src, (bytes, bytearray)):
        return hashlib.blake2b(src, digest_size=20).digest()
    if not isinstance(src, (str, os.PathLike)):
        return None
    try:
        if os.path.getsize(src) > max_bytes:
            return None
        with open(src, "rb") as f:
            return hashlib.file_digest(f, functools.partial(hashlib.blake2b, digest_size=20)).digest()
    except (OSError, ValueError):
        return None


class PhotoGone(UserError):
    """A kept photo pushed out by newer ones (the budget photo_bytes): a caller that can keep it again
    (a room, from its store) retries; any other says "upload it again"."""


log = logging.getLogger("vizvit.session")
Work = Callable[["Photo"], Any]  # a view's preparation: fills the cache through the handle, result unused


class AnalysisCache:
    """Thread-safe LRU of computed results, bounded in bytes.

    Holds Analyses and anything derived from them (rollout stacks, relevance maps),
    keyed by hashable tuples. Concurrent requests for the same missing key compute it
    once; the others wait. Evicted entries are simply recomputed (forwards are
    deterministic).
    """

    def __init__(self, max_bytes: int = 1 << 30):
        self.max_bytes = int(max_bytes)
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._inflight: dict[Hashable, threading.Lock] = {}
        self.hits = 0
        self.misses = 0

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

    def get(self, key: Hashable) -> Any | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return item[0]

    def put(self, key: Hashable, value: Any) -> None:
        size = nbytes(value)
        with self._lock:
            if key in self._items:
                self._bytes -= self._items.pop(key)[1]
            if size > self.max_bytes:
                return  # would evict everything and still not fit: don't keep it
            self._items[key] = (value, size)
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, (_, s) = self._items.popitem(last=False)
                self._bytes -= s

    def get_or_compute(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        value = self.get(key)
        if value is not None:
            return value
        with self._lock:
            key_lock = self._inflight.setdefault(key, threading.Lock())
        with key_lock:
            value = self.get(key)  # someone else may have computed it meanwhile
            if value is not None:
                return value
            with self._lock:
                self.misses += 1
            try:
                value = compute()
                self.put(key, value)
            finally:
                with self._lock:
                    self._inflight.pop(key, None)
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0


# ------------------------------------------------------------------ every cache key
def analysis_key(model_id: str, sha1: str, view: View, ablation: Ablation = Ablation()) -> tuple:
    return ("analysis", model_id, sha1, view, ablation)


def derived_key(model_id: str, sha1: str, name: Hashable, ablation: Ablation = Ablation(),
                labels: tuple[str, ...] = (), template: str = "") -> tuple:
    """Anything computed from one photo's analyses under one model, with the same heads
    switched off (rollouts, relevance...) and, for CLIP / SigLIP, the same typed labels (the
    classes a relevance map, a sweep's top-1 or a curve's target refer to)."""
    return ("derived", model_id, sha1, ablation, name) + ((labels, template) if labels else ())


def text_key(model_id: str, prompt: str) -> tuple:
    """One prompt's text embedding (E,) under one CLIP / SigLIP model: a label typed again, or
    kept in a new list, never runs the text tower again."""
    return ("text", model_id, prompt)


def head_key(model_id: str, labels: tuple[str, ...], template: str) -> tuple:
    """The zero-shot head (text embeddings of a label list with a template) of one model."""
    return ("zero-shot head", model_id, labels, template)


def model_key(model_id: str, name: Hashable) -> tuple:
    """Anything that depends on the model alone (position embeddings, filter PCA...)."""
    return ("model", model_id, name)


# ------------------------------------------------------------------ the one name cached here
# Every other name a derived_key or model_key ends in belongs to the module that computes it (vizvit.methods.maps,
# vizvit.readings.*, the views that still compute): this module keys them, whatever they are.
def view_prediction_name(view: View) -> tuple:
    """Per photo: one perturbed view's lighter forward (Photo.prediction)."""
    return ("view-prediction", view)


@dataclass(frozen=True)
class PhotoKey:
    """What a browser session remembers: which model and which photo. No tensors."""

    model_id: str
    sha1: str
    ablation: Ablation = Ablation()  # heads the session switched off: every view shows that model
    # CLIP / SigLIP: the typed labels and prompt template ((): the model's default list). Not
    # part of the analysis key: a new label list re-reads the cached image embedding.
    labels: tuple[str, ...] = ()
    template: str = ""

    @property
    def intact(self) -> PhotoKey:
        """The same photo, model and labels with every head on."""
        return PhotoKey(self.model_id, self.sha1, labels=self.labels, template=self.template)


class Workbench:
    """Loads models once, keeps recent photos, and caches analyses and derived results."""

    MODEL_VIEW = "view-"  # a kept picture's key prefix when it is a model's input view (add_model_view)
    FILES_REMEMBERED = 4096  # file digests -> keys (add_photo): ~0.3 MB at most

    def __init__(self, cache_bytes: int = 1 << 30, photo_bytes: int = 256 << 20, max_models: int = 2,
                 device: str = "auto", cnn: str | None = None, catalog: Catalog | None = None,
                 max_batch: int = MAX_BATCH):
        # catalog: the page's model list, the one gate every model id passes before anything
        # loads; a model that fails to load leaves it. None in notebooks and scripts: any id loads.
        self.catalog = catalog
        self.cache = AnalysisCache(cache_bytes)
        # Every forward a cache miss needs waits in ONE queue, batched with the others waiting
        # (see forwards.py); everything else is served while it waits.
        self.forwards = ForwardQueue(max_batch)
        self.warm_photos: tuple[ImageInput, ...] = ()  # analysed under each model once it loads (see warm)
        self.device = device
        self.photo_bytes = photo_bytes  # decoded uploads kept (RGB, 3 bytes a pixel)
        self.max_models = max_models
        self._photos: OrderedDict[str, Image.Image] = OrderedDict()
        # An encoded photo already decoded (the digest of its file's bytes) -> its key: an API client
        # uploads the same photo for each call (a student's /analyze, then each /attention; Gradio
        # writes each upload anew), and decoding + hashing its pixels again was 7 % of a hall's CPU.
        self._files: OrderedDict[bytes, str] = OrderedDict()
        self._models: OrderedDict[str, VitModel] = OrderedDict()
        self._lock = threading.Lock()
        self._model_locks: dict[str, threading.Lock] = {}
        self.cnn = load_cnn(cnn, device) if cnn else None  # optional, beside the ViT in the shift sweep
        # What the tabs compute before they are opened (set by vizvit.views.attach; the views import
        # this module, so it cannot import them): model_work once per model when it is warmed, photo_work
        # per photo after its forward, in the background (see prepare_later). Their results land in
        # the cache, so a tab's first open only draws.
        self.model_work: tuple[Work, ...] = ()
        self.photo_work: tuple[Work, ...] = ()
        # A lesson step's picture on a photo, (Photo, Step) -> (H, W, 3) uint8 or None (set by attach too):
        # the figure a live room shows once the step is revealed (api.PublicApi.room_figure).
        self.step_picture: Callable[[Photo, Any], np.ndarray | None] | None = None
        # ONE thread: background preparation never takes more than one core from the visible tab.
        self._later = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vizvit-prepare")

    # -- models ---------------------------------------------------------------
    def model(self, model_id: str) -> VitModel:
        """The loaded model for model_id, loading it once (other models may be dropped).
        Raises UserError, before any loading, for an id the catalog refuses; a ModelId (checked at
        its request's entry) is trusted."""
        source = model_id
        if self.catalog is not None:
            model_id = model_id if isinstance(model_id, ModelId) else self.catalog.check(model_id)
            source = self.catalog.source(model_id)  # a local model's directory, known to the catalog only
        with self._lock:
            if model_id not in self._models and source in self._models:  # added (add_model) by its path
                self._models[model_id] = dataclasses.replace(self._models.pop(source), id=model_id)
            if model_id in self._models:
                self._models.move_to_end(model_id)
                return self._models[model_id]
            lock = self._model_locks.setdefault(model_id, threading.Lock())
        with lock:
            with self._lock:
                if model_id in self._models:
                    return self._models[model_id]
            try:
                # The page names a local model by its short name, never its path: the cached prompts
                # (CLIP / SigLIP's default labels) are keyed by that name too.
                vm = load_model(source, self.device,
                                head=lambda vm, labels, t: self._head(dataclasses.replace(vm, id=model_id),
                                                                      labels, t))
                if vm.id != model_id:
                    vm = dataclasses.replace(vm, id=model_id)
            except ValueError:
                if self.catalog is not None:
                    self.catalog.drop(model_id)  # for every visitor, not only the one who tried
                raise
            with self._lock:
                self._models[model_id] = vm
                while len(self._models) > self.max_models:
                    self._models.popitem(last=False)
            # In the background: the visitor who picked it waits for their own photo only.
            if self.warm_photos:
                threading.Thread(target=self.warm, args=(model_id, self.warm_photos), daemon=True).start()
            return vm

    def warm(self, model_id: str, photos: Sequence[ImageInput]) -> int:
        """Analyse `photos` under `model_id` now, in one batched forward (the examples: analysed at
        start for the default model, and when another model is first picked, so the students who
        open an example find it cached). Returns how many were analysed."""
        keys = [PhotoKey(model_id, self.add_photo(p)) for p in photos]
        threads = [threading.Thread(target=self.analysis, args=(k,), daemon=True) for k in keys]
        for t in threads:  # all at once: they wait together, so the worker runs them as one batch
            t.start()
        for t in threads:
            t.join()
        for k in keys[:1]:  # the model's own work (position tables, filter PCA...) needs any one photo
            self._run(k, self.model_work)
        for k in keys:
            self._run(k, self.photo_work)
        return len(keys)

    def prepare_later(self, key: PhotoKey) -> Future:
        """Run the model's and the photo's work (model_work, photo_work) on the background thread, so
        that a tab opened later finds them cached. Call it once the open tab's answer is computed:
        the visible tab never waits for it. What is cached already costs a lookup."""
        return self._later.submit(self._prepare, key)

    def _prepare(self, key: PhotoKey) -> None:
        lower_priority()
        self._run(key, self.model_work + self.photo_work)

    def _run(self, key: PhotoKey, work: Sequence[Work]) -> None:
        """Each piece of work on the photo's handle; a failure is logged and left for the tab to report."""
        for w in work:
            try:
                w(self.handle(key))
            except UserError:  # e.g. a photo evicted meanwhile: the tab says so when opened
                pass
            except Exception:  # preparation only: the tab computes it again and says why
                log.warning("preparing %s for %s failed", getattr(w, "__qualname__", w), key, exc_info=True)

    def add_model(self, vm: VitModel) -> None:
        """Register an already-loaded model (tests, notebooks)."""
        with self._lock:
            self._models[vm.id] = vm

    # -- photos ---------------------------------------------------------------
    def add_photo(self, src: ImageInput) -> str:
        """Decode and keep a photo; returns its content hash. Raises ValueError for bad input.
        A file (a path, or its bytes) whose bytes were decoded before, and whose photo is still kept,
        is not decoded again: the same bytes decode to the same pixels."""
        stamp = _file_digest(src)
        with self._lock:
            key = self._files.get(stamp) if stamp is not None else None
            if key is not None and key in self._photos:
                self._photos.move_to_end(key)
                return key
        image = load_image(src)
        key = self._keep(image_sha1(image), image)
        if stamp is not None:
            with self._lock:
                self._files[stamp] = key
                while len(self._files) > self.FILES_REMEMBERED:
                    self._files.popitem(last=False)
        return key

    def add_model_view(self, src: ImageInput) -> str:
        """Keep a picture that already is a model's input view (the exact pixels it saw: all a live room
        keeps of its photo, vizvit.classroom.room) -> its key (MODEL_VIEW + its hash). Analysed as it is: the
        processor's resize and crop are skipped, since they are not the identity on a model-sized
        picture (DeiT resizes to 256 and crops 224). Kept like a photo, under photo_bytes."""
        image = load_image(src)
        return self._keep(self.MODEL_VIEW + image_sha1(image), image)

    def _keep(self, key: str, image: Image.Image) -> str:
        with self._lock:
            self._photos[key] = image
            self._photos.move_to_end(key)
            # Keep the full upload (the processor resizes from it), bounded in bytes.
            while len(self._photos) > 1 and self.photos_nbytes > self.photo_bytes:
                self._photos.popitem(last=False)
        return key

    def model_input(self, sha1: str) -> Image.Image | np.ndarray:
        """What a forward starts from: the photo (the processor resizes and crops it), or for a model
        view (add_model_view) its pixels as they are."""
        image = self.photo(sha1)
        return np.asarray(image, dtype=np.uint8).copy() if sha1.startswith(self.MODEL_VIEW) else image

    def touch_photo(self, sha1: str) -> bool:
        """Whether the photo `sha1` is kept; a kept one becomes the most recent, as its upload again would
        (add_photo): a client that names it by its key (vizvit.api.Held) keeps it as long as one that
        uploads it for every call."""
        with self._lock:
            if sha1 not in self._photos:
                return False
            self._photos.move_to_end(sha1)
            return True

    @property
    def photos_nbytes(self) -> int:
        return sum(3 * im.width * im.height for im in self._photos.values())

    def photo(self, sha1: str) -> Image.Image:
        with self._lock:
            image = self._photos.get(sha1)
        if image is None:
            raise PhotoGone("This photo is no longer in memory (the server was restarted or busy). "
                             "Please upload it again.")
        return image

    # -- analyses -------------------------------------------------------------
    def analysis(self, key: PhotoKey, view: View = View()) -> Analysis:
        """The cached Analysis of (model, photo, view); one forward pass on a miss. CLIP / SigLIP:
        the cached image embedding read through the key's labels (a text forward at most)."""
        vm = self.model(key.model_id)
        a = self.cache.get_or_compute(
            analysis_key(key.model_id, key.sha1, view, key.ablation),
            lambda: self.forwards.run(vm, Request(self.model_input(key.sha1), view, key.ablation)),
        )
        return with_zero_shot(a, self.labelled(key)) if vm.is_zero_shot else a

    # -- zero-shot labels (CLIP / SigLIP) ----------------------------------------
    def zero_shot(self, model_id: str, labels: tuple[str, ...] | str, template: str) -> ZeroShotHead:
        """The text side of a label list: cached per list, and each prompt's embedding cached on
        its own, so only prompts never seen before run the text tower (one batched forward)."""
        return self._head(self.model(model_id), labels, template)

    def _head(self, vm: VitModel, labels: tuple[str, ...] | str, template: str) -> ZeroShotHead:
        """zero_shot's work for a loaded image-text model (also its default labels, at load)."""
        model_id = vm.id
        labs, t = required_labels(labels), check_template(template)
        if vm.text is None:  # (text_embeddings says so too, but only when a prompt is not cached)
            raise UserError("This model has no text tower.")
        rule = vm.text.rule

        def compute() -> ZeroShotHead:
            texts = prompts(labs, t)
            missing = [p for p in dict.fromkeys(texts) if self.cache.get(text_key(model_id, p)) is None]
            if missing:
                for p, e in zip(missing, text_embeddings(vm, missing)):
                    self.cache.put(text_key(model_id, p), e)
            cached = {p: self.cache.get(text_key(model_id, p)) for p in texts}
            got = {p: text_embeddings(vm, [p])[0] if e is None else e  # evicted meanwhile: recompute
                   for p, e in cached.items()}
            return head_of(vm.model, labs, t, torch.stack([got[p] for p in texts]), rule)

        return self.cache.get_or_compute(head_key(model_id, labs, t), compute)

    def labelled(self, key: PhotoKey) -> VitModel:
        """The key's model with its labels as classes: CLIP / SigLIP read the typed labels (the
        model's default list when none are typed); any other model as it is."""
        vm = self.model(key.model_id)
        if not vm.is_zero_shot or not key.labels:
            return vm
        return vm.with_zero_shot(self.zero_shot(key.model_id, key.labels, key.template))

    def derived(self, key: PhotoKey, name: Hashable, compute: Callable[[], Any]) -> Any:
        """Cache anything computed from a photo's analyses (rollout stacks, relevance...)."""
        return self.cache.get_or_compute(
            derived_key(key.model_id, key.sha1, name, key.ablation, key.labels, key.template), compute)

    def peek_derived(self, key: PhotoKey, name: Hashable) -> Any | None:
        """The cached derived result, or None: for streamed computations that store at the end."""
        return self.cache.get(derived_key(key.model_id, key.sha1, name, key.ablation, key.labels,
                                          key.template))

    def per_model(self, model_id: str, name: Hashable, compute: Callable[[], Any]) -> Any:
        """Cache anything that depends on the model alone."""
        return self.cache.get_or_compute(model_key(model_id, name), compute)

    def handle(self, key: PhotoKey) -> Photo:
        """The handle views use for this photo under this model."""
        return Photo(self, key)


@dataclass(frozen=True, eq=False)
class ViewPrediction:
    """What one perturbed view's top-5 and patch comparison need (Photo.prediction). CPU tensors."""

    input_view: np.ndarray  # (H, W, 3) uint8: exactly what the model saw
    probs: torch.Tensor | None  # (C,); None without a classifier
    top5: tuple[Prediction, ...]  # best first; empty without a classifier
    patch_embeddings: torch.Tensor  # (P, D): conv output before [CLS] and position embeddings


@dataclass(frozen=True)
class Photo:
    """One photo under one model: what every view asks for its analyses and derived
    results. Holds no tensors itself; everything lives in the workbench's cache."""

    wb: Workbench
    key: PhotoKey

    @property
    def vm(self) -> VitModel:
        """The model, with this session's typed labels as its classes (CLIP / SigLIP)."""
        return self.wb.labelled(self.key)

    @property
    def image(self) -> Image.Image:
        return self.wb.photo(self.key.sha1)

    def analysis(self, view: View = View()) -> Analysis:
        return self.wb.analysis(self.key, view)

    def prediction(self, view: View) -> ViewPrediction:
        """A view's top-5 and patch embeddings: from its Analysis when that is cached, else from
        one forward that keeps no attentions or hidden states (engine.predict_batch, about one
        bare forward; an Analysis keeps every layer's, ~30 MB more on ViT-B/16, and costs
        1.26-1.31x a bare forward here), cached per view. For views that need no maps: a shift."""
        a = self.wb.cache.get(analysis_key(self.key.model_id, self.key.sha1, view, self.key.ablation))
        if a is not None:
            a = with_zero_shot(a, self.vm) if self.vm.is_zero_shot else a
            return ViewPrediction(a.input_view, a.probs, a.top5, a.patch_embeddings)

        def compute() -> ViewPrediction:
            vm, g = self.vm, self.vm.geometry
            shown = apply_view(self.input_view(), view, g.patch_size, g.grid[1])
            pred = predict_batch(vm, [shown], extra=self.forward_hooks())
            probs = None if pred.probs is None else pred.probs[0]
            top = top_predictions(probs, vm.labels) if probs is not None else ()
            return ViewPrediction(shown, probs, top, pred.patch_embeddings[0])

        return self.derived(view_prediction_name(view), compute)

    def input_view(self) -> np.ndarray:
        """(H, W, 3) uint8: what the model sees of this photo (the processor's resize and crop),
        without a forward pass: the same pixels as analysis().input_view of the unperturbed view.
        The bare model's preprocessing, so a CLIP / SigLIP key's labels cost no text forward."""
        source = self.wb.model_input(self.key.sha1)
        if isinstance(source, np.ndarray):  # a model view (Workbench.add_model_view): as it is
            return source
        return model_input_view(source, self.wb.model(self.key.model_id).preprocess)

    def derived(self, name: Hashable, compute: Callable[[], Any]) -> Any:
        return self.wb.derived(self.key, name, compute)

    def forward_hooks(self) -> list[Hook]:
        """The hooks every forward of this photo's views runs with: the heads the session switched off
        (every tab shows that model; a sweep or a contest of the intact one beside it mixed two models)."""
        return ablation_hooks(self.vm, self.key.ablation)

    def peek(self, name: Hashable) -> Any | None:
        return self.wb.peek_derived(self.key, name)

    def per_model(self, name: Hashable, compute: Callable[[], Any]) -> Any:
        return self.wb.per_model(self.key.model_id, name, compute)
