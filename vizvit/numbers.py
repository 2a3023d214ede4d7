"""The model's numbers, as a lecturer would write them on the board."""

from __future__ import annotations

from .models import VitModel


def model_numbers(vm: VitModel) -> list[tuple[str, str]]:
    """(what, value) rows for the numbers panel. Integers use thousands separators."""
    g = vm.geometry
    h, w = g.image_size
    p = g.patch_size
    n = g.seq_len
    per_head = n * n
    rows = [
        ("model", vm.display_name),
        ("input shape", f"(1, 3, {h}, {w})"),
        ("patch size", f"{p}×{p} pixels = {p * p * 3:,} numbers (×3 colours)"),
        ("patches per side", f"{g.grid[0]} × {g.grid[1]}"),
        ("patches", f"{g.num_patches:,}"),
        ("prefix tokens", f"{g.num_prefix_tokens} ([CLS])"),
        ("sequence length N", f"{n:,}"),
        ("hidden size D", f"{g.hidden_size:,}"),
        ("layers L", f"{g.num_layers}"),
        ("heads H", f"{g.num_heads}"),
        ("parameters", f"{vm.num_parameters:,}"),
        ("attention weights per head (N²)", f"{per_head:,}"),
        ("attention weights in all (L·H·N²)", f"{g.num_layers * g.num_heads * per_head:,}"),
        ("classes", f"{len(vm.labels):,}" if vm.has_classifier else "none (no classifier head)"),
        ("device", str(vm.device)),
    ]
    return rows
