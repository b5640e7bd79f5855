"""Sweeps: one notebook run over a grid of parameters (docs/design.md, "Contracts"; paper §5, Tables
1-3 and Figure 3). ``python -m arrank.workbook.sweep sweeps/NAME.yaml [--jobs N] [--list]``, or
``make sweep SWEEP=sweeps/NAME.yaml``.

A sweep file (YAML) names the notebook, the parameters every point shares, and the grid::

    notebook: 05_train            # the notebook each point runs
    paper: table1                 # optional: the paper table it regenerates (arrank.workbook.report.PAPER)
    description: ...              # optional, one line
    fixed: {profile: quick, steps: 600}
    grid:                         # a mapping name -> list of values (their Cartesian product),
      - {scheme: [indicator]}     # or a list of such mappings (the union of their products)
      - {scheme: [fractional], alpha: [1, 2, 3, 4, 5]}

Every point is an ordinary run of the papermill runner (``arrank.workbook.run``) named after the sweep and
the point's grid values, ``outputs/<notebook>/<sweep>-<name>=<value>-...``, so a point is
finished exactly when that run's ``results.json`` exists:

- the whole file is checked before anything runs (unknown notebook or parameter, empty grid, a
  value the notebook's spec refuses, two points with the same run name, a finished run made with
  other parameters than the file now gives);
- finished points are skipped, so re-running a sweep runs only its failed and missing points;
- each point runs in its own process (``--jobs N`` runs N at once) with its output in
  ``outputs/sweeps/<sweep>/logs/``; a failing point is recorded (its error, its log, and the
  executed notebook the runner keeps in ``<run_name>.failed-<time>/``) and the sweep goes on;
- ``outputs/sweeps/<sweep>/status.json`` is rewritten after every point, and an interrupted sweep
  (Ctrl-C) loses nothing that finished: the next run skips it.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from arrank.workbook import paths
from arrank.workbook.outputs import (OutputsNotWritableError, RunExistsError, checkpoints_dir, resume_diff, run_path,
                                     writable_folder, write_json_atomic)
from arrank.workbook.params import ParamError, spec_for
from arrank.workbook.run import (RunFailedError, error_lines, find_notebook, interrupt_on_sigterm, prepare,
                                 run_notebook)

SWEEPS = paths.ROOT / "sweeps"
KEYS = {"notebook", "grid", "fixed", "paper", "description"}
PAPER_KEYS = ("table1", "table2", "table3", "fig3")
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,59}"


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

    @property
    def grid_keys(self) -> list[str]:
        """Every parameter some part of the grid varies, in order of first appearance."""
        return list(dict.fromkeys(k for p in self.points for k in p.grid))


def expand_grid(grid: Any, where: str = "grid") -> list[dict[str, Any]]:
    """The points of a grid: the Cartesian product of a mapping's value lists, or the union (in
    order, duplicates dropped) of the products of a list of mappings."""
    parts = grid if isinstance(grid, list) else [grid]
    if not parts or grid == {} or grid is None:
        raise SweepError(f"{where} is empty: give a mapping of parameter -> list of values")
    points: list[dict[str, Any]] = []
    for i, part in enumerate(parts):
        label = f"{where}[{i}]" if isinstance(grid, list) else where
        if not isinstance(part, dict) or not part:
            raise SweepError(f"{label} must be a non-empty mapping of parameter -> list of values, got {part!r}")
        for name, values in part.items():
            if not isinstance(values, list) or not values:
                raise SweepError(f"{label}.{name} must be a non-empty list of values, got {values!r} "
                                 f"(a single value belongs under 'fixed')")
            bad = [v for v in values if isinstance(v, (list, dict))]
            if bad:
                raise SweepError(f"{label}.{name} holds {bad[0]!r}: grid values must be plain values")
        for combo in itertools.product(*part.values()):
            point = dict(zip(part.keys(), combo))
            if point not in points:
                points.append(point)
    return points


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


def _read_yaml(path: Path) -> dict[str, Any]:
    import yaml

    if not path.is_file():
        known = sorted(str(p.relative_to(paths.ROOT)) for p in SWEEPS.glob("*.yaml")) if SWEEPS.is_dir() else []
        raise SweepError(f"sweep file {str(path)!r} not found; sweeps: {known}")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise SweepError(f"{path.name} is not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise SweepError(f"{path.name} must be a mapping with keys {sorted(KEYS)}")
    unknown = sorted(set(data) - KEYS)
    if unknown:
        raise SweepError(f"{path.name}: unknown key(s) {unknown}; allowed: {sorted(KEYS)}")
    for key in ("notebook", "grid"):
        if key not in data:
            raise SweepError(f"{path.name} has no '{key}'")
    return data


def _check_names(path: Path, fixed: Any, grid_points: list[dict[str, Any]]) -> None:
    if not isinstance(fixed, dict):
        raise SweepError(f"{path.name}: 'fixed' must be a mapping of parameter -> value, got {fixed!r}")
    grid_names = {k for p in grid_points for k in p}
    for where, names in (("fixed", set(fixed)), ("grid", grid_names)):
        if "run_name" in names:
            raise SweepError(f"{path.name}: run_name may not be in '{where}': the sweep names its runs")
    both = sorted(grid_names & set(fixed))
    if both:
        raise SweepError(f"{path.name}: {both} both fixed and in the grid; keep each in one place")


def load_sweep(path: str | Path) -> Sweep:
    """Read and check a sweep file, expanding its points; nothing runs.

    Every point goes through the runner's own checks (``arrank.workbook.run.prepare``: notebook exists,
    names known, values allowed), so a bad file fails here with the point and the value named.
    """
    path = Path(path)
    if not path.is_absolute() and not path.exists():
        path = paths.ROOT / path
    data = _read_yaml(path)
    name = path.stem
    if not re.fullmatch(NAME_PATTERN, name):
        raise SweepError(f"sweep file name {name!r} must match {NAME_PATTERN} (it prefixes the run names)")
    paper = data.get("paper")
    if paper is not None and paper not in PAPER_KEYS:
        raise SweepError(f"{path.name}: paper={paper!r} is not allowed; choose one of {list(PAPER_KEYS)}")
    if not isinstance(data["notebook"], (str, int)):
        raise SweepError(f"{path.name}: notebook must be a notebook stem such as 05_train, got {data['notebook']!r}")
    try:
        stem = find_notebook(str(data["notebook"])).stem
        spec_for(stem)
    except ParamError as err:
        raise SweepError(f"{path.name}: {err}") from None
    fixed = data.get("fixed") or {}
    grid_points = expand_grid(data["grid"])
    _check_names(path, fixed, grid_points)
    points = []
    for values in grid_points:
        overrides = {**fixed, **values}
        overrides["run_name"] = point_run_name(name, values)
        try:
            _, _, resolved = prepare(stem, overrides)
        except ParamError as err:
            where = ", ".join(f"{k}={v!r}" for k, v in values.items())
            raise SweepError(f"{path.name}: point ({where}): {err}") from None
        points.append(Point(overrides["run_name"], values, overrides, resolved))
    seen: dict[str, Point] = {}
    for point in points:
        if point.run_name in seen:
            raise SweepError(f"{path.name}: points {seen[point.run_name].grid} and {point.grid} get the same "
                             f"run name {point.run_name!r}; use values that differ in their run-name form")
        seen[point.run_name] = point
    return Sweep(name, path, stem, dict(fixed), points, paper, str(data.get("description", "")))


def results_path(sweep: Sweep, point: Point, outputs_root: Path | None = None) -> Path:
    """``outputs/<notebook>/<point run name>/results.json``."""
    return run_path(sweep.notebook, point.run_name, outputs_root) / "results.json"


def stale_params(sweep: Sweep, point: Point, outputs_root: Path | None = None) -> dict[str, tuple[Any, Any]]:
    """{name: (in the finished run, in the sweep now)} for the parameters the sweep sets that a
    finished run of this point was made with other values of; empty when they agree."""
    done = json.loads(results_path(sweep, point, outputs_root).read_text())["params"]
    return {k: (done.get(k, "<absent>"), point.resolved[k]) for k in point.overrides
            if k != "run_name" and done.get(k, "<absent>") != point.resolved[k]}


def point_states(sweep: Sweep, outputs_root: Path | None = None) -> list[str]:
    """``done`` (results.json exists), ``failed`` (only failed attempts exist) or ``missing``,
    per point; raises when a finished run, or the checkpoints of an interrupted one, were made
    with other parameters than the file gives (a resume would mix two settings)."""
    states, stale = [], []
    for point in sweep.points:
        if results_path(sweep, point, outputs_root).exists():
            diff = stale_params(sweep, point, outputs_root)
            if diff:
                stale.append(f"{point.run_name}: " + ", ".join(f"{k} was {a!r}, now {b!r}" for k, (a, b) in diff.items()))
            states.append("done")
        else:
            diff = resume_diff(checkpoints_dir(sweep.notebook, point.run_name, outputs_root), point.resolved)
            if diff:
                stale.append(f"{point.run_name} (interrupted, its checkpoints): "
                             + ", ".join(f"{k} was {a!r}, now {b!r}" for k, (a, b) in diff.items()))
            run_dir = run_path(sweep.notebook, point.run_name, outputs_root)
            states.append("failed" if any(run_dir.parent.glob(f"{run_dir.name}.failed-*")) else "missing")
    if stale:
        raise SweepError(f"{sweep.path.name}: runs of its points were made with other parameters than the file now "
                         "gives (runs are never overwritten, nor resumed with other settings; rename the sweep file, "
                         "or delete those runs, or for an interrupted point its .checkpoints-<run_name> folder):\n  "
                         + "\n  ".join(stale))
    return states


def sweep_dir(sweep: Sweep, outputs_root: Path | None = None) -> Path:
    """``outputs/sweeps/<sweep>/``: status.json and the points' logs."""
    return (outputs_root or paths.OUTPUTS) / "sweeps" / sweep.name


def _headline(metrics: dict[str, Any]) -> str:
    keys = [k for k in ("cvr", "ndcg", "recall@1") if isinstance(metrics.get(k), (int, float))]
    return " ".join(f"{k} {metrics[k]:.3f}" for k in keys)


def _last_error(log: Path, returncode: int | str | None) -> str:
    """The error a point's process printed last (``run.error_lines``: an ``error: `` line and its
    indented continuation lines, so a multi-line message comes back whole), else the exit code
    and the log's last line."""
    if isinstance(returncode, str):
        return returncode
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    starts = [i for i, ln in enumerate(lines) if ln.startswith(("error: ", "interrupted: "))]
    if starts:
        block = [lines[starts[-1]].split(": ", 1)[1]]
        for ln in lines[starts[-1] + 1:]:
            if not ln.startswith("  "):
                break
            block.append(ln[2:])
        return "\n".join(block)
    tail = next((ln for ln in reversed(lines) if ln.strip()), "")
    return f"exit code {returncode}" + (f": {tail}" if tail else "")


def _newest_failed(run_dir: Path, since: float) -> str | None:
    found = [p for p in run_dir.parent.glob(f"{run_dir.name}.failed-*") if p.stat().st_mtime >= since - 1]
    return str(max(found, key=lambda p: p.stat().st_mtime)) if found else None


Execute = Callable[[Point, Path], "int | None"]


def thread_env(jobs: int) -> dict[str, str]:
    """The environment of a point's process: with ``jobs`` points at once, each gets
    cpu_count // jobs threads (OMP_NUM_THREADS, MKL_NUM_THREADS) unless the caller set them;
    two 2-thread trainings on 2 cores ran 7x slower than one after the other (docs/measurements.md)."""
    env = dict(os.environ)
    if jobs > 1:
        threads = str(max(1, (os.cpu_count() or 1) // jobs))
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env.setdefault(name, threads)
    return env


def subprocess_executor(sweep: Sweep, outputs_root: Path, running: dict[int, subprocess.Popen],
                        jobs: int = 1) -> Execute:
    """Run a point as ``python -m arrank.workbook.sweep --point ...`` with its output in the log file;
    the child is kept in ``running`` so an interrupted sweep can stop it."""
    env = thread_env(jobs)

    def execute(point: Point, log: Path) -> int:
        cmd = [sys.executable, "-m", "arrank.workbook.sweep", "--point", sweep.notebook, json.dumps(point.overrides),
               "--outputs-root", str(outputs_root)]
        with open(log, "w") as fh:
            proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=paths.ROOT, env=env)
            running[proc.pid] = proc
            try:
                return proc.wait()
            finally:
                running.pop(proc.pid, None)

    return execute


def run_sweep(sweep: Sweep, jobs: int = 1, outputs_root: Path | None = None, execute: Execute | None = None,
              echo: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Run every point of the sweep that has no results.json yet, ``jobs`` at a time; return one
    row per point (run_name, grid, status, seconds, error, log, failed_dir, run_dir).

    status: ``done earlier`` (skipped), ``done``, ``failed`` (error and log recorded, the sweep
    goes on) or ``interrupted``. ``status.json`` under :func:`sweep_dir` is rewritten after every
    point. On Ctrl-C the running points are stopped, the status written, KeyboardInterrupt raised.
    """
    if jobs < 1:
        raise SweepError(f"jobs={jobs} must be at least 1")
    root = outputs_root or paths.OUTPUTS
    states = point_states(sweep, root)  # raises on stale finished runs, before anything runs
    folder = sweep_dir(sweep, root)
    writable_folder(folder / "logs")  # one clear error, not a traceback per point
    writable_folder(root / sweep.notebook)
    running: dict[int, subprocess.Popen] = {}
    execute = execute or subprocess_executor(sweep, root, running, jobs)
    total, width = len(sweep.points), len(str(len(sweep.points)))
    rows = [{"run_name": p.run_name, "grid": p.grid, "status": "pending", "seconds": None, "error": None,
             "log": None, "failed_dir": None, "run_dir": str(run_path(sweep.notebook, p.run_name, root))}
            for p in sweep.points]
    lock, stop = threading.Lock(), threading.Event()

    def say(i: int, word: str, text: str) -> None:
        with lock:
            echo(f"[{i + 1:>{width}}/{total}] {word:<11} {sweep.points[i].run_name}{'  ' + text if text else ''}")

    def save() -> None:
        write_json_atomic(folder / "status.json", {
            "sweep": str(sweep.path), "notebook": sweep.notebook, "updated": datetime.now().isoformat(timespec="seconds"),
            "points": rows})

    def one(i: int) -> None:
        if stop.is_set():
            return
        point, row = sweep.points[i], rows[i]
        log = folder / "logs" / f"{point.run_name}.{datetime.now().strftime('%Y%m%d-%H%M%S')}.log"
        row.update(status="running", log=str(log))
        say(i, "running", "(retry of a failed point)" if states[i] == "failed" else "")
        start, wall = time.time(), time.perf_counter()
        code, interrupted = None, False
        try:
            code = execute(point, log)
        except KeyboardInterrupt:
            interrupted = True
            stop.set()
        except Exception as err:  # the executor itself broke (not the notebook): record it, go on
            code = f"{type(err).__name__}: {err}"
        seconds = round(time.perf_counter() - wall, 1)
        results = results_path(sweep, point, root)
        row["seconds"] = seconds
        if results.exists():
            row["status"] = "done"
            say(i, "done", f"{seconds:.1f} s  {_headline(json.loads(results.read_text())['metrics'])}")
        elif interrupted or stop.is_set():
            row["status"] = "interrupted"
            say(i, "interrupted", f"{seconds:.1f} s")
        else:
            row.update(status="failed", error=_last_error(log, code),
                       failed_dir=_newest_failed(Path(row["run_dir"]), start))
            error = row["error"].replace("\n", "\n    ")  # a multi-line message stays one indented block
            say(i, "FAILED", f"{seconds:.1f} s  {error}  (log: {log})")

    todo = []
    for i, state in enumerate(states):
        if state == "done":
            rows[i]["status"] = "done earlier"
            say(i, "skipped", "(results.json exists)")
        else:
            todo.append(i)
    save()
    wall = time.perf_counter()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(one, i) for i in todo]
        try:
            for future in as_completed(futures):
                future.result()
                with lock:
                    save()
        except KeyboardInterrupt:
            stop.set()
            for future in futures:
                future.cancel()
            _stop_children(running)
    for row in rows:
        if row["status"] in ("pending", "running") and stop.is_set():
            row["status"] = "interrupted"
    save()
    counts = {s: sum(r["status"] == s for r in rows) for s in ("done", "done earlier", "failed", "interrupted")}
    echo(f"sweep {sweep.name}: {counts['done']} ran, {counts['done earlier']} done earlier, {counts['failed']} failed"
         + (f", {counts['interrupted']} interrupted" if counts["interrupted"] else "")
         + f" ({time.perf_counter() - wall:.0f} s); status: {folder / 'status.json'}")
    if stop.is_set():
        raise KeyboardInterrupt
    return rows


def _stop_children(running: dict[int, subprocess.Popen], grace: float = 20.0) -> None:
    """Stop the points still running (the processes this sweep started): a Ctrl-C at the terminal
    reached them already, so wait a little, then interrupt them, then terminate them."""
    deadline = time.time() + 5
    for proc in list(running.values()):
        try:
            proc.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
    deadline = time.time() + grace
    for proc in list(running.values()):
        try:
            proc.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            proc.terminate()


def run_point(notebook: str, overrides: dict[str, Any], outputs_root: Path | None) -> int:
    """The child process of one point: run it, print the full error on failure (the log keeps it)."""
    interrupt_on_sigterm()
    try:
        final = run_notebook(notebook, overrides, outputs_root=outputs_root, progress=False)
    except (ParamError, RunExistsError, OutputsNotWritableError) as err:
        print(error_lines(err), flush=True)
        return 2
    except RunFailedError as err:
        cause = err.__cause__ or err
        print("".join(traceback.format_exception(type(cause), cause, cause.__traceback__)), flush=True)
        print(error_lines(err), flush=True)
        return 1
    except KeyboardInterrupt as err:
        print(error_lines(err or "interrupted", "interrupted: "), flush=True)
        return 130
    print(f"run written to {final}", flush=True)
    return 0


def describe(sweep: Sweep, outputs_root: Path | None = None) -> str:
    """The points of a sweep with their state (the ``--list`` output)."""
    states = point_states(sweep, outputs_root)
    lines = [f"{sweep.name}: notebook {sweep.notebook}, {len(sweep.points)} points"
             + (f", paper {sweep.paper}" if sweep.paper else "") + (f"; {sweep.description}" if sweep.description else ""),
             f"fixed: {sweep.fixed}"]
    lines += [f"  {s:<8} {p.run_name}" for p, s in zip(sweep.points, states)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line: check a sweep file, then run its unfinished points (exit 1 if any failed)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--point"]:
        root = Path(argv[4]) if len(argv) > 4 and argv[3] == "--outputs-root" else None
        return run_point(argv[1], json.loads(argv[2]), root)
    parser = argparse.ArgumentParser(prog="python -m arrank.workbook.sweep", description=__doc__.split("\n")[0])
    parser.add_argument("sweep", help="the sweep file, e.g. sweeps/table1_wordnet_quick.yaml")
    parser.add_argument("--jobs", type=int, default=1, help="points run at once, each in its own process (default 1)")
    parser.add_argument("--list", action="store_true", help="check the file and list its points; run nothing")
    parser.add_argument("--outputs-root", type=Path, default=None, help="outputs folder (default: outputs/)")
    args = parser.parse_args(argv)
    try:
        sweep = load_sweep(args.sweep)
        if args.list:
            print(describe(sweep, args.outputs_root))
            return 0
        rows = run_sweep(sweep, args.jobs, args.outputs_root)
    except (SweepError, OutputsNotWritableError) as err:
        print(error_lines(err), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: finished points are kept; run the same command again to go on", file=sys.stderr)
        return 130
    return 1 if any(r["status"] == "failed" for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
