"""Two photos through every tab at once get exactly the answers they get alone (issue 26).

Every model call (the forward passes, the logit lens's final norm and head, the text tower, the
embedding conv, the position tables) runs in the engine under its one lock. The hooks of a run
live on the shared model object: for CLIP and SigLIP the embedding conv is the very module whose
hook records a run's patch embeddings, so a conv called outside the lock during another photo's
forward would be recorded as that photo's patches."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from tiny import EXAMPLES
from tiny import make_tiny_tower

import vizvit
from vizvit import engine
from vizvit.session import PhotoKey, Workbench
from vizvit.views import VIEWS, embeddings, inside, patches

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
    st = embeddings.data(ph).stage
    out["stage"] = np.array([st.conv_vs_linear, st.conv_vs_forward, st.embed_vs_forward])
    pred = engine.predict_at_size(ph.vm, ph.image, SIZE)
    out["at_size"] = pred.probs if pred.probs is not None else np.zeros(0)
    return out


def same(got: dict[str, np.ndarray], want: dict[str, np.ndarray], who: str) -> None:
    """Equal to the answer alone. Two photos asked at once share ONE batched forward (the session's
    forward worker): float sums then run in another order, so floats agree to 1e-5, not bit for bit
    (tests/test_forwards.py); another photo's numbers would differ by far more."""
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
        inside.lens_of(ph_b)
        embeddings.data(ph_b)
        patches.label_cosines(ph_b)
        inside.export_arrays(ph_b)
        return everything(ph_b)

    a, b = in_threads(run_a, run_b)
    torch.testing.assert_close(a.patch_embeddings, a_alone.patch_embeddings, rtol=0, atol=0,
                               msg="photo A's recorded patch embeddings were another photo's")
    np.testing.assert_array_equal(a.hidden_states.numpy(), a_alone.hidden_states.numpy())
    same(b, b_alone, "photo B")
