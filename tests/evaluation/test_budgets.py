"""Budget curves: the held-out queries scored at several steps of one training run."""

import copy

import pandas as pd
import pytest
import torch

from arrank.common import outputs
from arrank.evaluation import budgets, evaluate
from arrank.training import train


def _per_query(n: int, offset: float) -> pd.DataFrame:
    """A per-query frame as ``metrics.per_query_metrics`` makes it (WordNet: one negative)."""
    return pd.DataFrame(
        {
            "query": [f"q{i}" for i in range(n)],
            "n_relevant": 5,
            "n_candidates": 6,
            "violation": [i % 2 == 0 for i in range(n)],
            "ndcg": [0.5 + offset] * n,
            **{f"recall@{k}": [offset + k / 10] * n for k in range(1, 6)},
        }
    )


def test_schedule_is_constant_for_a_curve_and_cosine_otherwise():
    assert train.lr_schedule("auto", [10, 20]) == "constant" and train.lr_schedule("auto", []) == "cosine"
    assert train.lr_schedule("cosine", [10]) == "cosine"
    with pytest.raises(ValueError, match="lr_schedule='linear' is not allowed"):
        train.lr_schedule("linear", [])
    quick = {k: v for k, v in train.profile_hyperparameters("quick").items() if k != "lr_schedule"}
    assert train.profile_hyperparameters("quick")["lr_schedule"] == "cosine"  # Appendix B's
    hyper = train.hyperparameters({**quick, "eval_steps": [5]})
    args = train.training_arguments("/tmp/unused", hyper, seed=0, use_cpu=True)
    assert args.lr_scheduler_type.value == "constant_with_warmup"


def test_curve_table_joins_the_points_and_the_final_evaluation(tmp_path):
    for step, offset in ((10, 0.0), (20, 0.1)):
        _per_query(4, offset).to_csv(budgets.point_path(tmp_path, step), index=False)
    table = budgets.curve_table(tmp_path, [10, 20, 40], 40, _per_query(4, 0.3), items_per_step=64, n_pairs=320)
    assert list(table.columns) == ["step", "items", "epochs", "query", "cvr", "ndcg", "r1", "r2", "r3", "r4", "r5"]
    assert table["step"].tolist() == [10] * 4 + [20] * 4 + [40] * 4
    assert table.groupby("step")["items"].first().tolist() == [640, 1280, 2560]
    assert table.groupby("step")["epochs"].first().tolist() == [2.0, 4.0, 8.0]
    summary = budgets.curve_summary(table)
    assert summary["r2"].round(6).tolist() == [0.2, 0.3, 0.5] and summary["cvr"].tolist() == [0.5] * 3
    budgets.forget_after(tmp_path / "none", 0)  # no folder: nothing to do
    budgets.forget_after(tmp_path, 10)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step-0000010.csv"]
    budgets.forget_after(tmp_path, -1)
    assert not tmp_path.exists()


def test_the_validation_rows_go_below_the_test_rows_and_the_curve_keeps_their_split(tmp_path):
    test, dev = _per_query(2, 0.0), _per_query(3, 0.2)
    assert budgets.with_splits(test, None) is test  # no validation queries: no split column
    both = budgets.with_splits(test, dev)
    assert both["split"].tolist() == ["test"] * 2 + ["dev"] * 3 and both.index.tolist() == list(range(5))
    summary = budgets.curve_summary(budgets.curve_table(tmp_path, [], 10, both, items_per_step=1, n_pairs=10))
    assert summary["split"].tolist() == ["test", "dev"] and summary["r1"].round(6).tolist() == [0.1, 0.3]


@pytest.mark.parametrize(
    "damage, why",
    [
        (lambda text: text[: text.rindex(",0.")], "a row is cut short"),  # cut in its last row's recall@k
        (lambda text: text[: text.rindex("q3")], "3 rows where its run scored 4 queries"),
        (lambda text: text + text.splitlines(keepends=True)[-1], "5 rows where its run scored 4 queries"),
        (lambda text: "", "not a table"),
        (lambda text: text.replace(text.splitlines(keepends=True)[1], ""), "1 validation rows where its run scored 2"),
    ],
)
def test_a_damaged_point_is_named_with_the_run_to_start_over_never_drawn(tmp_path, damage, why):
    curve = tmp_path / ".curve-r"
    curve.mkdir()
    both = budgets.with_splits(_per_query(4, 0.3), _per_query(2, 0.3))
    budgets.point_path(curve, 20).write_text(both.to_csv(index=False))  # whole
    budgets.point_path(curve, 10).write_text(damage(both.iloc[[4, 5, 0, 1, 2, 3]].to_csv(index=False)))
    todo = r"delete \S+/\.curve-r and \.checkpoints-r beside it and run that point again$"  # it would resume past it
    with pytest.raises(outputs.DamagedResultsError, match=rf"step-0000010.csv is damaged \({why}.*\): {todo}"):
        budgets.curve_table(curve, [10, 20, 30], 30, both, items_per_step=1, n_pairs=10)


@pytest.fixture(scope="module")
def canine():
    from arrank.data import wordnet as W
    from arrank.training import models

    df = W.build_wordnet_dataset(
        subtree="canine.n.02", min_relevant=1, n_eval=10, template="wordnet_short", cache=False
    )
    texts = list(df["prompt"]) + sorted({d for r in df["relevant"] for d in r})

    def fresh():
        torch.manual_seed(0)
        return models.tiny_model_and_tokenizer(
            texts, vocab_size=400, hidden=32, layers=1, heads=2, intermediate=64, seed=0, cache=False
        )

    return df, fresh


HYPER = {
    **train.profile_hyperparameters("quick"),
    "batch_size": 8,
    "warmup_steps": 1,
    "lr": 1e-2,
    "logging_steps": 1,
    "save_steps": 100,
    "lr_schedule": "constant",
}


def _scores(model, tok, df) -> list[dict]:
    return evaluate.evaluate_held_out(model, tok, df, progress=False)[2]


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
def test_a_point_is_the_model_at_its_step_and_the_run_that_stops_there(canine, tmp_path):
    """A 2-budget curve on the tiny model: the point at step 3 equals separate scoring of the model
    as it was at step 3, and the final evaluation of a separate 3-step run (constant schedule)."""
    from transformers import TrainerCallback

    df, fresh = canine
    model, tok = fresh()
    items = train.training_items(df, tok, "fractional", alpha=2.0)
    kept = {}

    class Keep(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 3:
                kept["state"] = copy.deepcopy(model.state_dict())

    score = budgets.held_out_scorer(tok, df, None, (1, 2, 3, 4, 5), "fp32", 1)
    points = budgets.budget_callback([3, 6], 6, tmp_path / "curve", score, model)
    train.train(model, tok, items, {**HYPER, "steps": 6}, tmp_path / "a", seed=0, callbacks=[points, Keep()])
    at_three = pd.read_csv(budgets.point_path(tmp_path / "curve", 3))
    assert not budgets.point_path(tmp_path / "curve", 6).exists()  # the run's own evaluation scores step 6
    assert points.seconds > 0

    later = _scores(model, tok, df)
    model.load_state_dict(kept["state"])
    separate = evaluate.evaluate_held_out(model, tok, df, progress=False)[1]
    pd.testing.assert_frame_equal(at_three, separate, check_dtype=False, rtol=1e-6)

    stopped, tok2 = fresh()
    train.train(stopped, tok2, items, {**HYPER, "steps": 3}, tmp_path / "b", seed=0)
    alone = _scores(stopped, tok2, df)
    kept_scores = _scores(model, tok, df)
    for a, b in zip(alone, kept_scores):
        assert a["scores"].keys() == b["scores"].keys()
        for d, s in a["scores"].items():
            assert s == pytest.approx(b["scores"][d], rel=1e-6, abs=1e-9)
    assert any(abs(s - later[i]["scores"][d]) > 1e-3 for i, r in enumerate(alone) for d, s in r["scores"].items())


def test_an_epoch_counts_the_training_queries_relevant_docids():
    """Appendix B: an epoch is every (query, rank) item of the training queries once: 3 + 1 here; the
    held-out and validation queries' 2 + 1 are not trained on."""
    df = pd.DataFrame(
        {"split": ["train", "eval", "train", "dev"], "relevant": [["a", "b", "c"], ["x", "y"], ["d"], ["z"]]}
    )
    assert budgets.training_pairs(df) == 4


def test_scored_steps_are_in_step_order(tmp_path):
    for step in (100, 20, 3, 1000):
        _per_query(1, 0.0).to_csv(budgets.point_path(tmp_path, step), index=False)
    assert budgets.scored_steps(tmp_path) == [3, 20, 100, 1000] and budgets.scored_steps(tmp_path / "none") == []


def test_the_held_out_scorer_adds_the_validation_queries_only_where_the_table_has_them(monkeypatch):
    scored = []

    def fake(model, tokenizer, df, limit, ks, split, **kwargs):
        scored.append((split, limit, kwargs["query_batch"]))
        return None, _per_query(2 if split == "eval" else 1, 0.0), None

    monkeypatch.setattr(evaluate, "evaluate_held_out", fake)
    with_dev = budgets.held_out_scorer(None, pd.DataFrame({"split": ["train", "eval", "dev"]}), 5, (1,), "fp32", 4)
    assert with_dev("model")["split"].tolist() == ["test", "test", "dev"]
    assert scored == [("eval", 5, 4), ("dev", 5, 4)]
    without = budgets.held_out_scorer(None, pd.DataFrame({"split": ["train", "eval"]}), None, (1,), "fp32", 1)
    assert len(without("model")) == 2 and "split" not in without("model")
