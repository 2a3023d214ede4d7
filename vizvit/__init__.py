"""vizvit: see how a Vision Transformer reads a photo.

    import vizvit
    vm = vizvit.load_model("google/vit-base-patch16-224")   # or "random:vit-base-patch16-224"
    a = vizvit.analyze(vm, vizvit.load_image("cat.jpg"))
    a.top5, a.attentions.shape                                # (L, H, N, N)
"""

import sys as _sys

from vizvit.service.threads import configure_threads

if "torch" not in _sys.modules:
    configure_threads()  # PASSIVE OpenMP waits must be set before torch loads (CLI, notebooks)

from vizvit.model.engine import Analysis, Prediction, analyze, load_model
from vizvit.model.images import View, load_image, model_input_view
from vizvit.model.models import DEFAULT_MODEL, Geometry, VitModel
from vizvit.session import AnalysisCache, PhotoKey, Workbench

__all__ = [
    "Analysis", "AnalysisCache", "DEFAULT_MODEL", "Geometry", "PhotoKey", "Prediction", "View",
    "VitModel", "Workbench", "analyze", "load_image", "load_model", "model_input_view",
]
