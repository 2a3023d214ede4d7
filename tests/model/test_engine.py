"""analyze(): shapes, agreement with a manual forward, token drop, and the cache."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from ablated import reference_probs
from tiny import EXAMPLES, make_tiny_tower

import vizvit
from vizvit.errors import UserError
from vizvit.model import engine, truncated
from vizvit.model.images import View, model_input_view, to_pixel_values
from vizvit.readings import embeddings as re_emb, patches as rp
from vizvit.readings.lens import lens_of
from vizvit.session import PhotoKey, Workbench
from vizvit.views import VIEWS, inside


def manual_forward(vm, pixels: torch.Tensor, keep: torch.Tensor | None = None):
    """Plain reference written from the ViT paper, reading the weights directly:
    conv patches -> [CLS] + pos -> (keep tokens) -> pre-norm blocks -> norm -> head."""
    vit = vm.vit
    cfg = vm.model.config
    conv = vit.embeddings.patch_embeddings.projection
    x = F.conv2d(pixels, conv.weight, conv.bias, stride=cfg.patch_size)  # (1, D, gh, gw)
    x = x.flatten(2).transpose(1, 2)  # (1, P, D)
    patches = x[0].clone()
    x = torch.cat([vit.embeddings.cls_token, x], 1) + vit.embeddings.position_embeddings
    if keep is not None:
        x = x[:, keep]
    hs, atts = [x[0]], []
    heads, d = cfg.num_attention_heads, cfg.hidden_size // cfg.num_attention_heads
    for blk in vit.layers:
        h = F.layer_norm(x, (cfg.hidden_size,), blk.layernorm_before.weight, blk.layernorm_before.bias,
                         cfg.layer_norm_eps)
        at = blk.attention
        q, k, v = (lin(h).view(1, -1, heads, d).transpose(1, 2) for lin in (at.q_proj, at.k_proj, at.v_proj))
        a = (q @ k.transpose(-1, -2) / d ** 0.5).softmax(-1)
        atts.append(a[0])
        x = x + at.o_proj((a @ v).transpose(1, 2).reshape(1, -1, cfg.hidden_size))
        h = F.layer_norm(x, (cfg.hidden_size,), blk.layernorm_after.weight, blk.layernorm_after.bias,
                         cfg.layer_norm_eps)
        x = x + blk.mlp.fc2(F.gelu(blk.mlp.fc1(h)))
        hs.append(x[0])
    out = F.layer_norm(x, (cfg.hidden_size,), vit.layernorm.weight, vit.layernorm.bias, cfg.layer_norm_eps)
    logits = vm.model.classifier(out[:, 0])[0]
    return patches, torch.stack(atts), torch.stack(hs), logits


def test_shapes_and_invariants(tiny, cat):
    g = tiny.geometry
    a = vizvit.analyze(tiny, cat)
    n, L, H = g.seq_len, g.num_layers, g.num_heads
    assert a.input_view.shape == (224, 224, 3) and a.input_view.dtype == np.uint8
    assert a.pixel_values.shape == (1, 3, 224, 224)
    assert a.attentions.shape == (L, H, n, n)
    assert a.hidden_states.shape == (L + 1, n, g.hidden_size)
    assert a.patch_embeddings.shape == (g.num_patches, g.hidden_size)
    assert a.logits.shape == (7,) and torch.allclose(a.probs.sum(), torch.tensor(1.0))
    assert torch.allclose(a.attentions.sum(-1), torch.ones(L, H, n), atol=1e-5)
    assert [p.prob for p in a.top5] == sorted([p.prob for p in a.top5], reverse=True)
    assert a.top5[0].index == int(a.probs.argmax())
    assert all(t.device.type == "cpu" for t in (a.attentions, a.hidden_states, a.patch_embeddings))


def test_matches_a_manual_forward(tiny, cat):
    a = vizvit.analyze(tiny, cat)
    with torch.no_grad():
        patches, atts, hs, logits = manual_forward(tiny, a.pixel_values)
    assert torch.allclose(a.patch_embeddings, patches, atol=1e-5)
    assert torch.allclose(a.attentions, atts, atol=1e-5)
    assert torch.allclose(a.hidden_states, hs, atol=1e-4)
    assert torch.allclose(a.logits, logits, atol=1e-4)


def test_token_drop_with_nothing_dropped_is_the_normal_forward(tiny, cat):
    a = vizvit.analyze(tiny, cat)
    b = vizvit.analyze(tiny, cat, View(mask=(), mask_mode="drop"))
    assert torch.equal(a.logits, b.logits) and not b.dropped


def test_token_drop_matches_manual_forward(tiny, cat):
    g = tiny.geometry
    mask = (0, 3, g.num_patches - 1)
    a = vizvit.analyze(tiny, cat, View(mask=mask, mask_mode="drop"))
    keep = torch.tensor([t for t in range(g.seq_len) if t - 1 not in mask])
    assert torch.equal(a.kept_tokens, keep) and a.dropped
    with torch.no_grad():
        patches, atts, hs, logits = manual_forward(tiny, a.pixel_values, keep)
    n = g.seq_len - len(mask)
    assert a.attentions.shape[-1] == n and a.hidden_states.shape[1] == n
    assert torch.allclose(a.attentions, atts, atol=1e-5)
    assert torch.allclose(a.logits, logits, atol=1e-4)
    assert a.patch_embeddings.shape[0] == g.num_patches  # all patches, before the drop
    # Dropping really changes the answer (the tokens mattered).
    assert not torch.allclose(a.logits, vizvit.analyze(tiny, cat).logits)


def test_dropping_every_patch_is_refused(tiny, cat):
    with pytest.raises(ValueError, match="at least one patch"):
        vizvit.analyze(tiny, cat, View(mask=tuple(range(tiny.geometry.num_patches))))


# ---- formerly tests/test_engine_lock.py
# Two photos through every tab at once get exactly the answers they get alone (issue 26).
#
# Every model call (the forward passes, the logit lens's final norm and head, the text tower, the
# embedding conv, the position tables) runs in the engine under its one lock. The hooks of a run
# live on the shared model object: for CLIP and SigLIP the embedding conv is the very module whose
# hook records a run's patch embeddings, so a conv called outside the lock during another photo's
# forward would be recorded as that photo's patches.

PHOTOS = ("chelsea.jpg", "coffee.jpg")
SIZE = 288  # the Positions tab's other input size


@pytest.fixture(scope="module")
def models(tmp_path_factory, tiny16) -> dict[str, vizvit.VitModel]:
    base = tmp_path_factory.mktemp("concurrency")
    return {"vit": tiny16, "clip": vizvit.load_model(str(make_tiny_tower(base / "clip", "clip", 32)), device="cpu")}


def handles(vm: vizvit.VitModel, wb: Workbench | None = None):
    """A fresh workbench (its own cache: everything is computed again) with both photos."""
    wb = wb or Workbench(cache_bytes=1 << 32)
    wb.add_model(vm)
    labels = ("a cat", "a dog", "a teapot") if vm.is_zero_shot else ()
    return [wb.handle(PhotoKey(vm.id, wb.add_photo(EXAMPLES / p), labels=labels, template="a photo of {}"
                               if labels else "")) for p in PHOTOS]


def everything(ph) -> dict[str, np.ndarray]:
    """What every tab computes for one photo: each view's export arrays (patches, zero-shot probs and
    patch-label cosines, embeddings, attention and relevance, positions, the shift sweep and the
    curves, the logit lens and head importance), the recorded patch embeddings, the embedding stage's
    checks against the forward, and a forward at another size."""
    out: dict[str, np.ndarray] = {}
    for v in VIEWS:
        out.update({f"{v.__name__.rsplit('.', 1)[-1]}.{k}": np.asarray(x) for k, x in v.export_arrays(ph).items()})
    a = ph.analysis()
    out["patch_embeddings"] = a.patch_embeddings.numpy()
    st = re_emb.data(ph).stage
    out["stage"] = np.array([st.conv_vs_linear, st.conv_vs_forward, st.embed_vs_forward])
    pred = engine.predict_at_size(ph.vm, ph.image, SIZE)
    out["at_size"] = pred.probs if pred.probs is not None else np.zeros(0)
    return out


def same(got: dict[str, np.ndarray], want: dict[str, np.ndarray], who: str) -> None:
    """Equal to the answer alone. Two photos asked at once share ONE batched forward (the session's
    forward worker): float sums then run in another order, so floats agree to 1e-5, not bit for bit
    (tests/model/test_forwards.py); another photo's numbers would differ by far more."""
    assert got.keys() == want.keys(), who
    for k in want:
        if np.issubdtype(np.asarray(want[k]).dtype, np.floating):
            np.testing.assert_allclose(got[k], want[k], rtol=0, atol=1e-5,
                                       err_msg=f"{who}: {k} differs from the photo's answer alone")
        else:
            np.testing.assert_array_equal(got[k], want[k], err_msg=f"{who}: {k} differs from the photo's answer alone")


def in_threads(*jobs) -> list:
    """Run the jobs at once (released together by a barrier); their results, or their first error."""
    results: list = [None] * len(jobs)
    errors: list[BaseException] = []
    start = threading.Barrier(len(jobs))

    def run(i: int) -> None:
        try:
            start.wait()
            results[i] = jobs[i]()
        except BaseException as e:  # noqa: BLE001 - raised again in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    if errors:
        raise errors[0]
    return results


@pytest.mark.parametrize("name", ["vit", "clip"])
def test_two_photos_through_every_tab_at_once_get_their_own_answers(models, name):
    vm = models[name]
    alone = [everything(ph) for ph in handles(vm)]  # each in a fresh cache, one after the other
    assert not np.array_equal(alone[0]["patch_embeddings"], alone[1]["patch_embeddings"])  # two photos
    for _ in range(2):
        phs = handles(vm)  # one shared workbench, as the server has, and an empty cache
        for i, got in enumerate(in_threads(*(lambda ph=ph: everything(ph) for ph in phs))):
            same(got, alone[i], f"{name}, {PHOTOS[i]}")


def test_no_tab_runs_model_code_during_another_photos_forward(models):
    """Deterministic: photo A's forward is held inside its first block (its hooks registered) while
    photo B's tabs run everything that is not a forward of their own (B's analysis is cached). Each
    must wait for A's run: B's embedding conv would otherwise be recorded as A's patches (CLIP's
    patch conv is the module A's run hooks)."""
    vm = models["clip"]
    a_alone = engine.analyze(vm, vizvit.load_image(EXAMPLES / PHOTOS[0]))
    ph_b = handles(vm)[1]
    b_alone = everything(handles(vm)[1])
    ph_b.analysis()  # cached: B's tabs now call the model only for their own parts
    inside_a, held = threading.Event(), 0.5

    def slow(_m, _inp, out):
        inside_a.set()
        threading.Event().wait(held)  # A's run holds its hooks while B's tabs try to run
        return out

    fam = vm.family
    hook = engine.Hook(lambda b: fam.blocks(b)[0], slow)

    def run_a():
        return engine.analyze(vm, vizvit.load_image(EXAMPLES / PHOTOS[0]), extra=[hook])

    def run_b():
        inside_a.wait(60)
        # the parts of B's tabs that read the model (the lens, the embedding stage, the patch-label
        # probe, the positions), then everything else
        lens_of(ph_b)
        re_emb.data(ph_b)
        rp.label_cosines(ph_b)
        inside.export_arrays(ph_b)
        return everything(ph_b)

    a, b = in_threads(run_a, run_b)
    torch.testing.assert_close(a.patch_embeddings, a_alone.patch_embeddings, rtol=0, atol=0,
                               msg="photo A's recorded patch embeddings were another photo's")
    np.testing.assert_array_equal(a.hidden_states.numpy(), a_alone.hidden_states.numpy())
    same(b, b_alone, "photo B")


# ---- formerly tests/test_mask_token.py
# The [MASK] token mode: a masked patch's embedding replaced by the mask token before [CLS] and the
# position embeddings, checked against the embedding stage written out by hand (a ViT classifier, whose
# checkpoint has no mask token: zeros) and against transformers' own bool_masked_pos path (DINOv2 and
# BEiT, whose embeddings hold a mask token).

MASK = (0, 5, 17, 30)


def test_vit_classifier_mask_is_zeros_substituted_by_hand(tiny16, cat):
    vm = tiny16
    a = engine.analyze(vm, cat, View(mask=MASK, mask_mode="mask"))
    vit = vm.model.vit
    with torch.inference_mode():
        x = vit.embeddings.patch_embeddings(a.pixel_values)  # (1, P, D): the conv, by the model's own module
        x[:, list(MASK)] = 0.0  # the untrained [MASK]: transformers' initial value, zeros
        x = torch.cat([vit.embeddings.cls_token, x], 1) + vit.embeddings.position_embeddings
        h = x
        for block in vit.layers:
            h = block(h)
            h = h[0] if isinstance(h, tuple) else h
        logits = vm.model.classifier(vit.layernorm(h)[:, 0])[0]
    assert torch.allclose(a.hidden_states[0], x[0], atol=1e-6), "the embedding stage with [MASK] differs"
    assert torch.allclose(a.logits, logits, atol=1e-5), (a.logits, logits)
    plain = engine.analyze(vm, cat)
    assert not torch.allclose(plain.logits, a.logits, atol=1e-4), "masking changed nothing"
    assert torch.equal(plain.patch_embeddings, a.patch_embeddings), "patch_embeddings must stay the conv's output"
    t = engine.mask_token(vm)
    assert not t.trained and "never trained" in t.source and torch.count_nonzero(t.vector) == 0


@pytest.mark.parametrize("name", ["dinov2", "beit"])
def test_a_family_with_a_mask_token_equals_transformers_bool_masked_pos(families, cat, name):
    vm = families[name]
    g = vm.geometry
    mask = tuple(i for i in MASK if i < g.num_patches)
    a = engine.analyze(vm, cat, View(mask=mask, mask_mode="mask"))
    backbone = vm.vit
    t = engine.mask_token(vm)
    pos = torch.zeros(1, g.num_patches, dtype=torch.bool)
    pos[0, list(mask)] = True
    # BEiT's classifier class builds none: zeros, as BeitModel(use_mask_token=True) starts
    given = backbone.embeddings.mask_token is None
    if given:
        backbone.embeddings.mask_token = torch.nn.Parameter(torch.zeros(1, 1, g.hidden_size), requires_grad=False)
    try:
        with torch.inference_mode():
            ref = backbone(a.pixel_values, bool_masked_pos=pos, output_hidden_states=True)
    finally:
        if given:
            backbone.embeddings.mask_token = None
    for l, h in enumerate(ref.hidden_states):
        assert torch.allclose(a.hidden_states[l], h[0], atol=1e-5), f"{name}: depth {l} differs from bool_masked_pos"
    assert given == (not t.trained), f"{name}: {t.source}"


def test_a_family_without_a_mask_token_is_refused(towers, cat):
    vm = towers["clip16"]
    with pytest.raises(UserError, match="no \\[MASK\\] token"):
        engine.mask_token(vm)


# ---- head importance: engine.zeroed_head_chunks (each run from the intact state entering the zeroed head's
# layer, vizvit/model/truncated.py) against whole forwards with that head zeroed by the tests' own hook
def zeroed(vm, view, chunk: int = 3, states=None) -> tuple[list[tuple[int, int]], torch.Tensor]:
    """Every (layer, head) cell, and zeroed_head_chunks' probabilities (L·H, C), its yields checked to
    tile the cells in order."""
    g = vm.geometry
    cells = [(l, h) for l in range(g.num_layers) for h in range(g.num_heads)]
    parts = list(engine.zeroed_head_chunks(vm, view, cells, chunk, states=states))
    assert [s for s, _ in parts] == list(np.cumsum([0] + [len(p) for _, p in parts[:-1]]))
    assert all(len(p) <= chunk for _, p in parts)
    return cells, torch.cat([p for _, p in parts])


@pytest.mark.parametrize("name", ["p16", "deit", "beit", "clip16", "siglip32", "dinov2_cls", "dinov2_reg_cls"])
def test_zeroed_heads_equal_whole_forwards_with_that_head_zeroed(families, towers, dino_classifiers, tiny16, cat,
                                                                  name):
    """Every family's head, DINOv2's classifiers' [CLS] ⊕ patch mean too, run from inside (one batch a layer)."""
    vm = {"p16": tiny16, **families, **towers, **dino_classifiers}[name]
    assert truncated.starts_inside(vm.family, vm.model)
    view = model_input_view(cat, vm.preprocess)
    cells, got = zeroed(vm, view)
    want = reference_probs(vm, to_pixel_values(view, vm.preprocess), cells)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-5)
    a = engine.analyze(vm, cat)  # the analysis' hidden states as the start states
    torch.testing.assert_close(zeroed(vm, view, 8, a.hidden_states)[1], want, rtol=0, atol=1e-5)
    batches = [s for s, _ in engine.zeroed_head_chunks(vm, view, cells, 8)]
    assert batches == [l * vm.geometry.num_heads for l in range(vm.geometry.num_layers)], "one batch a layer"


def test_what_cannot_start_inside_runs_whole_forwards(tiny16, cat, monkeypatch):
    """A block class the truncated run has not read (here faked): whole forwards, batched across layers,
    the same numbers."""
    monkeypatch.setattr(truncated, "PLAIN_BLOCKS", frozenset())
    view = model_input_view(cat, tiny16.preprocess)
    cells, got = zeroed(tiny16, view, chunk=3, states=engine.analyze(tiny16, cat).hidden_states)
    assert [s for s, _ in engine.zeroed_head_chunks(tiny16, view, cells, 3)] == [0, 3], "across layers"
    torch.testing.assert_close(got, reference_probs(tiny16, to_pixel_values(view, tiny16.preprocess), cells),
                               rtol=0, atol=1e-5)
