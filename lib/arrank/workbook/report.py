"""A sweep's runs gathered for the results stage (``arrank.results``, notebook 08): its points'
results.json as one frame, the random-scores floor, the paper's rows to show, the per-query rows
(at the run's end, and at each budget of a run that scored several: ``curve_frame``)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Sequence

import pandas as pd

from arrank.common import outputs
from arrank.common.display import number_text
from arrank.common.outputs import read_results, read_rows
from arrank.common.params import PAPER_ROWS, choice, items_per_step, profile_value
from arrank.evaluation.metrics import short_columns
from arrank.results.curve import LR_TEXT, SCHEDULE_TEXT
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
            results = read_results(results_path(sweep, point, outputs_root))
            params, metrics = results["params"], results["metrics"]
        label = variant_label(sweep.notebook, params, sweep.grid_keys)
        row = {"run_name": point.run_name, "state": state, "label": label, "profile": params.get("profile")}
        row.update({k: params.get(k) for k in sweep.grid_keys})
        rows.append(row | {k: v for k, v in metrics.items() if k in metric_columns(metrics)})
    return pd.DataFrame(rows)


def random_floor(sweep: Sweep, frame: pd.DataFrame, outputs_root: Path | None = None) -> dict[str, float] | None:
    """The random-scores row of the first finished run's ``metrics.csv`` (notebook 05 writes it):
    the floor every row should be read against (docs/design.md). None if there is none; a file cut short
    or unreadable is :class:`DamagedResultsError`, never a floor of NaN."""
    for run_name in frame.loc[frame["state"] == "done", "run_name"]:
        table = outputs.run_path(sweep.notebook, run_name, outputs_root) / "metrics.csv"
        rows = outputs.read_table(table) if table.exists() else pd.DataFrame()
        if "run" in rows.columns and (rows["run"] == "random scores").any():
            return rows[rows["run"] == "random scores"].iloc[0][metric_columns(rows.columns)].astype(float).to_dict()
    return None


def paper_reference(sweep: Sweep, frame: pd.DataFrame, paper_rows: str = "auto") -> str | None:
    """The key of PAPER whose rows go beside the table: ``yes`` always (an error when the paper
    has no numbers for this sweep), ``auto`` when every finished point ran the paper profile."""
    choice(*PAPER_ROWS)("paper_rows", paper_rows)  # else an unknown value would show no rows
    if paper_rows == "yes" and sweep.paper not in PAPER:
        raise ValueError(
            f"the paper gives no numbers for sweep {sweep.name} (paper: {sweep.paper}); numbers exist for {sorted(PAPER)}"
        )
    shown = paper_rows == "yes" or paper_rows == "auto" and sweep_profile(frame) == "paper"
    return sweep.paper if shown and sweep.paper in PAPER else None


PER_QUERY_COLUMNS = ["point", "variant", "seed", "query", "cvr", "ndcg", "r1", "r2", "r3", "r4", "r5"]


def per_query_frame(sweep: Sweep, frame: pd.DataFrame | None = None, outputs_root: Path | None = None) -> pd.DataFrame:
    """The held-out per-query metrics (each run's ``per_query.csv``) of every finished point of a
    sweep of notebook 05, one row per (point, query): ``PER_QUERY_COLUMNS`` as fractions, ``variant``
    the table's row label, ``cvr`` 0 or 1 (WordNet's one negative), ``r<k>`` NaN where the query has
    fewer than k relevant docIDs. Runs without ``per_query.csv`` are left out; ``frame``: ``collect``'s."""
    if sweep.notebook != "05_train":
        raise ValueError(f"per-query rows are read from a sweep of notebook 05_train, not {sweep.notebook!r}")
    frame = collect(sweep, outputs_root) if frame is None else frame
    parts = []
    for _, row in frame[frame["state"] == "done"].iterrows():
        path = outputs.run_path(sweep.notebook, row["run_name"], outputs_root) / "per_query.csv"
        if not path.exists():
            continue
        results = read_results(path.parent / "results.json")
        q = short_columns(read_rows(path, ["query", "ndcg"], results["metrics"]))
        parts.append(q.assign(point=row["run_name"], variant=row["label"], seed=results["params"].get("seed")))
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=PER_QUERY_COLUMNS)
    return out[[c for c in PER_QUERY_COLUMNS if c in out.columns]]


CURVE_COLUMNS = [*PER_QUERY_COLUMNS[:2], "setting", PER_QUERY_COLUMNS[2], "step", "items", "epochs", "split"]
CURVE_COLUMNS += PER_QUERY_COLUMNS[3:]  # split: test or dev (runs with a validation split; else absent)
NOT_VARIANT = ("steps", "lr")  # a curve spans budgets, its setting names a rate: neither is in the variant label


def curve_setting(params: dict, rows: pd.DataFrame, processes: int = 1) -> str:
    """The training setting of a curve run, what its numbers compare within: ``64 items a step,
    2,000 held-out queries`` (``items_per_step``; the distinct test queries its ``curve_per_query.csv``
    scored, the held-out set it is), then for a run with a validation split its schedule, ``, cosine to
    each budget`` or ``, constant rate`` (Appendix B's cosine decays to the run's last step: one run per
    budget; a constant rate reads every budget off one run), then a learning rate other than its profile's,
    ``, lr 0.0002``: two rates never pool, and a budget chosen on validation chooses among them too."""
    held_out = outputs.test_rows(rows)["query"].nunique()
    setting = f"{items_per_step(params, processes):,} items a step, {held_out:,} held-out queries"
    setting += SCHEDULE_TEXT[params.get("lr_schedule", "cosine")] if "split" in rows else ""
    lr, usual = params.get("lr"), profile_value("05_train", params.get("profile", "quick"), "lr")
    return setting + (f"{LR_TEXT}{number_text(lr)}" if lr not in (None, usual) else "")


def curve_frame(sweep: Sweep, frame: pd.DataFrame | None = None, outputs_root: Path | None = None) -> pd.DataFrame:
    """The held-out per-query metrics at each training budget (``curve_per_query.csv``: notebook 05
    with ``eval_steps`` scores the same queries at each listed optimizer step) of every point of a
    sweep of notebook 05, one row per (point, step, query): ``CURVE_COLUMNS``, fractions.
    ``point``, ``seed`` as in ``per_query_frame``; ``variant`` its label without the budget or rate
    (``NOT_VARIANT``: one run spans several budgets), ``NTP`` where the table says ``NTP (steps=120)``;
    ``setting`` the run's ``curve_setting`` (runs of one setting pool, as a sweep and the same runs
    trained longer; ``results.curve`` never pools two). A point that is not done gives the budgets
    its stopped run scored (``stopped_run``, ``stopped_points``). Points without scored budgets are left out: a sweep
    of ordinary runs gives no rows."""
    if sweep.notebook != "05_train":
        raise ValueError(f"curve rows are read from a sweep of notebook 05_train, not {sweep.notebook!r}")
    frame = collect(sweep, outputs_root) if frame is None else frame
    varying = [k for k in sweep.grid_keys if k not in NOT_VARIANT]
    parts = []
    states = dict(zip(frame["run_name"], frame["state"]))
    for point in (p for p in sweep.points if p.run_name in states):
        state = states[point.run_name]
        folder = outputs.run_path(sweep.notebook, point.run_name, outputs_root)
        run, results = (folder, read_results(folder / "results.json")) if state == "done" else stopped_run(folder)
        if run and (run / "curve_per_query.csv").exists():
            params = results["params"]
            rows = read_rows(run / "curve_per_query.csv", ["step", "query", "ndcg"], results["metrics"], by="step")
        elif state != "done" and (rows := stopped_points(folder, point.resolved)) is not None:
            params, results = point.resolved, {}  # a sweep's point runs as one process
        else:
            continue
        label = variant_label(sweep.notebook, params, varying)
        setting = curve_setting(params, rows, results.get("env", {}).get("processes", 1))
        parts.append(rows.assign(point=point.run_name, variant=label, setting=setting, seed=params.get("seed")))
    return (pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=CURVE_COLUMNS)).filter(CURVE_COLUMNS)


def stopped_run(folder: Path) -> tuple[Path | None, dict | None]:
    """The newest ``<run>.failed-<time>`` folder beside ``folder`` that holds a complete results.json
    (a run stopped after its measurements, e.g. by a time limit while its last cells ran), with
    that results.json; ``(None, None)`` if there is none."""
    for failed in sorted(folder.parent.glob(f"{folder.name}.failed-*"), reverse=True):
        try:
            return failed, read_results(failed / "results.json")
        except (FileNotFoundError, outputs.DamagedResultsError):
            continue
    return None, None


def stopped_points(folder: Path, params: dict) -> pd.DataFrame | None:
    """The budgets a run scored before it stopped mid-training (``.curve-<run>/step-*.csv``,
    ``evaluation.budgets``) as ``curve_per_query.csv`` rows; None if it scored none. ``params``: the
    point's resolved parameters (its batch, and its data, whose training pairs make an epoch). One's
    own data is rebuilt only from the file the run trained on: the ``data_digest`` its checkpoints
    recorded (``.checkpoints-<run>/params.json``) is checked as notebook 06 checks a train_run's."""
    from arrank.data.ranking import ranking_dataset
    from arrank.evaluation import budgets, evaluate

    curve_dir = folder.parent / f".curve-{folder.name}"
    if not (steps := budgets.scored_steps(curve_dir)):
        return None
    recorded, trained = folder.parent / f".checkpoints-{folder.name}" / outputs.RESUME_PARAMS, dict(params)
    with contextlib.suppress(OSError, ValueError, AttributeError):  # no checkpoints (a GPU tarball's): said
        trained["data_digest"] = json.loads(recorded.read_text()).get("data_digest")
    evaluate.check_data_digest(folder.name, trained, outputs.data_digest(params), "stopped run")
    keys = ("dataset", "profile", "n_eval", "template", "subtree", "min_relevant", "data_path", "custom_docids")
    df = ranking_dataset(seed=params["data_seed"], n_dev=params.get("n_dev", 0), **{k: params[k] for k in keys})
    counts = {"n_queries": len(evaluate.eval_queries(df, params.get("eval_queries") or None))}
    counts |= {"dev_n_queries": int(df["split"].eq(outputs.DEV).sum())} if params.get("n_dev") else {}
    final = read_rows(budgets.point_path(curve_dir, steps[-1]), ["query", "ndcg"], counts)  # the others: against it
    return budgets.curve_table(curve_dir, steps, steps[-1], final, items_per_step(params), budgets.training_pairs(df))


def curves(sweeps: Sequence[Sweep], outputs_root: Path | None = None) -> pd.DataFrame:
    """``curve_frame`` of several sweeps of notebook 05 in one frame (the first sweep's rows first):
    one comparison at the budgets each sweep scored, e.g. a sweep and the same runs trained longer;
    sweeps of different settings (``curve_setting``) stay apart by their ``setting`` column. A run's
    budget that two of them hold (a sweep named twice, two files of one run) counts once."""
    rows = pd.concat([curve_frame(s, outputs_root=outputs_root) for s in sweeps], ignore_index=True)
    return rows.drop_duplicates(["point", "step", "query"], ignore_index=True)


def write_per_query(per_query: pd.DataFrame, path: Path, overwrite: bool = False) -> Path:
    """Write ``per_query_frame``'s rows as one CSV (e.g. ``docs/data/pretrained_table1_per_query.csv``),
    atomically (a temporary file renamed into place: never half a file). An existing file with
    other contents is kept and refused unless ``overwrite``; the same contents again is no change."""

    missing = [c for c in PER_QUERY_COLUMNS[:6] if c not in per_query.columns]
    if missing or per_query.empty:
        raise ValueError(
            f"per-query rows need the columns {PER_QUERY_COLUMNS[:6]} and R@k, and at least one row; "
            f"got {len(per_query)} rows, missing {missing}"
        )
    path = Path(path)
    text = per_query.to_csv(index=False, float_format="%.6g")
    if path.exists() and path.read_text() != text and not overwrite:
        raise FileExistsError(f"{path} exists with other per-query rows: pass overwrite=True to replace it")
    path.parent.mkdir(parents=True, exist_ok=True)
    return outputs.write_text_atomic(path, text)
