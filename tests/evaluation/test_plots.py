"""plots: the per-rank reading's words follow its numbers; the figures draw the numbers they are given."""

import pandas as pd
import pytest

from arrank.common import outputs
from arrank.evaluation import evaluate, plots


def test_a_rise_is_within_the_error_bars_unless_it_exceeds_both_and_a_tie_is_no_rise():
    curve = pd.DataFrame(
        {"mean": [-2.0, -1.5, -1.5, -5.0], "sem": [0.2, 0.4, 0.1, 0.1], "count": [9, 5, 4, 9]},
        index=["1", "2", "3", "negative"],
    ).assign(mean_predicted_rank=[1.5, 1.0, 3.0, 4.0])
    text = plots.per_rank_reading(curve)
    assert "The mean rises with the rank at 1→2 (within the error bars; 5 queries have rank 2). " in text
    assert "beyond" in plots.per_rank_reading(curve.assign(sem=[0.2, 0.25, 0.1, 0.1]))


def test_recall_bars_are_percent_and_leave_out_what_was_not_measured():
    fig = plots.recall_figure({"model": {"cvr": 0.1, "recall@1": 0.25, "recall@2": None, "recall@3": 0.5}})
    assert fig.data[0].x == ("R@1", "R@3") and fig.data[0].y == (25.0, 50.0)


RECORDS = [{"query": "a", "relevant": ["x", "y"], "negative": "n", "scores": {"x": -1.0, "y": -2.0, "n": -1.5}}]


def test_violations_colour_the_gold_rank_from_1_and_mark_the_negatives_own_score():
    fig = plots.violations_figure(RECORDS, pd.DataFrame({"query": ["a"]}))
    assert fig.data[0].marker.color == (1, 2) and fig.data[0].x == (-1.0, -2.0)
    assert fig.data[1].x == (-1.5,) and fig.data[1].text == ("n",)


def finished_06_run(tmp_path, records: list[dict], trained_params: dict, metrics: dict):
    """(06 run folder, its 05 run folder): a trained run's results.json with ``trained_params``, and a 06
    run of it with ``records``' scores and ``metrics`` (``source``: the trained run) in its results.json."""
    trained = tmp_path / "05_train" / "frac"
    trained.mkdir(parents=True)
    outputs.write_results(trained, "05_train", {"profile": "quick", **trained_params}, {}, {})
    run = tmp_path / "06_evaluate" / "e"
    run.mkdir(parents=True)
    evaluate.scores_frame(records).to_parquet(run / "per_query_scores.parquet")
    outputs.write_results(run, "06_evaluate", {}, {**metrics, "source": str(trained)}, {})
    return run, trained


def test_a_06_run_that_recorded_its_model_is_titled_with_it(tmp_path):
    metrics = {"n_queries": 1, "model_name": "smollm2-135m", "steps": 7}
    run, _ = finished_06_run(tmp_path, RECORDS, {"model_name": "tiny", "steps": 9}, metrics)
    assert "frac: smollm2-135m, 7 steps, 1 held-out queries" in plots.per_rank_from_run(run)[1].layout.title.text


def test_per_rank_figure_is_redrawn_from_a_finished_06_run(tmp_path):
    two = [
        *RECORDS,
        {"query": "b", "relevant": ["u", "v"], "negative": "m", "scores": {"u": -1.0, "v": -2.0, "m": -5.0}},
    ]
    run, trained = finished_06_run(tmp_path, two, {"model_name": "tiny", "steps": None}, {"n_queries": 2})
    curve, fig, reading = plots.per_rank_from_run(run)
    assert curve.loc["1", "mean"] == -1.0 and reading.startswith("Rank 1 has the highest")
    # a run recorded before parameters were resolved: today's profile value is not claimed for it
    assert "frac: tiny, steps not recorded, 2 held-out queries" in fig.layout.title.text
    outputs.write_results(trained, "05_train", {"profile": "quick", "model_name": "tiny", "steps": 1200}, {}, {})
    assert "frac: tiny, 1200 steps, 2 held-out queries" in plots.per_rank_from_run(run)[1].layout.title.text


def test_a_damaged_scores_file_is_named_never_drawn(tmp_path):
    """per_query_scores.parquet cut short, with a candidate twice or a query missing: one line naming
    it, not pyarrow's traceback nor a per-rank curve over the wrong rows."""
    run, _ = finished_06_run(tmp_path, RECORDS, {"model_name": "tiny", "steps": 9}, {"n_queries": 1})
    path = run / "per_query_scores.parquet"
    scores = pd.read_parquet(path)
    for damage, why in [
        (lambda: path.write_bytes(path.read_bytes()[:-100]), "not a table: .*magic bytes"),
        (lambda: pd.concat([scores, scores.iloc[:1]]).to_parquet(path), "a candidate has two rows"),
        (lambda: scores.iloc[:0].to_parquet(path), "no rows"),
        (lambda: scores.assign(query="b").pipe(lambda s: pd.concat([scores, s])).to_parquet(path), "2 queries where"),
    ]:
        damage()
        with pytest.raises(outputs.DamagedResultsError, match=rf"per_query_scores.parquet is damaged \({why}.*\): del"):
            plots.per_rank_from_run(run)


def test_queries_may_share_candidates_but_each_is_scored_once_and_all_are_there(tmp_path):
    """Two queries with the same docIDs are whole; a query missing, or a candidate twice at another rank, is named."""
    run, _ = finished_06_run(
        tmp_path, [*RECORDS, {**RECORDS[0], "query": "b"}], {"model_name": "tiny"}, {"n_queries": 2}
    )
    assert plots.per_rank_from_run(run)[0].loc["1", "count"] == 2
    path = run / "per_query_scores.parquet"
    scores = pd.read_parquet(path)
    for damage, why in [
        (scores[scores["query"] == "a"], "1 queries where its run scored 2"),
        (pd.concat([scores, scores.iloc[:1].assign(rank=2)]), "a candidate has two rows"),
    ]:
        damage.to_parquet(path)
        with pytest.raises(outputs.DamagedResultsError, match=rf"per_query_scores.parquet is damaged \({why}\)"):
            plots.per_rank_from_run(run)
