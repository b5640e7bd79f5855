"""The results of a sweep in the paper's layout (paper §5.2, Tables 1-3; Figure 3).

``collect`` reads the results.json of every point of a sweep (``arrank.workbook.sweep``); ``results_table``
turns them into the paper's table: rows = loss variant (labelled like the paper: NTP, Fractional
α=k, Stepwise, Trie β=k, Combined α=a, β=b), columns = CVR, nDCG, R@k, in percent as in the paper,
averaged over seeds when the sweep has several, optionally with the paper's own numbers beside
each row (``PAPER``, transcribed from the .tex) and the random-scores floor of notebook 05.
``markdown`` prints it with the best value of each column in bold; ``recall_curves`` and
``parameter_curves`` are the plotly figures.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pandas as pd

from arrank.workbook.display import (SYMBOLS, metric_title, number_text, ordered_colors, percent_axis,
                                     percent_text, qualitative_colors, style)
from arrank.workbook.outputs import run_path, save_table
from arrank.workbook.sweep import Sweep, point_states, results_path

_T1 = ["cvr", "ndcg", "recall@1", "recall@2", "recall@3", "recall@4", "recall@5"]
_T2 = ["ndcg", "recall@1", "recall@2", "recall@5", "recall@10", "recall@25", "recall@50"]

# The paper's numbers (percent), in the order of its rows: Table 1 (tab:wordnet-results), Table 2
# (tab:esci-results), Table 3 (tab:wordnet-combined-loss-from-checkpoint, Appendix F).
# tests/test_report.py checks them against the .tex when it is at hand.
PAPER: dict[str, dict[str, Any]] = {
    "table1": {"caption": "Table 1: WordNet, 5000 held-out queries", "columns": _T1, "rows": {
        "NTP": [27.66, 94.89, 99.96, 62.43, 55.3, 55.16, 63.42],
        "Fractional α=1": [0.0, 99.6, 91.1, 87.68, 88.81, 92.13, 93.94],
        "Fractional α=2": [0.0, 99.83, 97.74, 95.69, 95.48, 96.89, 96.58],
        "Fractional α=3": [0.0, 99.81, 99.22, 97.35, 96.16, 96.07, 95.53],
        "Fractional α=4": [0.02, 99.78, 99.36, 97.46, 95.63, 96.03, 95.31],
        "Fractional α=5": [0.04, 99.67, 99.6, 97.14, 94.55, 95.71, 93.52],
        "Stepwise": [0.0, 99.6, 51.62, 69.88, 82.09, 89.6, 93.34],
        "Trie β=1": [1.48, 96.54, 98.1, 72.93, 63.06, 59.64, 64.25],
        "Trie β=2": [1.38, 96.54, 99.3, 67.31, 57.51, 56.98, 62.45],
        "Trie β=3": [2.04, 96.34, 99.44, 67.58, 59.95, 58.58, 63.17],
        "Trie β=4": [4.54, 96.36, 99.58, 68.53, 62.25, 62.12, 67.41],
        "Trie β=5": [13.04, 96.47, 99.78, 70.84, 65.12, 64.81, 70.43]}},
    "table2": {"caption": "Table 2: ESCI, 310 held-out queries", "columns": _T2, "rows": {
        "NTP": [95.23, 95.16, 52.58, 27.64, 23.51, 37.98, 62.99],
        "Trie β=1": [97.21, 70.0, 56.61, 45.57, 46.27, 54.78, 69.58],
        "Trie β=2": [97.21, 70.32, 58.06, 51.07, 48.08, 54.96, 69.03],
        "Trie β=3": [97.11, 68.71, 56.13, 48.03, 45.78, 52.31, 67.63],
        "Trie β=4": [96.96, 69.03, 54.84, 44.6, 43.9, 50.29, 67.7],
        "Trie β=5": [96.89, 66.77, 56.13, 44.21, 42.4, 50.72, 67.61]}},
    "table3": {"caption": "Table 3: WordNet, combined loss, 5000 held-out queries", "columns": _T1, "rows": {
        "Combined α=2, β=1": [0.0, 99.12, 73.38, 83.37, 86.83, 90.08, 91.51],
        "Combined α=2, β=2": [0.02, 99.74, 92.36, 94.45, 94.73, 95.39, 96.11],
        "Combined α=2, β=3": [0.0, 99.71, 94.28, 94.1, 94.49, 95.46, 96.06],
        "Combined α=2, β=4": [0.0, 99.7, 94.9, 94.3, 94.28, 95.53, 95.67],
        "Combined α=2, β=5": [0.0, 99.74, 95.92, 94.54, 95.17, 95.38, 95.7],
        "Combined α=2, β=6": [0.0, 99.77, 97.68, 96.29, 95.67, 95.7, 95.69],
        "Combined α=2, β=7": [0.0, 99.83, 97.82, 95.74, 94.83, 95.79, 95.93],
        "Combined α=2, β=9": [0.0, 99.76, 98.32, 95.72, 94.86, 94.85, 95.19],
        "Combined α=2, β=25": [0.0, 99.71, 97.38, 94.42, 94.64, 94.82, 95.05]}},
}
LOWER_IS_BETTER = {"cvr"}
SOURCES = ("this run", "paper", "random scores")


def loss_label(params: dict[str, Any]) -> str:
    """The paper's name of a 05_train loss variant (eq. 2: item weight λ(r), token targets y), or
    ``Zero-shot`` for a run of 0 steps."""
    if params.get("steps") == 0:
        return "Zero-shot"  # nothing trained: the model as loaded (the item weights play no part)
    scheme, trie = params.get("scheme"), params.get("targets") == "trie"
    a, b = number_text(params.get("alpha")), number_text(params.get("beta"))
    item = {"indicator": "NTP", "fractional": f"Fractional α={a}", "stepwise": "Stepwise"}.get(scheme, str(scheme))
    if not trie:
        return item
    if scheme == "indicator":
        return f"Trie β={b}"
    if scheme == "fractional" and params.get("combined"):
        return f"Combined α={a}, β={b}"
    return f"{item} + trie β={b}" + (" (combined)" if params.get("combined") else "")


def baseline_label(params: dict[str, Any]) -> str:
    """Figure 3's name of a 07_de_ce_baselines run: DE or CE, its dimension n and λ(r) = 1/r^α."""
    model = str(params.get("model"))
    if model not in ("de", "ce"):
        return "Figure 3 (every configuration)"
    return f"{model.upper()} n={number_text(params.get('n'))}, α={number_text(params.get('alpha'))}"


LABELLED = {"05_train": ({"scheme", "alpha", "targets", "beta", "combined"}, loss_label),
            "07_de_ce_baselines": ({"model", "n", "alpha"}, baseline_label)}


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


def collect(sweep: Sweep, outputs_root: Path | None = None) -> pd.DataFrame:
    """One row per point of the sweep: run_name, state (done / failed / missing), label, the
    varied parameters, profile, and the metrics of its results.json (fractions) when done."""
    rows = []
    for point, state in zip(sweep.points, point_states(sweep, outputs_root)):
        params, metrics = point.resolved, {}
        if state == "done":
            results = json.loads(results_path(sweep, point, outputs_root).read_text())
            params, metrics = results["params"], results["metrics"]
        row = {"run_name": point.run_name, "state": state,
               "label": variant_label(sweep.notebook, params, sweep.grid_keys), "profile": params.get("profile")}
        row.update({k: params.get(k) for k in sweep.grid_keys})
        row.update({k: v for k, v in metrics.items() if k in metric_columns(metrics)})
        rows.append(row)
    return pd.DataFrame(rows)


def random_floor(sweep: Sweep, frame: pd.DataFrame, outputs_root: Path | None = None) -> dict[str, float] | None:
    """The random-scores row of the first finished run's ``metrics.csv`` (notebook 05 writes it):
    the floor every row should be read against (docs/design.md). None if there is none."""
    for run_name in frame.loc[frame["state"] == "done", "run_name"]:
        table = run_path(sweep.notebook, run_name, outputs_root) / "metrics.csv"
        if table.exists():
            df = pd.read_csv(table)
            if "run" in df.columns and (df["run"] == "random scores").any():
                row = df[df["run"] == "random scores"].iloc[0]
                return {k: float(row[k]) for k in metric_columns(df.columns)}
    return None


def results_table(frame: pd.DataFrame, paper: str | None = None, floor: dict[str, float] | None = None) -> pd.DataFrame:
    """The paper's layout: one row per variant (sweep order; mean over seeds), columns variant,
    source, runs, then CVR, nDCG, R@k in percent, and ``<metric> sd`` when a variant has several
    runs. With ``paper`` (a key of PAPER) the paper's row follows each variant it reports; with
    ``floor`` a last row holds the random-scores floor."""
    done = frame[frame["state"] == "done"]
    if done.empty:
        raise ValueError("no finished points in this sweep: run it first (make sweep SWEEP=...)")
    metrics = metric_columns(done.columns)
    grouped = done.groupby("label", sort=False)[metrics]
    means, sds, runs = grouped.mean() * 100, grouped.std() * 100, grouped.size()
    several = bool((runs > 1).any())
    reference = PAPER[paper] if paper else None
    rows = []
    for label in means.index:
        row = {"variant": label, "source": "this run", "runs": int(runs[label]), **means.loc[label].to_dict()}
        if several:
            row.update({f"{m} sd": sds.loc[label, m] for m in metrics})
        rows.append(row)
        if reference and label in reference["rows"]:
            values = dict(zip(reference["columns"], reference["rows"][label]))
            rows.append({"variant": label, "source": "paper", "runs": None,
                         **{m: values.get(m, math.nan) for m in metrics}})
    if floor:
        rows.append({"variant": "Random scores", "source": "random scores", "runs": None,
                     **{m: floor.get(m, math.nan) * 100 for m in metrics}})
    columns = ["variant", "source", "runs"] + metrics + ([f"{m} sd" for m in metrics] if several else [])
    return pd.DataFrame(rows, columns=columns).round(4)


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


def column_title(metric: str) -> str:
    """CVR % (↓), nDCG (↑), R@k (↑) as in the paper's headers."""
    if metric == "cvr":
        return "CVR % (↓)"
    if metric == "ndcg":
        return "nDCG (↑)"
    return f"R@{metric.split('@')[1]} (↑)"


def markdown(table: pd.DataFrame) -> str:
    """The table as Markdown, values to 2 decimals (± sd over seeds), the best value of each
    column in bold (among this sweep's rows, and separately among the paper's)."""
    metrics = metric_columns(table.columns)
    show_source = table["source"].nunique() > 1
    show_runs = bool((table["runs"].fillna(1) > 1).any())
    best = {s: best_variants(table, s) for s in ("this run", "paper")}
    head = ["variant"] + (["source"] if show_source else []) + (["runs"] if show_runs else []) + \
        [column_title(m) for m in metrics]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for _, row in table.iterrows():
        cells = [row["variant"]] + ([row["source"]] if show_source else []) + \
            ([str(int(row["runs"])) if pd.notna(row["runs"]) else ""] if show_runs else [])
        for m in metrics:
            value = row[m]
            if pd.isna(value):
                cells.append("–")
                continue
            text = f"{value:.2f}"
            sd = row.get(f"{m} sd")
            if sd is not None and pd.notna(sd) and row["runs"] and row["runs"] > 1:
                text += f" ± {sd:.2f}"
            if row["variant"] in best.get(row["source"], {}).get(m, []):
                text = f"**{text}**"
            cells.append(text)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


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
    found = list(re.finditer(r"([αβ])=([0-9.]+)", label))
    if not found:
        return label, None
    last = found[-1]
    return label[:last.start()] + last.group(1) + label[last.end():], float(last.group(2))


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
            scale = ordered_colors([val for val, _ in members], FAMILY_SCALES.get(symbol, "Viridis"),
                                   *((0.4, 1.0) if symbol else (0.0, 0.9)))
            colors.update({v: scale[val] for val, v in members})
    colors.update(qualitative_colors(v for v in variants if v not in colors))
    return colors


def legend_order(variants: list[str]) -> list[str]:
    """Variants in first-seen order of their family, by parameter value within a family."""
    first = {}
    for i, v in enumerate(variants):
        first.setdefault(variant_family(v)[0], i)
    key = lambda v: (first[variant_family(v)[0]], variant_family(v)[1] if variant_family(v)[1] is not None else 0)
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
        fig.add_scatter(x=ks, y=[row[m] for m in recalls], mode="lines+markers", name=name,
                        line={"dash": "dot" if dashed else "solid", "color": color},
                        visible="legendonly" if row["source"] == "paper" else True)
    style(fig, title)
    fig.update_layout(xaxis_title="k", xaxis={"tickvals": ks})
    return percent_axis(fig, "yaxis", "R@k (%)")


def parameter_curves(frame: pd.DataFrame, notebook: str, metrics: tuple[str, ...] = ("cvr", "ndcg")):
    """Plotly: each metric (rows) against each numeric parameter the sweep varies (columns,
    e.g. α and β), one line per family of variants that differ only in that parameter (mean over
    seeds); variants on no line are dashed horizontal references. None if no family has two points."""
    import plotly.express as px
    from plotly.subplots import make_subplots

    done = frame[frame["state"] == "done"]
    metrics = tuple(m for m in metrics if m in done.columns and done[m].notna().any())
    varying = [c for c in done.columns if c not in {"run_name", "state", "label", "profile"}
               and c not in metric_columns(done.columns)]
    numeric = [k for k in varying if k != "seed" and done[k].map(lambda v: isinstance(v, (int, float))
                                                                  and not isinstance(v, bool)).all()]
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
    fig = make_subplots(rows=len(metrics), cols=len(xs), shared_xaxes=True,
                        column_titles=[f"against {SYMBOLS.get(x, x)}" for x in xs])
    alone = done[~done["label"].isin(on_a_line)].groupby("label", sort=False)[list(metrics)].mean() * 100
    families = list(dict.fromkeys(f for x in xs for f, _ in lines[x]))
    palette = px.colors.qualitative.Plotly
    for c, x in enumerate(xs, start=1):
        for r, m in enumerate(metrics, start=1):
            for family, curve in lines[x]:
                fig.add_scatter(x=list(curve.index), y=list(curve[m]), mode="lines+markers", name=family,
                                legendgroup=family, showlegend=(r == 1),
                                line={"color": palette[families.index(family) % len(palette)]}, row=r, col=c)
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


def paper_reference(sweep: Sweep, frame: pd.DataFrame, paper_rows: str = "auto") -> str | None:
    """The key of PAPER whose rows go beside the table: ``yes`` always (an error when the paper
    has no numbers for this sweep), ``auto`` when every finished point ran the paper profile."""
    if paper_rows not in ("auto", "yes", "no"):
        raise ValueError(f"paper_rows={paper_rows!r} is not allowed; choose one of ['auto', 'yes', 'no']")
    if paper_rows == "no":
        return None
    if sweep.paper not in PAPER:
        if paper_rows == "yes":
            raise ValueError(f"the paper gives no numbers for sweep {sweep.name} (paper: {sweep.paper}); "
                             f"numbers exist for {sorted(PAPER)}")
        return None
    return sweep.paper if paper_rows == "yes" or sweep_profile(frame) == "paper" else None


def table1_findings(frame: pd.DataFrame, near: float = 0.02) -> pd.DataFrame:
    """The CPU-scale reproduction checks of Table 1's findings (section 5.2) on a WordNet sweep's
    collected runs (``collect``; one row per finished point, mean over seeds per variant):

    - NTP (indicator, one-hot) has the highest CVR of all variants, and every fractional variant
      has at most half of it;
    - fractional alpha = 2 has a higher mean of R@2..R@5 than NTP;
    - NTP's R@1 is the best or within ``near`` (absolute) of the best;
    - every trie variant has a lower CVR than NTP;
    - where the sweep has a zero-shot row (``steps = 0``, the model before fine-tuning, which is no
      loss variant and is left out of the checks above): every fine-tuned variant has a higher
      nDCG and mean R@1..R@5 than it.

    One row per check: check, holds (True / False, None when the sweep lacks the variants) and
    the numbers compared, in percent as the paper's tables (``near`` is a fraction, as in
    results.json)."""
    done = frame[frame["state"] == "done"].copy()
    if done.empty:
        raise ValueError("no finished points in this sweep: run it first")
    zero = done["steps"].eq(0) if "steps" in done else pd.Series(False, index=done.index)
    zero_shot, done = done[zero], done[~zero]
    get = lambda col, default=None: done[col] if col in done else pd.Series(default, index=done.index)
    scheme, targets = get("scheme", "indicator").fillna("indicator"), get("targets", "onehot").fillna("onehot")
    combined = get("combined", False).fillna(False).astype(bool)
    ntp = done[(scheme == "indicator") & (targets == "onehot") & ~combined]
    frac = done[(scheme == "fractional") & (targets == "onehot") & ~combined]
    frac2 = frac[get("alpha").loc[frac.index].astype(float) == 2.0] if len(frac) else frac
    trie = done[(targets == "trie") & ~combined]
    by = lambda part: part.groupby("label", sort=False).mean(numeric_only=True)
    r25 = [f"recall@{k}" for k in range(2, 6) if f"recall@{k}" in done]  # the R@2..R@5 the sweep has
    mean25 = lambda part: float(part[r25].mean(axis=1).mean())
    pct = lambda value: percent_text(float(value))
    rows = []
    if len(ntp):
        ntp_cvr, variants = float(ntp["cvr"].mean()), by(done)
        others = variants.drop(index=ntp["label"].iloc[0], errors="ignore")
        holds = bool((others["cvr"] < ntp_cvr).all()) and (not len(frac) or bool((by(frac)["cvr"] <= ntp_cvr / 2).all()))
        rows.append({"check": "NTP has the highest CVR; fractional variants at most half of it", "holds": holds,
                     "numbers": f"CVR (%): NTP {pct(ntp_cvr)}; " + ", ".join(f"{k} {pct(v)}" for k, v in others["cvr"].items())})
        best_r1 = float(variants["recall@1"].max())
        rows.append({"check": f"NTP's R@1 is the best or within {near * 100:g} points of it",
                     "holds": float(ntp["recall@1"].mean()) >= best_r1 - near,
                     "numbers": f"R@1 (%): NTP {pct(ntp['recall@1'].mean())}, best {pct(best_r1)}"})
        if len(frac2) and r25:
            span = f"R@2..R@{r25[-1].split('@')[1]}" if len(r25) > 1 else "R@2"
            rows.append({"check": "fractional α=2 has a higher mean R@2..R@5 than NTP",
                         "holds": mean25(frac2) > mean25(ntp),
                         "numbers": f"mean {span} (%): fractional α=2 {pct(mean25(frac2))}, NTP {pct(mean25(ntp))}"})
        if len(trie):
            t = by(trie)["cvr"]
            rows.append({"check": "trie variants lower CVR relative to NTP", "holds": bool((t < ntp_cvr).all()),
                         "numbers": f"CVR (%): NTP {pct(ntp_cvr)}; " + ", ".join(f"{k} {pct(v)}" for k, v in t.items())})
    if len(zero_shot) and len(done):
        mean15 = lambda part: part[[f"recall@{k}" for k in range(1, 6) if f"recall@{k}" in part]].mean(axis=1)
        tuned = by(done.assign(m15=mean15(done)))
        z_ndcg, z15 = float(zero_shot["ndcg"].mean()), float(mean15(zero_shot).mean())
        rows.append({"check": "every fine-tuned variant beats the zero-shot model (nDCG and mean R@1..R@5)",
                     "holds": bool((tuned["ndcg"] > z_ndcg).all() and (tuned["m15"] > z15).all()),
                     "numbers": f"nDCG / mean R@1..R@5 (%): zero-shot {pct(z_ndcg)} / {pct(z15)}; " + ", ".join(
                         f"{k} {pct(r.ndcg)} / {pct(r.m15)}" for k, r in tuned.iterrows())})
    return pd.DataFrame(rows, columns=["check", "holds", "numbers"])

