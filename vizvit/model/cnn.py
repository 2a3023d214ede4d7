"""An optional CNN beside the ViT in the shift sweep.

A convolution slides over every pixel; a ViT cuts a fixed grid. Shifting the photo by a
few pixels therefore moves a CNN's answer differently from a ViT's. Any transformers
image classifier that is not a ViT works (e.g. microsoft/resnet-50); it is loaded only
when the command line names one (`python app.py --cnn microsoft/resnet-50`), and the
page shows nothing of it otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from transformers import AutoConfig, AutoModelForImageClassification, PreTrainedModel

from vizvit.errors import UserError
from vizvit.model.engine import cnn_probs
from vizvit.model.images import Fill, shift_view
from vizvit.model.models import FAMILIES, labels_of, pick_device

IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class Cnn:
    id: str
    model: PreTrainedModel  # eval mode, on `device`
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    labels: tuple[str, ...]
    device: torch.device


def load_cnn(name: str, device: str = "auto") -> Cnn:
    """Load a convolutional image classifier; ValueError with what to do if it cannot be."""
    try:
        config = AutoConfig.from_pretrained(name)  # never trust_remote_code
        if config.model_type in FAMILIES:  # any ViT family
            raise UserError(f"{name!r} is a ViT; --cnn wants a convolutional network such as "
                            "microsoft/resnet-50.")
        model = AutoModelForImageClassification.from_pretrained(name)
    except ValueError:
        raise
    except Exception as e:  # hub and file errors come in many types
        raise UserError(f"Cannot load the CNN {name!r} ({type(e).__name__}): check the id or "
                        "directory.") from e
    dev = pick_device(device)
    model.eval().to(dev)
    try:
        from transformers.image_processing_utils import ImageProcessingMixin

        pp, _ = ImageProcessingMixin.get_image_processor_dict(name)
    except (OSError, ValueError):
        pp = {}  # no preprocessor_config.json: the ImageNet statistics CNNs are trained with
    mean, std = tuple(pp.get("image_mean", IMAGENET_MEAN)), tuple(pp.get("image_std", IMAGENET_STD))
    return Cnn(name, model, mean, std, labels_of(config, True), dev)


def cnn_shift_probs(cnn: Cnn, base_view: np.ndarray, shifts: list[int], fill: Fill = "edge") -> np.ndarray:
    """(len(shifts),) probability of the CNN's own unshifted top-1 class, the photo shifted
    k pixels right. base_view: (H, W, 3) uint8, the ViT's model-input view, so both models
    see the same pixels. One batch; the CNN's convolutions accept any size."""
    views = [shift_view(base_view, 0, 0, fill)] + [shift_view(base_view, k, 0, fill) for k in shifts]
    x = torch.from_numpy(np.stack(views)).permute(0, 3, 1, 2).float() / 255.0
    x = (x - torch.tensor(cnn.mean).view(1, 3, 1, 1)) / torch.tensor(cnn.std).view(1, 3, 1, 1)
    probs = cnn_probs(cnn.model, x, cnn.device)
    top1 = int(probs[0].argmax())
    return probs[1:, top1].numpy()
