"""Your own ranking data: a JSON Lines file turned into the workbook's ranking table
(``arrank.data.ranking``: ``query, prompt, relevant, n_relevant, negative, split``), so that notebooks
05-08 and the sweeps run on it unchanged (``dataset: custom``, ``data_path: <file>``; docs/own-data.md).

One query a line::

    {"query_id": "q1", "query": "wireless mouse",
     "relevant": [{"id": "p17", "text": "Logitech M185 Wireless Mouse"}, {"id": "p3", "text": "..."}],
     "negative": {"id": "p90", "text": "USB-C cable"}, "split": "train"}

- ``relevant``: the query's relevant documents, **best first** (the gold ranking; at least one);
- ``negative`` (optional, on every line or none): one document that is not relevant, ranked after
  all of them (CVR counts the queries where the model puts it above a relevant one);
- ``split`` (optional): ``train`` or ``eval``. Where no line has one, ``n_eval`` queries drawn with
  the data seed are held out; where some lines have one, every line needs one.

A document's docID (``docids``): ``id`` its ``id`` (atomic IDs), ``text`` its text (title IDs, as the
ESCI variant that names products by title) or ``semantic`` (section 5.1's OMP docIDs: sparse codes
of TF-IDF embeddings of the texts, as ESCI's, ``arrank.data.docids``). The prompt is Appendix D.2's
(the query and its candidates as ``[docID] text``, shuffled with the query's seeded generator).
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pandas as pd

from arrank.common.display import shown
from arrank.common.params import CUSTOM_DOCIDS as DOCIDS
from arrank.common.params import choice
from arrank.data import prompts

SPLITS = ("train", "eval")
MAX_BYTES = 1 << 30  # a file over 1 GiB is refused before it is read
MAX_LINE_BYTES = 1 << 20  # a line (one query) over 1 MiB is refused, read no further than that
MAX_CHARS = 4096  # characters of a query_id, query, document id or text
MAX_DOCUMENTS = 1000  # documents of one query (relevant and negative): its prompt shows them all


class CustomDataError(ValueError):
    """A line of the JSONL file breaks the format: the message names the file, line and field."""


def _text(row: dict, key: str, where: str) -> str:
    """``row[key]``: a non-empty string (or integer) of at most ``MAX_CHARS`` characters, checked."""
    value = row.get(key)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value).strip() == "":
        raise CustomDataError(f"{where} must be a non-empty string, got {shown(value)}")
    if len(str(value)) > MAX_CHARS:
        raise CustomDataError(f"{where} has {len(str(value)):,} characters, more than the {MAX_CHARS:,} allowed")
    return str(value)


def _document(value: Any, where: str) -> dict[str, str]:
    """A ``{"id": ..., "text": ...}`` object, checked."""
    if not isinstance(value, dict):
        raise CustomDataError(f"{where}: must be an object with 'id' and 'text', got {type(value).__name__}")
    for key in ("id", "text"):
        _text(value, key, f"{where}.{key}:")
    return {"id": str(value["id"]).strip(), "text": " ".join(str(value["text"]).split())}


def _query(line: str, where: str) -> dict[str, Any]:
    """One line's query, checked field by field."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as err:
        raise CustomDataError(f"{where}: not valid JSON ({err.msg} at column {err.colno})") from None
    if not isinstance(row, dict):
        raise CustomDataError(f"{where}: must be a JSON object, got {type(row).__name__}")
    for key in ("query_id", "query"):
        _text(row, key, f"{where}: field {key!r}")
    relevant = row.get("relevant")
    if not isinstance(relevant, list) or not relevant:
        raise CustomDataError(f"{where}: field 'relevant' must be a non-empty list of documents, best first")
    if len(relevant) + (row.get("negative") is not None) > MAX_DOCUMENTS:
        raise CustomDataError(f"{where}: {len(relevant):,} relevant documents; a query has at most {MAX_DOCUMENTS:,}")
    docs = [_document(d, f"{where}: relevant[{i}]") for i, d in enumerate(relevant)]
    negative = None if row.get("negative") is None else _document(row["negative"], f"{where}: negative")
    ids = [d["id"] for d in docs] + ([negative["id"]] if negative else [])
    if len(set(ids)) != len(ids):
        raise CustomDataError(f"{where}: field 'relevant'/'negative' lists a document id twice: {shown(ids)}")
    split = row.get("split")
    if split is not None and split not in SPLITS:
        raise CustomDataError(f"{where}: field 'split' is {split!r}; allowed: {list(SPLITS)} or absent")
    return {"query_id": str(row["query_id"]), "query": " ".join(str(row["query"]).split()), "relevant": docs,
            "negative": negative, "split": split}  # fmt: skip


def read_queries(path: Path | str, keep: bool = True, n_eval: int | None = None) -> list[dict[str, Any]]:
    """Every query of the JSONL file at ``path``, checked (:class:`CustomDataError` names file,
    line and field; blank lines are skipped), in bounded memory: the file at most ``MAX_BYTES``, a line
    ``MAX_LINE_BYTES`` (read no further), a field ``MAX_CHARS``, a query ``MAX_DOCUMENTS``. Without
    ``keep``, nothing is kept but the ids (the runner's check before a kernel starts); returns []. A file
    without splits must leave a query to train after ``n_eval`` are held out; one with splits needs an eval query."""
    path = Path(path)
    if not path.is_file():
        raise CustomDataError(f"data_path={str(path)!r}: no such file (a JSON Lines file of queries, docs/own-data.md)")
    if path.stat().st_size > MAX_BYTES:
        raise CustomDataError(f"{path}: {path.stat().st_size:,} bytes; at most {MAX_BYTES:,} are read")
    queries, seen, first, splits = [], {}, {}, set()  # first: the first line with and without each optional field
    with path.open("rb") as fh:
        for number, raw in enumerate(iter(lambda: fh.readline(MAX_LINE_BYTES + 1), b""), start=1):
            if len(raw) > MAX_LINE_BYTES:
                raise CustomDataError(f"{path}:{number}: the line is over {MAX_LINE_BYTES:,} bytes, a query's most")
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise CustomDataError(
                    f"{path}:{number}: not UTF-8 text ({err.reason} at byte {err.start + 1} of the line)"
                ) from None
            if not line.strip():
                continue
            q = _query(line, f"{path}:{number}")
            if q["query_id"] in seen:
                raise CustomDataError(
                    f"{path}:{number}: field 'query_id' {shown(q['query_id'])} repeats line {seen[q['query_id']]}"
                )
            seen[q["query_id"]] = number
            splits.add(q["split"])
            for field in ("split", "negative"):
                first.setdefault((field, q[field] is None), number)
            queries += [q] if keep else []
    if not seen:
        raise CustomDataError(f"{path}: no queries (one JSON object a line, docs/own-data.md)")
    for field in ("split", "negative"):  # CVR and the split are over every query or none
        if (field, False) in first and (field, True) in first:
            line = first[field, True]
            raise CustomDataError(f"{path}:{line}: field {field!r} is missing; give it on every line or on none")
    if splits == {"train"}:  # 05 would train, then find no held-out queries; 06 has none to evaluate
        raise CustomDataError(f"{path}: every query's split is 'train'; give some 'eval' (the held-out queries)")
    if n_eval is not None and ("split", True) in first and n_eval >= (n := len(seen)):
        raise CustomDataError(f"n_eval={n_eval} leaves none of the file's {n} queries to train: give n_eval below {n}")
    return queries


def docid_map(queries: list[dict[str, Any]], docids: str, seed: int = 0) -> dict[str, str]:
    """Document id -> the docID the model generates, for ``docids`` in :data:`DOCIDS`."""
    choice(*DOCIDS)("custom_docids", docids)
    texts: dict[str, str] = {}
    for q in queries:
        for d in q["relevant"] + ([q["negative"]] if q["negative"] else []):
            if texts.setdefault(d["id"], d["text"]) != d["text"]:
                raise CustomDataError(
                    f"document id {d['id']!r} has two different texts: {texts[d['id']]!r:.40} and {d['text']!r:.40}"
                )
    if docids == "id":
        return {i: i for i in texts}
    if docids == "text":
        shared = pd.Series(list(texts.values())).duplicated()
        if shared.any():
            text = list(texts.values())[int(np.flatnonzero(shared)[0])]
            raise CustomDataError(
                f"two documents share the text {text!r:.60}: as docIDs they would be one; use custom_docids id or semantic"
            )
        return dict(texts)
    from arrank.data import docids as dids
    from arrank.data import embedders

    ids = sorted(texts)
    _, T = embedders.embed("tfidf", [q["query"] for q in queries], [texts[i] for i in ids], [q["query_id"] for q in queries], ids, seed=seed)  # fmt: skip
    n_components = max(2, min(100, len(ids) // 2))
    with warnings.catch_warnings():  # OMP on a few short texts stops early on dependent atoms; the codes stand
        warnings.filterwarnings("ignore", "Orthogonal matching pursuit ended prematurely", RuntimeWarning)
        sparse, _ = dids.sparse_docids(T, n_components, min(3, n_components), seed)
    return dict(zip(ids, dids.disambiguate_docids(sparse)))


def trec_token(value: str) -> str:
    """An id as written in TREC files: as it is, each whitespace character as its percent code
    (UTF-8; a space is ``%20``), since TREC files split their fields on whitespace."""
    return re.sub(r"\s", lambda m: quote(m.group()), value)


Ids = tuple[dict[str, str], dict[str, str]]  # the TREC files' ids: query -> query_id, docID -> document id


def trec_ids(queries: list[dict[str, Any]], names: dict[str, str]) -> Ids:
    """The ids of the TREC files (``arrank.evaluation.trec``) of one's own data: the ranking table's
    query -> its ``query_id``, the docID -> its document ``id`` (``names``: :func:`docid_map`), each a
    :func:`trec_token`, so one's own qrels join; two ids written as one token are refused."""
    qids = {_key(q): trec_token(q["query_id"]) for q in queries}
    docnos = {name: trec_token(i) for i, name in names.items()}
    for what, tokens in (("query_id", list(qids.values())), ("document id", list(docnos.values()))):
        if len(set(tokens)) < len(tokens):
            twice = pd.Series(tokens)[pd.Series(tokens).duplicated()].iloc[0]
            raise CustomDataError(f"two {what}s are the TREC token {shown(twice)} (whitespace as %XX): rename one")
    return qids, docnos


def _key(q: dict[str, Any]) -> str:
    """A query's ``query`` in the ranking table: ``query_id: query``, or the query where both are one."""
    return q["query"] if q["query"] == q["query_id"] else f"{q['query_id']}: {q['query']}"


def custom_frame(path: Path, template: str, seed: int, n_eval: int, docids: str = "id") -> tuple[pd.DataFrame, Ids]:
    """The ranking table of the JSONL file at ``path`` (module docstring): docIDs by ``docids``, the
    Appendix D.2 prompt ``template`` ("esci" or "esci_short"), ``n_eval`` held-out queries drawn
    with ``seed`` where the file gives no splits; and its TREC ids (:func:`trec_ids`, built here with
    the docIDs, so that ids TREC files cannot tell apart are refused before training)."""
    queries = read_queries(path, n_eval=n_eval)
    names = docid_map(queries, docids, seed)
    ids = trec_ids(queries, names)
    if queries[0]["split"] is None:
        held = set(np.random.default_rng(seed).choice(len(queries), size=n_eval, replace=False).tolist())
        splits = ["eval" if i in held else "train" for i in range(len(queries))]
    else:  # the file's own split: its first n_eval eval queries are held out, the other eval ones dropped
        evals = set([i for i, q in enumerate(queries) if q["split"] == "eval"][:n_eval])
        splits = [q["split"] if q["split"] == "train" or i in evals else None for i, q in enumerate(queries)]
    rows = []
    for q, split in zip(queries, splits):
        if split is None:
            continue
        items = [(names[d["id"]], d["text"]) for d in q["relevant"] + ([q["negative"]] if q["negative"] else [])]
        prompt = prompts.esci_prompt(q["query"], items, prompts.query_rng(seed, q["query"]), template)
        negative = names[q["negative"]["id"]] if q["negative"] else None
        relevant = [names[d["id"]] for d in q["relevant"]]
        rows.append(dict(query=_key(q), prompt=prompt, relevant=relevant, n_relevant=len(relevant), negative=negative,
                         split=split))  # fmt: skip
    return pd.DataFrame(rows), ids
