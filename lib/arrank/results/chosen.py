"""Each method at its training budget chosen on the validation queries (arXiv 2601.05588, section 5.2:
Table 1's central claim, fractional λ(r) = 1/r^2 above NTP at R@2..R@5, decided once per method's best
budget rather than at every budget on the same test queries).

The protocol: per method and seed, the budget (and schedule and learning rate, where runs of several are
offered) with the best validation mean R@2..R@5 (``CHOICE``, the central claim's quantity) is that run's checkpoint; the
test queries are read once, at the chosen checkpoints, and each claim of ``curve.COMPARISONS`` is decided
there. The candidates are the curve rows of one setting but for schedule and rate (``curve.data_setting``):
the same items a step and the same test and validation queries, so that a choice never mixes query sets.

The interval includes the choice: a percentile bootstrap that resamples the seeds of each method, the
validation queries and the test queries (paired across the methods), and makes the choice again inside
every resample on its validation queries, so a choice that flips between near-equal budgets widens the
interval as it should (``rechoose=False`` keeps the choice of the data: the narrower interval that
ignores it). The claims decided at the chosen budgets are one family for Holm's adjustment.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from arrank.common.findings import Finding, decide, excludes
from arrank.common.outputs import DEV, test_rows
from arrank.results import curve
from arrank.results import statistics as S
from arrank.results.claims import Claim, recall

CHOICE = recall(2, 3, 4, 5)  # what a budget is chosen by: the central claim's quantity on the validation queries
CHOICE_COLUMNS = ["data_setting", "variant", "seed", "setting", "step", "items", "epochs", "dev_mean", "largest"]


@dataclass(frozen=True)
class Arrays:
    """One variant's scored budgets in one data setting: ``candidates`` (setting, step) every seed of it
    has, ``seeds``, and per (seed, candidate, query) the validation value of ``CHOICE`` (``dev``) and the
    test value of a claim's metrics (``test``), on the queries every run has."""

    candidates: list[tuple[str, int]]
    seeds: list
    dev: np.ndarray
    test: np.ndarray

    def chosen(self) -> np.ndarray:
        """Each seed's chosen candidate (its index): the best mean of ``dev`` over the queries."""
        return self.dev.mean(axis=2).argmax(axis=1)


def _cube(rows: pd.DataFrame, metrics: tuple[str, ...], candidates: list, seeds: list) -> np.ndarray:
    """(seed, candidate, query) values of the mean of ``metrics`` per row, on the queries every
    (seed, candidate) has a value for."""
    values = rows.assign(value=rows[list(metrics)].astype(float).mean(axis=1)).dropna(subset=["value"])
    table = values.pivot_table(index=["seed", curve.SETTING, "step"], columns="query", values="value", aggfunc="mean")
    table = table.reindex(pd.MultiIndex.from_tuples([(s, *c) for s in seeds for c in candidates])).dropna(axis=1)
    if table.shape[1] < 2:
        raise ValueError(f"fewer than 2 queries have {list(metrics)} at every budget of every seed")
    return table.to_numpy().reshape(len(seeds), len(candidates), -1)


def arrays(frame: pd.DataFrame, variant: str, metrics: tuple[str, ...], queries: dict | None = None) -> Arrays:
    """``Arrays`` of ``variant`` in a frame of one data setting; ``queries``: the test and validation
    queries to keep (``{"test": [...], "dev": [...]}``, the ones both sides of a claim share)."""
    rows = frame[frame["variant"] == variant]
    by_seed = rows.groupby("seed")[[curve.SETTING, "step"]].apply(lambda r: set(map(tuple, r.to_numpy())))
    if by_seed.empty:
        raise ValueError(f"no curve rows of the variant {variant!r}")
    candidates = sorted(set.intersection(*by_seed), key=lambda c: (c[1], c[0]))
    seeds = sorted(by_seed.index)
    if queries is not None:
        rows = rows[rows["query"].isin([*queries["test"], *queries[DEV]])]
    dev, test = rows[rows["split"].eq(DEV)], test_rows(rows)
    return Arrays(candidates, seeds, _cube(dev, CHOICE, candidates, seeds), _cube(test, metrics, candidates, seeds))


def _shared_queries(frame: pd.DataFrame, variants: tuple[str, str]) -> dict[str, list]:
    """The test and validation queries every row of both ``variants`` has, by split."""
    rows = frame[frame["variant"].isin(variants)]
    split = np.where(rows["split"].eq(DEV), DEV, "test")
    runs = rows.groupby([rows["variant"], rows["seed"], rows[curve.SETTING], rows["step"]]).ngroups
    counts = rows.groupby([split, rows["query"]]).size()
    return {s: sorted(counts[s][counts[s] == runs].index) if s in counts else [] for s in ("test", DEV)}


def _means(x: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(seed, candidate, resample) means of ``x`` (seed, candidate, query) under query resample ``counts``."""
    return x @ counts.T / counts.shape[1]


def _counts(rng: np.random.Generator, n: int, batch: int) -> np.ndarray:
    """(batch, n) how often each of ``n`` queries is drawn in each of ``batch`` bootstrap resamples."""
    return rng.multinomial(n, np.full(n, 1 / n), size=batch).astype(float)


def _chosen_mean(x: Arrays, dev: np.ndarray, test: np.ndarray, seeds: np.ndarray, rechoose: bool) -> np.ndarray:
    """Per resample, the mean over resampled seeds of the test mean at each seed's chosen candidate:
    ``dev``/``test`` (seed, candidate, resample) means, ``seeds`` (resample, seed) indices."""
    n = test.shape[2]
    choice = dev.argmax(axis=1) if rechoose else np.repeat(x.chosen()[:, None], n, axis=1)
    picked = np.take_along_axis(test, choice[:, None, :], axis=1)[:, 0, :]  # (seed, resample)
    return picked[seeds, np.arange(n)[:, None]].mean(axis=1)


def _difference(a: Arrays, b: Arrays, weight: float, dev: np.ndarray, test: np.ndarray, rng, rechoose: bool):
    """``a - weight * b`` of the sides' chosen means under the query draw counts ``dev`` and ``test``
    (resample, query), shared by both sides (paired); ``rng`` resamples the seeds too."""
    out = []
    for x in (a, b):
        seeds = rng.integers(0, len(x.seeds), (len(dev), len(x.seeds)))
        out.append(_chosen_mean(x, _means(x.dev, dev), _means(x.test, test), seeds, rechoose))
    return out[0] - weight * out[1]


def chosen_finding(
    frame: pd.DataFrame, claim: Claim, n_resamples: int = S.N_RESAMPLES, rechoose: bool = True
) -> Finding:
    """``claim`` decided at each side's budget chosen on the validation queries (module docstring), in a
    frame of one data setting: the estimate ``mean_q(a_q - weight * b_q)`` on the shared test queries,
    each side's ``a_q`` the mean over its seeds at each seed's chosen budget, with the 95% percentile
    interval of ``n_resamples`` resamples of seeds, validation and test queries (the choice re-made in each
    unless ``rechoose`` is False) and the p-value it implies; ``means``: the sides' chosen means."""
    queries = _shared_queries(frame, (claim.a, claim.b))
    a, b = (arrays(frame, v, claim.metrics, queries) for v in (claim.a, claim.b))
    point = lambda x: float(x.test.mean(axis=2)[np.arange(len(x.seeds)), x.chosen()].mean())
    est = point(a) - claim.weight * point(b)  # each seed at its best validation budget, as the data give it
    rng = np.random.default_rng(S.RNG_SEED)
    batches = [min(S.BATCH, n_resamples - k) for k in range(0, n_resamples, S.BATCH)]
    dist = np.concatenate([
        _difference(a, b, claim.weight, _counts(rng, a.dev.shape[2], n), _counts(rng, a.test.shape[2], n), rng,
                    rechoose) for n in batches
    ])  # fmt: skip
    reps = S.Replicates(est, dist, "percentile")
    lo, hi = reps.interval(S.LEVEL)
    p = S.interval_p_value(reps.interval, claim.threshold, excludes((lo, hi), claim.threshold), S.LEVEL)
    how = "the choice re-made in each resample" if rechoose else "the choice held fixed"
    numbers = (
        f"{len(queries['test'])} test queries, paired; budgets chosen on {len(queries[DEV])} validation queries; "
        f"{len(a.seeds)} / {len(b.seeds)} seeds; seeds and both query sets resampled, {how}"
    )
    found = decide(claim.claim, est, (lo, hi), claim.threshold, claim.side, numbers, S.LEVEL, p)
    return replace(found, means=(point(a), point(b)))


def choices(frame: pd.DataFrame, variants: tuple[str, ...] = (curve.FRACTIONAL, curve.NTP)) -> pd.DataFrame:
    """Each seed's chosen budget per variant and data setting: ``CHOICE_COLUMNS`` (``dev_mean``: its
    validation mean R@2..R@5, a fraction; ``largest``: it is the largest budget offered, so a larger
    one might be chosen), in the variants' order; chosen on the queries every run of
    the variants shares, as ``chosen_finding`` chooses (a partial run narrows both alike)."""
    rows = []
    for data, part in data_settings(frame).items():
        present = tuple(v for v in variants if v in set(part["variant"]))
        queries = _shared_queries(part, present)  # the queries chosen_finding chooses on
        for variant in present:
            x = arrays(part, variant, CHOICE, queries)
            means = x.dev.mean(axis=2)
            for i, (seed, best) in enumerate(zip(x.seeds, x.chosen())):
                setting, step = x.candidates[best]
                at = part[(part[curve.SETTING] == setting) & (part["step"] == step)].iloc[0]
                largest = step == max(s for _, s in x.candidates)
                rows.append(
                    [data, variant, seed, setting, step, at["items"], at["epochs"], float(means[i, best]), largest]
                )
    return pd.DataFrame(rows, columns=CHOICE_COLUMNS)


def data_settings(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The rows of runs with validation queries by data setting (``curve.data_setting``), first seen first."""
    if "split" not in frame or not frame["split"].eq(DEV).any():  # no validation rows
        return {}
    rows = frame[frame.groupby("point")["split"].transform(lambda s: s.eq(DEV).any())]
    return dict(tuple(rows.groupby(rows[curve.SETTING].map(curve.data_setting), sort=False)))


def chosen_findings(
    frame: pd.DataFrame, claims: tuple[Claim, ...] = curve.COMPARISONS, n_resamples: int = S.N_RESAMPLES
) -> list[tuple[str, Finding]]:
    """Each claim at the budgets chosen on validation, per data setting: (data setting, finding), Holm-
    adjusted over the claims of one data setting (one family); [] without validation rows."""
    out = []
    for data, part in data_settings(frame).items():
        found = [chosen_finding(part, c, n_resamples) for c in claims if {c.a, c.b} <= set(part["variant"])]
        out += [(data, f) for f in S.holm(found)]
    return out


def choices_table(picks: pd.DataFrame) -> pd.DataFrame:
    """``choices`` for display: the validation mean in percent, one decimal."""
    shown = picks.assign(dev_mean=(picks["dev_mean"] * 100).round(1))
    return shown.rename(columns={"dev_mean": "validation mean R@2..R@5 (%)"})


def findings_frame(found: list[tuple[str, Finding]]) -> pd.DataFrame:
    """``chosen_findings`` as a table: the data setting, then the finding's columns and both sides' means."""
    rows = [{"data_setting": data, **f.as_dict(), "a_mean": f.means[0], "b_mean": f.means[1]} for data, f in found]
    return pd.DataFrame(rows)


def choices_text(picks: pd.DataFrame) -> str:
    """``choices``' rows in words: ``NTP: step 139 cosine (2 of 3 seeds), step 69 cosine, lr 0.001 (1 of 3
    seeds); ...`` (``curve.choice_text``), ``; the largest budget offered`` where it is."""
    parts = []
    for variant, rows in picks.groupby("variant", sort=False):
        at = rows.groupby(["step", "setting"], sort=False)["largest"].agg(["size", "all"])
        edge = "; the largest budget offered"
        where = ", ".join(f"step {step} {curve.choice_text(st)}".rstrip() + f" ({n} of {len(rows)} seeds{edge * top})"
                          for (step, st), (n, top) in at.iterrows())  # fmt: skip
        parts.append(f"{variant}: {where}")
    return "; ".join(parts)
