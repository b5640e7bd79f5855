"""Exact and numerical companions to section 3 ("The Capacity for Ranking") of the paper.

The paper is ``paper/autoregressive_ranking.tex``.  Its theorem environments use separate
counters, so the compiled numbering of section 3 is

* Proposition 3.1 -- DE Insufficiency for Complete Ranking, Eq. (dual-encoder-dimension-bound)
* Proposition 3.2 -- Arbitrary Distributions over Tokens  (``prop:arbitrary-tok-level-prob``)
* Corollary 3.1   -- Arbitrary Distributions over Sequences (``cor:arbitrary-seq-level-prob``)
* Proposition 3.3 -- Arbitrary Permutations over Tokens  (``prop:arbitrary-tok-level-ranking``)

(with one shared counter the last two would read Corollary 3.3 and Proposition 3.4); the
docstrings below name each result as well as numbering it.  The proofs are in Appendix A.

Contents
--------
* Dual encoders (Prop. 3.1): :func:`skala_count`, :func:`stirling1_unsigned_row`,
  :func:`paper_dimension_bound`, :func:`exact_min_dimension`, :func:`de_fraction_realisable`,
  :func:`log10_de_fraction_realisable`, exact LP counts :func:`count_distance_permutations` /
  :func:`realisable_distance_permutations`, and :func:`monte_carlo_distance_permutations`.
* Autoregressive rankers (Props. 3.2, 3.3, Cor. 3.1): :func:`count_token_permutations` /
  :func:`realisable_token_permutations`, :func:`augmented_rank`, :func:`docid_token_rank`,
  :func:`null_vector_h`, :func:`unrealisable_permutation`, :func:`affine_counterexample`,
  :func:`solve_phi_for_distribution`, :func:`sequence_distribution_fit`.

Exact permutation counts decide strict feasibility of linear inequality systems by linear
programming (HiGHS via ``scipy.optimize.linprog``); see :func:`count_distance_permutations`
for the margin tolerance.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy.optimize import linprog, minimize
from scipy.special import logsumexp, softmax

__all__ = [
    "MAX_EXACT_K",
    "LP_MARGIN_TOL",
    "stirling1_unsigned_row",
    "skala_count",
    "paper_dimension_bound",
    "exact_min_dimension",
    "observed_inner_product_count",
    "de_fraction_realisable",
    "log10_de_fraction_realisable",
    "count_distance_permutations",
    "realisable_distance_permutations",
    "monte_carlo_distance_permutations",
    "count_token_permutations",
    "realisable_token_permutations",
    "augmented_rank",
    "docid_token_rank",
    "null_vector_h",
    "unrealisable_permutation",
    "affine_counterexample",
    "solve_phi_for_distribution",
    "sequence_distribution_fit",
]

#: Largest number of sites / tokens for the exact LP counters.  The candidate orders grow as
#: k! (5040 at k = 7, 40320 at k = 8) and each surviving prefix costs one LP.
MAX_EXACT_K = 7

#: An order counts as realisable iff the largest margin t of its normalised inequality system
#: exceeds this value (see :func:`count_distance_permutations`).
LP_MARGIN_TOL = 1e-7

_HIGHS_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


# ----------------------------------------------------------------------------- validation


def _check_int(name: str, value: Any, minimum: int) -> int:
    """Return ``value`` as an int, or raise TypeError/ValueError naming it and the allowed range."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r} "
                        f"of type {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)


def _check_matrix(name: str, value: Any, min_rows: int = 1, convert: bool = True) -> np.ndarray:
    """Return ``value`` as a finite 2-D array (float64 if ``convert``); raise naming the fault."""
    try:
        arr = np.asarray(value)
    except Exception as exc:  # pragma: no cover - exotic inputs (e.g. bf16 tensors)
        raise TypeError(f"{name} must be convertible to a numpy array: {exc}") from exc
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer)
                                 or np.issubdtype(arr.dtype, np.floating)):
        raise TypeError(f"{name} must hold real numbers (int or float), got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (rows x n), got shape {arr.shape}")
    if arr.shape[0] < min_rows or arr.shape[1] < 1:
        raise ValueError(f"{name} must have at least {min_rows} row(s) and 1 column, "
                         f"got shape {arr.shape}")
    if convert:
        arr = arr.astype(np.float64, copy=False)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values (no NaN or inf)")
    return arr


def _check_exact_k(name: str, k: int) -> None:
    """Refuse exact LP enumeration for more than :data:`MAX_EXACT_K` rows."""
    if k > MAX_EXACT_K:
        raise ValueError(
            f"{name} has {k} rows; exact counts are limited to k <= {MAX_EXACT_K} because the "
            f"number of candidate orders grows as k! and each surviving prefix needs one LP "
            f"(use skala_count / monte_carlo_distance_permutations for larger k)")


def _check_distribution(p: Any, shape: tuple[int, ...], name: str = "p") -> np.ndarray:
    """Return ``p`` as a float64 array of the given shape, strictly positive and summing to 1."""
    arr = np.asarray(p, dtype=np.float64)
    if arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values (no NaN or inf)")
    if np.any(arr <= 0):
        raise ValueError(f"{name} must be strictly positive; smallest entry is {arr.min()!r}")
    if abs(arr.sum() - 1.0) > 1e-9:
        raise ValueError(f"{name} must sum to 1 (within 1e-9), sums to {arr.sum()!r}")
    return arr


# ------------------------------------------------------------ Skala counts (Prop. 3.1)


@functools.lru_cache(maxsize=256)
def _stirling_top(k: int, m: int) -> tuple[int, ...]:
    """(|s(k,k)|, |s(k,k-1)|, ..., |s(k,k-m)|), unsigned Stirling numbers of the first kind.

    |s(k, k-i)| is the i-th elementary symmetric polynomial of 0, 1, ..., k-1 (the rising
    factorial x(x+1)...(x+k-1) = sum_j |s(k,j)| x^j), so the product prod_a (1 + a*y)
    truncated at degree m gives them in O(k*m) exact integer operations.
    """
    coeffs = [1] + [0] * m
    for a in range(1, k):
        for i in range(min(m, a), 0, -1):
            coeffs[i] += a * coeffs[i - 1]
    return tuple(coeffs)


def stirling1_unsigned_row(k: int) -> list[int]:
    """Row k of the unsigned Stirling numbers of the first kind: ``row[j] = |s(k, j)|``.

    ``len(row) == k + 1``; ``row[0] == 0`` for k >= 1 (and 1 for k == 0); ``sum(row) == k!``.
    Used by :func:`skala_count` (Skala 2009, cited in the proof of Proposition 3.1).
    """
    k = _check_int("k", k, 0)
    top = _stirling_top(k, k)
    return list(reversed(top))


def skala_count(n: int, k: int) -> int:
    """Maximum number N_{n,2}(k) of Euclidean distance permutations of k sites in R^n.

    Skala (2009), used in the proof of Proposition 3.1 (DE Insufficiency):
    N_{n,2}(k) = sum_{i=0}^{min(n, k-1)} |s(k, k-i)|, attained by sites in general position.
    n = 1 gives C(k,2) + 1; n >= k - 1 gives k!.  Exact Python int.
    """
    n = _check_int("n", n, 1)
    k = _check_int("k", k, 1)
    m = min(n, k - 1)
    return sum(_stirling_top(k, m))


def paper_dimension_bound(k: int) -> float:
    """ln(k!) / (2 ln k): Proposition 3.1, Eq. (dual-encoder-dimension-bound).

    A dual encoder of dimension n < this bound cannot solve a complete ranking task on k
    documents (it uses Skala's coarser bound N_{n,2}(k) <= k^{2n}).  Requires k >= 2.
    """
    k = _check_int("k", k, 2)
    return math.lgamma(k + 1) / (2.0 * math.log(k))


@functools.lru_cache(maxsize=256)
def _stirling_bottom(k: int, m: int) -> tuple[int, ...]:
    """(|s(k,0)|, |s(k,1)|, ..., |s(k,m)|): the rising factorial prod_a (x + a) mod x^(m+1)."""
    coeffs = [1] + [0] * m
    for a in range(k):
        for j in range(m, 0, -1):
            coeffs[j] = a * coeffs[j] + coeffs[j - 1]
        coeffs[0] *= a
    return tuple(coeffs)


def exact_min_dimension(k: int) -> int:
    """Smallest n >= 1 with skala_count(n, k) == k!: the exact DE dimension for k documents.

    Derivation: the Stirling row sums to k!, so k! - skala_count(n, k) is the sum of the
    omitted terms |s(k, j)|, 1 <= j <= k-1-n (|s(k, 0)| = 0), all >= 0.  At n = k - 1 nothing
    is omitted; we lower n while the terms omitted at n - 1 vanish.  The first of them,
    |s(k, 1)| = (k-1)!, is positive, so the answer is max(1, k - 1); it is computed here from
    the Stirling numbers (O(k) work) rather than hard-coded.  Proposition 3.1's
    :func:`paper_dimension_bound` is a lower bound on this value.
    """
    k = _check_int("k", k, 1)
    n = max(1, k - 1)
    while n > 1 and sum(_stirling_bottom(k, k - n)[1:]) == 0:
        n -= 1
    return n


def observed_inner_product_count(n: int, k: int) -> int:
    """Number of orderings of <q, d_i> over q in R^n for k generic vectors d_i, as *observed*:
    with m = min(n, k-1), 2 * sum of |s(k, k-i)| over 0 <= i <= m-1 with i = m-1 (mod 2).

    Not a result of the paper and not proved here: it matches every exact LP count of
    :func:`count_token_permutations` computed for this workbook (k = 2..7, all n, several seeds),
    is 2 * C(k, 2) at n = 2 (k generic lines through the origin of the plane), and k! at
    n >= k - 1 (Proposition 3.3). Notebook 01 shows it beside the exact counts.
    """
    n, k = _check_int("n", n, 1), _check_int("k", k, 1)
    if k == 1:
        return 1
    m = min(n, k - 1)
    row = stirling1_unsigned_row(k)
    return 2 * sum(row[k - i] for i in range(m) if i % 2 == (m - 1) % 2)


def de_fraction_realisable(n: int, k: int) -> float:
    """skala_count(n, k) / k!: the largest fraction of the k! rankings an n-dim DE can realise.

    Computed with exact integers (Proposition 3.1 context); may underflow to 0.0 for very large
    k -- use :func:`log10_de_fraction_realisable` then.
    """
    return skala_count(n, k) / math.factorial(k)


def log10_de_fraction_realisable(n: int, k: int) -> float:
    """log10(skala_count(n, k) / k!), exact-int numerator and lgamma denominator.

    Friendly for k = |V|^L (e.g. 64 docIDs of 3 tokens over |V| = 4): never underflows.
    """
    count = skala_count(n, k)
    return math.log10(count) - math.lgamma(k + 1) / math.log(10.0)


# --------------------------------------------------- exact LP enumeration of strict orders
#
# Both exact counters reduce to: items 0..k-1 with a "strictly before" relation between item a
# and item b that is a linear inequality  G[a, b] . x < h[a, b]  in an unknown x, with
# unit-norm G[a, b] (or zero when a and b can never be separated).  An order pi is realisable
# iff the k-1 consecutive inequalities hold strictly for some x.  We maximise a margin t:
#   max t  s.t.  G[a, b] . x + t <= h[a, b]  for the pairs,  t <= 1,  x within its bounds,
# and call the system feasible iff t* > LP_MARGIN_TOL.  With unit rows, t is a distance (for
# distance permutations: the radius of a ball inside the cell).


def _max_margin(G: np.ndarray, h: np.ndarray, pairs: Sequence[tuple[int, int]],
                x_bounds: tuple[float | None, float | None]
                ) -> tuple[float, np.ndarray, np.ndarray]:
    """Solve the margin LP for the given (before, after) pairs; return (t*, x*, duals >= 0)."""
    d = G.shape[2]
    rows = np.array([G[a, b] for a, b in pairs])
    A_ub = np.hstack([rows, np.ones((len(pairs), 1))])
    b_ub = np.array([h[a, b] for a, b in pairs])
    c = np.zeros(d + 1)
    c[-1] = -1.0
    bounds = [x_bounds] * d + [(None, 1.0)]
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=bounds, method="highs",
                  options=_HIGHS_OPTIONS)
    if res.status != 0:  # pragma: no cover - the LP is always feasible and bounded
        raise RuntimeError(f"margin LP failed: {res.message}")
    return float(res.x[-1]), res.x[:-1], -res.ineqlin.marginals


def _prefix_pairs(prefix: tuple[int, ...], rest: Sequence[int]) -> list[tuple[int, int]]:
    """Pairs for "prefix are the first j items, in this order, all before every item of rest"."""
    pairs = list(zip(prefix[:-1], prefix[1:]))
    pairs += [(prefix[-1], r) for r in rest]
    return pairs


def _witness_orders(G: np.ndarray, h: np.ndarray, points: np.ndarray,
                    key: Callable[[np.ndarray], np.ndarray],
                    box: float | None) -> list[tuple[int, ...]]:
    """The full orders realised by the points (rows) with every consecutive margin > the tol.

    A point that satisfies an order with margin > LP_MARGIN_TOL shows that the LP optimum of
    that order (and of each of its prefixes: margins of non-consecutive pairs are at least as
    large, by the triangle inequality) exceeds the tol, so those need no LP of their own and
    exactness is unaffected.  With a box (homogeneous token systems, h = 0) each point is first
    scaled into [-box, box]^n, which changes no order.
    """
    if box is not None:
        points = points / np.maximum(1.0, np.max(np.abs(points), axis=1) / box)[:, None]
    orders = np.argsort(key(points), axis=1, kind="stable")
    a, b = orders[:, :-1], orders[:, 1:]
    margins = h[a, b] - np.einsum("mjd,md->mj", G[a, b], points)
    good = np.all(margins > LP_MARGIN_TOL, axis=1)
    return [tuple(int(i) for i in row) for row in orders[good]]


def _probe_points(G: np.ndarray, h: np.ndarray, x: np.ndarray, t: float,
                  rest: Sequence[int], depth: int = 3) -> np.ndarray:
    """x moved across up to ``depth`` bisectors of pairs of remaining items at once.

    The LP solution x realises one continuation of the prefix; crossing the hyperplane
    G[a, b] . x = h[a, b] (by 0.1 t beyond it, t = the LP margin) tends to swap a and b, and
    combined crossings reach further continuations, so the probes certify many of them for the
    cost of one LP.  They are deterministic and only ever certify feasibility: each probe counts
    only for the order it realises itself, with margins checked (see _witness_orders).
    """
    pairs = list(itertools.combinations(sorted(rest), 2))
    if not pairs:
        return x[None, :]
    normals = np.array([G[a, b] for a, b in pairs])
    offsets = np.array([h[a, b] for a, b in pairs]) - normals @ x  # signed distance to cross
    steps = (offsets + np.sign(offsets) * 0.1 * min(t, 1.0))[:, None] * normals
    points = [x]
    for size in range(1, min(depth, len(pairs)) + 1):
        for combo in itertools.combinations(range(len(pairs)), size):
            points.append(x + steps[list(combo)].sum(axis=0))
    return np.array(points)


def _closure_mask(prefix: tuple[int, ...], k: int) -> np.ndarray:
    """k x k mask of the pairs (a before b) implied by "prefix first, in order, then the rest"."""
    pos = np.full(k, len(prefix))
    pos[list(prefix)] = np.arange(len(prefix))
    return pos[:, None] < pos[None, :]


def _dual_core(pairs: list[tuple[int, int]], duals: np.ndarray) -> list[tuple[int, int]]:
    """The pairs that carry the dual certificate of a rejected system (positive duals).

    By LP duality the margin LP restricted to these pairs has the same optimum, so every
    system whose implied pairs contain them is rejected as well (more constraints only lower
    the margin).  Cores are confirmed by an LP of their own before their first reuse.
    """
    return [pair for pair, y in zip(pairs, duals) if y > 1e-9 * max(1.0, float(duals.max()))]


def _rejected_by_core(cores: list[list[tuple[int, int]]], implied: np.ndarray,
                      confirm: Callable[[list[tuple[int, int]]], bool]) -> bool:
    """True if a confirmed core lies inside ``implied``; unconfirmable cores are dropped."""
    for core in list(cores):
        if all(implied[a, b] for a, b in core):
            if confirm(core):
                return True
            cores.remove(core)
    return False


def _realisable_orders(G: np.ndarray, h: np.ndarray,
                       x_bounds: tuple[float | None, float | None],
                       key: Callable[[np.ndarray], np.ndarray]) -> list[tuple[int, ...]]:
    """All strictly realisable orders, depth-first by prefix with pruning of infeasible prefixes.

    A prefix pi_1..pi_j survives iff pi_1 < ... < pi_j < every remaining item is feasible;
    a prefix of length k - 1 is a full order.  Two exact shortcuts save most LPs:
    deterministic probe points around each LP solution certify the prefixes of the orders
    they realise (:func:`_probe_points`), and the dual certificate of each rejected prefix
    rejects later prefixes that imply the same pairs (:func:`_dual_core`).
    """
    k = G.shape[0]
    box = x_bounds[1]
    certified: set[tuple[int, ...]] = set()
    cores: list[list[tuple[int, int]]] = []
    confirmed: set[tuple[tuple[int, int], ...]] = set()
    found: list[tuple[int, ...]] = []

    def confirm(core: list[tuple[int, int]]) -> bool:
        if tuple(core) not in confirmed:
            if _max_margin(G, h, core, x_bounds)[0] > LP_MARGIN_TOL:
                return False
            confirmed.add(tuple(core))
        return True

    def feasible(prefix: tuple[int, ...], rest: list[int]) -> bool:
        if prefix in certified:
            return True
        if _rejected_by_core(cores, _closure_mask(prefix, k), confirm):
            return False
        pairs = _prefix_pairs(prefix, rest)
        t, x, duals = _max_margin(G, h, pairs, x_bounds)
        if t <= LP_MARGIN_TOL:
            core = _dual_core(pairs, duals)
            if core:
                cores.append(core)
            return False
        for order in _witness_orders(G, h, _probe_points(G, h, x, t, rest), key, box):
            certified.update(order[:j] for j in range(1, k + 1))
        return True

    def descend(prefix: tuple[int, ...], remaining: list[int]) -> None:
        if len(remaining) <= 1:
            found.append(prefix + tuple(remaining))
            return
        for item in remaining:
            rest = [r for r in remaining if r != item]
            if feasible(prefix + (item,), rest):
                descend(prefix + (item,), rest)

    descend((), list(range(k)))
    return sorted(found)


def _unit_rows(diff: np.ndarray, rhs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scale each pair inequality diff . x < rhs to a unit normal (zero rows left at zero)."""
    norms = np.linalg.norm(diff, axis=-1)
    safe = np.where(norms > 0, norms, 1.0)
    return diff / safe[..., None], rhs / safe


def _normalised_sites(sites: np.ndarray) -> np.ndarray:
    """Centre the sites and scale them to unit RMS radius (no-op scale if all coincide)."""
    centred = sites - sites.mean(axis=0)
    radius = math.sqrt(float(np.mean(np.sum(centred ** 2, axis=1))))
    return centred / radius if radius > 0 else centred


def _distance_system(sites: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pair system of "site a strictly nearer to q than site b".

    ||q - a||^2 < ||q - b||^2  <=>  2 (b - a) . q < ||b||^2 - ||a||^2.
    """
    sq = np.sum(sites ** 2, axis=1)
    diff = 2.0 * (sites[None, :, :] - sites[:, None, :])  # [a, b] -> 2 (s_b - s_a)
    rhs = sq[None, :] - sq[:, None]                        # [a, b] -> |s_b|^2 - |s_a|^2
    return _unit_rows(diff, rhs)


def realisable_distance_permutations(sites: np.ndarray) -> list[tuple[int, ...]]:
    """The distance permutations of ``sites`` (k x n, k <= 7) realised by some query q in R^n.

    Sorted list of tuples pi with ||q - s_pi1|| < ... < ||q - s_pik|| for some q (strict).
    See :func:`count_distance_permutations` for the method and tolerance.
    """
    sites = _check_matrix("sites", sites)
    _check_exact_k("sites", sites.shape[0])
    unit = _normalised_sites(sites)
    G, h = _distance_system(unit)

    def key(q: np.ndarray) -> np.ndarray:  # rows of q -> squared distances to the sites
        return np.sum((q[:, None, :] - unit[None, :, :]) ** 2, axis=2)
    return _realisable_orders(G, h, (None, None), key)


def count_distance_permutations(sites: np.ndarray) -> int:
    """Exact number of distance permutations realised by k sites in R^n (k <= 7).

    Counts the orders pi for which some query q has ||q - s_pi1|| < ... < ||q - s_pik||,
    the quantity bounded by Skala's N_{n,2}(k) (:func:`skala_count`) in Proposition 3.1.
    Each order is a system of k - 1 strict linear inequalities in q; strict feasibility is
    decided by an LP (HiGHS) that maximises a margin t <= 1 after the sites are centred and
    scaled to unit RMS radius and every inequality is scaled to a unit normal, so t is the
    radius of a ball inside the order's cell.  An order counts iff t* > LP_MARGIN_TOL (1e-7):
    cells thinner than 1e-7 site radii are treated as empty.  Orders are enumerated depth-first
    by prefix and a prefix is pruned as soon as it is infeasible.  Never samples.
    """
    return len(realisable_distance_permutations(sites))


def monte_carlo_distance_permutations(sites: np.ndarray, n_queries: int,
                                      seed: int | None = 0, chunk_size: int = 65536) -> int:
    """Distinct distance permutations seen from ``n_queries`` random query points (a lower bound).

    Queries are Gaussian around the sites' centroid, with standard deviation R * s where R is
    the largest distance of a site from the centroid (1 if all coincide) and s is drawn per query
    uniformly from {0.5, 2, 8}: the small scale finds the little cells among the sites, the large
    ones the unbounded cells.  Only orders with strictly distinct distances are counted, so the
    result never exceeds :func:`count_distance_permutations` (illustrates Proposition 3.1's
    "approaches but never exceeds" behaviour).  Works for any k.
    """
    sites = _check_matrix("sites", sites)
    n_queries = _check_int("n_queries", n_queries, 1)
    chunk_size = _check_int("chunk_size", chunk_size, 1)
    rng = np.random.default_rng(seed)
    centre = sites.mean(axis=0)
    radius = float(np.max(np.linalg.norm(sites - centre, axis=1))) or 1.0
    seen: set[tuple[int, ...]] = set()
    for start in range(0, n_queries, chunk_size):
        m = min(chunk_size, n_queries - start)
        scale = radius * rng.choice(np.array([0.5, 2.0, 8.0]), size=(m, 1))
        queries = centre + scale * rng.standard_normal((m, sites.shape[1]))
        seen.update(_strict_orders(queries, sites))
    return len(seen)


def _strict_orders(queries: np.ndarray, sites: np.ndarray) -> set[tuple[int, ...]]:
    """Distinct distance orders of the queries whose distances are all distinct."""
    d2 = np.sum((queries[:, None, :] - sites[None, :, :]) ** 2, axis=2)
    perms = np.argsort(d2, axis=1, kind="stable")
    sorted_d2 = np.take_along_axis(d2, perms, axis=1)
    strict = np.all(np.diff(sorted_d2, axis=1) > 0, axis=1)
    unique = np.unique(perms[strict], axis=0)
    return {tuple(int(i) for i in row) for row in unique}


# ------------------------------------------ token orderings (Prop. 3.3, Arbitrary Permutations)


def _token_system(E: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pair system of "token a has a strictly larger logit than token b": (e_b - e_a) . phi < 0."""
    diff = E[None, :, :] - E[:, None, :]  # [a, b] -> e_b - e_a
    return _unit_rows(diff, np.zeros(diff.shape[:2]))


def realisable_token_permutations(E: np.ndarray) -> list[tuple[int, ...]]:
    """Orders (top first) of the logits E @ phi realised strictly by some phi in R^n (|V| <= 7).

    Sorted list of tuples pi with (E phi)_pi1 > ... > (E phi)_pik.  See
    :func:`count_token_permutations`.
    """
    E = _check_matrix("E", E)
    _check_exact_k("E", E.shape[0])
    G, h = _token_system(E)

    def key(phi: np.ndarray) -> np.ndarray:  # rows of phi -> negated logits
        return -(phi @ E.T)
    return _realisable_orders(G, h, (-1.0, 1.0), key)


def count_token_permutations(E: np.ndarray) -> int:
    """Exact number of strict orderings of the logits E @ phi over phi in R^n (E is |V| x n).

    Proposition 3.3 (Arbitrary Permutations over Tokens): the count is |V|! iff
    rank([E 1]) == |V| (:func:`augmented_rank`).  The system (e_pi_i - e_pi_i+1) . phi > 0 is
    homogeneous, so phi is boxed to [-1, 1]^n; rows are scaled to unit norm and a margin t <= 1
    is maximised by LP (HiGHS); an order counts iff t* > LP_MARGIN_TOL (1e-7).  Depth-first
    enumeration with prefix pruning (prefix = the top j tokens in order, above all the rest).
    With documents as the rows of E this also counts the orderings of an inner-product dual
    encoder <q, d>.
    """
    return len(realisable_token_permutations(E))


# ------------------------------------------------ rank(E') and Prop. 3.2's null vector h


def _augment(E: np.ndarray) -> np.ndarray:
    """E' = [E 1]: E with a column of ones appended (section 3.2)."""
    return np.hstack([E, np.ones((E.shape[0], 1))])


def augmented_rank(E: np.ndarray, tol: float | None = None) -> int:
    """rank(E') with E' = [E 1] (section 3.2; the condition of Props. 3.2, 3.3 and Cor. 3.1).

    ``tol`` is passed to ``numpy.linalg.matrix_rank`` (default: s_max * max(rows, n+1) * eps).
    """
    E = _check_matrix("E", E)
    return int(np.linalg.matrix_rank(_augment(E), tol=tol))


def _gram_rank_augmented(rows: np.ndarray, tol: float | None,
                         chunk: int = 4096) -> tuple[int, float]:
    """rank([rows 1]) for tall ``rows`` from the eigenvalues of the (n+1) x (n+1) Gram matrix.

    The Gram matrix is accumulated in float64 one block of rows at a time (no full float64
    copy).  Its eigenvalues carry absolute error ~ (n+1) * eps * lambda_max, so singular values
    below sqrt(max(shape) * eps) * s_max cannot be told from 0: that is the default threshold.
    """
    cols = rows.shape[1] + 1
    gram = np.zeros((cols, cols))
    for start in range(0, rows.shape[0], chunk):
        block = _augment(np.asarray(rows[start:start + chunk], dtype=np.float64))
        gram += block.T @ block
    sing = np.sqrt(np.clip(np.linalg.eigvalsh(gram), 0.0, None))
    if tol is None:
        tol = float(sing.max()) * math.sqrt(max(rows.shape[0], cols) * np.finfo(float).eps)
    return int(np.sum(sing > tol)), float(tol)


def _svd_rank_augmented(rows: np.ndarray, tol: float | None) -> tuple[int, float]:
    """rank([rows 1]) by SVD with numpy's default threshold s_max * max(shape) * eps."""
    e_prime = _augment(rows.astype(np.float64))
    sing = np.linalg.svd(e_prime, compute_uv=False)
    if tol is None:
        tol = float(sing.max()) * max(e_prime.shape) * np.finfo(float).eps
    return int(np.sum(sing > tol)), float(tol)


def docid_token_rank(embedding_matrix: np.ndarray, token_ids: Sequence[int],
                     tol: float | None = None) -> dict[str, Any]:
    """rank(E'_docids) for the rows ``token_ids`` of a |V| x n embedding matrix (section 3.2).

    Returns {"n_docid_tokens": |V_docids| (distinct ids), "n": n, "rank_e_prime": rank(E'),
    "full_rank": rank(E') == |V_docids| (the condition of Props. 3.2, 3.3, Cor. 3.1),
    "method": "svd" | "gram", "tol": the threshold used on singular values}.  With at most
    n + 1 ids the rank comes from the SVD of E' (numpy's default tolerance); with more ids from
    the eigenvalues of the (n+1) x (n+1) Gram matrix (see ``_gram_rank_augmented``), which
    handles a 32768 x 4096 float32 matrix without a float64 copy or a large SVD.  bf16
    tensors must be converted by the caller (e.g. ``tensor.float().numpy()``).
    """
    ids = _check_token_ids(token_ids, np.shape(embedding_matrix))
    rows = _check_matrix("embedding_matrix", np.asarray(embedding_matrix)[ids], convert=False)
    if rows.shape[0] <= rows.shape[1] + 1:
        (rank, thr), method = _svd_rank_augmented(rows, tol), "svd"
    else:
        (rank, thr), method = _gram_rank_augmented(rows, tol), "gram"
    return {"n_docid_tokens": len(ids), "n": rows.shape[1], "rank_e_prime": rank,
            "full_rank": rank == len(ids), "method": method, "tol": thr}


def _check_token_ids(token_ids: Sequence[int], shape: tuple[int, ...]) -> np.ndarray:
    """Distinct, in-range integer token ids as a sorted int array."""
    if len(shape) != 2:
        raise ValueError(f"embedding_matrix must be a 2-D array (|V| x n), got shape {shape}")
    ids = np.asarray(token_ids)
    if ids.ndim != 1 or ids.size == 0:
        raise ValueError(f"token_ids must be a non-empty 1-D sequence of ints, got shape "
                         f"{ids.shape}")
    if ids.dtype == bool or not np.issubdtype(ids.dtype, np.integer):
        raise TypeError(f"token_ids must be ints, got dtype {ids.dtype}")
    if ids.min() < 0 or ids.max() >= shape[0]:
        raise ValueError(f"token_ids must lie in [0, {shape[0] - 1}], got range "
                         f"[{ids.min()}, {ids.max()}]")
    return np.unique(ids)


def null_vector_h(E: np.ndarray) -> np.ndarray:
    """A unit h != 0 with h^T E' = 0, E' = [E 1] (Appendix A, proof of Prop. 3.2, "=>").

    Exists iff rank(E') < |V|; taken as the last left singular vector of E' (sign fixed so the
    entry of largest magnitude is positive).  Since 1 lies in the span of E', sum(h) = 0, so h
    has both positive and negative entries.  Raises ValueError when rank(E') == |V|.
    """
    E = _check_matrix("E", E)
    e_prime = _augment(E)
    rank = int(np.linalg.matrix_rank(e_prime))
    if rank == E.shape[0]:
        raise ValueError(f"rank(E') = {rank} equals |V| = {E.shape[0]}: no nonzero h with "
                         f"h^T E' = 0 exists (Prop. 3.2 condition holds)")
    u, _, _ = np.linalg.svd(e_prime, full_matrices=True)
    h = u[:, -1]
    return h if h[np.argmax(np.abs(h))] > 0 else -h


def unrealisable_permutation(E: np.ndarray) -> tuple[int, ...]:
    """An order of the tokens that no phi realises when rank(E') < |V| (Appendix A, Prop. 3.3).

    With h = :func:`null_vector_h` (E), N = {i: h_i < 0}, P = {i: h_i > 0}: the order lists N,
    then the indices with h_i == 0 (|h_i| <= 1e-12 * max |h|), then P, each by index.  The
    proof shows z_i > z_j for all i in N, j in P contradicts h^T E' phi' = 0.
    """
    h = null_vector_h(E)
    zero = np.abs(h) <= 1e-12 * np.max(np.abs(h))
    neg = [i for i in range(len(h)) if h[i] < 0 and not zero[i]]
    mid = [i for i in range(len(h)) if zero[i]]
    pos = [i for i in range(len(h)) if h[i] > 0 and not zero[i]]
    return tuple(neg + mid + pos)


def affine_counterexample(n: int = 4) -> np.ndarray:
    """A 4 x n matrix (n >= 4 = |V|) with rank(E') = 3 < |V| although n >= |V|.

    Rows: e_1, e_2, (e_1 + e_2) / 2, e_3 (standard basis of R^n).  Row 2 is an affine
    combination of rows 0 and 1, so its logit is always the mean of theirs and it can never be
    ranked strictly above both or below both: the rank condition of Props. 3.2/3.3 is about
    affine, not linear, independence of the docID embeddings.
    """
    n = _check_int("n", n, 4)
    E = np.zeros((4, n))
    E[0, 0] = E[1, 1] = E[3, 2] = 1.0
    E[2, :2] = 0.5
    return E


# ------------------------------------------- fitting distributions (Prop. 3.2 and Cor. 3.1)


def _cross_entropy(phi: np.ndarray, E: np.ndarray, p: np.ndarray) -> tuple[float, np.ndarray]:
    """-sum p log softmax(E phi) and its gradient E^T (softmax(E phi) - p)."""
    z = E @ phi
    value = float(logsumexp(z) - p @ z)
    return value, E.T @ (softmax(z) - p)


def solve_phi_for_distribution(E: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, float]:
    """phi in R^n with softmax(E phi) close to p; returns (phi, max_i |softmax(E phi)_i - p_i|).

    * rank(E') == |V| (Prop. 3.2, "<="): solve E' phi' = log p exactly by least squares and
      drop the last coordinate (softmax is shift invariant); the error is round-off.
    * rank(E') < |V| (Prop. 3.2, "=>", the softmax bottleneck): p may be unreachable; minimise
      the convex cross-entropy -sum p log softmax(E phi) (i.e. KL(p || model)) with L-BFGS-B
      and the analytic gradient, started from the least-squares solution; the error returned
      is that of the KL-closest model distribution.
    p must be strictly positive and sum to 1.
    """
    E = _check_matrix("E", E)
    p = _check_distribution(p, (E.shape[0],))
    e_prime = _augment(E)
    phi_ls = np.linalg.lstsq(e_prime, np.log(p), rcond=None)[0][:-1]
    if np.linalg.matrix_rank(e_prime) == E.shape[0]:
        phi = phi_ls
    else:
        res = minimize(_cross_entropy, phi_ls, args=(E, p), jac=True, method="L-BFGS-B",
                       options={"maxiter": 10000, "ftol": 1e-15, "gtol": 1e-12})
        phi = res.x
    return phi, float(np.max(np.abs(softmax(E @ phi) - p)))


def sequence_distribution_fit(E: np.ndarray, target: np.ndarray, L: int) -> dict[str, Any]:
    """Corollary 3.1 (Arbitrary Distributions over Sequences) with an idealised ARR.

    ``target`` is a strictly positive distribution over all |V|^L sequences (shape (|V|,)*L).
    For every prefix c of length 0..L-1 the ARR's hidden vector phi(c) is solved with
    :func:`solve_phi_for_distribution` for the conditional next-token distribution
    target(c, .) / target(c); the model's sequence distribution is the product of its
    conditionals (chain rule).  Returns {"model": array like target, "max_abs_error": max over
    sequences of |model - target|, "n_prefixes": number of prefixes solved (= sum_j |V|^j),
    "max_conditional_error": worst per-prefix error}.
    """
    E = _check_matrix("E", E)
    L = _check_int("L", L, 1)
    V = E.shape[0]
    target = _check_distribution(target, (V,) * L, name="target")
    model = np.ones((V,) * L)
    n_prefixes, worst = 0, 0.0
    for length in range(L):
        marginal = target.sum(axis=tuple(range(length + 1, L))) if length + 1 < L else target
        for prefix in itertools.product(range(V), repeat=length):
            cond = marginal[prefix] / marginal[prefix].sum()
            phi, err = solve_phi_for_distribution(E, cond)
            q = softmax(E @ phi)
            model[prefix] = model[prefix] * q.reshape((V,) + (1,) * (L - length - 1))
            n_prefixes, worst = n_prefixes + 1, max(worst, err)
    return {"model": model, "max_abs_error": float(np.max(np.abs(model - target))),
            "n_prefixes": n_prefixes, "max_conditional_error": worst}
