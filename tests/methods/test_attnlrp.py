"""AttnLRP (vizvit/methods/attnlrp.py: its rules, attnlrp_relevance, its record).

The rules against the authors' own code: lxt 2.1's efficient rules (lxt/efficient/rules.py, loaded
from its file: `import lxt.efficient` needs transformers.modeling_attn_mask_utils, gone in
transformers 5) and its explicit relevance functions (lxt/explicit/functional.py, which imports).
Then conservation on a constructed bias-free ViT: the tokens' relevance plus each softmax's bias
term is the explained logit. Then every classifier family, and a sanity check on the trained ViT-Ti.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from tiny import make_tiny_vit

import vizvit
from vizvit.methods import attnlrp as lrp
from vizvit.model import engine
from vizvit.readings import methods


def _lxt_efficient_rules():
    spec = importlib.util.find_spec("lxt")
    if spec is None:
        pytest.skip("lxt not installed: pip install --no-deps -r requirements-nodeps.txt")
    path = Path(spec.submodule_search_locations[0]) / "efficient" / "rules.py"
    mod_spec = importlib.util.spec_from_file_location("lxt_efficient_rules", path)
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)  # imports torch.autograd.Function only
    return mod


def _lxt_explicit():
    return pytest.importorskip("lxt.explicit.functional", reason="lxt not installed")


def _grad_x_input(f, x: torch.Tensor, r_out: torch.Tensor) -> torch.Tensor:
    """Gradient × input of f at x with the output's relevance r_out (the upstream gradient r_out / f(x))."""
    x = x.clone().requires_grad_(True)
    y = f(x)
    (g,) = torch.autograd.grad(y, x, r_out / y)
    return (x * g).detach()


def _explicit(f, x: torch.Tensor, r_out: torch.Tensor) -> torch.Tensor:
    """lxt's explicit rule: its backward carries relevance itself."""
    x = x.clone().requires_grad_(True)
    f(x).backward(r_out)
    return x.grad.detach()


# ------------------------------------------------------------------ the rules against lxt's
def test_identity_and_uniform_rules_equal_lxts_efficient_rules():
    rules = _lxt_efficient_rules()
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 16, generator=g, dtype=torch.float64)
    up = torch.randn(4, 16, generator=g, dtype=torch.float64)
    for fn in (F.gelu, torch.nn.GELU(approximate="tanh"), F.silu):
        a, b = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
        mine, theirs = lrp.identity_rule(a, fn(a)), rules.identity_rule_implicit(fn, b)
        torch.testing.assert_close(mine, theirs)  # the same value
        (ga,), (gb,) = torch.autograd.grad(mine, a, up), torch.autograd.grad(theirs, b, up)
        torch.testing.assert_close(ga, gb)  # the same backward: act(x) / (x + eps)
    for factor in (lrp.QK_DIVISOR, lrp.V_DIVISOR):
        a, b = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
        torch.testing.assert_close(lrp.divide_gradient(a, factor), rules.divide_gradient(b, factor))
        (ga,) = torch.autograd.grad(lrp.divide_gradient(a, factor), a, up)
        (gb,) = torch.autograd.grad(rules.divide_gradient(b, factor), b, up)
        torch.testing.assert_close(ga, gb)
    assert (lrp.QK_DIVISOR, lrp.V_DIVISOR) == (4.0, 2.0)  # lxt/efficient/patches.py wrap_attention_forward


def test_layer_norm_softmax_matmul_and_normalize_equal_lxts_explicit_relevance():
    lf = _lxt_explicit()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(3, 24, generator=g, dtype=torch.float64)
    r = torch.randn(3, 24, generator=g, dtype=torch.float64)
    # A bias that keeps y off 0, where lxt's stabiliser (R / (y + 1e-6)) would make the two differ.
    w, b = torch.rand(24, generator=g, dtype=torch.float64) + 0.5, torch.rand(24, generator=g, dtype=torch.float64) + 6
    # LayerNorm: std a constant; lxt's layer_norm states it as explicit relevance.
    torch.testing.assert_close(_grad_x_input(lambda t: lrp.layer_norm(t, w, b, 1e-5), x, r),
                               _explicit(lambda t: lf.layer_norm(t, w, b, 1e-5), x, r), rtol=1e-5, atol=1e-6)
    # Softmax: the plain gradient × input IS the rule R_in = x ⊙ (R_out − s ⊙ Σ R_out).
    torch.testing.assert_close(_grad_x_input(lambda t: t.softmax(-1), x, r),
                               _explicit(lambda t: lf.softmax(t, -1), x, r))
    s = x.softmax(-1)
    torch.testing.assert_close(_grad_x_input(lambda t: t.softmax(-1), x, r), x * (r - s * r.sum(-1, keepdim=True)))
    # The attention matmul: uniform (half to each operand), then epsilon; positive operands keep y off 0.
    a0 = torch.rand(2, 5, 6, generator=g, dtype=torch.float64) + 0.5
    b0 = torch.rand(2, 6, 7, generator=g, dtype=torch.float64) + 0.5
    ro = torch.randn(2, 5, 7, generator=g, dtype=torch.float64)
    a1, b1 = a0.clone().requires_grad_(True), b0.clone().requires_grad_(True)
    y = lrp.divide_gradient(a1, 2) @ lrp.divide_gradient(b1, 2)
    ga, gb = torch.autograd.grad(y, (a1, b1), ro / y)
    a2, b2 = a0.clone().requires_grad_(True), b0.clone().requires_grad_(True)
    lf.matmul(a2, b2).backward(ro)
    torch.testing.assert_close(a0 * ga, a2.grad, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(b0 * gb, b2.grad, rtol=1e-5, atol=1e-6)
    # An L2 normalisation (the cosine's): identity, the relevance passes unchanged.
    torch.testing.assert_close(_grad_x_input(lrp.l2_normalize, x, r),
                               _explicit(lambda t: lf.normalize(t, dim=-1), x, r))
    torch.testing.assert_close(_grad_x_input(lrp.l2_normalize, x, r), r)


def test_the_rules_keep_every_forward_value():
    x = torch.randn(5, 8)
    ln = torch.nn.LayerNorm(8)
    torch.testing.assert_close(lrp.layer_norm(x, ln.weight, ln.bias, ln.eps), ln(x))
    torch.testing.assert_close(lrp.identity_rule(x, F.gelu(x)), F.gelu(x))
    torch.testing.assert_close(lrp.l2_normalize(x), F.normalize(x, dim=-1))


# ------------------------------------------------------------------ conservation
@pytest.fixture(scope="module")
def bias_free(tmp_path_factory) -> vizvit.VitModel:
    """A tiny ViT (2 layers, 2 heads, 14×14 patches) with every bias set to 0: the tokens' relevance
    and the softmaxes' bias terms are then all the relevance there is."""
    vm = vizvit.load_model(str(make_tiny_vit(tmp_path_factory.mktemp("lrp"), 224, 16, seed=3)), device="cpu")
    with torch.no_grad():
        for name, p in vm.model.named_parameters():
            if name.endswith("bias"):
                p.zero_()
    return vm


def test_relevance_is_conserved_on_a_bias_free_vit(bias_free, cat):
    """Σ_tokens R + Σ_softmax (its bias term) = the logit. The softmax rule is the only leak: the
    attention matmul hands ½ of its relevance to A = softmax(x), and the rule hands on
    ½ x ⊙ (R_A − s ⊙ Σ R_A) of it, per row; every other rule here conserves (bias-free)."""
    vm = bias_free
    a = vizvit.analyze(vm, cat)
    c = int(a.top5[0].index)
    pixels = a.pixel_values.clone().requires_grad_(True)
    kept: dict[str, torch.Tensor] = {}
    qk: list[torch.Tensor] = []
    hooks = [*lrp.attnlrp_hooks(vm),
             engine.Hook(lambda b: vm.family.embeddings(b), lambda m, i, o: kept.__setitem__("h0", o))]
    # in layer order, q then k
    qk_mods = [m for n, m in vm.model.named_modules() if n.endswith((".query", ".key", ".q_proj", ".k_proj"))]
    assert len(qk_mods) == 2 * vm.geometry.num_layers
    for lin in qk_mods:  # the q and k values, to rebuild each softmax's input x
        hooks.append(engine.Hook(lambda b, lin=lin: lin, lambda m, i, o: qk.append(o.detach())))
    with engine.Hooked(vm, capture_patches=False, extra=hooks), torch.inference_mode(False), torch.enable_grad():
        out = vm.model(pixels, output_attentions=True)
        logit = out.logits[0, c]
        grads = torch.autograd.grad(logit, [kept["h0"], *out.attentions])
    tokens = (kept["h0"][0].double() * grads[0][0].double()).sum(-1).detach()  # (N,)
    h, d = vm.geometry.num_heads, vm.model.config.hidden_size // vm.geometry.num_heads
    leaks = 0.0
    for l, (att, g_att) in enumerate(zip(out.attentions, grads[1:])):
        q, k = qk[2 * l], qk[2 * l + 1]  # (1, N, D)
        qh = q.reshape(1, -1, h, d).transpose(1, 2).double()
        kh = k.reshape(1, -1, h, d).transpose(1, 2).double()
        x = qh @ kh.transpose(-1, -2) * d ** -0.5  # (1, H, N, N) the softmax's input
        s, ga = att.detach().double(), g_att.double()
        torch.testing.assert_close(s, x.softmax(-1), rtol=1e-4, atol=1e-6)  # the x rebuilt is the model's
        r_a = 0.5 * s * ga  # the A-half of the matmul's relevance
        r_x = x * (r_a - s * r_a.sum(-1, keepdim=True))  # the softmax rule
        leaks += float(r_a.sum() - r_x.sum())
    logit = logit.detach()
    assert float(tokens.sum()) + leaks == pytest.approx(float(logit), rel=1e-4, abs=1e-5)
    assert abs(leaks) > 1e-3 * abs(float(logit))  # the softmax's term is really there (the test sees it)
    got = lrp.attnlrp_relevance(vm, a, c)  # the engine's own run: the same tokens
    torch.testing.assert_close(got.tokens, tokens, rtol=1e-4, atol=1e-6)
    assert got.logit == pytest.approx(float(logit), rel=1e-5)
    # The map: each patch token's relevance less its position embedding's share (a bias term).
    g, p0 = vm.geometry, vm.geometry.num_prefix_tokens
    pos = (vm.model.vit.embeddings.position_embeddings[0, p0:].double() * grads[0][0, p0:].double()).sum(-1)
    np.testing.assert_allclose(methods.ATTNLRP(vm, a, c), (tokens[p0:] - pos.detach()).reshape(g.grid).numpy(),
                               rtol=1e-4, atol=1e-5)


def test_without_attention_the_patches_cls_and_positions_sum_to_the_logit(bias_free, cat, tmp_path):
    """Value projections zeroed: no relevance enters an attention, so nothing leaks: the tokens'
    relevance (patches, [CLS], their position embeddings) is the whole logit."""
    vm = vizvit.load_model(str(make_tiny_vit(tmp_path, 224, 16, seed=3)), device="cpu")
    with torch.no_grad():
        for name, p in vm.model.named_parameters():
            if name.endswith("bias") or ".value." in name or ".v_proj." in name:
                p.zero_()
    a = vizvit.analyze(vm, cat)
    for c in (int(a.top5[0].index), int(a.top5[-1].index)):
        got = lrp.attnlrp_relevance(vm, a, c)
        assert float(got.tokens.sum()) == pytest.approx(got.logit, rel=1e-5, abs=1e-6)


# ------------------------------------------------------------------ every family, the registry
def test_attnlrp_runs_on_every_classifier_family(fam, towers, cat):
    for vm in (fam, towers["clip16"], towers["siglip32"]):
        if not vm.has_classifier:
            continue
        a = vizvit.analyze(vm, cat)
        c = int(a.top5[0].index)
        got = lrp.attnlrp_relevance(vm, a, c)
        assert got.tokens.shape == (vm.geometry.seq_len,) and torch.isfinite(got.tokens).all()
        assert got.patches.shape == (vm.geometry.num_patches,) and torch.isfinite(got.patches).all()
        assert got.logit == pytest.approx(float(a.logits.reshape(-1)[c]), rel=1e-4, abs=1e-5)  # the forward unchanged
        assert methods.ATTNLRP(vm, a, c).shape == vm.geometry.grid


def test_attnlrp_is_offered_everywhere_through_its_record_alone(tiny16):
    from vizvit import export
    from vizvit.readings import masks
    from vizvit.views import attention as ap
    m = methods.get("AttnLRP")
    assert m.name in ap.EXPLAIN_METHODS and m.name in masks.MASK_MAPS and m in methods.CONTEST
    assert export.methods_used(tiny16)["map_attnlrp"].startswith("AttnLRP (Achtibat et al. 2024")
    assert "*AttnLRP*" in ap.RELEVANCE_TEXT


# ------------------------------------------------------------------ trained weights
def test_on_the_trained_vit_removing_attnlrps_top_patches_costs_more_than_its_bottom(trained, cat):
    """Outside the artifact tokens (the corners, which AttnLRP calls evidence against the cat and
    whose removal the model feels: docs/methods.md), the 20 % of patches AttnLRP ranks highest,
    dropped, lower p(cat) more than the 20 % it ranks lowest. (Measured: 0.769 against 0.797; Chefer's
    relevance 0.615 against 0.889. A patch dropped alone barely moves p: no per-patch correlation.)"""
    from vizvit.readings import artifacts_rule as art_mod
    from vizvit.readings.artifacts import artifact_masks
    a = vizvit.analyze(trained, cat)
    c, g = int(a.top5[0].index), trained.geometry
    arts = art_mod.through_layers(artifact_masks(a))[-1].reshape(-1)
    idx = np.flatnonzero(~arts)
    order = idx[np.argsort(-methods.ATTNLRP(trained, a, c).reshape(-1)[idx], kind="stable")]
    k = round(0.2 * g.num_patches)
    keeps = [engine.kept_token_indices(tuple(int(i) for i in part), g) for part in (order[:k], order[-k:])]
    probs = engine.predict_batch(trained, [a.input_view] * 2, keeps).probs[:, c]
    assert float(probs[0]) < float(probs[1]), probs
