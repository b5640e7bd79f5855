"""The prompts of Appendix D, word for word."""

import numpy as np
import pytest

from arrank.data import prompts

DEER_HYPERNYMS = [
    "object.n.01",
    "whole.n.02",
    "chordate.n.01",
    "physical_entity.n.01",
    "mammal.n.01",
    "ruminant.n.01",
    "vertebrate.n.01",
    "placental.n.01",
    "ungulate.n.01",
    "even-toed_ungulate.n.01",
    "animal.n.01",
    "entity.n.01",
    "living_thing.n.01",
    "organism.n.01",
]


IDENTITY = type("Keep", (), {"permutation": staticmethod(lambda n: np.arange(n))})()  # keeps the given order


def test_wordnet_prompt_is_appendix_d1():
    text = prompts.wordnet_prompt("deer.n.01", DEER_HYPERNYMS, IDENTITY)
    assert text == (
        "You are a helpful assistant that can answer questions about WordNet. You are given a noun synset "
        "from WordNet and a set of hypernyms for that synset. The hypernyms are separated by the delimiter "
        "'||'. Your task is to output the most specific hypernym for the synset out of the given set of "
        "hypernyms.\n\nSynset:\ndeer.n.01\n\nHypernyms:\nobject.n.01 || whole.n.02 || chordate.n.01 || "
        "physical_entity.n.01 || mammal.n.01 || ruminant.n.01 || vertebrate.n.01 || placental.n.01 || "
        "ungulate.n.01 || even-toed_ungulate.n.01 || animal.n.01 || entity.n.01 || living_thing.n.01 || "
        "organism.n.01\n\nMost specific hypernym:"
    )


def test_shuffle_is_seeded_per_query_and_keeps_every_docid():
    a = prompts.wordnet_prompt("deer.n.01", DEER_HYPERNYMS, prompts.query_rng(0, "deer.n.01"))
    b = prompts.wordnet_prompt("deer.n.01", DEER_HYPERNYMS, prompts.query_rng(0, "deer.n.01"))
    c = prompts.wordnet_prompt("deer.n.01", DEER_HYPERNYMS, prompts.query_rng(1, "deer.n.01"))
    assert a == b != c
    listed = a.split("Hypernyms:\n")[1].split("\n\n")[0].split(" || ")
    assert sorted(listed) == sorted(DEER_HYPERNYMS) and listed != DEER_HYPERNYMS


def test_esci_prompt_brackets_docids():
    items = [("25,36,39", "Syntech USB C to USB Adapter"), ("36,25,31", "USB C Cable, 2Pack 3ft 5ft")]
    text = prompts.esci_prompt("aukey usb c", items, prompts.query_rng(0, "aukey usb c"))
    assert text.startswith(
        "You are a helpful assistant that can answer questions about the ESCI shopping "
        "queries dataset. You are given a query and a list of product titles"
    )
    assert "Query:\naukey usb c\n\nProduct titles:\n" in text and text.endswith("\n\nMost relevant product title:")
    listed = text.split("Product titles:\n")[1].split("\n\n")[0].split(" || ")
    assert sorted(listed) == ["[25,36,39] Syntech USB C to USB Adapter", "[36,25,31] USB C Cable, 2Pack 3ft 5ft"]


def test_prompt_errors():
    with pytest.raises(ValueError, match="unknown prompt template 'long'; choose one of"):
        prompts.template("long")
    with pytest.raises(ValueError, match="has no documents"):
        prompts.wordnet_prompt("entity.n.01", [], prompts.query_rng(0, "x"))


def test_esci_prompt_is_appendix_d2_whole():
    """Appendix D.2 read as plain text: the instructions, then each title after its docID in square
    brackets, joined by ' || ', between the Query and Product titles labels and the closing label."""
    items = [("25,36,39", "Syntech USB C to USB Adapter"), ("36,25,31", "USB C Cable, 2Pack 3ft 5ft")]
    assert prompts.esci_prompt("aukey usb c", items, IDENTITY) == (
        "You are a helpful assistant that can answer questions about the ESCI shopping queries dataset. "
        "You are given a query and a list of product titles for that query. Each product title is preceded "
        "by its docID in square brackets, and the product titles are separated by the delimiter '||'. Your "
        "task is to generate the docID of the most relevant product title to the query out of the given set "
        "of product titles and their docIDs.\n\nQuery:\naukey usb c\n\nProduct titles:\n"
        "[25,36,39] Syntech USB C to USB Adapter || [36,25,31] USB C Cable, 2Pack 3ft 5ft\n\n"
        "Most relevant product title:"
    )
    assert prompts.esci_prompt("aukey usb c", items, IDENTITY, "esci_short") == (
        "query: aukey usb c titles: [25,36,39] Syntech USB C to USB Adapter || [36,25,31] USB C Cable, 2Pack 3ft 5ft"
        " answer:"
    )
    assert prompts.wordnet_prompt("deer.n.01", DEER_HYPERNYMS[:2], IDENTITY, "wordnet_short") == (
        "synset: deer.n.01 hypernyms: object.n.01 || whole.n.02 answer:"
    )


def test_the_shuffle_is_keyed_by_the_query_too():
    """Section 5.1 shuffles each query's docIDs: with one seed, two queries get their own orders."""
    orders = {q: prompts.query_rng(0, q).permutation(14).tolist() for q in ("deer.n.01", "elk.n.01")}
    assert orders["deer.n.01"] != orders["elk.n.01"]
    assert orders["deer.n.01"] == prompts.query_rng(0, "deer.n.01").permutation(14).tolist()
