"""Exact counting of realisable strict orders by linear programming, shared by section 3: the
distance permutations of a dual encoder (Proposition 3.1) and the orderings of token logits
(Proposition 3.3) both ask which orders of k items a linear inequality system realises strictly,
answered by depth-first enumeration with one LP (HiGHS, ``scipy.optimize.linprog``) per prefix.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy.optimize import linprog

#: Largest number of sites / tokens for the exact LP counters (k! candidate orders).
MAX_EXACT_K = 7

#: An order counts as realisable iff the largest margin t of its normalised inequality system
#: exceeds this value (the margin LP: comment above ``_max_margin``); for distance permutations t
#: is a radius in units of the sites' RMS radius, so thinner cells count as empty.
LP_MARGIN_TOL = 1e-7

Bounds = tuple[float | None, float | None]  # of every coordinate of x: (lower, upper), None for none

_HIGHS_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


def _check_int(name: str, value: Any, minimum: int) -> int:
    """Return ``value`` as an int, or raise TypeError/ValueError naming it and the allowed range."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r} of type {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)


def _check_matrix(name: str, value: Any, max_rows: int | None = None, convert: bool = True) -> np.ndarray:
    """Return ``value`` as a finite 2-D array of real numbers (float64 if ``convert``); with ``max_rows``
    (the exact LP counters: :data:`MAX_EXACT_K`) at most that many rows. Raise naming the fault."""
    arr = np.asarray(value)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold real numbers (int or float), got dtype {arr.dtype}")
    if arr.ndim != 2 or arr.size == 0:
        raise ValueError(f"{name} must be a 2-D array (rows x n), at least 1 x 1, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must contain only finite values (no NaN or inf)")
    if max_rows is not None and arr.shape[0] > max_rows:
        raise ValueError(
            f"{name} has {arr.shape[0]} rows; exact counts are limited to k <= {max_rows} because the "
            f"number of candidate orders grows as k! and each surviving prefix needs one LP "
            f"(use skala_count / monte_carlo_distance_permutations for larger k)"
        )
    return arr.astype(np.float64, copy=False) if convert else arr


def _check_distribution(p: Any, shape: tuple[int, ...], name: str = "p") -> np.ndarray:
    """Return ``p`` as a float64 array of the given shape, strictly positive and summing to 1."""
    arr = np.asarray(p, dtype=np.float64)
    if arr.shape != shape or not np.all(arr > 0) or abs(arr.sum() - 1.0) > 1e-9:  # NaN fails "> 0", inf the sum
        raise ValueError(
            f"{name} must have shape {shape}, be finite and strictly positive, and sum to 1 (within 1e-9); "
            f"got shape {arr.shape} with sum {arr.sum()!r}"
        )
    return arr


# --------------------------------------------------- exact LP enumeration of strict orders
#
# Both exact counters reduce to: items 0..k-1 with a "strictly before" relation between item a
# and item b that is a linear inequality  G[a, b] . x < h[a, b]  in an unknown x, with
# unit-norm G[a, b] (or zero when a and b can never be separated).  An order pi is realisable
# iff the k-1 consecutive inequalities hold strictly for some x.  We maximise a margin t:
#   max t  s.t.  G[a, b] . x + t <= h[a, b]  for the pairs,  t <= 1,  x within its bounds,
# and call the system feasible iff t* > LP_MARGIN_TOL.  With unit rows, t is a distance (for
# distance permutations: the radius of a ball inside the cell).


def _max_margin(
    G: np.ndarray, h: np.ndarray, pairs: Sequence[tuple[int, int]], x_bounds: Bounds
) -> tuple[float, np.ndarray, np.ndarray]:
    """Solve the margin LP for the given (before, after) pairs; return (t*, x*, duals >= 0)."""
    d = G.shape[2]
    rows = np.array([G[a, b] for a, b in pairs])
    A_ub = np.hstack([rows, np.ones((len(pairs), 1))])
    b_ub = np.array([h[a, b] for a, b in pairs])
    c = np.r_[np.zeros(d), -1.0]
    bounds = [x_bounds] * d + [(None, 1.0)]
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=bounds, method="highs", options=_HIGHS_OPTIONS)
    if res.status != 0:  # pragma: no cover - the LP is always feasible and bounded
        raise RuntimeError(f"margin LP failed: {res.message}")
    return float(res.x[-1]), res.x[:-1], -res.ineqlin.marginals


def _witness_orders(
    G: np.ndarray, h: np.ndarray, points: np.ndarray, key: Callable[[np.ndarray], np.ndarray], box: float | None
) -> list[tuple[int, ...]]:
    """The full orders realised by the points (rows) with every consecutive margin > the tol.

    Such a point shows that the LP optimum of that order and of each of its prefixes exceeds the
    tol, so they need no LP of their own (exactness is unaffected). With a box (token systems,
    h = 0) each point is first scaled into [-box, box]^n, which changes no order.
    """
    if box is not None:
        points = points / np.maximum(1.0, np.max(np.abs(points), axis=1) / box)[:, None]
    orders = np.argsort(key(points), axis=1, kind="stable")
    a, b = orders[:, :-1], orders[:, 1:]
    margins = h[a, b] - np.einsum("mjd,md->mj", G[a, b], points)
    good = np.all(margins > LP_MARGIN_TOL, axis=1)
    return [tuple(int(i) for i in row) for row in orders[good]]


def _probe_points(G: np.ndarray, h: np.ndarray, x: np.ndarray, t: float, rest: Sequence[int]) -> np.ndarray:
    """x moved across up to three bisectors of pairs of remaining items at once (by 0.1 t
    beyond each, t = the LP margin): each crossing tends to swap a pair, so the probes reach
    further continuations of the prefix for the cost of one LP. Deterministic; they only ever
    certify the order each realises itself, margins checked (``_witness_orders``).
    """
    if not (pairs := list(itertools.combinations(sorted(rest), 2))):
        return x[None, :]
    normals = np.array([G[a, b] for a, b in pairs])
    offsets = np.array([h[a, b] for a, b in pairs]) - normals @ x  # signed distance to cross
    steps = (offsets + np.sign(offsets) * 0.1 * min(t, 1.0))[:, None] * normals
    combos = itertools.chain(*(itertools.combinations(range(len(pairs)), s) for s in range(1, min(3, len(pairs)) + 1)))
    return np.array([x, *(x + steps[list(combo)].sum(axis=0) for combo in combos)])


def _realisable_orders(
    diff: np.ndarray, rhs: np.ndarray, x_bounds: Bounds, key: Callable[[np.ndarray], np.ndarray]
) -> list[tuple[int, ...]]:
    """All strictly realisable orders of the system ``diff[a, b] . x < rhs[a, b]`` ("a before b";
    ``key``: rows of x -> values whose ascending order is the order x realises), depth-first by prefix
    (pi_1 < ... < pi_j < every remaining item) with pruning of infeasible prefixes. Two exact shortcuts
    save most LPs: probe points around each LP solution certify the orders they realise
    (:func:`_probe_points`), and the dual certificate of a rejected prefix rejects later prefixes
    implying its pairs (its core).
    """
    norms = np.linalg.norm(diff, axis=-1)  # each pair's inequality scaled to a unit normal G (zero rows stay zero)
    safe = np.where(norms > 0, norms, 1.0)
    G, h = diff / safe[..., None], rhs / safe
    k = G.shape[0]
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
        # the pairs (a before b) that "prefix first, in order, then the rest" implies: a confirmed core
        # inside them rejects the prefix; an unconfirmable core is dropped
        pos = np.full(k, len(prefix))
        pos[list(prefix)] = np.arange(len(prefix))
        implied = pos[:, None] < pos[None, :]
        for core in [c for c in cores if all(implied[a, b] for a, b in c)]:
            if confirm(core):
                return False
            cores.remove(core)
        pairs = [*zip(prefix[:-1], prefix[1:]), *((prefix[-1], r) for r in rest)]
        t, x, duals = _max_margin(G, h, pairs, x_bounds)
        if t <= LP_MARGIN_TOL:
            # the pairs that carry the dual certificate of the rejection (positive duals): by LP duality
            # every system whose implied pairs contain them is rejected as well (confirmed by an LP of
            # their own before their first reuse)
            if core := [pair for pair, y in zip(pairs, duals) if y > 1e-9 * max(1.0, float(duals.max()))]:
                cores.append(core)
            return False
        for order in _witness_orders(G, h, _probe_points(G, h, x, t, rest), key, x_bounds[1]):
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
