"""The WordNet ranking dataset of section 5.1 (paper), Appendix C statistics and D.1 prompts."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from arrank.data import cache as dataset_cache
from arrank.data import wordnet as W

# section 5.1's deer example, with WordNet's suffixes
DEER = [
    "ruminant.n.01",
    "even-toed_ungulate.n.01",
    "ungulate.n.01",
    "placental.n.01",
    "mammal.n.01",
    "vertebrate.n.01",
    "chordate.n.01",
    "animal.n.01",
    "organism.n.01",
    "living_thing.n.01",
    "whole.n.02",
    "object.n.01",
    "physical_entity.n.01",
]
# Appendix D.1, first paragraph, word for word
D1_OPENING = (
    "You are a helpful assistant that can answer questions about WordNet. You are given a noun synset "
    "from WordNet and a set of hypernyms for that synset. The hypernyms are separated by the delimiter "
    "'||'. Your task is to output the most specific hypernym for the synset out of the given set of "
    "hypernyms."
)
SMALL = dict(subtree="canine.n.02", n_eval=20, cache=False)


def dataset_fingerprint(df):
    """SHA-256 of the rows (every column, in order): equal datasets, equal fingerprints."""
    import hashlib
    import json

    from arrank.data.wordnet import QUERY_COLUMNS

    digest = hashlib.sha256()
    for row in df[QUERY_COLUMNS].itertuples(index=False):
        digest.update(json.dumps([list(v) if k == 1 else v for k, v in enumerate(row)], default=int).encode())
    return digest.hexdigest()


HASHSEED_BUILD = inspect.getsource(dataset_fingerprint) + (
    "from arrank.data.wordnet import build_wordnet_dataset as b\n"
    "print(dataset_fingerprint(b(subtree='animal.n.01', n_eval=400, cache=False)))"
)


def prompt_docids(prompt: str) -> list[str]:
    return prompt.split("Hypernyms:\n")[1].split("\n\n")[0].split(" || ")


@pytest.fixture(scope="module", autouse=True)
def hashseed_runs():
    """Two processes with different PYTHONHASHSEED building the animal subtree, started first so
    that they run while the other tests do."""
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", HASHSEED_BUILD],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        for seed in ("1", "2")
    ]
    yield runs
    for run in runs:
        if run.poll() is None:
            run.kill()
            run.communicate()


@pytest.fixture(scope="module")
def full():
    """All of WordNet's nouns (default parameters), built once. Its speed is measured by
    benchmarks/wordnet_build.py, not asserted here (timed tests flake)."""
    return W.build_wordnet_dataset(cache=False)


@pytest.fixture(scope="module")
def animal():
    return W.build_wordnet_dataset(subtree="animal.n.01", n_eval=400, cache=False)


def test_deer_ranked_hypernyms_match_the_paper():
    assert W.ranked_hypernyms("deer.n.01") == DEER + ["entity.n.01"]
    assert W.ranked_hypernyms("deer.n.01", include_root=False) == DEER
    for rule in W.PATH_RULES:  # deer has a single hypernym path: every rule agrees
        assert W.ranked_hypernyms("deer.n.01", rule) == DEER + ["entity.n.01"]


def test_path_rules_on_a_synset_with_two_paths():
    top = [
        "animal.n.01",
        "organism.n.01",
        "living_thing.n.01",
        "whole.n.02",
        "object.n.01",
        "physical_entity.n.01",
        "entity.n.01",
    ]
    canine = ["canine.n.02", "carnivore.n.01", "placental.n.01", "mammal.n.01", "vertebrate.n.01", "chordate.n.01"]
    assert W.ranked_hypernyms("dog.n.01", "longest") == canine + top
    assert W.ranked_hypernyms("dog.n.01", "shortest") == ["domestic_animal.n.01"] + top
    assert W.ranked_hypernyms("dog.n.01", "union") == canine[:1] + ["domestic_animal.n.01"] + canine[1:] + top
    assert W.ranked_hypernyms("dog.n.01", subtree="animal.n.01") == canine
    assert W.ranked_hypernyms("dog.n.01", subtree="animal.n.01", subtree_root_relevant=True) == canine + ["animal.n.01"]
    for name in ("animal.n.01", "car.n.01"):  # the top, and a synset outside the subtree
        with pytest.raises(ValueError, match=f"'{name}' is not a query of the hierarchy below animal.n.01"):
            W.ranked_hypernyms(name, subtree="animal.n.01")


def test_noun_parents_are_nltks_hypernyms_and_are_kept_in_the_cache():
    wn, parents = W.load_wordnet(), W.noun_parents()
    assert len(parents) == 82115 and parents["entity.n.01"] == ()
    for name in ("dog.n.01", "paris.n.01", "deer.n.01", "water.n.06", "abstraction.n.06"):
        synset = wn.synset(name)
        assert parents[name] == tuple(sorted(p.name() for p in synset.hypernyms() + synset.instance_hypernyms()))
    assert parents["dog.n.01"] == ("canine.n.02", "domestic_animal.n.01")  # two hypernyms
    assert W.noun_cache_path().parent == W.paths.CACHE
    assert {k: tuple(v) for k, v in json.loads(W.noun_cache_path().read_text()).items()} == parents


@pytest.mark.parametrize("damage", ["absent", "truncated", "not a mapping", "no root"])
def test_a_damaged_noun_cache_is_built_again_and_then_read(tmp_path, monkeypatch, damage):
    """The noun cache is derived data: absent or damaged, it is built again (here from a stand-in for
    NLTK's slow read), written whole, and read by the next process instead of WordNet's files."""
    monkeypatch.setattr(W.paths, "CACHE", tmp_path / "cache")
    (tmp_path / "cache").mkdir()
    path, reads = W.noun_cache_path(), []
    if damage != "absent":
        path.write_text(
            {"truncated": '{"entity.n.01": [', "not a mapping": '["entity.n.01"]'}.get(damage, '{"a": "bc"}')
        )
    small = {"entity.n.01": [], "thing.n.12": ["entity.n.01"]}
    monkeypatch.setattr(W, "nltk_noun_parents", lambda: reads.append(1) or small)
    W.noun_parents.cache_clear()
    try:
        assert W.noun_parents() == {"entity.n.01": (), "thing.n.12": ("entity.n.01",)} and reads == [1]
        assert json.loads(path.read_text()) == small and [p.name for p in path.parent.iterdir()] == [path.name]
        W.noun_parents.cache_clear()
        assert W.noun_parents()["thing.n.12"] == ("entity.n.01",) and reads == [1]  # read, not built
    finally:
        W.noun_parents.cache_clear()


def test_an_unwritable_noun_cache_is_said_in_one_line_and_the_hierarchy_still_read(tmp_path, monkeypatch, capsys):
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setattr(W.paths, "CACHE", tmp_path / "file" / "cache")
    monkeypatch.setattr(W, "nltk_noun_parents", lambda: {"entity.n.01": []})
    W.noun_parents.cache_clear()
    try:
        assert W.noun_parents() == {"entity.n.01": ()}
    finally:
        W.noun_parents.cache_clear()
    said = capsys.readouterr().out.splitlines()
    assert len(said) == 1 and said[0].endswith("cannot be written (Not a directory): each process reads WordNet again")


def test_nltks_zip_download_keys_the_noun_cache_by_the_zip(tmp_path, monkeypatch):
    """NLTK's own download is ``wordnet.zip``, found as ``.../wordnet.zip/wordnet``: the zip is hashed."""
    (tmp_path / "wordnet.zip").write_bytes(b"PK zip bytes")
    monkeypatch.setattr(W, "wordnet_root", lambda: tmp_path / "wordnet.zip" / "wordnet")
    digest = __import__("hashlib").sha256(b"PK zip bytes").hexdigest()[:16]
    assert W.noun_cache_path().name == f"wordnet_nouns-{digest}-v{W.FORMAT_VERSION}.json"


def test_a_subtree_that_is_not_text_is_named():
    with pytest.raises(ValueError, match=r"unknown synset \['dog.n.01'\] for subtree"):
        W._check_noun(["dog.n.01"])


def test_rules_agree_with_nltk_paths_whatever_their_order():
    wn = W.load_wordnet()
    for name in [
        "person.n.01",
        "dog.n.01",
        "musical_performance.n.01",
        "amphibious_landing.n.01",
        "water.n.06",
        "paris.n.01",
        "kitten.n.01",
    ]:
        paths = [tuple(s.name() for s in reversed(p)) for p in wn.synset(name).hypernym_paths()]
        assert W.ranked_hypernyms(name, "longest") == list(min(paths, key=lambda t: (-len(t), t))[1:])
        assert W.ranked_hypernyms(name, "shortest") == list(min(paths, key=lambda t: (len(t), t))[1:])
        union = W.ranked_hypernyms(name, "union")
        assert sorted(union) == sorted({s for p in paths for s in p[1:]})
        for p in paths:  # the union's order never ranks a hypernym before one of its hyponyms
            assert [s for s in union if s in p] == list(p[1:])


def test_full_build_counts_and_views(full):
    assert list(full.columns) == W.QUERY_COLUMNS
    assert len(full) == 82114 and "entity.n.01" not in set(full["query"])  # every noun but the root
    assert full["depth"].min() == 1 and int(full["n_relevant"].sum()) == 701954
    deer = full.set_index("query").loc["deer.n.01"]
    assert deer["relevant"] == DEER + ["entity.n.01"] and deer["depth"] == 14
    top1, items = W.top1_view(full), W.per_docid_view(full)
    assert len(top1) == 82114 and len(items) == 701954 and list(items.columns) == W.ITEM_COLUMNS
    assert (top1["docid"] == full["relevant"].str[0]).all() and (top1["rank"] == 1).all()
    assert items.groupby("query", sort=False)["rank"].max().tolist() == full["n_relevant"].tolist()
    assert (full["split"] == "eval").sum() == 5000


def test_eval_queries_never_in_training(full, animal):
    for df in (full, animal):
        held_out = set(df.loc[df["split"] == "eval", "query"])
        assert held_out
        for view in (W.top1_view(df), W.per_docid_view(df)):
            assert held_out.isdisjoint(view.loc[view["split"] == "train", "query"])
            assert set(view.loc[view["split"] == "eval", "query"]) == held_out


def test_negatives_are_never_relevant_nor_the_query(full, animal):
    wn = W.load_wordnet()
    for df in (full, animal):
        for q, rel, neg in zip(df["query"], df["relevant"], df["negative"]):
            assert neg != q and neg not in rel
    ancestors = {q: {a.name() for p in wn.synset(q).hypernym_paths() for a in p} for q in full["query"].iloc[::500]}
    assert all(n not in ancestors[q] for q, n in zip(full["query"], full["negative"]) if q in ancestors)
    inside = set(W.noun_hierarchy("animal.n.01").nodes)
    assert set(animal["negative"]) <= inside  # negatives from the subtree by default
    everywhere = W.build_wordnet_dataset(subtree="animal.n.01", n_eval=400, negative_pool="all", cache=False)
    assert not set(everywhere["negative"]) <= inside


def test_prompts_hold_exactly_the_shuffled_relevant_docids(full, animal):
    for df in (animal, full.iloc[::97]):
        for q, rel, prompt in zip(df["query"], df["relevant"], df["prompt"]):
            assert prompt.startswith(D1_OPENING + "\n\nSynset:\n" + q + "\n\nHypernyms:\n")
            assert prompt.endswith("\n\nMost specific hypernym:")
            assert sorted(prompt_docids(prompt)) == sorted(rel) and " || ".join(prompt_docids(prompt)) in prompt
    shuffled = sum(prompt_docids(p) != r for p, r in zip(animal["prompt"], animal["relevant"]) if len(r) > 3)
    assert shuffled > 0.9 * (animal["n_relevant"] > 3).sum()
    short = W.build_wordnet_dataset(template="wordnet_short", **SMALL)
    assert short["prompt"].str.startswith("synset: ").all()


def test_subtree_queries_and_root_handling(animal):
    inside = set(W.noun_hierarchy("animal.n.01").nodes)
    assert "animal.n.01" not in set(animal["query"]) and set(animal["query"]) <= inside
    assert all(set(r) <= inside - {"animal.n.01"} for r in animal["relevant"])
    with_root = W.build_wordnet_dataset(subtree="animal.n.01", n_eval=400, cache=False, subtree_root_relevant=True)
    assert all(r[-1] == "animal.n.01" for r in with_root["relevant"])
    children = set(with_root.loc[with_root["n_relevant"] == 1, "query"])  # now queries too
    assert children == {c for c, ps in W.noun_hierarchy("animal.n.01").parents.items() if ps == ("animal.n.01",)}
    rest = with_root[~with_root["query"].isin(children)]
    assert [r[:-1] for r in rest["relevant"]] == animal["relevant"].tolist()
    for q, r in zip(animal["query"].iloc[::40], animal["relevant"].iloc[::40]):  # the table = one lookup
        assert W.ranked_hypernyms(q, subtree="animal.n.01") == r


def test_filters_min_relevant_and_max_queries(animal):
    five = W.build_wordnet_dataset(subtree="animal.n.01", min_relevant=5, n_eval=0.1, cache=False)
    assert (five["n_relevant"] >= 5).all()
    assert set(five["query"]) == set(animal.loc[animal["n_relevant"] >= 5, "query"])
    assert (five["split"] == "eval").sum() == round(0.1 * len(five))
    some = W.build_wordnet_dataset(subtree="animal.n.01", max_queries=300, n_eval=30, cache=False)
    assert len(some) == 300 and set(some["query"]) <= set(animal["query"])
    assert some["query"].is_monotonic_increasing


def test_seeds_make_builds_reproducible():
    a, b = W.build_wordnet_dataset(seed=3, **SMALL), W.build_wordnet_dataset(seed=3, **SMALL)
    pd.testing.assert_frame_equal(a, b)
    c = W.build_wordnet_dataset(seed=4, **SMALL)
    assert a["query"].tolist() == c["query"].tolist() and a["relevant"].tolist() == c["relevant"].tolist()
    assert (a["negative"] != c["negative"]).any() and (a["split"] != c["split"]).any()
    assert (a["prompt"] != c["prompt"]).any()


def test_same_dataset_whatever_the_pythonhashseed(hashseed_runs, animal):
    prints = [run.communicate(timeout=120)[0].strip() for run in hashseed_runs]
    assert all(run.returncode == 0 for run in hashseed_runs)
    assert prints[0] == prints[1] == dataset_fingerprint(animal)


def test_cache_is_written_once_and_reused(tmp_path, monkeypatch):
    cache_dir = tmp_path / "wn"
    built = W.build_wordnet_dataset(subtree="canine.n.02", n_eval=20, cache_dir=cache_dir)
    folder = cache_dir / built.attrs["hash"]
    assert sorted(p.name for p in cache_dir.iterdir()) == [folder.name]
    assert sorted(p.name for p in folder.iterdir()) == ["manifest.json", "params.json", "queries.parquet"]

    def no_build(params):
        raise AssertionError("the cached dataset should have been read")

    monkeypatch.setattr(W, "_build", no_build)
    again = W.build_wordnet_dataset(subtree="canine.n.02", n_eval=20, cache_dir=cache_dir)
    pd.testing.assert_frame_equal(built, again)
    assert dataset_fingerprint(built) == dataset_fingerprint(again)


@pytest.mark.parametrize("damage", ["truncated", "garbled", "no params.json"])
def test_a_damaged_cache_is_named_set_aside_and_built_again(tmp_path, capsys, damage):
    """A truncated queries.parquet gave an ArrowInvalid traceback naming nothing. The
    cache is derived from WordNet: it is named in one line, set aside (kept) and built again."""
    cache_dir = tmp_path / "wn"
    built = W.build_wordnet_dataset(subtree="canine.n.02", n_eval=20, cache_dir=cache_dir)
    folder = cache_dir / built.attrs["hash"]
    table = folder / "queries.parquet"
    raw = table.read_bytes()
    if damage == "truncated":
        table.write_bytes(raw[: len(raw) // 2])
    elif damage == "garbled":  # the same size, other bytes: only the manifest's hash tells
        table.write_bytes(raw[:100] + bytes(200) + raw[300:])
    else:
        (folder / "params.json").unlink()
    capsys.readouterr()
    again = W.build_wordnet_dataset(subtree="canine.n.02", n_eval=20, cache_dir=cache_dir)
    pd.testing.assert_frame_equal(built, again)
    said = capsys.readouterr().out.splitlines()
    why = {
        "truncated": "queries.parquet is ",
        "garbled": "queries.parquet does not match its sha256",
        "no params.json": "it has no params.json",
    }[damage]
    assert len(said) == 1 and said[0].startswith(f"{folder} is unusable: {why}")
    assert "it is derived data and is built again now; set aside as broken-" in said[0]
    broken = [p for p in cache_dir.iterdir() if p.name.startswith(f"broken-{folder.name}-")]
    assert len(broken) == 1 and (folder / "params.json").is_file()  # kept aside; the rebuilt one in place


def test_failure_mid_build_leaves_no_folder(tmp_path, monkeypatch):
    cache_dir = tmp_path / "wn"

    def disk_full(path, payload):
        raise OSError("disk full")

    monkeypatch.setattr(dataset_cache, "write_json_atomic", disk_full)  # after queries.parquet was written
    with pytest.raises(OSError, match="disk full"):
        W.build_wordnet_dataset(subtree="canine.n.02", n_eval=20, cache_dir=cache_dir)
    assert list(cache_dir.iterdir()) == []  # neither the hash's folder nor a temporary one


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(subtree="no_such_thing.n.01"), "unknown synset 'no_such_thing.n.01'"),
        (dict(subtree="run.v.01"), "unknown synset 'run.v.01'"),
        (dict(subtree="domestic_dog.n.01"), "synset named 'dog.n.01'"),
        (dict(subtree="canine.n.02", min_relevant=40), "no queries left after filtering.*min_relevant=40"),
        (dict(subtree="puppy.n.01"), "no queries left after filtering.*has 0 queries"),
        (dict(subtree="canine.n.02"), "n_eval=5000 leaves no training queries: only"),
        (dict(subtree="canine.n.02", n_eval=20, template="nope"), "unknown prompt template 'nope'"),
        (dict(subtree="canine.n.02", negative_pool="near"), "unknown negative_pool 'near'"),
        # abalone.n.01's one hyponym: the pool holds the query and its hypernym only (refused, not drawn forever)
        (
            dict(subtree="abalone.n.01", n_eval=0, subtree_root_relevant=True),
            "no negative can be drawn for 'ormer.n.01'",
        ),
    ],
)
def test_bad_input_is_a_clear_error_and_leaves_nothing(tmp_path, kwargs, message):
    cache_dir = tmp_path / "wn"
    with pytest.raises(ValueError, match=message):
        W.build_wordnet_dataset(cache_dir=cache_dir, **kwargs)
    assert not cache_dir.exists() or list(cache_dir.iterdir()) == []


def test_build_choices_are_refused_at_the_edge():
    """path_rule, n_eval, min_relevant, max_queries and template are checked once, by notebook 03's
    parameters (the runner before a kernel starts), naming the value and what is allowed."""
    from arrank.common.params import ParamError
    from arrank.workbook import run

    for name, value, message in [
        ("n_eval", "1.5", r"n_eval=1.5 must be an integer in \[1, 100000\]"),
        (
            "path_rule",
            "deepest",
            r"path_rule='deepest' is not allowed; choose one of \['longest', 'shortest', 'union'\]",
        ),
        ("min_relevant", "0", r"min_relevant=0 is out of range"),
        ("max_queries", "-1", r"max_queries=-1 is out of range"),
        ("template", "nope", r"template='nope' is not allowed; choose one of \['wordnet', 'wordnet_short'\]"),
    ]:
        with pytest.raises(ParamError, match=message):
            run.prepare("03", {name: value})


def test_statistics_for_appendix_c(animal):
    counts = W.query_distribution(animal, "n_relevant")
    assert counts["queries"].sum() == len(animal) and counts["fraction"].sum() == pytest.approx(1)
    assert counts["n_relevant"].is_monotonic_increasing
    depths = W.query_distribution(animal, "depth")
    assert depths["queries"].sum() == len(animal) and depths["depth"].min() >= 1

    def tokenizer(text, add_special_tokens=True):  # a stand-in for a transformers tokenizer
        assert add_special_tokens is False
        return {"input_ids": text.replace("_", " _ ").replace(".", " . ").split()}

    lengths = W.docid_token_lengths(animal, tokenizer)
    row = lengths.set_index("docid").loc["even-toed_ungulate.n.01"]
    assert row["n_tokens"] == 7 and row["occurrences"] == (
        animal["relevant"].map(lambda r: "even-toed_ungulate.n.01" in r).sum()
    )
    assert lengths["occurrences"].sum() == animal["n_relevant"].sum()
    dist = W.token_length_distribution(lengths)
    assert dist["docids"].sum() == len(lengths) and dist["items"].sum() == animal["n_relevant"].sum()
    summary = W.dataset_summary(animal)
    assert summary.loc["all", "queries"] == len(animal) and summary.loc["eval", "queries"] == 400


def test_the_dataset_notebook_says_what_matches_the_paper():
    m = {
        "deer_matches_paper": True,
        "eval_queries_in_training": 0,
        "n_eval_queries": 300,
        "n_queries": 3248,
        "n_items_top1": 3248,
        "n_items_per_docid": 30000,
    }
    rows = W.dataset_findings(m, {"subtree": "animal.n.01", "min_relevant": 5, "max_queries": 0})
    assert [r.holds for r in rows] == [True, True, None]  # a subtree is not the paper's scale
    whole = W.dataset_findings(
        {**m, "n_queries": 82114, "n_items_per_docid": 701_000}, {"subtree": "", "min_relevant": 1, "max_queries": 0}
    )
    assert whole[2].holds is True
    assert (
        W.dataset_findings(
            {**m, "n_queries": 82114, "n_items_per_docid": 400_000},
            {"subtree": "", "min_relevant": 1, "max_queries": 0},
        )[2].holds
        is False
    )


def test_an_unknown_path_rule_is_refused_not_read_as_shortest():
    """A direct call with a path rule the notebook's rules would refuse is refused here too."""
    with pytest.raises(
        ValueError, match=r"path_rule='deepest' is not allowed; choose one of \['longest', 'shortest', 'union'\]"
    ):
        W.ranked_hypernyms("dog.n.01", "deepest")


def test_longest_path_ties_go_to_the_smallest_names_read_upwards():
    """dereliction.n.02 reaches act.n.02 by two paths of three links, through negligence.n.01 and through
    wrongdoing.n.02; docs/design.md "Datasets": ties by the smallest tuple of names read upwards, so
    negligence's path (compared from the query up, not from the top down, where activity < nonaccomplishment)."""
    kept = ["negligence.n.01", "nonaccomplishment.n.01"]
    assert W.ranked_hypernyms("dereliction.n.02", subtree="act.n.02") == kept
    assert W.ranked_hypernyms("dereliction.n.02", "shortest", subtree="act.n.02") == kept


def test_a_querys_depth_counts_the_links_of_its_rules_path(animal):
    """dog.n.01 below animal.n.01: seven links through canine.n.02 (canine, carnivore, placental, mammal,
    vertebrate, chordate, animal), two through domestic_animal.n.01. ``union`` ranks the eight synsets of
    both paths, and its depth is the longest distance, 7, not the count of its relevant docIDs."""
    depths = {}
    for rule in W.PATH_RULES:  # the animal fixture is the longest rule's
        df = (
            animal
            if rule == "longest"
            else W.build_wordnet_dataset(rule, subtree="animal.n.01", n_eval=400, cache=False)
        )
        dog = df.set_index("query").loc["dog.n.01"]
        depths[rule] = (int(dog["depth"]), int(dog["n_relevant"]))
    assert depths == {"longest": (7, 6), "shortest": (2, 1), "union": (7, 7)}


def test_max_queries_is_a_seeded_sample_not_the_first_names():
    """max_queries draws its queries by seed from all that pass the filters (then sorted by name)."""
    names = W.build_wordnet_dataset(subtree="canine.n.02", n_eval=1, cache=False)["query"].tolist()
    picks = [
        W.build_wordnet_dataset(subtree="canine.n.02", max_queries=20, n_eval=1, seed=s, cache=False)["query"].tolist()
        for s in (0, 1)
    ]
    assert all(len(p) == 20 and set(p) <= set(names) and p == sorted(p) for p in picks)
    assert picks[0] != names[:20] and picks[0] != picks[1]


def test_n_eval_must_leave_a_training_query():
    """canine.n.02 has 216 queries: holding out 215 leaves one to train on; holding out 216 leaves none."""
    assert (W.build_wordnet_dataset(subtree="canine.n.02", n_eval=215, cache=False)["split"] == "train").sum() == 1
    with pytest.raises(ValueError, match="n_eval=216 leaves no training queries: only 216 queries pass the filters"):
        W.build_wordnet_dataset(subtree="canine.n.02", n_eval=216, cache=False)


def test_dataset_summary_counts_items_and_averages_per_split():
    """Appendix C's summary on three queries: train (2 and 3 relevant, depths 1 and 2), eval (5, depth 4)."""
    df = pd.DataFrame({"split": ["train", "eval", "train"], "n_relevant": [2, 5, 3], "depth": [1, 4, 2]})
    s = W.dataset_summary(df)
    assert s.loc["train"].tolist() == [2, 5, 2.5, 3, 1.5]
    assert s.loc["eval"].tolist() == [1, 5, 5.0, 5, 4.0]
    assert s.loc["all"].tolist() == pytest.approx([3, 10, 10 / 3, 5, 7 / 3])
    assert list(s.columns) == ["queries", "items", "mean_relevant", "max_relevant", "mean_depth"]
