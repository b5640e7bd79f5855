"""Run the whole workbook in its quick profile: ``python -m arrank.workbook`` (``make workbook``).

Each notebook ``notebooks/NN_*.py`` runs through the papermill runner (``arrank.run``) with
``profile="quick"`` into ``outputs/<stem>/<run_name>/`` (run name ``workbook`` by default). A
notebook whose run directory already holds a ``results.json`` is skipped, so a second
``make workbook`` takes seconds; a failing notebook is reported and the others still run.
At the end it prints the wall time of each stage and where the results are.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from arrank import paths
from arrank.outputs import run_path
from arrank.run import RunFailedError, run_notebook


def notebooks() -> list[Path]:
    """The workbook's notebooks, in order."""
    return sorted(paths.NOTEBOOKS.glob("[0-9][0-9]_*.py"))


def run_workbook(run_name: str = "workbook", only: list[str] | None = None,
                 extra: dict[str, str] | None = None) -> list[dict]:
    """Run (or skip, when finished earlier) each notebook; return one status row per notebook."""
    rows = []
    for source in notebooks():
        if only and not any(source.stem.startswith(o) for o in only):
            continue
        target = run_path(source.stem, run_name)
        start = time.perf_counter()
        if (target / "results.json").exists():
            status = "done earlier"
        else:
            print(f"== {source.stem}", flush=True)
            try:
                run_notebook(source, {"profile": "quick", "run_name": run_name, **(extra or {})})
                status = "ran"
            except RunFailedError as err:
                status = f"FAILED: {err}"
        rows.append({"notebook": source.stem, "status": status,
                     "seconds": round(time.perf_counter() - start, 1), "dir": str(target)})
    return rows


def summary(rows: list[dict]) -> str:
    """A plain-text table: notebook, status, wall time, a few headline metrics."""
    lines = [f"{'notebook':<22} {'status':<13} {'wall s':>7}  metrics"]
    for row in rows:
        metrics = ""
        results = Path(row["dir"]) / "results.json"
        if results.exists():
            m = json.loads(results.read_text())["metrics"]
            metrics = ", ".join(f"{k}={v}" for k, v in list(m.items())[:4])
        lines.append(f"{row['notebook']:<22} {row['status'][:13]:<13} {row['seconds']:>7}  {metrics}")
    total = sum(r["seconds"] for r in rows)
    lines.append(f"{'total':<22} {'':<13} {round(total, 1):>7}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; exit 1 when a notebook failed."""
    parser = argparse.ArgumentParser(prog="python -m arrank.workbook", description=__doc__.split("\n")[0])
    parser.add_argument("--run-name", default="workbook", help="run directory name (default: workbook)")
    parser.add_argument("--only", nargs="*", help="notebook stems or number prefixes to run")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    rows = run_workbook(args.run_name, args.only)
    print(summary(rows))
    print(f"results: {paths.OUTPUTS}/<notebook>/{args.run_name}/ (results.json, figures .html/.png, tables .csv)")
    failed = [r for r in rows if r["status"].startswith("FAILED")]
    for row in failed:
        print(f"{row['notebook']}: {row['status']}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
