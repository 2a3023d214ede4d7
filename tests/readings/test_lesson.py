"""The lesson's numbers (vizvit/readings/lesson.py): the steps in the lecture's order, each checked
against what it names; the step's controls for a model; measures against the model's own numbers."""

from __future__ import annotations

import pytest
from tiny import EXAMPLES

from vizvit import vocab
from vizvit.classroom.lesson import Step
from vizvit.errors import UserError
from vizvit.readings import lesson as rl
from vizvit.session import PhotoKey, Workbench


@pytest.fixture(scope="module")
def photo(tiny16):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    return wb.handle(PhotoKey(tiny16.id, wb.add_photo(str(EXAMPLES / "chelsea.jpg"))))


def test_the_steps_follow_the_lectures_order_and_open_real_tabs():
    ids = [s.id for s in rl.steps()]
    assert ids == ["image", "patches", "conv", "cls", "positions", "mask", "dropout", "cost", "shift1", "shift16",
                   "survives", "distance", "rollout"]
    assert vocab.TAB_IDS.index("lesson") == vocab.TAB_IDS.index("lecture") - 1
    for s in rl.steps():
        assert s.view in vocab.TABS and s.view != "lesson"
        assert s.is_number or 2 <= len(s.options) <= 4


def test_the_centre_mask_is_the_middle_half_of_rows_and_columns(tiny16):
    g = tiny16.geometry  # 14×14
    want = tuple(r * 14 + c for r in range(3, 10) for c in range(3, 10))
    assert rl.centre_mask(g) == want
    mask_step = next(s for s in rl.steps() if s.id == "mask")
    assert tuple(rl.step_controls(mask_step, g)["mask"]) == want


def test_counting_steps_measure_the_models_own_numbers(photo):
    g = photo.vm.geometry
    by_id = {s.id: s for s in rl.steps()}
    assert rl.MEASURES["input_side"](photo, by_id["image"]).right == float(g.image_size[0]) == 224.0
    assert rl.MEASURES["tokens"](photo, by_id["cls"]).right == 197.0  # 196 patches + [CLS]
    assert rl.MEASURES["patches"](photo, by_id["patches"]).value == "196"
    rollout = rl.MEASURES["rollout"](photo, by_id["rollout"])
    assert 0 < float(rollout.value) <= 1 and rollout.right in ("most", "some")
    # one token in front, named (it said "the rest on the prefix tokens")
    assert "on the 196 patches; the rest on [CLS]. " in rollout.line, rollout.line


def test_a_step_naming_no_measure_or_no_tab_is_refused():
    s = rl.steps()[0]
    import dataclasses

    with pytest.raises(UserError, match="unknown measure"):
        rl.check_steps((dataclasses.replace(s, measure="nothing"),))
    with pytest.raises(UserError, match="cannot open the Camera tab"):
        rl.check_steps((dataclasses.replace(s, view="camera"),))
    assert isinstance(s, Step) and set(rl.STEP_TABS) < set(vocab.TABS)


def test_model_facts_have_one_truth_on_every_photo_and_a_photo_read_one_can_differ(tiny16):
    """MODEL_FACTS (a room's and the Lesson's truth "for this model"): the truth a student is judged by (the
    measured `right`, or the step's fixed answer) is the same on two photos and a flat grey picture; the
    1-pixel shift's (said "on this photo") is not: a flat picture's patches all stay, a photo's do not."""
    import numpy as np
    from PIL import Image

    from vizvit.classroom.lesson import MEASURED

    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    grey = Image.fromarray(np.full((200, 300, 3), 128, np.uint8))
    photos = [wb.handle(PhotoKey(tiny16.id, wb.add_photo(x)))
              for x in (str(EXAMPLES / "chelsea.jpg"), str(EXAMPLES / "coffee.jpg"), grey)]
    by_measure = {s.measure: s for s in rl.steps()}
    assert rl.MODEL_FACTS < set(by_measure) == set(rl.MEASURES)

    def truths(m: str) -> list:
        step = by_measure[m]
        return [rl.MEASURES[m](ph, step).right if step.answer == MEASURED else step.answer for ph in photos]

    for m in rl.MODEL_FACTS:
        assert len(set(truths(m))) == 1, (m, truths(m))
    assert len(set(truths("shift_stay"))) > 1 and "shift_stay" not in rl.MODEL_FACTS


def test_the_rollout_step_says_which_contest_it_found_not_run(tiny16):
    """The step reads the contest of the lesson's settings only (10 steps, black first). Run with others (3 steps,
    blur), the contest is on the Experiments tab for this photo, and the step said "it has not been run on it yet"
    beside it: it names the settings it looked for."""
    from vizvit.readings import contest
    from vizvit.views import lesson as lesson_view

    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    ph = wb.handle(PhotoKey(tiny16.id, wb.add_photo(str(EXAMPLES / "chelsea.jpg"))))
    step = next(s for s in rl.steps() if s.id == "rollout")
    contest.compute_contest(ph, 3, "blur")
    m = rl.MEASURES["rollout"](ph, step)
    # the line (what a room's phones read) tells nobody to run anything; the Lesson tab's hint names the settings
    assert "not been run" not in m.line and "run it" not in m.line.lower() and "no run of it" in m.line, m.line
    assert "has not been run" in m.tab_hint and "10 steps" in m.tab_hint and "black" in m.tab_hint, m.tab_hint
    revealed = lesson_view.reveal(ph, lesson_view.LessonParams(step=rl.steps().index(step) + 1, choice="most"))
    assert m.tab_hint in revealed.answer  # the Lesson tab says it, after the line
    contest.compute_contest(ph, 10, "black")  # the lesson's own: found, ranked
    m = rl.MEASURES["rollout"](ph, step)
    assert "no run of it" not in m.line and "ranks rollout" in m.line and m.tab_hint == "", m.line


def test_no_step_tells_a_room_of_students_it_measured_their_own_photo(photo):
    """A live room shows every step on the lecturer's photo: a student's phone read "On your photo, max |conv −
    unfold·W| = 4.59e-06" and "The model never sees your photo as you uploaded it" under a photo they never
    uploaded. The steps say "this photo" (the one shown beside them), on the Lesson tab and in a room alike."""
    by_id = {s.id: s for s in rl.steps()}
    parts = ("question", "meaning", "trained", "holds")
    texts = {f"{s.id}.{part}": getattr(s, part) for s in rl.steps() for part in parts}
    for sid in ("image", "patches", "conv", "cls"):  # the lines the room shows under the truth, measured on the photo
        texts[f"{sid}.line"] = rl.MEASURES[by_id[sid].measure](photo, by_id[sid]).line
    mine = {k: t for k, t in texts.items() if "your photo" in t.lower() or "you uploaded" in t.lower()}
    assert not mine, mine


def test_the_one_pixel_step_on_a_nearly_flat_upload_answers_all_nearly_on_trained_weights(trained):
    """A walk-through: a 20×20 upload (upscaled: nearly flat) read "0 of 196 patch vectors the same", mean cos
    0.998, every tile ".99", and the verdict "None: every patch vector changes" marked "All of them, nearly" wrong.
    That option speaks of nearly: once 90 % are nearly the same (cos ≥ 0.99) it is the answer, and the sentence
    says the count and the rule. Here: a 20×20 gradient with noise, 1 of 196 the same, all 196 nearly.
    chelsea keeps its answer: 0 the same and 15 nearly (none); coffee: 0 the same, 73 nearly (none)."""
    import numpy as np
    from PIL import Image

    wb = Workbench(device="cpu")
    wb.add_model(trained)
    step = next(s for s in rl.steps() if s.id == "shift1")
    y, x = np.mgrid[0:20, 0:20]
    noise = np.random.default_rng(0).integers(-20, 20, (20, 20, 3))
    small = Image.fromarray(np.clip(np.stack([x * 12, y * 12, 255 - x * 6 - y * 6], -1) + noise, 0, 255)
                            .astype(np.uint8))

    def measured(src) -> rl.Measured:
        return rl.MEASURES["shift_stay"](wb.handle(PhotoKey(trained.id, wb.add_photo(src))), step)

    flat = measured(small)
    assert flat.right == "all", flat.line
    assert "1 of 196 patch vectors the same (cos ≥ 0.9999). **196 of 196** nearly the same (cos ≥ 0.99" in flat.line
    assert "\"All of them, nearly\" is the answer when at least 90% are nearly the same" in flat.line, flat.line
    for name in ("chelsea.jpg", "coffee.jpg"):
        m = measured(str(EXAMPLES / name))
        assert m.right == "none" and "0 of 196 patch vectors the same" in m.line, (name, m.line)


def test_the_dropout_step_says_the_papers_p_and_this_checkpoints_own(trained):
    """Step 7 said "In training, dropout with p = 0.1 acts on the tokens", while the Embeddings tab says the trained
    ViT-Ti's config sets hidden_dropout_prob = 0. The question now names the ViT paper's p; the reveal's line
    reads the checkpoint's config (read here from its config.json, independently of the model's code)."""
    import json

    from tiny import trained_dir

    own = json.loads((trained_dir() / "config.json").read_text())["hidden_dropout_prob"]
    step = next(s for s in rl.steps() if s.id == "dropout")
    assert "In training, dropout with p = 0.1 acts" not in step.question
    assert "The ViT paper trained on ImageNet with dropout p = 0.1" in step.question
    wb = Workbench(device="cpu")
    wb.add_model(trained)
    ph = wb.handle(PhotoKey(trained.id, wb.add_photo(str(EXAMPLES / "chelsea.jpg"))))
    line = rl.MEASURES["dropout"](ph, step).line
    assert own == 0 and "This checkpoint's config sets hidden_dropout_prob = 0: it drops nothing even in train " \
        "mode; p here is the paper's." in line, line


def test_the_dropout_steps_truth_is_named_as_the_papers_p_not_this_models(tiny16):
    """A live room's walk-through: "The truth for this model: 10.2 (±3 counts as right)" over "This checkpoint's
    config sets hidden_dropout_prob = 0: it drops nothing". The 10.2 is this photo's tokens at the paper's p, so
    its label says that, with the step's own p (its controls); the other steps are named as before, by whether
    their truth is the model's alone."""
    g = tiny16.geometry
    label = {s.id: rl.truth_label(s, g) for s in rl.steps()}
    step = next(s for s in rl.steps() if s.id == "dropout")
    p = rl.step_controls(step, g)["dropout"]
    assert "for this model" not in label["dropout"].lower() and f"the paper's p = {p:g}" in label["dropout"]
    assert label["image"] == "The truth for this model" and label["shift1"] == "The truth on this photo"


def test_the_cost_steps_meaning_counts_its_tokens_as_its_numbers_do(photo):
    """A walk-through: the meaning said "224² pixel tokens against 197 patch tokens" while the reveal's numbers
    count 50,177 = 224² + [CLS] against 197: one side with [CLS], one without. The meaning's two token counts
    are now the square roots of the weights the step's line gives (n tokens make n² weights)."""
    import math
    import re

    from vizvit.classroom import lesson as lesson_mod

    step = next(s for s in rl.steps() if s.id == "cost")
    text = lesson_mod.fill(step.meaning, photo.vm.geometry)
    line = rl.MEASURES["cost"](photo, step).line
    weights = re.search(r"([\d,]+) weights for pixel tokens against ([\d,]+) for patch tokens", line)
    assert weights, line
    pix_w, patch_w = (int(x.replace(",", "")) for x in weights.groups())
    said = re.search(r"(\S+) pixel tokens against (?:[^:]*? )?(\S+) patch tokens", text)
    assert said, text
    assert (said[1], said[2]) == (f"{math.isqrt(pix_w):,}", f"{math.isqrt(patch_w):,}"), (text, line)
    assert "224² + 1 = 50,177 pixel tokens against 196 + 1 = 197 patch tokens (the + 1: [CLS]" in text, text


def _cosines(x):
    import numpy as np

    u = x / np.linalg.norm(x, axis=1, keepdims=True)
    return u @ u.T


def _contrast(sim, gh: int, gw: int) -> float:
    """By hand: the mean cosine of 4-neighbours minus that of pairs at least 5 apart (rows or columns)."""
    import numpy as np

    r, c = np.divmod(np.arange(gh * gw), gw)
    dr, dc = abs(r[:, None] - r[None]), abs(c[:, None] - c[None])
    return float(sim[dr + dc == 1].mean() - sim[np.maximum(dr, dc) >= 5].mean())


def test_the_position_step_tells_a_grid_table_from_a_sequence_one():
    """Step 5 answered "yes: rows and columns" for any table with neighbour contrast, and never "only along the
    sequence": a 1-D sinusoidal table (+0.33) would have been called a grid. A 2-D table built here (a bump on
    the row plus a bump on the column) and a 1-D sinusoid over the sequence each get their own answer; random
    vectors get "no"."""
    import numpy as np

    gh, gw, d = 14, 14, 192
    r, c = np.divmod(np.arange(gh * gw), gw)
    k = np.arange(14)
    grid_table = np.concatenate([np.exp(-(r[:, None] - k) ** 2 / 8.0), np.exp(-(c[:, None] - k) ** 2 / 8.0)], 1)
    ang = np.arange(gh * gw)[:, None] / 10000 ** (2 * np.arange(d // 2)[None] / d)
    seq_table = np.concatenate([np.sin(ang), np.cos(ang)], 1)
    rand = np.random.default_rng(0).normal(size=(gh * gw, d))
    rand_c = _contrast(_cosines(rand), gh, gw)
    answers = {}
    for name, table in (("grid", grid_table), ("sequence", seq_table), ("random", rand)):
        sim = _cosines(table)
        p = rl.grid_pairs(sim, (gh, gw))
        # the pairs by hand: (0,0)-(0,1), (0,0)-(1,0), (0,13)-(1,0)
        assert np.isclose(p.horizontal, np.mean([sim[i, i + 1] for i in range(196) if i % 14 != 13]))
        assert np.isclose(p.vertical, np.mean([sim[i, i + 14] for i in range(182)]))
        assert np.isclose(p.wrap, np.mean([sim[i * 14 + 13, i * 14 + 14] for i in range(13)]))
        answers[name] = rl.position_answer(_contrast(sim, gh, gw), rand_c, p)
    assert answers == {"grid": "yes", "sequence": "rows", "random": "no"}


def test_the_trained_vit_tis_positions_are_a_grid_with_the_pairs_that_show_it(trained):
    """On the trained ViT-Ti (read here from its safetensors): side-by-side 0.843, one above the other 0.849, a
    row's end with the next row's start 0.329: the step says "yes" and shows those three numbers."""
    import numpy as np
    from safetensors.numpy import load_file
    from tiny import trained_dir

    pe = load_file(str(trained_dir() / "model.safetensors"))["vit.embeddings.position_embeddings"][0, 1:]
    sim = _cosines(pe.astype(np.float64)).reshape(14, 14, 14, 14)
    h = np.mean([sim[i, j, i, j + 1] for i in range(14) for j in range(13)])
    v = np.mean([sim[i, j, i + 1, j] for i in range(13) for j in range(14)])
    w = np.mean([sim[i, 13, i + 1, 0] for i in range(13)])
    wb = Workbench(device="cpu")
    wb.add_model(trained)
    ph = wb.handle(PhotoKey(trained.id, wb.add_photo(str(EXAMPLES / "chelsea.jpg"))))
    m = rl.MEASURES["positions"](ph, next(s for s in rl.steps() if s.id == "positions"))
    assert m.right == "yes" and v > 0.8 and w < 0.4, m.line
    for x in (h, v, w):
        assert f"**{x:+.2f}**" in m.line, (x, m.line)
    # the wrap pair is (r, 13) with (r+1, 0): the ends of a row, not "a row apart"
    assert "(neighbours in the sequence, 13 columns apart in the picture)" in m.line, m.line
    # The comparisons at the Positions tab's 3 decimals (its table and titles: +0.326, +0.214, +0.003 here);
    # the step once wrote "+0.33 ... random init +0.00" beside the learned "+0.924".
    for name, want in (("1-D sinusoidal", "+0.326"), ("2-D sin-cos (MAE)", "+0.214"), ("random init", "+0.003")):
        assert f"{name} {want}" in m.line, m.line


@pytest.mark.parametrize(("name", "follows"), [("chelsea", "positions"), ("astronaut", "content")])
def test_the_conv_steps_colours_are_said_to_follow_what_makes_them_on_this_photo(trained, name, follows):
    """Step 3 said of the depth-0 PCA colours "similar patches got similar vectors"; on chelsea the positions make
    them (h18: 6.03/6.40/5.90 of each component's variance from the positions, 0.15/0.06/0.10 from the content).
    Here by hand from the checkpoint's own tensors: the conv (its weights) on the photo's model input plus the
    position table, a numpy SVD of the tokens, each part's variance along the first three directions."""
    import numpy as np
    import torch
    from safetensors.numpy import load_file
    from tiny import trained_dir

    w = load_file(str(trained_dir() / "model.safetensors"))
    wb = Workbench(device="cpu")
    wb.add_model(trained)
    ph = wb.handle(PhotoKey(trained.id, wb.add_photo(str(EXAMPLES / f"{name}.jpg"))))
    px = ph.analysis().pixel_values.reshape(1, 3, 224, 224).double()
    conv = torch.nn.functional.conv2d(px, torch.from_numpy(w["vit.embeddings.patch_embeddings.projection.weight"]
                                                           ).double(),
                                      torch.from_numpy(w["vit.embeddings.patch_embeddings.projection.bias"]).double(),
                                      stride=16)
    content = conv.flatten(2)[0].T.numpy()  # (196, 192)
    pos = w["vit.embeddings.position_embeddings"][0, 1:].astype(np.float64)
    x = content + pos
    vt = np.linalg.svd(x - x.mean(0), full_matrices=False)[2][:3]
    want_pos = float((pos @ vt.T).var(0, ddof=1).sum())
    want_content = float((content @ vt.T).var(0, ddof=1).sum())
    line = rl.MEASURES["conv"](ph, next(s for s in rl.steps() if s.id == "conv")).line
    assert f"**{want_pos:.2f}** from the positions, **{want_content:.2f}** from the patches' content" in line, line
    assert f"they follow the {follows}" in line, line
    assert ("similar patches got similar" in line) == (follows == "content"), line


def test_the_survives_step_counts_the_vectors_its_shift_changed_on_this_photo(tiny16):
    """Step 11 asked "After the 1-pixel shift the patch vectors changed (all but the flat ones)..." of a flat grey
    photo, where none changed. The question now states no count; the reveal's line counts the vectors the 1-px
    shift changed. Known answers: a flat photo changes none; noise changes all; flat up to 120 px, noise after,
    changes the 7 columns from 112 px on (98 of 196), the 7 flat columns before them keep theirs."""
    import numpy as np
    from PIL import Image

    step = next(s for s in rl.steps() if s.id == "survives")
    assert "changed" not in step.question and "flat" not in step.question, step.question
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    noise = np.random.default_rng(0).integers(0, 256, (224, 224, 3)).astype(np.uint8)
    half = np.full((224, 224, 3), 128, np.uint8)
    half[:, 121:] = noise[:, 121:]

    def line(pixels: np.ndarray) -> str:
        return rl.MEASURES["survives"](wb.handle(PhotoKey(tiny16.id, wb.add_photo(Image.fromarray(pixels)))),
                                       step).line

    assert line(np.full((224, 224, 3), 128, np.uint8)).startswith("The 1-px shift changed **0 of 196** patch vectors")
    assert line(noise).startswith("The 1-px shift changed **196 of 196** patch vectors")
    assert line(half).startswith("The 1-px shift changed **98 of 196** patch vectors")


def test_the_survives_step_on_a_flat_grey_photo_on_trained_weights(trained):
    """The reviewer's grey photo on the trained ViT-Ti: top-1 "letter opener" at 2.5 % at every shift. It read "the
    patch vectors changed (all but the flat ones)" and "stays between 2.5% and 2.5% ..., within 5 percentage points
    of 2.5%"."""
    import numpy as np
    from PIL import Image

    step = next(s for s in rl.steps() if s.id == "survives")
    wb = Workbench(device="cpu")
    wb.add_model(trained)
    ph = wb.handle(PhotoKey(trained.id, wb.add_photo(Image.fromarray(np.full((224, 224, 3), 128, np.uint8)))))
    m = rl.MEASURES["survives"](ph, step)
    assert m.line.startswith("The 1-px shift changed **0 of 196** patch vectors"), m.line
    # 0.02479 (the reviewer's plain-transformers number) at the Experiments tab's two decimals
    assert "stays at 2.48% at every shift of the sweep (0–32 px)." in m.line and "between" not in m.line, m.line
    assert m.right == "same"
