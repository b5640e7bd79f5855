"""What the intervals of the findings cost (docs/findings.md): Table 1's findings and the table's ±
on a synthetic sweep of the powered pretrained sweep's shape.

    python benchmarks/findings_cost.py [--queries 500] [--seeds 2]

Six rows as the paper's Tables 1 and 3 (zero-shot, NTP, fractional α=2, stepwise, trie β=2,
combined), NTP and fractional with ``--seeds`` runs, ``--queries`` held-out queries each, random
per-query metrics (only the cost is measured, not a verdict). Prints the wall time of
``table1.table1_findings`` (every comparison a 9,999-resample BCa bootstrap) and of
``tables.results_table`` (every value's half-width, 1,999 resamples), and the machine's load.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd

from arrank.results import table1, tables

ROWS = [
    ("Zero-shot", {"steps": 0, "scheme": "indicator", "targets": "onehot", "alpha": None}, False),
    ("NTP", {"steps": 1, "scheme": "indicator", "targets": "onehot", "alpha": None}, True),
    ("Fractional α=2", {"steps": 1, "scheme": "fractional", "targets": "onehot", "alpha": 2.0}, True),
    ("Stepwise", {"steps": 1, "scheme": "stepwise", "targets": "onehot", "alpha": None}, False),
    ("Trie β=2", {"steps": 1, "scheme": "indicator", "targets": "trie", "alpha": None}, False),
    (
        "Combined α=2, β=2",
        {"steps": 1, "scheme": "fractional", "targets": "trie", "alpha": 2.0, "combined": True},
        False,
    ),
]


def synthetic_sweep(n: int, seeds: int, rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(``report.collect``'s frame, ``report.per_query_frame``'s rows) of a synthetic sweep."""
    frame, per_query = [], []
    for label, params, seeded in ROWS:
        for seed in range(seeds if seeded else 1):
            point = f"{label}-seed{seed}"
            part = pd.DataFrame(
                {
                    "point": point,
                    "variant": label,
                    "seed": seed,
                    "query": [f"q{i}" for i in range(n)],
                    "cvr": (rng.random(n) < 0.3).astype(float),
                    "ndcg": rng.random(n),
                    **{f"r{k}": rng.integers(0, k + 1, n) / k for k in range(1, 6)},
                }
            )
            per_query.append(part)
            frame.append(
                {
                    "run_name": point,
                    "state": "done",
                    "label": label,
                    "combined": False,
                    **params,
                    "cvr": part["cvr"].mean(),
                    "ndcg": part["ndcg"].mean(),
                    **{f"recall@{k}": part[f"r{k}"].mean() for k in range(1, 6)},
                }
            )
    return pd.DataFrame(frame), pd.concat(per_query, ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--seeds", type=int, default=2)
    args = parser.parse_args()
    frame, per_query = synthetic_sweep(args.queries, args.seeds, np.random.default_rng(0))
    start = time.perf_counter()
    found = table1.table1_findings(frame, per_query=per_query)
    findings_s = time.perf_counter() - start
    start = time.perf_counter()
    tables.results_table(frame, per_query=per_query)
    table_s = time.perf_counter() - start
    print(
        f"{len(frame)} runs of {frame['label'].nunique()} rows, {args.queries} queries each: "
        f"table1_findings {findings_s:.1f} s ({len(found)} findings), results_table {table_s:.1f} s; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
