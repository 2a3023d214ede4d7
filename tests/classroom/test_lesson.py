"""The lesson's file (vizvit/classroom/lesson.py): TOML steps parsed and checked (each mistake named with its
step), a step's text and controls filled with a model's numbers worked out by hand for ViT-B/16 at
224 px. The steps as the Lesson tab shows them are tested in tests/views/test_lesson.py."""

from __future__ import annotations

import pytest

from vizvit.classroom import lesson
from vizvit.errors import UserError
from vizvit.model.models import Geometry

VIT_B16 = Geometry(image_size=(224, 224), patch_size=16, grid=(14, 14), num_prefix_tokens=1, num_layers=12,
                   num_heads=12, hidden_size=768)
BASE = ('id="{id}"\ntitle="t"\nquestion="q"\nview="patches"\nmeasure="tokens"\nfield="numbers"\n'
        'meaning="""m  spaced\n out"""\n')


def step(id_: str = "x", **extra: str) -> str:
    return "[[step]]\n" + BASE.format(id=id_) + "".join(f"{k}={v}\n" for k, v in extra.items())


def test_a_number_step_and_an_option_step_parse_as_written():
    a, b = lesson.parse_steps(step("count", number="true", answer="197", within="0.5")
                              + step("pick", options='{a="one", b="two", c="three"}', answer='"b"',
                                     controls='{layer="{layers}", mask=[1, 2]}'))
    assert (a.id, a.is_number, a.answer, a.within, a.options) == ("count", True, 197, 0.5, ())
    assert a.meaning == "m spaced out"  # whitespace folded as in a paragraph
    assert (b.is_number, b.options, b.answer) == (False, (("a", "one"), ("b", "two"), ("c", "three")), "b")
    assert lesson.parse_steps(step(number="true"))[0].answer == lesson.MEASURED  # the photo decides


@pytest.mark.parametrize("text, words", [
    ("not toml [[", "not valid TOML"),
    ("", "no [[step]]"),
    ("[[step]]\nid='x'\n", "step 1 (x): missing title, question, view, measure, field, meaning"),
    (step(number="true", colour='"red"'), "unknown field(s) colour"),
    (step(options='{a="1", b="2"}', number="true"), "either options (2–4) or number = true"),
    (step(), "either options (2–4) or number = true"),
    (step(options='{a="1"}'), "1 options; a question has 2 to 4"),
    (step(options='{a="1", b="2"}', answer='"z"'), "answer 'z' is not one of its options (a, b)"),
    (step(number="true", answer='"lots"'), "a number question's answer is a number or 'measured'"),
    (step("same", number="true") + step("same", number="true"), "ids must be unique: same"),
    (step(number="true") + step("y", number="true").replace('view="patches"', 'view="nowhere"'),
     "step 2 (y): view 'nowhere' is not a tab"),
])
def test_each_mistake_is_named_with_its_step(text, words):
    with pytest.raises(UserError) as caught:
        lesson.parse_steps(text)
    assert words in str(caught.value)


def test_a_steps_text_and_controls_take_the_models_numbers():
    n = lesson.numbers_of(VIT_B16)
    # 224/16 = 14; 14² = 196 patches + [CLS] = 197 tokens; 16·16·3 = 768 numbers per patch
    assert (n["side"], n["patch"], n["grid"], n["patches"], n["tokens"], n["patch_numbers"]) == \
        (224, 16, 14, "196", "197", "768")
    assert (n["layers"], n["heads"], n["hidden"]) == (12, 12, "768")
    assert lesson.fill("{grid}×{grid} = {patches} patches", VIT_B16) == "14×14 = 196 patches"
    assert lesson.fill("{grid} as written", None) == "{grid} as written"  # no model: placeholders stay
    with pytest.raises(UserError, match="names an unknown number"):
        lesson.fill("{nothing}", VIT_B16)
    s = lesson.parse_steps(step(number="true", controls='{layer="{layers}", head="h{heads}", mask=[1, 2]}'))[0]
    assert lesson.controls_for(s, VIT_B16) == {"layer": 12, "head": "h12", "mask": (1, 2)}


def test_the_shipped_lesson_parses_and_a_missing_file_is_one_sentence(tmp_path):
    assert len(lesson.load_steps()) >= 3 and all(s.view in lesson.TABS for s in lesson.load_steps())
    with pytest.raises(UserError, match="Cannot read the lesson file gone.toml"):
        lesson.load_steps(tmp_path / "gone.toml")


def test_the_cost_steps_options_are_all_written_roundly():
    """Issue 51: "About 64,872× more" beside "About 16×" gave the answer away by its exactness.
    (224² + 1)² / (196 + 1)² = 64,874.9 attention weights more: offered as 65,000; the distractors are
    the patch side (16) and the pixels per patch (256: the token ratio, not squared)."""
    s = next(s for s in lesson.load_steps() if s.id == "cost")
    options = {k: lesson.fill(t, VIT_B16) for k, t in s.options}
    assert options == {"small": "About 16× more", "mid": "About 256× more", "huge": "About 65,000× more"}
    assert s.answer == "huge"


def test_the_cost_meanings_token_counts_are_written_as_their_sums_prefix_and_all():
    """The cost step's meaning counts tokens as its numbers do (a walk-through read "224² pixel tokens
    against 197 patch tokens"): worked out by hand, 224² + 1 = 50,177 and 196 + 1 = 197 with [CLS]; a model
    with no prefix token (SigLIP) has 50,176 and 196, with no "+ 0"; DINOv2 with 4 registers at patch 14,
    224² + 5 = 50,181 and 256 + 5 = 261."""
    s = next(s for s in lesson.load_steps() if s.id == "cost")
    vit = lesson.fill(s.meaning, VIT_B16)
    assert "224² + 1 = 50,177 pixel tokens against 196 + 1 = 197 patch tokens (the + 1: [CLS], on both sides)" in vit
    siglip = lesson.fill(s.meaning, Geometry((224, 224), 16, (14, 14), 0, 12, 12, 768))
    assert "224² = 50,176 pixel tokens against 196 patch tokens:" in siglip, siglip
    regs = Geometry((224, 224), 14, (16, 16), 5, 12, 6, 384, ("[CLS]", "[REG1]", "[REG2]", "[REG3]", "[REG4]"))
    assert "224² + 5 = 50,181 pixel tokens against 256 + 5 = 261 patch tokens (the + 5: [CLS], [REG1]" \
        in lesson.fill(s.meaning, regs)
