"""Numeric docIDs of the ESCI experiments (section 5.1): a title's sparse-code atoms by descending
|coefficient|, joined by commas ("25,36,39")."""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

import numpy as np
import pandas as pd


def format_docid(indices: Sequence[int]) -> str:
    """``[25, 36, 39]`` -> ``"25,36,39"`` (the order given is kept: it is the |coefficient| order)."""
    return ",".join(str(int(i)) for i in indices)


def random_numeric_docids(count: int, n_components: int = 100, nnz: int = 3, seed: int = 0) -> list[str]:
    """``count`` random docIDs in the ESCI format: stand-ins with the same token statistics."""
    if not 1 <= nnz <= n_components:
        raise ValueError(f"nnz={nnz} must be in [1, n_components={n_components}]")
    rng = np.random.default_rng(seed)
    return [format_docid(rng.choice(n_components, size=nnz, replace=False)) for _ in range(count)]


# --- Sparse-code docIDs (section 5.1, "ESCI Shopping Queries", footnote on OMP) -----------------


FIT_MAX_SAMPLES = 100_000  # the dictionary is fitted on at most this many rows, drawn with the seed


def learn_dictionary(X: np.ndarray, n_components: int = 100, nnz: int = 3, seed: int = 0, max_iter: int = 20):
    """Fit scikit-learn's MiniBatchDictionaryLearning (for the ~1.2M real titles) on the title
    embeddings ``X`` (section 5.1's footnote: OMP, n_components=100, transform_n_nonzero_coefs=3):
    ``transform_algorithm="omp"`` with ``nnz`` nonzeros; alpha is scikit-learn's default (the paper
    gives none); at most ``FIT_MAX_SAMPLES`` rows, drawn with ``seed``, fit."""
    from sklearn.decomposition import MiniBatchDictionaryLearning

    if not 1 <= nnz <= n_components:
        raise ValueError(f"nnz={nnz} must be in [1, n_components={n_components}]")
    X = np.asarray(X, dtype=np.float64)
    if len(X) > FIT_MAX_SAMPLES:
        X = X[np.sort(np.random.default_rng(seed).choice(len(X), FIT_MAX_SAMPLES, replace=False))]
    omp = dict(transform_algorithm="omp", transform_n_nonzero_coefs=nnz)
    return MiniBatchDictionaryLearning(n_components, **omp, random_state=seed, max_iter=max_iter, batch_size=256).fit(X)


def docid_atoms(codes: np.ndarray) -> list[list[int]]:
    """For each sparse code, its nonzero indices by descending |coefficient| (ties: smaller index
    first); shorter than ``nnz`` where OMP stopped early, empty for an all-zero code."""
    out = []
    for row in np.asarray(codes):
        nz = np.flatnonzero(row)
        out.append([int(i) for i in nz[np.lexsort((nz, -np.abs(row[nz])))]])
    return out


def sparse_docids(X: np.ndarray, n_components: int = 100, nnz: int = 3, seed: int = 0) -> tuple[list[str], np.ndarray]:
    """Section 5.1: (docIDs such as ``"25,36,39"``, sparse codes n x n_components) by dictionary learning."""
    model = learn_dictionary(X, n_components, nnz, seed)
    # the OMP codes (n x n_components) of X under the fitted dictionary, in row chunks of 50,000
    X, chunk = np.asarray(X, dtype=np.float64), 50_000
    parts = [model.transform(X[i : i + chunk]) for i in range(0, len(X), chunk)]
    codes = np.vstack(parts) if parts else np.zeros((0, model.n_components))
    return [format_docid(a) for a in docid_atoms(codes)], codes


# --- Collisions and trie statistics ----------------------------------------------------------


def docid_counts(docids: Sequence[str]) -> pd.DataFrame:
    """Per-docID count table (columns docid, count), most shared first (ties: by docID)."""
    counts = pd.Series(list(docids), dtype=object).value_counts()
    table = counts.rename_axis("docid").reset_index(name="count")
    return table.sort_values(["count", "docid"], ascending=[False, True], ignore_index=True)


def collision_summary(docids: Sequence[str]) -> dict[str, int | float]:
    """How many items share a docID: n_items, n_distinct, n_colliding_items (sharing with another),
    n_colliding_docids, max_share, colliding_fraction."""
    counts = docid_counts(docids)["count"].to_numpy()
    shared = counts[counts > 1]
    n = int(counts.sum())
    return {
        "n_items": n,
        "n_distinct": int(len(counts)),
        "n_colliding_items": int(shared.sum()),
        "n_colliding_docids": int(len(shared)),
        "max_share": int(counts.max()) if n else 0,
        "colliding_fraction": float(shared.sum() / n) if n else 0.0,
    }


def disambiguate_docids(docids: Sequence[str]) -> list[str]:
    """Make docIDs unique by appending ``,k`` (k = 0, 1, ... in input order) to every shared docID
    (one more trie level): ``["1,2,3", "4,5,6", "1,2,3"]`` -> ``["1,2,3,0", "4,5,6", "1,2,3,1"]``."""
    ids = pd.Series(list(docids), dtype=object)
    suffix = ("," + ids.groupby(ids).cumcount().astype(str)).where(ids.duplicated(keep=False), "")
    return (ids + suffix).tolist()


BRANCHING = ["depth", "prefixes", "parents", "mean_children", "max_children", "docids"]  # a row of _branching


def _branching(docids: Iterable[str]) -> list[tuple]:
    """Rows of :func:`trie_branching`, then the number of distinct docIDs (plain Python: fast
    enough per query)."""
    seqs = {tuple(d.split(",")) for d in docids if d}
    rows = []
    for d in range(1, max((len(s) for s in seqs), default=0) + 1):
        kids = {s[:d] for s in seqs if len(s) >= d}
        per_parent = Counter(k[:-1] for k in kids)
        rows.append((d, len(kids), len(per_parent), len(kids) / len(per_parent), max(per_parent.values()), len(seqs)))
    return rows


def trie_branching(docids: Iterable[str]) -> pd.DataFrame:
    """Branching of the prefix trie (section 4) over distinct docIDs read as component sequences
    ("25,36,39" -> (25, 36, 39)), one row per depth d: ``prefixes`` (nodes at depth d), ``parents``
    (nodes at depth d-1 with a child), ``mean_children`` = prefixes / parents, ``max_children``.
    Few children per node is what "trie-friendly" docIDs offer (section 5.2)."""
    return pd.DataFrame(_branching(docids), columns=BRANCHING).drop(columns="docids")


def query_trie_branching(lists: Iterable[Sequence[str]]) -> pd.DataFrame:
    """:func:`trie_branching` within each query's docID list, averaged over queries: per depth,
    ``queries`` reaching it, ``mean_prefixes``, ``mean_children`` and ``mean_prefix_ratio`` (prefixes /
    distinct docIDs: 1.0 means no two docIDs of a query share that prefix)."""
    rows = pd.DataFrame([r for docs in lists for r in _branching(docs)], columns=BRANCHING)
    return (
        rows.assign(prefix_ratio=rows["prefixes"] / rows["docids"])
        .groupby("depth", as_index=False)
        .agg(
            queries=("prefixes", "size"),
            mean_prefixes=("prefixes", "mean"),
            mean_children=("mean_children", "mean"),
            mean_prefix_ratio=("prefix_ratio", "mean"),
        )
    )
