"""A sweep's runs gathered for the results stage (``arrank.results``): ``collect`` reads the
results.json of every point of a sweep (``arrank.workbook.sweep``) into one frame, ``random_floor``
the random-scores row notebook 05 writes, ``paper_reference`` which of the paper's tables goes
beside the sweep's."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from arrank.common.outputs import run_path
from arrank.results.paper import PAPER
from arrank.results.tables import metric_columns, sweep_profile, variant_label
from arrank.workbook.sweep import Sweep, point_states, results_path


def collect(sweep: Sweep, outputs_root: Path | None = None) -> pd.DataFrame:
    """One row per point of the sweep: run_name, state (done / failed / missing), label, the
    varied parameters, profile, and the metrics of its results.json (fractions) when done."""
    rows = []
    for point, state in zip(sweep.points, point_states(sweep, outputs_root)):
        params, metrics = point.resolved, {}
        if state == "done":
            results = json.loads(results_path(sweep, point, outputs_root).read_text())
            params, metrics = results["params"], results["metrics"]
        row = {"run_name": point.run_name, "state": state,
               "label": variant_label(sweep.notebook, params, sweep.grid_keys), "profile": params.get("profile")}
        row.update({k: params.get(k) for k in sweep.grid_keys})
        row.update({k: v for k, v in metrics.items() if k in metric_columns(metrics)})
        rows.append(row)
    return pd.DataFrame(rows)


def random_floor(sweep: Sweep, frame: pd.DataFrame, outputs_root: Path | None = None) -> dict[str, float] | None:
    """The random-scores row of the first finished run's ``metrics.csv`` (notebook 05 writes it):
    the floor every row should be read against (docs/design.md). None if there is none."""
    for run_name in frame.loc[frame["state"] == "done", "run_name"]:
        table = run_path(sweep.notebook, run_name, outputs_root) / "metrics.csv"
        if table.exists():
            df = pd.read_csv(table)
            if "run" in df.columns and (df["run"] == "random scores").any():
                row = df[df["run"] == "random scores"].iloc[0]
                return {k: float(row[k]) for k in metric_columns(df.columns)}
    return None


def paper_reference(sweep: Sweep, frame: pd.DataFrame, paper_rows: str = "auto") -> str | None:
    """The key of PAPER whose rows go beside the table: ``yes`` always (an error when the paper
    has no numbers for this sweep), ``auto`` when every finished point ran the paper profile."""
    if paper_rows not in ("auto", "yes", "no"):
        raise ValueError(f"paper_rows={paper_rows!r} is not allowed; choose one of ['auto', 'yes', 'no']")
    if paper_rows == "no":
        return None
    if sweep.paper not in PAPER:
        if paper_rows == "yes":
            raise ValueError(f"the paper gives no numbers for sweep {sweep.name} (paper: {sweep.paper}); "
                             f"numbers exist for {sorted(PAPER)}")
        return None
    return sweep.paper if paper_rows == "yes" or sweep_profile(frame) == "paper" else None
