"""report: a sweep's results read as untrusted input (a damaged file is named, never tabulated)."""

import pandas as pd
import pytest

from arrank.common import outputs
from arrank.workbook import report, sweep


@pytest.fixture
def two_points(tmp_path, outputs_root):
    """A sweep of two finished 05 points, each with a whole per_query.csv of 30 queries."""
    path = tmp_path / "two.yaml"
    path.write_text("notebook: 05_train\nfixed: {profile: quick, steps: 5}\ngrid: {scheme: [indicator, stepwise]}\n")
    s = sweep.load_sweep(path)
    for point in s.points:
        run_dir = outputs.run_path(s.notebook, point.run_name, outputs_root)
        run_dir.mkdir(parents=True)
        q = pd.DataFrame({"query": [f"q{i}" for i in range(30)], "violation": False, "ndcg": 0.9, "recall@1": 1.0})
        q.to_csv(run_dir / "per_query.csv", index=False)
        outputs.write_results(run_dir, s.notebook, point.resolved, {"cvr": 0.0, "n_queries": 30}, {})
    return s, path, outputs_root


def test_whole_files_are_read(two_points):
    s, _, _ = two_points
    assert len(report.per_query_frame(s)) == 60


def test_a_per_query_file_cut_mid_line_is_named_not_tabulated(two_points):
    s, _, root = two_points
    damaged = outputs.run_path(s.notebook, s.points[0].run_name, root) / "per_query.csv"
    text = damaged.read_text()
    damaged.write_text(text[: len(text) // 2 + 3])  # cut inside a row
    with pytest.raises(outputs.DamagedResultsError, match=r"per_query.csv is damaged \(.*\): delete its run folder"):
        report.per_query_frame(s)


def test_an_invalid_results_json_is_one_line_with_rc_2(two_points, capsys):
    s, path, root = two_points
    (outputs.run_path(s.notebook, s.points[1].run_name, root) / "results.json").write_text('{"params": {"sch')
    with pytest.raises(sweep.SweepError, match=r"results.json is damaged \(not JSON"):
        report.collect(s)
    assert sweep.main([str(path), "--list", "--outputs-root", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "results.json is damaged" in err and "run that point again" in err


def test_a_results_json_without_metrics_is_named_not_tabulated_nor_listed_done(two_points, capsys):
    s, path, root = two_points
    results = outputs.run_path(s.notebook, s.points[1].run_name, root) / "results.json"
    results.write_text(results.read_text().replace('"metrics"', '"metricz"'))  # valid JSON, no metrics key
    with pytest.raises(sweep.SweepError, match=r"results.json is damaged \(its 'metrics' is missing or not a mapping"):
        report.collect(s)
    assert sweep.main([str(path), "--list", "--outputs-root", str(root)]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "'metrics' is missing" in err and "delete its run folder" in err and not out


@pytest.mark.parametrize(
    "edit, why",
    [
        (lambda q: q.replace({"query": {"q1": "q0"}}), "query 'q0' has two rows"),
        (lambda q: q.assign(violation=[True, *q["violation"][1:]]), "the mean cvr of its rows is 0.0333333 where"),
    ],
)
def test_per_query_rows_that_disagree_with_their_results_json_are_named(two_points, edit, why):
    s, _, root = two_points
    path = outputs.run_path(s.notebook, s.points[0].run_name, root) / "per_query.csv"
    edit(pd.read_csv(path)).to_csv(path, index=False)
    with pytest.raises(outputs.DamagedResultsError, match=f"per_query.csv is damaged \\({why}"):
        report.per_query_frame(s)


def test_collect_keeps_the_metrics_only_and_a_curve_setting_counts_test_queries(two_points):
    """collect's columns: the point, its state, label, profile, varied parameters, then the metrics
    (fractions; not counts such as n_queries). A curve's setting counts its test queries, not its
    validation ones."""
    s, _, root = two_points
    assert list(report.collect(s, root).columns) == ["run_name", "state", "label", "profile", "scheme", "cvr"]
    rows = pd.DataFrame({"query": ["a", "b", "c", "a"], "split": ["test", "test", "dev", "dev"]})
    assert report.curve_setting({"batch_size": 8, "grad_accum": 2, "lr_schedule": "constant"}, rows, 2) == (
        "32 items a step, 2 held-out queries, constant rate"
    )


def test_a_stopped_run_is_its_newest_failed_folder_with_a_whole_results_json(outputs_root):
    folder = outputs_root / "05_train" / "r"
    for stamp, metrics in (("20260101-000000", {"cvr": 0.1}), ("20260102-000000", {"cvr": 0.2})):
        (failed := folder.parent / f"r.failed-{stamp}").mkdir(parents=True)
        outputs.write_results(failed, "05_train", {}, metrics, {})
    (folder.parent / "r.failed-20260103-000000").mkdir()  # stopped before its results.json
    run, results = report.stopped_run(folder)
    assert run.name == "r.failed-20260102-000000" and results["metrics"] == {"cvr": 0.2}
