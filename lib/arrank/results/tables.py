"""The results of a sweep in the paper's layout (paper §5.2, Tables 1-3; Figure 3): from a sweep's
collected points (``arrank.workbook.report.collect``), ``results_table`` makes the paper's table
(rows = loss variants labelled like the paper, columns = CVR, nDCG, R@k in percent), ``markdown``
prints it with the best values in bold, ``recall_curves`` and ``parameter_curves`` draw it.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pandas as pd

from arrank.common.display import (
    SYMBOLS,
    metric_title,
    number_text,
    ordered_colors,
    percent_axis,
    qualitative_colors,
    style,
)
from arrank.common.outputs import save_table
from arrank.results import statistics as S
from arrank.results.claims import metric_name
from arrank.results.paper import LOWER_IS_BETTER, PAPER
from arrank.training.schemes import loss_label


def baseline_label(params: dict[str, Any]) -> str:
    """Figure 3's name of a 07_de_ce_baselines run: DE or CE, its dimension n and λ(r) = 1/r^α."""
    model = str(params.get("model"))
    if model not in ("de", "ce"):
        return "Figure 3 (every configuration)"
    return f"{model.upper()} n={number_text(params.get('n'))}, α={number_text(params.get('alpha'))}"


LABELLED = {
    "05_train": ({"scheme", "alpha", "targets", "beta", "combined"}, loss_label),
    "07_de_ce_baselines": ({"model", "n", "alpha"}, baseline_label),
}


def variant_label(notebook: str, params: dict[str, Any], varying: list[str]) -> str:
    """Row label of a point: the paper's variant name for notebooks that have one, followed by
    any other parameter the sweep varies and this point sets (but the seed, which is averaged over)."""
    covered, name = LABELLED.get(notebook, (set(), None))
    rest = [k for k in varying if k not in covered and k != "seed" and params.get(k) is not None]
    extra = ", ".join(f"{SYMBOLS.get(k, k)}={number_text(params.get(k))}" for k in rest)
    if name is None:
        return extra or notebook
    return f"{name(params)} ({extra})" if extra else name(params)


def metric_columns(columns: Any) -> list[str]:
    """cvr, ndcg, then recall@k by k: the paper's column order."""
    recalls = sorted((c for c in columns if re.fullmatch(r"recall@\d+", str(c))), key=lambda c: int(c.split("@")[1]))
    return [c for c in ("cvr", "ndcg") if c in columns] + recalls


def results_table(
    frame: pd.DataFrame,
    paper: str | None = None,
    floor: dict[str, float] | None = None,
    per_query: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The paper's layout: one row per variant (sweep order; mean over seeds), columns variant,
    source, runs, then CVR, nDCG, R@k in percent, and ``<metric> sd`` when a variant has several
    runs. With ``per_query`` (``arrank.workbook.report.per_query_frame``) also ``<metric> ci``
    (``interval_halfwidths``). With ``paper`` (a key of PAPER) the paper's row follows each
    variant it reports; with ``floor`` a last row holds the random-scores floor."""
    done = frame[frame["state"] == "done"]
    if done.empty:
        raise ValueError("no finished points in this sweep: run it first (make sweep SWEEP=...)")
    metrics = metric_columns(done.columns)
    grouped = done.groupby("label", sort=False)[metrics]
    means, sds, runs = grouped.mean() * 100, grouped.std() * 100, grouped.size()
    several = bool((runs > 1).any())
    halfwidths = interval_halfwidths(per_query, list(means.index), metrics)
    reference = PAPER[paper] if paper else None
    rows = []
    for label in means.index:  # the sd columns are kept only when a variant has several runs (``columns``)
        row = {"variant": label, "source": "this run", "runs": int(runs[label]), **means.loc[label].to_dict()}
        row.update({f"{m} sd": sds.loc[label, m] for m in metrics})
        rows.append(row | {f"{m} ci": v for m, v in halfwidths.get(label, {}).items()})
        if reference and label in reference["rows"]:
            values = dict(zip(reference["columns"], reference["rows"][label]))  # the frame: NaN where it has none
            rows.append({"variant": label, "source": "paper", "runs": None, **values})
    if floor:
        scaled = {m: floor.get(m, math.nan) * 100 for m in metrics}
        rows.append({"variant": "Random scores", "source": "random scores", "runs": None, **scaled})
    spreads = [f"{m} {kind}" for kind, shown in (("sd", several), ("ci", halfwidths)) if shown for m in metrics]
    return pd.DataFrame(rows, columns=["variant", "source", "runs", *metrics, *spreads]).round(4)


TABLE_RESAMPLES = 1999  # the tables' ± (a display); the findings' intervals use statistics.N_RESAMPLES


def interval_halfwidths(
    per_query: pd.DataFrame | None, labels: list[str], metrics: list[str]
) -> dict[str, dict[str, float]]:
    """label -> metric -> the half-width (percent) of its mean's 95% interval, for the labels
    and metrics ``per_query`` has values of (half the width of ``statistics.mean_interval``); {} without it."""
    out: dict[str, dict[str, float]] = {}
    for label in labels:
        if not S.has_variants(per_query, label):
            continue
        for m in metrics:
            try:
                values = S.variant_values(per_query, label, m)
            except ValueError:  # no values of this metric for this variant (e.g. R@5 of 4-item queries)
                continue
            if len(values.by_query) >= 2:
                _, lo, hi = S.mean_interval(values, n_resamples=TABLE_RESAMPLES)
                out.setdefault(label, {})[m] = 100 * (hi - lo) / 2
    return out


def caption(table: pd.DataFrame) -> str:
    """What the table's ``±`` is: the 95% interval's half-width (bootstrap over queries, seed
    variation in quadrature) where the table has it, else one standard deviation over seeds."""
    if any(str(c).endswith(" ci") for c in table.columns):
        return (
            "± half the width of the 95% confidence interval of the mean over the held-out queries "
            "(BCa bootstrap over queries; a variant with several seeds also carries their spread, "
            "docs/findings.md); percent. A row without ± has no per-query data."
        )
    if any(str(c).endswith(" sd") for c in table.columns):
        return "± one standard deviation over the seeds of a variant; percent."
    return ""


def best_variants(table: pd.DataFrame, source: str = "this run") -> dict[str, list[str]]:
    """Per metric, the variant(s) with the best value (to 2 decimals) among the rows of
    ``source``: the lowest CVR, the highest nDCG and R@k. Empty when fewer than two rows."""
    rows = table[table["source"] == source]
    out: dict[str, list[str]] = {}
    for m in metric_columns(table.columns):
        values = rows[m].round(2)
        if values.notna().sum() < 2:
            continue
        best = values.min() if m in LOWER_IS_BETTER else values.max()
        out[m] = list(rows.loc[values == best, "variant"])
    return out


def markdown_lines(head: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table's lines: the head, its rule, then a line per row of cells (``|`` escaped)."""
    line = lambda cells: "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"
    return [line(head), "|" + "|".join("---" for _ in head) + "|", *map(line, rows)]


def markdown(table: pd.DataFrame) -> str:
    """The table as Markdown, values to 2 decimals ± what ``caption`` says, the best value of each
    column in bold (among this sweep's rows, and separately among the paper's)."""
    metrics = metric_columns(table.columns)
    show_source = table["source"].nunique() > 1
    show_runs = bool((table["runs"].fillna(1) > 1).any())
    best = {s: best_variants(table, s) for s in ("this run", "paper")}
    has_ci = any(str(c).endswith(" ci") for c in table.columns)  # then ± is the interval only (caption)
    titles = ["CVR % (↓)" if m == "cvr" else f"{metric_name(m)} (↑)" for m in metrics]  # the paper's headers
    head = ["variant", *["source"] * show_source, *["runs"] * show_runs, *titles]

    def cell(row: pd.Series, m: str) -> str:
        if pd.isna(row[m]):
            return "–"
        several = row["runs"] and row["runs"] > 1
        spread = row.get(f"{m} ci") if has_ci else row.get(f"{m} sd") if several else None
        text = f"{row[m]:.2f}" + (f" ± {spread:.2f}" if spread is not None and pd.notna(spread) else "")
        return f"**{text}**" if row["variant"] in best.get(row["source"], {}).get(m, []) else text

    rows = [
        [row["variant"], *[row["source"]] * show_source]
        + [str(int(row["runs"])) if pd.notna(row["runs"]) else ""] * show_runs
        + [cell(row, m) for m in metrics]
        for _, row in table.iterrows()
    ]
    note = caption(table)
    return "\n".join(markdown_lines(head, rows)) + "\n" + (f"\n{note}\n" if note else "")


def write_tables(table: pd.DataFrame, run_dir: Path, name: str = "results_table") -> list[Path]:
    """``name.csv`` (plain numbers) and ``name.md`` (the bold Markdown) in the run directory."""
    md = run_dir / f"{name}.md"
    md.write_text(markdown(table))
    return [save_table(table, run_dir, name), md]


FAMILY_SCALES = {"α": "Blues", "β": "Greens"}


def variant_family(label: str) -> tuple[str, float | None]:
    """(family, value) of a variant label: the label with the number of its last α= or β= taken
    out, and that number: ``Fractional α=2`` -> (``Fractional α``, 2.0); ``Combined α=2, β=5`` ->
    (``Combined α=2, β``, 5.0); ``NTP`` -> (``NTP``, None)."""
    if not (found := list(re.finditer(r"([αβ])=([0-9.]+)", label))):
        return label, None
    last = found[-1]
    return label[: last.start()] + last.group(1) + label[last.end() :], float(last.group(2))


def variant_colors(variants: list[str]) -> dict[str, str]:
    """A colour per variant: a family of two or more (``variant_family``: Fractional α=1..5, Trie
    β=1..5) on an ordered scale of its parameter (α blues, β greens, others viridis), every other
    variant from the qualitative palette."""
    families: dict[str, list[tuple[float, str]]] = {}
    for v in variants:
        family, value = variant_family(v)
        if value is not None:
            families.setdefault(family, []).append((value, v))
    colors: dict[str, str] = {}
    for family, members in families.items():
        if len(members) > 1:
            symbol = next((s for s in FAMILY_SCALES if family.endswith(s) or f"{s}," in family), None)
            lo, hi = (0.4, 1.0) if symbol else (0.0, 0.9)
            scale = ordered_colors([val for val, _ in members], FAMILY_SCALES.get(symbol, "Viridis"), lo, hi)
            colors.update({v: scale[val] for val, v in members})
    colors.update(qualitative_colors(v for v in variants if v not in colors))
    return colors


def legend_order(variants: list[str]) -> list[str]:
    """Variants in first-seen order of their family, by parameter value within a family."""
    families = list(dict.fromkeys(variant_family(v)[0] for v in variants))
    key = lambda v: (families.index(variant_family(v)[0]), variant_family(v)[1] or 0)
    return sorted(dict.fromkeys(variants), key=key)


def recall_curves(table: pd.DataFrame, title: str = "R@k per variant"):
    """Plotly: R@k (%) against k, one line per variant of this sweep, in parameter order, α and β
    families on ordered colour scales (dotted: the paper's rows, hidden until clicked, and the
    random floor in grey)."""
    import plotly.graph_objects as go

    recalls = [m for m in metric_columns(table.columns) if m.startswith("recall@")]
    ks = [int(m.split("@")[1]) for m in recalls]
    order = legend_order(list(table.loc[table["source"] != "random scores", "variant"]))
    colors = variant_colors(order)
    rank = {v: i for i, v in enumerate(order)}
    rows = table.assign(_o=table["variant"].map(rank).fillna(len(rank))).sort_values("_o", kind="stable")
    fig = go.Figure()
    for _, row in rows.iterrows():
        dashed = row["source"] != "this run"
        name = row["variant"] + ("" if not dashed or row["source"] == "random scores" else f" ({row['source']})")
        color = "grey" if row["source"] == "random scores" else colors[row["variant"]]
        fig.add_scatter(
            x=ks,
            y=[row[m] for m in recalls],
            mode="lines+markers",
            name=name,
            line={"dash": "dot" if dashed else "solid", "color": color},
            visible="legendonly" if row["source"] == "paper" else True,
        )
    style(fig, title)
    fig.update_layout(xaxis_title="k", xaxis={"tickvals": ks})
    return percent_axis(fig, "yaxis", "R@k (%)")


def parameter_curves(frame: pd.DataFrame, notebook: str, metrics: tuple[str, ...] = ("cvr", "ndcg")):
    """Plotly: each metric (rows) against each numeric parameter the sweep varies (columns), one
    line per family of variants that differ only in that parameter (mean over seeds); variants on
    no line are dashed horizontal references. None if no family has two points."""
    import plotly.express as px
    from plotly.subplots import make_subplots

    done = frame[frame["state"] == "done"]
    metrics = tuple(m for m in metrics if m in done.columns and done[m].notna().any())
    skip = {"run_name", "state", "label", "profile", *metric_columns(done.columns)}
    varying = [c for c in done.columns if c not in skip]
    is_number = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
    numeric = [k for k in varying if k != "seed" and done[k].map(is_number).all()]
    lines: dict[str, list[tuple[str, pd.DataFrame]]] = {}
    on_a_line: set[str] = set()
    for x in numeric:
        others = [k for k in varying if k not in (x, "seed")]
        groups = done.groupby(others, sort=False, dropna=False) if others else [((), done)]
        for _, group in groups:
            curve = group.groupby(x, sort=True)[list(metrics)].mean() * 100
            if len(curve) >= 2:
                symbol = SYMBOLS.get(x, x)
                family = re.sub(rf"{re.escape(symbol)}=[^,) ]+", symbol, group["label"].iloc[0])
                lines.setdefault(x, []).append((family, curve))
                on_a_line.update(group["label"])
    if not lines or not metrics:
        return None
    xs = list(lines)
    fig = make_subplots(
        rows=len(metrics), cols=len(xs), shared_xaxes=True, column_titles=[f"against {SYMBOLS.get(x, x)}" for x in xs]
    )
    alone = done[~done["label"].isin(on_a_line)].groupby("label", sort=False)[list(metrics)].mean() * 100
    families = list(dict.fromkeys(f for x in xs for f, _ in lines[x]))
    palette = px.colors.qualitative.Plotly
    for c, x in enumerate(xs, start=1):
        for r, m in enumerate(metrics, start=1):
            for family, curve in lines[x]:
                fig.add_scatter(
                    x=list(curve.index),
                    y=list(curve[m]),
                    mode="lines+markers",
                    name=family,
                    legendgroup=family,
                    showlegend=(r == 1),
                    line={"color": palette[families.index(family) % len(palette)]},
                    row=r,
                    col=c,
                )
            for label, values in alone.iterrows():
                fig.add_hline(y=values[m], line_dash="dash", annotation_text=label, row=r, col=c)
            fig.update_yaxes(title_text=metric_title(m), row=r, col=1)
        fig.update_xaxes(title_text=SYMBOLS.get(x, x), row=len(metrics), col=c)
    style(fig, f"{notebook}: " + " and ".join(metric_title(m) for m in metrics) + " against the swept parameters")
    fig.update_layout(height=320 * len(metrics) + 120)
    return fig


def sweep_profile(frame: pd.DataFrame) -> str | None:
    """The profile every finished point ran (None if they differ or none finished)."""
    profiles = set(frame.loc[frame["state"] == "done", "profile"])
    return profiles.pop() if len(profiles) == 1 else None
