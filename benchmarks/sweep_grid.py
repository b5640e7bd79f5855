"""How fast a sweep handles large grids: a 1,000,000-point grid refused before it is
expanded, a 10,000-point grid checked and listed (``--list``), and duplicate removal with a set
against the list search it replaced (quadratic), on the same 10,000 points.

    OMP_NUM_THREADS=1 PYTHONPATH=lib python benchmarks/sweep_grid.py [--points 10000]

Everything runs in this process on a temporary sweep file of notebook 05 (quick profile) and an
empty temporary outputs folder; the figures are wall seconds of one run each (and the CPU seconds
of the listing: on a shared machine the wall time stretches with the load).
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
import time
from pathlib import Path

from arrank.workbook import sweep


def sweep_file(folder: Path, name: str, a: int, b: int) -> Path:
    """A sweep of notebook 05 whose grid is a values of seed x b values of alpha."""
    path = folder / f"{name}.yaml"
    alphas = [round(0.5 + i / 1000, 3) for i in range(b)]
    path.write_text(
        f"notebook: 05_train\nfixed: {{profile: quick, steps: 5}}\ngrid: {{seed: {list(range(a))}, alpha: {alphas}}}\n"
    )
    return path


def quadratic_unique(points: list[dict]) -> list[dict]:
    """Duplicate removal done the slow way: a search of the list for every point."""
    out: list[dict] = []
    for point in points:
        if point not in out:
            out.append(point)
    return out


CPU: dict[str, float] = {}


def timed(fn, *args):
    """(value, wall seconds); the CPU seconds of this process go to ``CPU[fn.__name__]`` (on a
    shared machine the wall time is the CPU time stretched by the load)."""
    start, cpu = time.perf_counter(), time.process_time()
    value = fn(*args)
    CPU[fn.__name__] = time.process_time() - cpu
    return value, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=10_000, help="points of the listed grid (a square)")
    args = parser.parse_args()
    side = int(round(args.points**0.5))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "outputs").mkdir()
        start = time.perf_counter()
        try:
            sweep.load_sweep(sweep_file(folder, "million", 1000, 1000))
            raise SystemExit("the 1,000,000-point grid was not refused")
        except sweep.SweepError as err:
            refuse_s, message = time.perf_counter() - start, str(err)
        s, load_s = timed(sweep.load_sweep, sweep_file(folder, "grid", side, side))
        listing, list_s = timed(sweep.describe, s, folder / "outputs")
        raw = [dict(zip(("seed", "alpha"), combo)) for combo in itertools.product(range(side), range(side))]
        fast, set_s = timed(sweep.expand_grid, {"seed": list(range(side)), "alpha": list(range(side))})
        slow, list_search_s = timed(quadratic_unique, raw)
    assert fast == slow and len(listing.splitlines()) == len(s.points) + 2
    print(f"1,000,000-point grid refused in {refuse_s:.3f} s: {message}")
    print(
        f"{len(s.points):,}-point grid: load_sweep (checks every point) {load_s:.2f} s, --list {list_s:.2f} s, "
        f"together {load_s + list_s:.2f} s (CPU {CPU['load_sweep'] + CPU['describe']:.2f} s; the first load "
        "includes importing jupytext)"
    )
    print(
        f"duplicates of {len(raw):,} points: set {set_s:.3f} s, list search {list_search_s:.2f} s "
        f"({list_search_s / set_s:.0f}x)"
    )


if __name__ == "__main__":
    main()
