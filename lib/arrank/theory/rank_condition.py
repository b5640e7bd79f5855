"""Section 3.2 of the paper (arXiv 2601.05588): the rank(E') condition of autoregressive rankers.

Proposition 3.2 (Arbitrary Distributions over Tokens), Corollary 3.1 (Arbitrary Distributions
over Sequences) and Proposition 3.3 (Arbitrary Permutations over Tokens): exact counts of the
orderings of logits E phi, rank(E') with E' = [E 1], the null vector h of Proposition 3.2, the
affine counterexample, and fits of target distributions through softmax(E phi).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp, softmax

from arrank.theory.orderings import MAX_EXACT_K, _check_distribution, _check_int, _check_matrix, _realisable_orders


def realisable_token_permutations(E: np.ndarray) -> list[tuple[int, ...]]:
    """Orders (top first) of the logits E @ phi realised strictly by some phi in R^n (|V| <= 7):
    the sorted tuples pi with (E phi)_pi1 > ... > (E phi)_pik (:func:`count_token_permutations`)."""
    E = _check_matrix("E", E, MAX_EXACT_K)
    # "token a has a strictly larger logit than token b": (e_b - e_a) . phi < 0, [a, b] -> e_b - e_a
    diff = E[None, :, :] - E[:, None, :]
    return _realisable_orders(diff, np.zeros(diff.shape[:2]), (-1.0, 1.0), lambda phi: -(phi @ E.T))  # negated logits


def count_token_permutations(E: np.ndarray) -> int:
    """Exact number of strict orderings of the logits E @ phi over phi in R^n (E is |V| x n).

    Proposition 3.3 (Arbitrary Permutations over Tokens): the count is |V|! iff
    rank([E 1]) == |V| (:func:`augmented_rank`). The system (e_pi_i - e_pi_i+1) . phi > 0 is
    homogeneous, so phi is boxed to [-1, 1]^n and each order decided by the margin LP of
    ``orderings`` (t* > LP_MARGIN_TOL). With documents as the rows of E this also counts the
    orderings of an inner-product dual encoder <q, d>.
    """
    return len(realisable_token_permutations(E))


def _augment(E: np.ndarray) -> np.ndarray:
    """E' = [E 1]: E with a column of ones appended (section 3.2)."""
    return np.hstack([E, np.ones((E.shape[0], 1))])


def augmented_rank(E: np.ndarray) -> int:
    """rank(E') with E' = [E 1] (section 3.2; the condition of Props. 3.2, 3.3 and Cor. 3.1), by
    ``numpy.linalg.matrix_rank`` (threshold s_max * max(rows, n+1) * eps)."""
    return int(np.linalg.matrix_rank(_augment(_check_matrix("E", E))))


def _rank_augmented(rows: np.ndarray, chunk: int = 4096) -> tuple[int, float, str]:
    """(rank([rows 1]), the threshold used on its singular values, the method). At most n + 1 rows:
    by SVD, numpy's default threshold s_max * max(shape) * eps ("svd"). Taller ``rows``: from the
    eigenvalues of the (n+1) x (n+1) Gram matrix, accumulated in float64 by blocks of rows (no
    float64 copy of the rows); its eigenvalues carry absolute error ~ (n+1) * eps * lambda_max,
    hence the default threshold sqrt(max(shape) * eps) * s_max ("gram")."""
    cols = rows.shape[1] + 1
    if rows.shape[0] <= cols:
        e_prime = _augment(rows.astype(np.float64))
        sing, method = np.linalg.svd(e_prime, compute_uv=False), "svd"
        tol = float(sing.max()) * max(e_prime.shape) * np.finfo(float).eps
    else:
        gram = np.zeros((cols, cols))
        for start in range(0, rows.shape[0], chunk):
            block = _augment(np.asarray(rows[start : start + chunk], dtype=np.float64))
            gram += block.T @ block
        sing, method = np.sqrt(np.clip(np.linalg.eigvalsh(gram), 0.0, None)), "gram"
        tol = float(sing.max()) * math.sqrt(max(rows.shape[0], cols) * np.finfo(float).eps)
    return int(np.sum(sing > tol)), float(tol), method


def docid_token_ids(tokenizer, docids: Iterable[str], with_eos: bool = True) -> list[int]:
    """The sorted set of token ids that the given docIDs use (V_docids of section 3.2).

    Each docID is a token sequence that ends with EOS (the workbook's convention,
    ``training.encoding``), so EOS is included unless ``with_eos=False``.
    """
    docids = list(docids)
    ids = {t for seq in (tokenizer(docids, add_special_tokens=False)["input_ids"] if docids else []) for t in seq}
    if with_eos:
        ids.add(tokenizer.eos_token_id)
    return sorted(ids)


def docid_token_rank(embedding_matrix: np.ndarray, token_ids: Sequence[int]) -> dict[str, Any]:
    """rank(E'_docids) for the rows ``token_ids`` of a |V| x n embedding matrix (section 3.2).

    Returns {"n_docid_tokens": |V_docids| (distinct ids), "n": n, "rank_e_prime": rank(E'),
    "full_rank": rank(E') == |V_docids| (the condition of Props. 3.2, 3.3, Cor. 3.1),
    "method": "svd" (at most n + 1 ids) | "gram" (more: ``_rank_augmented``, no float64
    copy), "tol": the threshold used on singular values}. bf16 tensors must be converted by the
    caller (e.g. ``tensor.float().numpy()``). Ids repeat at no cost (distinct ones count); a negative
    id is refused (numpy would read it from the end), and so are ids that are not integers (bools
    would select rows as a mask); one past the vocabulary is numpy's IndexError.
    """
    given = np.asarray(token_ids)
    if given.ndim != 1 or (given.size and given.dtype.kind not in "iu"):  # bools would be a mask
        raise TypeError(f"token_ids must be a 1-D sequence of integers, got {given.dtype} of shape {given.shape}")
    ids = np.unique(given)
    if ids.size and ids[0] < 0:
        raise ValueError(f"token ids must be >= 0, got {ids[0]}")
    rows = _check_matrix("embedding_matrix", np.asarray(embedding_matrix)[ids], convert=False)
    rank, thr, method = _rank_augmented(rows)
    return {
        "n_docid_tokens": len(ids),
        "n": rows.shape[1],
        "rank_e_prime": rank,
        "full_rank": rank == len(ids),
        "method": method,
        "tol": thr,
    }


def null_vector_h(E: np.ndarray) -> np.ndarray:
    """A unit h != 0 with h^T E' = 0, E' = [E 1] (Appendix A, proof of Prop. 3.2, "=>"): the last
    left singular vector of E', its largest entry positive; sum(h) = 0, so h has entries of both
    signs. Exists iff rank(E') < |V|, else a ValueError."""
    E = _check_matrix("E", E)
    rank = augmented_rank(E)
    if rank == E.shape[0]:
        raise ValueError(
            f"rank(E') = {rank} equals |V| = {E.shape[0]}: no nonzero h with "
            f"h^T E' = 0 exists (Prop. 3.2 condition holds)"
        )
    h = np.linalg.svd(_augment(E), full_matrices=True)[0][:, -1]
    return h if h[np.argmax(np.abs(h))] > 0 else -h


def unrealisable_permutation(E: np.ndarray) -> tuple[int, ...]:
    """An order of the tokens that no phi realises when rank(E') < |V| (Appendix A, Prop. 3.3):
    with h = :func:`null_vector_h` (E), the indices with h_i < 0, then h_i == 0 (|h_i| <= 1e-12
    max |h|), then h_i > 0, each by index (z_i > z_j for all i in N, j in P contradicts h^T E' phi' = 0).
    """
    h = null_vector_h(E)
    sign = np.where(np.abs(h) <= 1e-12 * np.max(np.abs(h)), 0, np.sign(h))
    return tuple(sorted(range(len(h)), key=lambda i: (sign[i], i)))


def affine_counterexample(n: int = 4) -> np.ndarray:
    """A 4 x n matrix (n >= 4 = |V|) with rank(E') = 3 < |V| although n >= |V|.

    Rows: e_1, e_2, (e_1 + e_2) / 2, e_3. Row 2's logit is always the mean of rows 0 and 1, so
    it is never above or below both: Props. 3.2/3.3 are about affine independence.
    """
    n = _check_int("n", n, 4)
    E = np.zeros((4, n))
    E[0, 0] = E[1, 1] = E[3, 2] = 1.0
    E[2, :2] = 0.5
    return E


def _cross_entropy(phi: np.ndarray, E: np.ndarray, p: np.ndarray) -> tuple[float, np.ndarray]:
    """-sum p log softmax(E phi) and its gradient E^T (softmax(E phi) - p)."""
    z = E @ phi
    return float(logsumexp(z) - p @ z), E.T @ (softmax(z) - p)


def solve_phi_for_distribution(E: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, float]:
    """phi in R^n with softmax(E phi) close to p (strictly positive, summing to 1); returns (phi,
    max_i |softmax(E phi)_i - p_i|). rank(E') == |V| (Prop. 3.2, "<="): E' phi' = log p solved by
    least squares, the last coordinate dropped (softmax is shift invariant). rank(E') < |V|
    (Prop. 3.2, "=>", the softmax bottleneck): p may be unreachable; the cross-entropy
    -sum p log softmax(E phi) is minimised by L-BFGS-B from the least-squares solution.
    """
    E = _check_matrix("E", E)
    p = _check_distribution(p, (E.shape[0],))
    e_prime = _augment(E)
    phi = np.linalg.lstsq(e_prime, np.log(p), rcond=None)[0][:-1]
    if np.linalg.matrix_rank(e_prime) < E.shape[0]:  # the bottleneck: the cross-entropy from there
        options = {"maxiter": 10000, "ftol": 1e-15, "gtol": 1e-12}
        phi = minimize(_cross_entropy, phi, args=(E, p), jac=True, method="L-BFGS-B", options=options).x
    return phi, float(np.max(np.abs(softmax(E @ phi) - p)))


def sequence_distribution_fit(E: np.ndarray, target: np.ndarray, L: int) -> dict[str, Any]:
    """Corollary 3.1 (Arbitrary Distributions over Sequences) with an idealised ARR.

    ``target`` is a strictly positive distribution over all |V|^L sequences (shape (|V|,)*L).
    For every prefix c of length 0..L-1, phi(c) is solved (:func:`solve_phi_for_distribution`)
    for the conditional target(c, .) / target(c); the model is the product of its conditionals.
    Returns {"model": array like target, "max_abs_error", "n_prefixes" (= sum_j |V|^j),
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
            model[prefix] = model[prefix] * softmax(E @ phi).reshape((V,) + (1,) * (L - length - 1))
            n_prefixes, worst = n_prefixes + 1, max(worst, err)
    return {
        "model": model,
        "max_abs_error": float(np.max(np.abs(model - target))),
        "n_prefixes": n_prefixes,
        "max_conditional_error": worst,
    }
