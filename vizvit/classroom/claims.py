"""The lesson's claims, each a pure function: this photo's numbers in, the sentence they support out.

A sentence that a step once said whatever the numbers (issue 43: "survives", "some early heads already
look across the whole photo", "its bright patches are what the decision rests on", "a CNN's pooling
hides such a shift", a [MASK] token that was never trained) is written here from the numbers, and says
less, or the opposite, when they do not support it. vizvit/views/lesson.py measures the numbers;
tests/classroom/test_claims.py holds each rule to constructed numbers. No model, no cache, no gradio.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# A probability "holds" under a shift while it stays within this of the unshifted one: absolute, so
# said as percentage points, never "within 5%" (read as relative). Below HOLDS / CONFIDENCE_FALLS (20 %) the band is
# a quarter of the unshifted probability instead, said as such (holds_band): a flat grey photo's "letter opener" at
# 2.5 % was "within 5 percentage points of 2.5%", a rule no fall, even to 0 %, breaks.
HOLDS = 0.05
# Past HOLDS the probability has moved, but "the model's confidence" falls only where it loses at least this share
# of itself at some shift: coffee's espresso, 91.2 % -> 81.2 % (a tenth of it), is still a confident answer and was
# called a lost confidence; chelsea's Egyptian cat, 82.2 % -> 56.1 % (a third), is one a reader calls less sure.
# Between the two the sentence gives the drop in points and the lowest value, and no word for it.
CONFIDENCE_FALLS = 0.25  # "a quarter" in the sentence
# A head "looks across the whole photo" when its mean distance reaches this share of what attention
# spread evenly over every patch gives (uniform_distance): 0.9, not 1, since no trained head is uniform.
WHOLE_PHOTO = 0.9
# "All of them, nearly" (the 1-px shift step) once at least this share of patch vectors is nearly the same.
ALL_NEARLY = 0.9
# The CNN's answer "moves" under the sweep when its probability changes by more than this.
CNN_MOVES = 0.01
# The depth-0 colours "follow" the positions (or the content) when that part's variance along the three colours
# is at least this many times the other's; between, both show. Trained ViT-Ti: chelsea's positions 18.42 against
# content 0.32, astronaut's 2.53 against 42.83, coffee's 6.21 against 16.99 (h18's review found chelsea's).
DOMINATES = 2.0


def _short(label: str) -> str:
    return label.split(",")[0]


def listed(names: Sequence[str]) -> str:
    """"a", "a and b", "a, b and c"."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def nth(k: int) -> str:
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


# ------------------------------------------------------------------ step "mask": the [MASK] token
def mask_line(trained: bool, source: str, label: str, p0: float, p1: float, n: int, top_now: str,
              kept: bool) -> str:
    """The [MASK] step's measured line. An untrained token (a classifier checkpoint has none: transformers'
    zeros) is said FIRST: the step then measures zeros in place of patches, not BERT-style masking.
    kept: the masked top-1 is the unshifted one (same class index; ImageNet has two "crane"s, so not the
    label): "top-1 still X", not "top-1 now X", which told a student the answer changed when it had not."""
    top = f"top-1 still **{_short(top_now)}**" if kept else f"top-1 now **{_short(top_now)}**"
    # Two decimals, as the Experiments tab's mask readout the step opens writes them (figures.prob_change).
    number = f"p({_short(label)}) **{p0:.2%} → {p1:.2%}** with {n} patches as [MASK]; {top}."
    if trained:
        return f"{number} Here {source}."
    return (f"**First: {source.replace('**', '')}.** So the number measures {n} patches replaced by one "
            "vector that was never trained (their position embeddings kept), not "
            f"the learned masking of BERT or BEiT. {number}")


# ------------------------------------------------------------------ step "shift1": a CNN under the same shift
def cnn_shift_sentence(cnn: str | None, shifts: Sequence[int] = (), probs: Sequence[float] | np.ndarray = (),
                       p0: float | None = None) -> str:
    """What a CNN does under a shift, for the step's reveal (and a room's phones). With one measured: its own
    sweep, probs[k] = p(its unshifted top-1) shifted shifts[k] px, p0 unshifted. Without one (the server runs no
    CNN): "" - the student reads about this photo and the ViT only. It said how a server is started (--cnn) and
    promised a comparison the page did not have: operator's words, meaningless to a student (a walk-through)."""
    if cnn is None or p0 is None or len(probs) == 0:
        return ""
    p = np.asarray(probs, float)
    k = int(np.argmax(np.abs(p - p0)))
    moved = float(abs(p[k] - p0))
    one = [q for s, q in zip(shifts, p) if s == 1]
    at1 = f"{one[0]:.1%} at 1 px, " if one else ""
    span = f"{min(shifts)}–{max(shifts)} px"
    if moved <= CNN_MOVES:
        return (f"The CNN beside it ({cnn}) barely moves on this photo: p(its top-1) {p0:.1%} unshifted, "
                f"{at1}within {CNN_MOVES * 100:.0f} percentage point over {span}: here its pooling does hide the "
                "shift.")
    return (f"The CNN beside it ({cnn}) is not shift-invariant either: p(its top-1) {p0:.1%} unshifted, {at1}"
            f"{p[k]:.1%} at {shifts[k]} px (the largest change over {span}; Azulay & Weiss 2019, "
            "Zhang 2019).")


# ------------------------------------------------------------------ step "shift1": how many vectors stay
def stay_answer(same: float, near: float = 0.0) -> str:
    """The shift1 step's right option from the shares of patch vectors that stay the same (cos >= SAME)
    and nearly the same (cos >= NEAR, the same ones among them) after a 1-px shift. "All of them, nearly"
    speaks of nearly: it is right when at least ALL_NEARLY of them are nearly the same (an upscaled 20×20
    upload: 0 of 196 the same, all 196 at cos >= 0.99, was marked "None: every patch vector changes").
    Otherwise the exact count decides: none stay, most change (a few stay), a few change (most stay). A
    photo with a flat band (a sky over 30 % of chelsea: 42 of 196 stay) was marked "a few change, most stay"."""
    if max(same, near) >= ALL_NEARLY:
        return "all"
    if same <= 0.01:
        return "none"
    return "most" if same < 0.5 else "few"


def stay_rule(near: int, total: int, near_cos: float) -> str:
    """The sentence after the count of vectors that stay the same: how many are nearly the same and the
    rule that picks the answer from the two counts (stay_answer), so a student can check it on the map."""
    return (f"**{near} of {total}** nearly the same (cos ≥ {near_cos:g}; a tile reading .99 or 1). "
            f"\"All of them, nearly\" is the answer when at least {ALL_NEARLY:.0%} are nearly the same; "
            "below that, the answer counts the ones exactly the same.")


# -------------------------------------------------- step "survives": top-1 against probability
def holds_band(shown0: float) -> float:
    """How far (percentage points) p(top-1) may move under a shift and still hold, from its unshifted value as
    shown (percent, one decimal): HOLDS, or a quarter of it (CONFIDENCE_FALLS) where that is less. The two meet at
    20 %: chelsea's 82.2 % keeps its 5 points; grey's 2.5 % gets 0.625, where 5 points held a fall to 0 %."""
    return min(HOLDS * 100, CONFIDENCE_FALLS * shown0)


def _within(p0: float, d: int = 1) -> str:
    """The band holds_band gives p0, in words a student can check against the shown numbers (d decimals of percent)."""
    shown0 = round(100 * p0, d)
    if holds_band(shown0) >= HOLDS * 100:
        return f"within {HOLDS * 100:.0f} percentage points of {p0:.{d}%}"
    return (f"within a quarter of {p0:.{d}%} (a prediction under {HOLDS / CONFIDENCE_FALLS:.0%} is held to a quarter "
            f"of itself, not to {HOLDS * 100:.0f} percentage points)")


def survives_sentence(label: str, p0: float, shifted_label: str, p_shifted: float, dx: int,
                      sweep: Sequence[tuple[int, float]] = (), sweep_top1: Sequence[str] = (), d: int = 1) -> str:
    """Whether the prediction survives the shift: the top-1 label, and its probability, which the
    sweep (k px, p(unshifted top-1)) may show falling even where the label holds. sweep_top1: the
    sweep's top-1 label at each of its shifts, in sweep's order (() when not known). Whether the probability
    holds is decided on the percentages as shown (d decimals: the lesson passes the Experiments tab's), so the
    sentence's numbers show it."""
    name = _short(label)
    if shifted_label != label:
        return (f"The prediction does not survive: after {dx} px the top-1 is **{_short(shifted_label)}**, "
                f"not {name}.")
    out = f"The top-1 label survives the {dx}-px shift (p({name}) {p0:.{d}%} → {p_shifted:.{d}%})"
    if len(sweep):
        k, low = min(sweep, key=lambda r: r[1])
        j, high = max(sweep, key=lambda r: r[1])
        span = f"0–{max(r[0] for r in sweep)} px"
        # The points as the rounded percentages differ, so a student's subtraction gives the same (20.049 % ->
        # 15.04 % read "a drop of 5.0 points, less than a quarter of 20.0%": a reviewer). A move of the band
        # itself leaves it: "within" is said only of less.
        shown0 = round(100 * p0, d)
        drop, rise = round(shown0 - round(100 * low, d), d), round(round(100 * high, d) - shown0, d)
        band = holds_band(shown0)
        falls, rises = drop > 0 and drop >= band, rise > 0 and rise >= band
        # The label held at dx, but the sweep may show it lost at other shifts (rocket.jpg on the
        # trained ViT-Ti: "missile" at 3 px), where "the label survives" would be false.
        lost = [(s, top) for (s, _), top in zip(sweep, sweep_top1) if top != label]
        if lost:
            # "Neither the label nor the confidence" only where the probability moves past the band too: the label
            # can change hands while its probability barely moves (two classes level, swapping first place).
            return (out + f"; not across the sweep: **{len(lost)} of its {len(sweep)} shifts** ({span}) give "
                    f"another top-1, the first at {lost[0][0]} px (**{_short(lost[0][1])}**), and p({name}) "
                    f"ranges from {low:.{d}%} ({k} px) to {high:.{d}%} ({j} px). "
                    + ("Neither the label nor its probability holds across shifts here." if falls or rises else
                       f"The label does not hold across shifts here, though p({name}) stays {_within(p0, d)}."))
        if falls:
            falls_ = (out + f"; its probability does not hold across shifts: p({name}) falls from {p0:.{d}%} to "
                      f"**{low:.{d}%} at {k} px** (the shift sweep, {span})")
            if drop >= CONFIDENCE_FALLS * shown0:
                return falls_ + ". The label survives, not the model's confidence."
            return (falls_ + f", its lowest: a drop of {drop:.{d}f} percentage points, less than a quarter of "
                    f"{p0:.{d}%}. The label survives, and p({name}) stays at {low:.{d}%} or more at every shift.")
        if rises:
            # said as a rise of the probability, not of "confidence" (CONFIDENCE_FALLS reads a fall only)
            return (out + f"; its probability does not hold across shifts: p({name}) rises from {p0:.{d}%} to "
                    f"**{high:.{d}%} at {j} px** (the shift sweep, {span}): a shift of {j} px raises it by "
                    f"{rise:.{d}f} percentage points.")
        if f"{low:.{d}%}" == f"{high:.{d}%}":
            # "between 2.5% and 2.5%" (a flat grey photo): one value shown, said once
            same = out + f", and p({name}) stays at {low:.{d}%} at every shift of the sweep ({span})"
            return same + ("." if f"{low:.{d}%}" == f"{p0:.{d}%}" else f", {_within(p0, d)}.")
        return out + (f", and p({name}) stays between {low:.{d}%} and {high:.{d}%} at every shift of the sweep "
                      f"({span}), {_within(p0, d)}.")
    return out + " (the top-1 label only: the probability is a separate question)."


# ------------------------------------------------------------------ step "distance": how far early heads look
def uniform_distance(grid: tuple[int, int], patch: int) -> float:
    """Mean distance in px between two patch centres drawn independently over the grid (self pairs
    included): the distance of a head whose attention is spread evenly over every patch."""
    gh, gw = grid
    r, c = np.divmod(np.arange(gh * gw), gw)
    d = np.hypot(r[:, None] - r[None, :], c[:, None] - c[None, :])
    return float(d.mean() * patch)


def early_heads_sentence(layer1: Sequence[float] | np.ndarray, side: int, uniform: float, patch: int) -> str:
    """What layer 1's heads do, from their mean distances (px): 'across the whole photo' only for a head
    at WHOLE_PHOTO of `uniform` (attention spread over every patch) or more. patch: the patch side (px),
    the distance to a patch's nearest neighbours, which a head halfway to `uniform` reaches well beyond."""
    d = np.asarray(layer1, float)
    far, near = float(d.max()), float(d.min())
    h = int(d.argmax()) + 1
    ref = f"attention spread evenly over the {side}-px input would give {uniform:.0f} px"
    if far >= WHOLE_PHOTO * uniform:
        return (f"Some layer-1 heads already look across the whole photo: head {h} at {far:.0f} px ({ref}); "
                f"the nearest head at {near:.0f} px.")
    if far >= 0.5 * uniform:
        return (f"No layer-1 head looks across the whole photo: the farthest, head {h}, averages "
                f"{far:.0f} px ({ref}), well beyond a patch's nearest neighbours ({patch} px away); the nearest "
                f"head stays at {near:.0f} px.")
    return f"Every layer-1 head stays local: {near:.0f}–{far:.0f} px ({ref})."


# -------------------------------------------------- step "rollout": does the decision rest on it?
def contest_not_run(looked_for: str) -> str:
    """The Lesson tab's sentence beside rollout_claim when no contest of the settings looked for was run: its
    reader can run it (a room's phones cannot, and never read it). looked_for: '10 steps and the black fill'
    (one run with others may be on the tab)."""
    return (f"The contest has not been run on this photo with {looked_for} yet: run it on the Experiments tab "
            "to see what it finds.")


def rollout_claim(rank: int | None = None, of: int = 0, versus: tuple[str, str] = ("within", "within"),
                  fill: str = "", artifacts_top: int = 0, top_n: int = 0, above_random: bool = False,
                  level_with: Sequence[str] = (), level_with_random: bool = False,
                  noise: str = "", table: tuple[int, int] | None = None) -> str:
    """Whether rollout's bright patches are what the decision rests on: only the faithfulness contest
    measures that, so without it the sentence claims nothing. rank: rollout's place among `of` maps
    by insertion − deletion AUC (random order's row not counted), above_random: whether it ranks above
    that row; versus: its (deletion, insertion) against the random orders' band, each 'better',
    'within' or 'worse'. level_with: the maps the contest cannot tell rollout from (insertion − deletion
    within `noise` of rollout's, as two random orders differ), level_with_random: random order's row among
    them (the tab's ranking line then names neither side of it). artifacts_top of its top_n brightest
    patches are artifact tokens. Not run (rank None), it says so without asking anyone to run it: a room's
    phones read this line and cannot (contest_not_run is the Lesson tab's sentence that can). table:
    rollout's (rank, rows) in the contest's table, which ranks random order's row too: said beside the rank
    among the maps where the two differ (chelsea, black fill: 7th of its 7 maps, 8th of the table's 8 rows,
    and a student compares the lesson with the table)."""
    out = []
    if rank is None:
        out.append("Whether the model's decision rests on these bright patches is not shown by the map "
                   "itself: only the faithfulness contest (Experiments tab) tests it, and no run of it on this "
                   "photo is at hand to quote.")
    else:
        d, i = versus
        good, other = ("deletion", "insertion") if d == "better" else ("insertion", "deletion")
        said = f"On this photo the faithfulness contest ({fill} fill) ranks rollout {nth(rank)} of its {of} maps"
        if table is not None and table[0] != rank:
            said += f" ({nth(table[0])} of the {table[1]} rows of its table, random order's row among them)"
        # A place within the noise of others is no place.
        # Most of the table named one by one is a list to wade through: counted instead
        maps = list(level_with) if len(level_with) < 4 else [f"{len(level_with)} of its other {of - 1} maps"]
        level = [*maps, *(["random order's row"] if level_with_random else [])]
        if level:
            said += (f", a place it cannot tell from {listed(level)} (within {noise} in insertion − deletion, "
                     "as two random orders differ)")
        if not level_with_random:
            said += f", {'above' if above_random else 'below'} random order's row"
        if d == i == "better":
            out.append(f"{said}, and it beats random order on both curves: removing its bright patches first "
                       "lowers the prediction sooner than a random order does, and adding them back first "
                       "raises it sooner, so the decision rests on them here.")
        elif "better" in versus and "worse" not in versus:
            out.append(f"{said}; it beats random order on {good} only ({other} within the band): partly "
                       "supported, not shown to be what the decision rests on.")
        elif "better" in versus:
            out.append(f"{said}; it beats random order on {good} but does worse than it on {other}: its bright "
                       "patches are not shown to be what the decision rests on.")
        elif "worse" in versus:
            bad = " and ".join(c for c, x in (("deletion", d), ("insertion", i)) if x == "worse")
            out.append(f"{said}, and does worse than random order on {bad}: its bright patches are not what "
                       "the decision rests on here.")
        else:
            out.append(f"{said}, no better than random order on either curve: its bright patches are not "
                       "shown to be what the decision rests on.")
    if artifacts_top:
        are = "is an artifact token" if artifacts_top == 1 else "are artifact tokens"
        out.append(f"{artifacts_top} of its {top_n} brightest patches {are} (high-norm scratch "
                   "space, Darcet et al. 2024), not the object.")
    return " ".join(out)


def colour_claim(position_var: float, content_var: float) -> str:
    """What the depth-0 PCA colours follow on this photo. Each depth-0 patch token is its patch's vector (the
    matrix's) plus its position's; position_var and content_var are the variances of the two parts along the
    colours' three directions, summed. "Similar patches got similar colours" is said only where the content wins."""
    nums = (f"variance along the colours' three directions: **{position_var:.2f}** from the positions, "
            f"**{content_var:.2f}** from the patches' content")
    head = "The colours are the tokens' three main directions, and each token is its patch's vector plus its position's"
    if position_var >= DOMINATES * content_var:
        return (f"{head}; on this photo they follow the positions ({nums}): they paint where a patch is more than "
                "what it shows.")
    if content_var >= DOMINATES * position_var:
        return f"{head}; on this photo they follow the content ({nums}): similar patches got similar colours."
    return f"{head}; on this photo both show ({nums}): a colour mixes what a patch shows and where it is."


def rest_on(prefix_names: Sequence[str]) -> str:
    """Where rollout's share not on the patches lands, named: "[CLS]" on a ViT, "[CLS] and [DIST]" on DeiT, a count
    past three names (DINOv2 with registers: "the 5 tokens in front, [CLS] to [REG4]"); it said "the prefix tokens"
    of ViT-Ti's one [CLS]."""
    n = len(prefix_names)
    if not n:
        return "this model has no tokens in front of the patches"
    if n <= 3:
        return f"the rest on {listed(list(prefix_names))}"
    return f"the rest on the {n} tokens in front, {prefix_names[0]} to {prefix_names[-1]}"
