"""The random-scores floor and the Table 1 layout of the evaluation."""

import pandas as pd
import pytest

from arrank import evaluate


def _df():
    return pd.DataFrame({"query": ["a", "b", "c"], "split": ["eval", "eval", "train"],
                         "relevant": [["x", "y", "z"], ["u", "v"], ["w"]], "negative": ["n", "m", "o"],
                         "prompt": ["p"] * 3})


def test_random_floor_is_seeded_and_uses_held_out_queries_only():
    a, b = evaluate.random_floor(_df(), seed=3), evaluate.random_floor(_df(), seed=3)
    assert a == b and a["n_queries"] == 2 and a["n_queries@3"] == 1
    assert evaluate.random_floor(_df(), limit=1)["n_queries"] == 1


def test_metrics_table_layout_and_errors():
    table = evaluate.metrics_table({"run": {"n_queries": 2, "cvr": 0.5, "ndcg": 0.91234567, "recall@1": 1}})
    assert list(table.columns) == ["cvr", "ndcg", "recall@1"] and table.loc["run", "ndcg"] == 0.9123
    with pytest.raises(ValueError, match="no held-out"):
        evaluate.eval_queries(_df().assign(split="train"))
