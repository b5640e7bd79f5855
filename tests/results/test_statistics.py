"""Intervals and three-valued verdicts of the findings (arrank.results.statistics)."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from arrank.common.findings import decide, findings_markdown, note
from arrank.results import statistics as S
from arrank.results.claims import Claim, evaluate, point_finding


def per_query(values: dict[str, list[np.ndarray]], column: str = "r1") -> pd.DataFrame:
    """Rows of ``report.per_query_frame``'s format: variant -> one array of per-query values per run."""
    rows = []
    for variant, runs in values.items():
        for seed, run in enumerate(runs):
            rows += [
                {"point": f"{variant}-seed{seed}", "variant": variant, "seed": seed, "query": f"q{q}", column: float(v)}
                for q, v in enumerate(run)
            ]
    return pd.DataFrame(rows)


def check(claim, data, a, b, metric, side=">", weight=1.0, n_resamples=S.N_RESAMPLES):
    """``claims.evaluate`` of the claim that ``a - weight * b`` of one metric is on ``side`` of 0."""
    return evaluate(Claim("k", claim, claim, a, b, (S.column(metric),), side=side, weight=weight), data,
                    n_resamples=n_resamples)  # fmt: skip


def bernoulli_pair(rng, n: int, pa: float, pb: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-query 0/1 outcomes of two variants on the same queries (correlated, as two models on
    one query are): b copies a's uniform draw half of the time."""
    u = rng.random(n)
    v = np.where(rng.random(n) < 0.5, u, rng.random(n))
    return (u < pa).astype(float), (v < pb).astype(float)


def test_a_known_large_difference_holds_and_the_wrong_direction_fails():
    a, b = bernoulli_pair(np.random.default_rng(0), 300, 0.85, 0.55)
    data = per_query({"A": [a], "B": [b]})
    found = check("A beats B at R@1", data, "A", "B", "recall@1")
    assert found.verdict == "holds" and found.estimate == pytest.approx(a.mean() - b.mean())
    lo, hi = found.interval
    assert 0 < lo < found.estimate < hi and hi - lo < 0.2  # about 4 standard errors of 0.025
    assert "300 queries, paired" in found.numbers
    assert check("B beats A", data, "B", "A", "recall@1").verdict == "fails"
    assert check("A below B", data, "A", "B", "recall@1", side="<").verdict == "fails"


def test_identical_pairs_are_undecided():
    a, _ = bernoulli_pair(np.random.default_rng(1), 200, 0.7, 0.7)
    data = per_query({"A": [a], "B": [a.copy()]})
    found = check("A beats B", data, "A", "B", "recall@1")
    assert found.verdict == "undecided" and found.interval == (0.0, 0.0) and found.estimate == 0.0
    assert "**undecided** here" in findings_markdown([found])


def test_a_small_difference_on_few_queries_is_undecided():
    rng = np.random.default_rng(2)
    a, b = bernoulli_pair(rng, 40, 0.62, 0.60)
    found = check("A beats B", per_query({"A": [a], "B": [b]}), "A", "B", "recall@1")
    assert found.verdict == "undecided" and found.interval[0] < 0 < found.interval[1]


def test_the_interval_covers_the_true_difference_at_about_the_nominal_rate():
    # 200 simulated datasets of 100 paired 0/1 queries, true difference 0.75 - 0.65 = 0.10. The
    # count of covering intervals is Binomial(200, 0.95) if the interval is right: sd 3.1, so
    # 3 sd is 181..199 of 200 (0.904..0.996).
    rng = np.random.default_rng(3)
    covered = 0
    for _ in range(200):
        a, b = bernoulli_pair(rng, 100, 0.75, 0.65)
        _, lo, hi, _ = S.bootstrap_replicates([a - b], True, n_resamples=999, seed=int(rng.integers(1 << 31)))
        covered += lo <= 0.10 <= hi
    assert 181 <= covered <= 199, covered


def test_seed_disagreement_widens_the_interval_by_the_t_quantile():
    rng = np.random.default_rng(4)
    a, b = bernoulli_pair(rng, 300, 0.8, 0.6)
    agree = per_query({"A": [a, a], "B": [b]})
    shifted = np.where(rng.random(300) < 0.2, 0.0, a)  # a second seed 15-ish points lower
    disagree = per_query({"A": [a, shifted], "B": [b]})
    narrow = S.compare(S.variant_values(agree, "A", "r1"), S.variant_values(agree, "B", "r1"))
    wide = S.compare(S.variant_values(disagree, "A", "r1"), S.variant_values(disagree, "B", "r1"))
    assert narrow.runs == (2, 1) and wide.runs == (2, 1)
    width = lambda c: c.interval[1] - c.interval[0]
    assert width(wide) > 3 * width(narrow)
    # the seed half-width alone: two run means 0.5 and 0.7, se = sqrt(0.02 / 2) = 0.1, t(0.975, 1 df) = 12.71
    assert S.seed_halfwidth([(np.array([0.5, 0.7]), 1.0)]) == pytest.approx(stats.t.ppf(0.975, 1) * 0.1)
    assert S.seed_halfwidth([(np.array([0.5]), 1.0)]) == 0.0  # one run: not estimated
    assert S.widen(0.1, 0.05, 0.2, 0.0) == (0.05, 0.2)
    assert S.widen(0.0, -0.3, 0.4, 0.4) == pytest.approx((-0.5, 0.4 * math.sqrt(2)))


def test_values_average_runs_per_query_and_skip_missing_recall():
    data = pd.DataFrame(
        {
            "point": ["p0", "p0", "p1", "p1"],
            "variant": "A",
            "seed": [0, 0, 1, 1],
            "query": ["x", "y", "x", "y"],
            "r2": [1.0, 0.5, 0.0, 0.5],
            "r3": [1.0, np.nan, 1 / 3, np.nan],
        }
    )
    v = S.variant_values(data, "A", ["recall@2", "recall@3"])
    assert v.by_query.to_dict() == pytest.approx({"x": (1.0 + 1 / 6) / 2, "y": 0.5})  # y has R@2 only
    assert sorted(v.run_means) == pytest.approx([(1 / 6 + 0.5) / 2, 0.75])
    with pytest.raises(ValueError, match="metric='mrr' is not allowed"):
        S.variant_values(data, "A", "mrr")
    with pytest.raises(ValueError, match=r"no per-query values of \['r2'\] for the variant\(s\) \['B'\]"):
        S.variant_values(data, "B", "recall@2")


def test_queries_on_disjoint_sets_are_compared_as_independent_samples():
    rng = np.random.default_rng(5)
    a, b = (rng.random(200) < 0.9).astype(float), (rng.random(150) < 0.5).astype(float)
    data = pd.concat([per_query({"A": [a]}), per_query({"B": [b]}).assign(query=lambda d: "t" + d["query"])])
    c = S.compare(S.variant_values(data, "A", "r1"), S.variant_values(data, "B", "r1"))
    assert not c.paired and c.n_queries == (200, 150) and c.interval[0] > 0.25
    assert c.estimate == pytest.approx(a.mean() - b.mean())


def test_compound_claims_hold_only_when_every_part_holds():
    holds, fails = decide("", 0.1, (0.05, 0.15)), decide("", -0.1, (-0.15, -0.05))
    undecided = decide("", 0.01, (-0.02, 0.04))
    assert S.combine("all", [("a", holds), ("b", holds)]).verdict == "holds"
    assert S.combine("all", [("a", holds), ("b", undecided)]).verdict == "undecided"
    assert S.combine("all", [("a", undecided), ("b", fails)]).verdict == "fails"
    text = S.combine("all", [("a", holds), ("b", fails)], "numbers").numbers
    assert text == "numbers; a: holds, +10.0 points, 95% CI [+5.0, +15.0]; b: fails, -10.0 points, 95% CI [-15.0, -5.0]"
    with pytest.raises(ValueError, match="has no parts"):
        S.combine("none", [])


def test_weighted_differences_check_at_most_half():
    # CVR: B (NTP) 0.6, A 0.2: A <= B / 2 holds (0.2 - 0.3 < 0); with A at 0.35 it fails
    rng = np.random.default_rng(6)
    b = (rng.random(400) < 0.6).astype(float)
    for pa, verdict in ((0.2, "holds"), (0.45, "fails")):
        a = (rng.random(400) < pa).astype(float)
        found = check("half", per_query({"A": [a], "B": [b]}, "cvr"), "A", "B", "cvr", side="<", weight=0.5)
        assert found.verdict == verdict and found.estimate == pytest.approx(a.mean() - b.mean() / 2)


def test_queries_to_decide_from_the_measured_effect_and_spread():
    """One run a variant: the queries of ``budget_to_decide`` are ceil((z · sd / |mean − threshold|)²) of
    the per-query differences (here A's values against B = 0)."""
    rng = np.random.default_rng(7)
    data = lambda d: per_query({"A": [d], "B": [np.zeros(len(d))]})
    decide_at = lambda d, threshold=0.0: S.budget_to_decide(data(d), "A", "B", "r1", threshold).queries
    d = rng.normal(0.02, 0.5, 1000)
    n = decide_at(d)
    assert n == math.ceil((stats.norm.ppf(0.975) * d.std(ddof=1)) ** 2 / d.mean() ** 2)
    assert 1000 < n < 10000  # about (1.96 * 0.5 / 0.02)^2 = 2401 for the true mean and sd
    assert decide_at(np.array([0.1, -0.1, 0.1, -0.1])) == math.inf
    assert decide_at(np.array([0.3, 0.1]), threshold=0.2) == math.inf
    # at the n it gives, an interval from that many queries excludes the threshold
    big = rng.normal(0.1, 0.5, 5000)
    need = int(decide_at(big))
    _, lo, _, _ = S.bootstrap_replicates([rng.normal(big.mean(), big.std(), need * 2)], True, n_resamples=999)
    assert lo > 0
    with pytest.raises(ValueError, match="needs 2 queries a variant or more, got 1 and 1"):
        decide_at(np.array([0.1]))


def test_budget_to_decide_names_the_queries_and_seeds_that_would_decide():
    """A 10-point effect on 2,000 queries, two seeds a variant that disagree by about 4 points:
    the seed half-width (t at about 2 Welch degrees of freedom) is wider than the gap, so no number
    of queries decides it; more seeds do, and at the number given the interval of runs with the
    measured spreads excludes 0."""
    rng = np.random.default_rng(11)
    a, b = bernoulli_pair(rng, 2000, 0.80, 0.70)
    a2 = np.where(rng.random(2000) < 0.05, 0.0, a)  # a second seed about 4 points lower
    b2 = np.where(rng.random(2000) < 0.05, 0.0, b)
    data = per_query({"A": [a, a2], "B": [b, b2]})
    budget = S.budget_to_decide(data, "A", "B", "r1")
    va, vb = S.variant_values(data, "A", "r1"), S.variant_values(data, "B", "r1")
    d = va.by_query.to_numpy() - vb.by_query.to_numpy()
    assert budget.gap == pytest.approx(abs(d.mean()))
    assert budget.query_halfwidth == pytest.approx(stats.norm.ppf(0.975) * d.std(ddof=1) / math.sqrt(2000))
    assert budget.seed_halfwidth == pytest.approx(S.seed_halfwidth([(va.run_means, 1.0), (vb.run_means, 1.0)]))
    assert budget.seed_halfwidth > budget.gap and budget.queries == math.inf  # seeds, not queries, limit it
    assert 2 < budget.seeds < 1000
    S_ = int(budget.seeds)  # S runs each with the measured spreads: the seed term then fits under the gap
    var = [float(np.var(m, ddof=1)) for m in (va.run_means, vb.run_means)]
    v = sum(var) / S_
    df = v**2 / sum((x / S_) ** 2 / (S_ - 1) for x in var)
    assert math.hypot(budget.query_halfwidth, stats.t.ppf(0.975, df) * math.sqrt(v)) < budget.gap
    one = S.budget_to_decide(per_query({"A": [a], "B": [b]}), "A", "B", "r1")
    assert math.isnan(one.seeds) and one.seed_halfwidth == 0.0
    z_sd = stats.norm.ppf(0.975) * (a - b).std(ddof=1)
    assert one.queries == math.ceil(z_sd**2 / (a - b).mean() ** 2)  # no seed term: the normal approximation
    assert "queries needed" in budget.text() and "seeds a variant" in budget.text()


def test_budget_to_decide_compares_variants_without_common_queries_unpaired():
    """Two variants scored on different queries (ARR on training queries against a DE on held-out
    ones): the two-sample half-width, and the queries a variant at which it falls under the gap."""
    rng = np.random.default_rng(13)
    a, b = (rng.random(300) < 0.62).astype(float), (rng.random(200) < 0.55).astype(float)
    data = pd.concat([per_query({"A": [a]}), per_query({"B": [b]}).assign(query=lambda f: "p" + f["query"])])
    budget = S.budget_to_decide(data, "A", "B", "r1")
    z = stats.norm.ppf(0.975)
    assert budget.gap == pytest.approx(abs(a.mean() - b.mean()))
    assert budget.query_halfwidth == pytest.approx(z * math.sqrt(a.var(ddof=1) / 300 + b.var(ddof=1) / 200))
    assert budget.queries == math.ceil(z**2 * (a.var(ddof=1) + b.var(ddof=1)) / budget.gap**2)
    assert math.isnan(budget.seeds) and budget.seed_halfwidth == 0.0
    with pytest.raises(ValueError, match="needs 2 queries a variant or more, got 300 and 1"):
        S.budget_to_decide(data[data["query"] != "pq0"].query("variant == 'A' or query == 'pq1'"), "A", "B", "r1")


def test_replicates_read_scipys_interval_at_any_level():
    """The replicates a comparison keeps give, at every level, the interval scipy's BCa gives from the
    same bootstrap distribution (n_resamples=0 with bootstrap_result), and the replicates themselves are
    scipy's own, bit for bit."""
    rng = np.random.default_rng(12)
    mean = lambda x, axis=-1: np.mean(x, axis=axis)
    diff = lambda x, y, axis=-1: np.mean(x, axis=axis) - np.mean(y, axis=axis)
    cases = [
        ([rng.integers(-1, 2, 300) / 4.0], True, mean),  # R@k-like differences: few distinct values
        ([(rng.random(2001) < 0.1).astype(float)], True, mean),  # more than one batch of resamples
        ([rng.random(200), 0.5 * rng.random(150)], False, diff),  # two independent samples
    ]
    for samples, paired, statistic in cases:
        est, lo, hi, reps = S.bootstrap_replicates(samples, paired, n_resamples=2999)
        res = stats.bootstrap(
            tuple(samples), statistic, n_resamples=2999, method="BCa", paired=paired, vectorized=True,
            batch=2000, rng=np.random.default_rng(S.RNG_SEED),
        )  # fmt: skip
        assert np.array_equal(reps.distribution, res.bootstrap_distribution)
        assert (lo, hi) == pytest.approx((res.confidence_interval.low, res.confidence_interval.high), abs=1e-12)
        for level in (0.5, 0.8, 0.99, 0.999):
            again = stats.bootstrap(
                tuple(samples), statistic, n_resamples=0, bootstrap_result=res, confidence_level=level,
                method="BCa", paired=paired, vectorized=True,
            )  # fmt: skip
            want = (min(again.confidence_interval.low, est), max(again.confidence_interval.high, est))
            assert reps.interval(level) == pytest.approx(want, abs=1e-12)


def test_the_p_value_inverts_a_known_interval_family():
    """For the normal interval est ± z(level) · se the p-value of 0 is the z-test's, 2 (1 - Φ(|est| / se)):
    the bisection recovers it to its tolerance, and it is below 0.05 exactly when the 95% interval
    excludes 0."""
    se = 1.0
    for est in (0.5, 1.9, 1.959, 1.961, 2.5, 4.0, -3.0):
        at = lambda level, est=est: (
            est - stats.norm.ppf(0.5 + level / 2) * se,
            est + stats.norm.ppf(0.5 + level / 2) * se,
        )
        decided = at(0.95)[0] > 0 or at(0.95)[1] < 0
        p = S.interval_p_value(at, 0.0, decided)
        assert p == pytest.approx(2 * stats.norm.sf(abs(est) / se), abs=1e-5)
        assert (p < 0.05) == decided
    # an interval that never excludes the threshold (the estimate on it) has p about 1
    assert S.interval_p_value(lambda level: (-level, level), 0.0, False) > 1 - 1e-5


def test_the_p_value_agrees_with_the_verdict_on_constructed_data():
    """Decided at 95% (holds or fails) exactly when p < 0.05, over comparisons near the boundary: one
    run a variant, two seeds (the t-widened interval), a weighted difference and an unpaired one."""
    rng = np.random.default_rng(13)
    seen = set()
    for trial in range(24):
        n = 150
        shift = rng.uniform(0.0, 0.16)
        a, b = bernoulli_pair(rng, n, 0.55 + shift, 0.55)
        runs = {"A": [a], "B": [b]}
        if trial % 3 == 1:  # a second seed per variant
            runs = {"A": [a, np.where(rng.random(n) < 0.05, 1.0, a)], "B": [b, b]}
        data = per_query(runs)
        if trial % 4 == 3:  # B on other queries: two independent samples
            data.loc[data["variant"] == "B", "query"] = "t" + data.loc[data["variant"] == "B", "query"]
        weight, side = (0.5, "<") if trial % 5 == 4 else (1.0, ">")
        found = check("A beats B", data, "A", "B", "recall@1", side=side, weight=weight, n_resamples=1999)
        assert found.p_value is not None and 0 < found.p_value < 1
        assert (found.p_value < 0.05) == (found.verdict != "undecided"), (trial, found.verdict, found.p_value)
        seen.add(found.verdict)
    assert seen == {"holds", "fails", "undecided"}  # the constructed data reach every verdict


def test_a_compound_p_value_agrees_with_its_verdict():
    part = lambda est, lo, hi, p, side=">": decide("", est, (lo, hi), 0.0, side, p_value=p)
    holds, weak, fails = part(0.1, 0.05, 0.15, 0.001), part(0.03, 0.01, 0.05, 0.02), part(-0.1, -0.15, -0.05, 0.003)
    open_ = part(0.01, -0.01, 0.03, 0.4)
    assert S.combine("all hold", [("a", holds), ("b", weak)]).p_value == 0.02  # the weakest part decides
    assert S.combine("one fails", [("a", holds), ("b", fails)]).p_value == 0.003  # the failing part decides
    both = S.combine("one open", [("a", holds), ("b", open_)])
    assert both.verdict == "undecided" and both.p_value == 0.4
    below = part(-0.1, -0.15, -0.05, 0.003, "<")  # a claim of a difference below 0: holds
    assert S.combine("mixed sides", [("a", holds), ("b", below)]).p_value == 0.003
    assert S.combine("point", [("a", holds), ("b", point_finding("x", True, "1"))]).p_value is None
    assert [name for name, _ in S.combine("all hold", [("a", holds), ("b", weak)]).parts] == ["a", "b"]


def _family(ps: list[float]) -> list:
    """Findings that hold, with the given p-values (their intervals off 0 on the claim's side)."""
    return [decide(f"claim {i}", 0.1, (0.01, 0.2), p_value=p) for i, p in enumerate(ps)]


def test_holm_adjusts_a_family_as_the_textbook_does():
    """Holm (1979): sort the m p-values, multiply the i-th smallest by m - i + 1, carry the running
    maximum. p = 0.01, 0.04, 0.03, 0.005 (m = 4): 0.005 · 4 = 0.02, 0.01 · 3 = 0.03, 0.03 · 2 = 0.06,
    max(0.04 · 1, 0.06) = 0.06."""
    adjusted = S.holm(_family([0.01, 0.04, 0.03, 0.005]))
    assert [f.p_holm for f in adjusted] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert [f.holm_verdict for f in adjusted] == ["holds", "undecided", "undecided", "holds"]
    assert {f.family_size for f in adjusted} == {4}
    # a note and a point verdict are no members; the family is the three with p-values
    rows = [*_family([0.01, 0.02, 0.03]), note("a note"), point_finding("point", True, "1")]
    adjusted = S.holm(rows)
    assert [f.p_holm for f in adjusted[:3]] == pytest.approx([0.03, 0.04, 0.04])
    assert adjusted[3] == rows[3] and adjusted[4] == rows[4] and adjusted[4].holm_verdict is None
    assert S.holm([]) == []


def test_a_verdict_that_holm_changes_is_marked():
    family = S.holm(_family([0.001, 0.03, 0.002]))  # 0.03 · 1 = 0.03; 0.002 · 2 = 0.004; all hold
    assert [f.holm_verdict for f in family] == ["holds"] * 3 and not any(f.holm_changed for f in family)
    family = S.holm(_family([0.001, 0.03, 0.02]))  # 0.02 · 2 = 0.04, then max(0.03, 0.04): all hold
    assert not any(f.holm_changed for f in family)
    family = S.holm(_family([0.001, 0.04, 0.03]))  # 0.03 · 2 = 0.06: both above 0.05
    assert [f.holm_changed for f in family] == [False, True, True]
    text = findings_markdown(family)
    assert text.count("holds here → **undecided** (Holm)") == 2
    assert "- claim 0: holds here (" in text and "Holm (3 findings): p = 0.003, holds" in text
    assert "p = 0.040; Holm (3 findings): p = 0.060, undecided" in text


def test_a_weighted_comparison_widens_by_the_weighted_seed_spread():
    """a - w·b with w = 0.5 (docs/findings.md): constant per-query differences (no query spread) leave
    only the seed half-width t(0.975, S-1) · sqrt(w² s_b² / S_b); b's run means 0 and 2 give s_b² = 2,
    S_b = 2, so the half-width is t(0.975, 1) · sqrt(0.25 · 2 / 2) = t · 0.5 around 1 - 0.5 = 0.5."""
    queries = ["q0", "q1", "q2"]
    a = S.Values(pd.Series([1.0] * 3, index=queries), np.array([1.0]))
    b = S.Values(pd.Series([1.0] * 3, index=queries), np.array([0.0, 2.0]))
    found = S.compare(a, b, weight=0.5)
    half = stats.t.ppf(0.975, 1) * 0.5
    assert found.estimate == 0.5 and found.interval == pytest.approx((0.5 - half, 0.5 + half), rel=1e-12)
    assert found.paired and found.n_queries == 3 and found.runs == (1, 2)


def test_two_common_queries_are_enough_to_pair():
    """Paired on the common queries when there are at least two (module docstring): q0, q1 here."""
    a = S.Values(pd.Series([1.0, 0.0, 1.0], index=["q0", "q1", "q2"]), np.array([2 / 3]))
    b = S.Values(pd.Series([0.0, 0.0, 0.5], index=["q0", "q1", "q9"]), np.array([0.5]))
    found = S.compare(a, b, n_resamples=99)
    assert found.paired and found.n_queries == 2 and found.estimate == 0.5


def test_replicates_interval_reads_quantiles_and_holds_the_estimate():
    """Percentile interval of the replicates 1, 2, 3 at level 0.5: the 0.25 and 0.75 quantiles (linear
    interpolation) 1.5 and 2.5, stretched down to hold an estimate of 0.5; a point gives the point."""
    reps = S.Replicates(0.5, np.array([1.0, 2.0, 3.0]), "percentile")
    assert reps.interval(0.5) == pytest.approx((0.5, 2.5))
    assert S.Replicates(2.0, np.array([1.0, 2.0, 3.0]), "percentile").interval(0.5) == pytest.approx((1.5, 2.5))
    assert S.Replicates(0.3, np.array([0.3]), "point").interval(0.99) == (0.3, 0.3)


def test_a_decided_p_value_is_strictly_below_one_minus_the_level():
    """An interval family that excludes 0 up to 95% and no further: p = 0.05 to the bisection's
    tolerance and, the verdict being decided, strictly below 0.05 (so Holm over one keeps it)."""
    p = S.interval_p_value(lambda level: (0.1, 1.0) if level <= 0.95 else (-1.0, 1.0), 0.0, True)
    assert 0.05 - S.P_TOLERANCE < p < 0.05


def test_compound_claims_below_a_threshold_and_fails_before_unchecked():
    """Every part of a "<" claim below its threshold: the compound holds, with the largest part p-value
    (0.03); a failing part decides the compound even beside an unchecked one."""
    below = [decide("", -0.1, (-0.2, -0.05), 0.0, "<", p_value=p) for p in (0.01, 0.03)]
    found = S.combine("both below", [("a", below[0]), ("b", below[1])])
    assert found.verdict == "holds" and found.p_value == 0.03
    fails = decide("", -0.1, (-0.2, -0.05), 0.0, ">", p_value=0.01)
    assert S.combine("x", [("a", fails), ("b", point_finding("u", None, "1"))]).verdict == "fails"


def test_holm_at_exactly_alpha_is_undecided():
    """Holm's rule rejects where the adjusted p is below alpha: p = 0.025, 0.025 (m = 2) adjust to
    0.05 each, which at alpha = 0.05 is not below, so both are undecided."""
    adjusted = S.holm(_family([0.025, 0.025]), alpha=0.05)
    assert [f.p_holm for f in adjusted] == [0.05, 0.05] and {f.holm_verdict for f in adjusted} == {"undecided"}
