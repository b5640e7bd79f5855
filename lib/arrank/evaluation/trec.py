"""An evaluated run as TREC files: ``run.trec`` (every scored candidate of every query, with its
score) and ``qrels.trec`` (graded relevance that reproduces the workbook's own gains), so that
trec_eval, ir_measures / PyTerrier, ranx or pyserini score the workbook's runs and compare them
with their own (docs/findings.md, "TREC files").

Gains (section 5.1): the relevant docID at gold rank r of a query with n_q of them has gain
log(n_q + 2 − r), the negative 0. trec_eval reads integer relevance, so ``qrels.trec`` holds
``round(gain * scale)``: nDCG with linear gains (trec_eval's ``ndcg``, ir_measures' ``nDCG``) is
invariant to scaling them, and the rounding moves each gain by at most 0.5 / (scale · log 2)
relative (the smallest gain is log 2), so DCG and ideal DCG each move by at most that much and their
nDCG is the workbook's within 1 / (scale · log 2) relative. The files use
``GAIN_SCALE`` = 1000 (1.44e-3): trec_eval's nDCG takes time that grows about quadratically with
the largest relevance value (30 queries: 0.06 s at 1000, 2.2 s at 10x, minutes at 100x).
:func:`rescaled_qrels` gives the same gains at a finer scale (10**7: 1.44e-7) for evaluators whose
cost does not depend on the values (ir_measures' ``trectools`` or ``ranx`` provider).

Query and document ids are written percent-encoded (``urllib.parse.quote(id, safe="")``): WordNet
synset names such as ``dog.n.01`` come out unchanged, while ESCI queries and title docIDs, which
hold spaces, become single tokens (``unquote`` gives them back). One's own data (``ids``:
``arrank.data.ranking.ranking_dataset``'s ``with_ids``) is written with its own ``query_id`` and document ``id``, only
whitespace percent-encoded (``arrank.data.custom.trec_token``), so that one's own qrels join.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence
from urllib.parse import quote

from arrank.common.outputs import write_text_atomic
from arrank.evaluation import metrics

GAIN_SCALE = 1000  # integer relevance in qrels.trec = round(gain * GAIN_SCALE)
RUN_FILE, QRELS_FILE = "run.trec", "qrels.trec"
Ids = tuple[Mapping[str, str], Mapping[str, str]]  # one's own data: query -> qid, docID -> docno


def token(value: Any) -> str:
    """A query or docID as one whitespace-free TREC token (percent-encoded)."""
    return quote(str(value), safe="")


def namers(ids: Ids | None) -> tuple[Callable[[Any], str], Callable[[Any], str]]:
    """How a record's query and its docIDs are written: by ``ids`` where given, else :func:`token`."""
    return (ids[0].__getitem__, ids[1].__getitem__) if ids else (token, token)


def relevance(n_q: int, scale: int = GAIN_SCALE) -> list[int]:
    """The integer relevance of gold ranks 1..n_q (``metrics.gold_gains`` times ``scale``)."""
    return [round(g * scale) for g in metrics.gold_gains(n_q, with_negative=False)]


def qrels_lines(records: Sequence[dict], scale: int = GAIN_SCALE, ids: Ids | None = None) -> list[str]:
    """``qid 0 docno rel`` for every scored candidate of every query (``evaluate`` records): the
    relevant docIDs with :func:`relevance`, the negative (where there is one) with 0."""
    qid, docno = namers(ids)
    lines = []
    for rec in records:
        negative = [] if rec.get("negative") is None else [rec["negative"]]
        rels = relevance(len(rec["relevant"]), scale) + [0] * len(negative)
        lines += [f"{qid(rec['query'])} 0 {docno(d)} {r}" for d, r in zip([*rec["relevant"], *negative], rels)]
    return lines


def rescaled_qrels(path: Path, scale: int) -> list[str]:
    """The lines of a workbook ``qrels.trec`` with its gains at ``scale`` instead of ``GAIN_SCALE``:
    each query's positive relevance values, in descending order, are gold ranks 1..n_q, and
    :func:`relevance` gives them again at ``scale`` (the negatives stay 0). A file whose values are
    not the workbook's gains, or a query whose gains tie at ``GAIN_SCALE`` (1,022 or more relevant
    docIDs), is refused, naming the query."""
    path = Path(path)
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    coarse: dict[str, list[int]] = {}
    for i, row in enumerate(rows, start=1):
        if len(row) != 4 or not row[3].isdigit():
            raise ValueError(f"{path}: line {i} is not 'qid 0 docno rel' with rel an integer >= 0: {' '.join(row)!r}")
        coarse.setdefault(row[0], []).append(int(row[3]))
    fine: dict[str, dict[int, int]] = {}
    for qid, rels in coarse.items():
        positive = sorted((r for r in rels if r > 0), reverse=True)
        if positive != relevance(len(positive)):
            raise ValueError(
                f"{path}: query {qid!r} has relevance {positive}, not the gains of section 5.1 at scale "
                f"{GAIN_SCALE} ({relevance(len(positive))})"
            )
        if len(set(positive)) < len(positive):  # from n_q = 1022 on, neighbouring gains round alike
            raise ValueError(
                f"{path}: query {qid!r} has {len(positive)} relevant docIDs whose gains tie at scale "
                f"{GAIN_SCALE}: their gold order cannot be read back"
            )
        fine[qid] = dict(zip(positive, relevance(len(positive), scale)))
    return [f"{qid} 0 {docno} {fine[qid].get(int(rel), 0)}" for qid, _, docno, rel in rows]


def run_lines(records: Sequence[dict], run_name: str, ids: Ids | None = None) -> list[str]:
    """``qid Q0 docno rank score run_name`` for every scored candidate, in the workbook's predicted
    order (``metrics.predicted_order``: score descending, ties by docID ascending). Evaluators sort by
    score again and break ties their own way (trec_eval: docno descending), so tied scores may rank
    differently there."""
    name, (qid_of, docno) = token(run_name), namers(ids)
    lines = []
    for rec in records:
        qid, scores = qid_of(rec["query"]), rec["scores"]
        for rank, d in enumerate(metrics.predicted_order(list(scores), list(scores.values())), start=1):
            score = float(scores[d])
            if not math.isfinite(score):
                raise ValueError(f"query {rec['query']!r}: docID {d!r} has score {score}; TREC needs finite scores")
            lines.append(f"{qid} Q0 {docno(d)} {rank} {score:.9g} {name}")
    return lines


def write_lines(path: Path, lines: Sequence[str]) -> Path:
    """Write ``lines`` to ``path`` atomically (a temporary file renamed into place: never half a file)."""
    return write_text_atomic(path, "\n".join(lines) + "\n")


def write_trec(folder: Path, records: Sequence[dict], run_name: str, ids: Ids | None = None) -> tuple[Path, Path]:
    """Write ``run.trec`` and ``qrels.trec`` of ``records`` into ``folder``, each atomically; both
    are formed before either is written; ``ids``: one's own data's (module docstring). Returns their paths."""
    run, qrels = run_lines(records, run_name, ids), qrels_lines(records, ids=ids)
    return write_lines(Path(folder) / RUN_FILE, run), write_lines(Path(folder) / QRELS_FILE, qrels)
