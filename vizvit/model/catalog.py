"""The page's list of models, and the one gate every model id passes.

A visitor (or an API caller) may only name a model on this list: the curated hub
ids plus what the command line added. Local paths and other hub ids never come from
a request. A model that fails to load leaves the list for every visitor, and its
random-weights twin (same architecture, untrained) takes its place.

A local directory given on the command line is listed under a short name (its folder's
name): the page, its links and its API only ever see that name, and the catalog alone
knows the directory it loads from, so no server path reaches a browser.

The gate also lets through the random-weights twin of a listed model (random:<arch>, the same
architecture with seeded random weights): it needs no download and no more memory than the
listed model itself, and "trained against untrained" is the first contrast a student asks for
(the Compare tab). Twins are not shown in the model list; the Compare tab offers them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from vizvit.errors import UserError
from vizvit.model.hub import is_cached
from vizvit.model.models import FAMILIES, RANDOM_ARCHS, RANDOM_PREFIX, is_local_path, short_name

OFFLINE_FALLBACK = RANDOM_PREFIX + "vit-base-patch16-224"


class _Curated(Mapping[str, int]):
    """Hub ids a visitor may pick, with the download size of their weights (MB, safetensors), said
    while the first load downloads them: every family's curated checkpoints (models.FAMILIES, read
    live, so a registered family's appear too), then the offline fallback."""

    def _all(self) -> dict[str, int]:
        return {**{m: mb for f in FAMILIES.values() for m, mb in f.curated.items()}, OFFLINE_FALLBACK: 0}

    def __getitem__(self, model_id: str) -> int:
        return self._all()[model_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


CURATED: Mapping[str, int] = _Curated()


# Parameters and the time of one page forward (`analyze`: attentions and hidden states kept,
# median of 10 on CPU), per architecture (the hub id's last part, shared by its random twin:
# speed depends on the shape, not the weights). Measured by benchmarks/bench_catalog.py on
# 2026-12-01, a shared 2-core x86 container (torch 2.13 CPU, 2 threads, other jobs running, so a free
# CPU Space is about as fast): ViT-Ti on the trained local copy, ViT-S and ViT-B on random twins.
MEASURED: dict[str, tuple[int, int]] = {
    "vit-tiny-patch16-224": (5_717_416, 52),
    "vit-small-patch16-224": (22_050_664, 135),
    "vit-base-patch16-224": (86_567_656, 495),
}

# Says what the numbers after a name mean without quoting one model's: an example such as
# "(5.7M, ~52 ms)" read as the loaded model's own numbers when ViT-B/16 was loaded (issue 51).
# The forward is a reference measured once on busy cores; the status line's "forward … ms" is this server's
# own (a walk-through read "~52 ms" beside "forward 22 ms" as a contradiction).
SIZES_INFO = ("The numbers after a name: its parameters (M: millions) and the time of one forward on 2 busy "
              "CPU cores, measured once to compare the models; the status line gives this server's own")


def arch_of(model_id: str) -> str:
    """google/vit-base-patch16-224 and random:vit-base-patch16-224 -> vit-base-patch16-224."""
    return model_id.removeprefix(RANDOM_PREFIX).rsplit("/", 1)[-1]


def size_text(model_id: str) -> str:
    """' (5.7M, ~52 ms)': parameters and one forward (see MEASURED) of a measured architecture,
    else ''. Short, so that the chosen name stays whole in projector mode's model box."""
    m = MEASURED.get(arch_of(model_id))
    return f" ({m[0] / 1e6:.1f}M, ~{m[1]} ms)" if m else ""


_SHAPE_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "image_size",
               "patch_size")


def local_arch(directory: str) -> str | None:
    """The RANDOM_ARCHS architecture a local checkpoint has (its config.json's shape numbers), so a
    local copy of a measured network shows its size and time too; None when none matches."""
    try:
        config = json.loads((Path(directory) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for arch, (kind, numbers) in RANDOM_ARCHS.items():
        if config.get("model_type") == kind and all(config.get(k) == numbers.get(k) for k in _SHAPE_KEYS):
            return arch
    return None


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


class ModelId(str):
    """A model id that Catalog.check let through. Only check makes one (a visitor's request brings
    plain strings), so whatever is handed a ModelId (views.header, Workbench.model) trusts it:
    one check per request, at its entry, instead of one in every layer it passes."""

    __slots__ = ()


class Catalog:
    """Thread-safe: one per process, shared by every session."""

    def __init__(self, default: str, extra: tuple[str, ...] = (), curated: tuple[str, ...] | None = None):
        curated = tuple(CURATED) if curated is None else curated  # read now: a family registered since counts
        self._sources: dict[str, str] = {}  # short name -> the local directory it loads from
        self._archs: dict[str, str | None] = {}  # short name -> its architecture (see local_arch)
        self._lock = threading.Lock()
        self._ids = list(dict.fromkeys([*curated]))
        names = [self._add_local(m) for m in dict.fromkeys([*extra, default])]
        self._ids = list(dict.fromkeys([*names, *self._ids]))
        self._gone: set[str] = set()

    def _add_local(self, model_id: str) -> str:
        """The name a command-line model is listed under: a hub id or random:<arch> as is; a local
        directory by its folder's name (name-2, name-3 when that is taken)."""
        if not is_local_path(model_id):
            return model_id
        where = str(Path(model_id).resolve())
        for name, src in self._sources.items():
            if src == where:
                return name
        base = Path(where).name or "local-model"
        name, i = base, 2
        while name in self._ids or name in self._sources:
            name, i = f"{base}-{i}", i + 1
        self._sources[name] = where
        self._archs[name] = local_arch(where)
        return name

    def public(self, model_id: str) -> str:
        """The listed name of a command-line model (its short name for a local directory)."""
        where = str(Path(model_id).resolve()) if is_local_path(model_id) else None
        return next((n for n, src in self._sources.items() if src == where), model_id)

    def source(self, model_id: str) -> str:
        """What load_model needs for a listed name: the directory of a local model, else the id."""
        return self._sources.get(model_id, model_id)

    def is_local(self, model_id: str) -> bool:
        return model_id in self._sources

    def is_hub(self, model_id: str) -> bool:
        """A hub id (it may need a download), not a local model listed under its short name."""
        return is_hub_id(model_id) and not self.is_local(model_id)

    @property
    def ids(self) -> list[str]:
        with self._lock:
            return [m for m in self._ids if m not in self._gone]

    def choices(self) -> list[tuple[str, str]]:
        """(label, id) pairs for a dropdown: never a server path, in the label or in the value."""
        return [(self.label(m), m) for m in self.ids]

    def label(self, model_id: str) -> str:
        if self.is_local(model_id):
            arch = self._archs.get(model_id)
            return f"local: {model_id}" + (size_text(arch) if arch else "")
        return short_name(model_id) + size_text(model_id)

    def arch(self, model_id: str) -> str | None:
        """The RANDOM_ARCHS architecture of a listed name (a local model's from its config), or None."""
        if self.is_local(model_id):
            return self._archs.get(model_id)
        a = arch_of(model_id)
        return a if a in RANDOM_ARCHS else None

    def twin_of(self, model_id: str) -> str | None:
        """random:<arch> of a trained model whose architecture is known (hub id or local copy), else None."""
        a = self.arch(model_id)
        return RANDOM_PREFIX + a if a and not model_id.startswith(RANDOM_PREFIX) else None

    def twins(self) -> list[str]:
        """The random twins of the listed models that are not listed themselves, in list order."""
        ids = self.ids
        return list(dict.fromkeys(t for t in map(self.twin_of, ids) if t and t not in ids))

    def check(self, model_id: object) -> ModelId:
        """The gate: the id itself (as a ModelId) when it is on the list, or the random twin of a
        listed model; otherwise UserError, before any loading."""
        if not isinstance(model_id, str) or (model_id not in self.ids and model_id not in self.twins()):
            raise UserError("Choose a model from the page's list. Other models, hub ids and local "
                            "paths can only be added by whoever starts the server (--model).")
        return ModelId(model_id)

    def drop(self, model_id: str) -> None:
        """A model failed to load: take it off every visitor's list, and offer its random twin
        (a local checkpoint's too, from its config's shape)."""
        twin = self.twin_of(model_id)
        with self._lock:
            if model_id not in self._ids:
                return
            self._gone.add(model_id)
            if twin and twin not in self._ids:
                self._ids.insert(self._ids.index(model_id) + 1, twin)

    def twin(self, model_id: str) -> str | None:
        """The random-weights twin of a model, when it is on the list."""
        t = self.twin_of(model_id)
        return t if t in self.ids else None

    def keep_cached_only(self, keep: str) -> list[str]:
        """Offline: hub ids without a local copy cannot load, so they leave the list now (with
        their twins offered) instead of failing when picked. `keep` stays whatever. Returns the
        ids dropped."""
        dropped = [m for m in self.ids if m != keep and self.is_hub(m) and not is_cached(m)]
        for m in dropped:
            self.drop(m)
        return dropped

    def loading_text(self, model_id: str) -> str:
        """What the page says at once when a model is picked, before it is loaded."""
        name = self.label(model_id).split(" (")[0]
        if model_id.startswith(RANDOM_PREFIX):
            return f"⏳ Building **{name}** (random weights, no download)…"
        mb = CURATED.get(model_id)
        if self.is_hub(model_id) and not is_cached(model_id):
            size = f" (about {mb} MB)" if mb else ""
            return f"⏳ Downloading **{name}**{size} from the Hugging Face hub, then loading it…"
        return f"⏳ Loading **{name}**…"
