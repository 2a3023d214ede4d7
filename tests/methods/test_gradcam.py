"""Grad-CAM (vizvit/methods/gradcam.py) against pytorch-grad-cam's code, ported here as plain functions, and
captum's."""

from __future__ import annotations

import cv2
import numpy as np
import torch

import vizvit
from vizvit.readings import methods


# ------------------------------------------------------------------ pytorch-grad-cam
def gradcam_scale_cam_image(cam, target_size=None):
    """Port of `scale_cam_image` in jacobgil/pytorch-grad-cam pytorch_grad_cam/utils/image.py
    (grad-cam 1.5.7 on PyPI), 2-D branch."""
    result = []
    for img in cam:
        img = img - np.min(img)
        img = img / (1e-7 + np.max(img))
        if target_size is not None:
            img = cv2.resize(np.float32(img), target_size)
        result.append(img)
    return np.float32(result)


def gradcam_vit_reshape_transform(tensor, height=14, width=14):
    """Port of `vit_reshape_transform` (pytorch_grad_cam/utils/reshape_transforms.py, 1.5.7)."""
    result = tensor[:, 1:, :].reshape(tensor.size(0), height, width, tensor.size(2))
    return result.transpose(2, 3).transpose(1, 2)


def pytorch_grad_cam(model_logits, pixels, target_layer, category, grid):
    """GradCAM(model, [target_layer], reshape_transform)(pixels, [ClassifierOutputTarget(category)])
    of pytorch-grad-cam 1.5.7, ported: ActivationsAndGradients (a forward hook and a tensor hook),
    GradCAM.get_cam_weights (mean over the spatial axes), BaseCAM.get_cam_image, relu, scaling
    to the input size, aggregate_multi_layers. model_logits(pixels) -> (1, C)."""
    acts, grads = [], []
    reshape = lambda t: gradcam_vit_reshape_transform(t, *grid)  # noqa: E731

    def save(_m, _i, output):
        acts.append(reshape(output).cpu().detach())
        output.register_hook(lambda g: grads.insert(0, reshape(g).cpu().detach()))

    handle = target_layer.register_forward_hook(save)
    try:
        with torch.inference_mode(False), torch.enable_grad():
            x = pixels.detach().clone().requires_grad_(True)  # compute_input_gradient: frozen weights
            outputs = model_logits(x)
            loss = sum([o[category] for o in outputs])  # ClassifierOutputTarget
            loss.backward(retain_graph=True)
    finally:
        handle.remove()
    activations, gradients = acts[0].numpy(), grads[0].numpy()
    weights = np.mean(gradients, axis=(2, 3))
    cam = (weights[:, :, None, None] * activations).sum(axis=1)
    cam = np.maximum(cam, 0)
    scaled = gradcam_scale_cam_image(cam, (x.size(-1), x.size(-2)))
    per_layer = np.maximum(np.concatenate([scaled[:, None, :]], axis=1), 0)
    return gradcam_scale_cam_image(np.mean(per_layer, axis=1))


def as_pytorch_grad_cam_shows_it(m: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """The documented difference: pytorch-grad-cam min-max scales the map and resizes it to the input."""
    return gradcam_scale_cam_image(gradcam_scale_cam_image(np.maximum(m, 0)[None], size))


def test_gradcam_on_a_tiny_vit_equals_pytorch_grad_cam(tiny32, cat):
    a = vizvit.analyze(tiny32, cat)
    index = a.top5[1].index
    g = tiny32.geometry
    want = pytorch_grad_cam(lambda x: tiny32.model(x).logits, a.pixel_values,
                            tiny32.model.vit.layers[-1].layernorm_before, index, g.grid)
    mine = methods.class_map("Grad-CAM", tiny32, a, index)
    assert mine.shape == g.grid and mine.min() >= 0
    np.testing.assert_allclose(as_pytorch_grad_cam_shows_it(mine, (224, 224)), want, atol=2e-4)


class _ToGrid(torch.nn.Module):
    """(B, N, D) tokens -> (B, D, gh, gw) patch grid, as pytorch-grad-cam's reshape_transform: a
    module, so captum can take a layer's gradient there."""

    def __init__(self, prefix: int, grid: tuple[int, int]):
        super().__init__()
        self.prefix, self.grid = prefix, grid

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, self.prefix:].transpose(1, 2).reshape(x.shape[0], x.shape[2], *self.grid)


def test_gradcam_on_a_tiny_vit_and_deit_equals_captums_layer_grad_cam(tiny32, families, cat):
    """The authors of captum (0.9.0, installed as a test dependency) on the same layer: its
    LayerGradCam pools the gradient over the dimensions after the channels, so it gets the patch
    tokens as a (B, D, gh, gw) grid through an identity-valued detour of the layernorm's output."""
    for vm in (tiny32, families["deit"]):
        a = vizvit.analyze(vm, cat)
        index = a.top5[1].index
        np.testing.assert_allclose(methods.class_map("Grad-CAM", vm, a, index), _captum_gradcam(vm, a, index),
                                   rtol=1e-4, atol=1e-7)


def _captum_gradcam(vm, a, index: int) -> np.ndarray:
    """captum's LayerGradCam of class `index` on the last block's first layernorm, as a (gh, gw) map."""
    from captum.attr import LayerGradCam

    g = vm.geometry
    to_grid = _ToGrid(g.num_prefix_tokens, g.grid)

    def detour(_m, _i, out):  # the same values, now through to_grid's output
        grid = to_grid(out)
        return torch.cat([out[:, :g.num_prefix_tokens], grid.flatten(2).transpose(1, 2)], 1)

    handle = vm.family.attention_norm(vm.vit, -1).register_forward_hook(detour)
    try:
        with torch.inference_mode(False), torch.enable_grad():
            want = LayerGradCam(lambda x: vm.model(x).logits, to_grid).attribute(
                a.pixel_values.detach().clone(), target=index, relu_attributions=True)
    finally:
        handle.remove()
    return want[0, 0].detach().numpy()


def test_gradcam_on_a_tiny_clip_equals_pytorch_grad_cam(towers, cat):
    vm = towers["clip32"]
    a = vizvit.analyze(vm, cat)
    index = a.top5[1].index
    head = vm.zero_shot

    def logits(x):  # the typed labels' logits, scale·cos(image, text), as a classifier's output
        emb = vm.model.visual_projection(vm.model.vision_model(x).pooler_output)
        emb = emb / emb.norm(dim=-1, keepdim=True)
        return head.scale * emb @ head.text_embeds.T

    want = pytorch_grad_cam(logits, a.pixel_values, vm.model.vision_model.encoder.layers[-1].layer_norm1, index,
                            vm.geometry.grid)
    mine = methods.class_map("Grad-CAM", vm, a, index)
    np.testing.assert_allclose(as_pytorch_grad_cam_shows_it(mine, (224, 224)), want, atol=2e-4)
