"""The Lesson tab's view (vizvit/views/lesson.py) and its steps (vizvit/classroom/lesson.toml,
vizvit/classroom/lesson.py): every step's question needs no photo, its reveal measures this photo, its number is the
one the step's own tab shows for the step's controls, and its picture is that tab's own picture."""

from __future__ import annotations

import numpy as np
import pytest
from tiny import EXAMPLES

from vizvit.classroom import lesson as lesson_mod
from vizvit.errors import UserError
from vizvit.readings import lesson as rl
from vizvit.session import PhotoKey, Workbench
from vizvit.views import lesson


@pytest.fixture(scope="module")
def photo(tiny16):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    return wb.handle(PhotoKey(tiny16.id, wb.add_photo(str(EXAMPLES / "chelsea.jpg"))))


def test_every_step_opens_a_tab_view_with_a_params():
    assert set(lesson.TAB_VIEWS) == set(rl.STEP_TABS)
    for s in rl.steps():
        assert lesson.params_class(s.view).__name__.endswith("Params")


def test_every_question_shows_without_a_photo():
    for n in range(1, len(rl.steps()) + 1):
        page = lesson.show(None, lesson.LessonParams(step=n))
        assert page.step == n and f"Step {n} of" in page.header and "photo" in page.header
    assert lesson.show(None, lesson.LessonParams(step=99)).step == len(rl.steps())  # clamped, not an error


@pytest.mark.parametrize("n", range(1, 14))
def test_each_steps_number_is_the_one_its_tab_shows(photo, n):
    s = rl.steps()[n - 1]
    m = rl.MEASURES[s.measure](photo, s)
    tab = lesson.tab_page(photo, s)  # the tab's own show, with the step's controls
    shown = lesson.text_of(getattr(tab, s.field))
    assert m.value in shown, (s.id, m.value, shown[:400])
    r = lesson.reveal(photo, lesson.LessonParams(step=n, dont_know=True))
    assert m.line in r.answer and r.view == s.view
    if s.picture:
        assert np.array_equal(r.picture, getattr(tab, s.picture)), f"{s.id}: the reveal's picture is not the tab's"
    assert "untrained" not in r.answer  # the tiny model comes from a checkpoint: no warning


def test_on_random_weights_a_step_that_needs_training_says_so_and_what_still_holds():
    import vizvit

    wb = Workbench(device="cpu")
    vm = vizvit.load_model("random:vit-tiny-patch16-224", device="cpu")
    wb.add_model(vm)
    ph = wb.handle(PhotoKey(vm.id, wb.add_photo(str(EXAMPLES / "chelsea.jpg"))))
    for n, s in enumerate(rl.steps(), 1):
        if s.trained:
            r = lesson.reveal(ph, lesson.LessonParams(step=n, dont_know=True))
            assert "untrained" in r.answer and lesson_mod.fill(s.holds, vm.geometry) in r.answer, s.id


def test_a_right_and_a_wrong_answer(photo):
    n = [s.id for s in rl.steps()].index("patches") + 1
    right = lesson.reveal(photo, lesson.LessonParams(step=n, choice="b"))
    wrong = lesson.reveal(photo, lesson.LessonParams(step=n, choice="a"))
    assert right.answer.startswith("✓") and wrong.answer.startswith("✗") and "196 patches of 768" in wrong.answer
    # The option's own capital starts a sentence ("on this photo, About 65,000× more" read oddly).
    # The patch count is the model's, the same on every photo (readings.lesson.MODEL_FACTS): "For this model".
    assert wrong.answer.startswith("✗ **Not quite**. For this model: **"), wrong.answer
    m = [s.id for s in rl.steps()].index("mask") + 1  # read on this photo
    wrongs = [a for a in (lesson.reveal(photo, lesson.LessonParams(step=m, choice=c)).answer
                          for c in ("stays", "changes")) if a.startswith("✗")]
    assert len(wrongs) == 1 and wrongs[0].startswith("✗ **Not quite**. On this photo: **"), wrongs
    d = [s.id for s in rl.steps()].index("dropout") + 1  # a percentage, not counts: "counts as right"
    assert "(±3 counts as right)." in lesson.reveal(photo, lesson.LessonParams(step=d, number=50)).answer
    k = [s.id for s in rl.steps()].index("cls") + 1
    assert lesson.reveal(photo, lesson.LessonParams(step=k, number=197)).answer.startswith("✓")
    assert lesson.reveal(photo, lesson.LessonParams(step=k, number=196)).answer.startswith("✗")


def test_the_reveal_waits_for_a_prediction_or_i_dont_know(photo):
    """Predict before the reveal: an empty answer measures nothing and asks for one; "I don't know"
    reveals the answer without a verdict; a typed 0 is an answer (not an empty box)."""
    for n, s in enumerate(rl.steps(), 1):
        empty = lesson.reveal(photo, lesson.LessonParams(step=n))
        assert not empty.revealed and empty.picture is None, s.id
        assert "prediction first" in empty.answer and "I don't know" in empty.answer
        m = rl.MEASURES[s.measure](photo, s)
        assert m.line not in empty.answer and "The answer" not in empty.answer, s.id
    d = [s.id for s in rl.steps()].index("dropout") + 1  # a percentage, not counts: "counts as right"
    assert "(±3 counts as right)." in lesson.reveal(photo, lesson.LessonParams(step=d, number=50)).answer
    k = [s.id for s in rl.steps()].index("cls") + 1
    told = lesson.reveal(photo, lesson.LessonParams(step=k, dont_know=True))
    assert told.revealed and told.answer.startswith("The answer: **197**")
    assert lesson.reveal(photo, lesson.LessonParams(step=k, number=0)).answer.startswith("✗")
    assert lesson.LessonParams.from_controls({"step": 2, "choice": None, "number": None}).answered is False


def test_a_lecturer_can_reorder_and_drop_steps_and_mistakes_are_named(tmp_path):
    text = lesson_mod.LESSON_FILE.read_text(encoding="utf-8")
    blocks = text.split("[[step]]")
    swapped = "[[step]]".join([blocks[0], blocks[3], blocks[1]])  # conv, then image; the rest dropped
    steps = lesson_mod.parse_steps(swapped)
    assert [s.id for s in steps] == ["conv", "image"]
    with pytest.raises(UserError, match="step 1 \\(x\\): view 'nowhere' is not a tab"):
        lesson_mod.parse_steps('[[step]]\nid="x"\ntitle="t"\nquestion="q"\nview="nowhere"\nmeasure="tokens"\n'
                               'field="numbers"\nmeaning="m"\nnumber=true\n')
    with pytest.raises(UserError, match="answer 'z' is not one of its options"):
        lesson_mod.parse_steps('[[step]]\nid="x"\ntitle="t"\nquestion="q"\nview="patches"\nmeasure="tokens"\n'
                               'field="numbers"\nmeaning="m"\noptions={a="1", b="2"}\nanswer="z"\n')
    p = tmp_path / "mine.toml"
    p.write_text(swapped, encoding="utf-8")
    assert [s.id for s in lesson_mod.load_steps(p)] == ["conv", "image"]


def test_the_qr_code_is_the_links_modules(photo):
    url = "http://127.0.0.1:7860/?lesson=1&step=3&example=chelsea"
    img = lesson.qr_picture(url, module=4)
    assert img.shape[0] == img.shape[1] and set(np.unique(img)) <= {0, 255}
    import segno

    m = np.array(segno.make(url, error="m", micro=False).matrix, dtype=bool)
    got = img[16::4, 16::4, 0][:m.shape[0], :m.shape[1]] == 0  # one pixel per module, past the quiet zone
    assert np.array_equal(got, m)


def test_a_rooms_invitation_gives_phones_their_address_and_keeps_the_key_out_of_the_query():
    """The Lesson tab's 'Open a room for this class' (issue 45): the students' link at the address a
    phone reaches (here the LAN's, the page being on loopback), its QR code decoding to that link, and
    the host view's link on the lecturer's own address with the key in the fragment (no server log)."""
    import cv2

    from vizvit.launch import phone_address

    page = "http://127.0.0.1:7860/?lesson=1&step=3"
    inv = lesson.room_invite("K7QX2", "secret-key", page, phone_address(page, "0.0.0.0", lan="192.168.1.20"))
    assert inv.students == "http://192.168.1.20:7860/room?code=K7QX2"
    assert inv.host == "http://127.0.0.1:7860/room?host=1&code=K7QX2#key=secret-key"
    assert "Room K7QX2" in inv.text and "192.168.1.20" in inv.text and f"]({inv.host})" in inv.text
    text, _, _ = cv2.QRCodeDetector().detectAndDecode(inv.qr)
    assert text == inv.students
    here = "http://127.0.0.1:7860"
    alone = lesson.room_invite("K7QX2", "k", here, phone_address(here, "127.0.0.1"))
    assert "no phone can open this QR code" in alone.text  # honest about loopback, as the lesson's QR
    assert alone.host.startswith("http://127.0.0.1:7860/room?host=1")



def test_a_kept_room_is_a_code_and_a_host_key_and_nothing_else():
    import json

    from vizvit.views.lesson import kept_room, saved_room

    key = "Zq3_-" + "a" * 17  # secrets.token_urlsafe(16)'s alphabet and length

    def kept(**fields: object) -> str:
        return json.dumps(fields)

    assert json.loads(saved_room("ABCD2345", key)) == {"code": "ABCD2345", "host_key": key}
    assert kept_room(kept(code="ABCD2345", host_key=key)) == ("ABCD2345", key)
    assert kept_room(kept(host_key=key, code="abcd 2345")) == ("ABCD2345", key)  # as a student types it
    for bad in [None, 7, "", "null", "[1,2]", "{}", "x" * 5000, "{" * 150, kept(code="ABCD2345"),
                kept(code="ABCD2345", host_key=7), kept(code="ABCD0345", host_key=key),
                kept(code="<b>ABCD2345", host_key=key), kept(code="ABCD2345", host_key="short"),
                kept(code="ABCD2345", host_key="a" * 65), kept(code="ABCD2345", host_key="a/b" + key),
                kept(code="ABCD2345", host_key=key, more=1), '{"code":NaN,"host_key":"%s"}'.replace("%s", key),
                kept(code="ABCD2345", host_key=key + "\n"), kept(code="A" * 40, host_key=key),
                kept(code="ABCD2345", host_key=key + " " * 200)]:
        assert kept_room(bad) is None, repr(bad)[:60]


def test_an_answer_that_is_no_number_is_refused_with_a_sentence():
    """The number box's value is the caller's to send: float() of text or a dict in from_controls was
    "Something went wrong" and a traceback in the log."""
    assert lesson.LessonParams.from_controls({"number": "2.5"}).number == 2.5
    for bad in ("f" * 40, {"a": 1}, [1], "1,5"):
        with pytest.raises(UserError, match="Your answer is a number"):
            lesson.LessonParams.from_controls({"number": bad})
    # Gradio's Number passes its payload on as it came: a JSON int past a float's range overflowed float()
    # (a traceback again), and "nan", "inf" or true were taken as answers ("you said nan")
    for bad in (10 ** 400, -10 ** 400, "nan", "inf", "-1e999", float("nan"), True):
        with pytest.raises(UserError, match="Your answer is a number"):
            lesson.LessonParams.from_controls({"number": bad})
    assert lesson.LessonParams.from_controls({"number": 10 ** 6}).number == 1e6


def _shift1_reveal(ph) -> str:
    n = [s.id for s in rl.steps()].index("shift1") + 1
    return lesson.reveal(ph, lesson.LessonParams(step=n, dont_know=True)).answer


def test_the_one_pixel_shift_speaks_of_a_cnn_only_when_one_runs_and_then_with_its_numbers(tiny16, tmp_path):
    """A lecturer's walk-through: without a CNN, step 9's reveal told students about the server's --cnn flag and
    that a CNN's shift is "measured when the app runs one beside the ViT": operator's words, and a comparison the
    page did not have. Without one, the student reads this photo's patch vectors under the ViT only; with one, the
    CNN's own numbers (p of its unshifted top-1 at 0 and 1 px, here from a hand-made forward and a hand-made shift)."""
    import torch
    from transformers import ResNetConfig, ResNetForImageClassification

    from vizvit.model.cnn import load_cnn

    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    ph = wb.handle(PhotoKey(tiny16.id, wb.add_photo(str(EXAMPLES / "chelsea.jpg"))))
    text = _shift1_reveal(ph)
    assert "of 196 patch vectors the same" in text, text  # this photo, the ViT: its 14×14 patches
    for operator in ("CNN", "--cnn", "server", "beside the ViT", "measured when"):
        assert operator not in text, f"without a CNN the student reads {operator!r}: {text}"

    torch.manual_seed(0)
    ResNetForImageClassification(ResNetConfig(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1],
                                              layer_type="basic", num_labels=5)).save_pretrained(tmp_path)
    wb.cnn = load_cnn(str(tmp_path), device="cpu")
    view = ph.analysis().input_view  # (224, 224, 3) uint8, what the ViT saw
    shifted = np.concatenate([view[:, :1], view[:, :-1]], axis=1)  # 1 px right, the left column repeated (edge)
    mean, std = torch.tensor(wb.cnn.mean).view(1, 3, 1, 1), torch.tensor(wb.cnn.std).view(1, 3, 1, 1)

    def probs(v: np.ndarray) -> torch.Tensor:
        x = (torch.from_numpy(np.ascontiguousarray(v)).permute(2, 0, 1).float()[None] / 255 - mean) / std
        with torch.no_grad():
            return wb.cnn.model(pixel_values=x).logits.softmax(-1)[0]

    top1 = int(probs(view).argmax())
    p0, p1 = float(probs(view)[top1]), float(probs(shifted)[top1])
    text = _shift1_reveal(ph)
    assert f"({wb.cnn.id})" in text and f"{p0:.1%} unshifted, {p1:.1%} at 1 px" in text, (p0, p1, text)
    assert "--cnn" not in text and "measured when" not in text, text


def test_previous_leads_nowhere_on_the_first_step_and_next_nowhere_on_the_last():
    """On step 1 "← previous" was on and a click drew step 1 again (a walk-through): the page says where each
    button leads, counted here from the lesson's own steps."""
    last = len(lesson_mod.load_steps())  # the lesson file's own steps
    ends = {n: lesson.show(None, lesson.LessonParams(step=n)) for n in (1, 2, last - 1, last)}
    assert (ends[1].has_previous, ends[1].has_next) == (False, True)
    assert (ends[2].has_previous, ends[2].has_next) == (True, True)
    assert (ends[last - 1].has_previous, ends[last - 1].has_next) == (True, True)
    assert (ends[last].has_previous, ends[last].has_next) == (True, False)
    assert lesson.show(None, lesson.LessonParams(step=last + 5)).has_next is False, "a step past the end is the last"


def test_the_distance_steps_picture_is_said_to_be_the_summarys_rows_not_what_the_distance_reads(photo):
    """Step 12 said its grid is drawn "from the same attention weights the distances are measured on", but the grid
    shows [CLS]'s row of each head while the distance averages the patch queries' rows with [CLS] left out
    (ViT paper Fig. 7). Checked on the step's own tab: its grid reads [CLS]'s row (the step sets no query), and
    the meaning says so and says the distance reads the patches' rows."""
    s = next(s for s in rl.steps() if s.id == "distance")
    p = lesson.tab_params(s, photo.vm.geometry)
    assert s.picture == "grid" and p.query is None and p.direction == "row", "the grid: the summary's row"
    text = lesson.meaning(s, photo.vm)
    assert "the same attention weights the distances are measured on" not in text
    assert "each head's map read from [CLS]" in text and "each patch's own row" in text, text
    assert "the grid shows where [CLS] looks; the distance, how far a patch reaches on average" in text, text
    # true of every summary: BEiT's patch mean is itself the mean of the patch rows the distance reads, and
    # SigLIP's MAP head is read through each layer's matrix (a reviewer: "other rows", "what it attends to")
    assert "other rows" not in text and "attends to in each head" not in text
