"""On CUDA, the same results as on the CPU (skipped where there is no CUDA)."""

from __future__ import annotations

import pytest
import torch

import vizvit
from vizvit.model import engine
from vizvit.model.images import View

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")

# TF32 matmuls and other kernels: stated tolerances for float32 results.
ATOL = {"probs": 1e-4, "attentions": 1e-4, "hidden_states": 2e-3, "patch_embeddings": 1e-3}


@pytest.mark.parametrize("name", ["random:vit-base-patch16-224"])
def test_cuda_matches_cpu(name, cat):
    cpu = vizvit.load_model(name, device="cpu")
    gpu = vizvit.load_model(name, device="cuda")
    assert vizvit.model.models.pick_device("auto").type == "cuda"
    for view in (View(), View(dx=5, dy=-3), View(mask=(3, 17, 40), mask_mode="drop")):
        a, b = vizvit.analyze(cpu, cat, view), vizvit.analyze(gpu, cat, view)
        for field, tol in ATOL.items():
            x, y = getattr(a, field), getattr(b, field)
            assert y.device.type == "cpu"
            assert torch.allclose(x.float(), y.float(), atol=tol), (field, view, (x - y).abs().max())
        assert [p.index for p in a.top5[:3]] == [p.index for p in b.top5[:3]]
    views = [vizvit.analyze(cpu, cat).input_view] * 4
    pc, pg = engine.predict_batch(cpu, views), engine.predict_batch(gpu, views)
    assert torch.allclose(pc.probs, pg.probs, atol=1e-4)


def test_cuda_inside_the_model_matches_cpu(cat):
    """Logit lens, an ablated forward and which heads matter: the same on CUDA as on the CPU."""
    from vizvit.model.ablation import Ablation
    from vizvit.readings import lens_maths as lens

    name = "random:vit-base-patch16-224"
    cpu, gpu = vizvit.load_model(name, device="cpu"), vizvit.load_model(name, device="cuda")
    ab = Ablation(((3, 4), (7, 0)), "mean")
    a, b = vizvit.analyze(cpu, cat, ablation=ab), vizvit.analyze(gpu, cat, ablation=ab)
    assert torch.allclose(a.probs, b.probs, atol=1e-4)
    la = lens.logit_lens(cpu, engine.readout(cpu, a.hidden_states))
    lb = lens.logit_lens(gpu, engine.readout(gpu, b.hidden_states))
    assert abs(la.probs - lb.probs).max() < 1e-4
    cells = [(0, 0), (5, 3), (11, 11)]
    pc = torch.cat([p for _, p in engine.zeroed_head_chunks(cpu, a.input_view, cells, 2)])
    pg = torch.cat([p for _, p in engine.zeroed_head_chunks(gpu, a.input_view, cells, 2)])
    assert torch.allclose(pc, pg, atol=1e-4)
