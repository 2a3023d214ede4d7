"""The lesson's sentences follow the numbers (vizvit/classroom/claims.py, issue 43 item 3): each rule on constructed
numbers, both the case where the numbers support the claim and the case where they do not."""

from __future__ import annotations

import numpy as np
import pytest

from vizvit.classroom import claims


def test_an_untrained_mask_token_is_said_first():
    source = "the [MASK] here is transformers' initial value, zeros, **never trained**"
    t = claims.mask_line(False, source, "Egyptian cat, x", 0.82, 0.31, 49, "tabby, tabby cat", False)
    assert t.startswith("**First: the [MASK] here is transformers' initial value, zeros, never trained.** So the")
    assert "not the learned masking of BERT or BEiT" in t
    assert t.index("never trained") < t.index("p(Egyptian cat) **82.00% → 31.00%** with 49 patches")
    assert "top-1 now **tabby**" in t
    trained = claims.mask_line(True, "the [MASK] token read from the checkpoint", "cat", 0.8, 0.7, 49, "cat", True)
    assert trained.startswith("p(cat) **80.00% → 70.00%**") and "First" not in trained
    assert trained.endswith("Here the [MASK] token read from the checkpoint.")


def test_the_mask_line_says_still_when_the_top_1_did_not_change():
    # The walk-through: p(Egyptian cat) 0.45 -> 0.30, Egyptian cat still first, and the line said "top-1 now
    # Egyptian cat" as if the answer had changed.
    kept = claims.mask_line(True, "masked by mask", "Egyptian cat", 0.45, 0.30, 49, "Egyptian cat", True)
    assert "top-1 still **Egyptian cat**." in kept and "now" not in kept
    moved = claims.mask_line(True, "masked by mask", "Egyptian cat", 0.45, 0.20, 49, "tabby, tabby cat", False)
    assert "top-1 now **tabby**." in moved and "still" not in moved
    # Two classes may share a first name (ImageNet's two "crane"s): a changed index still says "now".
    crane = claims.mask_line(True, "masked by mask", "crane", 0.6, 0.3, 49, "crane", False)
    assert "top-1 now **crane**." in crane


def test_a_cnn_is_claimed_to_hide_a_shift_only_when_its_own_sweep_shows_it():
    # Without a CNN measured: no sentence at all (it named the server's --cnn flag to students).
    assert claims.cnn_shift_sentence(None) == "" and claims.cnn_shift_sentence("microsoft/resnet-50") == ""
    ks = list(range(33))
    # A CNN whose p(top-1) moves from 0.90 to 0.62 at 7 px: not shift-invariant either.
    p = np.full(33, 0.90)
    p[1], p[7] = 0.88, 0.62
    t = claims.cnn_shift_sentence("microsoft/resnet-50", ks, p, 0.90)
    assert "not shift-invariant either" in t and "90.0% unshifted, 88.0% at 1 px, 62.0% at 7 px" in t
    assert "0–32 px" in t
    # One that stays within 1 %: here the pooling does hide it.
    t = claims.cnn_shift_sentence("microsoft/resnet-50", ks, np.full(33, 0.9) + np.linspace(0, 0.009, 33), 0.9)
    assert "barely moves" in t and "does hide the shift" in t


def test_survives_says_the_label_survives_and_the_probability_only_when_it_holds():
    # chelsea on the trained ViT-Ti: 0.82 -> 0.84 at 1 px, but 0.58 at 12 px in the sweep.
    sweep = [(0, 0.82), (1, 0.84), (4, 0.84), (8, 0.80), (12, 0.577), (16, 0.622), (32, 0.7)]
    t = claims.survives_sentence("Egyptian cat", 0.82, "Egyptian cat", 0.84, 1, sweep)
    assert "The top-1 label survives the 1-px shift (p(Egyptian cat) 82.0% → 84.0%)" in t
    assert "falls from 82.0% to **57.7% at 12 px**" in t and "not the model's confidence" in t
    # A probability that stays within 5 points everywhere: then it holds, and the sentence says so.
    flat = [(k, 0.8 + 0.01 * (k % 3)) for k in range(33)]
    t = claims.survives_sentence("cat", 0.8, "cat", 0.81, 1, flat)
    assert "stays between 80.0% and 82.0% at every shift of the sweep (0–32 px), within 5 percentage points" in t
    assert "falls" not in t and "within 5%" not in t  # points, never "5%", which reads as relative
    # A probability that rises past 5 points does not "stay within" either (text.png, a reviewer).
    t = claims.survives_sentence("web site", 0.035, "web site", 0.036, 1, [(0, 0.035), (10, 0.12), (18, 0.03)])
    assert "rises from 3.5% to **12.0% at 10 px**" in t and "stays" not in t
    assert "a shift of 10 px raises it by 8.5 percentage points" in t and "confidence" not in t  # its points
    # a quarter decided on the numbers shown: 20.0 % -> 15.0 % is a quarter (20.049 % -> 15.04 % read "a drop of
    # 5.0 percentage points, less than a quarter of 20.0%": a reviewer)
    t = claims.survives_sentence("cat", 0.20049, "cat", 0.20049, 1, [(0, 0.20049), (4, 0.1504)])
    assert "falls from 20.0% to **15.0% at 4 px**" in t and "not the model's confidence" in t and "less than" not in t
    # Another top-1: it does not survive.
    t = claims.survives_sentence("cat", 0.8, "dog", 0.4, 1, flat)
    assert t.startswith("The prediction does not survive") and "**dog**" in t
    # No sweep: the label only, the probability left open.
    assert "the top-1 label only" in claims.survives_sentence("cat", 0.8, "cat", 0.6, 1)
    # At two decimals (the lesson passes the Experiments tab's): every number written so, the quarter decided on
    # them: 20.05 % -> 15.04 % is a drop of 5.01 points, past the 5-point band, less than a quarter (5.0125).
    t = claims.survives_sentence("cat", 0.2005, "cat", 0.2005, 1, [(0, 0.2005), (4, 0.1504)], d=2)
    assert "(p(cat) 20.05% → 20.05%)" in t and "falls from 20.05% to **15.04% at 4 px**" in t, t
    assert "a drop of 5.01 percentage points, less than a quarter of 20.05%" in t, t
    t = claims.survives_sentence("cat", 0.8, "cat", 0.81, 1, flat, d=2)
    assert "stays between 80.00% and 82.00% at every shift of the sweep (0–32 px), within 5 percentage points of " \
           "80.00%" in t, t


def test_survives_says_the_label_is_lost_where_the_sweep_shows_another_top1():
    # rocket.jpg on the trained ViT-Ti: water tower holds at 1 px (37.1% -> 36.3%), but the sweep's top-1 is
    # missile at 3 px and drilling platform at 31 px; "the label survives" was said all the same.
    sweep = [(0, 0.371), (1, 0.363), (2, 0.372), (3, 0.284), (16, 0.17), (31, 0.021)]
    top1 = ["water tower", "water tower", "water tower", "missile", "drilling platform", "drilling platform"]
    t = claims.survives_sentence("water tower", 0.371, "water tower", 0.363, 1, sweep, top1)
    assert t.startswith("The top-1 label survives the 1-px shift")
    assert "**3 of its 6 shifts** (0–31 px) give another top-1, the first at 3 px (**missile**)" in t
    assert "2.1% (31 px)" in t and "37.2% (2 px)" in t
    assert "The label survives, not" not in t
    assert "Neither the label nor its probability holds" in t  # 37.2 % to 2.1 %: both moved
    # Two classes level, swapping first place while p(water tower) barely moves (36.9 % to 37.4 %): the label
    # does not hold, its probability does ("neither the label nor the confidence" was said of it).
    level = [(0, 0.371), (1, 0.369), (2, 0.374), (3, 0.370)]
    t = claims.survives_sentence("water tower", 0.371, "water tower", 0.369, 1, level, top1[:2] + ["missile"] * 2)
    assert "The label does not hold across shifts here, though p(water tower) stays within 5 percentage points" in t
    assert "Neither" not in t and "confidence" not in t and "within 5 percentage points of 37.1%" in t
    # moved past 5 points from the unshifted p, not apart from each other: 47 % to 53 % around 50 % holds
    t = claims.survives_sentence("cat", .50, "cat", .50, 0, [(0, .50), (4, .47), (8, .53), (12, .50)],
                                 ["cat", "dog", "cat", "cat"])
    assert "The label does not hold across shifts here, though p(cat) stays within 5" in t and "Neither" not in t
    # A sweep whose top-1 never changes keeps the old sentence.
    same = ["water tower"] * len(sweep)
    t = claims.survives_sentence("water tower", 0.371, "water tower", 0.363, 1, sweep, same)
    assert "The label survives, not the model's confidence" in t and "another top-1" not in t


def test_a_weak_prediction_is_held_to_a_quarter_of_itself_and_one_shown_value_is_said_once():
    """A flat grey photo on the trained ViT-Ti: "letter opener" at 2.5 % at every shift, and the step said "stays
    between 2.5% and 2.5% ..., within 5 percentage points of 2.5%", a band no fall (even to 0 %) could leave. Below
    20 % the band is a quarter of the unshifted probability; from 20 % up it stays 5 points (chelsea's 82.2 %)."""
    grey = [(k, 0.02479) for k in range(33)]
    t = claims.survives_sentence("letter opener", 0.02479, "letter opener", 0.02479, 1, grey)
    assert t.endswith("and p(letter opener) stays at 2.5% at every shift of the sweep (0–32 px)."), t
    assert "between" not in t and "5 percentage points" not in t
    # 2.5 % -> 0.0 %: all of it lost, which "within 5 percentage points of 2.5%" held
    t = claims.survives_sentence("letter opener", 0.025, "letter opener", 0.025, 1, [(0, 0.025), (7, 0.0004)])
    assert "falls from 2.5% to **0.0% at 7 px**" in t and "The label survives, not the model's confidence." in t, t
    # 2.5 % -> 1.9 %: 0.6 points, less than its quarter (0.625 points, by hand): it holds, and says which band
    t = claims.survives_sentence("letter opener", 0.025, "letter opener", 0.025, 1, [(0, 0.025), (3, 0.019)])
    assert "stays between 1.9% and 2.5% at every shift of the sweep (0–3 px), within a quarter of 2.5% (a " \
           "prediction under 20% is held to a quarter of itself, not to 5 percentage points)." in t, t
    # 2.5 % -> 3.2 %: +0.7 points, past its quarter: a rise, where 5 points held it
    t = claims.survives_sentence("letter opener", 0.025, "letter opener", 0.025, 1, [(0, 0.025), (5, 0.032)])
    assert "rises from 2.5% to **3.2% at 5 px**" in t and "raises it by 0.7 percentage points" in t, t
    # 10 % -> 7.0 %: 3 points, inside 5 but more than a quarter (2.5): falls
    t = claims.survives_sentence("cat", 0.10, "cat", 0.10, 1, [(0, 0.10), (9, 0.07)])
    assert "falls from 10.0% to **7.0% at 9 px**" in t and "not the model's confidence" in t, t
    # at 20 % the two bands meet: 4.9 points hold, "within 5 percentage points"
    t = claims.survives_sentence("cat", 0.20, "cat", 0.20, 1, [(0, 0.20), (9, 0.151)])
    assert "stays between 15.1% and 20.0%" in t and "within 5 percentage points of 20.0%." in t, t
    # the label lost while a weak probability stays in its quarter: said with the quarter
    t = claims.survives_sentence("cat", 0.04, "cat", 0.04, 1, [(0, 0.04), (2, 0.036)], ["cat", "dog"])
    assert "though p(cat) stays within a quarter of 4.0%" in t and "Neither" not in t, t
    t = claims.survives_sentence("cat", 0.04, "cat", 0.04, 1, [(0, 0.04), (2, 0.02)], ["cat", "dog"])
    assert "Neither the label nor its probability holds" in t, t
    # one shown value away from p0 (a sweep without its 0-px row): the band still said
    t = claims.survives_sentence("cat", 0.80, "cat", 0.80, 1, [(4, 0.81), (8, 0.8104)])
    assert "stays at 81.0% at every shift of the sweep (0–8 px), within 5 percentage points of 80.0%." in t, t
    assert claims.holds_band(82.2) == 5.0 and claims.holds_band(2.5) == 0.625  # by hand: min(5, 82.2/4), 2.5/4


def test_uniform_distance_is_the_mean_pair_distance_by_hand():
    # 2×2 grid of 16-px patches: 16 ordered pairs, 4 self (0), 8 sides (16), 4 diagonals (16·√2).
    want = (8 * 16 + 4 * 16 * np.sqrt(2)) / 16
    assert abs(claims.uniform_distance((2, 2), 16) - want) < 1e-9
    # 224 px, 14×14 grid: about 0.52 of the side (the mean distance of two points in a square), on the grid
    assert 110 < claims.uniform_distance((14, 14), 16) < 120


def test_early_heads_look_across_the_whole_photo_only_when_a_distance_says_so():
    uniform = claims.uniform_distance((14, 14), 16)  # ≈ 116 px
    # The trained ViT-Ti: the farthest layer-1 head at 95 px on a 224-px input: not the whole photo.
    t = claims.early_heads_sentence([21.0, 95.0, 40.0], 224, uniform, 16)
    assert t.startswith("No layer-1 head looks across the whole photo: the farthest, head 2, averages 95 px")
    assert "224-px input would give 116 px" in t and "nearest head stays at 21 px" in t
    t = claims.early_heads_sentence([21.0, 110.0, 40.0], 224, uniform, 16)
    assert t.startswith("Some layer-1 heads already look across the whole photo: head 2 at 110 px")
    local = claims.early_heads_sentence([20.0, 30.0, 25.0], 224, uniform, 16)
    assert local.startswith("Every layer-1 head stays local")
    # A plain gradient on the trained ViT-Ti: heads at 62, 69 and 28 px. "The farthest, head 2, averages 69 px,
    # well beyond its neighbours" read as beyond the other heads (head 1: 62 px); it meant a patch's neighbours.
    t = claims.early_heads_sentence([62.3, 68.8, 28.4], 224, uniform, 16)
    assert "its neighbours" not in t and "well beyond a patch's nearest neighbours (16 px away)" in t, t


def test_rollout_is_said_to_carry_the_decision_only_when_the_contest_says_so():
    # Not run: no claim either way.
    t = claims.rollout_claim(artifacts_top=5, top_n=5)
    assert "not shown by the map itself" in t and "rests on these" in t
    # said as a fact, never as a thing to do: a room's phones read this line (a walk-through's read "it has not
    # been run on it yet with 10 steps and the black fill"); the Lesson tab adds contest_not_run
    assert "no run of it on this photo is at hand" in t and "run it" not in t.lower() and "not been run" not in t
    assert claims.contest_not_run("10 steps and the black fill") == ("The contest has not been run on this photo "
                                                                     "with 10 steps and the black fill yet: run it "
                                                                     "on the Experiments tab to see what it finds.")
    assert "5 of its 5 brightest patches are artifact tokens" in t
    # One of five is one token (a walk-through, the panorama: "1 of its 5 brightest patches are artifact tokens").
    t = claims.rollout_claim(artifacts_top=1, top_n=5)
    assert "1 of its 5 brightest patches is an artifact token (high-norm" in t, t
    # chelsea, black fill: rollout last of 7 maps, below random order's row, within the band (issue 43).
    t = claims.rollout_claim(7, 7, ("within", "within"), "black", 0, 5)
    assert "ranks rollout 7th of its 7 maps, below random order's row, no better than random order" in t
    assert "not shown to be what" in t and "artifact" not in t
    # better on insertion, worse on deletion (chelsea's black fill on the trained ViT-Ti, measured by a
    # reviewer: deletion 0.596 past the band's top 0.537): once said "above random order on at least
    # one curve", as if a win.
    t = claims.rollout_claim(7, 7, ("worse", "better"), "black")
    assert "beats random order on insertion but does worse than it on deletion" in t and "not shown" in t
    t = claims.rollout_claim(3, 7, ("within", "better"), "blur", above_random=True)
    assert "3rd of its 7 maps, above random order's row; it beats random order on insertion only" in t
    assert "not shown" in t
    t = claims.rollout_claim(2, 7, ("worse", "within"), "blur")
    assert "does worse than random order on deletion: its bright patches are not what" in t
    # First, and a win on both curves: the only case that says the decision rests on them. Rank 1 alone
    # (rank is insertion − deletion) once said "takes the prediction away soonest": not what it measures.
    t = claims.rollout_claim(1, 7, ("better", "better"), "blur", above_random=True)
    assert "ranks rollout 1st of its 7 maps, above random order's row, and it beats random order on both" in t
    assert "the decision rests on them here" in t and "not shown" not in t and "soonest" not in t
    assert "rests on them" not in claims.rollout_claim(1, 7, ("within", "better"), "blur", above_random=True)


@pytest.mark.parametrize("k, said", [(1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th"), (12, "12th"),
                                     (13, "13th"), (21, "21st"), (22, "22nd"), (112, "112th")])
def test_ordinals_as_written(k, said):
    assert claims.nth(k) == said  # the Positions tab once said "every 3th row"


def test_the_one_pixel_shift_answer_follows_the_share_that_stays():
    # chelsea: 0 of 196 stay; a sky over its top 30 %: 42 of 196 (most change, a few stay; it was marked
    # "a few change, most stay"); the portrait test photo: 146 of 196; the PNG with alpha: 180 of 196.
    assert claims.stay_answer(0 / 196) == "none"
    assert claims.stay_answer(42 / 196) == "most"
    assert claims.stay_answer(146 / 196) == "few"
    assert claims.stay_answer(180 / 196) == "all"


def test_all_nearly_counts_the_vectors_nearly_the_same_and_the_rest_the_ones_exactly_the_same():
    # An upscaled 20×20 upload on the trained ViT-Ti: 0 of 196 the same (cos ≥ 0.9999), all 196 at cos ≥ 0.99,
    # was marked "None: every patch vector changes"; "All of them, nearly" speaks of nearly.
    assert claims.stay_answer(0 / 196, 196 / 196) == "all"
    assert claims.stay_answer(0 / 196, 177 / 196) == "all"  # 90.3 % nearly the same
    assert claims.stay_answer(0 / 196, 176 / 196) == "none"  # 89.8 %: the exact count decides
    assert claims.stay_answer(42 / 196, 60 / 196) == "most"
    assert claims.stay_answer(146 / 196, 150 / 196) == "few"
    said = claims.stay_rule(196, 196, 0.99)
    assert said.startswith("**196 of 196** nearly the same (cos ≥ 0.99") and "at least 90%" in said, said


def test_every_answer_of_the_one_pixel_step_is_an_option():
    from vizvit.classroom import lesson

    step = next(s for s in lesson.load_steps() if s.id == "shift1")
    got = {claims.stay_answer(k / 196) for k in range(197)}
    options = dict(step.options)  # (key, text) pairs
    assert got == {"none", "most", "few", "all"} and got <= set(options), options
    assert options["most"] == "Most change, a few stay"


def test_a_rank_the_contest_cannot_tell_from_its_neighbours_is_said_to_be_level_with_them():
    """The Experiments tab's ranking joins maps within the random orders' noise by ≈; the lesson's rollout step
    said "ranks rollout 3rd of its 7 maps, above random order's row" of a score within that noise of the 2nd
    map's and of random order's: a place and a side the contest cannot tell."""
    t = claims.rollout_claim(3, 7, ("within", "within"), "black", above_random=True, level_with=["attention"],
                             level_with_random=True, noise="0.064")
    assert ("ranks rollout 3rd of its 7 maps, a place it cannot tell from attention and random order's row "
            "(within 0.064 in insertion − deletion, as two random orders differ), no better than random") in t, t
    assert "above random order's row" not in t
    t = claims.rollout_claim(2, 7, ("better", "better"), "blur", above_random=True, level_with=["Grad-CAM", "AttnLRP"],
                             noise="0.050")
    assert "a place it cannot tell from Grad-CAM and AttnLRP (within 0.050" in t and "), above random order's row" in t
    t = claims.rollout_claim(7, 7, ("within", "within"), "black", level_with_random=True, noise="0.064")
    assert "cannot tell from random order's row (within 0.064" in t and "below random order's row" not in t


def test_four_or_more_maps_level_with_rollout_are_counted_not_listed():
    t = claims.rollout_claim(7, 7, ("within", "within"), "black", level_with=["a", "b", "c", "d", "e"],
                             level_with_random=True, noise="0.064")
    assert "a place it cannot tell from 5 of its other 6 maps and random order's row (within 0.064" in t, t
    assert "a, b" not in t


def test_survives_speaks_of_confidence_only_where_the_probability_loses_a_quarter():
    """coffee on the trained ViT-Ti: p(espresso) 91.2% unshifted, 81.2% at its lowest (10 px), yet the step said
    "The label survives, not the model's confidence" (any 5-point drop). A tenth of it lost: the drop and the
    lowest value are said, not a lost confidence. chelsea's 82.2% -> 56.1% (a third lost) keeps the sentence."""
    sweep = [(0, 0.912), (1, 0.898), (10, 0.812), (20, 0.85), (32, 0.9)]
    t = claims.survives_sentence("espresso", 0.912, "espresso", 0.898, 1, sweep)
    assert "confidence" not in t, t
    assert "falls from 91.2% to **81.2% at 10 px** (the shift sweep, 0–32 px), its lowest: a drop of 10.0 " \
           "percentage points, less than a quarter of 91.2%" in t, t
    assert "p(espresso) stays at 81.2% or more at every shift" in t
    assert min(p for _, p in sweep) >= 0.812 and 0.912 - 0.812 < 0.25 * 0.912  # the sentence's numbers, by hand
    cat = [(0, 0.822), (1, 0.838), (29, 0.561)]
    t = claims.survives_sentence("Egyptian cat", 0.822, "Egyptian cat", 0.838, 1, cat)
    assert "falls from 82.2% to **56.1% at 29 px**" in t and "The label survives, not the model's confidence." in t


def test_the_rollout_rank_is_told_with_the_contest_tables_own_rank_where_they_differ():
    """chelsea, black fill, trained ViT-Ti: the lesson said rollout "ranks 7th of its 7 maps" while the contest
    table on the same page ranked it 8th (random order's row is ranked too). Both are said where they differ;
    above random's row the two ranks are one, and nothing is added."""
    t = claims.rollout_claim(7, 7, ("within", "within"), "black", table=(8, 8))
    assert "ranks rollout 7th of its 7 maps (8th of the 8 rows of its table, random order's row among them)" in t, t
    t = claims.rollout_claim(1, 7, ("better", "better"), "blur", above_random=True, table=(1, 8))
    assert "ranks rollout 1st of its 7 maps, above random order's row" in t and "rows of its table" not in t, t


def test_the_depth_0_colours_are_said_to_follow_the_part_whose_variance_wins():
    """Step 3 said "similar patches got similar vectors" of colours that, on chelsea under the trained ViT-Ti, the
    positions make (18.42 of their variance against the content's 0.32). Now the part at least twice the other's is
    named, with both numbers; between, both show."""
    pos = claims.colour_claim(18.42, 0.32)
    assert "they follow the positions" in pos and "**18.42** from the positions, **0.32** from the patches' content" \
        in pos and "similar patches" not in pos, pos
    content = claims.colour_claim(2.53, 42.83)
    assert "they follow the content" in content and "similar patches got similar colours" in content, content
    both = claims.colour_claim(6.0, 10.0)
    assert "both show" in both and "similar patches" not in both and "follow" not in both, both
    assert "patch's vector plus its position's" in pos and "patch's vector plus its position's" in both


def test_rollouts_rest_is_put_on_the_tokens_in_front_by_name_or_count():
    """Step 13 said "the rest on the prefix tokens" of ViT-Ti's one [CLS]."""
    assert claims.rest_on(("[CLS]",)) == "the rest on [CLS]"
    assert claims.rest_on(("[CLS]", "[DIST]")) == "the rest on [CLS] and [DIST]"
    regs = ("[CLS]", "[REG1]", "[REG2]", "[REG3]", "[REG4]")
    assert claims.rest_on(regs) == "the rest on the 5 tokens in front, [CLS] to [REG4]"
    assert "prefix" not in claims.rest_on(()) and "no tokens in front" in claims.rest_on(())
