"""The workbook's stages: notebooks 01-08 in order, notebook 05 through the workbook sweep."""

import pytest

from arrank.common import outputs
from arrank.workbook import whole


def test_stages_run_05_through_the_sweep_and_06_on_its_fractional_point():
    st = whole.stages()
    names = [s["name"] for s in st]
    assert names[:4] == ["01_de_capacity", "02_rank_condition", "03_wordnet_data", "04_esci_data"]
    assert st[4]["kind"] == "sweep" and st[4]["prefix"] == "05" and "table1_wordnet_workbook" in names[4]
    expected = ["01", "02", "03", "04", "sw", "06", "07", "08"]
    assert [n[:2] for n in names] == [e for e in expected if e == "sw" or any(n.startswith(e) for n in names)]
    sweep = whole._sweep()
    six = st[5]
    assert six["name"] == "06_evaluate" and six["overrides"]["train_run"] in {p.run_name for p in sweep.points}
    assert "fractional" in six["overrides"]["train_run"]
    assert st[6]["name"].startswith("07") and st[6]["overrides"] == {
        "arr_runs": f"{sweep.name}-*"
    }  # its ARR curves only


def test_summary_lists_every_stage_and_the_total(tmp_path):
    outputs.write_results(tmp_path, "05_train", {}, {"cvr": 0.123456, "n": 3}, {})
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "results.json").write_text('{"notebook": "07", "params": {}, "timings": {}, "env": {}}')
    text = whole.summary(
        [
            {"notebook": "05", "status": "ran", "seconds": 1.5, "dir": str(tmp_path)},
            {"notebook": "06", "status": "FAILED: x", "seconds": 2.0, "dir": str(tmp_path / "no")},
            {"notebook": "07", "status": "ran", "seconds": 1.0, "dir": str(tmp_path / "bad")},
        ]
    )
    assert "cvr=0.1235, n=3" in text and text.splitlines()[-1].split()[-1] == "4.5"
    assert "results.json is damaged (its 'metrics' is missing or not a mapping): delete its run folder" in text


@pytest.mark.slow  # runs the workbook / trains the tiny model
def test_ctrl_c_during_the_workbook_is_one_line_and_exit_130(tmp_path):
    """Ctrl-C during ``python -m arrank.workbook`` printed a RunInterruptedError traceback
    and exited 1; docs/reliability.md promises one line and 130. The interrupted stage is kept
    as failed, and no process of it is left."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from arrank.common import paths

    outputs = tmp_path / "outputs"
    env = {
        **os.environ,
        "ARRANK_OUTPUTS": str(outputs),
        "PYTHONPATH": os.pathsep.join(sys.path),
        "OMP_NUM_THREADS": "1",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "arrank.workbook", "--only", "01", "--run-name", "ctrlc"],
        cwd=paths.ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.time() + 120
        # the kernel is running the notebook: its first table is written, the exact counts come next
        while time.time() < deadline and not list(
            (outputs / "01_de_capacity").glob(".ctrlc.partial-*/closed_form.csv")
        ):
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)  # what Ctrl-C sends (the kernel has a process group of its own)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    failed = [p for p in (outputs / "01_de_capacity").iterdir() if p.name.startswith("ctrlc.failed-")]
    assert proc.returncode == 130 and len(failed) == 1, err
    assert "Traceback" not in err and err.splitlines()[-1] == (
        f"interrupted: 01_de_capacity run 'ctrlc' interrupted; what it wrote is kept in "
        f"{failed[0]}. Run the same command again to go on (05_train resumes from its "
        "last checkpoint)"
    )  # the lines before: papermill's progress bar
    assert not list(Path(outputs / "01_de_capacity").glob(".ctrlc.partial-*"))


def test_the_summaries_show_intervals_from_the_sweeps_per_query_rows(tmp_path, outputs_root, monkeypatch):
    import numpy as np
    import pandas as pd

    from arrank.common import outputs
    from arrank.workbook import sweep

    path = tmp_path / "wb.yaml"
    path.write_text(
        "notebook: 05_train\nfixed: {profile: quick, steps: 5}\n"
        "grid: [{scheme: [indicator]}, {scheme: [fractional], alpha: [2]}]\n"
    )
    s = sweep.load_sweep(path)
    monkeypatch.setattr(whole, "_sweep", lambda: s)
    rng = np.random.default_rng(0)
    for point, p_violation in zip(s.points, (0.6, 0.05)):
        run_dir = outputs.run_path(s.notebook, point.run_name, outputs_root)
        run_dir.mkdir(parents=True)
        q = pd.DataFrame(
            {
                "query": [f"q{i}" for i in range(100)],
                "violation": rng.random(100) < p_violation,
                "ndcg": 0.9,
                "recall@1": (rng.random(100) < 0.8).astype(float),
                "recall@2": 0.5,
            }
        )
        q.to_csv(run_dir / "per_query.csv", index=False)
        outputs.write_results(
            run_dir,
            s.notebook,
            point.resolved,
            {
                "cvr": float(q["violation"].mean()),
                "ndcg": 0.9,
                "recall@1": float(q["recall@1"].mean()),
                "recall@2": 0.5,
                "n_queries": 100,
            },
            {},
        )
    table = whole.table1_summary()
    assert "± " in table.splitlines()[2] and "± half the width of the 95% confidence interval" in table
    text = whole.findings_summary("none")
    assert "NTP has the highest CVR; fractional variants at most half of it: holds here" in text
    assert "Fractional α=2 CVR at most half NTP's: holds, " in text and "95% CI [" in text
    assert "fractional α=2 has a higher mean R@2..R@5 than NTP: **undecided** here" in text  # R@2 0.5 for both


def test_a_second_workbook_is_refused_at_once_naming_the_holder(outputs_root, capsys):
    """Two workbooks at once would run each other's stages: while one holds the workbook lock, a
    second `python -m arrank.workbook` exits 2 with one line naming the pid, running nothing."""
    import os

    from arrank.common import outputs

    held = outputs.claim_lock(outputs_root / whole.WORKBOOK_LOCK, "held {pid}")
    try:
        assert whole.main(["--only", "01"]) == 2
    finally:
        held.release()
    err = capsys.readouterr().err
    assert (
        err
        == f"error: another workbook is running (pid {os.getpid()}): wait for it to finish; its finished stages are kept\n"
    )
    assert [p.name for p in outputs_root.iterdir()] == [whole.WORKBOOK_LOCK]  # no stage ran


def test_an_only_that_names_no_stage_or_a_bad_run_name_is_refused_before_anything_runs(
    outputs_root, capsys, monkeypatch
):
    """``--only 5`` ran nothing and exited 0 ('05' is the sweep's number), a bare ``--only`` ran every stage,
    ``--run-name a/b`` failed each stage in turn (exit 1): each is now refused at once, exit 2."""
    monkeypatch.setattr(whole, "run_workbook", lambda *args: pytest.fail(f"stages ran: {args}"))  # fails in ms
    for argv, said in (
        (["--only", "01", "5"], "error: --only '5' names no stage; stages: ['01_de_capacity', "),
        (["--only"], "error: argument --only: expected at least one argument"),
        (["--run-name", "a/b"], "error: run_name='a/b' must be 'auto' or a name of at most 100 letters"),
    ):
        with pytest.raises(SystemExit) as ended:
            whole.main(argv)
        assert ended.value.code == 2 and said in capsys.readouterr().err
    assert list(outputs_root.iterdir()) == []  # no lock taken, no stage run


@pytest.fixture
def small_workbook(tmp_path, outputs_root, monkeypatch):
    """The workbook with a two-point sweep, notebooks that only record their call (02 raises, 03 is
    refused), a sweep whose second point fails; returns (sweep, calls)."""
    from arrank.workbook import sweep
    from arrank.workbook.run import RunFailedError

    path = tmp_path / "wb.yaml"
    path.write_text("notebook: 05_train\nfixed: {profile: quick, steps: 5}\ngrid: {scheme: [indicator, fractional]}\n")
    s, calls = sweep.load_sweep(path), []
    monkeypatch.setattr(whole, "_sweep", lambda: s)

    def run_notebook(name, overrides):
        calls.append((name, overrides.get("train_run")))
        if name.startswith("02"):
            raise RunFailedError("02_rank_condition failed: boom")
        if name.startswith("03"):
            raise outputs.RunExistsError("run directory x exists")

    def run_sweep(sw, jobs):
        calls.append(("sweep", None))
        return [{"run_name": p.run_name, "status": ["done", "failed"][i]} for i, p in enumerate(sw.points)]

    monkeypatch.setattr(whole, "run_notebook", run_notebook)
    monkeypatch.setattr(whole, "run_sweep", run_sweep)
    return s, calls


def test_finished_stages_are_skipped_and_failed_or_refused_ones_reported(small_workbook, outputs_root):
    """--only takes stems or number prefixes (05: the sweep); a finished notebook is skipped, one that
    fails or is refused gets FAILED with its error while the next stages still run; the sweep runs
    while any point is unfinished, and names its failed points."""
    s, calls = small_workbook
    done = s.points[0]
    for folder, params in (
        (outputs_root / "01_de_capacity" / "wb", {}),
        (outputs.run_path("05_train", done.run_name), done.resolved),
    ):
        folder.mkdir(parents=True)
        outputs.write_results(folder, folder.parent.name, params, {}, {})
    rows = whole.run_workbook("wb", ["01", "02", "03_", "05", "06"])
    assert [(r["notebook"][:5], r["status"]) for r in rows] == [
        ("01_de", "done earlier"),
        ("02_ra", "FAILED: 02_rank_condition failed: boom"),
        ("03_wo", "FAILED: run directory x exists"),
        ("sweep", f"FAILED: points ['{s.points[1].run_name}'] (logs in outputs/sweeps/wb/logs/)"),
        ("06_ev", "ran"),
    ]
    assert calls == [
        ("02_rank_condition", None),
        ("03_wordnet_data", None),
        ("sweep", None),
        ("06_evaluate", s.points[1].run_name),
    ]


def test_the_command_exits_1_on_a_failed_stage_gives_the_lock_back_and_its_summaries_never_raise(
    small_workbook, outputs_root, monkeypatch, capsys
):
    assert whole.main(["--only", "02", "--run-name", "wb"]) == 1
    assert whole.main(["--only", "02", "--run-name", "wb"]) == 1  # the lock was given back
    assert "02_rank_condition: FAILED: 02_rank_condition failed: boom" in capsys.readouterr().err

    def broken():
        raise ValueError("no runs")

    monkeypatch.setattr(whole, "_table1_runs", broken)
    (folder := outputs_root / "07_de_ce_baselines" / "wb").mkdir(parents=True)
    (folder / "results.json").write_text("{")
    assert whole.table1_summary() == "(no Table 1 summary: ValueError: no runs)"
    text = whole.findings_summary("wb")
    assert "Table 1 findings: not available (ValueError: no runs)" in text
    assert "Figure 3 findings: not available (" in text and "results.json is damaged (not JSON" in text
