"""An evaluated run as TREC files: ``run.trec`` (every scored candidate of every query, with its
score) and ``qrels.trec`` (graded relevance that reproduces the workbook's own gains), so that
trec_eval, ir_measures / PyTerrier, ranx or pyserini score the workbook's runs and compare them
with their own (docs/findings.md, "TREC files").

Gains (section 5.1): the relevant docID at gold rank r of a query with n_q of them has gain
log(n_q + 2 − r), the negative 0. trec_eval reads integer relevance, so ``qrels.trec`` holds
``round(gain * GAIN_SCALE)``: nDCG with linear gains (trec_eval's ``ndcg``, ir_measures' ``nDCG``)
is invariant to scaling them, and the rounding moves each gain by at most 0.5 / (GAIN_SCALE ·
log 2) relative, so their nDCG is the workbook's within ``NDCG_RELATIVE_TOLERANCE``. A finer scale
is not used: trec_eval's nDCG takes time that grows about quadratically with the largest relevance
value (30 queries: 0.06 s at this scale, 2.2 s at 10x, minutes at 100x).

Query and document ids are written percent-encoded (``urllib.parse.quote(id, safe="")``): WordNet
synset names such as ``dog.n.01`` come out unchanged, while ESCI queries and title docIDs, which
hold spaces, become single tokens (``unquote`` gives them back).
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import quote

from arrank.common.outputs import umask_permissions
from arrank.evaluation import metrics

GAIN_SCALE = 1000  # integer relevance = round(gain * GAIN_SCALE)
NDCG_RELATIVE_TOLERANCE = 2 * 0.5 / (GAIN_SCALE * math.log(2))  # the rounding's bound on nDCG, relative (1.44e-3)
RUN_FILE, QRELS_FILE = "run.trec", "qrels.trec"


def token(value: Any) -> str:
    """A query or docID as one whitespace-free TREC token (percent-encoded)."""
    return quote(str(value), safe="")


def relevance(n_q: int) -> list[int]:
    """The integer relevance of gold ranks 1..n_q (``metrics.gold_gains`` scaled by ``GAIN_SCALE``)."""
    return [round(g * GAIN_SCALE) for g in metrics.gold_gains(n_q, with_negative=False)]


def qrels_lines(records: Sequence[dict]) -> list[str]:
    """``qid 0 docno rel`` for every scored candidate of every query (``evaluate`` records): the
    relevant docIDs with :func:`relevance`, the negative (where there is one) with 0."""
    lines = []
    for rec in records:
        qid = token(rec["query"])
        lines += [f"{qid} 0 {token(d)} {rel}" for d, rel in zip(rec["relevant"], relevance(len(rec["relevant"])))]
        if rec.get("negative") is not None:
            lines.append(f"{qid} 0 {token(rec['negative'])} 0")
    return lines


def run_lines(records: Sequence[dict], run_name: str) -> list[str]:
    """``qid Q0 docno rank score run_name`` for every scored candidate, in the workbook's predicted
    order (``metrics.predicted_order``: score descending, ties by docID ascending). Evaluators sort by
    score again and break ties their own way (trec_eval: docno descending), so tied scores may rank
    differently there."""
    name = token(run_name)
    lines = []
    for rec in records:
        qid, scores = token(rec["query"]), rec["scores"]
        for rank, d in enumerate(metrics.predicted_order(list(scores), list(scores.values())), start=1):
            score = float(scores[d])
            if not math.isfinite(score):
                raise ValueError(
                    f"query {rec['query']!r}: docID {d!r} has score {score}; a TREC run needs finite scores"
                )
            lines.append(f"{qid} Q0 {token(d)} {rank} {score:.9g} {name}")
    return lines


def write_lines(path: Path, lines: Sequence[str]) -> Path:
    """Write ``lines`` to ``path`` atomically (a temporary file renamed into place: never half a file)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    umask_permissions(Path(tmp))
    os.replace(tmp, path)
    return path


def write_trec(folder: Path, records: Sequence[dict], run_name: str) -> tuple[Path, Path]:
    """Write ``run.trec`` and ``qrels.trec`` of ``records`` into ``folder``, each atomically; both
    are formed before either is written. Returns their paths."""
    run, qrels = run_lines(records, run_name), qrels_lines(records)
    return write_lines(Path(folder) / RUN_FILE, run), write_lines(Path(folder) / QRELS_FILE, qrels)
