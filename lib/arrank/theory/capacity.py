"""Section 3.1 of the paper (arXiv 2601.05588): dual encoders cannot rank completely.

Proposition 3.1 (DE Insufficiency for Complete Ranking, Eq. dual-encoder-dimension-bound):
Skala's count of distance permutations (:func:`skala_count`, from unsigned Stirling numbers of
the first kind), the paper's dimension bound, the exact smallest dimension, and exact LP counts
(:func:`count_distance_permutations`) and Monte-Carlo lower bounds of the distance permutations
that given sites realise.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from arrank.theory.orderings import MAX_EXACT_K, _check_int, _check_matrix, _realisable_orders

CHUNK = 65536  # query points drawn at once by monte_carlo_distance_permutations


@functools.lru_cache(maxsize=256)
def _stirling_top(k: int, m: int) -> tuple[int, ...]:
    """(|s(k,k)|, |s(k,k-1)|, ..., |s(k,k-m)|), unsigned Stirling numbers of the first kind: |s(k, k-i)|
    is the i-th elementary symmetric polynomial of 0..k-1, so prod_a (1 + a*y) truncated at
    degree m gives them in O(k*m) exact integer operations."""
    coeffs = [1] + [0] * m
    for a in range(1, k):
        for i in range(min(m, a), 0, -1):
            coeffs[i] += a * coeffs[i - 1]
    return tuple(coeffs)


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

    k! - skala_count(n, k) is the sum of the omitted Stirling terms |s(k, j)|, 1 <= j <= k-1-n;
    n is lowered from k - 1 while they vanish. As |s(k, 1)| = (k-1)! > 0 the answer is
    max(1, k - 1), computed here rather than hard-coded. Proposition 3.1's
    :func:`paper_dimension_bound` is a lower bound on it.
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
    ``rank_condition.count_token_permutations`` computed for this workbook (k = 2..7, all n, several seeds)
    and k! at n >= k - 1 (Proposition 3.3). Notebook 01 shows it beside the exact counts.
    """
    n, k = _check_int("n", n, 1), _check_int("k", k, 1)
    if k == 1:
        return 1
    m = min(n, k - 1)
    return 2 * sum(_stirling_top(k, m - 1)[(m - 1) % 2 :: 2])  # |s(k, k-i)| for i = m-1, m-3, ... >= 0


def log10_de_fraction_realisable(n: int, k: int) -> float:
    """log10(skala_count(n, k) / k!): the largest fraction of the k! rankings an n-dim DE can realise
    (Proposition 3.1), exact-int numerator and lgamma denominator: never underflows."""
    return math.log10(skala_count(n, k)) - math.lgamma(k + 1) / math.log(10.0)


def realisable_distance_permutations(sites: np.ndarray) -> list[tuple[int, ...]]:
    """The distance permutations of ``sites`` (k x n, k <= 7) realised by some query q in R^n.

    Sorted list of tuples pi with ||q - s_pi1|| < ... < ||q - s_pik|| for some q (strict).
    See :func:`count_distance_permutations` for the method and tolerance.
    """
    sites = _check_matrix("sites", sites, MAX_EXACT_K)
    centred = sites - sites.mean(axis=0)  # centred, scaled to unit RMS radius (unless all coincide)
    radius = math.sqrt(float(np.mean(np.sum(centred**2, axis=1))))
    unit = centred / radius if radius > 0 else centred
    # "site a strictly nearer to q than site b": ||q - a||^2 < ||q - b||^2 <=> 2 (b - a) . q < ||b||^2 - ||a||^2
    sq = np.sum(unit**2, axis=1)
    diff, rhs = 2.0 * (unit[None, :, :] - unit[:, None, :]), sq[None, :] - sq[:, None]  # [a, b]
    # the key: squared distances, rows of q -> [m, k]
    return _realisable_orders(diff, rhs, (None, None), lambda q: np.sum((q[:, None] - unit) ** 2, axis=2))


def count_distance_permutations(sites: np.ndarray) -> int:
    """Exact number of distance permutations realised by k sites in R^n (k <= 7): the orders pi
    for which some query q has ||q - s_pi1|| < ... < ||q - s_pik||, the quantity bounded by
    Skala's N_{n,2}(k) (:func:`skala_count`) in Proposition 3.1. The sites are centred and scaled
    to unit RMS radius; each order is decided by the margin LP of ``orderings`` (an order counts
    iff a ball of radius > LP_MARGIN_TOL = 1e-7 fits in its cell). Never samples.
    """
    return len(realisable_distance_permutations(sites))


def monte_carlo_distance_permutations(sites: np.ndarray, n_queries: int, seed: int | None = 0) -> int:
    """Distinct distance permutations seen from ``n_queries`` random query points (a lower bound).

    Queries are Gaussian around the sites' centroid, with standard deviation R * s (R the largest
    distance of a site from the centroid, 1 if all coincide; s drawn per query from {0.5, 2, 8}).
    Only orders with strictly distinct distances are counted, so the result never exceeds
    :func:`count_distance_permutations` (Proposition 3.1). Works for any k.
    """
    sites = _check_matrix("sites", sites)
    n_queries = _check_int("n_queries", n_queries, 1)
    rng = np.random.default_rng(seed)
    centre = sites.mean(axis=0)
    radius = float(np.max(np.linalg.norm(sites - centre, axis=1))) or 1.0
    seen: set[tuple[int, ...]] = set()
    for start in range(0, n_queries, CHUNK):
        m = min(CHUNK, n_queries - start)
        scale = radius * rng.choice(np.array([0.5, 2.0, 8.0]), size=(m, 1))
        queries = centre + scale * rng.standard_normal((m, sites.shape[1]))
        d2 = np.sum((queries[:, None, :] - sites[None, :, :]) ** 2, axis=2)
        perms = np.argsort(d2, axis=1, kind="stable")
        strict = np.all(np.diff(np.take_along_axis(d2, perms, axis=1), axis=1) > 0, axis=1)  # distinct distances
        seen.update(tuple(int(i) for i in row) for row in np.unique(perms[strict], axis=0))
    return len(seen)
