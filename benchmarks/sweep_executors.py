"""Wall time of a sweep run from scratch by an executor at several ``--jobs`` caps: what a point
costs in the runner (its process, kernel and bookkeeping) and what running points side by side gains.

    OMP_NUM_THREADS=1 python benchmarks/sweep_executors.py [--points 3] [--jobs 1 2] [--rounds 1]
    OMP_NUM_THREADS=1 python benchmarks/sweep_executors.py --sweep sweeps/table1_wordnet_workbook.yaml
    python benchmarks/sweep_executors.py --executor slurm      # on a Slurm login node

The same points (by default cheap ones: notebook 01_de_capacity with k_max_exact 3, mc_queries
300, k_max_bound 20, 21, ...; with ``--sweep`` every point of that sweep file) are run from
scratch in a fresh outputs folder per run, the caps alternating round by round. Printed: the
wall time of each run and the points' own seconds.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from arrank.workbook import sweep


def one_sweep(
    executor: str, jobs: int, points: int, folder: Path, sweep_file: Path | None = None
) -> tuple[float, list[float]]:
    """Run ``sweep_file`` (default: ``points`` cheap points of notebook 01) from scratch with
    ``executor`` and ``jobs`` points at once; (wall seconds, seconds per point)."""
    path = sweep_file
    if path is None:
        path = folder / "bench.yaml"
        values = ", ".join(str(20 + i) for i in range(points))
        path.write_text(
            f"notebook: 01_de_capacity\nfixed: {{k_max_exact: 3, mc_queries: 300}}\ngrid: {{k_max_bound: [{values}]}}\n"
        )
    s = sweep.load_sweep(path)
    start = time.perf_counter()
    rows = sweep.run_sweep(s, jobs=jobs, outputs_root=folder / "outputs", echo=lambda _: None, executor=executor)
    wall = time.perf_counter() - start
    if any(r["status"] != "done" for r in rows):
        raise RuntimeError(f"{executor}: {[(r['status'], r['error']) for r in rows]}")
    return wall, [r["seconds"] for r in rows]


def main() -> None:
    """Alternate the ``--jobs`` caps for ``--rounds`` rounds; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--executor", default="local", choices=("local", "slurm"))
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--points", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--sweep", type=Path, default=None, help="a sweep file whose points to time instead")
    args = parser.parse_args()
    walls: dict[int, list[float]] = {j: [] for j in args.jobs}
    for r in range(args.rounds):
        for jobs in args.jobs if r % 2 == 0 else args.jobs[::-1]:
            with tempfile.TemporaryDirectory(dir=Path.cwd() if args.executor == "slurm" else None) as tmp:
                wall, seconds = one_sweep(args.executor, jobs, args.points, Path(tmp), args.sweep)
            walls[jobs].append(wall)
            print(
                f"round {r + 1} {args.executor} --jobs {jobs}: {wall:6.1f} s for {len(seconds)} points; per point "
                + " ".join(f"{x:.1f}" for x in seconds)
                + f" (median {statistics.median(seconds):.1f})",
                flush=True,
            )
    for jobs, values in walls.items():
        print(f"{args.executor} --jobs {jobs}: mean wall {sum(values) / len(values):.1f} s")


if __name__ == "__main__":
    main()
