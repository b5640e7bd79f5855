"""The quick workbook quiet and beside one busy process, in one run.

Runs ``python -m arrank.workbook`` twice, each into its own fresh outputs folder
(``ARRANK_OUTPUTS``), so nothing is skipped as done and nothing of the repository's outputs is
touched: first quiet, then with one ``python -c 'while True: pass'`` process beside it (a
browser tab or JupyterLab on a researcher's laptop). Prints each stage's wall time in both runs
and, last, ``busy / quiet: <r>x (target <= 1.5x)``. The rule that should make it degrade
gracefully is in docs/measurements.md ("Threads on a busy machine").

    python benchmarks/busy_workbook.py                 # the whole quick workbook, ~20 min here
    python benchmarks/busy_workbook.py --only 01 02    # a few stages, to try it out
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def stage_times(summary: str) -> dict[str, float]:
    """Stage name -> wall seconds, read from the workbook's closing summary table (fixed columns:
    name 36 characters, status 13, seconds 7; ``arrank.workbook.whole.summary``)."""
    times: dict[str, float] = {}
    lines = summary.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("stage ")), len(lines))
    for line in lines[start + 1 :]:
        name, seconds = line[:36].strip(), line[51:58].strip()
        if name == "total":  # the table ends here (Table 1 and the findings follow)
            break
        if re.fullmatch(r"\d+(\.\d+)?", seconds):
            times[name] = float(seconds)
    return times


def run_workbook(outputs: Path, only: list[str] | None, busy: int) -> tuple[float, str]:
    """One workbook run into ``outputs`` with ``busy`` spinning processes beside it: its wall time
    and its stdout. Raises when the workbook fails (a failed stage would make the ratio meaningless)."""
    env = {**os.environ, "ARRANK_OUTPUTS": str(outputs)}
    cmd = [sys.executable, "-m", "arrank.workbook", *(["--only", *only] if only else [])]
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        start = time.perf_counter()
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - start
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    if done.returncode != 0:
        raise SystemExit(f"workbook failed (exit {done.returncode}, busy={busy}):\n{done.stderr[-3000:]}")
    return wall, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", help="workbook stages to run (as `python -m arrank.workbook --only`)")
    parser.add_argument("--busy", type=int, default=1, help="spinning processes beside the second run (default 1)")
    a = parser.parse_args()
    if a.busy < 1:
        raise SystemExit(f"--busy must be >= 1, got {a.busy}")
    # WordNet into data/nltk_data, as `make workbook` does before it runs (idempotent)
    subprocess.run([sys.executable, "-m", "arrank.common.wordnet_setup"], check=True)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="busy-workbook-") as tmp:
        quiet_wall, quiet_out = run_workbook(Path(tmp) / "quiet", a.only, busy=0)
        print(f"quiet run: {quiet_wall:.1f} s (load average before it {load:.2f})", flush=True)
        busy_wall, busy_out = run_workbook(Path(tmp) / "busy", a.only, busy=a.busy)
        print(f"busy run ({a.busy} spinning process{'es' if a.busy > 1 else ''} beside it): {busy_wall:.1f} s")
    quiet, busy = stage_times(quiet_out), stage_times(busy_out)
    print(f"\n{'stage':<36} {'quiet s':>8} {'busy s':>8} {'ratio':>6}")
    for name, seconds in quiet.items():
        other = busy.get(name, float("nan"))
        print(f"{name:<36} {seconds:>8.1f} {other:>8.1f} {other / seconds if seconds else float('nan'):>6.2f}")
    print(f"busy / quiet: {busy_wall / quiet_wall:.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    main()
