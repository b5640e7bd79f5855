"""Section 5.1 metrics (CVR, nDCG, R@k) and their aggregation into Tables 1-2's flat names."""

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import ndcg_score

from arrank.evaluation import metrics as M

LOG = math.log


def dcg(gains):
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


# --------------------------------------------------------------------------- predicted_order
def test_order_is_score_descending_then_docid_ascending():
    assert M.predicted_order(["b", "a", "c", "d"], [1.0, 1.0, 2.0, 0.0]) == ["c", "a", "b", "d"]
    # all tied: ascending docID, neither input order (a,c,b) nor trec_eval's descending (c,b,a)
    assert M.predicted_order(["a", "c", "b"], [0.5, 0.5, 0.5]) == ["a", "b", "c"]
    # int docIDs compare numerically (trec_eval would compare the strings "10" < "9")
    assert M.predicted_order([10, 9], [0.0, 0.0]) == [9, 10]
    # -inf (log-probability of an impossible docID) is allowed and ranks last
    assert M.predicted_order(["x", "y", "z"], [-np.inf, -3.0, -1.0]) == ["z", "y", "x"]


@pytest.mark.parametrize(
    "docids, scores, match",
    [
        (["a", "a"], [1.0, 2.0], "duplicate docIDs"),
        (["a", "b"], [1.0], "2 docIDs but 1 scores"),
        (["a", "b"], [1.0, float("nan")], "NaN at positions \\[1\\]"),
        ([], [], "empty"),
    ],
)
def test_order_errors(docids, scores, match):
    with pytest.raises(ValueError, match=match):
        M.predicted_order(docids, scores)


# --------------------------------------------------------------------------- nDCG
def test_gold_gains_follow_section_5_1():
    np.testing.assert_allclose(M.gold_gains(3), [LOG(4), LOG(3), LOG(2), 0.0])
    np.testing.assert_allclose(M.gold_gains(3, with_negative=False), [LOG(4), LOG(3), LOG(2)])
    np.testing.assert_allclose(M.gold_gains(1), [LOG(2), 0.0])
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="n_q must be an int >= 1"):
            M.gold_gains(bad)


def test_ndcg_hand_made():
    g = M.gold_gains(2)  # log3, log2, 0 (negative)
    assert M.ndcg(g, [-1.0, -2.0, -3.0]) == 1.0  # perfect ranking
    # negative ranked first, then the positives in order
    expected = dcg([0.0, LOG(3), LOG(2)]) / dcg([LOG(3), LOG(2), 0.0])
    assert M.ndcg(g, [-2.0, -3.0, -1.0]) == pytest.approx(expected, rel=1e-12)
    assert expected < 0.8
    assert M.ndcg([LOG(2)], [-5.0]) == 1.0  # one document (sklearn refuses n = 1)
    # gains need not be sorted: the ideal DCG sorts them
    assert M.ndcg([0.0, LOG(2), LOG(3)], [1.0, 2.0, 3.0]) == 1.0


def test_ndcg_equals_sklearn_without_ties_on_200_random_queries():
    rng = np.random.default_rng(0)
    for i in range(200):
        n_q = int(rng.integers(1, 30))
        with_neg = bool(i % 2) or n_q == 1
        gains = M.gold_gains(n_q, with_negative=with_neg)
        perm = rng.permutation(gains.size)
        gains = gains[perm]
        scores = rng.normal(scale=3.0, size=gains.size) - 5.0  # log-prob like, no ties
        expected = ndcg_score([gains], [scores])
        assert M.ndcg(gains, scores) == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_ndcg_ties_break_by_docid_not_by_sklearns_average():
    gains, scores = [2.0, 1.0, 0.0], [1.0, 1.0, 0.0]
    # docIDs b (gain 2) and a (gain 1) tie: "a" goes first
    ours = M.ndcg(gains, scores, docids=["b", "a", "c"])
    assert ours == pytest.approx(dcg([1.0, 2.0, 0.0]) / dcg([2.0, 1.0, 0.0]), rel=1e-12)
    sk = ndcg_score([gains], [scores])  # averages gains over the tie
    assert sk == pytest.approx(dcg([1.5, 1.5, 0.0]) / dcg([2.0, 1.0, 0.0]), rel=1e-12)
    assert ours < sk
    # default docIDs are the positions: position 0 (gain 2) wins the tie
    assert M.ndcg(gains, scores) == 1.0


@pytest.mark.parametrize(
    "gains, scores, match",
    [
        ([1.0, 0.0], [1.0], "2 gains but 1 scores"),
        ([0.0, 0.0], [1.0, 2.0], "every gain is 0"),
        ([1.0, -1.0], [1.0, 2.0], "finite and >= 0"),
        ([1.0, np.inf], [1.0, 2.0], "finite and >= 0"),
        ([1.0, 0.0], [np.nan, 2.0], "scores contains NaN"),
        ([[1.0, 0.0]], [[1.0, 2.0]], "one-dimensional"),
    ],
)
def test_ndcg_errors(gains, scores, match):
    with pytest.raises(ValueError, match=match):
        M.ndcg(gains, scores)


def test_ndcg_docids_errors():
    with pytest.raises(ValueError, match="duplicate docIDs"):
        M.ndcg([1.0, 0.0], [1.0, 2.0], docids=["a", "a"])
    with pytest.raises(ValueError, match="3 docIDs but 2 scores"):
        M.ndcg([1.0, 0.0], [1.0, 2.0], docids=["a", "b", "c"])


# --------------------------------------------------------------------------- R@k
GOLD = ["a", "b", "c"]
SCORES = {"a": -1.0, "b": -3.0, "c": -2.0, "n": -0.5}  # predicted: n, a, c, b


def test_recall_hand_made():
    assert [M.recall_at_k(GOLD, SCORES, k) for k in (1, 2, 3)] == [0.0, 0.5, pytest.approx(2 / 3)]
    perfect = {"a": -1.0, "b": -2.0, "c": -3.0, "n": -9.0}
    assert [M.recall_at_k(GOLD, perfect, k) for k in (1, 2, 3)] == [1.0, 1.0, 1.0]
    # the set, not the order, inside the top k counts
    swapped = {"a": -2.0, "b": -1.0, "c": -3.0, "n": -9.0}
    assert M.recall_at_k(GOLD, swapped, 1) == 0.0 and M.recall_at_k(GOLD, swapped, 2) == 1.0
    # a pandas Series works as the mapping
    assert M.recall_at_k(GOLD, pd.Series(SCORES), 2) == 0.5


def test_recall_fewer_relevant_than_k_is_none():
    assert M.recall_at_k(GOLD, SCORES, 4) is None  # 3 relevant < k=4 <= 4 candidates
    assert M.recall_at_k(["a"], {"a": 0.0, "n": 1.0}, 2) is None


def test_recall_ties_follow_predicted_order():
    # relevant b ties the negative a: docID "a" < "b" goes first
    assert M.recall_at_k(["b"], {"b": 0.0, "a": 0.0}, 1) == 0.0
    assert M.recall_at_k(["a", "b"], {"b": 0.0, "a": 0.0, "z": 0.0}, 1) == 1.0


@pytest.mark.parametrize(
    "gold, scores, k, match",
    [
        (GOLD, SCORES, 0, "k must be >= 1"),
        (GOLD, SCORES, -1, "k must be >= 1"),
        (GOLD, SCORES, 1.0, "k must be an int"),
        (GOLD, SCORES, True, "k must be an int"),
        (GOLD, SCORES, 5, "larger than the number of candidates \\(4\\)"),
        (GOLD, {**SCORES, "c": float("nan")}, 1, "NaN"),
        (["a", "x"], SCORES, 1, "gold docIDs missing from the scores: \\['x'\\]"),
        (["a", "a"], SCORES, 1, "duplicate docIDs among gold_order"),
        (GOLD, pd.Series([1.0, 2.0, 3.0], index=["a", "b", "a"]), 1, "duplicate docIDs"),
    ],
)
def test_recall_errors(gold, scores, k, match):
    with pytest.raises(ValueError, match=match):
        M.recall_at_k(gold, scores, k)


# --------------------------------------------------------------------------- CVR
def test_violation_cases():
    assert M.violates_constraint([-2.0, -3.0], -1.0)  # negative ranked first
    assert M.violates_constraint([-1.0, -3.0], -2.0)  # negative between positives ("any")
    assert not M.violates_constraint([-1.0, -2.0], -3.0)  # all positives above
    assert not M.violates_constraint([-1.0, -2.0], -2.0)  # tie: "lower" is strict
    assert M.violates_constraint([-2.0, -2.5], -2.0)  # tie with one, below with another
    assert M.violates_constraint([-np.inf], -50.0)
    assert isinstance(M.violates_constraint(np.array([-1.0]), np.float64(-2.0)), bool)


def test_violation_and_cvr_errors():
    with pytest.raises(ValueError, match="pos_scores is empty"):
        M.violates_constraint([], 0.0)
    with pytest.raises(ValueError, match="pos_scores contains NaN"):
        M.violates_constraint([np.nan], 0.0)
    with pytest.raises(ValueError, match="neg_score is NaN"):
        M.violates_constraint([0.0], np.nan)
    with pytest.raises(ValueError, match="no queries"):
        M.cvr([])
    with pytest.raises(ValueError, match="must be bools"):
        M.cvr([True, 1])


def test_cvr():
    assert M.cvr([True, False, False, False]) == 0.25
    assert M.cvr(np.array([False, False])) == 0.0
    assert M.cvr(iter([True])) == 1.0


# --------------------------------------------------------------------------- aggregation
WORDNET_RECORDS = [
    # perfect: no violation, nDCG 1, R@1 = R@2 = 1, only 2 relevant -> skipped for k >= 3
    {"query": "q1", "relevant": ["a", "b"], "negative": "n", "scores": {"n": -3.0, "b": -2.0, "a": -1.0}},
    # negative first, then the positives in order
    {
        "query": "q2",
        "relevant": ["a", "b", "c"],
        "negative": "n",
        "scores": {"a": -1.0, "b": -2.0, "c": -3.0, "n": -0.1},
    },
    # negative between positives: predicted y, w, x, z
    {
        "query": "q3",
        "relevant": ["x", "y", "z"],
        "negative": "w",
        "scores": {"x": -2.0, "y": -1.0, "w": -1.5, "z": -3.0},
    },
]
G3 = [LOG(4), LOG(3), LOG(2), 0.0]
NDCG_Q2 = dcg([0.0, LOG(4), LOG(3), LOG(2)]) / dcg(G3)
NDCG_Q3 = dcg([LOG(3), 0.0, LOG(4), LOG(2)]) / dcg(G3)


def test_evaluate_wordnet_style_queries():
    out = M.evaluate_queries(WORDNET_RECORDS, ks=(1, 2, 3, 4))
    assert list(out) == [
        "n_queries",
        "cvr",
        "ndcg",
        "recall@1",
        "n_queries@1",
        "recall@2",
        "n_queries@2",
        "recall@3",
        "n_queries@3",
        "recall@4",
        "n_queries@4",
    ]
    assert out["n_queries"] == 3
    assert out["cvr"] == pytest.approx(2 / 3)
    assert out["ndcg"] == pytest.approx((1.0 + NDCG_Q2 + NDCG_Q3) / 3, rel=1e-12)
    assert out["recall@1"] == pytest.approx(1 / 3)  # (1 + 0 + 0) / 3
    assert out["recall@2"] == pytest.approx(2 / 3)  # (1 + 1/2 + 1/2) / 3
    assert out["recall@3"] == pytest.approx(2 / 3)  # (2/3 + 2/3) / 2, q1 skipped
    assert (out["n_queries@1"], out["n_queries@2"], out["n_queries@3"]) == (3, 3, 2)
    assert out["recall@4"] is None and out["n_queries@4"] == 0
    assert all(type(v) in (int, float) for v in out.values() if v is not None)  # JSON-ready
    # default ks are WordNet's 1-5
    assert [k for k in M.evaluate_queries(WORDNET_RECORDS) if k.startswith("recall@")] == [
        f"recall@{k}" for k in range(1, 6)
    ]


def test_per_query_frame():
    df = M.per_query_metrics(WORDNET_RECORDS, ks=(1, 3))
    assert list(df.columns) == ["query", "n_relevant", "n_candidates", "violation", "ndcg", "recall@1", "recall@3"]
    assert df["query"].tolist() == ["q1", "q2", "q3"]
    assert df["violation"].tolist() == [False, True, True]
    np.testing.assert_allclose(df["ndcg"], [1.0, NDCG_Q2, NDCG_Q3], rtol=1e-12)
    assert math.isnan(df.loc[0, "recall@3"]) and df.loc[1, "recall@3"] == pytest.approx(2 / 3)
    # a DataFrame of records gives the same frame
    pd.testing.assert_frame_equal(M.per_query_metrics(pd.DataFrame(WORDNET_RECORDS), ks=(1, 3)), df)


def test_evaluate_esci_style_without_negative():
    records = [  # no negative: no cvr; nDCG gains over the relevant only
        {"relevant": list("abcde"), "scores": {"a": 5.0, "b": 4.0, "c": 3.0, "d": 1.0, "e": 2.0}},
        {"relevant": ["p", "q"], "negative": None, "scores": {"q": 1.0, "p": 0.0}},
    ]
    out = M.evaluate_queries(records, ks=(1, 2, 5))
    assert "cvr" not in out and out["n_queries"] == 2
    g5, g2 = M.gold_gains(5, with_negative=False), M.gold_gains(2, with_negative=False)
    nd1 = dcg(g5[[0, 1, 2, 4, 3]]) / dcg(g5)
    nd2 = dcg(g2[::-1]) / dcg(g2)
    assert out["ndcg"] == pytest.approx((nd1 + nd2) / 2, rel=1e-12)
    assert (out["recall@1"], out["recall@2"]) == (0.5, 1.0)  # (1 + 0) / 2, (1 + 1) / 2
    assert out["recall@5"] == 1.0 and out["n_queries@5"] == 1
    assert M.per_query_metrics(records, ks=(1,))["query"].tolist() == [0, 1]  # default ids


def test_extra_candidates_count_as_irrelevant():
    rec = {"relevant": ["a"], "negative": "n", "scores": {"a": -2.0, "n": -3.0, "z": -1.0}}
    row = M.per_query_metrics([rec], ks=(1,)).iloc[0]
    assert row["recall@1"] == 0.0 and not row["violation"] and row["n_candidates"] == 3
    assert row["ndcg"] == pytest.approx(dcg([0.0, LOG(2), 0.0]) / dcg([LOG(2)]), rel=1e-12)


@pytest.mark.parametrize(
    "records, ks, match",
    [
        ([], (1,), "no queries"),
        ([WORDNET_RECORDS[0], {"relevant": ["a"], "scores": {"a": 0.0}}], (1,), "evaluate them apart"),
        (
            [{"query": "q", "relevant": ["a"], "negative": "a", "scores": {"a": 0.0}}],
            (1,),
            "query 'q': the negative 'a' is also relevant",
        ),
        (
            [{"relevant": ["a"], "negative": "n", "scores": {"a": 0.0}}],
            (1,),
            "docIDs missing from the scores: \\['n'\\]",
        ),
        ([{"relevant": ["a", "a"], "scores": {"a": 0.0}}], (1,), "duplicate docIDs"),
    ],
)
def test_evaluate_errors(records, ks, match):
    with pytest.raises(ValueError, match=match):
        M.evaluate_queries(records, ks=ks)


def test_evaluate_ks():
    assert M.evaluate_queries(WORDNET_RECORDS, ks=iter([1, 2])) == M.evaluate_queries(WORDNET_RECORDS, ks=(1, 2))
    for ks in ((), (2.0,), (0,), (True,)):  # no recall column would be computed, or a wrong one
        with pytest.raises(ValueError, match="ks=.* must be a non-empty list of integers >= 1"):
            M.evaluate_queries(WORDNET_RECORDS, ks=ks)


def test_dataframe_nan_negative_means_none():
    df = pd.DataFrame({"relevant": [["a", "b"]], "negative": [np.nan], "scores": [{"a": 1.0, "b": 0.0}]})
    assert "cvr" not in M.evaluate_queries(df, ks=(1,))


def test_permuting_candidates_never_changes_a_metric():
    rng = np.random.default_rng(1)
    records = []
    for i in range(30):
        n_q = int(rng.integers(1, 7))
        relevant = [f"d{j:02d}" for j in rng.permutation(20)[:n_q]]
        cands = relevant + ["neg"]
        scores = rng.integers(-3, 1, size=len(cands)).astype(float)  # many ties
        records.append({"query": i, "relevant": relevant, "negative": "neg", "scores": dict(zip(cands, scores))})
    ks = (1, 2, 3, 4, 5)
    ref_frame = M.per_query_metrics(records, ks)
    ref = M.evaluate_queries(records, ks)
    assert ref_frame["violation"].any() and not ref_frame["violation"].all()
    for _ in range(10):
        shuffled = []
        for rec in records:
            items = list(rec["scores"].items())
            items = [items[j] for j in rng.permutation(len(items))]
            shuffled.append({**rec, "scores": dict(items)})
        pd.testing.assert_frame_equal(M.per_query_metrics(shuffled, ks), ref_frame)
        assert M.evaluate_queries(shuffled, ks) == ref
        rec = shuffled[0]
        ids, vals = list(rec["scores"]), list(rec["scores"].values())
        assert M.predicted_order(ids, vals) == M.predicted_order(
            list(records[0]["scores"]), list(records[0]["scores"].values())
        )
    # and with ties the input order would matter: the test data does exercise ties
    assert any(len(set(r["scores"].values())) < len(r["scores"]) for r in records)


def test_summarize_reports_cvr_only_when_every_query_has_a_negative():
    """CVR (section 5.1) is a rate over queries with a negative: a frame where one query has none
    (concatenated WordNet and ESCI rows) reports no CVR rather than counting that query as no violation."""
    frame = pd.DataFrame({"violation": [True, None], "ndcg": [0.5, 1.0], "recall@1": [1.0, np.nan]})
    out = M.summarize(frame, ks=(1,))
    assert "cvr" not in out and out["ndcg"] == 0.75 and out["recall@1"] == 1.0 and out["n_queries@1"] == 1
    assert M.summarize(frame.iloc[:1], ks=(1,))["cvr"] == 1.0


def test_short_columns_violation_as_number():
    """The per-query CSVs' short form: a violation (bool, or the strings a CSV with empty cells reads
    back) is 1.0, none 0.0, no negative NaN; recall@k is r<k>."""
    frame = pd.DataFrame(
        {
            "query": ["a", "b", "c", "d", "e"],
            "violation": [True, False, "True", "False", None],
            "ndcg": [0.1, 0.2, 0.3, 0.4, 0.5],
            "recall@2": [0.5, np.nan, 1.0, 0.0, 0.5],
        }
    )
    out = M.short_columns(frame)
    assert list(out.columns) == ["query", "cvr", "ndcg", "r2"]
    assert out["cvr"].tolist()[:4] == [1.0, 0.0, 1.0, 0.0] and math.isnan(out["cvr"].iloc[4])
    assert out["r2"].iloc[3] == 0.0 and math.isnan(out["r2"].iloc[1])
