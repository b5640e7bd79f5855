"""arrank.evaluation.trec: the TREC files of scored queries re-score, with ir_measures (trec_eval's
measures through pytrec_eval; trectools for the finer gains), to the workbook's own nDCG of section 5.1."""

from __future__ import annotations

import math

import ir_measures
import numpy as np
import pytest
from ir_measures import nDCG

from arrank.evaluation import metrics, trec


def ndcg_tolerance(scale: int = trec.GAIN_SCALE) -> float:
    """The bound on nDCG's relative change when the gains are rounded to integers at ``scale``: DCG
    and ideal DCG each move by at most 0.5 / (scale · log 2) relative (the smallest gain is log 2)."""
    return 2 * 0.5 / (scale * math.log(2))


def _records(seed: int = 0) -> list[dict]:
    """Queries with 1-7 relevant docIDs, a negative for most, ids with spaces and '%' (ESCI-like
    titles), random untied scores."""
    rng = np.random.default_rng(seed)
    records = []
    for q in range(30):
        n_q = int(rng.integers(1, 8))
        relevant = [f"doc {q}-{r} 5% off" if q % 3 == 0 else f"d{q}_{r}.n.01" for r in range(n_q)]
        negative = None if q % 5 == 0 else f"neg{q}.n.01"
        candidates = relevant + ([negative] if negative else [])
        scores = dict(zip(candidates, map(float, rng.normal(size=len(candidates)))))
        records.append({"query": f"query {q}" if q % 3 == 0 else f"q{q}.n.01", "relevant": relevant,
                        "negative": negative, "scores": scores})  # fmt: skip
    return records


def _ndcg(record: dict, integer: bool = False) -> float:
    """The workbook's nDCG of one record (section 5.1), with the gains as ``qrels.trec`` rounds them
    when ``integer``."""
    candidates = record["relevant"] + ([record["negative"]] if record["negative"] else [])
    gains = metrics.gold_gains(len(record["relevant"]), with_negative=record["negative"] is not None)
    if integer:
        gains = np.round(gains * trec.GAIN_SCALE)
    return metrics.ndcg(gains, [record["scores"][d] for d in candidates], candidates)


def test_trec_files_rescore_to_the_workbooks_ndcg_with_ir_measures(tmp_path):
    """ir_measures' nDCG of the files equals the workbook's nDCG of the integer gains (1e-9), and the
    workbook's own nDCG within the rounding's bound, ``ndcg_tolerance()``."""
    records = _records()
    run, qrels = trec.write_trec(tmp_path, records, "my run")
    read = ir_measures.read_trec_qrels(str(qrels)), ir_measures.read_trec_run(str(run))
    got = {m.query_id: m.value for m in ir_measures.iter_calc([nDCG], *read)}
    exact = {trec.token(r["query"]): _ndcg(r, integer=True) for r in records}
    want = {trec.token(r["query"]): _ndcg(r) for r in records}
    assert set(got) == set(want) and len(got) == 30
    assert [got[q] for q in want] == pytest.approx([exact[q] for q in want], rel=1e-9, abs=0)
    assert [got[q] for q in want] == pytest.approx(list(want.values()), rel=ndcg_tolerance(), abs=0)
    assert ndcg_tolerance() == pytest.approx(1.4427e-3, rel=1e-4)
    assert min(want.values()) < 0.9  # the scores are random: the check is not of perfect rankings only


def test_rescaled_qrels_rescore_to_the_workbooks_ndcg_within_1e_6_with_trectools(tmp_path):
    """The gains of qrels.trec again at 10**7 (``rescaled_qrels``) equal those written at that scale,
    and ir_measures' trectools provider scores them to the workbook's nDCG within 1e-6."""
    records = _records(1)
    run, qrels = trec.write_trec(tmp_path, records, "my run")
    fine = trec.rescaled_qrels(qrels, 10**7)
    assert fine == trec.qrels_lines(records, scale=10**7) and fine != qrels.read_text().splitlines()
    read = (
        ir_measures.read_trec_qrels(str(trec.write_lines(tmp_path / "fine.trec", fine))),
        ir_measures.read_trec_run(str(run)),
    )
    got = {m.query_id: m.value for m in ir_measures.trectools.iter_calc([nDCG], *read)}
    want = {trec.token(r["query"]): _ndcg(r) for r in records}
    assert set(got) == set(want) and ndcg_tolerance(10**7) < 1e-6
    assert [got[q] for q in want] == pytest.approx(list(want.values()), rel=ndcg_tolerance(10**7), abs=0)
    assert min(want.values()) < 0.9


def test_rescaled_qrels_refuses_a_file_that_is_not_the_workbooks(tmp_path):
    _, qrels = trec.write_trec(tmp_path, _records(), "r")
    lines = qrels.read_text().splitlines()
    qid, _, docno, rel = lines[1].split()
    (tmp_path / "edited.trec").write_text("\n".join([lines[0], f"{qid} 0 {docno} {int(rel) + 1}", *lines[2:]]))
    with pytest.raises(ValueError, match=rf"edited.trec: query '{qid}' has relevance \[.*not the gains"):
        trec.rescaled_qrels(tmp_path / "edited.trec", 10**7)
    many = [{"query": "q", "relevant": [f"d{i}" for i in range(1022)], "negative": None, "scores": {}}]
    trec.write_lines(tmp_path / "many.trec", trec.qrels_lines(many))
    with pytest.raises(ValueError, match=r"many.trec: query 'q' has 1022 relevant docIDs whose gains tie"):
        trec.rescaled_qrels(tmp_path / "many.trec", 10**7)
    many[0]["relevant"].pop()  # 1021: every gain its own integer
    trec.write_lines(tmp_path / "many.trec", trec.qrels_lines(many))
    assert trec.rescaled_qrels(tmp_path / "many.trec", 10**7) == trec.qrels_lines(many, scale=10**7)
    (tmp_path / "short.trec").write_text("q 0 d 693\nq 0 e\n")
    with pytest.raises(ValueError, match=r"short.trec: line 2 is not 'qid 0 docno rel' .*: 'q 0 e'"):
        trec.rescaled_qrels(tmp_path / "short.trec", 10**7)
    (tmp_path / "five.trec").write_text("q 0 d 693\nq 0 e x 693\n")
    with pytest.raises(ValueError, match=r"five.trec: line 2 is not 'qid 0 docno rel' .*: 'q 0 e x 693'"):
        trec.rescaled_qrels(tmp_path / "five.trec", 10**7)
    (tmp_path / "float.trec").write_text("q 0 d 0.69\n")
    with pytest.raises(ValueError, match=r"float.trec: line 1 is not .* rel an integer >= 0: 'q 0 d 0.69'"):
        trec.rescaled_qrels(tmp_path / "float.trec", 10**7)


def test_the_files_are_one_token_per_field_with_the_gains_of_section_5_1(tmp_path):
    records = _records()
    run, qrels = trec.write_trec(tmp_path, records, "my run")
    lines = run.read_text().splitlines()
    assert len(lines) == sum(len(r["scores"]) for r in records)
    assert all(len(line.split()) == 6 and line.split()[5] == "my%20run" for line in lines)
    first = records[0]  # query 0: titles with spaces and '%'
    assert lines[0].startswith("query%200 Q0 doc%200-") and "5%25%20off" in lines[0]
    q = [line.split() for line in qrels.read_text().splitlines() if line.startswith("q1.n.01 ")]
    n_q = len(records[1]["relevant"])
    assert [int(x[3]) for x in q[:n_q]] == [round(np.log(n_q + 2 - r) * 1000) for r in range(1, n_q + 1)]
    assert q[n_q][2:] == ["neg1.n.01", "0"]
    ranks = [int(line.split()[3]) for line in lines if line.startswith("query%200 ")]
    assert ranks == list(range(1, len(first["scores"]) + 1))
    assert trec.relevance(1) == [round(np.log(2) * trec.GAIN_SCALE)]


def test_run_lines_rank_by_score_then_docid_and_keep_nine_significant_digits():
    """``qid Q0 docno rank score run``: rank 1 the highest score, a tie ranked by docID ascending (the
    workbook's order), each score to 9 significant digits, so scores 8e-8 apart stay apart."""
    scores = {"a": 0.1, "b": 0.912345678, "c": 0.5, "d": 0.5, "e": 0.9123456}
    lines = trec.run_lines([{"query": "q", "relevant": ["a"], "negative": None, "scores": scores}], "r")
    assert lines == [
        "q Q0 b 1 0.912345678 r",
        "q Q0 e 2 0.9123456 r",
        "q Q0 c 3 0.5 r",
        "q Q0 d 4 0.5 r",
        "q Q0 a 5 0.1 r",
    ]


def test_a_score_that_is_not_finite_is_refused_and_leaves_no_file(tmp_path):
    records = _records()
    records[4]["scores"][records[4]["relevant"][0]] = float("nan")
    with pytest.raises(ValueError, match=r"scores contains NaN"):
        trec.write_trec(tmp_path, records, "r")
    records[4]["scores"][records[4]["relevant"][0]] = float("inf")
    with pytest.raises(ValueError, match=r"has score inf; TREC needs finite scores"):
        trec.write_trec(tmp_path, records, "r")
    assert not list(tmp_path.iterdir())


def test_ones_own_data_is_written_with_its_own_ids_and_joins_its_own_qrels(tmp_path):
    """dataset custom: run.trec and qrels.trec name queries by their ``query_id`` and documents by
    their ``id`` (title docIDs here, so neither is the table's), whitespace as %XX only: a qrels file
    written in the user's ids joins every query and every relevant document (ir_measures)."""
    import json

    from arrank.data import ranking

    def doc(i: str) -> dict:
        return {"id": i, "text": f"text of {i}"}

    queries = [
        {"query_id": "q/1", "query": "red shoes", "relevant": [doc("B07:X%"), doc("p 17")], "negative": doc("n-1")},
        {"query_id": "Q 2", "query": "blue hats", "relevant": [doc("ü.3"), doc("B07:X%"), doc("d:4")], "negative": doc("n-2")},
        {"query_id": "3", "query": "3", "relevant": [doc("d:5")], "negative": doc("n-1")},
    ]  # fmt: skip
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in queries))
    df, ids = ranking.ranking_dataset(
        "custom", "quick", 0, 1, None, data_path=str(path), custom_docids="text", with_ids=True
    )
    rng = np.random.default_rng(0)
    records = [
        {"query": r.query, "relevant": r.relevant, "negative": r.negative,
         "scores": {d: float(rng.normal()) for d in [*r.relevant, r.negative]}}
        for r in df.itertuples()
    ]  # fmt: skip
    run, _ = trec.write_trec(tmp_path, records, "mine", ids)
    own = {"q/1": ["B07:X%", "p%2017"], "Q%202": ["ü.3", "B07:X%", "d:4"], "3": ["d:5"]}
    (tmp_path / "own.qrels").write_text("".join(f"{q} 0 {d} 1\n" for q, ds in own.items() for d in ds))
    got = ir_measures.iter_calc(
        [ir_measures.NumRelRet], ir_measures.read_trec_qrels(str(tmp_path / "own.qrels")),
        ir_measures.read_trec_run(str(run)),
    )  # fmt: skip
    assert {m.query_id: m.value for m in got} == {q: len(ds) for q, ds in own.items()}
    docnos = {ln.split()[2] for ln in run.read_text().splitlines()}
    assert docnos == {"B07:X%", "p%2017", "ü.3", "d:4", "d:5", "n-1", "n-2"}
    assert trec.run_lines(records, "mine")[0].split()[0] not in own  # without the ids: the table's keys
