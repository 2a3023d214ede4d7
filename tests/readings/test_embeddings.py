"""The Embeddings readings (vizvit/readings/embeddings.py): the per-photo data against plain references (the
patches' pixels, vit-explain's rollout, the enlarged view), cached per photo, the filter PCA once per model."""

from __future__ import annotations

import base64

import cv2
import numpy as np
from tiny import EXAMPLES
from vit_explain import vit_explain_rollout

from vizvit.pictures import render
from vizvit.readings import embeddings as emb
from vizvit.session import PhotoKey, Workbench


def test_each_thumbnail_is_its_patchs_pixels(tiny16, cat):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    a = wb.analysis(PhotoKey(tiny16.id, wb.add_photo(cat)))
    g, p = tiny16.geometry, tiny16.geometry.patch_size
    thumbs = emb.patch_thumbnails(a.input_view, g)
    assert len(thumbs) == g.num_patches
    for i in (0, 17, g.num_patches - 1):
        r, c = divmod(i, g.grid[1])
        head, b64 = thumbs[i].split(",", 1)
        assert head == "data:image/png;base64"
        bgr = cv2.imdecode(np.frombuffer(base64.b64decode(b64), np.uint8), cv2.IMREAD_COLOR)
        assert np.array_equal(bgr[..., ::-1], a.input_view[r * p:(r + 1) * p, c * p:(c + 1) * p])


def test_the_data_holds_the_plain_rollout_and_the_enlarged_view(tiny16, cat):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    a = wb.analysis(PhotoKey(tiny16.id, wb.add_photo(cat)))
    d = emb.prepare(tiny16, a)
    ref = vit_explain_rollout([x[None].float() for x in a.attentions], 0.0, "mean", keepdim=True)
    assert d.rollout.dtype == np.float32 and d.rollout.shape == tiny16.geometry.grid
    assert np.allclose(d.rollout / d.rollout.max(), ref, atol=1e-5)
    s = render.display_scale(tiny16.geometry)
    assert np.array_equal(d.big, a.input_view.repeat(s, 0).repeat(s, 1))


def test_data_is_cached_per_photo_and_the_filters_once_per_model(tiny16, cat):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    one = wb.handle(PhotoKey(tiny16.id, wb.add_photo(cat)))
    two = wb.handle(PhotoKey(tiny16.id, wb.add_photo(str(EXAMPLES / "coffee.jpg"))))
    assert wb.peek_derived(one.key, emb.EMBEDDINGS) is None
    d1 = emb.data(one)
    assert wb.peek_derived(one.key, emb.EMBEDDINGS) is d1 and emb.data(one) is d1
    assert emb.data(two).filters is d1.filters is emb.filters_of(one), "one filter PCA per model"
    assert emb.data(two) is not d1


def test_token_similarities_and_the_cls_share_against_plain_loops(tiny16, cat):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    a = wb.analysis(PhotoKey(tiny16.id, wb.add_photo(cat)))
    g = tiny16.geometry
    x = a.hidden_states[2].double().numpy()  # (N, D)
    sims = emb.token_similarities(a, 2)
    for i, j in ((0, 0), (0, 5), (7, 100), (196, 3)):
        want = x[i] @ x[j] / np.linalg.norm(x[i]) / np.linalg.norm(x[j])
        assert abs(sims[i, j] - want) < 1e-5
    cells = np.zeros(g.grid, bool)
    cells[0, 0] = cells[3, 4] = True
    att = a.attentions[-1].double().numpy()  # (H, N, N)
    want = sum(att[:, 0, 1 + r * g.grid[1] + c].mean() for r, c in ((0, 0), (3, 4)))
    assert abs(emb.cls_attention_share(a, g, cells) - want) < 1e-5
