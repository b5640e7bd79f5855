"""Figure 3's findings (section 5.3 of arXiv 2601.05588) checked on notebook 07's DE / CE runs
and the ARR runs of notebook 05: "autoregressive ranking is on par with CEs while being
significantly more powerful than DEs"; "an increasing alpha improves Recall@k, particularly for
small k". ``COMPARISONS`` lists the comparisons that decide them (``claims.Claim``), ``findings``
compares the R@k curves and decides them, ``findings_rows`` gives them as ``Finding`` rows, the checks
decided by intervals one family whose verdicts are also given Holm-adjusted (``statistics.holm``)."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from arrank.common.display import percent_text
from arrank.common.findings import Finding, finding
from arrank.results import statistics as S
from arrank.results.claims import Claim, Member, decide_claim, point_finding, recall, resolve

SMALL_KS = (1, 2)  # "small k" in the findings of Figure 3
INTERVAL_FIELDS = ("verdict", "estimate", "threshold", "side", "ci_low", "ci_high", "level", "p_value")  # per check


ON_PAR_TOL = 0.02  # "on par": R@k within 0.02 (about 1 standard error of R@1 ~ 0.9 on 300 queries)
_ROUND = 1e-9  # a difference of exactly tol counts as within it (0.92 - 0.90 > 0.02 in floats)


def on_par(a: Sequence[float], b: Sequence[float], tol: float = ON_PAR_TOL) -> bool:
    """Two R@k curves (same k) are on par: |a_k - b_k| <= tol at every k."""
    return all(abs(x - y) <= tol + _ROUND for x, y in zip(a, b, strict=True))


def above(a: Sequence[float], b: Sequence[float], tol: float = ON_PAR_TOL) -> bool:
    """Curve a is above curve b: at no k below it by more than tol, and above it by more than
    tol at some k. Where both are within tol of 1.000 at every k nothing can be above: that tie
    is not a failure (True)."""
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    if any(d < -tol - _ROUND for d in diffs):
        return False
    return any(d > tol + _ROUND for d in diffs) or all(min(x, y) >= 1 - tol - _ROUND for x, y in zip(a, b))


def _curve_text(name: str, row: Mapping[str, Any], ks: Sequence[int], prefix: str = "recall@") -> str:
    return f"{name} " + percent_text([float(row[f"{prefix}{k}"]) for k in ks])


def best_arr_run(arr: pd.DataFrame | None, ks: Sequence[int]) -> tuple[pd.Series | None, str]:
    """The ARR run (a row of ``arr_runs``) with the highest mean R@k over ``ks`` on its training
    queries, which Figure 3's ARR findings compare with the DE and CE (scored on queries they
    trained on); (None, why) when no run has that curve (older runs: held-out curve only)."""
    if arr is None or not len(arr):
        return None, "no ARR run on these evaluation queries"
    cols = [f"train_recall@{k}" for k in ks]
    scored = arr[arr.reindex(columns=cols).notna().all(axis=1)] if set(cols) <= set(arr.columns) else arr.iloc[:0]
    if scored.empty:
        held = [c for c in (f"recall@{k}" for k in ks) if c in arr.columns]
        best = arr.loc[arr[held].mean(axis=1).idxmax()] if len(held) == len(ks) else None
        return None, (
            "no ARR run scored on its training queries (notebook 05 runs made before it scored them: "
            "re-run them to compare)"
            + (f"; best on held-out queries: {_curve_text(best['label'], best, ks)}" if best is not None else "")
        )
    return scored.loc[scored[cols].mean(axis=1).idxmax()], ""


def findings(
    results: pd.DataFrame,
    de_dims: Sequence[int],
    ce_dim: int,
    alpha: float,
    alpha_dim: int,
    alphas: Sequence[float],
    arr: pd.DataFrame | None = None,
    tol: float = ON_PAR_TOL,
    per_query: pd.DataFrame | None = None,
    arr_per_query: pd.DataFrame | None = None,
    decided: dict[str, Finding] | None = None,
) -> dict[str, Any]:
    """The findings of Figure 3 and section 5.3 as checks on this run's R@k, at each k in 1..5 the
    results hold, "on par" and "above" within ``tol`` (``on_par``, ``above``):
    ``finding_de_grows_with_n`` (panel a: the DE's mean R@k rises with every step of
    ``de_dims``), ``finding_ce_above_de`` (the CE above the strongest DE),
    ``finding_arr_on_par_with_ce`` / ``finding_arr_above_de`` (``best_arr_run`` on its training
    queries, its held-out curve in the numbers), ``finding_alpha_raises_de_small_k`` (panel b: the
    DE at ``alpha_dim``, largest alpha above the smallest, at k = 1, 2). A check whose runs are
    missing is None; each comes with ``finding_X_numbers`` (and the DE means
    ``de_n<n>_mean_recall@1-<k>``). With ``per_query`` (``baselines.figure3.per_query_rows``) and
    ``arr_per_query`` (``panels.arr_per_query``) each is decided by an interval instead: its
    comparisons (``COMPARISONS``; the configs are paired on the evaluation queries, ARR's training
    queries an independent sample; ARR on par with the CE needs both bounds within ±``tol``;
    thresholds: docs/findings.md) resolved on the run's configs (``roles``) and decided by
    ``claims.decide_claim``: True, False or None (undecided), with ``finding_X_verdict`` and the
    interval's fields; a check whose configs have no per-query rows keeps its point verdict. Each
    check decided so is also put in ``decided`` (by key, when given) as its ``Finding``, with its parts.
    """
    ks = [k for k in range(1, 6) if f"recall@{k}" in results.columns]
    small = [k for k in SMALL_KS if f"recall@{k}" in results.columns]
    res = results.set_index(["model", "n", "alpha"])
    get = lambda m, n, a: res.loc[(m, n, float(a))] if (m, n, float(a)) in res.index else None
    curve = lambda row, at, prefix="recall@": [float(row[f"{prefix}{k}"]) for k in at]
    out: dict[str, Any] = {"on_par_tol": tol}

    def record(name: str, holds: bool | None, numbers: str) -> None:
        out[f"finding_{name}"], out[f"finding_{name}_numbers"] = holds, numbers

    dims, span = sorted(de_dims), f"R@1..{max(ks)} (%)"
    de = [get("de", n, alpha) for n in dims]
    ce, best_de = get("ce", ce_dim, alpha), get("de", dims[-1], alpha)
    ce_name, de_name = f"CE n={ce_dim} α={alpha:g}", f"DE n={dims[-1]} α={alpha:g}"
    lo, hi = get("de", alpha_dim, min(alphas)), get("de", alpha_dim, max(alphas))
    best_arr, missing = best_arr_run(arr, ks)
    record("de_grows_with_n", None, "runs missing")  # each check: runs missing until its runs are found
    if all(r is not None for r in de) and len(de) > 1:
        means = [float(np.mean(curve(r, ks))) for r in de]
        out.update({f"de_n{n}_mean_recall@1-{max(ks)}": m for n, m in zip(dims, means)})
        shown = f"mean R@1..{max(ks)} (%) {percent_text(means, sep=' / ')} (n = {' / '.join(map(str, dims))}, α = {alpha:g})"
        record("de_grows_with_n", all(b > a for a, b in zip(means, means[1:])), shown)
    record("ce_above_de", None, "runs missing")
    if ce is not None and best_de is not None:
        shown = f"{span}: {_curve_text(ce_name, ce, ks)}; {_curve_text(de_name, best_de, ks)}"
        record("ce_above_de", above(curve(ce, ks), curve(best_de, ks), tol), shown)
    for name, other, other_name, check in (
        ("arr_on_par_with_ce", ce, ce_name, on_par),
        ("arr_above_de", best_de, de_name, above),
    ):
        if best_arr is None or other is None:
            record(name, None, missing if best_arr is None else "runs missing")
            continue
        shown = f"{span}: {_curve_text(best_arr['label'], best_arr, ks, 'train_recall@')} (its training queries); "
        shown += _curve_text(other_name, other, ks)
        if all(pd.notna(best_arr.get(f"recall@{k}")) for k in ks):
            shown += f"; beside it, on held-out queries: {_curve_text(best_arr['label'], best_arr, ks)}"
        record(name, check(curve(best_arr, ks, "train_recall@"), curve(other, ks), tol), shown)
    record("alpha_raises_de_small_k", None, "runs missing")
    if lo is not None and hi is not None and min(alphas) != max(alphas) and small:
        ends = (f"α {a:g} {percent_text(curve(r, small))}" for a, r in ((min(alphas), lo), (max(alphas), hi)))
        shown = f"DE n={alpha_dim}, R@{','.join(map(str, small))} (%): " + " -> ".join(ends)
        record("alpha_raises_de_small_k", above(curve(hi, small), curve(lo, small), tol), shown)
    if per_query is not None and len(per_query):
        data = per_query.assign(variant=per_query["config"], point=per_query["config"])
        if best_arr is not None and arr_per_query is not None and len(arr_per_query):
            arr_rows = arr_per_query.assign(variant=ARR, point=str(best_arr.get("run", ARR)))
            data = pd.concat([data, arr_rows], ignore_index=True)
        sides = roles(de_dims, ce_dim, alpha, alpha_dim, alphas)
        tolerated = [
            replace(c, threshold=c.threshold / ON_PAR_TOL * tol) if c.key == ON_PAR else c for c in COMPARISONS
        ]
        for key, group in itertools.groupby(tolerated, key=lambda c: c.key):
            parts = resolve(list(group), sides, [f"r{k}" for k in ks if f"r{k}" in data])
            numbers = f"{out[f'finding_{key}_numbers']}; {parts[0].quantity(parts[0].metrics)}" if parts else ""
            if (f := decide_claim(parts, data, numbers)) is not None:
                record(key, f.holds, f.numbers)
                out.update({f"finding_{key}_{k}": v for k, v in f.as_dict().items() if k in INTERVAL_FIELDS})
                if decided is not None:
                    decided[key] = f
    return out


def roles(
    de_dims: Sequence[int], ce_dim: int, alpha: float, alpha_dim: int, alphas: Sequence[float]
) -> dict[str, list[Member]]:
    """The configurations of notebook 07 in each role of ``COMPARISONS`` (its per-query rows' ``config``
    keys, ``de_n8_alpha5``): the DE at each dimension but the smallest and at each but the largest
    (compared pairwise: each step of ``de_dims``), the CE, the strongest DE, the DE at ``alpha_dim`` at
    the largest and at the smallest of ``alphas`` (none when they are one)."""
    key = lambda model, n, a: (f"{model}_n{n}_alpha{float(a):g}",)
    dims, lo, hi = sorted(de_dims), min(alphas), max(alphas)
    return {
        LARGER_DE: [(f"DE n={n}", key("de", n, alpha)) for n in dims[1:]],
        SMALLER_DE: [(f"n={n}", key("de", n, alpha)) for n in dims[:-1]],
        CE: [("CE", key("ce", ce_dim, alpha))],
        STRONGEST_DE: [("DE", key("de", dims[-1], alpha))],
        LARGEST_ALPHA: [(f"α {hi:g}", key("de", alpha_dim, hi))] if lo != hi else [],
        SMALLEST_ALPHA: [(f"α {lo:g}", key("de", alpha_dim, lo))] if lo != hi else [],
    }


LARGER_DE, SMALLER_DE, CE, STRONGEST_DE = "each DE but the smallest", "each DE but the largest", "the CE", "the DE"
LARGEST_ALPHA, SMALLEST_ALPHA = "the DE at the largest α", "the DE at the smallest α"
ARR, ON_PAR, SPAN = "ARR", "arr_on_par_with_ce", recall(1, 2, 3, 4, 5)  # SPAN: R@1..R@5, those the run has
ON_PAR_WORDS = "section 5.3: ARR is on par with the CE (ARR on its training queries, as the CE)"
COMPARISONS = (  # Figure 3's findings (section 5.3) as the comparisons that decide them; thresholds: docs/findings.md
    Claim("de_grows_with_n", "Figure 3 (a): the DE's recall grows with its dimension n", "{a} − {b}", LARGER_DE,
          SMALLER_DE, SPAN),
    Claim("ce_above_de", "Figure 3 (a), implied by section 5.3's two claims: the CE above the strongest DE",
          "{a} − {b}, {quantity}", CE, STRONGEST_DE, SPAN),
    Claim(ON_PAR, ON_PAR_WORDS, "ARR − CE above −{points:g} points", ARR, CE, SPAN, threshold=-ON_PAR_TOL),
    Claim(ON_PAR, ON_PAR_WORDS, "ARR − CE below +{points:g} points", ARR, CE, SPAN, threshold=ON_PAR_TOL, side="<"),
    Claim("arr_above_de", "section 5.3: ARR is significantly more powerful than the DEs (on its training queries)",
          "{a} − {b}, {quantity}", ARR, STRONGEST_DE, SPAN),
    Claim("alpha_raises_de_small_k", "Figure 3 (b): an increasing α improves R@k, particularly for small k (the DE)",
          "{a} − {b}, {quantity}", LARGEST_ALPHA, SMALLEST_ALPHA, recall(*SMALL_KS)),
)  # fmt: skip
CLAIMS = {c.key: c.claim for c in COMPARISONS}  # each claim of Figure 3 checked, by key, in words


def findings_rows(found: Mapping[str, Any], decided: Mapping[str, Finding] | None = None) -> list[Finding]:
    """The checks of ``findings`` as "what to look for" rows (``findings.Finding``): the paper's
    claim, its verdict in this run (``decided``'s finding, with its parts, where ``findings`` put one
    there; from the interval where ``finding_X_verdict`` is recorded; else the point verdict, its
    numbers labelled as point estimates), the numbers compared. The
    checks with a recorded p-value form Figure 3's family: each gets its Holm-adjusted verdict
    (``statistics.holm``)."""
    rows = []
    for key, claim in CLAIMS.items():
        if f"finding_{key}" not in found:
            continue
        numbers = found.get(f"finding_{key}_numbers", "not run")
        if decided and key in decided:
            rows.append(decided[key])
        elif found.get(f"finding_{key}_verdict"):
            recorded = {k: found.get(f"finding_{key}_{k}") for k in INTERVAL_FIELDS}
            rows.append(Finding.from_dict({**recorded, "claim": claim, "numbers": numbers}))
        elif found[f"finding_{key}"] is None:
            rows.append(finding(claim, None, numbers))
        else:
            rows.append(point_finding(claim, found[f"finding_{key}"], numbers))
    return S.holm(rows)
