"""Run the whole workbook in its quick profile: ``python -m arrank.workbook`` (``make workbook``).

Notebooks 01-08 in order through the runner (``profile="quick"``, run name ``workbook``), notebook
05 as the Table 1 sweep ``sweeps/table1_wordnet_workbook.yaml`` (one point per loss family), 06 on its
fractional run, 07 and 08 beside its runs. A finished stage is skipped, a failing one reported while
the others still run; at the end: each stage's wall time, Table 1 and the findings.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from arrank.common import outputs, params, paths, processes
from arrank.common.findings import note
from arrank.common.params import ParamError
from arrank.common.paths import notebooks
from arrank.workbook.run import RunFailedError, interrupt_on_signals, interrupted, run_notebook
from arrank.workbook.sweep import SweepError, load_sweep, point_states, run_sweep

WORKBOOK_SWEEP = "sweeps/table1_wordnet_workbook.yaml"
WORKBOOK_LOCK = ".workbook.lock"  # in the outputs folder: held by the one running workbook


def _sweep():
    """The workbook's Table 1 sweep, checked (nothing runs)."""
    return load_sweep(paths.ROOT / WORKBOOK_SWEEP)


def stages() -> list[dict[str, Any]]:
    """The stages in order: ``{"name", "kind": "notebook" | "sweep", "overrides", "prefix"}``.
    Notebook 05 runs inside the sweep; 06 evaluates the sweep's fractional point."""
    sweep = _sweep()
    fractional = next(p.run_name for p in sweep.points if p.grid.get("scheme") == "fractional")
    overrides = {"06": {"train_run": fractional}, "07": {"arr_runs": f"{sweep.name}-*"}}
    return [
        {"name": s.stem, "kind": "notebook", "overrides": overrides.get(s.stem[:2], {}), "prefix": s.stem[:2]}
        | ({"name": f"sweep {sweep.name}", "kind": "sweep"} if s.stem[:2] == "05" else {})
        for s in notebooks()
    ]


def workbook_jobs(points: int) -> int:
    """How many of the workbook sweep's points run at once: one per usable core (at most one per
    point), each with one torch thread (``sweep.thread_env``; docs/measurements.md, "Threads on a
    busy machine")."""
    return max(1, min(processes.usable_cores(), points))


def _run_stage(stage: dict[str, Any], run_name: str) -> tuple[str, Path]:
    """Run one stage unless it finished earlier: its status ('ran', 'done earlier' or 'FAILED: ...',
    stale runs and unwritable outputs said, not raised) and its folder."""
    sweep = _sweep() if stage["kind"] == "sweep" else None  # checked only for its own stage
    target = paths.OUTPUTS / "sweeps" / sweep.name if sweep else outputs.run_path(stage["name"], run_name)
    try:
        if stage["kind"] == "notebook":
            if (target / "results.json").exists():
                return "done earlier", target
            run_notebook(stage["name"], {"profile": "quick", "run_name": run_name, **stage["overrides"]})
            return "ran", target
        if all(s == "done" for s in point_states(sweep)):
            return "done earlier", target
        rows = run_sweep(sweep, jobs=workbook_jobs(len(sweep.points)))
        failed = [r["run_name"] for r in rows if r["status"] == "failed"]
    except (SweepError, RunFailedError, ParamError, outputs.RunExistsError, outputs.OutputsNotWritableError) as err:
        return f"FAILED: {err}", target
    return (f"FAILED: points {failed} (logs in outputs/sweeps/{sweep.name}/logs/)" if failed else "ran"), target


def picked(stage: dict[str, Any], only: list[str] | None) -> bool:
    """Whether ``--only`` (stems or number prefixes; None: all) names ``stage``."""
    return not only or any(stage["name"].startswith(o) or stage["prefix"].startswith(o) for o in only)


def run_workbook(run_name: str = "workbook", only: list[str] | None = None) -> list[dict]:
    """Run (or skip, when finished earlier) each stage; return one status row per stage."""
    rows = []
    for stage in filter(lambda s: picked(s, only), stages()):
        start = time.perf_counter()
        print(f"== {stage['name']}", flush=True)
        status, target = _run_stage(stage, run_name)
        seconds = round(time.perf_counter() - start, 1)
        rows.append({"notebook": stage["name"], "status": status, "seconds": seconds, "dir": str(target)})
    return rows


def summary(rows: list[dict]) -> str:
    """A plain-text table: stage, status, wall time, a few headline metrics."""
    lines = [f"{'stage':<36} {'status':<13} {'wall s':>7}  metrics"]
    for row in rows:
        try:
            found = list(outputs.read_results(Path(row["dir"]) / "results.json")["metrics"].items())[:4]
            metrics = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in found)
        except (FileNotFoundError, IsADirectoryError):
            metrics = ""
        except outputs.DamagedResultsError as err:
            metrics = str(err)
        lines.append(f"{row['notebook']:<36} {row['status'][:13]:<13} {row['seconds']:>7}  {metrics}")
    return "\n".join([*lines, f"{'total':<36} {'':<13} {round(sum(r['seconds'] for r in rows), 1):>7}"])


def _table1_runs():
    """The workbook sweep's collected points and their per-query rows (``arrank.workbook.report``)."""
    from arrank.workbook import report

    sweep = _sweep()
    frame = report.collect(sweep)
    return frame, report.per_query_frame(sweep, frame)


def table1_summary() -> str:
    """The workbook sweep's table (percent) as Markdown, or a line saying why there is none."""
    from arrank.results import tables

    try:
        frame, per_query = _table1_runs()
        return tables.markdown(tables.results_table(frame, per_query=per_query))
    except Exception as err:  # the summary must never hide the stage table above it
        return f"(no Table 1 summary: {type(err).__name__}: {err})"


def findings_summary(run_name: str = "workbook") -> str:
    """The CPU-scale reproduction checks as Markdown (docs/findings.md): Table 1's findings on the
    workbook sweep (``results.table1``) and Figure 3's on notebook 07's run (``results.figure3``)."""
    from arrank.common.findings import findings_markdown
    from arrank.results.figure3 import findings_rows
    from arrank.results.table1 import table1_findings

    try:
        found = table1_findings(*_table1_runs())
    except Exception as err:  # never hide the stage table above it
        found = [note(f"Table 1 findings: not available ({type(err).__name__}: {err})")]
    results = outputs.run_path("07_de_ce_baselines", run_name) / "results.json"
    if results.exists():
        try:
            found += findings_rows(outputs.read_results(results)["metrics"])
        except outputs.DamagedResultsError as err:
            found.append(note(f"Figure 3 findings: not available ({err})"))
    return findings_markdown(found)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; exit 1 when a stage failed; Ctrl-C, SIGTERM or SIGHUP: one
    ``interrupted:`` line (what was kept, how to go on) and 128 + the signal (130 for Ctrl-C)."""
    parser = argparse.ArgumentParser(prog="python -m arrank.workbook", description=__doc__.split("\n")[0])
    parser.add_argument("--run-name", default="workbook", help="run directory name (default: workbook)")
    parser.add_argument("--only", nargs="+", help="notebook stems or number prefixes to run")
    args = parser.parse_args(argv)
    try:  # refused before anything runs: a run name no stage takes, an --only that names no stage (it ran nothing)
        params.RUN_NAME("run_name", args.run_name)
        if none := [o for o in args.only or [] if not any(picked(s, [o]) for s in stages())]:
            raise ParamError(f"--only {none[0]!r} names no stage; stages: {[s['name'] for s in stages()]}")
    except ParamError as err:
        parser.error(str(err))
    try:  # one workbook at a time: two would run each other's stages and mark them failed
        lock = outputs.claim_lock(
            paths.OUTPUTS / WORKBOOK_LOCK,
            "another workbook is running (pid {pid}): wait for it to finish; its finished stages are kept",
        )
    except (outputs.RunInProgressError, outputs.OutputsNotWritableError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    with interrupt_on_signals():
        try:
            rows = run_workbook(args.run_name, args.only)
        except KeyboardInterrupt as err:
            return interrupted(
                err,
                "the workbook stopped; finished stages and sweep points are kept: run the same command again to go on",
            )
        finally:
            lock.release()
    print(summary(rows))
    print("\nTable 1, quick (workbook sweep; percent):\n" + table1_summary())
    print(
        "\nCPU-scale reproduction of the paper's findings (Figure 3: ARR on its training queries as the DE / CE, "
        "its held-out curve beside):\n" + findings_summary(args.run_name)
    )
    print(
        f"\nresults: {paths.OUTPUTS}/<notebook>/{args.run_name}/ (results.json, figures .html/.png, tables .csv); "
        f"the sweep's runs: {paths.OUTPUTS}/05_train/<sweep point>/"
    )
    failed = [r for r in rows if r["status"].startswith("FAILED")]
    for row in failed:
        print(f"{row['notebook']}: {row['status']}", file=sys.stderr)
    return 1 if failed else 0
