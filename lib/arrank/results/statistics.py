"""Intervals and three-valued verdicts for the paper's findings (arXiv 2601.05588, sections 5.2-5.3).

The per-query metrics of the runs behind each variant (one row per run and query, the format of
``arrank.workbook.report.per_query_frame``: ``point, variant, seed, query, cvr, ndcg, r1..r5``,
fractions) become a 95% confidence interval of a difference ``a_q - w * b_q`` and
``common.findings.decide``'s verdict: holds / fails / undecided. The statistic is described in
docs/findings.md: a paired BCa bootstrap over queries (``scipy.stats.bootstrap``, 9,999 resamples,
a fixed generator seed; unpaired for variants scored on different queries), widened in quadrature
by the spread of a variant's run means (Student t at the Welch-Satterthwaite degrees of freedom).

Each decided comparison also has a p-value that agrees with its interval (``interval_p_value``: one
minus the largest confidence level at which the same construction, from the same bootstrap
replicates, still excludes the threshold), so that the findings of one table can be adjusted as a
family by Holm's step-down method (``holm``, statsmodels' ``multipletests``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from arrank.common.findings import Finding, excludes, interval_text

LEVEL = 0.95
N_RESAMPLES = 9999
RNG_SEED = 0  # the bootstrap's generator seed: the same data always give the same interval
P_TOLERANCE = 1e-6  # the bisection's resolution in confidence level, hence in p
BATCH = 2000  # resamples drawn at a time, as the BCa bootstrap has always asked scipy for them
Labels = str | Sequence[str]  # a variant label, or several pooled; a metric, or several averaged per query
METRIC_COLUMNS = {"cvr": "cvr", "ndcg": "ndcg", **{f"recall@{k}": f"r{k}" for k in range(1, 51)}}


def column(metric: str) -> str:
    """The per-query column of a metric: ``cvr``, ``ndcg``, ``recall@k`` -> ``rk``."""
    if metric not in METRIC_COLUMNS and metric not in METRIC_COLUMNS.values():
        raise ValueError(f"metric={metric!r} is not allowed; choose cvr, ndcg or recall@k")
    return METRIC_COLUMNS.get(metric, metric)


@dataclass(frozen=True)
class Values:
    """One variant's per-query values: ``by_query`` (query -> mean over the variant's runs) and
    ``run_means`` (each run's mean over its queries, for the seed variation)."""

    by_query: pd.Series
    run_means: np.ndarray


def variant_values(per_query: pd.DataFrame, variants: Labels, metrics: Labels) -> Values:
    """The per-query values of ``metrics`` (one, or the mean of several per query) of the rows of
    ``variants`` (one label, or several pooled as runs of one variant), averaged per query over
    the runs (``point``). Queries without any of the metrics (R@k of a query with fewer than k
    relevant docIDs) are left out. A clear error when the variant has no rows."""
    names = [variants] if isinstance(variants, str) else list(variants)
    cols = [column(m) for m in ([metrics] if isinstance(metrics, str) else metrics)]
    if missing := [c for c in cols if c not in per_query.columns]:
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


@dataclass(frozen=True)
class Replicates:
    """A bootstrap's replicates of a mean (or a difference of means) and what reading an interval off
    them at any confidence level needs: ``method`` ``BCa`` (with the bias correction ``z0`` and the
    acceleration ``a`` as ``scipy.stats.bootstrap`` computes them), ``percentile``, or ``point`` (data
    without spread: the interval is the estimate)."""

    estimate: float
    distribution: np.ndarray = field(repr=False)
    method: str
    z0: float = 0.0
    acceleration: float = 0.0

    def interval(self, level: float) -> tuple[float, float]:
        """The ``level`` interval from these replicates: the quantiles (linear interpolation, as
        scipy's) at BCa's adjusted probabilities ``Phi(z0 + (z0 + z) / (1 - a (z0 + z)))`` or at the
        percentile's ``(1 -+ level) / 2``; stretched to hold the estimate, as ``bootstrap_replicates``."""
        from scipy.special import ndtr, ndtri

        if self.method == "point":
            return self.estimate, self.estimate
        z = float(ndtri((1 - level) / 2))
        if self.method == "BCa":
            probs = [float(ndtr(self.z0 + (self.z0 + x) / (1 - self.acceleration * (self.z0 + x)))) for x in (z, -z)]
        else:
            probs = [(1 - level) / 2, (1 + level) / 2]
        lo, hi = np.quantile(self.distribution, probs)
        return min(float(lo), self.estimate), max(float(hi), self.estimate)


def _acceleration(arrays: Sequence[np.ndarray]) -> float:
    """BCa's acceleration of the mean of one sample or the difference of the means of two, from the
    jackknife as ``scipy.stats.bootstrap`` computes it (Efron and Tibshirani 1993, eq. 14.15): per
    sample, the leave-one-out estimates ``theta_i``, ``U_i = (n - 1)(mean(theta) - theta_i)``, and
    ``a = sum(U^3 / n^3) / (6 (sum(U^2 / n^2))^1.5)`` over both samples."""
    nums, dens = 0.0, 0.0
    for j, x in enumerate(arrays):
        n = len(x)
        leave_one_out = (x.sum() - x) / (n - 1)
        theta = leave_one_out if j == 0 else -leave_one_out  # the second sample is subtracted
        u = (n - 1) * (theta.mean() - theta)
        nums += float(np.sum(u**3)) / n**3
        dens += float(np.sum(u**2)) / n**2
    return nums / dens**1.5 / 6 if dens > 0 else math.nan


@functools.lru_cache(maxsize=3)
def _resample_indices(n: int, n_resamples: int, seed: int) -> tuple[np.ndarray, ...]:
    """The query indices of every resample of a paired bootstrap of ``n`` queries, in batches of
    ``BATCH``, drawn exactly as ``scipy.stats.bootstrap`` draws them (``rng.integers(0, n, (batch, n))``
    a batch, from ``default_rng(seed)``), kept compact: every comparison of ``n`` queries resamples
    the same indices, so they are drawn once a process."""
    rng = np.random.default_rng(seed)
    dtype = np.uint16 if n <= np.iinfo(np.uint16).max + 1 else np.int64
    return tuple(
        rng.integers(0, n, (min(BATCH, n_resamples - k), n)).astype(dtype) for k in range(0, n_resamples, BATCH)
    )


def _bca(estimate: float, dist: np.ndarray, arrays: Sequence[np.ndarray]) -> Replicates:
    """BCa replicates: z0 from the share of replicates below and at the estimate, as scipy's
    ``_bca_interval``, and the acceleration from the jackknife (``_acceleration``)."""
    from scipy.special import ndtri

    share = (np.count_nonzero(dist < estimate) + np.count_nonzero(dist <= estimate)) / (2 * len(dist))
    return Replicates(estimate, dist, "BCa", float(ndtri(share)), _acceleration(arrays))


def bootstrap_replicates(
    samples: Sequence[np.ndarray],
    paired: bool,
    n_resamples: int = N_RESAMPLES,
    seed: int = RNG_SEED,
) -> tuple[float, float, float, Replicates]:
    """(estimate, low, high, replicates): the mean of one sample, or the difference of the means of two
    independent samples, with its BCa bootstrap interval at ``LEVEL`` (``scipy.stats.bootstrap``; data
    with no spread, every value equal, give the point itself as the interval) and the replicates it was
    read from, from which ``Replicates.interval`` reads the same construction at any
    other level without resampling. One sample (a paired comparison, a mean) is resampled here as
    scipy resamples it (``_resample_indices``: the same replicates, the same interval to float
    rounding, several times faster: the indices are drawn once); two independent samples, and data
    where BCa is undefined, go through ``scipy.stats.bootstrap`` itself."""
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
        return estimate, estimate, estimate, Replicates(estimate, np.array([estimate]), "point")
    if len(arrays) == 1:
        x = arrays[0]  # the same resamples as scipy's, each mean over its gathered values
        dist = np.concatenate([np.mean(x[i], axis=-1) for i in _resample_indices(len(x), n_resamples, seed)])
        reps = _bca(estimate, dist, arrays)
        lo, hi = reps.interval(LEVEL)
        if math.isfinite(lo) and math.isfinite(hi):
            return estimate, lo, hi, reps
    for method in ("BCa", "percentile"):  # BCa undefined (e.g. one value differs): percentile
        res = stats.bootstrap(
            tuple(arrays),
            statistic,
            n_resamples=n_resamples,
            confidence_level=LEVEL,
            method=method,
            paired=paired,
            vectorized=True,
            batch=max(1, min(n_resamples, BATCH)) if method == "BCa" else None,
            rng=np.random.default_rng(seed),
        )
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isfinite(lo) and math.isfinite(hi):
            break
    dist = np.asarray(res.bootstrap_distribution, dtype=float)
    reps = _bca(estimate, dist, arrays) if method == "BCa" else Replicates(estimate, dist, method)
    return estimate, min(lo, estimate), max(hi, estimate), reps


def interval_p_value(
    interval_at: Callable[[float], tuple[float, float]], threshold: float, decided: bool, level: float = LEVEL
) -> float:
    """The two-sided p-value of ``threshold`` that a family of nested intervals implies: 1 - the
    largest confidence level whose interval (``interval_at(level)``) still excludes the threshold,
    found by bisection to ``P_TOLERANCE``. ``decided``: whether the ``level`` interval the verdict was
    read from excludes it; the search starts on that side of ``level`` and returns 1 - the middle of
    its last bracket, so the p-value is below ``1 - level`` exactly when the verdict is decided."""
    lo, hi = (level, 1.0) if decided else (0.0, level)  # lo excludes the threshold, hi does not
    while hi - lo > P_TOLERANCE:
        mid = (lo + hi) / 2
        if excludes(interval_at(mid), threshold):
            lo = mid
        else:
            hi = mid
    return 1 - (lo + hi) / 2


def seed_halfwidth(parts: Sequence[tuple[np.ndarray, float]], level: float = LEVEL) -> float:
    """The half-width the seed variation adds: ``t * sqrt(sum w^2 s^2 / S)`` over the (run means,
    weight w) of each variant with S >= 2 runs, t at the Welch-Satterthwaite degrees of
    freedom; 0 when no variant has two runs."""
    return _welch([(w * w * float(np.var(m, ddof=1)) / len(m), len(m) - 1) for m, w in parts if len(m) >= 2], level)


def _welch(terms: Sequence[tuple[float, int]], level: float) -> float:
    """``t * sqrt(sum v)`` over the (variance of a mean v, degrees of freedom) ``terms``, t at the
    Welch-Satterthwaite degrees of freedom; 0 when the variances sum to 0."""
    from scipy import stats

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
    queries (paired: the common ones), how many runs each variant had; ``replicates`` and
    ``seed_parts`` (each variant's run means and weight) rebuild the interval at any level
    (``interval_at``), hence the p-value of a threshold (``p_value``)."""

    estimate: float
    interval: tuple[float, float]
    n_queries: int | tuple[int, int]
    paired: bool
    runs: tuple[int, int]
    level: float
    replicates: Replicates = field(repr=False, compare=False)
    seed_parts: tuple[tuple[np.ndarray, float], ...] = field(repr=False, compare=False)

    def interval_at(self, level: float) -> tuple[float, float]:
        """The interval this comparison would give at ``level``: the same bootstrap replicates read at
        that level, widened by the seed spread's half-width at that level."""
        lo, hi = self.replicates.interval(level)
        return widen(self.estimate, lo, hi, seed_halfwidth(self.seed_parts, level))

    def p_value(self, threshold: float) -> float:
        """The two-sided p-value of ``threshold`` (``interval_p_value``): below ``1 - level`` exactly
        when this comparison's interval excludes the threshold."""
        return interval_p_value(self.interval_at, threshold, excludes(self.interval, threshold), self.level)

    def text(self) -> str:
        """``paired over 300 queries, 2 / 1 runs`` (how the interval was made)."""
        n = f"{self.n_queries} queries, paired" if self.paired else "{} / {} queries, unpaired".format(*self.n_queries)
        seeds = "seed variation in the interval" if max(self.runs) > 1 else "one run each: seed variation not estimated"
        return f"{n}; {self.runs[0]} / {self.runs[1]} runs, {seeds}"


def compare(a: Values, b: Values, weight: float = 1.0, n_resamples: int = N_RESAMPLES) -> Comparison:
    """The mean of ``a - weight * b`` with its bootstrap interval widened for seed variation (module
    docstring): paired on the common queries when the two share at least two queries, else two
    independent samples."""
    diff = _differences(a, b, weight)
    paired = len(diff) >= 2
    samples = [diff] if paired else [a.by_query.to_numpy(), weight * b.by_query.to_numpy()]
    est, lo, hi, reps = bootstrap_replicates(samples, paired, n_resamples=n_resamples)
    n: int | tuple[int, int] = len(diff) if paired else (len(a.by_query), len(b.by_query))
    parts = ((a.run_means, 1.0), (b.run_means, weight))
    lo, hi = widen(est, lo, hi, seed_halfwidth(parts))
    return Comparison(est, (lo, hi), n, paired, (len(a.run_means), len(b.run_means)), LEVEL, reps, parts)


def mean_interval(values: Values, n_resamples: int = N_RESAMPLES) -> tuple[float, float, float]:
    """(estimate, low, high) of a variant's mean: bootstrap over queries, widened for seed variation (95%)."""
    est, lo, hi, _ = bootstrap_replicates([values.by_query.to_numpy()], True, n_resamples=n_resamples)
    return (est, *widen(est, lo, hi, seed_halfwidth([(values.run_means, 1.0)])))


def _differences(a: Values, b: Values, weight: float) -> np.ndarray:
    """``a_q - weight * b_q`` on the queries both have."""
    common = a.by_query.index.intersection(b.by_query.index)
    return a.by_query.loc[common].to_numpy() - weight * b.by_query.loc[common].to_numpy()


def combine(claim: str, parts: Sequence[tuple[str, Finding]], numbers: str = "") -> Finding:
    """A claim over several comparisons: fails if any part fails, else unchecked if any part is,
    holds if every part holds, undecided otherwise; the parts' verdicts and intervals are in the
    numbers (``name: holds, +3.2 points, 95% CI [+1.1, +5.0]``)."""
    if not parts:
        raise ValueError(f"the compound claim {claim!r} has no parts")
    verdicts = {f.verdict for _, f in parts}
    verdict = next(
        (v for v in ("fails", "unchecked") if v in verdicts), "holds" if verdicts == {"holds"} else "undecided"
    )
    texts = [f"{name}: {f.verdict}" + (f", {interval_text(f)}" if f.interval else "") for name, f in parts]
    p_value, level = compound_p_value([f for _, f in parts]), next((f.level for _, f in parts if f.level), None)
    text = "; ".join(p for p in (numbers, *texts) if p)
    return Finding(claim, verdict, text, level=level, p_value=p_value, parts=tuple((name, f) for name, f in parts))


def _side(f: Finding) -> int:
    """+1 where the estimate of ``f`` lies on the claim's side of its threshold, -1 on the other side,
    0 on the threshold."""
    gap = f.estimate - f.threshold
    sign = (gap > 0) - (gap < 0)
    return sign if f.side == ">" else -sign


def compound_p_value(parts: Sequence[Finding]) -> float | None:
    """The p-value of a compound claim (``combine``) that agrees with its verdict: it holds when every
    part holds, which at a level needs every part's interval off its threshold on the claim's side
    (the largest part p-value, where every estimate is on that side), and fails when one part fails
    (the smallest p-value of the parts whose estimate is on the other side); the smaller of the two.
    None when a part has no p-value (a point verdict)."""
    if not parts or any(f.p_value is None or f.estimate is None or f.threshold is None for f in parts):
        return None
    p_holds = max(f.p_value for f in parts) if all(_side(f) == 1 for f in parts) else 1.0
    p_fails = min((f.p_value for f in parts if _side(f) == -1), default=1.0)
    return min(p_holds, p_fails)


def holm(findings: Sequence[Finding], alpha: float = 1 - LEVEL) -> list[Finding]:
    """The findings with Holm's step-down adjustment over their family (statsmodels'
    ``multipletests(p, alpha, method="holm")``): every finding with a p-value and a three-valued
    verdict is a member; each gets ``p_holm`` (its adjusted p-value), ``family_size`` and
    ``holm_verdict``, its verdict where ``p_holm < alpha`` (the side its estimate is on; a decided
    verdict's p is below ``alpha``) and undecided otherwise. Point verdicts, unchecked checks and
    notes are no members and keep no adjustment. Holm controls the chance of any wrong decided verdict
    in the family at ``alpha``, whatever the dependence between the findings (docs/findings.md)."""
    members = [
        i for i, f in enumerate(findings) if f.p_value is not None and f.verdict in ("holds", "fails", "undecided")
    ]
    out = list(findings)
    if not members:
        return out
    import gc

    from statsmodels.stats.multitest import multipletests

    gc.freeze()  # statsmodels' Holm ends with gc.collect(): over the objects made before it, a tenth of a second
    try:
        adjusted = multipletests([findings[i].p_value for i in members], alpha=alpha, method="holm")[1]
    finally:
        gc.unfreeze()
    for i, p in zip(members, adjusted):
        f = findings[i]
        p = min(float(p), 1.0)
        out[i] = replace(f, p_holm=p, holm_verdict=f.verdict if p < alpha else "undecided", family_size=len(members))
    return out


@dataclass(frozen=True)
class Budget:
    """What would decide an undecided comparison if the measured effect and spreads stay
    as they are: the half-widths now (over queries, from the seeds) and the queries and seeds per
    variant that would bring the interval off the threshold (``inf``: not by that alone)."""

    gap: float
    query_halfwidth: float
    seed_halfwidth: float
    queries: float
    seeds: float

    def text(self) -> str:
        q = "never" if math.isinf(self.queries) else f"{self.queries:,.0f}"
        s = "no number of seeds" if math.isinf(self.seeds) else f"{self.seeds:.0f} seeds a variant"
        s = "seeds not estimated (a variant with one run)" if math.isnan(self.seeds) else s
        return (
            f"gap to the threshold {self.gap * 100:.1f} points; half-widths: queries {self.query_halfwidth * 100:.1f}, "
            f"seeds {self.seed_halfwidth * 100:.1f}; with today's seeds, queries needed: {q}; "
            f"with today's queries: {s}"
        )


def budget_to_decide(per_query: pd.DataFrame, a: Labels, b: Labels, metrics: Labels, threshold: float = 0.0) -> Budget:
    """The budget that would decide ``a - b`` (``claims.evaluate``'s comparison, weight 1) from today's
    per-query differences and run means: ``queries``, the common queries at which the query
    half-width (``z * sd / sqrt(n)``) and today's seed half-width, in quadrature, fall below the
    gap; ``seeds``, the runs per variant at which today's query half-width and the seed
    half-width (``t * sqrt(s_a^2 / S + s_b^2 / S)``, Welch degrees of freedom) do (up to 1,000;
    ``inf`` beyond), at 95%. ``seeds`` is ``nan`` when a variant has one run (no measured spread). Variants that share fewer than two
    queries compare unpaired (as ``compare`` does): ``z * sqrt(var_a / n_a + var_b / n_b)`` over
    queries, and ``queries`` is then per variant."""
    from scipy import stats

    va, vb = variant_values(per_query, a, metrics), variant_values(per_query, b, metrics)
    d = _differences(va, vb, 1.0)
    z = float(stats.norm.ppf(0.5 + LEVEL / 2))
    if len(d) >= 2:
        gap, sd = abs(float(d.mean()) - threshold), float(d.std(ddof=1))
        q_half = z * sd / math.sqrt(len(d))
    else:
        xa, xb = va.by_query.to_numpy(), vb.by_query.to_numpy()
        if min(len(xa), len(xb)) < 2:
            raise ValueError(f"budget_to_decide needs 2 queries a variant or more, got {len(xa)} and {len(xb)}")
        gap, sd = abs(float(xa.mean() - xb.mean()) - threshold), math.hypot(xa.std(ddof=1), xb.std(ddof=1))
        q_half = z * math.hypot(xa.std(ddof=1) / math.sqrt(len(xa)), xb.std(ddof=1) / math.sqrt(len(xb)))
    s_half = seed_halfwidth([(va.run_means, 1.0), (vb.run_means, 1.0)], LEVEL)
    queries = math.inf if s_half >= gap or gap == 0 else float(max(2, math.ceil((z * sd) ** 2 / (gap**2 - s_half**2))))
    if min(len(va.run_means), len(vb.run_means)) < 2:
        seeds = math.nan
    else:
        var = [float(np.var(m, ddof=1)) for m in (va.run_means, vb.run_means)]
        seeds = next((float(n) for n in range(2, 1001)
                      if math.hypot(q_half, _welch([(x / n, n - 1) for x in var], LEVEL)) < gap), math.inf)  # fmt: skip
    return Budget(gap, q_half, s_half, queries, seeds)
