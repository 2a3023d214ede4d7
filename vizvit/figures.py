"""plotly Figure builders. Pure: data in, Figure out."""

from __future__ import annotations

from typing import Sequence

import plotly.graph_objects as go

from .forward import Prediction


def top5_bar(top5: Sequence[Prediction], baseline: dict[int, float] | None = None,
             title: str = "Top-5 predictions") -> go.Figure:
    """Horizontal bars, best on top. baseline: class index -> probability before a
    perturbation; when given, each bar's text shows the change."""
    labels = [_short(p.label) for p in top5][::-1]
    probs = [p.prob for p in top5][::-1]
    text = []
    for p in list(top5)[::-1]:
        t = f"{p.prob:.1%}"
        if baseline is not None:
            d = p.prob - baseline.get(p.index, 0.0)
            t += f" ({d:+.1%})"
        text.append(t)
    fig = go.Figure(go.Bar(x=probs, y=labels, orientation="h", text=text, textposition="auto",
                           marker_color="#1f77b4",
                           hovertemplate="%{y}: %{x:.4f}<extra></extra>"))
    fig.update_layout(title=title, xaxis=dict(range=[0, 1], tickformat=".0%"),
                      margin=dict(l=10, r=10, t=40, b=10), height=260)
    return fig


def _short(label: str, n: int = 32) -> str:
    first = label.split(",")[0]
    return first if len(first) <= n else first[: n - 1] + "…"
