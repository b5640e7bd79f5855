"""Figures of the evaluation (notebook 06): per-rank mean scores, violation examples, R@k bars."""

from __future__ import annotations

from typing import Any, Mapping

import pandas as pd


def per_rank_figure(curves: Mapping[str, pd.DataFrame], title: str = "Mean score per gold rank"):
    """One line per model of ``evaluate.per_rank_scores`` (mean ± standard error per gold rank,
    the negative last): a rank-aware model's scores fall with the rank and stay above the negative."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for label, frame in curves.items():
        fig.add_scatter(x=list(frame.index), y=frame["mean"], error_y={"type": "data", "array": frame["sem"]},
                        mode="lines+markers", name=label)
    fig.update_layout(title=title, xaxis_title="gold rank of the docID (negative: the sampled negative)",
                      yaxis_title="mean score (mean token log-probability)", xaxis_type="category")
    return fig


def violations_figure(records: list[dict[str, Any]], examples: pd.DataFrame,
                      title: str = "Worst constraint violations"):
    """Every candidate's score for the queries of ``evaluate.violation_examples``: relevant
    docIDs coloured by gold rank, the negative as a red cross above some positive."""
    import plotly.graph_objects as go

    by_query = {r["query"]: r for r in records}
    fig = go.Figure()
    for q in examples["query"]:
        rec = by_query[q]
        pos = rec["relevant"]
        fig.add_scatter(x=[rec["scores"][d] for d in pos], y=[q] * len(pos), mode="markers",
                        marker={"color": list(range(1, len(pos) + 1)), "colorscale": "Viridis", "size": 9,
                                "colorbar": {"title": "gold rank"}}, text=pos, showlegend=False,
                        hovertemplate="%{text}: %{x:.3f}")
        fig.add_scatter(x=[rec["scores"][rec["negative"]]], y=[q], mode="markers", showlegend=False,
                        marker={"symbol": "x", "color": "red", "size": 12}, text=[rec["negative"]],
                        hovertemplate="negative %{text}: %{x:.3f}")
    fig.update_layout(title=title, xaxis_title="score", yaxis_title="query")
    return fig


def recall_figure(rows: Mapping[str, Mapping[str, Any]], title: str = "R@k on the held-out queries"):
    """Grouped bars of ``recall@k`` per k, one group member per row (model, floor, beam search)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for label, m in rows.items():
        ks = [k for k in m if k.startswith("recall@") and m[k] is not None]
        fig.add_bar(x=[k.replace("recall@", "R@") for k in ks], y=[m[k] for k in ks], name=label)
    fig.update_layout(title=title, barmode="group", yaxis_title="R@k", yaxis_range=[0, 1])
    return fig
