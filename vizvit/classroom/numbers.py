"""The model's numbers, as a lecturer would write them on the board."""

from __future__ import annotations

from dataclasses import dataclass

from vizvit.errors import UserError
from vizvit.model.models import VitModel


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
        ("patch size", f"{p}×{p} pixels × 3 colours = {p * p * 3:,} numbers"),
        ("patches per side", f"{g.grid[0]} × {g.grid[1]}"),
        ("patches", f"{g.num_patches:,}"),
        ("prefix tokens", f"{g.num_prefix_tokens} ({' '.join(g.prefix_names)})" if g.num_prefix_tokens
         else "0 (no [CLS]: an attention-pooling head sums up)"),
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


@dataclass(frozen=True)
class AttentionCost:
    """Cost of ONE attention table (one head, one layer) for a square-ish image."""

    pixel_tokens: int  # prefix + one token per pixel: the same [CLS] on both sides
    pixel_weights: int  # (H·W)²
    pixel_bytes: int  # float32
    patch_tokens: int  # prefix + ⌊H/P⌋·⌊W/P⌋
    patch_weights: int  # N²
    patch_bytes: int
    ratio: float  # pixel_weights / patch_weights
    uncovered: tuple[int, int] = (0, 0)  # (H mod P, W mod P): pixels a stride-P conv never reads


def attention_cost(height: int, width: int, patch: int, num_prefix_tokens: int = 1,
                   bytes_per_weight: int = 4) -> AttentionCost:
    """Tokens and n² weights of one attention table: pixels as tokens vs P×P patches.

    At 224×224 with P=16: 50,177 pixel tokens ([CLS] too) -> 2,517,731,329 weights (~10 GB float32)
    versus 197 patch tokens -> 38,809 weights (~155 kB): about 64,875× fewer. [CLS] is counted on
    both sides: on the patches' only, the ratio was 64,872×, neither (50,177/197)² nor (50,176/196)².
    A side that is not a multiple of P is allowed: the stride-P patch conv covers ⌊side/P⌋
    patches and never reads the last side mod P pixels (`uncovered`).
    """
    if min(height, width, patch) < 1:
        raise UserError("Resolution and patch size must be positive.")
    if patch > min(height, width):
        raise UserError(f"A {patch}-pixel patch does not fit in {height}×{width} pixels.")
    n_pix = num_prefix_tokens + height * width
    n_tok = num_prefix_tokens + (height // patch) * (width // patch)
    return AttentionCost(
        pixel_tokens=n_pix, pixel_weights=n_pix ** 2, pixel_bytes=n_pix ** 2 * bytes_per_weight,
        patch_tokens=n_tok, patch_weights=n_tok ** 2, patch_bytes=n_tok ** 2 * bytes_per_weight,
        ratio=n_pix ** 2 / n_tok ** 2, uncovered=(height % patch, width % patch),
    )


def human_bytes(n: float) -> str:
    """Decimal units, as a lecturer says them: 155 kB, 10.1 GB."""
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit in ("B", "kB") else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def attention_cost_table(c: AttentionCost) -> list[list[str]]:
    """Rows for the calculator panel."""
    return [
        ["", "pixels as tokens", "patches as tokens"],
        ["tokens n", f"{c.pixel_tokens:,}", f"{c.patch_tokens:,}"],
        ["weights n²", f"{c.pixel_weights:,}", f"{c.patch_weights:,}"],
        ["one table, float32", human_bytes(c.pixel_bytes), human_bytes(c.patch_bytes)],
        ["ratio", f"{c.ratio:,.0f}×", "1×"],
    ]
