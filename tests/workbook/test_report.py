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
