"""Rank-aware token-level targets y(r, t) from a prefix tree over the docIDs (section 4.2).

A query's docIDs d_1, ..., d_{n_q} (rank order) are token-id sequences that each END with the EOS
id, so "cat"+EOS and "cats"+EOS are distinct leaves. DocID r scores mu(r) = 1 / r**beta; the target
at step t of the teacher-forced path gives every valid next token the summed mu of the docIDs
below it, normalised (marginalisation, Figure 2(c)); beta -> inf gives one-hot rows. Appendix F
(``combined=True``): rank r's tree holds d_r, ..., d_{n_q} only. The tree is a dict
``prefix tuple -> {next token id: indices of the docIDs below}``; a step's target is a list of
``(token id, mass)`` pairs sorted by token id (the sparse form of ``stoical``).
"""

from __future__ import annotations

import math
from typing import Sequence

import torch

DocId = tuple[int, ...]
Trie = dict[DocId, dict[int, tuple[int, ...]]]
StepTargets = list[tuple[int, float]]


def _as_docids(docids: Sequence[Sequence[int]]) -> list[DocId]:
    """Validate docIDs: a non-empty list of non-empty int sequences, all ending with one EOS id that
    occurs nowhere else (so no docID is a prefix of another), without duplicates."""
    if isinstance(docids, (str, bytes)) or len(docids) == 0:
        raise ValueError(f"docids must be a non-empty list of token-id sequences, got {docids!r}")
    out: list[DocId] = []
    seen: dict[DocId, int] = {}
    for i, d in enumerate(docids):
        seq = tuple(int(x) for x in d)
        if len(seq) == 0:
            raise ValueError(f"docids[{i}] is empty; every docID must end with the EOS id")
        if min(seq) < 0:
            raise ValueError(f"docids[{i}]={seq} holds a negative token id")
        eos = out[0][-1] if out else seq[-1]
        if seq[-1] != eos:
            raise ValueError(
                f"docids[{i}]={seq} does not end with the EOS id {eos} that docids[0] "
                "ends with; every docID must end with the same EOS id"
            )
        if eos in seq[:-1]:
            raise ValueError(f"docids[{i}]={seq} holds the EOS id {eos} before its end")
        if seq in seen:
            raise ValueError(
                f"duplicate docID {seq} at positions {seen[seq]} and {i}; the docIDs "
                "of one query must be distinct (deduplicate them first)"
            )
        seen[seq] = i
        out.append(seq)
    return out


def build_trie(docids: Sequence[Sequence[int]]) -> Trie:
    """The prefix tree of section 4.2 as ``{prefix: {next token: indices of docIDs below}}``: every
    proper prefix (the empty one included) is a key; the indices into ``docids`` increase."""
    seqs = _as_docids(docids)
    trie: Trie = {}
    for i, seq in enumerate(seqs):
        for t, tok in enumerate(seq):
            children = trie.setdefault(seq[:t], {})
            children[tok] = children.get(tok, ()) + (i,)
    return trie


def _check_beta(beta: float) -> None:
    """Refuse a ``beta`` of mu(r) = 1/r**beta (section 4.2) that is not a number >= 0 (inf allowed)."""
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) or math.isnan(beta) or beta < 0:
        raise ValueError(f"beta={beta!r} must be a number >= 0 (math.inf allowed): mu(r) = 1/r**beta")


def _walk(trie: Trie, path: DocId, lo: int, log_mu: Sequence[float] | None) -> list[StepTargets]:
    """Per step of ``path``: the normalised mass of each valid next token, counting only docIDs with
    index >= ``lo``. ``log_mu`` None means the beta = inf limit: all the mass goes to the token
    below which the best-ranked (lowest-index) docID lies."""
    rows: list[StepTargets] = []
    for t in range(len(path)):
        children = {tok: kept for tok, idx in trie[path[:t]].items() if (kept := [i for i in idx if i >= lo])}
        if log_mu is None:
            best = min(children, key=lambda tok: children[tok][0])
            rows.append([(tok, 1.0 if tok == best else 0.0) for tok in sorted(children)])
            continue
        # log-sum-exp per child, then a softmax over the children: exact and free of underflow
        # for large beta (e.g. 9**-1000 is 0 in floating point, its logarithm is not).
        logs = {tok: _logsumexp([log_mu[i] for i in idx]) for tok, idx in children.items()}
        top = max(logs.values())
        if top == -math.inf:
            raise ValueError(
                f"mu is 0 for every docID below the prefix {path[:t]}: no target "
                "distribution is defined there (for the beta=inf limit use "
                "query_sparse_targets(docids, math.inf))"
            )
        weights = {tok: math.exp(v - top) for tok, v in logs.items()}
        total = sum(weights.values())
        rows.append([(tok, weights[tok] / total) for tok in sorted(weights)])
    return rows


def _logsumexp(vals: Sequence[float]) -> float:
    """log(sum(exp(v))) of non-empty ``vals``, shifted by their max (-inf when every value is)."""
    m = max(vals)
    return m if m == -math.inf else m + math.log(sum(math.exp(v - m) for v in vals))


def _log_mu(mu: Sequence[float], n: int) -> list[float]:
    vals = [float(m) for m in mu]
    if len(vals) != n:
        raise ValueError(f"mu has {len(vals)} scores but there are {n} docids; mu[i] scores docids[i]")
    for i, m in enumerate(vals):
        if not math.isfinite(m) or m < 0:
            raise ValueError(f"mu[{i}]={m!r} must be a finite score >= 0")
    return [math.log(m) if m > 0 else -math.inf for m in vals]


def sparse_targets(
    docids: Sequence[Sequence[int]], mu: Sequence[float], path: Sequence[int], *, combined: bool = False
) -> list[StepTargets]:
    """y(r, t) of section 4.2 in sparse form: per step t of ``path`` (given ``path[:t]``), the
    ``(token id, mass)`` pairs of the valid next tokens, each the normalised summed ``mu`` of the
    docIDs below it. ``combined=True`` (Appendix F) counts only the docIDs from ``path``'s position
    in ``docids`` (rank order) on."""
    seqs = _as_docids(docids)
    log_mu = _log_mu(mu, len(seqs))
    key = tuple(int(x) for x in path)
    if key not in seqs:
        raise ValueError(
            f"path {key} is not one of the docids; the teacher-forced path must be one "
            "of the query's docIDs (ending with EOS)"
        )
    return _walk(build_trie(seqs), key, seqs.index(key) if combined else 0, log_mu)


def target_distributions(
    docids: Sequence[Sequence[int]],
    mu: Sequence[float],
    path: Sequence[int],
    vocab_size: int,
    *,
    combined: bool = False,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """Dense y(r, t) (section 4.2): :func:`sparse_targets` as a (len(path), vocab_size) tensor, 0 for
    tokens that are not valid next tokens. ``mu[i]`` scores ``docids[i]`` (each ending with EOS);
    ``path`` is the teacher-forced docID. For inspection and tests; training uses the sparse form."""
    rows = sparse_targets(docids, mu, path, combined=combined)
    out = torch.zeros(len(rows), vocab_size, dtype=dtype or torch.get_default_dtype())
    for t, row in enumerate(rows):
        for tok, mass in row:
            out[t, tok] = mass
    return out


def one_hot_targets(path: Sequence[int]) -> list[StepTargets]:
    """The one-hot y(t) of section 4 in sparse form: ``[[(path[0], 1.0)], [(path[1], 1.0)], ...]``."""
    return [[(int(tok), 1.0)] for tok in path]


def query_sparse_targets(
    docids: Sequence[Sequence[int]], beta: float, *, combined: bool = False
) -> list[list[StepTargets]]:
    """Sparse y(r, t) for every docID of one query (rank order, d_1 first), the tree built once:
    element r-1 holds the per-step targets of rank r, with mu(r) = 1/r**beta (section 4.2;
    ``combined``: Appendix F). ``beta = math.inf`` is the exact limit: all mass on the token leading
    to the best-ranked docID still counted below the prefix."""
    _check_beta(beta)
    seqs = _as_docids(docids)
    trie = build_trie(seqs)
    log_mu = None if math.isinf(beta) else [-beta * math.log(r) for r in range(1, len(seqs) + 1)]
    return [_walk(trie, seq, r0 if combined else 0, log_mu) for r0, seq in enumerate(seqs)]
