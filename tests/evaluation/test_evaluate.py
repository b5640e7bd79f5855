"""The random-scores floor and the Table 1 layout of the evaluation."""

import pandas as pd
import pytest

from arrank.evaluation import evaluate


def _df():
    return pd.DataFrame(
        {
            "query": ["a", "b", "c"],
            "split": ["eval", "eval", "train"],
            "relevant": [["x", "y", "z"], ["u", "v"], ["w"]],
            "negative": ["n", "m", "o"],
            "prompt": ["p"] * 3,
        }
    )


def test_random_floor_is_seeded_and_uses_held_out_queries_only():
    a, b = evaluate.random_floor(_df(), seed=3), evaluate.random_floor(_df(), seed=3)
    assert a == b and a["n_queries"] == 2 and a["n_queries@3"] == 1
    assert evaluate.random_floor(_df(), limit=1)["n_queries"] == 1


def test_the_limit_is_the_test_queries_and_every_validation_query_is_taken():
    df = pd.DataFrame({"query": list("abcde"), "split": ["eval", "dev", "eval", "dev", "train"]})
    assert evaluate.eval_queries(df, 1)["query"].tolist() == ["a"]
    assert evaluate.eval_queries(df, 1, "dev")["query"].tolist() == ["b", "d"]  # n_dev sizes them, not the limit


def test_training_sample_is_seeded_training_queries_only():
    df = pd.DataFrame({"query": [f"q{i}" for i in range(20)], "split": ["train", "eval"] * 10})
    a = evaluate.training_sample(df, 4, seed=1)
    assert a.equals(evaluate.training_sample(df, 4, seed=1)) and len(a) == 4 and set(a["split"]) == {"train"}
    assert list(a.index) == sorted(a.index) and not a.equals(evaluate.training_sample(df, 4, seed=2))
    assert len(evaluate.training_sample(df, 99, seed=1)) == 10  # all of them
    with pytest.raises(ValueError, match="no training"):
        evaluate.training_sample(df.assign(split="eval"), 3, seed=1)
    assert evaluate.n_training_queries(None, 300) == 300 and evaluate.n_training_queries(0, 300) == 0
    assert evaluate.training_metrics({"cvr": 0.5, "train_cvr": 0.1, "train_recall@1": 1.0}) == {
        "cvr": 0.1,
        "recall@1": 1.0,
    }


def test_metrics_table_layout_and_errors():
    table = evaluate.metrics_table({"run": {"n_queries": 2, "cvr": 0.5, "ndcg": 0.91234567, "recall@1": 1}})
    assert list(table.columns) == ["cvr", "ndcg", "recall@1"] and table.loc["run", "ndcg"] == 0.9123
    with pytest.raises(ValueError, match="no held-out"):
        evaluate.eval_queries(_df().assign(split="train"))


def _records():
    return [
        {
            "query": "a",
            "relevant": ["x", "y", "z"],
            "negative": "n",
            "scores": {"x": -1.0, "y": -2.0, "z": -4.0, "n": -3.0},
        },
        {"query": "b", "relevant": ["u", "v"], "negative": "m", "scores": {"u": -1.0, "v": -2.0, "m": -5.0}},
    ]


def test_scores_frame_per_rank_means_and_violations():
    scores = evaluate.scores_frame(_records())
    assert scores.loc[scores["docid"] == "n", ["rank", "predicted_rank"]].values.tolist() == [[0, 3]]
    curve = evaluate.per_rank_scores(scores)
    assert list(curve.index) == ["negative", "1", "2", "3"]
    assert curve.loc["1", "mean"] == -1.0 and curve.loc["negative", "mean"] == -4.0
    worst = evaluate.violation_examples(_records())
    assert worst.to_dict("records") == [
        {
            "query": "a",
            "negative": "n",
            "negative_score": -3.0,
            "lowest_positive": "z",
            "positive_rank": 3,
            "positive_score": -4.0,
            "margin": 1.0,
        }
    ]


def test_a_run_folder_without_a_model_or_a_missing_run_is_a_clear_error(tmp_path):
    from arrank.common import outputs
    from arrank.training import models

    with pytest.raises(FileNotFoundError, match="holds no saved model"):
        models.load_model(tmp_path)
    (tmp_path / "05_train" / "r1").mkdir(parents=True)
    (tmp_path / "05_train" / "r1" / "results.json").write_text("{}")
    (tmp_path / "05_train" / ".r2.partial-1").mkdir()
    assert outputs.find_run("05_train", "latest", tmp_path).name == "r1"
    with pytest.raises(FileNotFoundError, match=r"no finished 05_train run named 'r9'.*\['r1'\]"):
        outputs.find_run("05_train", "r9", tmp_path)


def test_a_damaged_saved_model_is_named_and_nothing_is_evaluated_from_it(tmp_path):
    """A run's saved model is a result, not derived data: a file against its manifest
    is named, and 06 reports nothing from it."""
    from arrank.training import models

    tok = __import__("arrank.training.tokenizer", fromlist=["x"]).train_bpe(["dog.n.01", "cat.n.01"] * 10, 300)
    model = models.build_tiny_model(len(tok), hidden=16, layers=1, heads=2, intermediate=32, tokenizer=tok)
    folder = models.save_atomic(model, tok, tmp_path / "model")
    assert models.load_model(folder)[0].config.hidden_size == 16
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-64] + bytes(64))
    with pytest.raises(
        ValueError,
        match=rf"the saved model {folder} is damaged: model.safetensors does not match its "
        r"sha256 in the manifest \(altered on disk\); nothing is evaluated from it",
    ):
        models.load_model(folder)


def test_a_custom_train_run_whose_data_file_changed_since_is_refused_before_its_model_loads(tmp_path, capsys):
    """Notebook 06 rebuilds a train_run's held-out split from its data file: a file edited since
    (its ``data_digest`` differs from the run's) is refused in one line naming the file and the ways
    out, before the model is loaded; the unchanged file goes on (to the model, absent here). A run
    recorded before runs kept a digest is evaluated with a notice."""
    import re

    from arrank.common import outputs
    from arrank.common.params import ParamError

    data = tmp_path / "mine.jsonl"
    data.write_text('{"query_id": "a"}\n')
    params = {"dataset": "custom", "data_path": str(data), "n_eval": 1, "seed": 0, "profile": "quick"}
    (tmp_path / "05_train" / "own").mkdir(parents=True)
    outputs.write_results(tmp_path / "05_train" / "own", "05_train", {**params, **outputs.data_digest(params)}, {}, {})
    p = {"train_run": "own", "backend": "auto"}
    with pytest.raises(FileNotFoundError, match="holds no saved model"):
        evaluate.model_under_test(p, tmp_path)
    data.write_text('{"query_id": "a"}\n{"query_id": "b"}\n')  # a query added after training
    with pytest.raises(
        ParamError,
        match=rf"^train_run 'own' trained on {re.escape(str(data))} with data_digest [0-9a-f]{{12}}, but the file "
        r"now has [0-9a-f]{12}: it changed since training, .* restore the file as it was, or train a new 05 run on it$",
    ):
        evaluate.model_under_test(p, tmp_path)
    evaluate.check_data_digest("old", params, outputs.data_digest(params))  # no data_digest recorded
    assert f"whether {data} is the file it trained on cannot be checked" in capsys.readouterr().out
    results = tmp_path / "05_train" / "own" / "results.json"
    results.write_text(results.read_text()[:50])  # cut short: named, not a JSON traceback
    with pytest.raises(outputs.DamagedResultsError, match=r"own/results.json is damaged \(not JSON: .*\): delete its"):
        evaluate.model_under_test(p, tmp_path)


def test_a_beam_size_no_scored_held_out_query_can_fill_names_beam_k_before_scoring():
    """Notebook 06's beam_k larger than every held-out query's relevant list: one line naming beam_k
    and the largest that decodes, from the queries alone (before scoring) and in decoding, where
    only the scored queries count."""
    from arrank.common.params import ParamError

    df = _df().assign(n_relevant=lambda d: d["relevant"].map(len))  # held out: a (3 relevant), b (2)
    with pytest.raises(ParamError, match=r"^beam_k=5: no scored held-out query has at least 5 relevant docIDs; "
                       r"give -p beam_k N with N at most 3$"):  # fmt: skip
        evaluate.check_beam_k(evaluate.eval_queries(df), 5)
    evaluate.check_beam_k(evaluate.eval_queries(df), 3)
    with pytest.raises(
        ParamError, match=r"^beam_k=3: .* at least 3 relevant docIDs; give -p beam_k N with N at most 2$"
    ):
        evaluate.decode_held_out(None, None, df, _records()[1:], 3)  # only b scored; no model is needed to say so


def test_esci_ranking_frame_holds_out_test_queries_only():
    from arrank.data import ranking

    q = pd.DataFrame(
        {
            "query_id": [3, 1, 2, 4],
            "query": ["c", "a", "b", "d"],
            "split": ["test", "train", "test", "test"],
            "prompt": ["p"] * 4,
            "gold": [["1,2"], ["3", "4"], ["5"], ["6"]],
        }
    )
    f = ranking.esci_ranking_frame(q, n_eval=2)
    assert f["split"].tolist() == ["train", "eval", "eval"] and f["query"].tolist() == ["1: a", "2: b", "3: c"]
    assert f["negative"].isna().all() and f["n_relevant"].tolist() == [2, 1, 1]
    with pytest.raises(ValueError, match="template='wordnet' is not for dataset='esci'"):
        ranking.ranking_dataset("esci", "quick", 0, 5, "wordnet")
    with pytest.raises(ValueError, match="dataset='msmarco' is not allowed"):
        ranking.ranking_dataset("msmarco", "quick", 0, 5)


def test_per_rank_reading_says_what_the_numbers_show():
    from arrank.evaluation import plots

    good = evaluate.per_rank_scores(evaluate.scores_frame(_records()))
    text = plots.per_rank_reading(good)
    assert text.startswith("Rank 1 has the highest mean score (-1.000)") and "falls with every rank" in text
    assert "negative is below every rank (mean -4.000)" in text and "position 1.00" in text
    # rank 2 above rank 1 on average, the negative above rank 3: said, with the numbers
    flipped = [
        {
            "query": "a",
            "relevant": ["x", "y", "z"],
            "negative": "n",
            "scores": {"x": -2.0, "y": -1.0, "z": -4.0, "n": -3.0},
        }
    ]
    text = plots.per_rank_reading(evaluate.per_rank_scores(evaluate.scores_frame(flipped)))
    assert text.startswith("Rank 2, not rank 1, has the highest mean score (-1.000 against rank 1's -2.000)")
    assert (
        "rises with the rank at 1→2 (beyond the error bars; 1 queries have rank 2)" in text
        and "above rank(s) 3" in text
        and "position 2.00" in text
    )
    fig = plots.per_rank_figure({"m": good}, plots.scale_text({"run": "r1", "model_name": "tiny", "steps": 400}, 2))
    assert "r1: tiny, 400 steps, 2 held-out queries" in fig.layout.title.text
    assert "±1 standard error" in fig.layout.title.text and __import__("numpy").allclose(
        fig.data[0].error_y.array, good["sem"], equal_nan=True
    )


def test_per_rank_means_their_standard_errors_and_the_rank_cut():
    """``per_rank_scores``: rank 1 scored -1 and -3 over two queries: mean -2, sem = std / sqrt(2) = 1;
    ranks above ``max_rank`` are left out, ``max_rank`` itself kept."""
    records = [
        {"query": "a", "relevant": ["x", "y", "z"], "negative": None, "scores": {"x": -1.0, "y": -2.0, "z": -6.0}},
        {"query": "b", "relevant": ["u", "v"], "negative": None, "scores": {"u": -3.0, "v": -2.0}},
    ]
    curve = evaluate.per_rank_scores(evaluate.scores_frame(records), max_rank=2)
    assert list(curve.index) == ["1", "2"] and curve.loc["1", "sem"] == pytest.approx(1.0)
    assert curve.loc["1", "mean"] == -2.0 and curve.loc["2", "count"] == 2
    assert curve.loc["2", "mean_predicted_rank"] == 1.5  # y second in a, v first in b


def test_violations_are_strict_and_the_largest_margin_comes_first():
    """Section 5.1: a tie of the negative with the lowest positive is no violation (as ``metrics``)."""
    rec = lambda q, neg: {
        "query": q,
        "relevant": ["x", "y"],
        "negative": "n",
        "scores": {"x": 0.0, "y": -2.0, "n": neg},
    }
    worst = evaluate.violation_examples([rec("tie", -2.0), rec("small", -1.5), rec("large", -0.5)], n=1)
    assert worst[["query", "margin"]].values.tolist() == [["large", 1.5]]
    assert evaluate.violation_examples([rec("tie", -2.0)]).empty
