"""The Lesson's numbers: what each step of vizvit/classroom/lesson.toml measures on this photo (MEASURES),
with the readings the step's own tab uses, formatted as that tab writes it (the tests find each number
in the tab's own text), and the lesson's steps, read and checked once. vizvit.views.lesson shows them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from vizvit.classroom import claims, lesson as lesson_mod
from vizvit.classroom.lesson import Step, summary_name
from vizvit.classroom.numbers import attention_cost
from vizvit.errors import UserError
from vizvit.model.engine import embedding_stage, mask_token
from vizvit.model.images import View
from vizvit.model.models import Geometry
from vizvit.model.patches import patch_tokens
from vizvit.model.tokens import dropout_check, fitted_rows, pca_without
from vizvit.pictures import figures
from vizvit.readings import (
    artifacts_rule as art_mod,
    attention as ra,
    contest,
    embeddings,
    methods,
    perturb,
    positions,
    sweep,
)
from vizvit.readings.artifacts import artifact_masks
from vizvit.session import Photo
from vizvit.vocab import DEFAULT_DROPOUT, TABS

# The tabs a step's reveal may open (each has a view with a Params and a `show`: vizvit.views.lesson).
STEP_TABS = ("patches", "embeddings", "attention", "positions", "experiments", "inside", "lecture")
SAME = 0.9999  # a patch vector "stays the same" when its cosine with its partner reaches this
# ... and "nearly the same" from this on: the cosine map's tiles then read .99 or 1 (two decimals, cut)
NEAR = 0.99
# The depth-0 tokens are conv + positions to this share of their largest entry (float32: ~1e-7); past it the
# stage does more (a norm) and the colours' parts are not measured
EXACT = 1e-4


@dataclass(frozen=True)
class Measured:
    """A step's number on this photo."""

    value: str  # the number as the step's tab writes it (found in the tab's text: tests check)
    line: str  # one sentence saying what was measured, with the number in bold
    right: str | float  # the right option's key, or the right number (a number question)
    # What the Lesson tab's reader may do next (run the contest): said after the line on the tab only. A room
    # shows the line alone: its phones cannot act on it (a walk-through read "it has not been run on it yet").
    tab_hint: str = ""


def centre_mask(g: Geometry) -> tuple[int, ...]:
    """The patches of the middle half of the rows and of the columns (a 7×7 block of a 14×14 grid)."""
    (gh, gw) = g.grid
    rows = range(gh // 4, gh // 4 + max(1, gh // 2))
    cols = range(gw // 4, gw // 4 + max(1, gw // 2))
    return tuple(r * gw + c for r in rows for c in cols)


def step_controls(step: Step, g: Geometry) -> dict[str, Any]:
    """The step's controls for this model: its numbers put in, mask = "centre" made the patch list."""
    c = lesson_mod.controls_for(step, g)
    if c.get("mask") == "centre":
        c["mask"] = centre_mask(g)
    return c


# ------------------------------------------------------------------ what the steps measure
def _input_side(ph: Photo, step: Step) -> Measured:
    h, w = ph.vm.geometry.image_size
    return Measured(f"(1, 3, {h}, {w})", f"The model-input view is **{h}×{w} pixels**: input shape (1, 3, {h}, {w}).",
                    float(h))


def _patches(ph: Photo, step: Step) -> Measured:
    g = ph.vm.geometry
    p = g.patch_size
    return Measured(f"{g.num_patches:,}", f"**{g.num_patches:,} patches** ({g.grid[0]}×{g.grid[1]}) of {p}×{p}×3 = "
                    f"**{p * p * 3:,} numbers** each.", step.answer)


def colour_parts(ph: Photo) -> tuple[float, float] | None:
    """(position, content): the variances of the depth-0 patch tokens' two parts, the patch's vector (the conv's)
    and the rest (its position's), along the Embeddings tab's three PCA colours at depth 0 (fitted as the tab fits
    them: without that depth's high-norm tokens), summed over the three. None where the rest is not the position
    alone: the forward's tokens differ from conv + positions (a family with a norm in the stage)."""
    a, g = ph.analysis(), ph.vm.geometry
    x = patch_tokens(a.hidden_states, g)[0].double().numpy()  # (P, D) the depth-0 patch tokens
    if embedding_stage(ph.vm, a).embed_vs_forward > EXACT * (1.0 + float(np.abs(x).max())):
        return None
    content = a.patch_embeddings.double().numpy()  # (P, D) the conv's output
    ex = art_mod.high_norm_at_depth(a.hidden_states, g)[0].reshape(-1)
    fit, keep = pca_without(x, ex, 3), fitted_rows(ex, len(x), 3)

    def var(part: np.ndarray) -> float:
        return float((part[keep] @ fit.components.T).var(0, ddof=1).sum())

    return var(x - content), var(content)


def _colours(ph: Photo) -> str:
    """What the conv step's picture (the depth-0 PCA colours) follows on this photo."""
    head = "The colours are the tokens' three main directions"
    if not ph.vm.family.has_position_table:
        return f"{head}: {ph.vm.family.title} adds no position to the tokens, so similar patches got similar colours."
    parts = colour_parts(ph)
    if parts is None:
        return (f"{head}; each token is its patch's vector plus its position's, changed further by the stage (its "
                "tokens are not their sum here).")
    return claims.colour_claim(*parts)


def _conv(ph: Photo, step: Step) -> Measured:
    d = embedding_stage(ph.vm, ph.analysis()).conv_vs_linear
    return Measured(f"{d:.2e}", f"On this photo, **max |conv − unfold·W| = {d:.2e}**: float32 rounding. "
                    f"{_colours(ph)}", step.answer)


def _tokens(ph: Photo, step: Step) -> Measured:
    g = ph.vm.geometry
    names = " ".join(g.prefix_names) or "no prefix token"
    return Measured(f"{g.seq_len:,}", f"**{g.seq_len:,} tokens**: {names} + {g.num_patches:,} patches.",
                    float(g.seq_len))


@dataclass(frozen=True)
class GridPairs:
    """Mean cosine of three kinds of pairs of patch positions, which tell a 2-D table from a 1-D one."""

    horizontal: float  # (r, c) with (r, c+1): neighbours in the picture and in the sequence
    vertical: float  # (r, c) with (r+1, c): neighbours in the picture, a row's length apart in the sequence
    wrap: float  # a row's last with the next row's first: neighbours in the sequence, a row's ends in the picture


def grid_pairs(sim: np.ndarray, grid: tuple[int, int]) -> GridPairs:
    """sim: (P, P) cosines of the patch positions, row-major on a gh×gw grid (gh, gw >= 2)."""
    gh, gw = grid
    i = np.arange(gh * gw).reshape(gh, gw)
    pairs = {"horizontal": (i[:, :-1], i[:, 1:]), "vertical": (i[:-1], i[1:]), "wrap": (i[:-1, -1], i[1:, 0])}
    return GridPairs(**{k: float(np.asarray(sim, np.float64)[a.ravel(), b.ravel()].mean())
                        for k, (a, b) in pairs.items()})


def position_answer(contrast: float, random_contrast: float, p: GridPairs) -> str:
    """"no": no more neighbour contrast than random embeddings (+0.1); else "yes" (rows and columns) when the
    picture's vertical neighbours are more alike than the sequence's neighbours across a row's end, "rows"
    (along the sequence only) when the other way round: a 1-D table ranks pairs by their distance in the
    sequence (the wrap pair is 1 apart, the vertical one a row's length), a 2-D one by their distance in the
    picture (the vertical pair is 1 apart, the wrap pair a row's length)."""
    if not contrast > random_contrast + 0.1:
        return "no"
    return "yes" if p.vertical > p.wrap else "rows"


# Why the pairs point to the measured answer (none for "no": the contrast, beside random's, says that)
POSITION_VERDICT = {"yes": ": alike as neighbours in the picture, not in the sequence",
                    "rows": ": alike as neighbours in the sequence, not in the picture"}


def _positions(ph: Photo, step: Step) -> Measured:
    if ph.vm.family.has_bias_table and not ph.vm.family.has_position_table:
        raise UserError(f"{ph.vm.family.title} has no position table (a relative bias in every attention instead): "
                        "see its bias tables on the Positions tab.")
    if not ph.vm.family.has_positions:
        raise UserError(f"This {ph.vm.family.title} has no position table to measure. {ph.vm.family.pe_text}")
    rep = positions.report(ph.vm, ph.per_model)
    c = rep.contrasts
    learned, base = c["learned"], [(k, c[k].shown()[2]) for k in c if k != "learned"]
    p = grid_pairs(rep.sim, rep.grid)
    right = position_answer(learned.contrast, c["random init"].contrast, p)
    others = ", ".join(f"{k} {v}" for k, v in base)  # as the Positions tab writes them (Contrast.shown)
    gw = rep.grid[1]
    near, far, contrast = learned.shown()  # the contrast as the difference of the parts written beside it
    return Measured(contrast, "Neighbour contrast of the learned positions: "
                    f"**{contrast}** (neighbours {near}, far {far}); "
                    f"for comparison {others}. Mean cosine of side-by-side neighbours **{p.horizontal:+.2f}**, "
                    f"of neighbours one above the other ({gw} apart in the sequence) "
                    f"**{p.vertical:+.2f}**, of a row's last patch and the next row's first (neighbours in the "
                    f"sequence, {gw - 1} columns apart in the picture) **{p.wrap:+.2f}**"
                    f"{POSITION_VERDICT.get(right, '')}.", right)


def _classifier(ph: Photo) -> None:
    if not ph.vm.has_classifier:
        raise UserError("This model has no classifier (no top-1 class): pick a model with a head for this step.")


def _mask(ph: Photo, step: Step) -> Measured:
    _classifier(ph)
    c = step_controls(step, ph.vm.geometry)
    mask, mode = tuple(c.get("mask", ())), c.get("mode", "mask")
    base = ph.analysis()
    a = ph.analysis(View(mask=mask, mask_mode=mode))
    assert a.probs is not None  # a classifier (checked above)
    b0 = base.top5[0]
    now = float(a.probs[b0.index])
    tok = mask_token(ph.vm) if mode == "mask" else None
    trained, how = (tok.trained, tok.source) if tok is not None else (True, f"masked by {mode}")
    kept = a.top5[0].index == b0.index
    # Written as the tab's mask readout writes it (two decimals): the reveal quotes that number.
    line = claims.mask_line(trained, how, b0.label, b0.prob, now, len(mask), a.top5[0].label, kept)
    return Measured(figures.fixed_percent(now), line, "stays" if kept else "changes")


def _dropout(ph: Photo, step: Step) -> Measured:
    p = float(step_controls(step, ph.vm.geometry).get("dropout", DEFAULT_DROPOUT))
    c = dropout_check(ph.analysis().hidden_states[0], p)
    cfg = embeddings.config_dropout(ph.vm)
    # The step's p is the ViT paper's; this checkpoint may have been trained with another (the AugReg ViT-Ti: 0).
    own = ("Its config sets no such dropout." if cfg is None else
           f"This checkpoint's config sets hidden_dropout_prob = {cfg:g}"
           + (": it drops nothing even in train mode; p here is the paper's." if cfg == 0 else
              "." if cfg == p else f", not the paper's {p:g}."))
    return Measured(f"{c.zeros_train:.1%}", f"Train mode, p = {p:g}: **{c.zeros_train:.1%}** of the tokens' "
                    f"numbers are zero (before: {c.zeros_before:.1%}); survivors × {c.scale:.4f} = 1/(1−p). "
                    "Eval mode changed "
                    f"**{c.eval_changed}** numbers. {own}", round(100 * c.zeros_train, 1))


def _cost(ph: Photo, step: Step) -> Measured:
    c = step_controls(step, ph.vm.geometry)
    # This model's prefix tokens on both sides (SigLIP none, DINOv2 with registers 5), as {tokens} counts them
    cost = attention_cost(int(c["side"]), int(c["side"]), int(c["patch"]), ph.vm.geometry.num_prefix_tokens)
    return Measured(f"{cost.ratio:,.0f}×", f"{cost.pixel_weights:,} weights for pixel tokens against "
                    f"{cost.patch_weights:,} for patch tokens: **{cost.ratio:,.0f}× more**.", step.answer)


def _shift_cosines(ph: Photo, step: Step) -> tuple[np.ndarray, int, int]:
    c = step_controls(step, ph.vm.geometry)
    dx, dy = int(c.get("dx", 0)), int(c.get("dy", 0))
    g = ph.vm.geometry
    fill = c.get("fill", "edge")
    base, a = ph.analysis(), ph.analysis(View(dx=dx, dy=dy, fill=fill))
    return perturb.shift_cosine(base.patch_embeddings, a.patch_embeddings, dx, dy, g, wrap=fill == "wrap"), dx, dy


def _shift_line(cos: np.ndarray, dx: int, dy: int) -> tuple[str, float]:
    mean, low = perturb.cos_summary(cos)
    finite = cos[np.isfinite(cos)]
    same = float((finite >= SAME).mean()) if finite.size else 0.0
    return (f"Shift ({dx}, {dy}) px: **mean cos {mean:.3f}**, min {low:.3f}; {int((finite >= SAME).sum())} of "
            f"{finite.size} patch vectors the same (cos ≥ {SAME})."), same


def _shift_stay(ph: Photo, step: Step) -> Measured:
    """How many patch vectors stay the same: none / most change / few change / all (claims.stay_answer)."""
    cos, dx, dy = _shift_cosines(ph, step)
    line, same = _shift_line(cos, dx, dy)
    finite = cos[np.isfinite(cos)]
    near = int((finite >= NEAR).sum())
    line += " " + claims.stay_rule(near, finite.size, NEAR)
    mean, _ = perturb.cos_summary(cos)
    cnn = _cnn_sentence(ph)
    return Measured(f"mean cos {mean:.3f}", f"{line} {cnn}" if cnn else line,
                    claims.stay_answer(same, near / finite.size if finite.size else 0.0))


def _cnn_sentence(ph: Photo) -> str:
    """The CNN's own sweep beside the ViT's vectors when the app has one (--cnn; the Experiments tab's cached
    sweep), else "": no sentence about a CNN that is not there."""
    ks = list(range(2 * ph.vm.geometry.patch_size + 1))
    cnn = sweep.cnn_probs(ph, ks)
    if cnn is None:
        return claims.cnn_shift_sentence(None)
    cnn_id, probs = cnn
    return claims.cnn_shift_sentence(cnn_id, ks, probs, float(probs[0]))  # k = 0 is the unshifted photo


def _shift_change(ph: Photo, step: Step) -> Measured:
    """How many patch vectors change: none / half / all."""
    cos, dx, dy = _shift_cosines(ph, step)
    line, same = _shift_line(cos, dx, dy)
    mean, _ = perturb.cos_summary(cos)
    changed = 1.0 - same
    return Measured(f"mean cos {mean:.3f}", line, "none" if changed <= 0.01 else "all" if changed >= 0.9 else "half")


def _changed(ph: Photo, step: Step) -> str:
    """How many patch vectors the step's shift changed on this photo (cos < SAME with their partner): the question
    said "the patch vectors changed (all but the flat ones)" of a flat grey photo, where none did."""
    cos, dx, dy = _shift_cosines(ph, step)
    finite = cos[np.isfinite(cos)]
    moved = f"{dx}-px" if not dy else f"({dx}, {dy})-px"
    return (f"The {moved} shift changed **{int((finite < SAME).sum())} of {finite.size}** patch vectors "
            f"(cos < {SAME} with their partner).")


def _survives(ph: Photo, step: Step) -> Measured:
    _classifier(ph)
    c = step_controls(step, ph.vm.geometry)
    base = ph.analysis()
    a = ph.analysis(View(dx=int(c.get("dx", 0)), dy=int(c.get("dy", 0)), fill=c.get("fill", "edge")))
    t, b = a.top5[0], base.top5[0]
    rows = sweep.full_sweep(ph).rows  # cached: the tab's own sweep
    shifts = [(r.k, r.base_class_prob) for r in rows]
    # The Experiments tab's decimals (its shift line and chart: figures.fixed_percent), so the step's numbers are
    # the ones that tab shows: "21.0%" here read "21.00%" there.
    pct, d = figures.fixed_percent, figures.CHANGE_DECIMALS
    return Measured(pct(t.prob), f"{_changed(ph, step)} Shifted: top-1 **{t.label.split(',')[0]} {pct(t.prob)}**; "
                    f"unshifted: {b.label.split(',')[0]} {pct(b.prob)}. "
                    + claims.survives_sentence(b.label, b.prob, t.label, t.prob, int(c.get("dx", 0)), shifts,
                                              [r.top1_label for r in rows], d),
                    "same" if t.index == b.index else "other")


def _distance(ph: Photo, step: Step) -> Measured:
    d = ra.distances(ph.analysis(), ph.derived).numpy()  # (L, H) px
    L = d.shape[0]
    h = int(d[-1].argmax())
    first, last = float(d[0].mean()), float(d[-1].mean())
    right = "nearer" if last > 1.1 * first else "farther" if first > 1.1 * last else "same"
    each = lambda row: ", ".join(f"{v:.1f}" for v in row)  # noqa: E731
    g = ph.vm.geometry
    early = claims.early_heads_sentence(d[0], g.image_size[0], claims.uniform_distance(g.grid, g.patch_size),
                                         g.patch_size)
    return Measured(f"layer {L} · head {h + 1} · {d[-1, h]:.1f} px",
                    f"Mean attention distance, layer 1: {each(d[0])} px (mean **{first:.1f}**); layer {L}: "
                    f"{each(d[-1])} px (mean **{last:.1f}**). {early}", right)


def _rollout(ph: Photo, step: Step) -> Measured:
    a = ph.analysis()
    g = ph.vm.geometry
    r = ra.rollout_maps(a, cache=ph.derived)[-1]  # (gh, gw), mean, no discard: the cached maps.mean_rollout
    s = float(r.sum())
    # The family's summary ([CLS]; BEiT's patch mean; SigLIP's MAP head), as the map is read from it
    rest = claims.rest_on(g.prefix_names)
    claim, hint = _rollout_claim(ph, r)
    return Measured(f"{s:.4f}", f"After layer {g.num_layers}, **{s:.4f}** of {summary_name(g)}'s rolled-out "
                    f"attention is on the {g.num_patches} patches; {rest}. {claim}",
                    "most" if s > 0.5 else "some", hint)


ROLLOUT_TOP = 5  # the brightest patches the rollout step checks for artifact tokens
# The contest the rollout step reads (the Experiments tab's first settings): one run with others is not found,
# and the step says which it looked for (it said "not run yet" beside the tab's verdict of a 3-step blur run).
CONTEST_STEPS, CONTEST_FILL = 10, "black"


def _rollout_claim(ph: Photo, r: Any) -> tuple[str, str]:
    """What the contest says of rollout on this photo, if it has been run (never run here: minutes),
    and how many of the map's brightest patches are artifact tokens; and the tab's hint ("" once run)."""
    a = ph.analysis()
    art = art_mod.through_layers(artifact_masks(a, ph.derived))[-1].reshape(-1)  # (P,)
    top = np.argsort(-np.asarray(r, np.float64).ravel(), kind="stable")[:ROLLOUT_TOP]
    n_art = int(art[top].sum())
    ct = contest.peek_contest(ph, CONTEST_STEPS, CONTEST_FILL)
    rollout = methods.ROLLOUT.name
    if ct is None or rollout not in ct.first.curves.names:
        return (claims.rollout_claim(artifacts_top=n_art, top_n=ROLLOUT_TOP),
                claims.contest_not_run(f"{CONTEST_STEPS} steps and the {CONTEST_FILL} fill"))
    rows = [n for n, _, _ in contest.contestants(ct.first.curves, ct.first.band)]
    maps = [n for n in rows if n != contest.RANDOM_ROW]  # the ranks said are among the maps alone
    above = contest.RANDOM_ROW not in rows or rows.index(rollout) < rows.index(contest.RANDOM_ROW)
    score = contest.fill_score(ct.first)
    versus = contest.beats_random(score)[rollout]
    # The rows the contest cannot tell rollout from: insertion − deletion within the random orders' noise of its own
    # (the tab's ranking line joins such neighbours by ≈)
    noise = contest.score_noise(score.deletion_band, score.insertion_band)
    scores = {n: i - d for n, d, i in contest.contestants(ct.first.curves, ct.first.band)}
    level = [n for n in rows if n != rollout and abs(scores[n] - scores[rollout]) <= noise]
    dec = contest.auc_decimals(score.deletion_band.sd, score.insertion_band.sd)
    return claims.rollout_claim(maps.index(rollout) + 1, len(maps), versus, ct.first.curves.mode, n_art,
                                ROLLOUT_TOP, above, level_with=[n for n in level if n != contest.RANDOM_ROW],
                                level_with_random=contest.RANDOM_ROW in level, noise=f"{noise:.{dec}f}",
                                table=(rows.index(rollout) + 1, len(rows))), ""


MEASURES: dict[str, Callable[[Photo, Step], Measured]] = {
    "input_side": _input_side, "patches": _patches, "conv": _conv, "tokens": _tokens, "positions": _positions,
    "mask": _mask, "dropout": _dropout, "cost": _cost, "shift_stay": _shift_stay, "shift_change": _shift_change,
    "survives": _survives, "distance": _distance, "rollout": _rollout}


# The measures whose truth is the same on every photo: the model's geometry and position table, and what
# its patch embedding and dropout do whatever the pixels (conv = linear, a whole-patch shift changes no
# vector, dropout's share of zeros). A room and the Lesson tab say "for this model", not "on this photo"
# (a lecturer's walk-through: "224 on this photo" told the class that another photo might give another side).
MODEL_FACTS = frozenset({"input_side", "patches", "conv", "tokens", "positions", "dropout", "cost", "shift_change"})


def truth_label(s: Step, g: Geometry | None) -> str:
    """How a reveal names a step's truth: the step's own words where it gives them (the dropout step's
    number is the paper's p on this photo's tokens, not what this checkpoint does), else by its measure."""
    if s.truth:
        return lesson_mod.fill(s.truth, g)
    return "The truth for this model" if s.measure in MODEL_FACTS else "The truth on this photo"


def check_steps(steps: tuple[Step, ...]) -> tuple[Step, ...]:
    """Every step names a measurement that exists and a view that is a tab with a Params."""
    for s in steps:
        if s.measure not in MEASURES:
            raise UserError(f"Lesson step {s.id!r}: unknown measure {s.measure!r} ({', '.join(MEASURES)}).")
        if s.view not in STEP_TABS:
            raise UserError(f"Lesson step {s.id!r}: the lesson cannot open the {TABS.get(s.view, s.view)} tab.")
    return steps


_STEPS: tuple[Step, ...] | None = None


def steps() -> tuple[Step, ...]:
    """The lesson's steps (read and checked once)."""
    global _STEPS
    if _STEPS is None:
        _STEPS = check_steps(lesson_mod.load_steps())
    return _STEPS


