"""Figures of the evaluation (notebook 06): per-rank mean scores, violation examples, R@k bars;
each titled with the run and its scale (``scale_text``), in the workbook's display convention
(``arrank.common.display``: R@k in percent)."""

from __future__ import annotations

from typing import Any, Mapping

import pandas as pd

from arrank.common import display

ERROR_BARS = "error bars: ±1 standard error of the mean over the queries that have the rank"


def scale_text(scale: Mapping[str, Any], n_queries: int) -> str:
    """The run and its scale for a figure title, e.g. ``table1_wordnet_workbook-scheme=fractional-alpha=2:
    tiny, 400 steps, 300 held-out queries`` (``evaluate.model_under_test``'s ``scale``)."""
    steps = scale.get("steps")
    trained = "untrained" if steps == 0 else (f"{steps} steps" if steps is not None else "steps not recorded")
    return f"{scale.get('run')}: {scale.get('model_name')}, {trained}, {n_queries} held-out queries"


def per_rank_figure(curves: Mapping[str, pd.DataFrame], scale: str = "", title: str = "Mean score per gold rank"):
    """One line per model of ``evaluate.per_rank_scores``: the mean score per gold rank (the
    negative first), ±1 standard error as error bars; the title's second line names the run and
    its scale (``scale_text``) and the third says what the error bars are."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for label, frame in curves.items():
        fig.add_scatter(
            x=list(frame.index),
            y=frame["mean"],
            error_y={"type": "data", "array": frame["sem"]},
            mode="lines+markers",
            name=label,
            customdata=frame[["count", "mean_predicted_rank"]].to_numpy(),
            hovertemplate="rank %{x}: mean %{y:.3f} over %{customdata[0]} queries; "
            "mean position in its query %{customdata[1]:.2f}<extra></extra>",
        )
    display.style(fig)
    fig.update_layout(
        title=display.subtitle(title, f"{scale}<br>{ERROR_BARS}" if scale else ERROR_BARS),
        xaxis_type="category",
        showlegend=len(curves) > 1,
        margin={"t": 120},
        xaxis_title="gold rank of the docID (1 = the most specific hypernym; negative: the sampled negative)",
        yaxis_title="mean score (mean token log-probability)",
    )
    return fig


def per_rank_reading(curve: pd.DataFrame) -> str:
    """What the per-rank figure shows for this run, in words from its numbers: which rank has
    the highest mean score, where the mean rises with the rank instead of falling, where the
    negative sits, and where the model puts rank 1 within its own query."""
    if not (ranks := [r for r in curve.index if r != "negative"]):
        return "No relevant docID was scored."
    mean = curve.loc[ranks, "mean"]
    top = str(mean.idxmax())
    if top == ranks[0]:
        lines = [f"Rank 1 has the highest mean score ({mean.iloc[0]:.3f}), as a rank-aware model should."]
    else:
        lines = [
            f"Rank {top}, not rank 1, has the highest mean score ({mean[top]:.3f} against rank 1's "
            f"{mean.iloc[0]:.3f}): on average this model scores a more general hypernym above the most "
            "specific one, which is what R@1 penalises."
        ]
    sem, count = curve["sem"].fillna(0), curve["count"]
    rises = [
        f"{a}→{b} ({'beyond' if mean[b] - mean[a] > sem[a] + sem[b] else 'within'} the error bars; "
        f"{int(count[b])} queries have rank {b})"
        for a, b in zip(ranks, ranks[1:])
        if mean[b] > mean[a]
    ]
    lines.append(
        "The mean falls with every rank." if not rises else f"The mean rises with the rank at {', '.join(rises)}."
    )
    if "negative" in curve.index:
        neg = curve.loc["negative", "mean"]
        above = [r for r in ranks if mean[r] < neg]
        lines.append(
            f"The negative is below every rank (mean {neg:.3f})."
            if not above
            else f"The negative's mean ({neg:.3f}) is above rank(s) {', '.join(above)}: CVR counts such queries."
        )
    lines.append(
        f"Within its own query, the rank-1 docID sits at position {curve.loc[ranks[0], 'mean_predicted_rank']:.2f} "
        "on average (1 = the model's top)."
    )
    return " ".join(lines)


def violations_figure(records: list[dict[str, Any]], examples: pd.DataFrame, scale: str = ""):
    """Every candidate's score for the queries of ``evaluate.violation_examples``: relevant
    docIDs coloured by gold rank (one ordered scale for all), the negative as a red cross above some positive."""
    import plotly.graph_objects as go

    by_query = {r["query"]: r for r in records}
    shown = [by_query[q] for q in examples["query"]]
    relevant = [(r["query"], d, rank, r["scores"][d]) for r in shown for rank, d in enumerate(r["relevant"], start=1)]
    query, docid, rank, score = zip(*relevant) if relevant else ((),) * 4  # no examples: an empty figure
    fig = go.Figure()
    fig.add_scatter(
        x=score,
        y=query,
        mode="markers",
        marker={"color": rank, "colorscale": "Viridis", "size": 9, "colorbar": {"title": "gold rank"}},
        text=docid,
        showlegend=False,
        hovertemplate="%{text}: %{x:.3f}",
    )
    fig.add_scatter(
        x=[r["scores"][r["negative"]] for r in shown],
        y=[r["query"] for r in shown],
        mode="markers",
        showlegend=False,
        marker={"symbol": "x", "color": "red", "size": 12},
        text=[r["negative"] for r in shown],
        hovertemplate="negative %{text}: %{x:.3f}",
    )
    title = "Worst constraint violations"
    display.style(fig, display.subtitle(title, scale) if scale else title)
    fig.update_layout(xaxis_title="score (mean token log-probability)", yaxis_title="query")
    return fig


def recall_figure(rows: Mapping[str, Mapping[str, Any]], scale: str = "", title: str = "R@k on the held-out queries"):
    """Grouped bars of ``recall@k`` per k in percent, one group member per row (model, floor, beam search)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for label, m in rows.items():
        ks = [k for k in m if k.startswith("recall@") and m[k] is not None]
        fig.add_bar(x=[k.replace("recall@", "R@") for k in ks], y=[display.percent(m[k]) for k in ks], name=label)
    display.style(fig, display.subtitle(title, scale) if scale else title)
    fig.update_layout(barmode="group")
    return display.percent_axis(fig, "yaxis", "R@k (%)")


def per_rank_from_run(run_dir) -> tuple[pd.DataFrame, Any, str]:
    """(per-rank table, figure, reading) redrawn from a finished notebook 06 run folder (its
    ``per_query_scores.parquet`` and results.json; ``model_name`` and ``steps`` from its 05 run
    where 06 did not record them), without the model."""
    from pathlib import Path

    from arrank.common.outputs import damaged, read_results, read_table
    from arrank.evaluation.evaluate import per_rank_scores, trained_scale

    m, path = read_results(Path(run_dir) / "results.json")["metrics"], Path(run_dir) / "per_query_scores.parquet"
    scores, n = read_table(path, ["query", "docid", "rank", "score"]), m["n_queries"]
    if (found := scores["query"].nunique()) != n or scores.duplicated(["query", "docid"]).any():
        raise damaged(path, f"{found} queries where its run scored {n}" if found != n else "a candidate has two rows")
    scale = {"run": Path(m["source"]).name, "model_name": m.get("model_name"), "steps": m.get("steps")}
    if "model_name" not in m and (source := Path(m["source"]) / "results.json").exists():
        scale = trained_scale(read_results(source)["params"], scale["run"])
    curve = per_rank_scores(scores)
    return curve, per_rank_figure({"this model": curve}, scale_text(scale, m["n_queries"])), per_rank_reading(curve)
