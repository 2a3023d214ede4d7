"""The faithfulness contest (Petsiuk et al. 2018, RISE) of the Experiments tab, as numbers: every map
of readings.methods.CONTEST and perturb.RANDOM_ORDERS random orders, removed patch by patch
(deletion) and added back (insertion) under two fills, the top-1 class tracked; cached per photo.
The ranking (contestants), which maps beat the random orders' band (beats_random) and the artifact
tokens each map removes first are read here; vizvit.views.experiments charts and words them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import torch

from vizvit.cancel import NEVER, Cancel
from vizvit.model.engine import Progress
from vizvit.readings import artifacts_rule as art_mod, methods, perturb
from vizvit.readings.artifacts import artifact_masks
from vizvit.session import Photo


# The names this module's results are cached under (Photo.derived).
def ranking_maps_name(seed: int) -> tuple:
    """The maps the curves rank patches by (vizvit.readings.methods.CONTEST), per random seed."""
    return ("experiments_maps", seed)


def curves_name(steps: int, mode: str, seed: int, maps: tuple[str, ...]) -> tuple:
    """Deletion and insertion curves of the named maps."""
    return ("curves", int(steps), mode, seed, tuple(maps))


RANDOM_ROW = "random (baseline)"  # the ranking's row for the random orders' mean (the band)
# The second way of removing patches: a strong blur keeps the photo's colours and coarse shapes, close to
# the photos the model was trained on (RISE's insertion canvas); black squares are not (issue 43). A
# contest run with blur chosen takes black second, so every verdict rests on two fills.
SECOND_FILL = "blur"


def read_back(orders: Iterable[str] = ()) -> set[str]:
    """The rankings whose insertion is their deletion read backwards (perturb.faithfulness_curves): the
    random orders and the "random" map (random order 1). Any random order reversed is as random, and
    deletion at a fraction f and insertion at 1 − f are then one experiment on the same views: each
    random order's insertion AUC is its deletion AUC, and the band costs half the views."""
    return {*orders, methods.RANDOM.name}


def second_fill(mode: str) -> str:
    return "black" if mode == SECOND_FILL else SECOND_FILL


@dataclass(frozen=True)
class FillContest:
    """One fill's contest: the maps' curves and the random orders' curves (the band), same target."""

    curves: perturb.Curves  # the maps (their "random" is random order 1)
    band: perturb.Curves  # perturb.RANDOM_ORDERS random orders
    forwards: int  # distinct views run for both

    @property
    def deletion_band(self) -> perturb.Spread:
        return perturb.spread(self.band.deletion_auc)

    @property
    def insertion_band(self) -> perturb.Spread:
        return perturb.spread(self.band.insertion_auc)


@dataclass(frozen=True)
class Contest:
    first: FillContest  # the fill chosen on the page: the chart
    second: FillContest  # second_fill(first's): the table's last columns and the verdict


# ------------------------------------------------------------------ the maps
def curve_maps(ph: Photo, seed: int = 0) -> dict[str, np.ndarray]:
    """name -> (gh, gw) map for the curves, cached per photo: every contest method of
    readings.methods (the class-specific ones for the top-1 class, shared with the Attention tab's
    cache so each is computed once), and a costly one (attention flow: seconds, a job) once the
    Attention tab has computed it."""
    out = dict(ph.derived(ranking_maps_name(seed),
                          lambda: methods.ranking_maps(ph.vm, ph.analysis(), ph.derived, seed)))
    for name in costly_maps(ph):
        out[name] = methods.get(name)(ph.vm, ph.analysis(), None, ph.derived)
    return out


def costly_maps(ph: Photo) -> tuple[str, ...]:
    """The costly contest maps computed for this photo so far (attention flow, once the Attention tab has run
    it): the contest ranks them too. A cache lookup: no map is computed here."""
    return tuple(m.name for m in methods.CONTEST if m.costly and ph.peek(m.cached_as) is not None)


def _curves_key(steps: int, mode: str, seed: int, maps: dict[str, np.ndarray]) -> tuple:
    # The random orders are part of the key: a cached contest of the one-draw days, or of the days their
    # insertion ran views of its own, is not this one.
    return curves_name(steps, mode, seed, (*maps, f"{perturb.RANDOM_ORDERS} random orders read back",
                                           second_fill(mode)))


# ------------------------------------------------------------------ running it
def _fill_contest(ph: Photo, maps: dict[str, np.ndarray], steps: int, mode: str, seed: int,
                  target: int | None = None, cancel: Cancel = NEVER, progress: Progress | None = None) -> FillContest:
    """The maps and the random orders in one batched run (shared views run once), split."""
    orders = perturb.random_orders(ph.vm.geometry.grid, perturb.RANDOM_ORDERS, seed)
    c = perturb.faithfulness_curves(ph.vm, ph.analysis().input_view, {**maps, **orders}, int(steps),
                                    mode, target=target, cancel=cancel, progress=progress,  # type: ignore[arg-type]
                                    extra=ph.forward_hooks(), read_back=read_back(orders))
    return FillContest(*perturb.split_curves(c, tuple(maps)), c.forwards)


def compute_contest(ph: Photo, steps: int = 10, mode: str = "black", seed: int = 0,
                    progress: Callable[[str], Progress] | None = None) -> Contest:
    """Both fills' contests, cached per photo (the same entry contest_steps fills). progress: given
    each fill's name, the callback its batched run tells (views done, views of that fill)."""
    maps = curve_maps(ph, seed)

    def run() -> Contest:
        first = _fill_contest(ph, maps, steps, mode, seed, progress=None if progress is None else progress(mode))
        fill2 = second_fill(mode)
        return Contest(first, _fill_contest(ph, maps, steps, fill2, seed, first.curves.target,
                                            progress=None if progress is None else progress(fill2)))

    return ph.derived(_curves_key(steps, mode, seed, maps), run)


def peek_contest(ph: Photo, steps: int = 10, mode: str = "black", seed: int = 0) -> Contest | None:
    """The contest if it has been run for this photo (the button, export), else None: never runs it."""
    if ph.peek(ranking_maps_name(seed)) is None:
        return None
    return ph.peek(_curves_key(steps, mode, seed, curve_maps(ph, seed)))


def peek_shown(ph: Photo, steps: int = 10, mode: str = "black", seed: int = 0
               ) -> tuple[Contest, tuple[str, ...]] | None:
    """The contest to show for these settings, never run here: the one over every map computed now, else the
    one run before the costly maps were (attention flow computed after the contest: it ranks the other maps),
    each with the costly maps it ranks; None when neither was run."""
    if ph.peek(ranking_maps_name(seed)) is None:
        return None
    maps, costly = curve_maps(ph, seed), costly_maps(ph)
    c = ph.peek(_curves_key(steps, mode, seed, maps))
    if c is not None:
        return c, costly
    cheap = {n: m for n, m in maps.items() if n not in costly}
    c = ph.peek(_curves_key(steps, mode, seed, cheap)) if costly else None
    return None if c is None else (c, ())


def compute_curves(ph: Photo, steps: int = 10, mode: str = "black", seed: int = 0) -> perturb.Curves:
    """The maps' curves with the chosen fill (the contest's first fill), cached per photo."""
    return compute_contest(ph, steps, mode, seed).first.curves


@dataclass(frozen=True)
class ContestSoFar:
    """One step of a contest run map by map (contest_steps), for the page to show as it comes."""

    maps: tuple[str, ...]  # the maps the contest ranks
    curves: perturb.Curves | None = None  # the first fill's curves of the maps done so far (None: none yet)
    done: int = 0  # parts done of `total`: each map, the random orders, the second fill
    total: int = 0
    band: perturb.Curves | None = None  # the random orders' curves, once run
    contest: Contest | None = None  # the whole contest, cached: the last step


def contest_steps(ph: Photo, steps: int = 10, mode: str = "black", seed: int = 0,
                  cancel: Cancel = NEVER) -> Iterator[ContestSoFar]:
    """The contest map by map (each map's views batched), then the random orders, then the second fill;
    the complete contest is cached like compute_contest's (the cached one alone when it is there
    already). First a step with nothing done: the maps' views take seconds on a CPU. `cancel` is checked
    between batches (Cancelled: nothing cached)."""
    maps = curve_maps(ph, seed)
    name = _curves_key(steps, mode, seed, maps)
    done = ph.peek(name)
    if done is not None:
        yield ContestSoFar(tuple(maps), contest=done)
        return
    vm, view = ph.vm, ph.analysis().input_view
    total = len(maps) + 2
    yield ContestSoFar(tuple(maps), total=total)
    parts: list[perturb.Curves] = []
    # The views the runs share, run once as compute_contest's one batched run does: each map's intact and empty
    # view, the random map's order (the first random order's): the page ran 461 views on chelsea where the
    # export and the button said 436.
    known: dict[tuple[int, ...], torch.Tensor] = {}
    for map_name, m in maps.items():
        target = parts[0].target if parts else None
        parts.append(perturb.faithfulness_curves(vm, view, {map_name: m}, int(steps), mode,  # type: ignore[arg-type]
                                                 target=target, cancel=cancel, extra=ph.forward_hooks(),
                                                 read_back=read_back(), known=known))
        yield ContestSoFar(tuple(maps), perturb.merge_curves(parts), len(parts), total)
    curves = perturb.merge_curves(parts)
    orders = perturb.random_orders(vm.geometry.grid, perturb.RANDOM_ORDERS, seed)
    band = perturb.faithfulness_curves(vm, view, orders, int(steps), mode,  # type: ignore[arg-type]
                                       target=curves.target, cancel=cancel, extra=ph.forward_hooks(),
                                       read_back=read_back(orders), known=known)
    yield ContestSoFar(tuple(maps), curves, total - 1, total, band)
    first = FillContest(curves, band, curves.forwards + band.forwards)
    final = Contest(first, _fill_contest(ph, maps, steps, second_fill(mode), seed, curves.target, cancel))
    ph.derived(name, lambda: final)
    yield ContestSoFar(tuple(maps), curves, total, total, band, final)


# ------------------------------------------------------------------ reading it
def contestants(c: perturb.Curves, band: perturb.Curves | None) -> list[tuple[str, float, float]]:
    """(name, deletion AUC, insertion AUC) best first by insertion − deletion (ties by registry order).
    With a band, the one "random" map gives way to the random orders' mean, named RANDOM_ROW."""
    rows = [(n, float(d), float(i)) for n, d, i in zip(c.names, c.deletion_auc, c.insertion_auc)
            if band is None or n != methods.RANDOM.name]
    if band is not None:
        rows.append((RANDOM_ROW, float(band.deletion_auc.mean()), float(band.insertion_auc.mean())))
    order = np.argsort([-(i - d) for _, d, i in rows], kind="stable")
    return [rows[k] for k in order]


@dataclass(frozen=True)
class FillScore:
    """One fill's AUCs, as the verdict reads them (numbers only: the verdict is a pure function)."""

    fill: str
    names: tuple[str, ...]  # the maps, random excluded
    deletion: np.ndarray  # (M,) lower is better
    insertion: np.ndarray  # (M,) higher is better
    deletion_band: perturb.Spread  # the random orders'
    insertion_band: perturb.Spread


def fill_score(f: FillContest) -> FillScore:
    keep = [k for k, n in enumerate(f.curves.names) if n != methods.RANDOM.name]
    return FillScore(f.curves.mode, tuple(f.curves.names[k] for k in keep), f.curves.deletion_auc[keep],
                     f.curves.insertion_auc[keep], f.deletion_band, f.insertion_band)


def beats_random(s: FillScore) -> dict[str, tuple[str, str]]:
    """map -> (deletion, insertion) each 'better', 'within' or 'worse' than the random orders' band."""
    return {n: (perturb.against_band(float(d), s.deletion_band, False),
                perturb.against_band(float(i), s.insertion_band, True))
            for n, d, i in zip(s.names, s.deletion, s.insertion)}


def score_noise(deletion: perturb.Spread, insertion: perturb.Spread) -> float:
    """How far apart two maps' insertion − deletion AUCs may lie by chance on this photo: the sd of the
    difference of two random orders' insertion − deletion, sqrt(2 (sd_del² + sd_ins²)), twice the orders' sd
    when their two bands are one (read back). It follows the photo's own scale: on a weak prediction (a
    gradient's 3 % top-1) every AUC and the orders' spread are small together, and a fixed margin would
    either call every map level or rank differences that random orders make as well."""
    return float(np.sqrt(2.0 * (deletion.sd ** 2 + insertion.sd ** 2)))


# An AUC's spread below this is float rounding, not a spread: a fill that changes nothing the model sees (blur on
# a flat photo) gave random orders 0.02805368962 ± 0.00000000041, and eleven decimals on the screen.
SD_FLOOR = 1e-6


def auc_decimals(*sds: float) -> int:
    """The decimals an AUC is written with: three, or enough for the random orders' sd to show two
    significant digits. On a weak prediction (a gradient's 3 % top-1: AUCs near 0.01, sd 0.0006) three
    decimals wrote the band "0.012 ± 0.001" and two maps told apart by it as the same "0.015". A spread under
    SD_FLOOR is none (three decimals)."""
    small = min((x for x in sds if x > SD_FLOOR), default=0.0)
    return 3 if small <= 0 else max(3, 1 - math.floor(math.log10(small)))


def alike(deletion: np.ndarray, insertion: np.ndarray, deletion_band: perturb.Spread,
          insertion_band: perturb.Spread) -> bool:
    """Whether a fill changed nothing the model sees on this photo: the random orders' AUCs have no spread and
    every other order's (deletion, insertion) AUCs, (M,) each, are theirs (a blur of a flat photo is the photo).
    Its ranks are then nothing to read."""
    flat = max(deletion_band.sd, insertion_band.sd) <= SD_FLOOR
    return bool(flat and np.allclose(deletion, deletion_band.mean, rtol=0, atol=SD_FLOOR)
                and np.allclose(insertion, insertion_band.mean, rtol=0, atol=SD_FLOOR))


def unchanged(s: FillScore) -> bool:
    """alike, for one fill's maps."""
    return alike(s.deletion, s.insertion, s.deletion_band, s.insertion_band)


def tiers(rows: list[tuple[str, float, float]], noise: float) -> list[list[str]]:
    """contestants' rows (best first) -> the groups the contest tells apart, best first: a new group starts only
    where a row's insertion − deletion lies more than `noise` below the row just above it, so every ">" the
    ranking writes stands between two neighbours the contest tells apart. (Measured from a group's first row,
    a boundary once fell between two maps 0.007 apart with a noise of 0.064: "gradient rollout > class
    relevance", chelsea, trained ViT-Ti.) A group may then span more than `noise` end to end: each of its
    rows is within it of the next. One group means the contest cannot separate any neighbours on this photo."""
    out: list[list[str]] = []
    above = 0.0
    for name, d, i in rows:
        if out and above - (i - d) <= noise:
            out[-1].append(name)
        else:
            out.append([name])
        above = i - d
    return out


def wins(verdict: tuple[str, str]) -> bool:
    """A map's (deletion, insertion) against the band -> whether it beats random order: outside the
    band on the better side of one curve at least, and on the worse side of neither (a map better on
    insertion and worse on deletion is not said to beat chance)."""
    return "better" in verdict and "worse" not in verdict


def first_removed(m: np.ndarray, steps: int) -> np.ndarray:
    """(gh, gw) map -> the patch ids the deletion curve removes at its first step (the same
    order as perturb.faithfulness_curves: descending, ties by patch number)."""
    n = max(1, round(m.size / steps))
    return np.argsort(-m.ravel(), kind="stable")[:n]


@dataclass(frozen=True)
class ArtifactsFirst:
    """The artifact tokens among the patches each map removes first (Darcet et al. 2024)."""

    counts: dict[str, int]  # map -> how many of the first `first_n` patches it removes are artifact tokens
    first_n: int  # patches the deletion curve removes at its first step
    where: str  # the photo's artifact tokens, counted and placed ("" when it has none)


def artifacts_first(ph: Photo, c: Contest, maps: dict[str, np.ndarray], steps: int) -> ArtifactsFirst:
    """For the contest's maps (random excluded): the artifact tokens of any layer among the patches the
    first deletion step removes."""
    a = ph.analysis()
    art = art_mod.through_layers(artifact_masks(a, ph.derived))[-1].reshape(-1)  # (P,) any layer's artifacts
    counts = {n: int(art[first_removed(maps[n], steps)].sum()) for n in c.first.curves.names
              if n != methods.RANDOM.name and n in maps}
    n = int(art.sum())
    where = f"{n} artifact token{'s' if n != 1 else ''}: {art_mod.describe(art.reshape(a.geometry.grid))}"
    return ArtifactsFirst(counts, max(1, round(art.size / steps)), where if n else "")
