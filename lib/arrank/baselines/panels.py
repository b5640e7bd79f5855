"""Figure 3's panels (paper section 5.3): the ARR runs of notebook 05 beside the DE / CE results
of ``arrank.baselines.figure3``, the curve tables and the plotly figures.

Which queries a curve is scored on is part of its name and of its legend group: the DE and CE
lookup tables are trained on every query and scored on the evaluation queries (a capacity
question); an ARR run of notebook 05 is drawn twice, on a seeded sample of its *training* queries
(the same question) and on the held-out queries it never trained on. Tables hold R@k as
fractions (as results.json), figures show percent (``arrank.common.display``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from arrank.training.schemes import loss_label, scheme_order

SCORED_ON = {"training": "training queries", "held-out": "held-out queries"}
ARR_METRIC = lambda c: c in ("cvr", "ndcg", "n_queries") or c.startswith("recall@")


def arr_runs(dataset: Mapping[str, Any], n_queries: int, root: Path | None = None, pattern: str = "*") -> pd.DataFrame:
    """Finished ARR runs (``outputs/05_train/<run>/results.json``, names matching the glob
    ``pattern``) whose params match ``dataset`` and that evaluated ``n_queries`` queries, one row
    per run in the paper's row order (``variant_order``): run, label (ARR and the paper's name of
    its loss variant, ``schemes.loss_label``, made distinct), scheme, alpha, targets, beta,
    combined, sampling, the held-out metrics and the same under ``train_``. Empty (with a ``label`` column) if none."""
    from arrank.baselines.figure3 import matching_runs

    rows, params = [], []
    for run, result in sorted(matching_runs("05_train", pattern, dataset, root), key=lambda found: found[0].name):
        p, m = result.get("params", {}), result.get("metrics", {})
        if m.get("n_queries") != n_queries:
            continue
        label = f"ARR {loss_label(dict(p))}"  # the paper's name of the loss: ARR Fractional α=2
        kept = {k: p.get(k) for k in ("scheme", "alpha", "targets", "beta", "combined", "sampling")}
        metrics = {k: v for k, v in m.items() if ARR_METRIC(k.removeprefix("train_"))}
        rows.append({"run": run.name, "label": label, **kept, **metrics})
        params.append(p)
    distinct_labels(rows, params)
    order = sorted(range(len(rows)), key=lambda i: (variant_order(params[i]), rows[i]["run"]))
    return pd.DataFrame([rows[i] for i in order]) if rows else pd.DataFrame(columns=["run", "label"])


def arr_per_query(run: str | None, root: Path | None = None, stem: str = "05_train") -> pd.DataFrame | None:
    """The per-query metrics of an ARR run on its training queries (``per_query_train.csv``,
    notebook 05) as ``baselines.figure3.per_query_rows`` gives the DE / CE's: query, cvr, ndcg,
    r1..r5, checked against its results.json (``outputs.read_rows``). None when there is no such run or it
    was made before notebook 05 saved them."""
    from arrank.baselines.figure3 import per_query_rows
    from arrank.common.outputs import read_results, read_rows, run_path
    from arrank.evaluation.evaluate import training_metrics

    path = run_path(stem, run, root) / "per_query_train.csv" if run else None
    if path is None or not path.exists():
        return None
    trained = training_metrics(read_results(path.parent / "results.json")["metrics"])
    return per_query_rows(read_rows(path, ["query", "ndcg"], trained), run).drop(columns="config")


def variant_order(p: Mapping[str, Any]) -> tuple:
    """Sort key of a 05_train run in the paper's row order: zero-shot, NTP, fractional (by α),
    stepwise, then the trie variants (by β), the combined ones last."""
    scheme = scheme_order(p.get("scheme"))
    num = lambda v: float(v) if isinstance(v, (int, float)) else 0.0
    trie = p.get("targets") == "trie"
    alpha = num(p.get("alpha")) if p.get("scheme") == "fractional" else 0.0
    return (p.get("steps") != 0, trie, bool(p.get("combined")), scheme, alpha, num(p.get("beta")) if trie else 0.0)


def distinct_labels(rows: list[dict[str, Any]], params: list[Mapping[str, Any]]) -> None:
    """Make equal ``label``s distinct, in place: add the parameters in which those runs differ
    (not the run name), e.g. ``ARR NTP (steps=400)`` / ``ARR NTP (steps=1200)``; the run name
    when their parameters are the same."""
    from arrank.common.display import greek, number_text

    by_label: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        by_label.setdefault(row["label"], []).append(i)
    for same in (idx for idx in by_label.values() if len(idx) > 1):
        keys = sorted({k for i in same for k in params[i]} - {"run_name"})
        differ = [k for k in keys if len({json.dumps(params[i].get(k), sort_keys=True, default=str) for i in same}) > 1]
        for i in same:
            extra = ", ".join(f"{greek(k)}={number_text(params[i].get(k))}" for k in differ) or rows[i]["run"]
            rows[i]["label"] = f"{rows[i]['label']} ({extra})"


CURVE_COLUMNS = ["curve", "model", "n", "alpha", "k", "recall", "scored_on"]
BASELINE_GROUP = "DE and CE: trained and scored on the same queries"
ARR_GROUPS = {
    "training": "ARR: scored on its training queries (dashed)",
    "held-out": "ARR: scored on held-out queries (dotted)",
}


def _curve_rows(row: Mapping[str, Any], ks: Sequence[int], prefix: str, **fields: Any) -> list[dict[str, Any]]:
    """``fields`` plus k and recall for every k at which ``row`` has ``<prefix>k``."""
    values = ((k, row.get(f"{prefix}{k}")) for k in ks)
    return [{**fields, "k": k, "recall": float(v)} for k, v in values if v is not None and not pd.isna(v)]


def recall_curves(results: pd.DataFrame, ks: Sequence[int], vary: str = "n", prefix: str = "recall@") -> pd.DataFrame:
    """Long table (curve, model, n, alpha, k, recall, scored_on) of R@k (fractions) against k for
    every DE / CE result row; they are scored on queries they trained on (the capacity setting)."""
    out = []
    for _, row in results.reset_index().iterrows():
        name = f"{row['model'].upper()} n={row['n']}"
        if vary == "alpha" or row["model"] == "ce":  # the CE's alpha is named in panel (a) too
            name += f" α={row['alpha']:g}"
        fields = {"curve": name, "model": row["model"], "n": row["n"], "alpha": row["alpha"]}
        out += _curve_rows(row, ks, prefix, **fields, scored_on=SCORED_ON["training"])
    return pd.DataFrame(out, columns=CURVE_COLUMNS)


def arr_curves(arr: pd.DataFrame | None, ks: Sequence[int]) -> pd.DataFrame:
    """Long table of the ARR runs' R@k: per run its curve on its training queries
    (``train_recall@k``, when the run has it) then on the held-out queries, named
    ``<label> (training queries)`` / ``<label> (held-out queries)``."""
    out = []
    for _, row in (arr if arr is not None else pd.DataFrame()).iterrows():
        for kind, prefix in (("training", "train_recall@"), ("held-out", "recall@")):
            fields = {"model": "arr", "n": None, "alpha": row.get("alpha"), "scored_on": SCORED_ON[kind]}
            out += _curve_rows(row, ks, prefix, curve=f"{row['label']} ({SCORED_ON[kind]})", **fields)
    return pd.DataFrame(out, columns=CURVE_COLUMNS)


def panel_table(results: pd.DataFrame, panel: str, ks: Sequence[int], arr: pd.DataFrame | None = None) -> pd.DataFrame:
    """The curves of one Figure 3 panel ("a", "b" or "c"), in parameter order: (a) the DEs by n,
    the CE, then the ARR runs (``arr_curves``); (b), (c) by alpha. R@k as fractions."""
    chosen = results[results["panels"].str.split(",").apply(lambda p: panel in p)]
    order = ["model_rank", "n", "alpha"] if panel == "a" else ["model_rank", "alpha"]
    chosen = chosen.assign(model_rank=chosen["model"].map({"de": 0, "ce": 1})).sort_values(order, kind="stable")
    curves = recall_curves(chosen, ks, vary="n" if panel == "a" else "alpha")
    extra = arr_curves(arr, ks) if panel == "a" else pd.DataFrame()
    return pd.concat([df for df in (curves, extra) if len(df)], ignore_index=True) if len(extra) else curves


def _curve_colors(curves: pd.DataFrame) -> dict[str, str]:
    """Colours: a model's baseline curves on an ordered scale of the parameter they vary (n:
    blues, alpha: viridis; both: viridis in (n, alpha) order), a lone CE dark grey, a lone DE
    blue; the ARR variants a qualitative palette, the same colour for a variant's two curves."""
    from arrank.common.display import ordered_colors, qualitative_colors

    colors: dict[str, str] = {}
    base = curves[curves["model"] != "arr"].drop_duplicates("curve")
    for model, part in base.groupby("model", sort=False):
        ns, alphas = part["n"].nunique(), part["alpha"].nunique()
        if len(part) == 1:
            colors[part["curve"].iloc[0]] = "#333333" if model == "ce" else "#1f77b4"
            continue
        keys = list(zip(part["n"] if ns > 1 else [0] * len(part), part["alpha"] if alphas > 1 else [0] * len(part)))
        scale = ordered_colors(keys, "Blues", 0.45, 1.0) if alphas == 1 else ordered_colors(keys)
        colors.update({c: scale[k] for c, k in zip(part["curve"], keys)})
    arr = curves[curves["model"] == "arr"]
    variants = arr["curve"].str.replace(r" \((training|held-out) queries\)$", "", regex=True)
    palette = qualitative_colors(variants)
    colors.update({c: palette[v] for c, v in zip(arr["curve"], variants)})
    return colors


def recall_figure(curves: pd.DataFrame, title: str, y_title: str = "R@k (%)"):
    """Plotly line plot of R@k (percent) against k, one line per curve in the table's order:
    DE / CE solid (one legend group: trained and scored on the same queries), ARR on its training
    queries dashed and on held-out queries dotted (a legend group each)."""
    import plotly.graph_objects as go

    from arrank.common.display import percent_axis, style

    colors, seen = _curve_colors(curves), set()
    fig = go.Figure()
    for name, part in curves.groupby("curve", sort=False):
        arr = (part["model"] == "arr").any()
        kind = "held-out" if part["scored_on"].iloc[0] == SCORED_ON["held-out"] else "training"
        group = ARR_GROUPS[kind] if arr else BASELINE_GROUP
        fig.add_scatter(
            x=part["k"],
            y=part["recall"] * 100,
            mode="lines+markers",
            name=name,
            legendgroup=group,
            legendgrouptitle_text=None if group in seen else group,
            line={"color": colors[name], "dash": ("dot" if kind == "held-out" else "dash") if arr else "solid"},
        )
        seen.add(group)
    style(fig, title)
    percent_axis(fig, "yaxis", y_title)
    fig.update_layout(
        xaxis={"title": "k", "dtick": 1}, legend={"font": {"size": 11}, "groupclick": "toggleitem", "tracegroupgap": 12}
    )
    return fig


def panel_a_note(arr: pd.DataFrame | None) -> str:
    """Figure 3 (a)'s second title line: which curves answer which question."""
    note = "DE, CE: trained and scored on the same queries (a capacity test: can the table fit the rankings?)"
    if arr is None or not len(arr):
        return note
    trained = arr.filter(like="train_recall@").notna().any().any()
    sample = "on a sample of its training queries (dashed: the same question) and " if trained else ""
    return f"{note}<br>ARR: {sample}on held-out queries it never trained on (dotted: a harder test)"


def figure3_panels(
    results: pd.DataFrame,
    ks: Sequence[int],
    arr: pd.DataFrame | None,
    figure3: bool,
    de_dims: Sequence[int] = (),
    ce_dim: int = 0,
    alpha: float = 0.0,
    alpha_dim: int = 0,
) -> dict[str, tuple[pd.DataFrame, Any]]:
    """name -> (curve table, plotly figure) of the run: Figure 3 (a), (b), (c) when ``figure3``,
    else one ``recall_at_k`` panel with every trained config (and the ARR runs); plus
    ``retrieval_recall_at_k`` (DE full-corpus retrieval) when the results hold it. Tables hold
    fractions, figures percent."""
    from arrank.common.display import subtitle

    out: dict[str, tuple[pd.DataFrame, Any]] = {}
    with_arr = arr is not None and len(arr)
    if figure3:
        dims = ", ".join(map(str, sorted(de_dims)))
        head = f"Figure 3 (a): R@k of DEs (n = {dims}) and a CE (n = {ce_dim}), both at α = {alpha:g}"
        titles = {
            "a": subtitle(head + (", and ARR" if with_arr else ""), panel_a_note(arr)),
            "b": subtitle(f"Figure 3 (b): DE, n = {alpha_dim}, for each α", BASELINE_GROUP),
            "c": subtitle(f"Figure 3 (c): CE, n = {ce_dim}, for each α", BASELINE_GROUP),
        }
        for panel, title in titles.items():
            table = panel_table(results, panel, ks, arr)
            out[f"figure3{panel}"] = (table, recall_figure(table, title))
    else:
        table = panel_table(results.assign(panels="a"), "a", ks, arr)
        title = "R@k of the trained model" + (" and the ARR runs" if with_arr else "")
        out["recall_at_k"] = (table, recall_figure(table, subtitle(title, panel_a_note(arr))))
    if any(c.startswith("retrieval_recall@") for c in results.columns):
        de = results[results["model"] == "de"].sort_values(["n", "alpha"], kind="stable")
        table = recall_curves(de, ks, vary="alpha", prefix="retrieval_recall@")
        title = subtitle("DE full-corpus retrieval", "R@k with every synset of the hierarchy as a candidate")
        out["retrieval_recall_at_k"] = (table, recall_figure(table, title))
    return out


def loss_figure(logs: pd.DataFrame, title: str = "Training loss"):
    """Plotly training curves (mean loss per logged interval, log scale), one line per config,
    named ``DE n=32 α=5``, in (model, n, α) order, each model's α on an ordered scale."""
    import plotly.graph_objects as go

    from arrank.common.display import log_axis, ordered_colors, style

    keys = list(dict.fromkeys(logs["config"]))
    parsed = {k: (m, int(n[1:]), float(a.removeprefix("alpha"))) for k in keys for m, n, a in [k.split("_", 2)]}
    order = sorted(keys, key=lambda k: ({"de": 0, "ce": 1}.get(parsed[k][0], 2), parsed[k][1], parsed[k][2]))
    colors = ordered_colors([(m != "de", n, a) for m, n, a in parsed.values()])
    fig = go.Figure()
    for key in order:
        part = logs[logs["config"] == key]
        m, n, a = parsed[key]
        fig.add_scatter(
            x=part["step"],
            y=part["loss"],
            mode="lines",
            name=f"{m.upper()} n={n} α={a:g}",
            line={"color": colors[(m != "de", n, a)], "dash": "solid" if m == "de" else "dash"},
        )
    style(fig, title)
    fig.update_layout(xaxis_title="step", yaxis_title="loss")
    return log_axis(fig, logs["loss"])
