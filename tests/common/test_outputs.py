"""outputs: a run's folder, lock and staging, its results and their permissions; a run's paths are never
symbolic links, nor outside the outputs folder."""

import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from arrank.common import outputs


@pytest.mark.parametrize(
    "name, target",
    [(".checkpoints-r", "elsewhere"), (".r.lock", "elsewhere/lock"), ("r", "missing"), (".curve-r", "elsewhere")],
)
def test_a_run_path_that_is_a_link_is_refused_before_any_work(outputs_root, tmp_path, name, target):
    """A symlinked checkpoints folder, lock, curve folder, or a dangling link as the run folder:
    one line naming the link, and nothing written there."""
    (tmp_path / "elsewhere").mkdir(exist_ok=True)
    folder = outputs_root / "05_train"
    folder.mkdir()
    os.symlink(tmp_path / target, folder / name)
    with pytest.raises(outputs.LinkedOutputsError, match=rf"{name} is a symbolic link \(to .*{target}\)"):
        outputs.claim_run("05_train", "r")
    assert not list((tmp_path / "elsewhere").iterdir())
    assert not (folder / ".r.lock").exists() or (folder / ".r.lock").is_symlink()


def test_a_notebook_folder_outside_the_outputs_is_refused(outputs_root, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", outputs_root / "05_train")
    with pytest.raises(outputs.LinkedOutputsError, match=r"05_train is a symbolic link"):
        outputs.claim_run("05_train", "r")
    outputs.claim_run("06_evaluate", "r").release()  # a real folder: claimed
    os.symlink(tmp_path / "elsewhere", outputs_root / "nested")
    (tmp_path / "elsewhere" / "07").mkdir()  # no link of its own, but it lies under one
    with pytest.raises(outputs.LinkedOutputsError, match=r"nested/07 resolves to .*elsewhere/07, outside the outputs"):
        outputs.claim_run("nested/07", "r")


def test_the_runner_refuses_a_linked_run_with_one_line_and_rc_2(outputs_root, tmp_path, capsys):
    from arrank.workbook import run

    (outputs_root / "01_de_capacity").mkdir()
    os.symlink(tmp_path / "missing", outputs_root / "01_de_capacity" / "linked")
    assert run.main(["01", "-p", "run_name", "linked"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "linked is a symbolic link" in err


def test_start_run_creates_then_refuses_existing(outputs_root):
    p = {"profile": "quick", "run_name": "r1"}
    d = outputs.start_run("01_de_capacity", p)
    assert d == outputs_root / "01_de_capacity" / "r1" and d.is_dir()
    (d / "keep.txt").write_text("earlier run")
    with pytest.raises(outputs.RunExistsError, match="r1 exists"):
        outputs.start_run("01_de_capacity", p)
    assert (d / "keep.txt").read_text() == "earlier run"
    outputs.claim_run("01_de_capacity", "r1").release()  # the refusal gave the name back


def test_auto_run_name_uses_profile_and_time():
    name = outputs.resolve_run_name("auto", "paper")
    assert name.startswith("paper-") and len(name) == len("paper-20260101-000000")
    assert outputs.resolve_run_name("mine", "quick") == "mine"


def test_auto_names_are_unique_even_within_one_second(outputs_root, monkeypatch):
    """Runs with run_name auto started in the same second (the time fixed here) get names of their
    own: a name another process holds, or whose run or checkpoints folder exists, is passed over."""
    monkeypatch.setattr(
        outputs, "resolve_run_name", lambda name, profile: f"{profile}-20260101-000000" if name == "auto" else name
    )
    name, held = outputs.claim_name("05_train", "auto", "quick", outputs_root)  # the first run, going
    second, lock = outputs.claim_name("05_train", "auto", "quick", outputs_root)
    assert (name, second) == ("quick-20260101-000000", "quick-20260101-000000-2")
    held.release(), lock.release()
    outputs.checkpoints_dir("05_train", name, outputs_root).mkdir()  # an interrupted run of that name
    outputs.run_path("05_train", second, outputs_root).mkdir()  # a finished one
    third, lock = outputs.claim_name("05_train", "auto", "quick", outputs_root)
    assert third == "quick-20260101-000000-3"
    lock.release()
    name, lock = outputs.claim_name("05_train", "mine", "quick", outputs_root)
    assert name == "mine"
    lock.release()
    p = {"run_name": "auto", "profile": "paper"}  # outside the runner (JupyterLab): the same
    assert [outputs.start_run("01_de_capacity", p).name for _ in range(2)] == [
        "paper-20260101-000000",
        "paper-20260101-000000-2",
    ]


def test_write_results_contract(tmp_path):
    import numpy as np

    path = outputs.write_results(tmp_path, "01_de_capacity", {"seed": 0}, {"cvr": np.float64(0.25)}, {"train": 1.5})
    data = json.loads(path.read_text())
    assert list(data) == ["notebook", "params", "metrics", "timings", "env", "warnings"]
    assert data["metrics"] == {"cvr": 0.25} and data["env"]["cpu_count"] >= 1 and data["warnings"] == []
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]  # no temporary file left
    with pytest.raises(ValueError, match="flat strings"):
        outputs.write_results(tmp_path, "x", {}, {"a/b": 1}, {})


def test_timed_accumulates():
    t = {}
    with outputs.timed(t, "step"):
        pass
    with outputs.timed(t, "step"):
        pass
    assert set(t) == {"step"} and t["step"] >= 0


@pytest.mark.parametrize("umask, file_mode, dir_mode", [(0o022, 0o644, 0o755), (0o002, 0o664, 0o775)])
def test_results_and_temporary_folders_follow_the_umask(tmp_path, umask, file_mode, dir_mode):
    """results.json came out 0600 and model/ 0700 (tempfile's modes), unreadable to the
    other users of a shared machine; now they get what the umask gives a plain open/mkdir."""
    import tempfile

    before = os.umask(umask)
    try:
        path = outputs.write_results(tmp_path, "01_de_capacity", {}, {"a": 1}, {})
        made = Path(tempfile.mkdtemp(dir=tmp_path))  # as models.save_atomic and the data cache make theirs
        (made / "inner").mkdir(mode=0o700)
        fd, inner_file = tempfile.mkstemp(dir=made / "inner")
        os.close(fd)
        outputs.umask_permissions(made)
        outputs.claim_lock(tmp_path / ".r.lock", "busy").release()
    finally:
        os.umask(before)
    assert path.stat().st_mode & 0o777 == file_mode
    assert made.stat().st_mode & 0o777 == dir_mode and (made / "inner").stat().st_mode & 0o777 == dir_mode
    assert Path(inner_file).stat().st_mode & 0o777 == file_mode == (tmp_path / ".r.lock").stat().st_mode & 0o777


def test_a_run_name_is_claimed_by_one_process_and_given_back(outputs_root):
    fd = outputs.claim_run("01_de_capacity", "r", outputs_root)
    lock = outputs.lock_path("01_de_capacity", "r", outputs_root)
    assert lock.read_text() == f"{os.getpid()}\n"
    with pytest.raises(
        outputs.RunInProgressError, match=rf"01_de_capacity run 'r' is in progress \(pid {os.getpid()}\)"
    ):
        outputs.claim_run("01_de_capacity", "r", outputs_root)  # a second claim, even from this process
    fd.release()
    outputs.claim_run("01_de_capacity", "r", outputs_root).release()  # given back (filelock keeps the file)
    lock.write_text("999999\n")  # the file a killed run leaves: not held, so not in progress
    outputs.claim_run("01_de_capacity", "r", outputs_root).release()


def test_staging_folders_of_dead_runs_become_failed_folders(outputs_root):
    folder = outputs_root / "05_train"
    for name in (".a.partial-11", ".a.partial-12", ".b.partial-13"):
        (folder / name).mkdir(parents=True)
        (folder / name / "x.txt").write_text(name)
    os.utime(folder / ".a.partial-11", (1e9, 1e9))  # its last write names its failed folder
    held = outputs.claim_run("05_train", "b", outputs_root)  # b is running: its folder is left alone
    try:
        moved = outputs.tidy_abandoned("05_train", outputs_root)
    finally:
        held.release()
    assert sorted(p.read_text() for p in folder.glob("a.failed-*/x.txt")) == [".a.partial-11", ".a.partial-12"]
    assert len(moved) == 2 and len({p.name for p in moved}) == 2  # same second: the names stay distinct
    assert f"a.failed-{datetime.fromtimestamp(1e9):%Y%m%d-%H%M%S}" in {p.name for p in moved}
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and not p.name.endswith(".lock")) == [
        ".b.partial-13"
    ]
    assert [p.name for p in outputs.tidy_abandoned("05_train", outputs_root)][0].startswith("b.failed-")  # b ended


@pytest.mark.skipif(outputs.png_backend() is None, reason="no Chromium for kaleido")
def test_figures_share_one_chromium_and_each_png_is_its_own(tmp_path):
    import plotly.graph_objects as go

    small = go.Figure(go.Scatter(x=[1, 2], y=[1, 2]))
    wide = go.Figure(go.Bar(x=["a", "b", "c"], y=[3, 1, 2]))
    outputs.save_figure(small, tmp_path, "small", width=300, height=200)
    assert outputs._png_server.cache_info().currsize == 1  # started by the first PNG, reused by the next
    outputs.save_figure(wide, tmp_path, "wide", width=640, height=200)
    assert outputs._png_server.cache_info().misses == 1  # one Chromium for the process
    sizes = {}
    for name in ("small", "wide"):
        head = (tmp_path / f"{name}.png").read_bytes()[:24]
        assert head[:8] == b"\x89PNG\r\n\x1a\n"
        sizes[name] = (int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big"))
        assert (tmp_path / f"{name}.html").exists()
    assert sizes == {"small": (600, 400), "wide": (1280, 400)}  # scale 2


def test_one_of_several_processes_outside_the_runner_is_refused(outputs_root, monkeypatch):
    """Under torchrun, only the runner decides which process writes the run."""
    from arrank.common.params import ParamError

    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(
        ParamError,
        match=r"05_train is one of 2 processes \(WORLD_SIZE\) but not under the runner.*"
        r"torchrun --nproc_per_node N -m arrank.workbook.run 05_train -p run_name NAME",
    ):
        outputs.start_run("05_train", {"run_name": "r", "profile": "quick"})
    assert list(outputs_root.iterdir()) == []
    monkeypatch.setenv("ARRANK_RUN_DIR", str(outputs_root / "staged"))  # under the runner: its folder
    assert outputs.start_run("05_train", {"run_name": "r", "profile": "quick"}) == outputs_root / "staged"


def _code_tree(root: Path, body: str) -> None:
    (root / "lib/arrank/sub").mkdir(parents=True, exist_ok=True)
    (root / "notebooks").mkdir(exist_ok=True)
    (root / "lib/arrank/sub/mod.py").write_text(body)
    (root / "notebooks/05_train.py").write_text("x = 1\n")


def test_code_digest_follows_the_code_and_nothing_else(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _code_tree(a, "def f():\n    return 1\n")
    _code_tree(b, "def f():\n    return 1\n")
    (b / "README.md").write_text("not code")  # outside lib and the notebooks: no change
    digest = outputs.code_digest(a)
    assert len(digest) == 12 and digest == outputs.code_digest(b)
    (b / "lib/arrank/sub/mod.py").write_text("def f():\n    return 2\n")
    assert outputs.code_digest(b) != digest
    (b / "lib/arrank/sub/mod.py").rename(b / "lib/arrank/sub/other.py")  # same content, other path
    assert outputs.code_digest(b) not in (digest, outputs.code_digest(a))


def test_env_info_says_whether_the_tree_differs_from_its_commit(tmp_path, monkeypatch):
    import shutil
    import subprocess

    from arrank.common import paths

    _code_tree(tmp_path, "v = 1\n")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "c"], check=True)
    monkeypatch.setattr(paths, "ROOT", tmp_path)
    clean = outputs.env_info()
    assert clean["git_dirty"] is False and len(clean["git_commit"]) >= 7
    (tmp_path / "lib/arrank/sub/mod.py").write_text("v = 2\n")
    dirty = outputs.env_info()
    assert dirty["git_dirty"] is True and dirty["git_commit"] == clean["git_commit"]
    assert dirty["code_digest"] != clean["code_digest"]
    shutil.rmtree(tmp_path / ".git")  # a copied tree without its history
    bare = outputs.env_info()
    assert bare["git_commit"] is None and bare["git_dirty"] is None and bare["code_digest"] == dirty["code_digest"]


def test_a_resume_may_change_only_what_does_not_change_training(tmp_path):
    """Checkpoints recorded before ``query_batch`` existed still resume; another ``steps`` does not."""
    (tmp_path / "checkpoint-2").mkdir()
    then = {"run_name": "a", "steps": 10, "save_steps": 2, "scheme": "fractional"}
    outputs.record_resume_params(tmp_path, then)
    assert outputs.resume_diff(tmp_path, {**then, "run_name": "b", "save_steps": 5, "query_batch": 32}) == {}
    assert outputs.resume_diff(tmp_path, {**then, "steps": 20}) == {"steps": (10, 20)}
    assert outputs.resume_diff(tmp_path, {k: v for k, v in then.items() if k != "scheme"}) == {
        "scheme": ("fractional", "<absent>")
    }
    assert outputs.resume_diff(tmp_path / "none", then) is None


def test_a_resume_on_a_custom_data_file_edited_since_is_refused(tmp_path):
    """A run on one's own data records its file's sha256 (``data_digest``) with its parameters; the
    same command after the file's lines were reordered is refused as another parameter is. WordNet
    and ESCI record none (their data are built from pinned sources)."""
    import hashlib

    data = tmp_path / "mine.jsonl"
    data.write_text('{"query_id": "a"}\n{"query_id": "b"}\n')
    folder, then = tmp_path / "ckpt", {"run_name": "r", "dataset": "custom", "data_path": str(data), "steps": 10}
    outputs.record_resume_params(folder, then)
    (folder / "checkpoint-5").mkdir()
    digest = json.loads((folder / "params.json").read_text())["data_digest"]
    assert digest == hashlib.sha256(data.read_bytes()).hexdigest()[:12] == outputs.data_digest(then)["data_digest"]
    assert outputs.resume_diff(folder, {**then, "run_name": "s"}) == {}
    data.write_text('{"query_id": "b"}\n{"query_id": "a"}\n')  # the same queries, reordered
    now = outputs.data_digest(then)["data_digest"]
    assert now != digest and outputs.resume_diff(folder, then) == {"data_digest": (digest, now)}
    (folder / "checkpoint-10").mkdir()  # the newest checkpoint is named
    with pytest.raises(
        outputs.ResumeError, match=rf"\(step 10\) made with other parameters: data_digest was '{digest}', now '{now}'"
    ):
        outputs.check_resume(folder, then)
    wordnet = {"run_name": "w", "dataset": "wordnet", "data_path": "", "steps": 10}
    assert outputs.data_digest(wordnet) == {} and outputs.resume_params(wordnet) == {
        "dataset": "wordnet",
        "data_path": "",
        "steps": 10,
    }


def test_a_staged_folder_appears_whole_or_not_at_all(tmp_path):
    """outputs.staged_folder (the data cache, saved models, WordNet): an error inside the block
    leaves neither the target nor a temporary folder; an existing target is refused unless
    ``replace``, which swaps it for the new one."""
    target = tmp_path / "sub" / "thing"
    with pytest.raises(RuntimeError):
        with outputs.staged_folder(target) as tmp:
            (tmp / "half").write_text("x")
            raise RuntimeError("interrupted")
    assert list((tmp_path / "sub").iterdir()) == []
    with outputs.staged_folder(target) as tmp:
        (tmp / "a").write_text("1")
    assert [p.name for p in target.iterdir()] == ["a"] and target.stat().st_mode & 0o777 == 0o777 & ~outputs._umask()
    with pytest.raises(OSError):
        with outputs.staged_folder(target) as tmp:
            (tmp / "b").write_text("2")
    with outputs.staged_folder(target, replace=True) as tmp:
        (tmp / "c").write_text("3")
    assert [p.name for p in target.iterdir()] == ["c"] and [p.name for p in (tmp_path / "sub").iterdir()] == ["thing"]


def test_an_atomic_write_that_fails_leaves_the_file_as_it_was_and_no_temporary_file(tmp_path, monkeypatch):
    import errno

    path = outputs.write_text_atomic(tmp_path / "a.txt", "whole")

    class Full:
        def __init__(self, fd, *a, **k):
            os.close(fd)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(outputs.os, "fdopen", Full)
    with pytest.raises(OSError, match="No space left"):
        outputs.write_text_atomic(path, "new and longer")
    assert path.read_text() == "whole" and [p.name for p in tmp_path.iterdir()] == ["a.txt"]


ROWS = "query,violation,ndcg\nq0,1,0.4\nq1,0,0.6\n"  # cvr 0.5, ndcg 0.5 over 2 queries


@pytest.mark.parametrize(
    "text, metrics, why",
    [
        (ROWS, {"cvr": 0.5, "ndcg": 0.5, "n_queries": 2}, None),
        (ROWS[:-4] + "\n", {"cvr": 0.5, "n_queries": 2}, "a row is cut short"),
        ("query,violation,ndcg\n", {"cvr": 0.5}, "no rows"),
        (ROWS, {"cvr": 0.5, "ndcg": 0.51}, "the mean ndcg of its rows is 0.5 where its results.json records 0.51"),
        (ROWS, {"ndcg": 0.5001}, "the mean ndcg of its rows is 0.5 where its results.json records 0.5001"),
    ],
)
def test_per_query_rows_are_held_to_their_results_json(tmp_path, text, metrics, why):
    """Each kind of damage is named; rows that agree with every recorded mean (ndcg too, to 1e-9) are read."""
    (path := tmp_path / "per_query.csv").write_text(text)
    if why is None:
        assert outputs.read_rows(path, ["query", "violation", "ndcg"], metrics)["query"].tolist() == ["q0", "q1"]
        return
    with pytest.raises(outputs.DamagedResultsError, match=rf"per_query.csv is damaged \({why}\)"):
        outputs.read_rows(path, ["query", "violation", "ndcg"], metrics)


def test_a_table_without_a_needed_column_names_the_column(tmp_path):
    """A column the reader needs and the file lacks is named as damage, not a pandas KeyError."""
    (path := tmp_path / "per_query.csv").write_text(ROWS)
    with pytest.raises(outputs.DamagedResultsError, match=r"per_query.csv is damaged \(no column \['r1'\]\)"):
        outputs.read_rows(path, ["query", "r1"], {"n_queries": 2})


def test_rows_given_as_bytes_are_read_instead_of_the_file(tmp_path):
    """``data``: the bytes checked (a tarball's member), not the file at ``path`` (here a different table)."""
    (path := tmp_path / "per_query.csv").write_text("query,violation,ndcg\nq9,0,1\n")
    read = outputs.read_rows(path, ["query", "ndcg"], {"cvr": 0.5, "n_queries": 2}, data=ROWS.encode())
    assert read["query"].tolist() == ["q0", "q1"]


def test_a_curve_is_held_to_its_last_step(tmp_path):
    """A curve's results.json records its end: the last step's means, not the first's."""
    (path := tmp_path / "curve.csv").write_text("step,query,violation\n1,q0,1\n1,q1,1\n2,q0,0\n2,q1,1\n")
    assert len(outputs.read_rows(path, ["query", "violation"], {"cvr": 0.5, "n_queries": 2}, by="step")) == 4
    with pytest.raises(outputs.DamagedResultsError, match="the mean cvr of its rows is 0.5 where .* records 1"):
        outputs.read_rows(path, ["query", "violation"], {"cvr": 1.0, "n_queries": 2}, by="step")


def test_results_of_the_wrong_shape_are_named_and_warnings_may_be_absent(tmp_path):
    """A results.json that is a list is damaged; one written before ``warnings`` existed is whole."""
    assert outputs.results_problem([1]) == "not a mapping"
    old = {"notebook": "x", "params": {}, "metrics": {}, "timings": {}, "env": {}}
    assert outputs.results_problem(old) is None and outputs.results_problem(old | {"warnings": {}}) is not None
    (path := tmp_path / "results.json").write_text("[1]")
    with pytest.raises(outputs.DamagedResultsError, match=r"results.json is damaged \(not a mapping\)"):
        outputs.read_results(path)


def test_latest_is_the_newest_finished_run_and_failed_or_staged_ones_are_not_runs(outputs_root):
    """``finished_runs`` lists runs oldest first without ``.failed-`` or hidden staging folders, even
    when these hold a results.json; ``latest`` is the newest."""
    for name, when in (("old", 1000), ("new", 2000), ("new.failed-1", 3000), (".new.partial-9", 4000)):
        (folder := outputs_root / "05_train" / name).mkdir(parents=True)
        (folder / "results.json").write_text("{}")
        os.utime(folder / "results.json", (when, when))
    assert [p.name for p in outputs.finished_runs("05_train")] == ["old", "new"]
    assert outputs.find_run("05_train", "latest").name == "new"
