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
from typing import Any, Callable

from arrank.common import outputs, paths, processes
from arrank.common.display import number_text, shown
from arrank.common.params import ParamError, spec_for
from arrank.workbook import run, sweep_jobs
from arrank.workbook.sweep_jobs import ENDED

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


def grid_parts(grid: Any) -> list[dict[str, list[Any]]]:
    """The grid's mappings (one, or each of a list), checked: non-empty mappings of parameter ->
    non-empty list of plain values."""
    parts = grid if isinstance(grid, list) else [grid]
    if not parts or grid == {} or grid is None:
        raise SweepError("grid is empty: give a mapping of parameter -> list of values")
    for i, part in enumerate(parts):
        label = f"grid[{i}]" if isinstance(grid, list) else "grid"
        if not isinstance(part, dict) or not part:
            raise SweepError(f"{label} must be a non-empty mapping of parameter -> list of values, got {part!r}")
        for name, values in part.items():
            if not isinstance(values, list) or not values:
                raise SweepError(
                    f"{label}.{name} must be a non-empty list of values, got {values!r} "
                    f"(a single value belongs under 'fixed')"
                )
            if bad := [v for v in values if isinstance(v, (list, dict))]:
                raise SweepError(f"{label}.{name} holds {bad[0]!r}: grid values must be plain values")
    return parts


def count_points(grid: Any) -> int:
    """How many points the grid's products hold before duplicates are dropped, computed without
    expanding them (the sum over its mappings of the product of their list lengths)."""
    return sum(math.prod(len(values) for values in part.values()) for part in grid_parts(grid))


def expand_grid(grid: Any) -> list[dict[str, Any]]:
    """The points of a grid: the Cartesian product of a mapping's value lists, or the union (in
    order, duplicates dropped: found with a set, where 1 and 1.0 are one value, 1 and true two) of the products of a list
    of mappings."""
    points: dict[frozenset, dict[str, Any]] = {}
    for part in grid_parts(grid):
        for combo in itertools.product(*part.values()):
            key = frozenset((k, isinstance(v, bool), v) for k, v in zip(part, combo))
            points.setdefault(key, dict(zip(part, combo)))
    return list(points.values())


def format_value(value: Any) -> str:
    """A grid value as it appears in a run name: 2.0 -> '2', True -> 'true' (as in labels:
    ``display.number_text``), None -> 'none', other characters than a run name's -> '_'."""
    return re.sub(r"[^A-Za-z0-9._=-]", "_", "none" if value is None else number_text(value))


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


def _read_yaml(path: Path) -> dict[str, Any]:
    """A sweep file's mapping, read as untrusted input: at most ``MAX_FILE_BYTES``, UTF-8, and no
    aliases (``*name``), found in PyYAML's event stream before anything is built: nested anchors
    expand a few KB into gigabytes (a "billion laughs"), and a sweep file needs none. Every mapping's
    keys are text, each once (PyYAML would keep the last of two)."""
    import yaml

    class Loader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> dict:
            seen: set[str] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # << : a mapping's keys merged in, may be overridden
                    continue
                key = self.construct_object(key_node, deep=deep)
                if not isinstance(key, str) or key in seen:
                    why = "is given twice" if isinstance(key, str) else "is not text"
                    raise yaml.MarkedYAMLError(problem=f"key {key!r} {why}", problem_mark=node.start_mark)
                seen.add(key)
            return super().construct_mapping(node, deep)

    if not path.is_file():
        known = sorted(str(p.relative_to(paths.ROOT)) for p in SWEEPS.glob("*.yaml")) if SWEEPS.is_dir() else []
        raise SweepError(f"sweep file {str(path)!r} not found; sweeps: {known}")
    if (size := path.stat().st_size) > MAX_FILE_BYTES:
        raise SweepError(f"{path.name} is {size:,} bytes: a sweep file is at most {MAX_FILE_BYTES:,}")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise SweepError(f"{path.name} is not UTF-8 text (byte {err.start}): a sweep file is YAML") from None
    try:
        if alias := next((e for e in yaml.parse(text, Loader=yaml.SafeLoader) if isinstance(e, yaml.AliasEvent)), None):
            line = alias.start_mark.line + 1
            raise yaml.YAMLError(f"line {line}: aliases (*name) are not allowed in a sweep file")
        data = yaml.load(text, Loader=Loader)
    except (yaml.YAMLError, ValueError) as err:  # ValueError: an integer of over 4,300 digits
        raise SweepError(f"{path.name} is not valid YAML: {str(err)[:300]}") from None
    if not isinstance(data, dict):
        raise SweepError(f"{path.name} must be a mapping with keys {sorted(KEYS)}")
    if unknown := sorted(set(data) - KEYS):
        raise SweepError(f"{path.name}: unknown key(s) {unknown}; allowed: {sorted(KEYS)}")
    if missing := [key for key in ("notebook", "grid") if key not in data]:
        raise SweepError(f"{path.name} has no '{missing[0]}'")
    return data


def load_sweep(path: str | Path, max_points: int = MAX_POINTS) -> Sweep:
    """Read and check a sweep file, expanding its points; nothing runs. A grid over ``max_points``
    is refused before it is expanded (with the count, its factors and the way out); every point
    goes through the runner's own checks (``run.prepare_parsed``, the parameters cell read once),
    so a bad file fails here, naming the point."""
    path = paths.given(path)
    data = _read_yaml(path)
    name, paper, description = path.stem, data.get("paper"), data.get("description", "")
    if not re.fullmatch(NAME_PATTERN, name):
        raise SweepError(f"sweep file name {name!r} must match {NAME_PATTERN} (it prefixes the run names)")
    if paper is not None and paper not in PAPER_KEYS:
        raise SweepError(f"{path.name}: paper={shown(paper)} is not allowed; choose one of {list(PAPER_KEYS)}")
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION:
        raise SweepError(
            f"{path.name}: description must be a string of at most {MAX_DESCRIPTION} characters, got {shown(description)}"
        )
    if not isinstance(data["notebook"], (str, int)) or isinstance(data["notebook"], bool):
        raise SweepError(f"{path.name}: notebook must be a notebook stem such as 05_train, got {data['notebook']!r}")
    if isinstance(data["notebook"], int):  # notebook: 05 is read as the number 5
        data["notebook"] = f"{data['notebook']:02d}"
    if (n := count_points(data["grid"])) > max_points:  # before the notebook is read: a refusal takes no time
        factors = " + ".join(
            " x ".join(f"{len(v):,} {k}" for k, v in part.items()) for part in grid_parts(data["grid"])
        )
        raise SweepError(
            f"{path.name}: the grid has {n:,} points ({factors}), more than the cap of {max_points:,}: split the "
            f"sweep, or pass --max-points {n} to run them all"
        )
    try:
        source = run.find_notebook(str(data["notebook"]))
        spec_for(source.stem)
        resources = sweep_jobs.check_resources(data.get("resources"), f"{path.name}: resources")
    except (ParamError, sweep_jobs.JobError) as err:
        raise SweepError(str(err) if isinstance(err, sweep_jobs.JobError) else f"{path.name}: {err}") from None
    fixed = data.get("fixed") or {}
    if not isinstance(fixed, dict):
        raise SweepError(f"{path.name}: 'fixed' must be a mapping of parameter -> value, got {fixed!r}")
    grid_points = expand_grid(data["grid"])
    grid_names = {k for p in grid_points for k in p}
    for where, names in (("fixed", set(fixed)), ("grid", grid_names)):
        if "run_name" in names:
            raise SweepError(f"{path.name}: run_name may not be in '{where}': the sweep names its runs")
    if both := sorted(grid_names & set(fixed)):
        raise SweepError(f"{path.name}: {both} both fixed and in the grid; keep each in one place")
    points: dict[str, Point] = {}
    for values in grid_points:
        overrides = {**fixed, **values, "run_name": point_run_name(name, values)}
        try:
            _, _, resolved = run.prepare_parsed(source, overrides)
        except ParamError as err:
            where = ", ".join(f"{k}={shown(v)}" for k, v in values.items())
            raise SweepError(f"{path.name}: point ({where}): {err}") from None
        point = Point(overrides["run_name"], values, overrides, resolved)
        if point.run_name in points:
            raise SweepError(
                f"{path.name}: points {points[point.run_name].grid} and {point.grid} get the same "
                f"run name {point.run_name!r}; use values that differ in their run-name form"
            )
        points[point.run_name] = point
    return Sweep(name, path, source.stem, dict(fixed), list(points.values()), paper, description, resources)


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
        name, results, diff = point.run_name, results_path(sweep, point, outputs_root), {}
        finished = name in present and results.exists()
        states.append("done" if finished else "failed" if name in tried else "missing")
        if finished:
            try:
                done = outputs.read_results(results)["params"]
            except outputs.DamagedResultsError as err:
                raise SweepError(str(err)) from None
            diff = {k: (done.get(k, "<absent>"), point.resolved[k]) for k in point.overrides if k != "run_name"}
        elif f".checkpoints-{name}" in present:  # interrupted: its checkpoints' parameters
            diff = outputs.resume_diff(outputs.checkpoints_dir(sweep.notebook, name, outputs_root), point.resolved)
            name = f"{name} (interrupted, its checkpoints)"  # as the error names it
        if listed := ", ".join(f"{k} was {shown(a)}, now {shown(b)}" for k, (a, b) in (diff or {}).items() if a != b):
            stale.append(f"{name}: {listed}")
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


def slurm_jobs(sweep: Sweep, states: list[str], outputs_root: Path | None = None) -> dict[str, tuple[Any, str]]:
    """{run_name: (attempt, Slurm state)} for the unfinished points (``states``: ``point_states``)
    whose newest attempt is a Slurm job."""
    jobs = sweep_jobs.current_jobs(sweep_dir(sweep, outputs_root))
    return {
        p.run_name: (jobs[p.run_name], sweep_jobs.slurm_state(jobs[p.run_name].job_id))
        for p, state in zip(sweep.points, states)
        if state != "done" and p.run_name in jobs
    }


def last_error(log: Path, ended: str) -> str:
    """Why an attempt left no results.json: the error a point's process printed last
    (``run.error_lines``: an ``error: `` line and its indented continuation lines, so a multi-line
    message comes back whole), with the job's end for a Slurm job (``slurm job 12 ended
    CANCELLED``); else how it ended and the log's last line."""
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    tail = next((ln for ln in reversed(lines) if ln.strip()), "")
    start = max((i for i, ln in enumerate(lines) if ln.startswith(("error: ", "interrupted: "))), default=None)
    if start is None:
        return f"{ended} without results" + (f"; its log ends: {tail}" if tail else f"; no output in {log}")
    more = [ln[2:] for ln in itertools.takewhile(lambda ln: ln.startswith("  "), lines[start + 1 :])]
    return "\n".join([lines[start].split(": ", 1)[1], *more]) + (f" ({ended})" if ended.startswith("slurm job") else "")


def thread_env(jobs: int) -> dict[str, str]:
    """The environment of a point's process: with ``jobs`` points at once, each gets
    cpu_count // jobs threads (OMP_NUM_THREADS, MKL_NUM_THREADS) unless the caller set them;
    two 2-thread trainings on 2 cores ran 7x slower than one after the other (docs/measurements.md)."""
    env = processes.openmp_wait_env(dict(os.environ))  # passive OpenMP waiting in every point
    threads = str(max(1, (os.cpu_count() or 1) // jobs))
    return {"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, **env} if jobs > 1 else env


def sweep_lock(sweep: Sweep, folder: Path) -> Any:
    """An exclusive lock (``filelock``) on ``outputs/sweeps/<sweep>/.lock``, held for a ``with``
    block (two calls of one sweep at once would run or submit a point twice); a second call fails
    with a clear error."""
    from filelock import FileLock, Timeout

    try:
        return FileLock(folder / ".lock", timeout=0).acquire()
    except Timeout:
        raise SweepError(
            f"another call of sweep {sweep.name!r} is running (it holds {folder / '.lock'}); "
            "wait for it, or see its points with --list"
        ) from None


def _outcome(sweep: Sweep, point: Point, attempt: sweep_jobs.Attempt, root: Path, stopped: bool) -> tuple[dict, str]:
    """An ended (or, without waiting, submitted) attempt's status.json row fields and the text of its
    printed line: ``done`` with its headline metrics, ``submitted`` (a Slurm job left queued or
    running), ``interrupted``, or ``failed`` with the error its process printed last."""
    results, seconds = results_path(sweep, point, root), round(time.time() - attempt.began, 1)
    if results.exists():
        metrics = json.loads(results.read_text())["metrics"]
        keys = [k for k in ("cvr", "ndcg", "recall@1") if isinstance(metrics.get(k), (int, float))]
        headline = " ".join(f"{k} {metrics[k]:.3f}" for k in keys)
        return {"status": "done", "seconds": seconds}, f"{seconds:.1f} s  {headline}"
    if attempt.ended is None:
        state = sweep_jobs.slurm_state(attempt.job_id)
        row = {"status": "submitted", "job_state": state, "seconds": seconds}
        return row, f"slurm job {attempt.job_id} {state}; the next call follows it"
    if stopped:
        return {"status": "interrupted", "seconds": seconds}, f"{seconds:.1f} s"
    error = last_error(attempt.log, attempt.ended)
    tries = results.parent.parent.glob(f"{point.run_name}.failed-*")  # its run's failed folders, this one's newest
    newest = max((p for p in tries if p.stat().st_mtime >= attempt.began - 1), key=os.path.getmtime, default=None)
    indented = error.replace("\n", "\n    ")  # a multi-line message stays one indented block
    row = {"status": "failed", "error": error, "failed_dir": str(newest) if newest else None, "seconds": seconds}
    return row, f"{seconds:.1f} s  {indented}  (log: {attempt.log})"


def _slurm_prepass(sweep: Sweep, states: list[str], root: Path, kind: str) -> tuple[dict, dict[str, str]]:
    """Before anything runs, the unfinished points whose newest attempt is a Slurm job: ({run_name:
    attempt} of the jobs still queued or running, to attach to; {run_name: how it failed} of those
    that ended, run again). A local call refuses live jobs: it would run their points twice."""
    found = slurm_jobs(sweep, states, root)
    live = {name: job for name, (job, state) in found.items() if state not in ENDED}
    if live and kind != "slurm":
        busy = sorted(f"{name}: slurm job {job.job_id} {found[name][1]}" for name, job in live.items())
        raise SweepError(
            f"{sweep.path.name}: points have jobs still queued or running; follow them with the executor that "
            "submitted them (--executor slurm), or cancel them first:\n  " + "\n  ".join(busy)
        )
    return live, {
        name: last_error(job.log, sweep_jobs.job_end(job.job_id, state))
        for name, (job, state) in found.items()
        if state in ENDED
    }


class _Progress:
    """A sweep's rows as ``status.json`` holds them (saved after every change) and its printed lines."""

    def __init__(self, sweep: Sweep, root: Path, echo: Callable[[str], None]):
        empty = dict.fromkeys(("seconds", "error", "log", "failed_dir", "job_id", "previous_error"))
        self.rows = [dict(run_name=p.run_name, grid=p.grid, status="pending", **empty) for p in sweep.points]
        self.sweep, self.root, self.echo = sweep, root, echo

    def say(self, i: int, word: str, text: str = "") -> None:
        """``[2/3] running     <run name>  <text>``."""
        n = len(self.rows)
        self.echo(f"[{i + 1:>{len(str(n))}}/{n}] {word:<11} {self.rows[i]['run_name']}{'  ' + text if text else ''}")

    def save(self) -> None:
        """Write the rows to ``<sweep folder>/status.json``, atomically."""
        now = datetime.now().isoformat(timespec="seconds")
        status = {"sweep": str(self.sweep.path), "notebook": self.sweep.notebook, "updated": now, "points": self.rows}
        outputs.write_json_atomic(sweep_dir(self.sweep, self.root) / "status.json", status)

    def finish(self, i: int, attempt: sweep_jobs.Attempt, stopped: bool = False) -> None:
        """Record and print how point ``i``'s attempt ended, with what its run told its user."""
        row, text = _outcome(self.sweep, self.sweep.points[i], attempt, self.root, stopped)
        self.rows[i].update(row)
        self.say(i, "FAILED" if row["status"] == "failed" else row["status"], text)
        for message in run.told_in(results_path(self.sweep, self.sweep.points[i], self.root).parent):
            self.echo(f"    note: {message}")
        self.save()


def run_sweep(
    sweep: Sweep,
    jobs: int | None = None,
    outputs_root: Path | None = None,
    executor: Any = "local",
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
    or ``slurm`` (``sweep_jobs.EXECUTORS``, with ``resources`` over the sweep file's, each point
    running ``python -m arrank.workbook.sweep --point <notebook> <outputs root> <overrides>`` with
    ``thread_env(jobs)``), or an object with the same interface.

    Once the sweep's lock is held, before anything runs: stale runs are refused; of the unfinished
    points whose newest attempt is a Slurm job, one that ended is recorded (``previous_error``) and
    runs again, one still queued or running is attached to (a local call refuses: it would run the
    point twice; ``_slurm_prepass``). Then points start while fewer than ``jobs`` run, the running
    ones looked at every ``executor.poll_s``."""
    kind = executor if isinstance(executor, str) else executor.kind
    if kind not in sweep_jobs.EXECUTORS:
        raise sweep_jobs.JobError(f"executor={kind!r} is not known; choose one of {list(sweep_jobs.EXECUTORS)}")
    resources = sweep_jobs.check_resources({**sweep.resources, **(resources or {})})
    jobs = jobs if jobs is not None else (len(sweep.points) if kind == "slurm" else 1)
    if jobs < 1:
        raise SweepError(f"jobs={jobs} must be at least 1")
    if not wait and kind != "slurm":
        raise SweepError("--no-wait needs --executor slurm (local points end with this command)")
    root = Path(outputs_root or paths.OUTPUTS).absolute()  # relative: the caller's folder; points run in ROOT
    folder, points = sweep_dir(sweep, root), sweep.points
    outputs.writable_folder(folder / "logs")  # one clear error, not a traceback per point
    outputs.writable_folder(root / sweep.notebook)
    with sweep_lock(sweep, folder):
        if isinstance(executor, str):
            command = [sys.executable, "-m", "arrank.workbook.sweep", "--point", sweep.notebook, str(root)]
            executor = sweep_jobs.EXECUTORS[kind](command, thread_env(jobs), resources, jobs)
        states = point_states(sweep, root)  # raises on stale finished runs, before anything runs
        live, ended = _slurm_prepass(sweep, states, root, kind)
        progress, running, interrupt, wall = _Progress(sweep, root, echo), {}, None, time.time()
        rows = progress.rows
        for i, (point, state) in enumerate(zip(points, states)):
            if point.run_name in ended:  # recorded, and run again now
                rows[i]["previous_error"] = ended[point.run_name]
                progress.say(i, "FAILED", f"earlier: {rows[i]['previous_error']}")
            if state == "done":
                rows[i]["status"] = "done earlier"
                progress.say(i, "skipped", "(results.json exists)")
        progress.save()
        todo = [i for i, state in enumerate(states) if state != "done"]
        try:
            while todo or running:
                while todo and len(running) < jobs:
                    i = todo.pop(0)
                    log = sweep_jobs.attempt_log(folder, points[i].run_name)
                    try:
                        attempt = live.get(points[i].run_name) or executor.start(points[i], log)
                    except Exception as err:  # the executor itself broke (not the notebook): record it, go on
                        attempt = sweep_jobs.Attempt(log, ended=f"{type(err).__name__}: {err}")
                    running[i] = attempt
                    rows[i].update(status="running", job_id=attempt.job_id, log=str(attempt.log))
                    retry = "(retry of a failed point)" if states[i] == "failed" or rows[i]["previous_error"] else ""
                    progress.say(i, "running", "  ".join(filter(None, [retry, attempt.note])))
                for i, attempt in list(running.items()):
                    attempt.ended = attempt.ended or executor.end(attempt)
                    if attempt.ended is not None or not wait:
                        progress.finish(i, running.pop(i))
                if running:
                    time.sleep(executor.poll_s)
        except KeyboardInterrupt as err:
            interrupt = err
            executor.stop(list(running.values()), forward=getattr(err, "signum", signal.SIGINT) != signal.SIGINT)
            for i, attempt in running.items():
                attempt.ended = attempt.ended or executor.end(attempt)
                progress.finish(i, attempt, stopped=True)
            for row in rows:
                row["status"] = "interrupted" if row["status"] in ("pending", "running") else row["status"]
        progress.save()
    counts = Counter(r["status"] for r in rows)
    echo(
        f"sweep {sweep.name}: {counts['done']} ran, {counts['done earlier']} done earlier, {counts['failed']} failed"
        + (f", {counts['interrupted']} interrupted" if counts["interrupted"] else "")
        + (f", {counts['submitted']} submitted (queued or running)" if counts["submitted"] else "")
        + f" ({time.time() - wall:.0f} s); status: {folder / 'status.json'}"
    )
    if interrupt is not None:
        raise interrupt
    return rows


def run_point(notebook: str, outputs_root: Path, overrides: dict[str, Any]) -> int:
    """The process of one point (local or in a Slurm job): run it, print the full error on failure
    (the log keeps it)."""
    with run.interrupt_on_signals():
        try:
            final = run.run_notebook(notebook, overrides, outputs_root=outputs_root, progress=False)
        except (ParamError, outputs.RunExistsError, outputs.OutputsNotWritableError, run.RunFailedError) as err:
            failed = isinstance(err, run.RunFailedError)  # the notebook failed (1), or the run was refused (2)
            if failed:
                traceback.print_exception(err.__cause__ or err, file=sys.stdout)
            print(run.error_lines(err), flush=True)
            return 1 if failed else 2
        except KeyboardInterrupt as err:
            print(run.error_lines(str(err) or "Ctrl-C", "interrupted: "), flush=True)  # a signal names itself
            return run.exit_code(err)
    print(f"run written to {final}", flush=True)
    return 0


def describe(sweep: Sweep, outputs_root: Path | None = None) -> str:
    """The points of a sweep with their state (the ``--list`` output): done, failed, missing, or
    for a point whose newest attempt is a Slurm job, queued / running / ended (its job id and state)."""
    states = point_states(sweep, outputs_root)
    jobs = slurm_jobs(sweep, states, outputs_root)
    paper = f", paper {sweep.paper}" if sweep.paper else ""
    about = f"; {sweep.description}" if sweep.description else ""
    head = f"{sweep.name}: notebook {sweep.notebook}, {len(sweep.points)} points{paper}{about}"
    lines = [head, f"fixed: {sweep.fixed}"]
    for point, state in zip(sweep.points, states):
        job, now = jobs.get(point.run_name, (None, ""))
        if job is not None:
            state = "ended" if now in ENDED else "queued" if now == "PENDING" else "running"
        text = f"  (slurm job {job.job_id} {now}, log {job.log})" if job else ""
        lines.append(f"  {state:<8} {point.run_name}{text}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line: check a sweep file, then run its unfinished points (exit 1 if any failed)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--point"]:  # --point NOTEBOOK OUTPUTS_ROOT OVERRIDES: one point's process
        return run_point(argv[1], Path(argv[2]), json.loads(argv[3]))
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
    with run.interrupt_on_signals():  # SIGTERM and SIGHUP stop the sweep as Ctrl-C does
        try:
            if args.executor == "local" and (slurm_only := sorted(set(flags) - set(sweep_jobs.LOCAL_RESOURCES))):
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
            return run.interrupted(
                err, "finished points are kept, Slurm jobs keep running; run the same command again to go on"
            )
    return 1 if any(r["status"] == "failed" for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
