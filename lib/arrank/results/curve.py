"""Table 1's central finding against the training budget (arXiv 2601.05588, section 5.2): fractional
λ(r) = 1/r^α with α = 2 above NTP at R@2..R@5, decided at each budget a sweep scored.

Notebook 05 with ``eval_steps`` scores the same held-out queries at several optimizer steps of one
run; ``arrank.workbook.report.curve_frame`` gathers a sweep's into one frame, one row per (point,
step, query): ``point, variant, setting, seed, step, items, epochs, query, cvr, ndcg, r1..r5``
(fractions). Here each step is a budget and each claim of ``COMPARISONS`` is decided at it as Table 1's
findings are (``statistics.compare``: paired bootstrap over queries, seeds in quadrature,
docs/findings.md), with the threshold and side ``table1.table1_findings`` gives the same comparison.

A frame may hold the curves of several training settings (``setting``: items a step and held-out
queries, e.g. a GPU and a CPU sweep): each is decided on its own rows, never pooled with another's,
and its rows carry its ``setting``. A frame without the column is one setting, as is one whose
column holds one value.

The claims decided at one budget of one setting form a family: each verdict also comes Holm-adjusted
within it (``statistics.holm``; why this family: docs/findings.md).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from arrank.common.display import QUALITATIVE, log_axis, percent_axis, percent_text, style, subtitle
from arrank.common.findings import Finding, holm_cell, interval_text, p_text
from arrank.common.outputs import test_rows
from arrank.results import statistics as S
from arrank.results import table1
from arrank.results.claims import Claim, evaluate, metric_name, recall
from arrank.results.tables import TABLE_RESAMPLES, markdown_lines
from arrank.training.schemes import loss_label

NTP = loss_label({"scheme": "indicator"})
FRACTIONAL = loss_label({"scheme": "fractional", "alpha": 2})
BUDGET = ["step", "items", "epochs"]
SETTING = "setting"  # what a run's numbers are comparable within (report.curve_frame): never pooled across
# a run with validation queries names its schedule after its setting: Appendix B's cosine decays to the run's
# last step (one run per budget); a constant rate reads every budget off one run
SCHEDULE_TEXT = {"cosine": ", cosine to each budget", "constant": ", constant rate"}
LR_TEXT = ", lr "  # then a learning rate other than the profile's: runs of two rates never pool


def data_setting(setting: str) -> str:
    """A setting without its schedule (``SCHEDULE_TEXT``) and learning rate (``LR_TEXT``): the items a step
    and the held-out queries that runs of either share, among which a budget is chosen on validation
    (``results.chosen``)."""
    setting = setting.split(LR_TEXT)[0]
    for text in SCHEDULE_TEXT.values():
        setting = setting.removesuffix(text)
    return setting


def choice_text(setting: str) -> str:
    """What a setting adds to its data setting, short: ``cosine``, ``constant, lr 0.0002``, or ``""``."""
    rest = setting[len(data_setting(setting)) :]
    for key, text in SCHEDULE_TEXT.items():
        rest = rest.replace(text, f", {key}")
    return rest.removeprefix(", ")


CENTRAL = Claim("central", table1.CENTRAL, "fractional α=2 − NTP, mean R@2..R@5", FRACTIONAL, NTP, recall(2, 3, 4, 5))
COMPARISONS = (  # the central claim, then Table 1's R@1 and CVR checks of the same pair, with their thresholds
    CENTRAL,
    Claim("r1", "NTP's R@1 is within 2 points of fractional α=2's or above", "NTP − fractional α=2, R@1", NTP,
          FRACTIONAL, ("r1",), threshold=-table1.NEAR),
    Claim("cvr", "fractional α=2's CVR is at most half of NTP's", "fractional α=2 − ½ NTP, CVR", FRACTIONAL, NTP,
          ("cvr",), side="<", weight=0.5),
)  # fmt: skip
FINDING_COLUMNS = ["claim", *BUDGET, "a", "b", "a_mean", "b_mean", "estimate", "ci_low", "ci_high", "verdict"]
FINDING_COLUMNS += ["threshold", "side", "level", "numbers", "p_value", "p_holm", "holm_verdict", "family_size"]
HOLM = ["p_holm", "holm_verdict", "family_size"]  # the columns Holm's adjustment fills in
FAMILY = (SETTING, "step")  # the claims decided at one budget of one setting: one family for Holm's adjustment
METRICS = ("cvr", "ndcg", "r1", "r2", "r3", "r4", "r5")
METRIC_COLUMNS = ["variant", *BUDGET, "runs", "queries", "metric", "mean", "ci_low", "ci_high"]


def settings(frame: pd.DataFrame) -> dict:
    """The rows of each ``setting`` of a frame, in first-seen order; one unnamed setting (None), all of
    them, when it has no such column."""
    return dict(tuple(frame.groupby(SETTING, sort=False, dropna=False))) if SETTING in frame else {None: frame}


def _by_setting(findings: pd.DataFrame, claim: Claim) -> dict:
    """``claim``'s rows of ``curve_findings`` per setting (``settings``), each sorted by step; {}
    when it has none."""
    rows = findings[findings["claim"] == claim.claim]
    return {setting: part.sort_values("step") for setting, part in settings(rows).items() if len(part)}


def _with_setting(columns: list[str], frame: pd.DataFrame, after: str) -> list[str]:
    """``columns`` with ``setting`` right after ``after`` when ``frame`` has a ``setting`` column."""
    i = columns.index(after) + 1
    return [*columns[:i], *[SETTING] * (SETTING in frame.columns), *columns[i:]]


def budgets(curve: pd.DataFrame, variants: list[str]) -> pd.DataFrame:
    """The steps every one of ``variants`` was scored at, ascending, with their ``items`` and
    ``epochs`` (means over the variants' runs: an epoch counts the training queries' pairs, which
    the seed's split can change)."""
    rows = curve[curve["variant"].isin(variants)]
    shared = set.intersection(*(set(rows.loc[rows["variant"] == v, "step"]) for v in variants)) if len(rows) else set()
    rows = rows[rows["step"].isin(shared)]
    return rows.groupby("step", as_index=False)[["items", "epochs"]].mean()[BUDGET]


def curve_findings(
    curve: pd.DataFrame,
    claims: tuple[Claim, ...] = COMPARISONS,
    n_resamples: int = S.N_RESAMPLES,
    family: tuple[str, ...] = FAMILY,
) -> pd.DataFrame:
    """Each claim decided at each budget (step) both its variants were scored at, within each setting
    of the curve: one row per (claim, setting, step), ``FINDING_COLUMNS`` with ``setting`` after
    ``claim`` when the curve has the column; fractions. ``a_mean`` and ``b_mean`` are the variants'
    means over their queries (each query averaged over the runs), ``estimate`` the mean per-query
    ``a - weight * b`` with its 95% interval (``ci_low``, ``ci_high``: bootstrap over the
    queries, widened by the spread of the runs' means where a variant has several), ``verdict``
    holds / fails / undecided (``findings.decide``), ``numbers`` how the interval was made;
    ``p_value`` the p-value the interval implies and ``p_holm``, ``holm_verdict`` its Holm adjustment
    over the rows that share the values of ``family`` (default ``FAMILY``: the claims of one budget
    and setting; ``("claim", "setting")``: one claim's budgets), ``family_size`` of them. Claims
    whose variants the curve lacks have no rows."""
    rows = []
    parts = settings(test_rows(curve))
    steps = {setting: dict(tuple(part.groupby("step", sort=False))) for setting, part in parts.items()}
    for claim in claims:
        for setting, part in parts.items():
            for _, budget in budgets(part, [claim.a, claim.b]).iterrows():
                f = evaluate(claim, steps[setting][budget["step"]], n_resamples=n_resamples)
                means = {"a": claim.a, "b": claim.b, "a_mean": f.means[0], "b_mean": f.means[1]}
                rows.append({**f.as_dict(), SETTING: setting, **budget.to_dict(), **means})
    found = pd.DataFrame(rows, columns=_with_setting(FINDING_COLUMNS, curve, "claim")).astype({"step": int})
    return holm_families(found, family)


def holm_families(findings: pd.DataFrame, family: tuple[str, ...] = FAMILY) -> pd.DataFrame:
    """``curve_findings``' rows with ``p_holm``, ``holm_verdict`` and ``family_size`` (re)computed by
    Holm's adjustment (``statistics.holm``) over the rows that share the values of ``family`` (columns
    of the rows; ``setting`` is left out where they have none): the p-values and verdicts stay."""
    out = findings.copy()
    if out.empty:
        return out
    keys = [k for k in family if k in out.columns] or (lambda _: 0)
    for _, rows in out.groupby(keys, sort=False, dropna=False):
        found = S.holm([Finding.from_dict(r) for _, r in rows.iterrows()])
        out.loc[rows.index, HOLM] = [[f.p_holm, f.holm_verdict, f.family_size] for f in found]
    return out.astype({"p_holm": float, "family_size": int})


def _budget_text(row: pd.Series) -> str:
    """``step 200 (12,800 items, 1.6 epochs)``."""
    return f"step {int(row['step'])} ({row['items']:,.0f} items, {row['epochs']:.3g} epochs)"


def _turning(rows: pd.DataFrame) -> str:
    """In words, where one claim's verdict (its rows of ``curve_findings``, sorted by step) turns to holds:
    the smallest budget from which it holds at every larger budget measured, with the verdict of the
    budget before it; or that it does not hold at the largest budget (and where it held, if it did)."""
    holds = rows["verdict"].eq("holds").to_numpy()
    last = rows.iloc[-1]
    if not holds[-1]:
        held = rows[holds]
        before = f"; it held at {', '.join(_budget_text(r) for _, r in held.iterrows())}" if len(held) else ""
        return f"does not turn to holds by the largest budget, {_budget_text(last)}: {last['verdict']} there{before}"
    first = len(holds) - int(np.argmin(holds[::-1])) if not holds.all() else 0
    turn = rows.iloc[first]
    if first == 0:
        return f"holds at every budget measured, from {_budget_text(turn)} to {_budget_text(last)}"
    prev = rows.iloc[first - 1]
    return (
        f"turns to holds at {_budget_text(turn)} (at {_budget_text(prev)}: {prev['verdict']}) and holds at every "
        f"larger budget, to {_budget_text(last)}"
    )


def budget_verdicts(findings: pd.DataFrame, claims: tuple[Claim, ...] = COMPARISONS) -> list[Finding]:
    """One ``Finding`` per claim the curve has (per claim and setting where the findings hold several
    settings, the claim followed by ``(setting)``): the verdict at the largest budget and its interval;
    its numbers say where the verdict turned (``_turning``) and the means at the largest budget."""
    out = []
    for claim in claims:
        parts = _by_setting(findings, claim)
        for setting, part in parts.items():
            last = part.iloc[-1]
            means = f"{claim.a} {percent_text(last['a_mean'])}, {claim.b} {percent_text(last['b_mean'])}"
            numbers = f"{_turning(part)}; there {claim.quantity()} (%): {means}"
            name = claim.claim if len(parts) == 1 else f"{claim.claim} ({setting})"
            out.append(replace(Finding.from_dict(last), claim=name, numbers=numbers))
    return out


def budget_markdown(findings: pd.DataFrame, claims: tuple[Claim, ...] = COMPARISONS) -> str:
    """The per-budget table of each claim as Markdown (percent): step, items, epochs, both
    variants' means, the difference with its 95% interval (points), the verdict, its p-value and
    the Holm-adjusted verdict over the claims of that budget (``findings.holm_cell``). Findings of one named
    setting name it in the claim's line; of several, a first column ``setting`` does (rows by setting,
    then step)."""
    out = []
    for claim in claims:
        parts = _by_setting(findings, claim)
        if not parts:
            continue
        groups, rows = list(parts), pd.concat(parts.values())
        several = len(groups) > 1
        head = [*["setting"] * several, "step", "items", "epochs", f"{claim.a} (%)", f"{claim.b} (%)"]
        head += [f"{claim.name} (points)", "verdict", "p", "Holm (claims of the budget)"]
        one = f"; {groups[0]}" if not several and groups[0] is not None else ""
        claimed = f"claimed: difference {claim.side} {claim.threshold * 100:g} points"
        cells = [_budget_row(r, several) for _, r in rows.iterrows()]
        lines = [f"**{claim.claim}** ({claim.quantity()} (%); {claimed}{one})", "", *markdown_lines(head, cells)]
        out.append("\n".join(lines) + "\n")
    pairs = ", ".join(dict.fromkeys(f"{c.a} / {c.b}" for c in claims))
    return "\n".join(out) or f"No budget at which both variants of a claim were scored (the claims compare {pairs}).\n"


def _budget_row(r: pd.Series, several: bool) -> list[str]:
    """A row of ``budget_markdown``'s table: (its setting,) the budget, the means, the difference, the verdicts."""
    f = Finding.from_dict(r)
    budget = [str(int(r["step"])), f"{r['items']:,.0f}", f"{r['epochs']:.3g}"]
    means = [percent_text(r["a_mean"]), percent_text(r["b_mean"]), interval_text(f, unit="")]
    return [*([r[SETTING]] if several else []), *budget, *means, f.verdict, p_text(f.p_value), holm_cell(f)]


def curve_metrics(curve: pd.DataFrame, n_resamples: int = TABLE_RESAMPLES) -> pd.DataFrame:
    """Each variant's mean of each metric (``METRICS``) at each step it was scored at, with its
    95% interval (bootstrap over the queries, each averaged over the runs, widened by the
    spread of the runs' means: the tables' ±, ``statistics.mean_interval``): one row per
    (variant, setting, step, metric), ``METRIC_COLUMNS`` with ``setting`` after ``variant`` when the
    curve has the column, fractions; ``runs`` and ``queries`` behind it. A metric no query of the
    step has (R@5 of queries with four relevant docIDs) has no row."""
    keys = _with_setting(["variant", "step"], curve, "variant")
    rows = []
    for key, at in test_rows(curve).groupby(keys, sort=False):
        budget = dict(zip(keys, key)) | {"step": int(key[-1])}
        budget |= {"items": at["items"].mean(), "epochs": at["epochs"].mean()}
        for m in (m for m in METRICS if m in at and at[m].notna().any()):
            values = S.variant_values(at, key[0], m)
            if len(values.by_query) >= 2:
                est, lo, hi = S.mean_interval(values, n_resamples)
                # every metric is a fraction; the seed spread's t can carry a bound past 0 or 1
                lo, hi = max(lo, 0.0), min(hi, 1.0)
            else:
                est, lo, hi = float(values.by_query.mean()), np.nan, np.nan
            sizes = {"runs": len(values.run_means), "queries": len(values.by_query)}
            rows.append({**budget, **sizes, "metric": m, "mean": est, "ci_low": lo, "ci_high": hi})
    out = pd.DataFrame(rows, columns=_with_setting(METRIC_COLUMNS, curve, "variant"))
    return out.sort_values(keys, kind="stable", key=_first_seen).reset_index(drop=True)


def _first_seen(col: pd.Series) -> pd.Series:
    """Sort key: variants and settings in first-seen order, anything else as it is."""
    return col.map({v: i for i, v in enumerate(dict.fromkeys(col))}) if col.name in ("variant", SETTING) else col


def metrics_table(metrics: pd.DataFrame) -> pd.DataFrame:
    """``curve_metrics`` for display: one row per (variant, setting, step) with items and epochs, one column
    per metric (``claims.metric_name``: CVR (%), nDCG (%), R@k (%)) holding ``mean ± half-width`` in percent."""
    spread = lambda r: "" if pd.isna(r["ci_low"]) else f" ± {(r['ci_high'] - r['ci_low']) * 50:.1f}"
    value = [percent_text(r["mean"]) + spread(r) for _, r in metrics.iterrows()]
    text = metrics.assign(value=value, title=metrics["metric"].map(lambda m: f"{metric_name(m)} (%)"))
    index = _with_setting(["variant", *BUDGET], metrics, "variant")
    wide = text.pivot_table(index=index, columns="title", values="value", aggfunc="first", sort=False)
    order = [f"{metric_name(m)} (%)" for m in METRICS]
    out = wide[[c for c in order if c in wide.columns]].reset_index().rename_axis(columns=None)
    return out.astype({"items": int}) if out["items"].eq(out["items"].round()).all() else out


CHOSEN_SYMBOLS = {NTP: "triangle-down-open", FRACTIONAL: "triangle-up-open"}  # a method's chosen budget


def _mark_chosen(fig, parts: dict, chosen: pd.DataFrame | None) -> None:
    """Open triangles on each setting's line where a method's budget was chosen on validation, sized by
    and hovering the number of seeds that chose it (``curve_figure``)."""
    if chosen is None or chosen.empty:
        return
    shown = set()
    for (variant, setting, step), seeds in chosen.groupby(["variant", "setting", "step"], sort=False)["seed"]:
        at = parts.get(setting, pd.DataFrame())
        at = at[at["step"] == step] if len(at) else at
        if not len(at):
            continue
        label = f"{variant}: budget chosen on validation ({len(seeds)} of {chosen['variant'].eq(variant).sum()} seeds)"
        fig.add_scatter(
            x=[at["items"].iloc[0]], y=[at["estimate"].iloc[0] * 100], mode="markers", name=f"{variant}'s choice",
            marker={"symbol": CHOSEN_SYMBOLS.get(variant, "diamond-open"), "size": 12 + 4 * len(seeds),
                    "color": "black", "line": {"width": 2}},
            hovertemplate=f"{label}<br>{setting}, step {step}<extra></extra>", legendgroup=variant,
            showlegend=variant not in shown,
        )  # fmt: skip
        shown.add(variant)


VERDICT_COLORS = {"holds": "#2ca02c", "fails": "#d62728", "undecided": "#7f7f7f"}
# one line per setting: blue (the one-setting curve's), then the qualitative palette less the verdicts' colours
SETTING_COLORS = ("#1f77b4", *(c for c in QUALITATIVE if c not in VERDICT_COLORS.values()))


def curve_figure(
    findings: pd.DataFrame, claim: Claim = CENTRAL, title: str | None = None, chosen: pd.DataFrame | None = None
):
    """Plotly: ``claim``'s difference (points) against the training budget in items seen (log
    axis), its 95% interval as a band, the claim's threshold dotted and zero as a line; markers
    coloured by the verdict at that budget, ringed in their setting's colour (a setting of one budget has
    no line), and labelled with its epochs (once a budget), the step in the hover.
    One line and band per setting of the findings (``SETTING_COLORS``, in first-seen order; the
    legend names the setting), side by side on the one axis, never pooled. ``chosen``: each method's
    budgets chosen on validation (``results.chosen.choices``), marked on their setting's line with how
    many seeds chose each."""
    import plotly.graph_objects as go
    from plotly.colors import hex_to_rgb

    parts = _by_setting(findings, claim)
    if not parts:
        raise ValueError(f"no budget of the curve has both {claim.a} and {claim.b}: nothing to draw")
    several, labelled = len(parts) > 1, set()  # a budget's epochs labelled once, on its first line
    fig = go.Figure()
    for i, (setting, part) in enumerate(parts.items()):
        color = SETTING_COLORS[i % len(SETTING_COLORS)]
        name = claim.name if setting is None else str(setting)
        x, ring = part["items"].tolist(), {"color": color, "width": 2}  # a marker's ring: its setting
        y, lo, hi = (part[c].to_numpy() * 100 for c in ("estimate", "ci_low", "ci_high"))
        fig.add_scatter(
            x=x + x[::-1],
            y=list(hi) + list(lo[::-1]),
            mode="lines",
            fill="toself",
            fillcolor=f"rgba{(*hex_to_rgb(color), 0.2)}",  # the band in its line's colour
            line={"width": 0},
            hoverinfo="skip",
            name=f"{part['level'].iloc[0] * 100:g}% interval",
            legendgroup=name,
            showlegend=not several,
        )
        fig.add_scatter(
            x=x,
            y=y,
            mode="lines+markers+text",
            name=name,
            legendgroup=name,
            text=[f"{e:.2g}" if x_ not in labelled else "" for x_, e in zip(x, part["epochs"])],  # epochs
            textposition="top center",
            cliponaxis=False,
            textfont={"size": 11, "color": "grey"},
            line={"color": color},
            marker={"size": 9, "color": [VERDICT_COLORS.get(v, "black") for v in part["verdict"]], "line": ring},
            customdata=np.column_stack([part["step"], part["epochs"], lo, hi, part["verdict"]]),
            hovertemplate=("" if setting is None else f"{setting}<br>")
            + "step %{customdata[0]}, %{x:,.0f} items, %{customdata[1]:.3g} epochs<br>"
            "%{y:+.1f} points, 95% CI [%{customdata[2]:+.1f}, %{customdata[3]:+.1f}]: %{customdata[4]}<extra></extra>",
        )
        labelled.update(x)
    _mark_chosen(fig, parts, chosen)
    fig.add_hline(y=0, line={"color": "black", "width": 1})
    if claim.threshold != 0:
        fig.add_hline(y=claim.threshold * 100, line={"dash": "dot", "color": "grey"}, annotation_text="threshold")
    note = "markers: green holds, red fails, grey undecided (95% interval against the claim's threshold)"
    if several:
        note = f"one line and 95% band per setting, never pooled; {note}"
    style(fig, subtitle(title or f"{claim.name} against the training budget", note))
    fig.update_layout(
        xaxis_title="training budget (items seen; labels: epochs; hover: step)",
        legend={"orientation": "h", "yanchor": "top", "y": -0.2},
    )
    log_axis(fig, pd.concat(parts.values())["items"], "xaxis")
    return percent_axis(fig, "yaxis", f"{claim.name} (points)", full=False)
