"""arrank.data.custom: one's own ranking data (JSON Lines) as the workbook's ranking table, and its
bad input refused in one line naming file, line and field."""

from __future__ import annotations

import json

import pytest

from arrank.common import paths
from arrank.data import custom, ranking

EXAMPLE = "data/fixtures/custom/recipes.jsonl"


def test_the_example_becomes_a_ranking_table_with_each_docid_scheme():
    frames = {
        d: ranking.ranking_dataset("custom", "quick", 0, 8, None, data_path=EXAMPLE, custom_docids=d)
        for d in custom.DOCIDS
    }
    by_id = frames["id"]
    assert list(by_id.columns) == ranking.COLUMNS and len(by_id) == 36
    assert by_id["split"].value_counts().to_dict() == {"train": 28, "eval": 8}
    first = json.loads((paths.ROOT / EXAMPLE).read_text().splitlines()[0])
    row = by_id[by_id["query"] == "apple-desserts: apple desserts"].iloc[0]
    assert row["relevant"] == [d["id"] for d in first["relevant"]] and row["negative"] == first["negative"]["id"]
    assert row["prompt"].startswith("query: apple desserts titles: [") and "[r001] apple tart" in row["prompt"]
    text = frames["text"].set_index("query").loc["apple-desserts: apple desserts"]
    assert text["relevant"] == [d["text"] for d in first["relevant"]] and text["negative"] == "mushroom risotto"
    semantic = frames["semantic"]
    docids = {d for ds in semantic["relevant"] for d in ds}
    assert all(len(d.split(",")) >= 2 for d in docids)  # OMP atoms, "4,19,69"
    assert len(docids) == len({d for ds in by_id["relevant"] for d in ds})  # one docID per document
    assert frames["semantic"]["split"].tolist() == by_id["split"].tolist()  # the same held-out queries
    other = ranking.ranking_dataset("custom", "quick", 1, 8, None, data_path=EXAMPLE)
    assert other["split"].tolist() != by_id["split"].tolist()  # the data seed draws them


def test_the_committed_example_is_its_generators_output():
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_custom", paths.ROOT / "data/fixtures/make_custom_example.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    assert (paths.ROOT / EXAMPLE).read_text() == "".join(json.dumps(q) + "\n" for q in make.queries())


def test_the_files_own_split_holds_out_its_first_n_eval_eval_queries(tmp_path):
    lines = [json.loads(s) for s in (paths.ROOT / EXAMPLE).read_text().splitlines()[:6]]
    for i, q in enumerate(lines):
        q["split"] = "eval" if i % 2 else "train"
    path = tmp_path / "split.jsonl"
    path.write_text("\n".join(json.dumps(q) for q in lines) + "\n\n")
    df = ranking.ranking_dataset("custom", "pretrained", 0, 2, None, data_path=str(path))
    assert df["split"].tolist() == ["train", "eval", "train", "eval", "train"]  # the third eval query dropped
    assert df["prompt"].iloc[0].startswith("You are a helpful assistant")  # Appendix D.2 word for word (pretrained)


def test_a_file_whose_splits_are_all_train_is_refused_before_any_training(tmp_path):
    """Every query ``train``: 05 would train, then find nothing to evaluate. Every one ``eval`` is read
    (06 evaluates a model as loaded on them)."""
    lines = [json.loads(s) | {"split": "train"} for s in (paths.ROOT / EXAMPLE).read_text().splitlines()[:3]]
    path = tmp_path / "one.jsonl"
    path.write_text("\n".join(json.dumps(q) for q in lines))
    with pytest.raises(custom.CustomDataError, match=r"one.jsonl: every query's split is 'train'; give some 'eval'"):
        custom.read_queries(path, keep=False)
    path.write_text("\n".join(json.dumps(q | {"split": "eval"}) for q in lines))
    assert [q["split"] for q in custom.read_queries(path)] == ["eval"] * 3
    assert custom.read_queries(path, keep=False, n_eval=300) == []  # its own splits: n_eval over its 3 queries is fine


def test_the_runners_check_of_n_eval_counts_the_queries_it_does_not_keep():
    """``keep=False`` (the runner's check) keeps no query, yet counts the file's 36 against ``n_eval``."""
    assert custom.read_queries(paths.ROOT / EXAMPLE, keep=False, n_eval=35) == []
    with pytest.raises(custom.CustomDataError, match=r"n_eval=36 leaves none of the file's 36 queries to train"):
        custom.read_queries(paths.ROOT / EXAMPLE, keep=False, n_eval=36)


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", r"bad.jsonl:2: not valid JSON"),
        ('["a"]', r"bad.jsonl:2: must be a JSON object"),
        ('{"query": "x", "relevant": [{"id": "a", "text": "t"}]}', r"bad.jsonl:2: field 'query_id' must be"),
        ('{"query_id": "q", "query": "x", "relevant": []}', r"bad.jsonl:2: field 'relevant' must be a non-empty list"),
        ('{"query_id": "q", "query": "x", "relevant": [{"id": "a"}]}', r"bad.jsonl:2: relevant\[0\].text: must be"),
        ('{"query_id": "q", "query": "x", "relevant": [{"id": "a", "text": "t"}], "negative": {"id": "a", "text": "u"}}',
         r"bad.jsonl:2: field 'relevant'/'negative' lists a document id twice"),
        ('{"query_id": "q", "query": "x", "relevant": [{"id": "b", "text": "t"}], "split": "test"}',
         r"bad.jsonl:2: field 'split' is 'test'"),
        ('{"query_id": "q0", "query": "x", "relevant": [{"id": "b", "text": "t"}]}', r"bad.jsonl:2: field 'query_id' 'q0' repeats line 1"),
        ('{"query_id": "q", "query": "x", "relevant": [{"id": "b", "text": "t"}], "negative": {"id": "c", "text": "u"}}',
         r"bad.jsonl:1: field 'negative' is missing; give it on every line or on none"),
        ('{"query_id": "q", "query": "' + "x" * 4097 + '", "relevant": [{"id": "b", "text": "t"}]}',
         r"bad.jsonl:2: field 'query' has 4,097 characters, more than the 4,096 allowed"),
        ('{"query_id": "q", "query": "x", "relevant": [{"id": "b", "text": "' + "t" * 5000 + '"}]}',
         r"bad.jsonl:2: relevant\[0\].text: has 5,000 characters, more than the 4,096 allowed"),
        (json.dumps({"query_id": "q", "query": "x", "relevant": [{"id": i, "text": "t"} for i in range(20_000)]}),
         r"bad.jsonl:2: 20,000 relevant documents; a query has at most 1,000"),
        ('{"query_id": "q", "query": "\udcff"}', r"bad.jsonl:2: not UTF-8 text \(invalid start byte at byte 29 of the line\)"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_in_one_line_naming_file_line_and_field(tmp_path, line, message):
    good = {"query_id": "q0", "query": "apples", "relevant": [{"id": "a", "text": "apple tart"}]}
    path = tmp_path / "bad.jsonl"
    path.write_bytes((json.dumps(good) + "\n" + line + "\n").encode("utf-8", "surrogateescape"))
    with pytest.raises(custom.CustomDataError, match=message) as err:
        custom.read_queries(path)
    assert "\n" not in str(err.value)


def test_missing_file_missing_path_and_mismatched_options_are_refused(tmp_path):
    with pytest.raises(custom.CustomDataError, match=r"data_path='.*nowhere.jsonl': no such file"):
        ranking.ranking_dataset("custom", "quick", 0, 2, None, data_path=str(tmp_path / "nowhere.jsonl"))
    with pytest.raises(ValueError, match=r"data_path='' with dataset='custom': a data_path is given exactly"):
        ranking.ranking_dataset("custom", "quick", 0, 2)
    with pytest.raises(ValueError, match=r"data_path='.*recipes.jsonl' with dataset='wordnet'"):
        ranking.ranking_dataset("wordnet", "quick", 0, 2, data_path=EXAMPLE)
    with pytest.raises(ValueError, match=r"n_eval=36 leaves none .* give n_eval below 36$"):
        ranking.ranking_dataset("custom", "quick", 0, 36, None, data_path=EXAMPLE)
    twins = tmp_path / "twins.jsonl"
    twins.write_text(json.dumps({"query_id": "q", "query": "x", "relevant": [{"id": "a", "text": "same"}, {"id": "b", "text": "same"}]}) + "\n")  # fmt: skip
    with pytest.raises(custom.CustomDataError, match=r"two documents share the text 'same'"):
        ranking.ranking_dataset("custom", "quick", 0, 0, None, data_path=str(twins), custom_docids="text")


def test_two_ids_written_as_one_trec_token_are_refused(tmp_path):
    """TREC files write whitespace as %XX (``custom.trec_token``): ``a b`` and ``a%20b`` would be one
    document there, so the data is refused before training, naming the token."""
    lines = [
        {"query_id": "q1", "query": "x", "relevant": [{"id": "a b", "text": "one"}]},
        {"query_id": "q2", "query": "y", "relevant": [{"id": "a%20b", "text": "two"}]},
        {"query_id": "q3", "query": "z", "relevant": [{"id": "c", "text": "three"}]},
    ]
    path = tmp_path / "twice.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in lines))
    assert custom.trec_token("a b\tc") == "a%20b%09c" and custom.trec_token("B07:X%/é") == "B07:X%/é"
    with pytest.raises(custom.CustomDataError, match=r"^two document ids are the TREC token 'a%20b' \(whitespace"):
        ranking.ranking_dataset("custom", "quick", 0, 1, None, data_path=str(path))


def _write(tmp_path, *rows, name="mine.jsonl"):
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_ids_may_be_integers_not_booleans_and_text_is_read_with_whitespace_collapsed(tmp_path):
    """docs/own-data.md: a query_id is a string or an integer (JSON ``true`` is neither); a blank field is
    refused; ids lose spaces around them and texts and queries have their whitespace collapsed to one
    space, so a newline in a title cannot break the prompt's one-line-per-candidate layout."""
    good = {"query_id": 7, "query": " apple \n desserts ", "relevant": [{"id": " r1 ", "text": "apple\t\ttart\n"}]}
    [q] = custom.read_queries(_write(tmp_path, good))
    assert (q["query_id"], q["query"], q["relevant"]) == ("7", "apple desserts", [{"id": "r1", "text": "apple tart"}])
    for bad, message in (
        ({**good, "query_id": True}, r"mine.jsonl:1: field 'query_id' must be a non-empty string, got True"),
        ({**good, "query": " \t "}, r"mine.jsonl:1: field 'query' must be a non-empty string, got ' \\t '"),
        ({**good, "relevant": [{"id": False, "text": "t"}]}, r"mine.jsonl:1: relevant\[0\].id: must be"),
    ):
        with pytest.raises(custom.CustomDataError, match=message):
            custom.read_queries(_write(tmp_path, bad))


def test_a_query_holds_at_most_max_documents_counting_its_negative(tmp_path):
    """MAX_DOCUMENTS (1,000) bounds what one prompt shows: the relevant documents and the negative."""
    relevant = [{"id": f"d{i}", "text": "t"} for i in range(custom.MAX_DOCUMENTS)]
    row = {"query_id": "q", "query": "x", "negative": {"id": "n", "text": "u"}}
    assert len(custom.read_queries(_write(tmp_path, {**row, "relevant": relevant[:-1]}))[0]["relevant"]) == 999
    with pytest.raises(custom.CustomDataError, match=r"mine.jsonl:1: 1,000 relevant documents; a query has at most"):
        custom.read_queries(_write(tmp_path, {**row, "relevant": relevant}))


def test_a_file_or_line_over_its_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    line = json.dumps({"query_id": "q", "query": "x" * 60, "relevant": [{"id": "a", "text": "t"}]})  # 130 bytes
    monkeypatch.setattr(custom, "MAX_LINE_BYTES", 100)
    with pytest.raises(custom.CustomDataError, match=r"mine.jsonl:2: the line is over 100 bytes, a query's most"):
        custom.read_queries(_write(tmp_path, "", line))
    monkeypatch.setattr(custom, "MAX_LINE_BYTES", 1000)
    monkeypatch.setattr(custom, "MAX_BYTES", 200)
    assert len(custom.read_queries(_write(tmp_path, line))) == 1  # 131 bytes
    with pytest.raises(custom.CustomDataError, match=r"mine.jsonl: 262 bytes; at most 200 are read"):
        custom.read_queries(_write(tmp_path, line, line.replace('"q"', '"r"')))


def test_a_split_on_some_lines_only_and_one_id_with_two_texts_are_refused(tmp_path):
    """The split is given on every line or on none (docs/own-data.md); a document id under several
    queries is one document, with one text."""
    a = {"query_id": "a", "query": "x", "relevant": [{"id": "d", "text": "one"}], "split": "train"}
    b = {"query_id": "b", "query": "y", "relevant": [{"id": "d", "text": "two"}]}
    with pytest.raises(custom.CustomDataError, match=r"mine.jsonl:2: field 'split' is missing; give it on every line"):
        custom.read_queries(_write(tmp_path, a, b))
    del a["split"]
    with pytest.raises(custom.CustomDataError, match=r"^document id 'd' has two different texts: 'one' and 'two'$"):
        custom.docid_map(custom.read_queries(_write(tmp_path, a, b)), "id")


def test_a_query_that_is_its_own_id_is_named_once_in_the_table(tmp_path):
    """The ranking table's ``query`` is ``query_id: query``, or the query alone where the two are one."""
    rows = [{"query_id": q, "query": text, "relevant": [{"id": f"d{i}", "text": f"t{i}"}]} for i, (q, text) in
            enumerate([("mouse", "mouse"), ("q2", "usb cable"), ("q3", "desk lamp")])]  # fmt: skip
    df, (qids, _) = custom.custom_frame(_write(tmp_path, *rows), "esci_short", 0, 1)
    assert sorted(df["query"]) == ["mouse", "q2: usb cable", "q3: desk lamp"]
    assert qids == {"mouse": "mouse", "q2: usb cable": "q2", "q3: desk lamp": "q3"}


def test_n_eval_distinct_queries_are_held_out_and_the_data_seed_shuffles_the_candidates():
    """Without splits in the file, ``n_eval`` distinct queries are held out (35 of the example's 36
    leave one to train), and each prompt's candidates are shuffled with the data seed (docs/own-data.md)."""
    path = paths.ROOT / EXAMPLE
    df, _ = custom.custom_frame(path, "esci_short", 0, 35)
    assert df["split"].value_counts().to_dict() == {"eval": 35, "train": 1}
    other, _ = custom.custom_frame(path, "esci_short", 1, 35)
    assert (df["query"] == other["query"]).all() and (df["prompt"] != other["prompt"]).any()
