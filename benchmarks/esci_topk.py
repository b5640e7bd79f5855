"""Timing of the ESCI rank selection (section 5.1) and of the docID dictionary on synthetic data.

    python benchmarks/esci_topk.py [--queries 1000] [--titles 200000] [--dim 256] [--depth 10000]
                                   [--device cpu|cuda|auto] [--dict-samples 20000]

Random unit vectors stand in for the embeddings; the real dataset has ~97k English queries and
~1.2M us titles, so the printed per-pair throughput gives the full-scale time. With a GPU, the
torch path is checked against numpy on the first queries.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from arrank.data import docids, esci


def unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    X = rng.normal(size=(n, d)).astype(np.float32)
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--titles", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--depth", type=int, default=10_000)
    ap.add_argument("--step", type=int, default=100)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--query-block", type=int, default=256)
    ap.add_argument("--dict-samples", type=int, default=20_000)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    Q, T = unit(rng, a.queries, a.dim), unit(rng, a.titles, a.dim)
    t = time.perf_counter()
    idx, _, pos = esci.ranked_titles(Q, T, a.step, a.depth, device=a.device, query_block=a.query_block)
    dt = time.perf_counter() - t
    pairs = a.queries * a.titles
    print(
        f"rank selection [{a.device}]: {a.queries} x {a.titles} x {a.dim}, {len(pos)} positions: "
        f"{dt:.2f}s = {pairs / dt / 1e9:.2f} G pairs/s; 97k x 1.2M would take ~{97e3 * 1.2e6 / pairs * dt / 60:.1f} min"
    )
    if a.device != "cpu":
        ref, _, _ = esci.ranked_titles(Q[:64], T, a.step, a.depth)
        print("torch == numpy on 64 queries:", bool(np.array_equal(ref, idx[:64])))
    t = time.perf_counter()
    ids, _ = docids.sparse_docids(T[: a.dict_samples], seed=0)
    dt = time.perf_counter() - t
    print(
        f"dictionary + OMP on {a.dict_samples} titles: {dt:.1f}s; "
        f"{docids.collision_summary(ids)['n_distinct']} distinct docIDs"
    )


if __name__ == "__main__":
    main()
