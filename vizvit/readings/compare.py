"""Two models on one photo: which layer of each a shared cursor names, and the numbers a
verdict compares. Pure functions over arrays (no model, no cache); vizvit/views/compare.py
draws with them.

Depth is relative: a cursor at position t of D (D = the deeper model's layer count) names layer
ceil(t·L/D) of a model with L layers, so the last position is every model's last layer and two
models of equal depth meet layer for layer. Heads likewise: head k of the larger head count K is
head ceil(k·H/K) of a model with H heads.
"""

from __future__ import annotations

import math

import cv2
import numpy as np


def matched_layer(position: int, positions: int, num_layers: int) -> int:
    """Cursor position t (1..D) -> layer ceil(t·L/D) (1-based) of a model with L layers; integers only."""
    if not 1 <= position <= positions:
        raise ValueError(f"position {position} is outside 1..{positions}")
    return max(1, -(-position * num_layers // positions))


def layer_at_depth(depth: float, num_layers: int) -> int:
    """Relative depth in (0, 1] -> layer ceil(depth·L) (1-based): the layer matched_layer names for
    depth = t/D. depth·L is rounded to 1e-6 first, so t/D as a float (6/12 = 0.5) names the same layer
    as the integers do."""
    return min(num_layers, max(1, math.ceil(round(depth * num_layers, 6))))


def matched_head(head: int, heads: int, num_heads: int) -> int:
    """Head k (1..K) of the larger head count K -> head ceil(k·H/K) (1-based) of a model with H heads."""
    return matched_layer(head, heads, num_heads)


def on_grid(values: np.ndarray, grid: tuple[int, int]) -> np.ndarray:
    """(gh, gw) map -> (grid) by area averaging (shrinking) or bilinear (growing); as it is if equal."""
    v = np.asarray(values, np.float32)
    if v.shape == tuple(grid):
        return v
    shrink = grid[0] * grid[1] < v.size
    return cv2.resize(v, (grid[1], grid[0]), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR)


def common_grid(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """The finer of two patch grids: the coarser map is resampled to it."""
    return a if a[0] * a[1] >= b[0] * b[1] else b


def map_cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of two maps (flattened), after resampling both to the finer grid; nan when
    either is all zero."""
    g = common_grid(a.shape, b.shape)
    x, y = on_grid(a, g).ravel().astype(np.float64), on_grid(b, g).ravel().astype(np.float64)
    n = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y / n) if n > 0 else float("nan")


def centred_cosine(a: np.ndarray, b: np.ndarray) -> float:
    """map_cosine after each map's mean is subtracted (Pearson's r over the patches). Two maps of
    non-negative weights have a large plain cosine whatever their shapes (two uniform maps: 1): this
    one is 0 for unrelated maps and 1 for maps equal up to scale and offset."""
    g = common_grid(a.shape, b.shape)
    x, y = on_grid(a, g).ravel().astype(np.float64), on_grid(b, g).ravel().astype(np.float64)
    return map_cosine((x - x.mean()).reshape(g), (y - y.mean()).reshape(g))


def share_to(row: np.ndarray, num_prefix: int, cells: np.ndarray) -> float:
    """(N,) one query's attention row over every token (sums to 1); cells (gh, gw) bool, patches:
    the share of the row those patches get."""
    return float(np.asarray(row, np.float64)[num_prefix:][np.asarray(cells, bool).ravel()].sum())
