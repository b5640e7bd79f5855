"""Overhead of a sweep point run as a submitit job (``--executor local``) against today's child
process per point (``--executor subprocess --jobs 1``), issue 17.

    OMP_NUM_THREADS=1 python benchmarks/sweep_executors.py [--points 3] [--rounds 1]
    OMP_NUM_THREADS=1 python benchmarks/sweep_executors.py --sweep sweeps/table1_wordnet_workbook.yaml

The same points (by default cheap ones: notebook 01_de_capacity with k_max_exact 3, mc_queries
300, k_max_bound 20, 21, ...; with ``--sweep`` every point of that sweep file, e.g. the
workbook's Table 1 training runs) are run from scratch by both executors, one point at a time,
in a fresh outputs folder per run, the executors alternating round by round. Printed: each executor's wall time per point
(the sweep's own ``seconds``) and in all, and the difference per point (the job overhead: the
submitit controller, the pickled call, the polling of the job).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from arrank.workbook import sweep


def one_sweep(executor: str, points: int, folder: Path, sweep_file: Path | None = None) -> tuple[float, list[float]]:
    """Run ``sweep_file`` (default: ``points`` cheap points of notebook 01) from scratch with
    ``executor``; (wall seconds, seconds per point)."""
    path = sweep_file
    if path is None:
        path = folder / "bench.yaml"
        values = ", ".join(str(20 + i) for i in range(points))
        path.write_text(
            f"notebook: 01_de_capacity\nfixed: {{k_max_exact: 3, mc_queries: 300}}\ngrid: {{k_max_bound: [{values}]}}\n"
        )
    s = sweep.load_sweep(path)
    start = time.perf_counter()
    rows = sweep.run_sweep(s, jobs=1, outputs_root=folder / "outputs", echo=lambda _: None, executor=executor)
    wall = time.perf_counter() - start
    if any(r["status"] != "done" for r in rows):
        raise RuntimeError(f"{executor}: {[(r['status'], r['error']) for r in rows]}")
    return wall, [r["seconds"] for r in rows]


def main() -> None:
    """Alternate the two executors for ``--rounds`` rounds; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--points", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--sweep", type=Path, default=None, help="a sweep file whose points to time instead")
    args = parser.parse_args()
    walls: dict[str, list[float]] = {"subprocess": [], "local": []}
    per_point: dict[str, list[float]] = {"subprocess": [], "local": []}
    for r in range(args.rounds):
        order = ["subprocess", "local"] if r % 2 == 0 else ["local", "subprocess"]
        for executor in order:
            with tempfile.TemporaryDirectory() as tmp:
                wall, seconds = one_sweep(executor, args.points, Path(tmp), args.sweep)
            walls[executor].append(wall)
            per_point[executor] += seconds
            print(
                f"round {r + 1} {executor:<10} {wall:6.1f} s for {len(seconds)} points; per point "
                + " ".join(f"{x:.1f}" for x in seconds),
                flush=True,
            )
    n = len(per_point["local"])
    mean = {k: sum(v) / n for k, v in walls.items()}
    for k in walls:
        print(
            f"{k:<10} wall per point {mean[k]:.2f} s (median of the points' own seconds "
            f"{statistics.median(per_point[k]):.2f} s)"
        )
    print(
        f"local job overhead per point: {mean['local'] - mean['subprocess']:+.2f} s "
        f"({100 * (mean['local'] / mean['subprocess'] - 1):+.1f} %)"
    )


if __name__ == "__main__":
    main()
