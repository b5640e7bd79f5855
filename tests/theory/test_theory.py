"""Tests of arrank.theory: Skala counts (Prop. 3.1), exact LP permutation counts, and the
rank(E') condition of Props. 3.2 / 3.3 and Corollary 3.1 (section 3 and Appendix A)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import linprog, minimize
from scipy.special import logsumexp, softmax

from arrank import theory as th
from arrank.theory import capacity


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _token_margin(E: np.ndarray, order: tuple[int, ...]) -> float:
    """Independent LP: max t s.t. (e_b - e_a).phi / |e_b - e_a| + t <= 0 for consecutive a, b."""
    rows = [(E[b] - E[a]) / np.linalg.norm(E[b] - E[a]) for a, b in zip(order, order[1:])]
    A = np.hstack([np.array(rows), np.ones((len(rows), 1))])
    n = E.shape[1]
    res = linprog(
        np.r_[np.zeros(n), -1.0], A_ub=A, b_ub=np.zeros(len(rows)), bounds=[(-1, 1)] * n + [(None, 1)], method="highs"
    )
    assert res.status == 0
    return float(res.x[-1])


# ------------------------------------------------------------------ Stirling and Skala


def stirling_row(k: int) -> list[int]:
    """Row k of the unsigned Stirling numbers of the first kind, ``row[j] = |s(k, j)|``: capacity's top
    of the row, whole."""
    return list(reversed(capacity._stirling_top(k, k)))


def test_stirling_rows_by_hand_and_sum_to_factorial():
    assert stirling_row(0) == [1]
    assert stirling_row(4) == [0, 6, 11, 6, 1]
    assert stirling_row(5) == [0, 24, 50, 35, 10, 1]
    for k in range(1, 30):
        assert sum(stirling_row(k)) == math.factorial(k)


def test_skala_count_hand_table():
    assert [th.skala_count(n, 4) for n in (1, 2, 3)] == [7, 18, 24]
    assert th.skala_count(1, 3) == 4
    assert th.skala_count(2, 5) == 1 + 10 + 35
    assert th.skala_count(1, 1) == 1


@pytest.mark.parametrize("k", range(1, 41))
def test_skala_count_one_dimension_is_pairs_plus_one(k):
    assert th.skala_count(1, k) == math.comb(k, 2) + 1


def test_skala_count_reaches_factorial_exactly_from_k_minus_1():
    for k in range(2, 13):
        for n in range(k - 1, k + 3):
            assert th.skala_count(n, k) == math.factorial(k)
        for n in range(1, k - 1):
            assert th.skala_count(n, k) < math.factorial(k)


def test_skala_count_large_k_against_elementary_symmetric_closed_form():
    k = 3000
    e1 = k * (k - 1) // 2  # sum of 0..k-1
    e2 = (e1**2 - (k - 1) * k * (2 * k - 1) // 6) // 2  # sum_{a<b} a*b
    assert th.skala_count(2, k) == 1 + e1 + e2


def test_skala_count_within_skala_corollary_8_bound():
    for k in range(2, 25):
        for n in range(1, k):
            assert th.skala_count(n, k) <= k ** (2 * n)


def test_exact_min_dimension_is_k_minus_1():
    assert th.exact_min_dimension(1) == 1
    for k in range(2, 51):
        assert th.exact_min_dimension(k) == k - 1
        assert th.skala_count(k - 1, k) == math.factorial(k)
        if k > 2:
            assert th.skala_count(k - 2, k) < math.factorial(k)


def test_stirling_bottom_matches_row():
    for k in range(1, 12):
        assert list(capacity._stirling_bottom(k, k)) == stirling_row(k)


def test_paper_bound_below_exact_dimension():
    assert th.paper_dimension_bound(2) == pytest.approx(0.5)
    assert th.paper_dimension_bound(10) == pytest.approx(math.log(math.factorial(10)) / (2 * math.log(10)))
    for k in range(2, 1001):
        assert th.paper_dimension_bound(k) < th.exact_min_dimension(k)


def test_prop_3_1_below_the_bound_not_all_rankings():
    for k in range(2, 60):
        bound = th.paper_dimension_bound(k)
        for n in range(1, math.ceil(bound)):
            assert th.skala_count(n, k) < math.factorial(k)


def test_de_fraction_exact_and_log10():
    assert 10 ** th.log10_de_fraction_realisable(1, 4) == pytest.approx(7 / 24, rel=1e-12)
    assert th.log10_de_fraction_realisable(3, 4) == pytest.approx(0.0, abs=1e-12)
    exact = math.log10(th.skala_count(2, 64)) - math.log10(math.factorial(64))
    assert th.log10_de_fraction_realisable(2, 64) == pytest.approx(exact, abs=1e-9)
    assert th.log10_de_fraction_realisable(2, 64) < -80
    assert th.log10_de_fraction_realisable(63, 64) == pytest.approx(0.0, abs=1e-9)


# ----------------------------------------------------- exact distance permutations (LP)


@pytest.mark.parametrize("k", range(2, 7))
def test_generic_sites_reach_skala_count(k):
    rng = _rng(100 + k)
    for n in range(1, k):
        sites = rng.standard_normal((k, n))
        assert th.count_distance_permutations(sites) == th.skala_count(n, k)


# n = 6 = k - 1 (all 7! = 5040 orders) is left to the cheaper cases of the same property: Skala's count
# there in test_skala_count_reaches_factorial_exactly_from_k_minus_1, the LP count reaching k! at
# n = k - 1 in test_generic_sites_reach_skala_count[6] (n = 5, 6! = 720 cells) and
# test_never_exceeds_skala_in_high_dimension; its 5040 LPs took 5 s (24 s on a loaded machine)
@pytest.mark.parametrize("n, expected", [(1, 22), (2, 197)])
def test_seven_sites(n, expected):
    sites = _rng(7 * n).standard_normal((7, n))
    assert th.skala_count(n, 7) == expected
    assert th.count_distance_permutations(sites) == expected


def test_never_exceeds_skala_in_high_dimension():
    sites = _rng(1).standard_normal((4, 6))
    assert th.count_distance_permutations(sites) == th.skala_count(6, 4) == 24


@pytest.mark.parametrize("k", [3, 4, 5, 6])
def test_collinear_sites_in_the_plane_give_the_1d_count(k):
    rng = _rng(k)
    sites = np.outer(rng.standard_normal(k), [1.0, 2.0]) + np.array([3.0, -1.0])
    assert th.count_distance_permutations(sites) == math.comb(k, 2) + 1


def test_hand_checked_1d_example():
    # sites 0, 1, 3: bisectors at 0.5, 1.5, 2 split the line into 4 intervals.
    sites = np.array([[0.0], [1.0], [3.0]])
    assert th.realisable_distance_permutations(sites) == [(0, 1, 2), (1, 0, 2), (1, 2, 0), (2, 1, 0)]


def test_coincident_and_single_sites():
    assert th.count_distance_permutations(np.zeros((1, 3))) == 1
    assert th.count_distance_permutations(np.array([[1.0, 2.0], [1.0, 2.0], [0.0, 0.0]])) == 0


def test_grid_orders_are_all_listed():
    sites = _rng(5).standard_normal((5, 2))
    listed = set(th.realisable_distance_permutations(sites))
    g = np.linspace(-4, 4, 161)
    q = np.stack(np.meshgrid(g, g), axis=-1).reshape(-1, 2)
    d2 = ((q[:, None, :] - sites[None]) ** 2).sum(-1)
    seen = {tuple(int(i) for i in row) for row in np.argsort(d2, axis=1)}
    assert seen <= listed
    assert len(listed) == th.skala_count(2, 5) == 46


def test_scale_and_translation_invariance():
    sites = _rng(11).standard_normal((5, 2))
    base = th.realisable_distance_permutations(sites)
    assert th.realisable_distance_permutations(1e4 * sites + 7.0) == base
    assert th.realisable_distance_permutations(1e-4 * sites - 3.0) == base


# ------------------------------------------------------------------------- Monte Carlo


def test_monte_carlo_reaches_exact_count_for_k4_n2():
    sites = _rng(0).standard_normal((4, 2))
    exact = th.count_distance_permutations(sites)
    assert exact == 18
    assert th.monte_carlo_distance_permutations(sites, 100_000, seed=0) == exact
    # sites with cells of inradius ~0.003 (in RMS-radius units): sampling misses some
    thin = _rng(3).standard_normal((4, 2))
    assert th.count_distance_permutations(thin) == 18
    assert th.monte_carlo_distance_permutations(thin, 20_000, seed=0) < 18


def test_monte_carlo_never_exceeds_exact_and_is_deterministic():
    sites = _rng(4).standard_normal((6, 3))
    exact = th.count_distance_permutations(sites)
    few = th.monte_carlo_distance_permutations(sites, 2_000, seed=1)
    assert few < exact
    assert few == th.monte_carlo_distance_permutations(sites, 2_000, seed=1)
    assert th.monte_carlo_distance_permutations(sites, 100_000, seed=1) <= exact  # two chunks


def test_monte_carlo_is_invariant_to_the_sites_scale():
    """Distance permutations (Prop. 3.1) do not change when every site is scaled by 10^4: the query
    spread follows the sites' radius, so the same seed sees the same 18 orders of k = 4 sites in R^2."""
    sites = _rng(0).standard_normal((4, 2))
    assert th.monte_carlo_distance_permutations(1e4 * sites, 100_000, seed=0) == 18


# ---------------------------------------------------------------- token permutations


@pytest.mark.parametrize("k", [3, 4, 5])
def test_token_counts_full_when_n_at_least_k_minus_1(k):
    rng = _rng(20 + k)
    for n in (k - 1, k, k + 2):
        E = rng.standard_normal((k, n))
        assert th.augmented_rank(E) == k
        assert th.count_token_permutations(E) == math.factorial(k)


def test_token_counts_fewer_when_n_small():
    rng = _rng(30)
    counts = []
    for n in (1, 2, 3):
        E = rng.standard_normal((5, n))
        assert th.augmented_rank(E) == n + 1 < 5
        counts.append(th.count_token_permutations(E))
    assert counts[0] == 2  # a line: one order and its reverse
    assert counts[1] == 2 * math.comb(5, 2)  # a rotating direction swaps each pair twice
    assert counts[2] < math.factorial(5)


@pytest.mark.parametrize("k", [3, 4, 6])
def test_token_orders_in_the_plane(k):
    E = _rng(40 + k).standard_normal((k, 2))
    assert th.count_token_permutations(E) == 2 * math.comb(k, 2)


def test_affine_counterexample():
    for n in (4, 6):
        E = th.affine_counterexample(n)
        assert E.shape == (4, n) and n >= E.shape[0]
        assert np.linalg.matrix_rank(E) == 3 and th.augmented_rank(E) == 3
        realisable = th.realisable_token_permutations(E)
        # row 2 is the midpoint of rows 0 and 1: its logit always lies between theirs.
        assert len(realisable) == 8 < math.factorial(4)
        assert all(min(o.index(0), o.index(1)) < o.index(2) < max(o.index(0), o.index(1)) for o in realisable)
        h = th.null_vector_h(E)
        assert np.linalg.norm(h) == pytest.approx(1.0)
        assert np.max(np.abs(h @ np.hstack([E, np.ones((4, 1))]))) < 1e-10
        bad = th.unrealisable_permutation(E)
        assert sorted(bad) == [0, 1, 2, 3]
        assert bad not in realisable
        assert _token_margin(E, bad) <= 1e-9


def test_unrealisable_permutation_for_random_low_rank():
    E = _rng(50).standard_normal((5, 2))
    h = th.null_vector_h(E)
    assert np.max(np.abs(h @ np.hstack([E, np.ones((5, 1))]))) < 1e-10
    assert abs(h.sum()) < 1e-10
    bad = th.unrealisable_permutation(E)
    neg, pos = [i for i in bad if h[i] < 0], [i for i in bad if h[i] > 0]
    assert max(bad.index(i) for i in neg) < min(bad.index(i) for i in pos)
    assert bad not in th.realisable_token_permutations(E)
    assert _token_margin(E, bad) <= 1e-9


def test_all_orders_iff_augmented_rank_full():
    rng = _rng(60)
    cases = [rng.standard_normal((k, n)) for k in (3, 4, 5) for n in range(1, k + 1)]
    for k in (3, 4, 5):  # affinely dependent rows although n >= k
        E = rng.standard_normal((k, k + 1))
        lam = rng.uniform(0.2, 0.8)
        E[-1] = lam * E[0] + (1 - lam) * E[1]
        cases.append(E)
    full = [th.augmented_rank(E) == E.shape[0] for E in cases]
    assert any(full) and not all(full)
    for E, is_full in zip(cases, full):
        assert (th.count_token_permutations(E) == math.factorial(E.shape[0])) == is_full


def test_augmented_rank_weaker_than_full_rank_E():
    E = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])  # rank(E) = 2 < 3 rows
    assert np.linalg.matrix_rank(E) == 2
    assert th.augmented_rank(E) == 3
    assert th.count_token_permutations(E) == 6
    with pytest.raises(ValueError, match="rank"):
        th.null_vector_h(E)


# ------------------------------------------------------------------ docid token rank


def test_docid_token_rank_svd_and_gram_paths():
    rng = _rng(70)
    M = rng.standard_normal((300, 20)).astype(np.float32)
    small = th.docid_token_rank(M, [5, 9, 9, 40, 41, 42, 100, 7, 8, 1, 2, 3, 250, 299, 0])
    assert small == {**small, "n_docid_tokens": 14, "n": 20, "rank_e_prime": 14, "full_rank": True, "method": "svd"}
    big = th.docid_token_rank(M, np.arange(100))
    assert (big["n_docid_tokens"], big["rank_e_prime"], big["full_rank"], big["method"]) == (100, 21, False, "gram")
    # exactly n + 1 = 21 ids is still the SVD path (at most n + 1 ids): rank(E') = 21 = |V_docids|
    edge = th.docid_token_rank(M, np.arange(21))
    assert (edge["rank_e_prime"], edge["full_rank"], edge["method"]) == (21, True, "svd")


def test_docid_token_rank_detects_affine_dependency_in_gram_path():
    rng = _rng(71)
    base = rng.standard_normal((4, 10))
    w = rng.dirichlet(np.ones(4), size=50)  # affine combinations of 4 points
    M = np.vstack([w @ base, rng.standard_normal((5, 10))])
    r = th.docid_token_rank(M, np.arange(50))
    assert (r["method"], r["rank_e_prime"]) == ("gram", 4)
    assert r["rank_e_prime"] == np.linalg.matrix_rank(np.hstack([M[:50], np.ones((50, 1))]))


def test_docid_token_rank_bad_ids():
    with pytest.raises(ValueError, match="2-D"):
        th.docid_token_rank(np.zeros(10), [0])
    E = np.eye(2)
    for ids in ([True, False], [[0, 1]], [0.0, 1.0]):  # a mask, a matrix, floats: refused, not read as rows
        with pytest.raises(TypeError, match="token_ids must be a 1-D sequence of integers"):
            th.docid_token_rank(E, ids)
    with pytest.raises(ValueError, match="token ids must be >= 0, got -1"):
        th.docid_token_rank(E, [0, -1])
    assert type(th.docid_token_rank(E, [0, 1])["tol"]) is float


# -------------------------------------------------------------- fitting distributions


def test_solve_phi_exact_when_full_rank():
    rng = _rng(80)
    for n in (3, 6):
        E = rng.standard_normal((4, n))
        p = rng.dirichlet(np.ones(4))
        phi, err = th.solve_phi_for_distribution(E, p)
        assert phi.shape == (n,)
        assert err < 1e-10
        assert np.max(np.abs(softmax(E @ phi) - p)) == pytest.approx(err, abs=1e-15)


def test_solve_phi_bottleneck_on_counterexample():
    E = th.affine_counterexample()
    p = np.array([0.05, 0.05, 0.85, 0.05])
    phi, err = th.solve_phi_for_distribution(E, p)
    # the midpoint token has q2 = sqrt(q0 q1) <= max(q0, q1), so max|q - p| >= 0.4
    assert err >= 0.4
    # the KL-closest model ties tokens 0, 1, 2 and keeps q3 = p3
    assert np.allclose(softmax(E @ phi), [0.95 / 3] * 3 + [0.05], atol=1e-6)

    def ce(x):
        z = E @ x
        return logsumexp(z) - p @ z

    rng = _rng(81)
    for _ in range(4):
        res = minimize(ce, rng.normal(scale=3.0, size=4), method="BFGS")
        assert ce(phi) <= res.fun + 1e-9
        assert err <= np.max(np.abs(softmax(E @ res.x) - p)) + 1e-5


def test_solve_phi_rejects_bad_distributions():
    E = np.eye(3)
    with pytest.raises(ValueError, match="strictly positive"):
        th.solve_phi_for_distribution(E, [0.5, 0.5, 0.0])
    with pytest.raises(ValueError, match="sum to 1"):
        th.solve_phi_for_distribution(E, [0.5, 0.5, 0.5])
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        th.solve_phi_for_distribution(E, [0.5, 0.5])
    with pytest.raises(ValueError, match="finite"):
        th.solve_phi_for_distribution(E, [np.nan, 0.5, 0.5])


def test_sequence_distribution_fit_full_rank():
    rng = _rng(90)
    E = rng.standard_normal((4, 3))
    assert th.augmented_rank(E) == 4
    target = rng.dirichlet(np.ones(64)).reshape(4, 4, 4)
    fit = th.sequence_distribution_fit(E, target, L=3)
    assert fit["n_prefixes"] == 1 + 4 + 16
    assert fit["model"].shape == (4, 4, 4)
    assert fit["model"].sum() == pytest.approx(1.0)
    assert fit["max_abs_error"] < 1e-9


def test_sequence_distribution_fit_bottleneck():
    first = np.array([0.05, 0.05, 0.85, 0.05])
    target = first[:, None] * np.full((4, 4), 1 / 16) * 4
    fit = th.sequence_distribution_fit(th.affine_counterexample(), target / target.sum(), L=2)
    assert fit["n_prefixes"] == 5
    # first-token mass on token 2 is at most 1/3 instead of 0.85, spread over 4 sequences
    assert fit["max_abs_error"] > (0.85 - 1 / 3) / 4 - 1e-9


def test_sequence_distribution_fit_bad_input():
    E = _rng(91).standard_normal((3, 2))
    with pytest.raises(ValueError, match=r"shape \(3, 3\)"):
        th.sequence_distribution_fit(E, np.full(9, 1 / 9), L=2)
    with pytest.raises(ValueError, match="L must be an integer >= 1"):
        th.sequence_distribution_fit(E, np.full(3, 1 / 3), L=0)


# ------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "n, k, exc, msg",
    [
        (0, 3, ValueError, "n must be an integer >= 1, got 0"),
        (-2, 3, ValueError, "n must be an integer >= 1"),
        (2, 0, ValueError, "k must be an integer >= 1, got 0"),
        (1.5, 3, TypeError, "n must be an integer"),
        (2, 3.0, TypeError, "k must be an integer"),
        (True, 3, TypeError, "type bool"),
        (2, "4", TypeError, "k must be an integer"),
    ],
)
def test_skala_count_bad_arguments(n, k, exc, msg):
    with pytest.raises(exc, match=msg):
        th.skala_count(n, k)


def test_skala_count_accepts_numpy_ints():
    assert th.skala_count(np.int64(2), np.int32(4)) == 18


def test_scalar_helpers_bad_arguments():
    with pytest.raises(ValueError, match="k must be an integer >= 2, got 1"):
        th.paper_dimension_bound(1)
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        th.exact_min_dimension(0)
    with pytest.raises(ValueError, match="n must be an integer >= 4, got 3"):
        th.affine_counterexample(3)


@pytest.mark.parametrize(
    "func",
    [
        th.count_distance_permutations,
        th.count_token_permutations,
        th.realisable_distance_permutations,
        th.realisable_token_permutations,
    ],
)
def test_exact_counters_bad_arrays(func):
    with pytest.raises(ValueError, match="2-D"):
        func(np.zeros(4))
    with pytest.raises(ValueError, match="2-D"):
        func(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="finite"):
        func(np.array([[0.0, np.nan], [1.0, 2.0]]))
    with pytest.raises(ValueError, match="finite"):
        func(np.array([[0.0, np.inf], [1.0, 2.0]]))
    with pytest.raises(ValueError, match=r"exact counts are limited to k <= 7 because"):
        func(np.zeros((8, 3)))
    with pytest.raises(TypeError, match="real numbers"):
        func(np.ones((3, 2), dtype=bool))
    with pytest.raises(ValueError, match="at least 1 x 1"):
        func(np.zeros((0, 2)))


def test_other_array_functions_bad_input():
    with pytest.raises(ValueError, match="finite"):
        th.augmented_rank(np.array([[np.inf]]))
    with pytest.raises(ValueError, match="2-D"):
        th.null_vector_h(np.ones(3))
    with pytest.raises(ValueError, match="n_queries must be an integer >= 1, got 0"):
        th.monte_carlo_distance_permutations(np.zeros((3, 2)), 0, seed=0)
    with pytest.raises(ValueError, match="2-D"):
        th.monte_carlo_distance_permutations(np.zeros(3), 10, seed=0)


@pytest.mark.parametrize("k", [2, 3, 4, 5, 6])
def test_observed_inner_product_formula_matches_exact_counts(k):
    rng = np.random.default_rng(100 + k)
    for n in range(1, (4 if k == 6 else k + 1) + 1):
        exact = th.count_token_permutations(rng.standard_normal((k, n)))
        assert exact == th.observed_inner_product_count(n, k), (k, n)
    assert th.observed_inner_product_count(1, k) == 2
    assert th.observed_inner_product_count(2, k) == (2 * math.comb(k, 2) if k > 2 else 2)


def test_the_theory_notebooks_say_in_words_whether_the_papers_findings_hold():
    from arrank.theory import tables

    m = {
        "exact_equals_closed_form": 1.0,
        "max_exact_over_closed_form": 1.0,
        "max_monte_carlo_over_exact": 0.9,
        "exact_min_dimension_k100": 99,
        "paper_bound_k100": 39.49,
        "inner_product_all_orderings_at_n_k_minus_1": True,
        "inner_product_fewer_below_k_minus_1": True,
    }
    assert [r.holds for r in tables.capacity_findings(m, 100)] == [True, True, True, True]
    assert [r.holds for r in tables.capacity_findings({**m, "exact_equals_closed_form": 0.9}, 100)][0] is False
    r = {
        "rank_rule_holds": True,
        "counterexample_rank_e_prime": 3,
        "counterexample_order_realisable": False,
        "counterexample_orderings": 8,
        "full_rank_max_distribution_error": 1e-12,
        "counterexample_adversarial_error": 0.3,
        "sequence_max_error": 1e-13,
        "de_log10_fraction_of_rankings": -80.0,
        "tiny_wordnet_rank_e_prime": 129,
        "tiny_wordnet_v_docids": 1892,
        "tiny_wordnet_n": 128,
        "tiny_numeric_v_docids": 113,
        "tiny_numeric_rank_e_prime": 113,
    }
    rows = tables.rank_condition_findings(r)
    assert [x.holds for x in rows] == [True] * 5 and "|V_docids| = 1,892, rank(E') = 129 (n = 128)" in rows[-1].numbers
    assert tables.rank_condition_findings({**r, "counterexample_order_realisable": True})[1].holds is False
    # each finding fails on the numbers that contradict it (and only its own row changes)
    for i, key, bad in [
        (1, "max_monte_carlo_over_exact", 1.2),  # sampling found more orders than exist
        (2, "paper_bound_k100", 120.0),  # the exact dimension below the paper's lower bound
        (3, "inner_product_fewer_below_k_minus_1", False),
    ]:
        assert [x.holds for x in tables.capacity_findings({**m, key: bad}, 100)] == [j != i for j in range(4)], key
    for i, key, bad in [
        (2, "counterexample_adversarial_error", 1e-9),  # the counterexample reached its target: no bottleneck
        (3, "sequence_max_error", 1e-3),
        (4, "tiny_wordnet_rank_e_prime", 1892),  # rank(E') = |V_docids|: the remark does not hold
    ]:
        assert [x.holds for x in tables.rank_condition_findings({**r, key: bad})] == [j != i for j in range(5)], key


def test_theory_tables_on_the_smallest_grid():
    """Generic Gaussian E (|V| x n): rank(E') = min(|V|, n + 1), all |V|! orderings iff rank(E') = |V|
    (Props. 3.2, 3.3); |V| = 3 in R^1 has 2 orderings (sorted by e_i phi, or reversed). Distance
    permutations of k generic sites in R^n: k = 2 -> 2, k = 3 in R^1 -> C(3, 2) + 1 = 4, in R^2 -> 3! (Prop. 3.1)."""
    from arrank.theory import tables

    got = tables.token_permutation_table(3, seed=0)
    assert [tuple(row) for row in got.itertuples(index=False)] == [
        (2, 1, 2, 2, 2, True, True),
        (2, 2, 2, 2, 2, True, True),
        (3, 1, 2, 2, 6, False, False),
        (3, 2, 3, 6, 6, True, True),
        (3, 3, 3, 6, 6, True, True),
    ]
    counts = tables.exact_distance_counts(3, site_sets=1, seed=0)
    assert counts[["k", "n", "exact", "closed_form"]].values.tolist() == [[2, 1, 2, 2], [3, 1, 4, 4], [3, 2, 6, 6]]
