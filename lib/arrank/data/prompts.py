"""The augmented query q-bar of section 5.1 ("Task Setup"): prompt(q, shuffle({d_1, ..., d_nq})).

``WORDNET_TEMPLATE`` and ``ESCI_TEMPLATE`` are Appendix D.1 and D.2 word for word, typesetting read
as plain text (``\\vspace`` a blank line, a label line followed by a line break, ``\\_`` is ``_``).
The docIDs are shuffled with a seeded generator and joined by `` || ``; an ESCI title follows its
docID in square brackets. ``*_short`` templates: the same content in few tokens, for tiny models."""

from __future__ import annotations

import zlib
from typing import Sequence

import numpy as np

SEPARATOR = " || "

WORDNET_TEMPLATE = (
    "You are a helpful assistant that can answer questions about WordNet. You are given a noun "
    "synset from WordNet and a set of hypernyms for that synset. The hypernyms are separated by the "
    "delimiter '||'. Your task is to output the most specific hypernym for the synset out of the "
    "given set of hypernyms.\n\n"
    "Synset:\n{query}\n\n"
    "Hypernyms:\n{documents}\n\n"
    "Most specific hypernym:"
)

ESCI_TEMPLATE = (
    "You are a helpful assistant that can answer questions about the ESCI shopping queries dataset. "
    "You are given a query and a list of product titles for that query. Each product title is "
    "preceded by its docID in square brackets, and the product titles are separated by the delimiter "
    "'||'. Your task is to generate the docID of the most relevant product title to the query out of "
    "the given set of product titles and their docIDs.\n\n"
    "Query:\n{query}\n\n"
    "Product titles:\n{documents}\n\n"
    "Most relevant product title:"
)

TEMPLATES: dict[str, str] = {
    "wordnet": WORDNET_TEMPLATE,
    "wordnet_short": "synset: {query} hypernyms: {documents} answer:",
    "esci": ESCI_TEMPLATE,
    "esci_short": "query: {query} titles: {documents} answer:",
}


def template(name: str) -> str:
    """A template by name, with a clear error listing the names allowed."""
    if name not in TEMPLATES:
        raise ValueError(f"unknown prompt template {name!r}; choose one of {sorted(TEMPLATES)}")
    return TEMPLATES[name]


def query_rng(seed: int, key: str) -> np.random.Generator:
    """A generator seeded by (seed, key): independent of the order of queries and of PYTHONHASHSEED."""
    return np.random.default_rng([seed, zlib.crc32(key.encode("utf-8"))])


def shuffled(items: Sequence, rng: np.random.Generator) -> list:
    """The items in a random order drawn from ``rng``."""
    return [items[i] for i in rng.permutation(len(items))]


def _fill(tpl: str, query: str, parts: list[str]) -> str:
    if not parts:
        raise ValueError(f"query {query!r} has no documents to put in the prompt")
    return tpl.format(query=query, documents=SEPARATOR.join(parts))


def wordnet_prompt(query: str, docids: Sequence[str], rng: np.random.Generator, name: str = "wordnet") -> str:
    """Appendix D.1: the query synset and its hypernyms (docIDs), shuffled, joined by ' || '."""
    return _fill(template(name), query, shuffled(list(docids), rng))


def esci_prompt(query: str, items: Sequence[tuple[str, str]], rng: np.random.Generator, name: str = "esci") -> str:
    """Appendix D.2: ``[docid] title`` for each (docid, title), shuffled, joined by ' || '."""
    return _fill(template(name), query, [f"[{d}] {t}" for d, t in shuffled(list(items), rng)])
