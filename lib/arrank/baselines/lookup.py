"""The lookup-table view of the WordNet ranking task for the DE and CE baselines (paper section 5.3).

Section 5.3 maps every noun synset to one row of an embedding table ("82,155 x n"; WordNet 3.0 has
82,115 noun synsets, the table built here: the paper's figure looks like a transposition typo).
The training data are the positive pairs ``(q_i, d_i, r_i)``: a query synset, one of its relevant
hypernyms and that hypernym's rank r (1 = the direct hypernym). A capacity experiment: a lookup
table cannot embed a synset it never saw, so the baselines train on the pairs of *all* queries
and are evaluated on the evaluation queries' pairs plus each query's sampled negative. Everything
is int64 index tensors, so a training step is a handful of gathers.
"""

from __future__ import annotations

import math
import numbers
import time
from typing import Any, Callable, Iterator, Mapping, NamedTuple, Sequence

import numpy as np
import pandas as pd
import torch


class Pairs(NamedTuple):
    """Positive pairs (q_i, d_i, r_i) of section 5.3 as aligned int64 tensors of table rows."""

    query: torch.Tensor
    doc: torch.Tensor
    rank: torch.Tensor


def row_index(names: Sequence[str]) -> dict[str, int]:
    """Row of each synset in a table over ``names`` (e.g. ``wordnet.noun_synset_names()``, the
    82,115 noun synsets, sorted: each name once)."""
    return {name: i for i, name in enumerate(names)}


def _rows_of(names: Sequence[str], rows: Mapping[str, int], what: str) -> np.ndarray:
    try:
        return np.fromiter((rows[x] for x in names), dtype=np.int64, count=len(names))
    except KeyError as err:
        raise ValueError(f"{what} {err.args[0]!r} has no row in the embedding table") from None


def positive_pairs(df: pd.DataFrame, rows: Mapping[str, int]) -> Pairs:
    """The pairs (q, d_r, r) of every query of the dataset ``df`` (columns ``query`` and
    ``relevant``, rank 1 first, at least one: ``build_wordnet_dataset`` keeps no other; both splits:
    see the module docstring), as table rows."""
    n_rel = np.fromiter((len(r) for r in df["relevant"]), dtype=np.int64, count=len(df))
    queries = _rows_of(list(df["query"]), rows, "query synset")
    docs = _rows_of([d for rel in df["relevant"] for d in rel], rows, "relevant synset")
    ranks = np.arange(int(n_rel.sum())) - np.repeat(np.cumsum(n_rel) - n_rel, n_rel) + 1
    return Pairs(*map(torch.from_numpy, (np.repeat(queries, n_rel), docs, ranks.astype(np.int64))))


def rank_weights(rank: torch.Tensor, alpha: float, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """lambda(r) = 1 / r^alpha (section 4.1's fractional weight, reused by section 5.3) for a finite
    alpha >= 0; alpha = 0 gives 1 for every pair (the standard, unweighted loss). The one check of
    alpha for a direct call (notebook 07's parameters refuse NaN and infinity too)."""
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not math.isfinite(alpha) or alpha < 0:
        raise ValueError(
            f"alpha={alpha!r} is not allowed: lambda(r) = 1/r**alpha needs a finite "
            "number alpha >= 0 (alpha = 0 gives the plain, unweighted loss)"
        )
    if (rank < 1).any():
        raise ValueError(f"ranks must be >= 1, got {int(rank.min())}")
    return rank.to(torch.float64).pow(-float(alpha)).to(dtype)


def batch_indices(n_pairs: int, batch_size: int, steps: int, generator: torch.Generator) -> Iterator[torch.Tensor]:
    """``steps`` batches of pair indices: the pairs are shuffled once per epoch and cut into
    consecutive batches (a batch that would cross an epoch boundary is taken from the next
    epoch's order, so no batch holds a pair twice). An error for a batch larger than the number of
    pairs (``batch_size`` and ``steps`` >= 1: notebook 07's parameters)."""
    if batch_size > n_pairs:
        raise ValueError(
            f"batch_size={batch_size} is larger than the number of training pairs "
            f"({n_pairs}); use a batch of at most {n_pairs} pairs"
        )
    order, at = torch.randperm(n_pairs, generator=generator), 0
    for _ in range(steps):
        if at + batch_size > n_pairs:
            order, at = torch.randperm(n_pairs, generator=generator), 0
        yield order[at : at + batch_size]
        at += batch_size


def row_norm_stats(table: torch.Tensor, rows: torch.Tensor) -> dict[str, float]:
    """The l2 norms of the table's ``rows`` (each distinct row once; e.g. every row of the
    training pairs): ``row_norm_mean``, ``row_norm_min``, ``row_norm_max``. A diagnostic of
    Appendix B's optimisers: the DE's projection keeps them at 1, an optimiser that erodes the
    CE's table drives them to 0."""
    norms = table.detach().index_select(0, torch.unique(rows)).double().norm(dim=1)
    return {f"row_norm_{stat}": float(getattr(norms, stat)()) for stat in ("mean", "min", "max")}


LOG_EVERY = 100  # the training logs hold the mean loss of every LOG_EVERY steps


def train_steps(
    step: Callable[[int, torch.Tensor], float],
    pairs: Pairs,
    table: torch.Tensor,
    batch_size: int,
    steps: int,
    generator: torch.Generator,
    desc: str,
    progress: bool,
    diverged: str,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Call ``step(i, batch) -> loss`` for each of the ``steps`` batches of ``batch_indices`` (i from
    1, ``generator`` drawing the order) under a progress bar: (the mean loss of every ``LOG_EVERY``
    steps; facts: steps, train_s, steps_per_s and ``row_norm_stats`` of the training pairs' rows of
    ``table`` as trained); a FloatingPointError starting with ``diverged`` when the last loss is
    not finite."""
    from tqdm.auto import tqdm

    log, total, count = [], 0.0, 0
    start = time.perf_counter()
    batches = batch_indices(len(pairs.query), batch_size, steps, generator)
    bar = tqdm(batches, total=steps, desc=desc, unit="step", mininterval=2.0, disable=not progress)
    for i, idx in enumerate(bar, start=1):
        total, count = total + step(i, idx), count + 1
        if i % LOG_EVERY == 0 or i == steps:
            log.append({"step": i, "loss": total / count})
            total, count = 0.0, 0
    seconds = time.perf_counter() - start
    if not math.isfinite(log[-1]["loss"]):
        raise FloatingPointError(diverged.format(loss=log[-1]["loss"]))
    facts = {"steps": steps, "train_s": seconds, "steps_per_s": steps / seconds}
    return pd.DataFrame(log), {**facts, **row_norm_stats(table, torch.cat([pairs.query, pairs.doc]))}
