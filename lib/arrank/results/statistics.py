"""Intervals and three-valued verdicts for the paper's findings (arXiv 2601.05588, sections 5.2-5.3).

The per-query metrics of the runs behind each variant (one row per run and query, the format of
``arrank.workbook.report.per_query_frame``: ``point, variant, seed, query, cvr, ndcg, r1..r5``,
fractions) become a 95% confidence interval of a difference ``a_q - w * b_q`` and
``common.findings.decide``'s verdict: holds / fails / undecided. The statistic is described in
docs/findings.md: a paired BCa bootstrap over queries (``scipy.stats.bootstrap``, 9,999 resamples,
a fixed generator seed; unpaired for variants scored on different queries), widened in quadrature
by the spread of a variant's run means (Student t at the Welch-Satterthwaite degrees of freedom).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from arrank.common.findings import Finding, decide, finding, interval_text

LEVEL = 0.95
N_RESAMPLES = 9999
RNG_SEED = 0  # the bootstrap's generator seed: the same data always give the same interval
METRIC_COLUMNS = {"cvr": "cvr", "ndcg": "ndcg", **{f"recall@{k}": f"r{k}" for k in range(1, 51)}}
POINT_ESTIMATE = "point estimates, no interval (runs without per-query data)"


def column(metric: str) -> str:
    """The per-query column of a metric: ``cvr``, ``ndcg``, ``recall@k`` -> ``rk``."""
    if metric in METRIC_COLUMNS.values():
        return metric
    if metric not in METRIC_COLUMNS:
        raise ValueError(f"metric={metric!r} is not allowed; choose cvr, ndcg or recall@k")
    return METRIC_COLUMNS[metric]


@dataclass(frozen=True)
class Values:
    """One variant's per-query values: ``by_query`` (query -> mean over the variant's runs) and
    ``run_means`` (each run's mean over its queries, for the seed variation)."""

    by_query: pd.Series
    run_means: np.ndarray


def variant_values(per_query: pd.DataFrame, variants: str | Sequence[str], metrics: str | Sequence[str]) -> Values:
    """The per-query values of ``metrics`` (one, or the mean of several per query) of the rows of
    ``variants`` (one label, or several pooled as runs of one variant), averaged per query over
    the runs (``point``). Queries without any of the metrics (R@k of a query with fewer than k
    relevant docIDs) are left out. A clear error when the variant has no rows."""
    names = [variants] if isinstance(variants, str) else list(variants)
    cols = [column(m) for m in ([metrics] if isinstance(metrics, str) else metrics)]
    missing = [c for c in cols if c not in per_query.columns]
    if missing:
        raise ValueError(f"the per-query data have no column {missing}; they have {list(per_query.columns)}")
    rows = per_query[per_query["variant"].isin(names)]
    values = rows[cols].astype(float).mean(axis=1, skipna=True)
    keep = values.notna()
    if not keep.any():
        raise ValueError(f"no per-query values of {cols} for the variant(s) {names}")
    rows, values = rows[keep], values[keep]
    by_query = values.groupby(rows["query"].to_numpy(), sort=True).mean()
    run_means = values.groupby(rows["point"].to_numpy(), sort=True).mean().to_numpy()
    return Values(by_query, run_means)


def has_variants(per_query: pd.DataFrame | None, *variants: str) -> bool:
    """Whether ``per_query`` holds rows of every one of ``variants``."""
    return per_query is not None and len(per_query) > 0 and set(variants) <= set(per_query["variant"])


def bootstrap_interval(
    samples: Sequence[np.ndarray],
    paired: bool,
    level: float = LEVEL,
    n_resamples: int = N_RESAMPLES,
    seed: int = RNG_SEED,
) -> tuple[float, float, float]:
    """(estimate, low, high): the mean of one sample, or the difference of the means of two
    independent samples, with its BCa bootstrap interval (``scipy.stats.bootstrap``). Data with
    no spread (every value equal) give the point itself as the interval."""
    from scipy import stats

    arrays = [np.asarray(s, dtype=float) for s in samples]
    if any(len(a) < 2 for a in arrays):
        raise ValueError(f"a bootstrap interval needs at least 2 queries per sample, got {[len(a) for a in arrays]}")
    if len(arrays) == 1:
        statistic = lambda x, axis=-1: np.mean(x, axis=axis)
    else:
        statistic = lambda x, y, axis=-1: np.mean(x, axis=axis) - np.mean(y, axis=axis)
    estimate = float(statistic(*arrays))
    if all(np.ptp(a) == 0 for a in arrays):
        return estimate, estimate, estimate
    for method in ("BCa", "percentile"):  # BCa undefined (e.g. one value differs): percentile
        res = stats.bootstrap(
            tuple(arrays),
            statistic,
            n_resamples=n_resamples,
            confidence_level=level,
            method=method,
            paired=paired,
            vectorized=True,
            batch=max(1, min(n_resamples, 2000)) if method == "BCa" else None,
            rng=np.random.default_rng(seed),
        )
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isfinite(lo) and math.isfinite(hi):
            break
    return estimate, min(lo, estimate), max(hi, estimate)


def seed_halfwidth(parts: Sequence[tuple[np.ndarray, float]], level: float = LEVEL) -> float:
    """The half-width the seed variation adds: ``t * sqrt(sum w^2 s^2 / S)`` over the (run means,
    weight w) of each variant with S >= 2 runs, t at the Welch-Satterthwaite degrees of
    freedom; 0 when no variant has two runs."""
    from scipy import stats

    terms = [(w * w * float(np.var(m, ddof=1)) / len(m), len(m) - 1) for m, w in parts if len(m) >= 2]
    var = sum(v for v, _ in terms)
    if var == 0:
        return 0.0
    df = var**2 / sum(v**2 / d for v, d in terms)
    return float(stats.t.ppf(0.5 + level / 2, df) * math.sqrt(var))


def widen(estimate: float, low: float, high: float, extra: float) -> tuple[float, float]:
    """Each side of (low, high) around ``estimate`` widened by ``extra`` in quadrature."""
    return (estimate - math.hypot(estimate - low, extra), estimate + math.hypot(high - estimate, extra))


@dataclass(frozen=True)
class Comparison:
    """A difference ``a - w * b`` of a metric between two variants, with its interval: how many
    queries (paired: the common ones), how many runs each variant had."""

    estimate: float
    interval: tuple[float, float]
    n_queries: int | tuple[int, int]
    paired: bool
    runs: tuple[int, int]
    level: float

    def text(self) -> str:
        """``paired over 300 queries, 2 / 1 runs`` (how the interval was made)."""
        if self.paired:
            n = f"{self.n_queries} queries, paired"
        else:
            n_a, n_b = self.n_queries
            n = f"{n_a} / {n_b} queries, unpaired"
        seeds = "seed variation in the interval" if max(self.runs) > 1 else "one run each: seed variation not estimated"
        return f"{n}; {self.runs[0]} / {self.runs[1]} runs, {seeds}"


def compare(
    a: Values,
    b: Values,
    weight: float = 1.0,
    level: float = LEVEL,
    n_resamples: int = N_RESAMPLES,
    seed: int = RNG_SEED,
) -> Comparison:
    """The mean of ``a - weight * b`` with its bootstrap interval widened for seed variation (module
    docstring): paired on the common queries when the two share at least two queries, else two
    independent samples."""
    diff = _differences(a, b, weight)
    paired = len(diff) >= 2
    if paired:
        est, lo, hi = bootstrap_interval([diff], True, level, n_resamples, seed)
        n: int | tuple[int, int] = len(diff)
    else:
        est, lo, hi = bootstrap_interval(
            [a.by_query.to_numpy(), weight * b.by_query.to_numpy()], False, level, n_resamples, seed
        )
        n = (len(a.by_query), len(b.by_query))
    lo, hi = widen(est, lo, hi, seed_halfwidth([(a.run_means, 1.0), (b.run_means, weight)], level))
    return Comparison(est, (lo, hi), n, paired, (len(a.run_means), len(b.run_means)), level)


def mean_interval(
    values: Values, level: float = LEVEL, n_resamples: int = N_RESAMPLES, seed: int = RNG_SEED
) -> tuple[float, float, float]:
    """(estimate, low, high) of a variant's mean: bootstrap over queries, widened for seed variation."""
    est, lo, hi = bootstrap_interval([values.by_query.to_numpy()], True, level, n_resamples, seed)
    return (est, *widen(est, lo, hi, seed_halfwidth([(values.run_means, 1.0)], level)))


def mean_halfwidth(values: Values, level: float = LEVEL, n_resamples: int = N_RESAMPLES, seed: int = RNG_SEED) -> float:
    """Half the width of :func:`mean_interval`: the ``±`` of the tables."""
    _, lo, hi = mean_interval(values, level, n_resamples, seed)
    return (hi - lo) / 2


def paired_differences(
    per_query: pd.DataFrame,
    a: str | Sequence[str],
    b: str | Sequence[str],
    metrics: str | Sequence[str],
    weight: float = 1.0,
) -> np.ndarray:
    """The per-query differences ``a_q - weight * b_q`` on the queries both variants have (each
    averaged over its runs): the data of a paired check, and of ``queries_to_decide``."""
    return _differences(variant_values(per_query, a, metrics), variant_values(per_query, b, metrics), weight)


def _differences(a: Values, b: Values, weight: float) -> np.ndarray:
    """``a_q - weight * b_q`` on the queries both have."""
    common = a.by_query.index.intersection(b.by_query.index)
    return a.by_query.loc[common].to_numpy() - weight * b.by_query.loc[common].to_numpy()


def check(
    claim: str,
    per_query: pd.DataFrame,
    a: str | Sequence[str],
    b: str | Sequence[str],
    metrics: str | Sequence[str],
    threshold: float = 0.0,
    side: str = ">",
    weight: float = 1.0,
    numbers: str = "",
    level: float = LEVEL,
    n_resamples: int = N_RESAMPLES,
) -> Finding:
    """The claim that the mean per-query ``a - weight * b`` of ``metrics`` is on ``side`` of
    ``threshold``, decided by its interval (``findings.decide``); ``numbers`` is followed by how
    the interval was made (queries, paired or not, runs)."""
    c = compare(
        variant_values(per_query, a, metrics), variant_values(per_query, b, metrics), weight, level, n_resamples
    )
    return decide(claim, c.estimate, c.interval, threshold, side, "; ".join(p for p in (numbers, c.text()) if p), level)


def point_check(claim: str, holds: bool | None, numbers: str) -> Finding:
    """The fallback for runs without per-query data: the point verdict of ``findings.finding``,
    its numbers labelled as point estimates."""
    return finding(claim, holds, f"{numbers}; {POINT_ESTIMATE}" if numbers else POINT_ESTIMATE)


def combine(claim: str, parts: Sequence[tuple[str, Finding]], numbers: str = "") -> Finding:
    """A claim over several comparisons: fails if any part fails, else unchecked if any part is,
    holds if every part holds, undecided otherwise; the parts' verdicts and intervals are in the
    numbers (``name: holds, +3.2 points, 95% CI [+1.1, +5.0]``)."""
    if not parts:
        raise ValueError(f"the compound claim {claim!r} has no parts")
    verdicts = {f.verdict for _, f in parts}
    if "fails" in verdicts:
        verdict = "fails"
    elif "unchecked" in verdicts:
        verdict = "unchecked"
    elif verdicts == {"holds"}:
        verdict = "holds"
    else:
        verdict = "undecided"
    texts = [f"{name}: {f.verdict}" + (f", {interval_text(f)}" if f.interval else "") for name, f in parts]
    return Finding(
        claim,
        verdict,
        "; ".join(p for p in (numbers, "; ".join(texts)) if p),
        level=next((f.level for _, f in parts if f.level), None),
    )


def queries_to_decide(differences: Sequence[float] | np.ndarray, threshold: float = 0.0, level: float = LEVEL) -> float:
    """How many queries a paired comparison needs for its interval to exclude ``threshold``, if
    the mean and spread of the per-query ``differences`` stay as measured (normal approximation):
    ``ceil((z * sd / |mean - threshold|)^2)``; ``inf`` when the mean is the threshold."""
    from scipy import stats

    d = np.asarray(differences, dtype=float)
    d = d[np.isfinite(d)]
    if len(d) < 2:
        raise ValueError(f"queries_to_decide needs at least 2 differences, got {len(d)}")
    gap, sd = abs(float(d.mean()) - threshold), float(d.std(ddof=1))
    if gap == 0:
        return math.inf
    z = float(stats.norm.ppf(0.5 + level / 2))
    return float(max(2, math.ceil((z * sd / gap) ** 2)))


@dataclass(frozen=True)
class Budget:
    """What would decide an undecided paired comparison if the measured effect and spreads stay
    as they are: the half-widths now (over queries, from the seeds) and the queries and seeds per
    variant that would bring the interval off the threshold (``inf``: not by that alone)."""

    gap: float
    query_halfwidth: float
    seed_halfwidth: float
    queries: float
    seeds: float

    def text(self) -> str:
        q = "never" if math.isinf(self.queries) else f"{self.queries:,.0f}"
        if math.isnan(self.seeds):
            s = "seeds not estimated (a variant with one run)"
        else:
            s = "no number of seeds" if math.isinf(self.seeds) else f"{self.seeds:.0f} seeds a variant"
        return (
            f"gap to the threshold {self.gap * 100:.1f} points; half-widths: queries {self.query_halfwidth * 100:.1f}, "
            f"seeds {self.seed_halfwidth * 100:.1f}; with today's seeds, queries needed: {q}; "
            f"with today's queries: {s}"
        )


def budget_to_decide(
    per_query: pd.DataFrame,
    a: str | Sequence[str],
    b: str | Sequence[str],
    metrics: str | Sequence[str],
    threshold: float = 0.0,
    level: float = LEVEL,
    max_seeds: int = 1000,
) -> Budget:
    """The budget that would decide ``a - b`` (``check``'s comparison, weight 1) from today's
    per-query differences and run means: ``queries``, the common queries at which the query
    half-width (``z * sd / sqrt(n)``) and today's seed half-width, in quadrature, fall below the
    gap; ``seeds``, the runs per variant at which today's query half-width and the seed
    half-width (``t * sqrt(s_a^2 / S + s_b^2 / S)``, Welch degrees of freedom) do. ``seeds`` is
    ``nan`` when a variant has one run (no measured spread)."""
    from scipy import stats

    va, vb = variant_values(per_query, a, metrics), variant_values(per_query, b, metrics)
    d = _differences(va, vb, 1.0)
    gap, sd = abs(float(d.mean()) - threshold), float(d.std(ddof=1))
    z = float(stats.norm.ppf(0.5 + level / 2))
    q_half = z * sd / math.sqrt(len(d))
    s_half = seed_halfwidth([(va.run_means, 1.0), (vb.run_means, 1.0)], level)
    queries = math.inf if s_half >= gap or gap == 0 else float(max(2, math.ceil((z * sd) ** 2 / (gap**2 - s_half**2))))
    if min(len(va.run_means), len(vb.run_means)) < 2:
        seeds = math.nan
    else:
        var = [float(np.var(m, ddof=1)) for m in (va.run_means, vb.run_means)]
        seeds = math.inf
        for S in range(2, max_seeds + 1):
            v = sum(var) / S
            df = v**2 / sum((x / S) ** 2 / (S - 1) for x in var) if v > 0 else math.inf
            half = float(stats.t.ppf(0.5 + level / 2, df)) * math.sqrt(v) if v > 0 else 0.0
            if math.hypot(q_half, half) < gap:
                seeds = float(S)
                break
    return Budget(gap, q_half, s_half, queries, seeds)
