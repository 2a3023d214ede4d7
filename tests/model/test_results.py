"""vizvit/model/results.py: what an analysis keeps alive in bytes, and which tokens a masked view keeps."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from synthetic import GEOMS

from vizvit.errors import UserError
from vizvit.model.results import Prediction, kept_token_indices, nbytes, top_predictions


def test_nbytes_counts_a_shared_buffer_once_and_a_view_as_its_whole_buffer():
    t = torch.zeros(10, 4)  # 160 bytes
    assert nbytes(t) == 160
    assert nbytes((t, t[0], {"again": t[3:]})) == 160  # one buffer, however many views of it
    assert nbytes(t[0]) == 160  # a view keeps its whole buffer alive
    a = np.zeros(6, np.float64)
    assert nbytes([a, a[2:], b"abc", "de"]) == 48 + 3 + 2


def test_kept_tokens_drop_the_masked_patches_after_the_prefix():
    g = GEOMS["g7"]  # one prefix token, 49 patches
    keep = kept_token_indices((0, 2), g)
    assert keep.tolist() == [0, 2, *range(4, g.seq_len)]  # tokens 1 and 3 are patches 0 and 2
    with pytest.raises(UserError, match="Every patch is masked"):
        kept_token_indices(tuple(range(g.num_patches)), g)
    assert kept_token_indices(tuple(range(g.num_patches)), g, allow_empty=True).tolist() == [0]
    with pytest.raises(UserError, match="patch numbers 0..48"):
        kept_token_indices((49,), g)


def test_the_top5_are_the_largest_probabilities_best_first():
    probs = torch.tensor([0.05, 0.4, 0.1, 0.3, 0.02, 0.13])
    got = top_predictions(probs, tuple("abcdef"))
    assert [p.label for p in got] == ["b", "d", "f", "c", "a"]
    assert got[0] == Prediction(1, "b", pytest.approx(0.4))
