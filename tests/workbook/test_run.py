"""The papermill runner: parameter checks, never overwriting, staging and failure handling, and
the faults produced for real (docs/reliability.md): a second process on the same run
name, Ctrl-C and kill -9 in the middle of a run, a run directory that appears meanwhile, a
multi-line error inside the kernel, unwritable outputs, checkpoints of other parameters."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from arrank.common import outputs, params, paths
from arrank.common.outputs import RunExistsError, RunInProgressError
from arrank.common.params import ParamError
from arrank.workbook import run

pytestmark = pytest.mark.slow  # trains a model or runs notebooks / kernels / sweeps

# the fake notebook's rules, registered in this process and in a runner subprocess (the kernel
# takes the values the runner resolved)
SPEC = "{'sleep': (0.0, None)}"
FAKE = textwrap.dedent("""\
    # %% tags=["parameters"]
    profile: str = "quick"  # quick or paper
    seed: int = 0  # unused
    run_name: str = "auto"  # the run
    fail: bool = False  # raise a multi-line error
    sleep: float = 0.0  # seconds to sleep
    squat: bool = False  # make the run directory meanwhile
    no_results: bool = False  # end without results.json

    # %%
    import time
    from arrank.common import outputs, params, paths
    P = params.check_params("99_fake", globals())
    run_dir = outputs.start_run("99_fake", P)
    (run_dir / "table.csv").write_text("a\\n1\\n")
    if P["sleep"]:
        (run_dir / "started").write_text("")
        time.sleep(P["sleep"])
    if P["fail"]:
        from arrank.common.wordnet_setup import HOW_TO, WordNetMissingError
        raise WordNetMissingError(HOW_TO)
    if P["squat"]:  # someone else creates the run directory while this run is going
        (run_dir.parent / P["run_name"]).mkdir()
        (run_dir.parent / P["run_name"] / "other.txt").write_text("not this run's")
    if not P["no_results"]:
        outputs.write_results(run_dir, "99_fake", P, {"answer": 42, "outputs": str(paths.OUTPUTS)}, {})
""")


@pytest.fixture
def fake_notebook(tmp_path, monkeypatch):
    monkeypatch.setitem(params.RULES, "99_fake", eval(SPEC))
    path = tmp_path / "99_fake.py"
    path.write_text(FAKE)
    return path


def start_runner(fake, outputs_root, *args, preexec_fn=None):
    """``python -m arrank.workbook.run FAKE ARGS`` in its own process (with the fake's spec),
    writing to ``outputs_root``."""
    code = (
        f"import sys; from arrank.common import params; from arrank.workbook import run; params.RULES['99_fake'] = {SPEC}; "
        "raise SystemExit(run.main(sys.argv[1:]))"
    )
    env = {**os.environ, "ARRANK_OUTPUTS": str(outputs_root), "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen(
        [sys.executable, "-c", code, str(fake), *args, "--no-progress"],
        env=env,
        cwd=paths.ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=preexec_fn,
    )


def wait_started(outputs_root, name, timeout=90):
    """The staging folder of run ``name`` once its kernel is inside the notebook's sleep."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        found = list((outputs_root / "99_fake").glob(f".{name}.partial-*/started"))
        if found:
            return found[0].parent
        time.sleep(0.2)
    raise AssertionError(f"run {name} did not start within {timeout} s")


def children(pid):
    """The pids of a process's children (the kernel papermill started)."""
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def end(pids):
    """Kill what a test started and is still alive (by pid), and say whether any was."""
    alive = []
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            alive.append(pid)
        except ProcessLookupError:
            pass
    return alive


def test_unknown_parameter_is_refused_before_running(outputs_root):
    with pytest.raises(
        ParamError, match=r"unknown parameter\(s\) \['k_max'\] for 01_de_capacity; allowed: .*k_max_exact"
    ):
        run.run_notebook("01_de_capacity", {"k_max": "3"}, outputs_root=outputs_root)
    assert list(outputs_root.iterdir()) == []


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("k_max_exact", "9", r"k_max_exact=9 is out of range: allowed in \[2, 7\]"),
        ("profile", "fast", r"profile='fast' is not allowed"),
        ("seed", "x", r"seed='x' must be a number"),
        ("run_name", "../up", r"run_name='../up' must be"),
    ],
)
def test_bad_values_are_refused(outputs_root, name, value, message):
    with pytest.raises(ParamError, match=message):
        run.run_notebook("01", {name: value}, outputs_root=outputs_root)


def test_inputs_in_other_files_are_checked_before_any_kernel(outputs_root):
    """06's train_run and 08's sweep files are found before a kernel starts: one ParamError, no
    failed run folder."""
    for stem, given, message in (
        ("06", {"train_run": "r9"}, r"no finished 05_train run named 'r9'"),
        ("06", {"train_run": "latest"}, r"no finished 05_train run named 'latest'"),
        ("08", {"sweep": "sweeps/nothing.yaml"}, r"sweep='sweeps/nothing.yaml': no such sweep file"),
        (
            "08",
            {"curve_sweeps": "sweeps/table1_wordnet_quick.yaml,x.yaml"},
            r"curve_sweeps='x.yaml': no such sweep file",
        ),
    ):
        with pytest.raises(ParamError, match=message):
            run.run_notebook(stem, given, outputs_root=outputs_root)
    assert list(outputs_root.rglob("*")) == []


def test_notebook_07s_globs_that_match_no_finished_run_are_refused_before_any_kernel(outputs_root, capsys):
    """07's ``from_runs`` and ``arr_runs`` (but ``*``, any ARR runs there are) must match a finished run
    whose results.json the notebook can read (``figure3.matching_runs``): exit 2, one line naming the
    glob and the runs there are, nothing written."""
    for name in ("damaged", "quick-a"):  # in this order: finished_runs lists the older first
        (outputs_root / "05_train" / name).mkdir(parents=True)
    (outputs_root / "05_train" / "damaged" / "results.json").write_text("{}")
    outputs.write_results(outputs_root / "05_train" / "quick-a", "05_train", {}, {}, {})
    assert run.main(["07", "-p", "arr_runs", "table1-*"]) == 2
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1
        and "arr_runs='table1-*' matches no readable finished 05_train run; finished: ['damaged', 'quick-a']" in err
    )
    with pytest.raises(
        ParamError, match=r"from_runs='paper-\*' matches no readable finished 07_de_ce_baselines run; finished: none"
    ):
        run.run_notebook("07", {"from_runs": "paper-*"}, outputs_root=outputs_root)
    with pytest.raises(ParamError, match=r"arr_runs='dam\*' matches no readable finished 05_train run"):
        run.check_inputs("07_de_ce_baselines", {"from_runs": "", "arr_runs": "dam*"}, outputs_root)
    for arr in ("quick-*", "*"):
        run.check_inputs("07_de_ce_baselines", {"from_runs": "", "arr_runs": arr}, outputs_root)
    written = ["05_train", "damaged", "quick-a", "results.json", "results.json"]
    assert sorted(p.name for p in outputs_root.rglob("*")) == written


def test_own_data_with_a_line_over_the_limit_is_refused_by_the_runner_before_any_kernel(tmp_path, outputs_root, capsys):
    """A 2 MiB line of valid JSON (a huge query) in one's own data: exit 2 and one line naming file, line
    and limit, no run folder (the kernel would have read and held it whole)."""
    path = tmp_path / "huge.jsonl"
    row = {"query_id": "q", "query": "x" * (2 << 20), "relevant": [{"id": "a", "text": "t"}]}
    path.write_text('{"query_id": "q0", "query": "y", "relevant": [{"id": "a", "text": "t"}]}\n' + json.dumps(row))
    assert run.main(["05", "-p", "dataset", "custom", "-p", "data_path", str(path), "-p", "n_eval", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "huge.jsonl:2: the line is over 1,048,576 bytes, a query's most" in err
    assert list(outputs_root.rglob("*")) == []


def test_own_data_with_too_few_queries_for_n_eval_is_refused_by_the_runner_before_any_kernel(outputs_root, capsys):
    """The example's 36 queries and 05's default ``n_eval`` (over 36): exit 2, one line saying what
    n_eval to give, no run folder (the kernel used to fail on it, exit 1)."""
    args = ["05", "-p", "dataset", "custom", "-p", "data_path", "data/fixtures/custom/recipes.jsonl"]
    assert run.main(args) == 2
    assert (
        capsys.readouterr().err.strip().endswith("leaves none of the file's 36 queries to train: give n_eval below 36")
    )
    assert list(outputs_root.rglob("*")) == []


def test_existing_run_directory_is_never_overwritten(outputs_root):
    existing = outputs_root / "01_de_capacity" / "mine"
    existing.mkdir(parents=True)
    (existing / "results.json").write_text('{"earlier": true}')
    with pytest.raises(RunExistsError, match="never overwritten"):
        run.run_notebook("01_de_capacity", {"run_name": "mine"}, outputs_root=outputs_root)
    assert (existing / "results.json").read_text() == '{"earlier": true}'


def test_cli_reports_errors_with_exit_code_2(capsys):
    assert run.main(["01", "-p", "bogus", "1"]) == 2
    assert "unknown parameter(s) ['bogus']" in capsys.readouterr().err
    assert run.main(["nope_notebook"]) == 2
    assert "known notebooks" in capsys.readouterr().err


def test_a_list_too_long_or_a_bracket_form_on_the_command_line_gives_one_short_line(capsys, outputs_root):
    """``-p eval_steps "[4, 8]"`` (the form --help shows) is read; 20,000 values are refused in one
    line under 300 characters that shows the value once, exit 2, nothing written."""
    values = ",".join(map(str, range(1, 20_001)))
    assert run.main(["05", "-p", "eval_steps", values, "-p", "steps", "20000"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 300 and err.count("1,2,3") == 1 and "it holds 20,000" in err
    assert run.main(["05", "-p", "eval_steps", "[4, 8]", "-p", "steps", "2"]) == 2  # read as a list, then checked
    assert (
        capsys.readouterr().err
        == "error: eval_steps=[4, 8]: 2 beyond steps=2 (the first: 4); each is a step of the run\n"
    )
    assert run.main(["05", "-p", "seed", "x" * 5000]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: seed='xxx") and "(5,002 characters) must be a number" in err and len(err) < 300
    assert not any(outputs_root.iterdir())


def test_two_auto_runs_in_the_same_second_get_two_folders(fake_notebook, outputs_root, monkeypatch):
    """run_name auto, twice in one second (the time fixed here): the second run takes the name with
    ``-2``, and its notebook and results.json know it by that name."""
    monkeypatch.setattr(
        outputs, "resolve_run_name", lambda name, profile: f"{profile}-20260101-000000" if name == "auto" else name
    )
    first, second = (run.run_notebook(fake_notebook, {}, outputs_root=outputs_root, progress=False) for _ in "12")
    assert (first.name, second.name) == ("quick-20260101-000000", "quick-20260101-000000-2")
    assert json.loads((second / "results.json").read_text())["params"]["run_name"] == second.name


def test_coerce_follows_the_cells_type():
    assert run.coerce("run_name", "007", "str") == "007"
    assert run.coerce("k", "5", "int") == 5 and run.coerce("k", "none", "int") is None
    assert run.coerce("a", "2.5", "float") == 2.5 and run.coerce("f", "true", "bool") is True
    assert run.coerce("de_dims", "4", "list") == "4" and run.coerce("k", 3, "str") == 3
    for word in ("yes", "1"):  # not read as False
        with pytest.raises(ParamError, match=f"f='{word}' must be true or false"):
            run.coerce("f", word, "bool")
    with pytest.raises(ParamError, match=r"notebook '0' not found \(or ambiguous\)"):  # 01 ... 09: none is run
        run.find_notebook("0")
    with pytest.raises(ParamError, match=r"k='many' must be a number \(int\)"):
        run.coerce("k", "many", "int")
    # a one-item list from the command line: '4' is the list [4]
    assert run.prepare("07", {"de_dims": "4", "alphas": "0,5"})[2]["de_dims"] == [4]
    assert run.prepare("05", {"eval_steps": "120", "steps": "240"})[2]["eval_steps"] == [120]


def test_successful_run_is_staged_then_renamed(fake_notebook, outputs_root):
    final = run.run_notebook(fake_notebook, {"run_name": "ok"}, outputs_root=outputs_root, progress=False)
    assert final == outputs_root / "99_fake" / "ok"
    assert sorted(p.name for p in final.iterdir()) == ["99_fake.ipynb", "results.json", "table.csv"]
    assert sorted(p.name for p in final.parent.iterdir()) == [".ok.lock", "ok"]  # no staging folder (filelock keeps
    # the lock file, unheld: unlinking a lock file would let two processes lock two files of one name)


def test_a_relative_outputs_folder_is_the_callers_though_papermill_and_the_kernel_run_in_the_repository(
    fake_notebook, tmp_path, monkeypatch
):
    """``ARRANK_OUTPUTS=out`` from another folder: the run is written to that folder's ``out`` (it failed:
    ``FileNotFoundError: ... 'out/99_fake/.x.partial-N'``, the staging folder sought from the repository)."""
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    monkeypatch.setattr(paths, "OUTPUTS", Path("out"))
    final = run.run_notebook(fake_notebook, {"run_name": "x"}, progress=False)
    assert final == tmp_path / "here" / "out" / "99_fake" / "x" and (final / "results.json").is_file()
    assert outputs.read_results(final / "results.json")["metrics"]["outputs"] == str(tmp_path / "here" / "out")


def test_failed_run_is_kept_aside_and_its_whole_error_is_shown(fake_notebook, outputs_root, capsys):
    """The notebook's exception type and its whole (multi-line) message, not
    the last line of papermill's wrapper."""
    from arrank.common.wordnet_setup import HOW_TO

    assert run.main([str(fake_notebook), "-p", "run_name", "bad", "-p", "fail", "true", "--no-progress"]) == 1
    err = capsys.readouterr().err
    names = [p.name for p in (outputs_root / "99_fake").iterdir() if not p.name.endswith(".lock")]
    assert len(names) == 1 and names[0].startswith("bad.failed-")
    assert not (outputs_root / "99_fake" / "bad").exists()
    failed = outputs_root / "99_fake" / names[0]
    message = f"99_fake failed: WordNetMissingError: {HOW_TO} (the executed notebook is kept in {failed})"
    assert err == run.error_lines(message) + "\n"
    assert "Traceback" not in err and "PapermillExecutionError" not in err
    assert err.splitlines()[0] == (
        "error: 99_fake failed: WordNetMissingError: WordNet 3.0 is not available to "
        "NLTK. Install it one of these ways, then re-run:"
    )


def disk_full_after_one_save(monkeypatch) -> list:
    """The disk fills after the runner's first save of a file (``outputs.write_text_atomic``): the
    paths it was asked to write, a list that grows as the run goes."""
    import errno

    saves, write = [], outputs.write_text_atomic

    def full_after_one(path, text):
        saves.append(path)
        if len(saves) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return write(path, text)

    monkeypatch.setattr(run.outputs, "write_text_atomic", full_after_one)
    return saves


@pytest.mark.parametrize(
    "args, why",
    [
        (["-p", "no_results", "true"], "RunFailedError: 99_fake finished without writing results.json"),
        (["--disk-full"], "RunFailedError: its executed notebook could not be saved"),
    ],
)
def test_a_notebook_that_ends_without_its_results_or_its_saved_notebook_is_kept_as_failed(
    fake_notebook, outputs_root, capsys, monkeypatch, args, why
):
    """A notebook that raises nothing is still no finished run without its results.json, or when its
    executed notebook could not be saved whole (the disk full after the first save)."""
    if args == ["--disk-full"]:
        disk_full_after_one_save(monkeypatch)
        args = []
    assert run.main([str(fake_notebook), "-p", "run_name", "x", *args, "--no-progress"]) == 1
    assert f"error: 99_fake failed: {why} (the executed notebook is kept in " in capsys.readouterr().err
    assert [p.name[:9] for p in (outputs_root / "99_fake").iterdir() if not p.name.endswith(".lock")] == ["x.failed-"]


def test_a_save_of_the_executed_notebook_that_fails_once_is_forgotten_after_a_whole_one(tmp_path, monkeypatch):
    """Only the last save counts: a failed save followed by a whole one leaves nothing unsaved."""
    import errno

    write, calls = outputs.write_text_atomic, []

    def fails_once(path, text):
        calls.append(path)
        if len(calls) == 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return write(path, text)

    monkeypatch.setattr(run.outputs, "write_text_atomic", fails_once)
    saves, target = run.NotebookSaves(), tmp_path / "n.ipynb"
    saves.write("{}", saves.SCHEME + str(target))
    assert saves.unsaved[str(target)].startswith("No space left on device: it needed 2 bytes, ")
    saves.write("{}", saves.SCHEME + str(target))
    assert str(target) not in saves.unsaved and target.read_text() == "{}"


def test_a_full_disk_while_keeping_the_kernel_log_does_not_hide_the_notebooks_error(
    fake_notebook, outputs_root, capsys, monkeypatch
):
    """When the disk fills as the runner copies the kernel log of a failed run, the notebook's own
    error is still the one line shown, the run is kept as failed, and no hidden staging folder stays."""
    import errno
    import shutil

    def full(src, dst, *a, **k):
        if str(dst).endswith("kernel.log"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return shutil.copy2(src, dst)

    monkeypatch.setattr(run.shutil, "copyfile", full)
    assert run.main([str(fake_notebook), "-p", "run_name", "full", "-p", "fail", "true", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: 99_fake failed: WordNetMissingError: WordNet 3.0 is not available")
    assert "its kernel log could not be copied there (No space left on device)" in err and "Traceback" not in err
    names = [p.name for p in (outputs_root / "99_fake").iterdir() if not p.name.endswith(".lock")]
    assert len(names) == 1 and names[0].startswith("full.failed-")


def test_a_full_disk_while_saving_the_executed_notebook_keeps_the_kernels_error_and_a_whole_notebook(
    fake_notebook, outputs_root, capsys, monkeypatch
):
    """The disk fills after the runner's first save of the executed notebook: the notebook's own error
    stays the line shown, with the file that could not be written and the space it needed; the kept
    notebook is its last whole save (JSON), no temporary file stays, and no empty kernel.log."""
    import nbformat

    saves = disk_full_after_one_save(monkeypatch)
    assert run.main([str(fake_notebook), "-p", "run_name", "full", "-p", "fail", "true", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: 99_fake failed: WordNetMissingError: WordNet 3.0 is not available")
    assert "writing 99_fake.ipynb failed (No space left on device: it needed " in err and " were free): free " in err
    (failed,) = (outputs_root / "99_fake").glob("full.failed-*")
    assert len(saves) > 1 and nbformat.read(failed / "99_fake.ipynb", as_version=4).cells
    assert sorted(p.name for p in failed.iterdir() if p.name.startswith(".")) == []


def test_a_second_process_on_the_same_run_name_is_refused_and_ctrl_c_is_one_line(fake_notebook, outputs_root, capsys):
    """Ctrl-C too: while one runner works on 'x', a second one is refused with
    its pid before touching anything; SIGINT then ends the first with one line, exit 130, and
    its staging folder kept as x.failed-<time> (no hidden .partial left)."""
    proc = start_runner(fake_notebook, outputs_root, "-p", "run_name", "x", "-p", "sleep", "60")
    kernels = []
    try:
        staging = wait_started(outputs_root, "x")
        kernels = children(proc.pid)
        with pytest.raises(RunInProgressError, match=rf"99_fake run 'x' is in progress \(pid {proc.pid}\)"):
            run.run_notebook(fake_notebook, {"run_name": "x"}, outputs_root=outputs_root, progress=False)
        assert run.main([str(fake_notebook), "-p", "run_name", "x"]) == 2
        assert f"is in progress (pid {proc.pid})" in capsys.readouterr().err
        assert sorted(p.name for p in staging.iterdir()) == ["99_fake.ipynb", "started", "table.csv"]
        with pytest.raises(RunInProgressError):  # JupyterLab on the same name is refused too
            outputs.start_run("99_fake", {"run_name": "x", "profile": "quick"})

        proc.send_signal(signal.SIGINT)  # what Ctrl-C sends (the kernel has a process group of its own)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130
        folder = outputs_root / "99_fake"
        failed = [p for p in folder.iterdir() if p.name.startswith("x.failed-")]
        assert len(failed) == 1 and (failed[0] / "started").exists() and (failed[0] / "kernel.log").exists()
        assert err == (
            f"interrupted: 99_fake run 'x' interrupted; what it wrote is kept in {failed[0]}. "
            "Run the same command again to go on (05_train resumes from its last checkpoint)\n"
        )
        assert sorted(p.name for p in folder.iterdir()) == [".x.lock", failed[0].name]  # no staging folder
        outputs.claim_run("99_fake", "x", outputs_root).release()  # free: a claim succeeds; the lock file stays, unheld
        time.sleep(1)
        assert not end(kernels)  # the kernel was shut down with its runner
    finally:
        end([proc.pid, *kernels])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_end_a_run_as_ctrl_c_does_and_the_rerun_goes_at_once(fake_notebook, outputs_root, sig):
    """What Slurm, systemd (SIGTERM) or a closing terminal (SIGHUP) send, to the runner
    alone: one line, exit 128 + the signal, the kernel stopped, the run kept as failed, and the
    same command runs again at once (the name is free)."""
    proc = start_runner(fake_notebook, outputs_root, "-p", "run_name", "x", "-p", "sleep", "60")
    kernels = []
    try:
        wait_started(outputs_root, "x")
        kernels = children(proc.pid)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 128 + sig
        failed = [p for p in (outputs_root / "99_fake").iterdir() if p.name.startswith("x.failed-")]
        assert len(failed) == 1 and err == (
            f"interrupted: 99_fake run 'x' interrupted; what it wrote is kept in "
            f"{failed[0]}. Run the same command again to go on (05_train resumes "
            "from its last checkpoint)\n"
        )
        time.sleep(1)
        assert not end(kernels)
        outputs.claim_run("99_fake", "x", outputs_root).release()  # free: a claim succeeds
        final = run.run_notebook(fake_notebook, {"run_name": "x"}, outputs_root=outputs_root, progress=False)
        assert (final / "results.json").exists()
    finally:
        end([proc.pid, *kernels])


def test_a_killed_run_leaves_no_hidden_folder_after_the_next_run(fake_notebook, outputs_root):
    """kill -9 leaves .x.partial-<pid> (nothing can run on SIGKILL); the lock dies with the
    process, and the next run (here of another name) keeps that folder as x.failed-<time>."""
    proc = start_runner(fake_notebook, outputs_root, "-p", "run_name", "x", "-p", "sleep", "60")
    kernels = []
    try:
        staging = wait_started(outputs_root, "x")
        kernels = children(proc.pid)
        proc.kill()
        proc.wait(timeout=30)
    finally:
        end([proc.pid, *kernels])
    assert staging.name == f".x.partial-{proc.pid}" and staging.is_dir()
    outputs.claim_run("99_fake", "x", outputs_root).release()  # free: a claim succeeds; its lock file stays, unheld
    final = run.run_notebook(fake_notebook, {"run_name": "y"}, outputs_root=outputs_root, progress=False)
    names = sorted(p.name for p in final.parent.iterdir() if not p.name.endswith(".lock"))
    assert len(names) == 2 and names[0].startswith("x.failed-") and names[1] == "y"
    assert (final.parent / names[0] / "started").exists() and (final / "results.json").exists()


def test_a_run_directory_that_appears_meanwhile_keeps_the_run_as_failed(fake_notebook, outputs_root):
    """The final rename fails for real (the directory was created during the
    run); the finished run is kept as x.failed-<time>, the other directory untouched."""
    with pytest.raises(
        run.RunFailedError,
        match=r"99_fake finished, but its run directory .*/x could not be "
        r"written \(Directory not empty\); the complete run is kept in ",
    ):
        run.run_notebook(fake_notebook, {"run_name": "x", "squat": True}, outputs_root=outputs_root, progress=False)
    folder = outputs_root / "99_fake"
    failed = [p for p in folder.iterdir() if p.name.startswith("x.failed-")]
    assert len(failed) == 1 and (failed[0] / "results.json").exists()
    assert sorted(p.name for p in (folder / "x").iterdir()) == ["other.txt"]
    assert [p.name for p in folder.glob(".*")] == [".x.lock"]  # no staging folder; the lock file, unheld


@pytest.mark.parametrize("inner", [False, True], ids=["outputs", "outputs-99_fake"])
def test_unwritable_outputs_give_one_line_and_exit_2(fake_notebook, tmp_path, obey_permissions, inner):
    """A read-only outputs/ (or outputs/99_fake/), for real (as root too: the
    runner then runs without the capability to override permission bits)."""
    root = tmp_path / "outputs"
    (root / "99_fake").mkdir(parents=True)
    if not inner:
        (root / "99_fake").rmdir()  # the runner must create it, in a read-only outputs/
    blocked = root / "99_fake" if inner else root
    blocked.chmod(0o555)
    try:
        proc = start_runner(fake_notebook, root, "-p", "run_name", "x", preexec_fn=obey_permissions)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 2, err
        assert err == (
            f"error: cannot write to {blocked} (Permission denied), where this run writes "
            f"{root / '99_fake'}: make it writable (e.g. chmod u+w {blocked}) or set ARRANK_OUTPUTS "
            "to a writable folder\n"
        )
        assert os.listdir(blocked) == []  # nothing written, nothing half-made
    finally:
        blocked.chmod(0o755)


def test_empty_free_text_parameters_are_refused_before_any_kernel(outputs_root, capsys):
    """'' or blank text fails at once naming the parameter and what is allowed,
    where '' means nothing (02's model_name, subtree: documented meanings) it is kept."""
    for stem, name, value in [
        ("05_train", "model_name", ""),
        ("06_evaluate", "model_name", "  "),
        ("05_train", "lora_targets", ""),
        ("02_rank_condition", "model_name", " "),
        ("03_wordnet_data", "tokenizer_name", ""),
    ]:
        with pytest.raises(ParamError, match=rf"{name}={value!r} is empty: it must be "):
            run.run_notebook(stem, {name: value}, outputs_root=outputs_root)
    with pytest.raises(ParamError, match=r"model_name=' tiny' has spaces around it: it must be one of \['tiny'"):
        run.prepare("05_train", {"model_name": " tiny"})
    assert run.main(["05", "-p", "model_name", ""]) == 2
    assert capsys.readouterr().err.startswith("error: model_name='' is empty: it must be one of ['tiny', 'paper'")
    assert run.prepare("02", {"model_name": ""})[2]["model_name"] == ""  # '' = none
    assert run.prepare("05", {"subtree": ""})[2]["subtree"] == ""  # '' = all nouns
    assert list(outputs_root.iterdir()) == []


def test_a_parameter_given_twice_is_named(capsys):
    assert run.main(["01", "-p", "seed", "1", "-p", "k_max_exact", "4", "-p", "seed", "2"]) == 2
    assert capsys.readouterr().err == (
        "error: parameter(s) ['seed'] given more than once (seed: '1', '2'); give each -p NAME VALUE once\n"
    )


def _interrupted_05_checkpoints(outputs_root, name, **given):
    """The folder an interrupted 05 run leaves: its parameters, recorded as notebook 05's
    ``train.train(record=...)`` records them, and a ``checkpoint-300`` folder (the runner reads only names)."""
    _, _, resolved = run.prepare("05_train", {"run_name": name, **given})
    folder = outputs.checkpoints_dir("05_train", name, outputs_root)
    outputs.record_resume_params(folder, resolved)
    (folder / "checkpoint-300").mkdir()
    return folder


def test_resuming_05_with_other_parameters_is_refused_before_any_kernel(outputs_root, capsys):
    """At the runner: the differing parameters and the ways out, exit 2,
    the checkpoints untouched."""
    folder = _interrupted_05_checkpoints(outputs_root, "r", steps=450)
    before = sorted(p.name for p in folder.iterdir())
    argv = [
        "05",
        "-p",
        "run_name",
        "r",
        "-p",
        "steps",
        "450",
        "-p",
        "scheme",
        "fractional",
        "-p",
        "alpha",
        "3",
        "-p",
        "lr",
        "1e-4",
    ]
    assert run.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"error: {folder} holds the checkpoint of an interrupted run (step 300) made with other "
        "parameters: alpha was 2.0, now 3.0, lr was 0.002, now 0.0001, scheme was 'indicator', "
        "now 'fractional'. Resuming would mix two runs."
    )
    assert "run again with the parameters it was made with, or pass another run_name" in err
    assert f"or delete {folder} to start this name afresh" in err and len(err.splitlines()) == 1
    assert sorted(p.name for p in folder.iterdir()) == before
    assert sorted(p.name for p in (outputs_root / "05_train").iterdir()) == [".checkpoints-r", ".r.lock"]


def test_what_several_processes_cannot_share_is_refused_before_any_kernel(outputs_root, capsys, monkeypatch):
    """Under torchrun (WORLD_SIZE > 1) Unsloth, run_name=auto, eval_steps and notebooks other than
    05 are refused at once, exit 2, one message naming the value and what is allowed, nothing
    written; a RANK outside [0, WORLD_SIZE) is named too. One process: the same arguments pass."""
    from arrank.training import models

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    cases = [
        (
            ["05", "-p", "run_name", "r", "-p", "backend", "unsloth"],
            "error: backend='unsloth' trains on one GPU only (Unsloth does not support multi-GPU training), and "
            "this is one of 2 processes (WORLD_SIZE): use backend='transformers' or 'auto' (transformers + peft "
            "under several processes), or launch a single process",
        ),
        (
            ["05", "-p", "scheme", "fractional"],
            "error: run_name='auto' under 2 processes: each would stamp its own time, and they must share one "
            "run name (and its checkpoints); give -p run_name NAME",
        ),
        (
            ["05", "-p", "run_name", "r", "-p", "load_in_4bit", "true"],
            "error: load_in_4bit=True loads 4-bit base weights through Unsloth, which trains on one GPU only, and "
            "this is one of 2 processes: give load_in_4bit=false (16-bit LoRA through transformers + peft) or "
            "launch a single process",
        ),
        (
            ["05", "-p", "run_name", "r", "-p", "eval_steps", "[4, 8]"],
            "error: eval_steps=[4, 8] scores the held-out queries on one process, and this is one of 2: give "
            "eval_steps [] or launch a single process",
        ),
        (
            ["01", "-p", "run_name", "r"],
            "error: 01_de_capacity runs in one process, and this is one of 2 (WORLD_SIZE=2): only ['05_train'] "
            "train on several processes; run 01_de_capacity without torchrun / accelerate launch",
        ),
    ]
    for argv, message in cases:
        assert run.main(argv) == 2
        assert capsys.readouterr().err == message + "\n"
    with pytest.raises(RuntimeError, match=r"^backend='unsloth' trains on one GPU only"):
        models.resolve_backend("unsloth")  # the same refusal where the notebook loads a model
    assert models.resolve_backend("auto") == "transformers"
    monkeypatch.setenv("RANK", "2")
    assert run.main(["05", "-p", "run_name", "r"]) == 2
    assert capsys.readouterr().err == "error: environment variable RANK=2 must lie in [0, WORLD_SIZE=2)\n"
    assert list(outputs_root.iterdir()) == []
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("RANK", "0")
    assert run.prepare("05", {"scheme": "fractional"})[2]["run_name"] == "auto"  # named when claimed
    assert run.prepare("05", {"run_name": "r", "backend": "unsloth"})[2]["backend"] == "unsloth"


def test_what_a_run_tells_its_user_is_recorded_and_reaches_the_terminal(tmp_path, capsys):
    """A notice inside a run (a checkpoint set aside, a fallback) is printed, recorded in
    results.json's ``warnings`` and read back by the runner and the sweep (``told_in``)."""
    from arrank.common import notices, outputs

    notices.notice("packing: per_query falls back to unpacked items (test)")
    notices.notice("packing: per_query falls back to unpacked items (test)")  # said twice, kept once
    outputs.write_results(tmp_path, "05_train", {}, {}, {})
    assert capsys.readouterr().out.count("falls back") == 2
    assert run.told_in(tmp_path).count("packing: per_query falls back to unpacked items (test)") == 1
    assert run.told_in(tmp_path / "missing") == []


def test_an_interrupted_command_prints_no_traceback_of_abandoned_tasks():
    """A stopped command abandons nbclient's tasks (a kernel the signal ended: DeadKernelError);
    asyncio would print 'Task exception was never retrieved' with a traceback under the one
    ``interrupted:`` line. After ``interrupted`` nothing but that line reaches stderr."""
    import subprocess
    import sys

    code = (
        "import asyncio, gc\n"
        "from arrank.workbook import run\n"
        "async def dead():\n    raise RuntimeError('DeadKernelError: kernel died')\n"
        "loop = asyncio.new_event_loop()\n"
        "task = loop.create_task(dead())\n"
        "loop.run_until_complete(asyncio.sleep(0.01))\n"
        "rc = run.interrupted(KeyboardInterrupt(), 'stopped')\n"
        "del task\ngc.collect()\nloop.close()\nraise SystemExit(rc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 130 and done.stderr == "interrupted: stopped\n"
