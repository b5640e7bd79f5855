"""Figure 3's findings (section 5.3 of arXiv 2601.05588) checked on notebook 07's DE / CE runs
and the ARR runs of notebook 05: "autoregressive ranking is on par with CEs while being
significantly more powerful than DEs"; "an increasing alpha improves Recall@k, particularly for
small k". ``findings`` compares the R@k curves, ``findings_rows`` gives them as ``Finding`` rows, the
checks decided by intervals one family whose verdicts are also given Holm-adjusted
(``statistics.holm``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from arrank.common.display import percent_text
from arrank.common.findings import Finding, finding

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
    ks: Sequence[int] | None = None,
    arr: pd.DataFrame | None = None,
    tol: float = ON_PAR_TOL,
    per_query: pd.DataFrame | None = None,
    arr_per_query: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """The findings of Figure 3 and section 5.3 as checks on this run's R@k, k in ``ks`` (default:
    the k in 1..5 the results hold), "on par" and "above" within ``tol`` (``on_par``, ``above``):
    ``finding_de_grows_with_n`` (panel a: the DE's mean R@k rises with every step of
    ``de_dims``), ``finding_ce_above_de`` (the CE above the strongest DE),
    ``finding_arr_on_par_with_ce`` / ``finding_arr_above_de`` (``best_arr_run`` on its training
    queries, its held-out curve in the numbers), ``finding_alpha_raises_de_small_k`` (panel b: the
    DE at ``alpha_dim``, largest alpha above the smallest, at k = 1, 2). A check whose runs are
    missing is None; each comes with ``finding_X_numbers`` (and the DE means
    ``de_n<n>_mean_recall@1-<k>``). With ``per_query`` (``baselines.figure3.per_query_rows``) and
    ``arr_per_query`` (``panels.arr_per_query``) each is decided by an interval instead
    (``interval_checks``): True, False or None (undecided), with ``finding_X_verdict``.
    """
    ks = ks or [k for k in range(1, 6) if f"recall@{k}" in results.columns]
    small = [k for k in SMALL_KS if f"recall@{k}" in results.columns]
    res = results.set_index(["model", "n", "alpha"])
    get = lambda m, n, a: res.loc[(m, n, float(a))] if (m, n, float(a)) in res.index else None
    curve = lambda row, at, prefix="recall@": [float(row[f"{prefix}{k}"]) for k in at]
    out: dict[str, Any] = {"on_par_tol": tol}

    def record(name: str, holds: bool | None, numbers: str) -> None:
        out[f"finding_{name}"], out[f"finding_{name}_numbers"] = holds, numbers

    de = [get("de", n, alpha) for n in sorted(de_dims)]
    if all(r is not None for r in de) and len(de) > 1:
        means = [float(np.mean(curve(r, ks))) for r in de]
        out.update({f"de_n{n}_mean_recall@1-{max(ks)}": m for n, m in zip(sorted(de_dims), means)})
        record(
            "de_grows_with_n",
            all(b > a for a, b in zip(means, means[1:])),
            f"mean R@1..{max(ks)} (%) "
            + percent_text(means, sep=" / ")
            + f" (n = {' / '.join(map(str, sorted(de_dims)))}, α = {alpha:g})",
        )
    else:
        record("de_grows_with_n", None, "runs missing")
    ce, best_de = get("ce", ce_dim, alpha), get("de", max(de_dims), alpha)
    ce_name, de_name = f"CE n={ce_dim} α={alpha:g}", f"DE n={max(de_dims)} α={alpha:g}"
    if ce is None or best_de is None:
        record("ce_above_de", None, "runs missing")
    else:
        record(
            "ce_above_de",
            above(curve(ce, ks), curve(best_de, ks), tol),
            f"R@1..{max(ks)} (%): {_curve_text(ce_name, ce, ks)}; {_curve_text(de_name, best_de, ks)}",
        )
    best_arr, missing = best_arr_run(arr, ks)
    for name, other, other_name, check in (
        ("arr_on_par_with_ce", ce, ce_name, on_par),
        ("arr_above_de", best_de, de_name, above),
    ):
        if best_arr is None or other is None:
            record(name, None, missing if best_arr is None else "runs missing")
        else:
            held_out = all(pd.notna(best_arr.get(f"recall@{k}")) for k in ks)
            record(
                name,
                check(curve(best_arr, ks, "train_recall@"), curve(other, ks), tol),
                f"R@1..{max(ks)} (%): {_curve_text(best_arr['label'], best_arr, ks, 'train_recall@')} (its training "
                f"queries); {_curve_text(other_name, other, ks)}"
                + (
                    f"; beside it, on held-out queries: {_curve_text(best_arr['label'], best_arr, ks)}"
                    if held_out
                    else ""
                ),
            )
    lo, hi = get("de", alpha_dim, min(alphas)), get("de", alpha_dim, max(alphas))
    if lo is None or hi is None or min(alphas) == max(alphas) or not small:
        record("alpha_raises_de_small_k", None, "runs missing")
    else:
        record(
            "alpha_raises_de_small_k",
            above(curve(hi, small), curve(lo, small), tol),
            f"DE n={alpha_dim}, R@{','.join(map(str, small))} (%): α {min(alphas):g} "
            + percent_text(curve(lo, small))
            + f" -> α {max(alphas):g} "
            + percent_text(curve(hi, small)),
        )
    if per_query is not None and len(per_query):
        numbers = {
            k.removeprefix("finding_").removesuffix("_numbers"): v for k, v in out.items() if k.endswith("_numbers")
        }
        checked = interval_checks(
            per_query, de_dims, ce_dim, alpha, alpha_dim, alphas, ks, best_arr, arr_per_query, tol, numbers
        )
        for key, f in checked.items():
            record(key, f.holds, f.numbers)
            out.update({f"finding_{key}_{k}": v for k, v in f.as_dict().items() if k in INTERVAL_FIELDS})
    return out


def interval_checks(
    per_query: pd.DataFrame,
    de_dims: Sequence[int],
    ce_dim: int,
    alpha: float,
    alpha_dim: int,
    alphas: Sequence[float],
    ks: Sequence[int],
    best_arr: pd.Series | None = None,
    arr_per_query: pd.DataFrame | None = None,
    tol: float = ON_PAR_TOL,
    numbers: Mapping[str, str] | None = None,
) -> dict[str, Finding]:
    """The checks of ``findings`` decided by 95% intervals of per-query differences
    (``results.statistics``; the configs are paired on the evaluation queries, ARR's training
    queries are an independent sample; thresholds: docs/findings.md). ARR on par with the CE
    needs both bounds within ±``tol``. A check whose configs have no per-query rows is left out
    (the point check stands)."""
    from arrank.results import statistics as S

    numbers = numbers or {}
    key = lambda m, n, a: f"{m}_n{n}_alpha{float(a):g}"
    data = per_query.assign(variant=per_query["config"], point=per_query["config"])
    span = [f"recall@{k}" for k in ks if f"r{k}" in data.columns]
    small = [f"recall@{k}" for k in SMALL_KS if f"r{k}" in data.columns]
    text = lambda ms: (
        f"mean R@{ms[0].split('@')[1]}..{ms[-1].split('@')[1]}" if len(ms) > 1 else f"R@{ms[0].split('@')[1]}"
    )
    check = lambda name, variants, a, b, metrics, what: S.check(
        CLAIMS[name], variants, a, b, metrics, numbers=f"{numbers.get(name, '')}; {what}"
    )
    out: dict[str, Finding] = {}
    dims = sorted(de_dims)
    des = [key("de", n, alpha) for n in dims]
    if len(dims) > 1 and S.has_variants(data, *des) and span:
        out["de_grows_with_n"] = S.combine(
            CLAIMS["de_grows_with_n"],
            [
                (f"DE n={b} − n={a}", S.check("", data, key("de", b, alpha), key("de", a, alpha), span))
                for a, b in zip(dims, dims[1:])
            ],
            numbers.get("de_grows_with_n", ""),
        )
    ce, de_max = key("ce", ce_dim, alpha), key("de", max(dims), alpha)
    if S.has_variants(data, ce, de_max) and span:
        out["ce_above_de"] = check("ce_above_de", data, ce, de_max, span, f"CE − DE, {text(span)}")
    if best_arr is not None and arr_per_query is not None and len(arr_per_query) and span:
        arr_data = pd.concat(
            [data, arr_per_query.assign(variant="ARR", point=str(best_arr.get("run", "ARR")))], ignore_index=True
        )
        if S.has_variants(data, ce):
            out["arr_on_par_with_ce"] = S.combine(
                CLAIMS["arr_on_par_with_ce"],
                [
                    (f"ARR − CE above −{tol * 100:g} points", S.check("", arr_data, "ARR", ce, span, -tol, ">")),
                    (f"ARR − CE below +{tol * 100:g} points", S.check("", arr_data, "ARR", ce, span, tol, "<")),
                ],
                f"{numbers.get('arr_on_par_with_ce', '')}; {text(span)}",
            )
        if S.has_variants(data, de_max):
            out["arr_above_de"] = check("arr_above_de", arr_data, "ARR", de_max, span, f"ARR − DE, {text(span)}")
    lo, hi = key("de", alpha_dim, min(alphas)), key("de", alpha_dim, max(alphas))
    if min(alphas) != max(alphas) and small and S.has_variants(data, lo, hi):
        change = f"α {max(alphas):g} − α {min(alphas):g}, {text(small)}"
        out["alpha_raises_de_small_k"] = check("alpha_raises_de_small_k", data, hi, lo, small, change)
    return out


CLAIMS = {
    "de_grows_with_n": "Figure 3 (a): the DE's recall grows with its dimension n",
    "ce_above_de": "Figure 3 (a), implied by section 5.3's two claims: the CE above the strongest DE",
    "arr_on_par_with_ce": "section 5.3: ARR is on par with the CE (ARR on its training queries, as the CE)",
    "arr_above_de": "section 5.3: ARR is significantly more powerful than the DEs (on its training queries)",
    "alpha_raises_de_small_k": "Figure 3 (b): an increasing α improves R@k, particularly for small k (the DE)",
}


def findings_rows(found: Mapping[str, Any]) -> list[Finding]:
    """The checks of ``findings`` as "what to look for" rows (``findings.Finding``): the paper's
    claim, its verdict in this run (from the interval where ``finding_X_verdict`` is recorded;
    else the point verdict, its numbers labelled as point estimates), the numbers compared. The
    checks with a recorded p-value form Figure 3's family: each gets its Holm-adjusted verdict
    (``statistics.holm``)."""
    from arrank.results.statistics import holm, point_check

    rows = []
    for key, claim in CLAIMS.items():
        if f"finding_{key}" not in found:
            continue
        get = lambda field, key=key: found.get(f"finding_{key}_{field}")
        numbers = found.get(f"finding_{key}_numbers", "not run")
        if get("verdict"):
            interval = (get("ci_low"), get("ci_high")) if get("ci_low") is not None else None
            estimate, threshold, side = get("estimate"), get("threshold"), get("side") or ">"
            found_row = Finding(claim, get("verdict"), numbers, estimate, threshold, side, interval, get("level"))
            rows.append(replace(found_row, p_value=get("p_value")))
        elif found[f"finding_{key}"] is None:
            rows.append(finding(claim, None, numbers))
        else:
            rows.append(point_check(claim, found[f"finding_{key}"], numbers))
    return holm(rows)
