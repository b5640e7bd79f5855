"""Evaluate a model on held-out WordNet queries as in section 5.1: score every relevant docID and
the negative by mean token log-probability after the prompt (``arrank.scoring``), then CVR, nDCG
and R@k (``arrank.metrics``), plus the random-scores floor each table should be read against.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from arrank import metrics, scoring


def eval_queries(df: pd.DataFrame, limit: int | None = None) -> pd.DataFrame:
    """The held-out queries (``split == "eval"``), the first ``limit`` of them when given."""
    held_out = df[df["split"] == "eval"]
    if held_out.empty:
        raise ValueError("the dataset has no held-out (split == 'eval') queries")
    return held_out if limit is None else held_out.iloc[:limit]


def _records(queries: pd.DataFrame, scores: list[np.ndarray]) -> list[dict[str, Any]]:
    out = []
    for (_, row), s in zip(queries.iterrows(), scores):
        candidates = list(row["relevant"]) + [row["negative"]]
        out.append({"query": row["query"], "relevant": list(row["relevant"]), "negative": row["negative"],
                    "scores": dict(zip(candidates, map(float, s)))})
    return out


def evaluate_wordnet(model, tokenizer, df: pd.DataFrame, limit: int | None = None,
                     ks: tuple[int, ...] = metrics.WORDNET_KS, include_eos: bool = False,
                     method: str = "prefix_shared") -> tuple[dict[str, Any], pd.DataFrame]:
    """(metrics dict with Table 1's names, per-query frame) for the model on the held-out queries."""
    queries = eval_queries(df, limit)
    items = [(p, list(r) + [n]) for p, r, n in zip(queries["prompt"], queries["relevant"], queries["negative"])]
    scores = scoring.score_queries(model, tokenizer, items, include_eos=include_eos, method=method)
    records = _records(queries, scores)
    return metrics.evaluate_queries(records, ks), metrics.per_query_metrics(records, ks)


def random_floor(df: pd.DataFrame, seed: int = 0, limit: int | None = None,
                 ks: tuple[int, ...] = metrics.WORDNET_KS) -> dict[str, Any]:
    """The metrics of random scores on the same held-out queries (notes/cpu-feasibility.md:
    R@k has a high floor when n_q is small, and nDCG is squeezed near 1)."""
    queries = eval_queries(df, limit)
    rng = np.random.default_rng(seed)
    scores = [rng.standard_normal(len(r) + 1) for r in queries["relevant"]]
    return metrics.evaluate_queries(_records(queries, scores), ks)


def metrics_table(rows: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Rows = runs, columns = CVR, nDCG, R@k (Table 1's layout), values rounded to 4 digits."""
    table = pd.DataFrame.from_dict(dict(rows), orient="index")
    keep = [c for c in table.columns if c in ("cvr", "ndcg") or c.startswith("recall@")]
    table = table[keep].astype(float).round(4)
    table.index.name = "run"
    return table
