"""Sweeps: one notebook run over a grid of parameters (paper §5, Tables 1-3 and Figure 3).

``python -m arrank.workbook.sweep sweeps/NAME.yaml [--jobs N] [--list] [--executor local|slurm]``. A
sweep file names the ``notebook``, the ``fixed`` parameters and the ``grid`` (docs/running.md). Every
point is an ordinary run of ``arrank.workbook.run`` named ``<sweep>-<name>=<value>-...``, finished
exactly when its ``results.json`` exists. What is checked, skipped, recorded and interrupted:
docs/running.md ("Sweeps"), faults: docs/reliability.md; the job executors (``sweep_jobs``):
docs/scale-out.md.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import itertools
import json
import math
import os
import re
import signal
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterator

from arrank.common import outputs, paths, processes
from arrank.common.params import ParamError, spec_for
from arrank.workbook import run, sweep_jobs

SWEEPS = paths.ROOT / "sweeps"
KEYS = {"notebook", "grid", "fixed", "paper", "description", "resources"}
PAPER_KEYS = ("table1", "table2", "table3", "fig3")
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,59}"
MAX_POINTS = 10_000  # a larger grid is refused before it is expanded (--max-points overrides)


class SweepError(ValueError):
    """A sweep file is malformed or names something the notebook does not accept."""


@dataclass(frozen=True)
class Point:
    """One run of a sweep: its run name, its grid values, and the parameters given to the runner."""

    run_name: str
    grid: dict[str, Any]
    overrides: dict[str, Any]
    resolved: dict[str, Any] = field(repr=False)


@dataclass(frozen=True)
class Sweep:
    """A checked sweep file with its expanded points (in file order)."""

    name: str
    path: Path
    notebook: str
    fixed: dict[str, Any]
    points: list[Point]
    paper: str | None = None
    description: str = ""
    resources: dict[str, Any] = field(default_factory=dict)

    @property
    def grid_keys(self) -> list[str]:
        """Every parameter some part of the grid varies, in order of first appearance."""
        return list(dict.fromkeys(k for p in self.points for k in p.grid))


def grid_parts(grid: Any, where: str = "grid") -> list[dict[str, list[Any]]]:
    """The grid's mappings (one, or each of a list), checked: non-empty mappings of parameter ->
    non-empty list of plain values."""
    parts = grid if isinstance(grid, list) else [grid]
    if not parts or grid == {} or grid is None:
        raise SweepError(f"{where} is empty: give a mapping of parameter -> list of values")
    for i, part in enumerate(parts):
        label = f"{where}[{i}]" if isinstance(grid, list) else where
        if not isinstance(part, dict) or not part:
            raise SweepError(f"{label} must be a non-empty mapping of parameter -> list of values, got {part!r}")
        for name, values in part.items():
            if not isinstance(values, list) or not values:
                raise SweepError(
                    f"{label}.{name} must be a non-empty list of values, got {values!r} "
                    f"(a single value belongs under 'fixed')"
                )
            bad = [v for v in values if isinstance(v, (list, dict))]
            if bad:
                raise SweepError(f"{label}.{name} holds {bad[0]!r}: grid values must be plain values")
    return parts


def count_points(grid: Any, where: str = "grid") -> int:
    """How many points the grid's products hold before duplicates are dropped, computed without
    expanding them (the sum over its mappings of the product of their list lengths)."""
    return sum(math.prod(len(values) for values in part.values()) for part in grid_parts(grid, where))


def check_size(grid: Any, file: str, max_points: int = MAX_POINTS) -> int:
    """Refuse (``SweepError``, before anything is expanded) a grid of more than ``max_points``
    points, with the count, its factors and the way out; returns the count."""
    n = count_points(grid)
    if n > max_points:
        factors = " + ".join(" x ".join(f"{len(v):,} {k}" for k, v in part.items()) for part in grid_parts(grid))
        raise SweepError(
            f"{file}: the grid has {n:,} points ({factors}), more than the cap of {max_points:,}: split the "
            f"sweep, or pass --max-points {n} to run them all"
        )
    return n


def expand_grid(grid: Any, where: str = "grid") -> list[dict[str, Any]]:
    """The points of a grid: the Cartesian product of a mapping's value lists, or the union (in
    order, duplicates dropped: found with a set) of the products of a list of mappings."""
    points: dict[frozenset, dict[str, Any]] = {}
    for part in grid_parts(grid, where):
        for combo in itertools.product(*part.values()):
            point = dict(zip(part.keys(), combo))
            points.setdefault(frozenset(point.items()), point)
    return list(points.values())


def format_value(value: Any) -> str:
    """A grid value as it appears in a run name: 2.0 -> '2', True -> 'true', None -> 'none'."""
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return "none"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return re.sub(r"[^A-Za-z0-9._=-]", "_", str(value))


def point_run_name(sweep_name: str, grid_values: dict[str, Any]) -> str:
    """``<sweep>-<name>=<value>-...``: deterministic from the point, so a finished point is found
    again; names over 100 characters keep a prefix and a hash of the values."""
    name = "-".join([sweep_name] + [f"{k}={format_value(v)}" for k, v in grid_values.items()])
    if len(name) > 100:
        digest = hashlib.sha1(json.dumps(grid_values, sort_keys=True, default=str).encode()).hexdigest()[:10]
        name = f"{name[:89]}-{digest}"
    return name


MAX_FILE_BYTES = 1_000_000  # a sweep file is a few KB; anything near this is not one
MAX_DESCRIPTION = 500  # characters of a sweep's description


def _no_aliases_loader():
    """PyYAML's safe loader refusing aliases (``*name``): nested anchors expand a few KB into
    gigabytes (a "billion laughs"), and a sweep file needs none."""
    import yaml

    class NoAliases(yaml.SafeLoader):
        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                mark = self.peek_event().start_mark
                raise yaml.YAMLError(f"line {mark.line + 1}: aliases (*name) are not allowed in a sweep file")
            return super().compose_node(parent, index)

    return NoAliases


def _read_yaml(path: Path) -> dict[str, Any]:
    """A sweep file's mapping, read as untrusted input: at most ``MAX_FILE_BYTES``, UTF-8, no aliases."""
    import yaml

    if not path.is_file():
        known = sorted(str(p.relative_to(paths.ROOT)) for p in SWEEPS.glob("*.yaml")) if SWEEPS.is_dir() else []
        raise SweepError(f"sweep file {str(path)!r} not found; sweeps: {known}")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise SweepError(f"{path.name} is {size:,} bytes: a sweep file is at most {MAX_FILE_BYTES:,}")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise SweepError(f"{path.name} is not UTF-8 text (byte {err.start}): a sweep file is YAML") from None
    try:
        data = yaml.load(text, Loader=_no_aliases_loader())  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as err:
        raise SweepError(f"{path.name} is not valid YAML: {str(err)[:300]}") from None
    if not isinstance(data, dict):
        raise SweepError(f"{path.name} must be a mapping with keys {sorted(KEYS)}")
    unknown = sorted(set(data) - KEYS)
    if unknown:
        raise SweepError(f"{path.name}: unknown key(s) {unknown}; allowed: {sorted(KEYS)}")
    for key in ("notebook", "grid"):
        if key not in data:
            raise SweepError(f"{path.name} has no '{key}'")
    return data


def load_sweep(path: str | Path, max_points: int = MAX_POINTS) -> Sweep:
    """Read and check a sweep file, expanding its points; nothing runs. A grid over ``max_points``
    is refused before it is expanded; every point goes through the runner's own checks
    (``run.prepare_parsed``, the parameters cell read once), so a bad file fails here, naming the point."""
    path = Path(path)
    if not path.is_absolute() and not path.exists():
        path = paths.ROOT / path
    data = _read_yaml(path)
    name = path.stem
    if not re.fullmatch(NAME_PATTERN, name):
        raise SweepError(f"sweep file name {name!r} must match {NAME_PATTERN} (it prefixes the run names)")
    paper = data.get("paper")
    if paper is not None and (not isinstance(paper, str) or paper not in PAPER_KEYS):
        raise SweepError(f"{path.name}: paper={repr(paper)[:80]} is not allowed; choose one of {list(PAPER_KEYS)}")
    if not isinstance(data["notebook"], (str, int)):
        raise SweepError(f"{path.name}: notebook must be a notebook stem such as 05_train, got {data['notebook']!r}")
    check_size(data["grid"], path.name, max_points)  # before the notebook is read: a refusal takes no time
    try:
        source = run.find_notebook(str(data["notebook"]))
        stem = source.stem
        spec_for(stem)
        defaults = run.parameters_cell(run.read_notebook(source), source)
    except ParamError as err:
        raise SweepError(f"{path.name}: {err}") from None
    fixed = data.get("fixed") or {}
    if not isinstance(fixed, dict):
        raise SweepError(f"{path.name}: 'fixed' must be a mapping of parameter -> value, got {fixed!r}")
    grid_points = expand_grid(data["grid"])
    grid_names = {k for p in grid_points for k in p}
    for where, names in (("fixed", set(fixed)), ("grid", grid_names)):
        if "run_name" in names:
            raise SweepError(f"{path.name}: run_name may not be in '{where}': the sweep names its runs")
    both = sorted(grid_names & set(fixed))
    if both:
        raise SweepError(f"{path.name}: {both} both fixed and in the grid; keep each in one place")
    points: dict[str, Point] = {}
    for values in grid_points:
        overrides = {**fixed, **values, "run_name": point_run_name(name, values)}
        try:
            _, _, resolved = run.prepare_parsed(source, defaults, overrides)
        except ParamError as err:
            where = ", ".join(f"{k}={v!r}" for k, v in values.items())
            raise SweepError(f"{path.name}: point ({where}): {err}") from None
        point = Point(overrides["run_name"], values, overrides, resolved)
        if point.run_name in points:
            raise SweepError(
                f"{path.name}: points {points[point.run_name].grid} and {point.grid} get the same "
                f"run name {point.run_name!r}; use values that differ in their run-name form"
            )
        points[point.run_name] = point
    try:
        resources = sweep_jobs.check_resources(data.get("resources"), f"{path.name}: resources")
    except sweep_jobs.JobError as err:
        raise SweepError(str(err)) from None
    description = data.get("description", "")
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION:
        shown = repr(description)[:80]
        raise SweepError(
            f"{path.name}: description must be a string of at most {MAX_DESCRIPTION} characters, got {shown}"
        )
    return Sweep(name, path, stem, dict(fixed), list(points.values()), paper, description, resources)


def results_path(sweep: Sweep, point: Point, outputs_root: Path | None = None) -> Path:
    """``outputs/<notebook>/<point run name>/results.json``."""
    return outputs.run_path(sweep.notebook, point.run_name, outputs_root) / "results.json"


def point_states(sweep: Sweep, outputs_root: Path | None = None) -> list[str]:
    """``done`` (results.json exists), ``failed`` (only failed attempts exist) or ``missing``,
    per point; raises when a finished run, or the checkpoints of an interrupted one, were made
    with other parameters than the file gives (a resume would mix two settings)."""
    states, stale = [], []
    folder = (outputs_root or paths.OUTPUTS) / sweep.notebook
    present = {p.name for p in folder.iterdir()} if folder.is_dir() else set()  # one listing, not one per point
    tried = {name.rsplit(".failed-", 1)[0] for name in present if ".failed-" in name}
    for point in sweep.points:
        name, diff = point.run_name, {}
        label = name  # how the point is named in the error below
        if name in present and results_path(sweep, point, outputs_root).exists():
            try:
                done = outputs.read_results(results_path(sweep, point, outputs_root))["params"]
            except outputs.DamagedResultsError as err:
                raise SweepError(str(err)) from None
            given = {k: point.resolved[k] for k in point.overrides if k != "run_name"}
            diff = {k: (done.get(k, "<absent>"), v) for k, v in given.items() if done.get(k, "<absent>") != v}
            states.append("done")
        else:
            if name in present or f".checkpoints-{name}" in present:
                diff = outputs.resume_diff(outputs.checkpoints_dir(sweep.notebook, name, outputs_root), point.resolved)
                label = f"{name} (interrupted, its checkpoints)"
            states.append("failed" if point.run_name in tried else "missing")
        if diff:
            stale.append(f"{label}: " + ", ".join(f"{k} was {a!r}, now {b!r}" for k, (a, b) in diff.items()))
    if stale:
        raise SweepError(
            f"{sweep.path.name}: runs of its points were made with other parameters than the file now "
            "gives (runs are never overwritten, nor resumed with other settings; rename the sweep file, "
            "or delete those runs, or for an interrupted point its .checkpoints-<run_name> folder):\n  "
            + "\n  ".join(stale)
        )
    return states


def sweep_dir(sweep: Sweep, outputs_root: Path | None = None) -> Path:
    """``outputs/sweeps/<sweep>/``: status.json and the points' logs."""
    return (outputs_root or paths.OUTPUTS) / "sweeps" / sweep.name


def _headline(metrics: dict[str, Any]) -> str:
    keys = [k for k in ("cvr", "ndcg", "recall@1") if isinstance(metrics.get(k), (int, float))]
    return " ".join(f"{k} {metrics[k]:.3f}" for k in keys)


def _last_error(log: Path, ended: str | None, job_id: str | None = None) -> str:
    """Why an attempt left no results.json: the error a point's process printed last
    (``run.error_lines``: an ``error: `` line and its indented continuation lines, so a multi-line
    message comes back whole), with the job's end for a Slurm job (``slurm job 12 ended
    CANCELLED``); else how it ended and the log's last line."""
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    tail = next((ln for ln in reversed(lines) if ln.strip()), "")
    starts = [i for i, ln in enumerate(lines) if ln.startswith(("error: ", "interrupted: "))]
    if not starts:
        return f"{ended} without results" + (f"; its log ends: {tail}" if tail else f"; no output in {log}")
    block = [lines[starts[-1]].split(": ", 1)[1]]
    for ln in lines[starts[-1] + 1 :]:
        if not ln.startswith("  "):
            break
        block.append(ln[2:])
    return "\n".join(block) + (f" ({ended})" if job_id else "")


def _newest_failed(run_dir: Path, since: float) -> str | None:
    found = [p for p in run_dir.parent.glob(f"{run_dir.name}.failed-*") if p.stat().st_mtime >= since - 1]
    return str(max(found, key=lambda p: p.stat().st_mtime)) if found else None


def thread_env(jobs: int) -> dict[str, str]:
    """The environment of a point's process: with ``jobs`` points at once, each gets
    cpu_count // jobs threads (OMP_NUM_THREADS, MKL_NUM_THREADS) unless the caller set them;
    two 2-thread trainings on 2 cores ran 7x slower than one after the other (docs/measurements.md)."""
    env = processes.openmp_wait_env(dict(os.environ))  # passive OpenMP waiting in every point
    if jobs > 1:
        threads = str(max(1, (os.cpu_count() or 1) // jobs))
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env.setdefault(name, threads)
    return env


def make_executor(sweep: Sweep, root: Path, kind: str, resources: dict[str, Any], jobs: int) -> sweep_jobs.Executor:
    """The executor ``kind`` for this sweep: both run ``python -m arrank.workbook.sweep --point
    <notebook> <overrides> --outputs-root <root>`` for a point, with ``thread_env(jobs)``."""

    def command(point: Point) -> list[str]:
        head = [sys.executable, "-m", "arrank.workbook.sweep", "--point", sweep.notebook]
        return head + [json.dumps(point.overrides), "--outputs-root", str(root)]

    env = thread_env(jobs)
    if kind == "local":
        return sweep_jobs.Local(command, env, paths.ROOT, resources.get("gpus_per_node", 0))
    kept = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", *processes.OPENMP_WAIT)  # the job inherits the rest
    return sweep_jobs.Slurm(command, {k: v for k, v in env.items() if k in kept}, sweep_dir(sweep, root), resources)


def previous_errors(sweep: Sweep, root: Path, kind: str) -> dict[str, str]:
    """Before a call runs anything: {run_name: error} for the points whose newest attempt is a
    Slurm job that ended without results (recorded, and run again now). Refuses a local call while
    a point's job is still queued or running (it would run the point twice)."""
    previous, busy = {}, []
    for name, job in sweep_jobs.current_jobs(sweep_dir(sweep, root)).items():
        point = next((p for p in sweep.points if p.run_name == name), None)
        if point is None or results_path(sweep, point, root).exists():
            continue
        state = sweep_jobs.slurm_state(job.job_id)
        ended = sweep_jobs.job_end(job.job_id, state)
        if ended is not None:
            previous[name] = _last_error(job.log, ended, job.job_id)
        elif kind != "slurm":
            busy.append(f"{name}: slurm job {job.job_id} {state}")
    if busy:
        raise SweepError(
            f"{sweep.path.name}: points have jobs still queued or running; follow them with the executor that "
            "submitted them (--executor slurm), or cancel them first:\n  " + "\n  ".join(sorted(busy))
        )
    return previous


def run_sweep(
    sweep: Sweep,
    jobs: int | None = None,
    outputs_root: Path | None = None,
    executor: str | sweep_jobs.Executor = "local",
    echo: Callable[[str], None] = print,
    resources: dict[str, Any] | None = None,
    wait: bool = True,
) -> list[dict[str, Any]]:
    """Run every point of the sweep that has no results.json yet, at most ``jobs`` at a time
    (default 1, for Slurm every point); return one row per point (a dict), as ``status.json`` under
    :func:`sweep_dir` holds it after every point. status: ``done earlier`` (skipped), ``done``,
    ``failed`` (recorded, the sweep goes on), ``interrupted`` (Ctrl-C, SIGTERM, SIGHUP: running
    points stopped, KeyboardInterrupt raised) or ``submitted`` (a Slurm job left queued or running:
    on an interruption, or with ``wait`` false, which submits and returns). ``executor``: ``local``
    or ``slurm`` (``sweep_jobs``; ``resources`` over the sweep file's, a local point takes only
    ``gpus_per_node``), or an object with the same interface."""
    kind = executor if isinstance(executor, str) else executor.kind
    sweep_jobs.check_executor(kind)
    resources = sweep_jobs.check_resources({**sweep.resources, **(resources or {})})
    if kind == "local":
        resources = {k: v for k, v in resources.items() if k in sweep_jobs.LOCAL_RESOURCES}
    jobs = jobs if jobs is not None else (len(sweep.points) if kind == "slurm" else 1)
    if jobs < 1:
        raise SweepError(f"jobs={jobs} must be at least 1")
    if not wait and kind != "slurm":
        raise SweepError("--no-wait needs --executor slurm (local points end with this command)")
    root = outputs_root or paths.OUTPUTS
    folder = sweep_dir(sweep, root)
    outputs.writable_folder(folder / "logs")  # one clear error, not a traceback per point
    outputs.writable_folder(root / sweep.notebook)
    with sweep_lock(sweep, folder):
        if isinstance(executor, str):
            sweep_jobs.preflight(kind, resources, jobs)
            executor = make_executor(sweep, root, kind, resources, jobs)
        return _run_points(sweep, executor, jobs, root, echo, wait)


@contextlib.contextmanager
def sweep_lock(sweep: Sweep, folder: Path) -> Iterator[None]:
    """An exclusive lock (``filelock``) on ``outputs/sweeps/<sweep>/.lock`` for one call (two calls
    of one sweep at once would run or submit a point twice); a second call fails with a clear error."""
    from filelock import FileLock, Timeout

    lock = FileLock(folder / ".lock", timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise SweepError(
            f"another call of sweep {sweep.name!r} is running (it holds {folder / '.lock'}); "
            "wait for it, or see its points with --list"
        ) from None
    try:
        yield
    finally:
        lock.release()


def _run_points(
    sweep: Sweep, executor: sweep_jobs.Executor, jobs: int, root: Path, echo: Callable[[str], None], wait: bool
) -> list[dict]:
    """The body of :func:`run_sweep` once the sweep's lock is held: refuse stale runs, record the
    Slurm jobs that ended, then start points while fewer than ``jobs`` run and look at the
    running ones every ``executor.poll_s``."""
    states = point_states(sweep, root)  # raises on stale finished runs, before anything runs
    previous = previous_errors(sweep, root, executor.kind)  # jobs that ended: errors recorded, points rerun
    folder = sweep_dir(sweep, root)
    total, width = len(sweep.points), len(str(len(sweep.points)))
    empty = dict.fromkeys(("seconds", "error", "log", "failed_dir", "job_id"), None)
    rows = [dict(run_name=p.run_name, grid=p.grid, status="pending", **empty) for p in sweep.points]
    for p, row in zip(sweep.points, rows):
        row.update(
            run_dir=str(outputs.run_path(sweep.notebook, p.run_name, root)), previous_error=previous.get(p.run_name)
        )

    def say(i: int, word: str, text: str = "") -> None:
        echo(f"[{i + 1:>{width}}/{total}] {word:<11} {sweep.points[i].run_name}{'  ' + text if text else ''}")

    def save() -> None:
        now = datetime.now().isoformat(timespec="seconds")
        status = {"sweep": str(sweep.path), "notebook": sweep.notebook, "updated": now, "points": rows}
        outputs.write_json_atomic(folder / "status.json", status)

    def finish(i: int, attempt: sweep_jobs.Attempt, began: tuple[float, float], stopped: bool = False) -> None:
        row, seconds = rows[i], round(time.perf_counter() - began[1], 1)
        row["seconds"] = seconds
        results = results_path(sweep, sweep.points[i], root)
        if results.exists():
            row["status"] = "done"
            say(i, "done", f"{seconds:.1f} s  {_headline(json.loads(results.read_text())['metrics'])}")
            for message in run.told_in(results.parent):  # what the point's run told its user
                echo(f"    note: {message}")
        elif attempt.ended is None:  # a Slurm job left queued or running
            state = sweep_jobs.slurm_state(attempt.job_id)
            row.update(status="submitted", job_state=state)
            say(i, "submitted", f"slurm job {attempt.job_id} {state}; the next call follows it")
        elif stopped:
            row["status"] = "interrupted"
            say(i, "interrupted", f"{seconds:.1f} s")
        else:
            error = _last_error(attempt.log, attempt.ended, attempt.job_id)
            row.update(status="failed", error=error, failed_dir=_newest_failed(Path(row["run_dir"]), began[0]))
            indented = error.replace("\n", "\n    ")  # a multi-line message stays one indented block
            say(i, "FAILED", f"{seconds:.1f} s  {indented}  (log: {attempt.log})")
        save()

    todo = []
    for i, state in enumerate(states):
        if rows[i]["previous_error"]:
            states[i] = "failed"
            say(i, "FAILED", f"earlier: {rows[i]['previous_error']}")
        if state == "done":
            rows[i]["status"] = "done earlier"
            say(i, "skipped", "(results.json exists)")
        else:
            todo.append(i)
    save()
    wall, interrupt = time.perf_counter(), None
    running: dict[int, tuple[sweep_jobs.Attempt, tuple[float, float]]] = {}
    try:
        while todo or running:
            while todo and len(running) < jobs:
                i = todo.pop(0)
                log = sweep_jobs.attempt_log(folder, sweep.points[i].run_name)
                rows[i].update(status="running", log=str(log))
                say(i, "running", "(retry of a failed point)" if states[i] == "failed" else "")
                began = (time.time(), time.perf_counter())
                try:
                    attempt = executor.start(sweep.points[i], log)
                except Exception as err:  # the executor itself broke (not the notebook): record it, go on
                    attempt = sweep_jobs.Attempt(log, ended=f"{type(err).__name__}: {err}")
                rows[i].update(job_id=attempt.job_id, log=str(attempt.log))
                if attempt.note:
                    say(i, "job", attempt.note)
                running[i] = (attempt, began)
            for i, (attempt, began) in list(running.items()):
                attempt.ended = attempt.ended or executor.end(attempt)
                if attempt.ended is not None or not wait:
                    del running[i]
                    finish(i, attempt, began)
            if running:
                time.sleep(executor.poll_s)
    except KeyboardInterrupt as err:
        interrupt = err
        executor.stop([a for a, _ in running.values()], forward=getattr(err, "signum", signal.SIGINT) != signal.SIGINT)
        for i, (attempt, began) in running.items():
            attempt.ended = attempt.ended or executor.end(attempt)
            finish(i, attempt, began, stopped=True)
    for row in rows:
        if row["status"] in ("pending", "running") and interrupt is not None:
            row["status"] = "interrupted"
    save()
    counts = Counter(r["status"] for r in rows)
    echo(
        f"sweep {sweep.name}: {counts['done']} ran, {counts['done earlier']} done earlier, {counts['failed']} failed"
        + (f", {counts['interrupted']} interrupted" if counts["interrupted"] else "")
        + (f", {counts['submitted']} submitted (queued or running)" if counts["submitted"] else "")
        + f" ({time.perf_counter() - wall:.0f} s); status: {folder / 'status.json'}"
    )
    if interrupt is not None:
        raise interrupt
    return rows


def run_point(notebook: str, overrides: dict[str, Any], outputs_root: Path | None) -> int:
    """The process of one point (local or in a Slurm job): run it, print the full error on failure
    (the log keeps it)."""
    run.interrupt_on_signals()
    try:
        final = run.run_notebook(notebook, overrides, outputs_root=outputs_root, progress=False)
    except (ParamError, outputs.RunExistsError, outputs.OutputsNotWritableError) as err:
        print(run.error_lines(err), flush=True)
        return 2
    except run.RunFailedError as err:
        cause = err.__cause__ or err
        print("".join(traceback.format_exception(type(cause), cause, cause.__traceback__)), flush=True)
        print(run.error_lines(err), flush=True)
        return 1
    except KeyboardInterrupt as err:
        print(run.error_lines(err or "interrupted", "interrupted: "), flush=True)
        return run.exit_code(err)
    print(f"run written to {final}", flush=True)
    return 0


def describe(sweep: Sweep, outputs_root: Path | None = None) -> str:
    """The points of a sweep with their state (the ``--list`` output): done, failed, missing, or
    for a point whose newest attempt is a Slurm job, queued / running / ended (its job id and state)."""
    states = point_states(sweep, outputs_root)
    current = sweep_jobs.current_jobs(sweep_dir(sweep, outputs_root))
    lines = [
        f"{sweep.name}: notebook {sweep.notebook}, {len(sweep.points)} points"
        + (f", paper {sweep.paper}" if sweep.paper else "")
        + (f"; {sweep.description}" if sweep.description else ""),
        f"fixed: {sweep.fixed}",
    ]
    for point, state in zip(sweep.points, states):
        job, text = current.get(point.run_name), ""
        if job is not None and state != "done":
            now = sweep_jobs.slurm_state(job.job_id)
            state = "ended" if now in sweep_jobs.ENDED else "queued" if now == "PENDING" else "running"
            text = f"  (slurm job {job.job_id} {now}, log {job.log})"
        lines.append(f"  {state:<8} {point.run_name}{text}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line: check a sweep file, then run its unfinished points (exit 1 if any failed)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--point"]:
        root = Path(argv[4]) if len(argv) > 4 and argv[3] == "--outputs-root" else None
        return run_point(argv[1], json.loads(argv[2]), root)
    parser = argparse.ArgumentParser(prog="python -m arrank.workbook.sweep", description=__doc__.split("\n")[0])
    add = parser.add_argument
    add("sweep", help="the sweep file, e.g. sweeps/table1_wordnet_quick.yaml")
    add("--jobs", type=int, help="points run at once (default 1; with --executor slurm, every point)")
    add("--list", action="store_true", help="check the file and list its points and jobs; run nothing")
    add("--max-points", type=int, default=MAX_POINTS, help=f"refuse a grid of more points (default {MAX_POINTS:,})")
    add("--outputs-root", type=Path, help="outputs folder (default: outputs/)")
    add(
        "--executor",
        default="local",
        choices=sweep_jobs.EXECUTORS,
        help="local: a child process per point (default); slurm: one Slurm job per point through submitit",
    )
    group = parser.add_argument_group("job resources (over the sweep file's 'resources'; all but --gpus ask Slurm)")
    for flag, dest, kind, text in (
        ("--partition", "partition", str, "Slurm partition"),
        ("--gpus", "gpus_per_node", int, "GPUs per point (local: each point its own GPUs of this machine)"),
        ("--time", "timeout_min", int, f"time limit per point in minutes (default {sweep_jobs.DEFAULT_TIMEOUT_MIN})"),
        ("--mem", "mem_gb", int, "memory per point in GB"),
        ("--cpus", "cpus_per_task", int, "CPUs per point"),
    ):
        group.add_argument(flag, type=kind, dest=dest, help=text)
    group.add_argument("--no-wait", action="store_true", help="slurm: submit the unfinished points and return")
    args = parser.parse_args(argv)
    flags = {k: getattr(args, k) for k in sweep_jobs.RESOURCES if getattr(args, k) is not None}
    previous = run.interrupt_on_signals()  # SIGTERM and SIGHUP stop the sweep as Ctrl-C does
    try:
        slurm_only = sorted(set(flags) - set(sweep_jobs.LOCAL_RESOURCES))
        if slurm_only and args.executor == "local":
            raise SweepError(f"{slurm_only} are Slurm job resources: they need --executor slurm")
        sweep = load_sweep(args.sweep, args.max_points)
        if args.list:
            print(describe(sweep, args.outputs_root))
            return 0
        rows = run_sweep(sweep, args.jobs, args.outputs_root, args.executor, resources=flags, wait=not args.no_wait)
    except (SweepError, sweep_jobs.JobError, outputs.OutputsNotWritableError) as err:
        print(run.error_lines(err), file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:
        print(
            "interrupted: finished points are kept, Slurm jobs keep running; run the same command again to go on",
            file=sys.stderr,
        )
        return run.exit_code(err)
    finally:
        run.restore_signals(previous)
    return 1 if any(r["status"] == "failed" for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
