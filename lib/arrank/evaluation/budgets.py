"""The training budget as an axis: the held-out queries scored at several optimizer steps of one
training run (notebook 05's ``eval_steps``), so that a budget curve costs one run per variant and
seed, not one run per budget.

The paper (arXiv 2601.05588, Table 1) reports one budget: 10k steps of 64 items, about 0.91 epochs
over the (query, rank) items (Appendix B). A point at step N is the model of a run that stops at
N only if nothing before N depends on the horizon: ``params.lr_schedule`` makes the rate constant
after the warm-up for such runs, and the weighted sampler's draws depend on the seed and epoch only.

Each point's per-query metrics (``metrics.per_query_metrics``) go to ``<folder>/step-NNNNNNN.csv``
as soon as they are scored, written atomically; the folder outlives an interrupted run (it is not
the checkpoints folder, which training removes), so a resumed run keeps the points it had.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd

from arrank.common.outputs import DEV, read_rows, test_rows, write_text_atomic
from arrank.evaluation import evaluate, metrics

CURVE_COLUMNS = ("step", "items", "epochs")  # then metrics.short_columns: query, cvr, ndcg, r<k>


def training_pairs(df: pd.DataFrame) -> int:
    """The (query, relevant docID) pairs of a ranking table's training queries: one epoch as
    Appendix B counts it (every (query, rank) item once)."""
    return int(df.loc[df["split"] == "train", "relevant"].map(len).sum())


def point_path(folder: Path, step: int) -> Path:
    """Where the per-query metrics of the point at ``step`` are kept."""
    return folder / f"step-{step:07d}.csv"


def scored_steps(folder: Path) -> list[int]:
    """The steps whose points are kept in ``folder`` (a run's ``.curve-<run>/``), in order."""
    return sorted(int(p.stem.removeprefix("step-")) for p in folder.glob("step-*.csv")) if folder.is_dir() else []


def with_splits(test: pd.DataFrame, dev: pd.DataFrame | None) -> pd.DataFrame:
    """``test``, the per-query metrics of the held-out test queries; with ``dev``, those of the validation
    queries (``arrank.data.ranking.carve_dev``), below them, and a ``split`` column (test, dev) naming each row's."""
    return test if dev is None else pd.concat([test.assign(split="test"), dev.assign(split=DEV)], ignore_index=True)


def held_out_scorer(tokenizer, df: pd.DataFrame, limit: int | None, ks, precision: str, query_batch: int):
    """``model -> per-query metrics`` of the held-out test queries (the first ``limit``) and, where ``df``
    has them, the validation ones (``with_splits``), as notebook 05's final evaluation scores them (no
    progress bar; ``evaluate.eval_queries`` limits the test queries only)."""
    kwargs = {"progress": False, "precision": precision, "query_batch": query_batch}
    score = lambda model, split: evaluate.evaluate_held_out(model, tokenizer, df, limit, ks, split=split, **kwargs)[1]
    return lambda model: with_splits(score(model, "eval"), score(model, DEV) if df["split"].eq(DEV).any() else None)


def budget_callback(points: Sequence[int], final_step: int, folder: Path, score: Callable, model):
    """A transformers ``TrainerCallback`` that, at the end of each optimizer step in ``points`` other
    than ``final_step`` (which the run's own evaluation scores), writes ``score(model)`` to
    ``point_path(folder, step)``. A point already there (an interrupted run resumed past it) is kept;
    points after the step training resumes from are scored again. ``seconds`` is the scoring time."""
    from transformers import TrainerCallback

    class BudgetPoints(TrainerCallback):
        seconds = 0.0

        def on_step_end(self, args, state, control, **kwargs):
            step = state.global_step
            path = point_path(folder, step)
            if step not in points or step == final_step or path.exists():
                return
            start = time.perf_counter()
            per_query = score(model)
            folder.mkdir(parents=True, exist_ok=True)
            write_text_atomic(path, per_query.to_csv(index=False))
            self.seconds += time.perf_counter() - start
            test = test_rows(per_query)
            means = metrics.short_columns(test).drop(columns="query").mean()
            shown, took = ", ".join(f"{k} {v:.3f}" for k, v in means.items()), time.perf_counter() - start
            print(f"step {step}: held-out {shown} ({len(test)} test queries, {took:.1f} s)", flush=True)

    return BudgetPoints()


def forget_after(folder: Path, step: int) -> None:
    """Remove the points after ``step`` (the step training resumes from; 0 for a fresh start): the
    run scores them again, from the model it now trains. ``step=-1`` removes them all (and the
    folder), once the run has written its ``curve_per_query.csv``."""
    for path in folder.glob("step-*.csv"):
        if int(path.stem.removeprefix("step-")) > step:
            path.unlink()
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()


def curve_table(
    folder: Path, points: Sequence[int], final_step: int, final: pd.DataFrame, items_per_step: int, n_pairs: int
) -> pd.DataFrame:
    """Every point's per-query metrics in one long table (``CURVE_COLUMNS`` then ``metrics.short_columns``): the
    points in ``folder``, each checked whole against ``final``'s rows of each split (``outputs.read_rows``), and
    ``final`` (the run's own evaluation) at ``final_step``. ``items`` is the
    step times the items a step carries; ``epochs`` is ``items`` over ``n_pairs``, the training
    queries' (query, relevant docID) pairs, as Appendix B counts an epoch. Per-query frames with a
    ``split`` column (``with_splits``) keep it, after ``epochs``."""
    counts = {"n_queries": len(test_rows(final))}
    counts |= {"dev_n_queries": int(final["split"].eq(DEV).sum())} if "split" in final else {}
    frames = []
    for step in sorted(set(points) | {final_step}):
        per_query = final if step == final_step else read_rows(point_path(folder, step), ["query", "ndcg"], counts)
        items = step * items_per_step
        short = metrics.short_columns(per_query)
        if "split" in per_query:
            short.insert(0, "split", per_query["split"].to_numpy())
        frames.append(short.assign(step=step, items=items, epochs=items / n_pairs)[[*CURVE_COLUMNS, *short.columns]])
    return pd.concat(frames, ignore_index=True)


def curve_summary(table: pd.DataFrame) -> pd.DataFrame:
    """The held-out means of ``curve_table`` per point (fractions), one row per step (and split)."""
    keys = [*CURVE_COLUMNS, *["split"] * ("split" in table)]
    return table.drop(columns="query").groupby(keys, as_index=False, sort=False).mean()
