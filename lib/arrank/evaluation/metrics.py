"""Evaluation metrics of section 5.1 ("Metrics") and Tables 1-2 of the paper, per query:

- **CVR** (constraint violation rate, WordNet only): a query *violates* the constraint when the
  score of *any* positive is strictly lower than that of the sampled negative
  (:func:`violates_constraint`; a tie is no violation); CVR is the fraction of violating queries.
- **nDCG** between gold gains ``log(n_q+1), ..., log(2)`` for ranks 1..n_q (and ``log(1) = 0``
  for the negative; ESCI has none) and the predicted scores (:func:`gold_gains`, :func:`ndcg`).
- **R@k** ``= |pi[:k] ∩ pi_hat[:k]| / k`` over *all* candidates, the negative included
  (:func:`recall_at_k`); ``None`` for a query with fewer than k relevant documents, which
  :func:`evaluate_queries` skips for that k (``n_queries@k`` says how many it used).

All values are fractions in [0, 1]. Every predicted ranking is :func:`predicted_order`: score
descending, ties by docID ascending (deterministic, independent of the input order; trec_eval and
sklearn differ only on ties). Errors are ``ValueError``s: NaN scores, length mismatches, empty
inputs, duplicate docIDs, a bad ``k``, missing gold / negative docIDs (docIDs that cannot be
compared, str against int, are Python's ``TypeError``; a record without a key, a ``KeyError``);
infinite scores (-inf: an impossible docID) are allowed. ``ks``: the datasets' constants
(``WORDNET_KS``, ``ESCI_KS``) or notebook 07's 1..k_max; empty, a k below 1 or not an integer is refused.
"""

from __future__ import annotations

import math
import numbers
from collections import Counter
from typing import Any, Hashable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from arrank.common.params import number_list
from arrank.data.ranking import WORDNET_KS

DocId = Hashable

# Keys of one per-query record for evaluate_queries (the WordNet dataset's column names).
QUERY, RELEVANT, NEGATIVE, SCORES = "query", "relevant", "negative", "scores"


def _scores_array(scores: Any, name: str = "scores") -> np.ndarray:
    """Scores as a non-empty 1-D float array (numpy refuses what is no number); NaN is an error
    (section 5.1 scores are log-probabilities)."""
    arr = np.asarray(scores, dtype=float)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} is empty or not one-dimensional: shape {arr.shape}")
    if np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN at positions {np.flatnonzero(np.isnan(arr)).tolist()}")
    return arr


def _check_unique(docids: Sequence[DocId], what: str) -> None:
    if dups := [d for d, count in Counter(docids).items() if count > 1]:
        raise ValueError(f"duplicate docIDs among {what}: {sorted(set(map(repr, dups)))}")


def _score_map(scores: Mapping[DocId, float] | pd.Series) -> tuple[list[DocId], np.ndarray]:
    """Candidates and their scores from a docid -> score mapping (or a pandas Series)."""
    if isinstance(scores, pd.Series):
        _check_unique(list(scores.index), "candidates (Series index)")
        scores = scores.to_dict()
    return list(scores), _scores_array(list(scores.values()))


def _check_k(k: Any, n_candidates: int) -> int:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise ValueError(f"k must be an int, got {k!r}")
    if k <= 0:
        raise ValueError(f"k must be >= 1, got {k}")
    if k > n_candidates:
        raise ValueError(f"k={k} is larger than the number of candidates ({n_candidates})")
    return int(k)


def predicted_order(docids: Sequence[DocId], scores: Sequence[float] | np.ndarray) -> list[DocId]:
    """The predicted ranking pi_hat of section 5.1 ("argsort over the docIDs").

    Sorts by score descending, then docID ascending (Python ordering: code points for str), so
    ties are broken deterministically and independently of the input order. trec_eval breaks
    ties by docno *descending* (``comp_sim_docno``, compared as strings). Raises ValueError on
    length mismatch, duplicates or NaN; docIDs that cannot be ordered against each other (str and
    int) are Python's TypeError.
    """
    docids = list(docids)
    values = _scores_array(scores)
    if len(docids) != values.size:
        raise ValueError(f"{len(docids)} docIDs but {values.size} scores")
    _check_unique(docids, "candidates")
    return [d for _, d in sorted(zip(-values, docids))]  # score descending, then docID ascending


def gold_gains(n_q: int, with_negative: bool = True) -> np.ndarray:
    """Gold gains of section 5.1: log(n_q+1), log(n_q), ..., log(2) for the n_q relevant documents
    in rank order, then log(1) = 0 for the sampled negative (``with_negative=False`` for ESCI).

    The log base does not matter: nDCG is invariant to scaling the gains.
    """
    if isinstance(n_q, bool) or not isinstance(n_q, numbers.Integral) or n_q < 1:
        raise ValueError(f"n_q must be an int >= 1, got {n_q!r}")
    gains = np.log(np.arange(n_q + 1, 1, -1, dtype=float))
    return np.append(gains, 0.0) if with_negative else gains


def _dcg(gains_in_rank_order: np.ndarray) -> float:
    discounts = np.log2(np.arange(gains_in_rank_order.size) + 2.0)
    return float(np.sum(gains_in_rank_order / discounts))


def ndcg(
    gains: Sequence[float] | np.ndarray, scores: Sequence[float] | np.ndarray, docids: Sequence[DocId] | None = None
) -> float:
    """nDCG of one query (section 5.1): gold ``gains`` vs predicted ``scores`` (aligned arrays).

    DCG = sum_i gain(pi_hat[i]) / log2(i + 2) over the whole list (linear gains, no cutoff),
    divided by the DCG of the gains sorted descending: ``sklearn.metrics.ndcg_score([gains],
    [scores])`` when no two scores tie (ties: :func:`predicted_order`, ``docids`` default to the
    positions). Gains must be finite, >= 0 and not all 0; a single document gives 1.0.
    """
    g = _scores_array(gains, "gains")
    s = _scores_array(scores)
    if g.size != s.size:
        raise ValueError(f"{g.size} gains but {s.size} scores")
    if not np.isfinite(g).all() or (g < 0).any():
        raise ValueError("gains must be finite and >= 0")
    ideal = _dcg(np.sort(g)[::-1])
    if ideal <= 0.0:
        raise ValueError("nDCG is undefined when every gain is 0 (no relevant document)")
    ids = list(range(g.size)) if docids is None else list(docids)
    order = predicted_order(ids, s)
    position = {d: i for i, d in enumerate(ids)}
    return _dcg(g[[position[d] for d in order]]) / ideal


def recall_at_k(gold_order: Sequence[DocId], scores: Mapping[DocId, float] | pd.Series, k: int) -> float | None:
    """R@k of section 5.1: ``|gold_order[:k] ∩ pi_hat[:k]| / k``.

    ``gold_order``: the relevant docIDs, rank 1 first. ``scores``: docid -> predicted score for
    *every* candidate (the negative included). Returns ``None`` when the query has fewer than k
    relevant documents. Raises ValueError for k <= 0, k above the number of candidates, NaN
    scores, duplicate or missing gold docIDs.
    """
    cand, values = _score_map(scores)
    k = _check_k(k, len(cand))
    gold = list(gold_order)
    _check_unique(gold, "gold_order")
    if missing := [d for d in gold if d not in scores]:
        raise ValueError(f"gold docIDs missing from the scores: {missing!r}")
    if len(gold) < k:
        return None
    top = set(predicted_order(cand, values)[:k])
    return len(top.intersection(gold[:k])) / k


def violates_constraint(pos_scores: Sequence[float] | np.ndarray, neg_score: float) -> bool:
    """Section 5.1's constraint violation: True iff the score (log-probability) of *any* positive
    is strictly lower than the negative's, ``min(pos_scores) < neg_score`` (a tie is none)."""
    pos = _scores_array(pos_scores, "pos_scores")
    neg = float(neg_score)
    if math.isnan(neg):
        raise ValueError("neg_score is NaN")
    return bool((pos < neg).any())


def cvr(violations: Iterable[bool]) -> float:
    """Constraint violation rate (section 5.1, Table 1): the fraction of queries that violate."""
    if not (flags := list(violations)):
        raise ValueError("cvr of no queries is undefined")
    if bad := [v for v in flags if not isinstance(v, (bool, np.bool_))]:
        raise ValueError(f"violations must be bools, got {bad[:3]!r}")
    return sum(bool(v) for v in flags) / len(flags)


def _query_row(i: int, rec: Mapping[str, Any], ks: list[int]) -> dict[str, Any]:
    # a record without relevant docIDs is gold_gains' error; one without a key, a KeyError
    qid, relevant, score_map = rec.get(QUERY, i), list(rec[RELEVANT]), rec[SCORES]
    negative = rec.get(NEGATIVE)
    if isinstance(negative, float) and math.isnan(negative):  # a DataFrame's missing value
        negative = None
    cand, values = _score_map(score_map)
    _check_unique(relevant, f"the relevant docIDs of query {qid!r}")
    if missing := [d for d in relevant + ([] if negative is None else [negative]) if d not in score_map]:
        raise ValueError(f"query {qid!r}: docIDs missing from the scores: {missing!r}")
    if negative is not None and negative in relevant:
        raise ValueError(f"query {qid!r}: the negative {negative!r} is also relevant")
    # Gains: gold_gains over relevant (+ negative); any other candidate is irrelevant (gain 0).
    gain_of = dict(zip(relevant, gold_gains(len(relevant), with_negative=False)))
    score_of = dict(zip(cand, values))
    violation = None if negative is None else violates_constraint([score_of[d] for d in relevant], score_of[negative])
    return {
        QUERY: qid,
        "n_relevant": len(relevant),
        "n_candidates": len(cand),
        "violation": violation,
        "ndcg": ndcg([gain_of.get(d, 0.0) for d in cand], values, docids=cand),
        **{f"recall@{k}": recall_at_k(relevant, score_map, k) if k <= len(relevant) else np.nan for k in ks},
    }


def per_query_metrics(
    records: Iterable[Mapping[str, Any]] | pd.DataFrame, ks: Iterable[int] = WORDNET_KS
) -> pd.DataFrame:
    """One row per query: ``query, n_relevant, n_candidates, violation, ndcg, recall@k...``
    (``recall@k`` NaN where the query has fewer than k relevant documents; ``violation`` None
    without a negative). Each record has ``relevant`` (gold docIDs, rank 1 first), ``scores``
    (docid -> score for every candidate; other candidates count as irrelevant), optional
    ``negative`` (None / absent for ESCI) and optional ``query`` (default: the position).
    """
    ks = number_list(1, integers=True)("ks", list(ks))  # no k below 1, no float k, not empty
    records = records.to_dict("records") if isinstance(records, pd.DataFrame) else records
    if not (rows := [_query_row(i, rec, ks) for i, rec in enumerate(records)]):
        raise ValueError("no queries to evaluate")
    if len({r["violation"] is not None for r in rows}) > 1:
        raise ValueError("some queries have a negative and others do not; evaluate them apart")
    return pd.DataFrame(
        rows, columns=[QUERY, "n_relevant", "n_candidates", "violation", "ndcg"] + [f"recall@{k}" for k in ks]
    )


def summarize(frame: pd.DataFrame, ks: Iterable[int] = WORDNET_KS) -> dict[str, float | int | None]:
    """Flat metrics of Tables 1-2 from :func:`per_query_metrics`'s frame: ``n_queries``; ``cvr``
    (only when queries have a negative); ``ndcg``; ``recall@k`` = mean over the ``n_queries@k``
    queries with >= k relevant documents (None if there are none; the others are skipped)."""
    out: dict[str, float | int | None] = {"n_queries": int(len(frame))}
    if frame["violation"].notna().all():
        out["cvr"] = cvr(frame["violation"].astype(bool).tolist())
    out["ndcg"] = float(frame["ndcg"].mean())
    for k in ks:
        col = frame[f"recall@{k}"].dropna()
        out[f"recall@{k}"] = float(col.mean()) if len(col) else None
        out[f"n_queries@{k}"] = int(len(col))
    return out


def evaluate_queries(
    records: Iterable[Mapping[str, Any]] | pd.DataFrame, ks: Iterable[int] = WORDNET_KS
) -> dict[str, float | int | None]:
    """Section 5.1 metrics over many queries as the flat dict of Tables 1-2 (fractions, not %):
    ``n_queries, cvr, ndcg, recall@k, n_queries@k``. WordNet: ``ks=WORDNET_KS`` (1-5) with a
    negative per record; ESCI: ``ks=ESCI_KS`` (1, 2, 5, 10, 25, 50), no negative, so no ``cvr``.
    See :func:`per_query_metrics` for the record format and :func:`summarize` for the rules.
    """
    ks = tuple(ks)  # read twice: an iterator would be spent by the first
    return summarize(per_query_metrics(records, ks), ks)


def short_columns(per_query: pd.DataFrame) -> pd.DataFrame:
    """``per_query_metrics``'s frame in the short columns that sweeps' per-query CSVs use: ``query,
    cvr`` (1.0 / 0.0 for a violation, NaN without a negative), ``ndcg``, then ``r<k>`` for each
    ``recall@k`` (NaN where the query has fewer than k relevant docIDs)."""
    violation = per_query["violation"].map({True: 1.0, False: 0.0, "True": 1.0, "False": 0.0})
    out = pd.DataFrame({QUERY: per_query[QUERY], "cvr": violation.astype(float), "ndcg": per_query["ndcg"]})
    for col in per_query.columns:
        if col.startswith("recall@"):
            out[f"r{col.removeprefix('recall@')}"] = per_query[col].astype(float)
    return out
