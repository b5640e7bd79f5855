"""The reproduction matrix (docs/reproduction.md): each claim of the paper (arXiv 2601.05588; section
5.2's Table 1 findings, section 5.3's Figure 3) that the workbook checks, against every committed
data set that decides it: the profile and machine the runs had, the commands that make them again,
the verdict of the 95% interval, the Holm-adjusted verdict within the claim's family, the estimate
with its interval and p-value, the runs' summed wall time and the code digest their results record.

The claims are those of Table 1 (``table1.CLAIMS``) and Figure 3 (``figure3.CLAIMS``), Table 1's also
checked on the budget curve (``curve.COMPARISONS``, by key); the committed data are ``SOURCES``; the verdicts are ``table1.table1_findings`` and
``curve.curve_findings`` on them, as notebook 08 computes them, and ``figure3.findings``, as notebook 07 does.

``python -m arrank.results.reproduction`` (``make reproduction``) writes the page from the committed
data, each file checked first against ``docs/data/manifest.json`` (its size, sha256 and rows); ``--check``
exits 1 when the committed page and the data disagree; ``--record`` records the data as they are now.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from dataclasses import dataclass
from typing import Iterable

import pandas as pd

from arrank.common import outputs, paths
from arrank.common.findings import Finding, holm_cell, p_text
from arrank.common.manifest import MANIFEST, manifest_problem, write_manifest
from arrank.results import chosen, curve, figure3, paper, table1
from arrank.results import statistics as S
from arrank.results.tables import markdown_lines

PAGE = "docs/reproduction.md"
DATA = "docs/data"  # the committed data, each file recorded in its manifest.json (``--record``)
RUN = ".venv/bin/python -m arrank.workbook.run"  # a notebook run, as the commands write it


# Each claim of the paper that the workbook checks, by key: its words (Table 1's finding, else Figure 3's)
# and its section; the budget curve checks Table 1's under its own words (``curve.COMPARISONS``, by key).
CLAIMS: dict[str, tuple[str, str]] = {
    **{key: (words, "§5.2, Table 1") for key, words in table1.CLAIMS.items()},
    "zero_shot": (table1.CLAIMS["zero_shot"], "the workbook's check: Table 1 has no zero-shot row"),
    **{key: (words, "§5.3, Figure 3") for key, words in figure3.CLAIMS.items()},
}


@dataclass(frozen=True)
class Source:
    """Committed data that decide some of ``CLAIMS``: a Table 1 sweep (``kind="table1"``: its points'
    CSV, ``points``, and their per-query rows), a budget curve (``kind="curve"``: per-query rows
    at each budget, the runs' results.json under ``results``, a glob) or Figure 3 (``kind="figure3"``:
    notebook 07's per-query rows of the configs its findings compare and the ARR runs' on their training
    queries, ``per_query``; the runs' results.json under ``results``). ``make`` makes one sweep
    of it again (``{sweep}``: the sweep's file); the sweeps are named by the runs in the data."""

    key: str
    title: str
    profile: str
    machine: str
    kind: str
    per_query: str
    make: str
    points: str | None = None
    results: str | None = None


SOURCES: tuple[Source, ...] = (
    Source("quick-cpu", "Table 1 on the tiny model (the quick workbook's sweep, `make workbook`; no zero-shot row)",
           "quick", "CPU", "table1", "docs/data/quick_table1_per_query.csv", "make sweep SWEEP={sweep}",
           points="docs/data/quick_table1_points.csv"),
    Source("pretrained-cpu", "Table 1 on SmolLM2-135M-Instruct + LoRA (the powered sweep, docs/pretrained.md)",
           "pretrained", "CPU", "table1", "docs/data/pretrained_table1_per_query.csv",
           "make sweep SWEEP={sweep} JOBS=2", points="docs/data/pretrained_table1_points.csv"),
    Source("pretrained-gpu-curve",
           "The budget curve, NTP against fractional α=2 on SmolLM2-135M-Instruct + LoRA (docs/pretrained.md)",
           "pretrained", "GPU", "curve", "docs/data/pretrained_gpu_curve_per_query.csv.gz",
           "make gpu-curve SWEEP={sweep}", results="docs/data/gpu/**/*.results.json"),
    Source("quick-cpu-protocol",
           "The paper's schedule on the tiny model: a constant rate against a cosine decay to each budget (and two "
           "other rates); each method at its budget, schedule and rate chosen on validation queries (`make protocol`)", "quick", "CPU", "curve",
           "docs/data/quick_protocol_per_query.csv.gz", "make sweep SWEEP={sweep} JOBS=2",
           results="docs/data/quick_protocol_runs/*.results.json"),
    Source("quick-cpu-figure3",
           "Figure 3 on the quick profile: notebook 07's DEs and CE beside the ARR runs of the workbook's sweep "
           "(`make workbook`)", "quick", "CPU", "figure3", "docs/data/quick_figure3_per_query.csv",
           "make sweep SWEEP={sweep}", results="docs/data/quick_figure3_runs/*.results.json"),
)  # fmt: skip


@dataclass(frozen=True)
class Runs:
    """The runs a row is read from: their names, and what their records say (summed wall time in
    seconds of the ``recorded`` ones, their distinct code digests; None where none is recorded)."""

    names: tuple[str, ...]
    recorded: int
    seconds: float
    digests: tuple[str, ...]

    def cells(self) -> list[str]:
        """The table cells: runs, run time, code digest."""
        n = len(self.names)
        runs = str(n) if self.recorded == n else f"{n} ({self.recorded} recorded)"
        seconds = f"{self.seconds:,.0f} s" if self.recorded else "not recorded"
        return [runs, seconds, ", ".join(self.digests) or "not recorded"]


@dataclass(frozen=True)
class Row:
    """One claim (its key in ``CLAIMS``) decided on one source at one budget."""

    key: str
    source: Source
    budget: str
    finding: Finding
    runs: Runs


# Each claim's key (``CLAIMS``) by its words: Table 1's, Figure 3's, and the budget curve's check of Table 1's.
KEYS = {c.claim: c.key for c in (*table1.COMPARISONS, *figure3.COMPARISONS, *curve.COMPARISONS)}


def commands(source: Source, runs: Iterable, notebook: str | None = None) -> list[str]:
    """The commands that make ``source``'s data again: each sweep the ``runs`` (their names) were made by, in
    first-seen order (a run's name starts with its sweep's, ``<sweep>-<grid values>``; the sweep file under
    sweeps/ or gpu/), with ``source.make``; then ``notebook``, by default notebook 08 on them (the first as
    its sweep, the rest as ``curve_sweeps``), which prints the findings."""
    sweeps = []
    for name in dict.fromkeys(str(run).split("-", 1)[0] for run in runs):
        path = next((p for p in (f"sweeps/{name}.yaml", f"gpu/{name}.yaml") if (paths.ROOT / p).is_file()), None)
        if path is None:
            raise ValueError(f"no sweep file sweeps/{name}.yaml or gpu/{name}.yaml for the runs {name}-*")
        sweeps.append(path)
    more = f" -p curve_sweeps {','.join(sweeps[1:])}" if len(sweeps) > 1 else ""
    return [*(source.make.format(sweep=s) for s in sweeps), notebook or f"{RUN} 08 -p sweep {sweeps[0]}{more}"]


def _results(pattern: str | None) -> dict[str, dict]:
    """Each committed results.json under ``pattern`` by its run's name."""
    found = [outputs.read_results(path) for path in sorted(paths.ROOT.glob(pattern))] if pattern else []
    return {data["params"]["run_name"]: data for data in found}


def _device(results: dict[str, dict]) -> str:
    """The accelerator the runs name (``precision_reason``: ``CUDA GPU NVIDIA H200 supports bf16``), or ''."""
    reasons = "\n".join(str(r.get("metrics", {}).get("precision_reason", "")) for r in results.values())
    return ", ".join(sorted(set(re.findall(r"CUDA GPU (.+?) supports", reasons))))


def _runs_of(results: dict[str, dict], names) -> Runs:
    """``Runs`` of the runs ``names``, from those of them whose results.json ``results`` holds."""
    names = tuple(sorted(names))
    known = [results[n] for n in names if n in results]
    seconds = sum(float(sum(r.get("timings", {}).values())) for r in known)
    digests = tuple(sorted({r["env"]["code_digest"] for r in known if r.get("env", {}).get("code_digest")}))
    return Runs(names, len(known), seconds, digests)


# What a source gives the page (``READERS``, by ``Source.kind``, from the source and its runs' results.json):
# the rows of its claims, all its runs, the ``commands`` that make them again, and what the page adds at its
# end (the budget curve read with another Holm family, ``_sensitivity``).
Read = tuple[list[Row], Runs, list[str], str]


def _table1_rows(source: Source, results: dict[str, dict]) -> Read:
    points = pd.read_csv(paths.ROOT / source.points)
    done = points[points["state"] == "done"]
    digests = tuple(sorted(done["code_digest"].dropna().unique())) if "code_digest" in done else ()
    runs = Runs(tuple(done["run_name"]), len(done), float(done["s_total"].sum()), digests)
    budget = ", ".join(f"{s} steps" for s in sorted({int(s) for s in done["steps"] if s > 0}))
    found = table1.table1_findings(points, per_query=pd.read_csv(paths.ROOT / source.per_query))
    return [Row(KEYS[f.claim], source, budget, f, runs) for f in found], runs, commands(source, done["run_name"]), ""


def _curve_rows(source: Source, results: dict[str, dict]) -> Read:
    rows_pq = pd.read_csv(paths.ROOT / source.per_query)
    found = curve.curve_findings(rows_pq)
    points = rows_pq.groupby([curve.SETTING, "step", "variant"], sort=False)["point"].unique()
    out = []
    for _, r in found.iterrows():
        at = [p for v in (r["a"], r["b"]) for p in points[(r[curve.SETTING], r["step"], v)]]
        epochs = f"{r['epochs']:.2g} epoch" + ("" if f"{r['epochs']:.2g}" == "1" else "s")
        budget = f"{r[curve.SETTING]}: step {int(r['step'])} ({epochs})"
        out.append(Row(KEYS[r["claim"]], source, budget, Finding.from_dict(r), _runs_of(results, at)))
    picks = chosen.choices(rows_pq)
    for data, f in chosen.chosen_findings(rows_pq):  # where runs have validation queries: each method's best budget
        mine = picks[picks["data_setting"] == data]
        budget = f"{data}: chosen on validation ({chosen.choices_text(mine)})"
        at = rows_pq.loc[rows_pq[curve.SETTING].map(curve.data_setting) == data, "point"].unique()
        out.append(Row(KEYS[f.claim], source, budget, f, _runs_of(results, at)))
    runs = _runs_of(results, pd.unique(rows_pq["point"]))
    return out, runs, commands(source, rows_pq["point"]), _sensitivity(found)


# notebook 07's config keys (baselines.figure3.config_key)
CONFIG = re.compile(r"(?P<model>de|ce)_n(?P<n>\d+)_alpha(?P<alpha>.+)")


def _figure3_rows(source: Source, results: dict[str, dict]) -> Read:
    """Figure 3's findings as notebook 07 decides them (``figure3.findings``, Holm within them:
    ``figure3.findings_rows``) with the params of its run's results.json, on its committed per-query rows
    (``point``, ``config``, ``query``, ``r1``..``r5``): the rows of its configs (``config``: a key,
    ``de_n8_alpha5``), their means as its results; the ARR runs' on their training queries (``config``:
    the run's label, ``point``: the run), of which the best (``figure3.best_arr_run``) is compared."""
    baselines = [r["params"] for r in results.values() if r.get("notebook") == "07_de_ce_baselines"]
    if len(baselines) != 1:
        raise ValueError(f"{source.results} holds {len(baselines)} results.json of notebook 07; Figure 3 needs one")
    p, per_query = baselines[0], pd.read_csv(paths.ROOT / source.per_query)
    recall = [c for c in per_query.columns if re.fullmatch(r"r\d+", c)]
    keys = per_query["config"].str.fullmatch(CONFIG.pattern)
    configs, arr_rows = per_query[keys].drop(columns="point"), per_query[~keys]
    means = configs.groupby("config", sort=False)[recall].mean()
    table = means.index.to_series().str.extract(CONFIG).astype({"n": int, "alpha": float})
    table = table.join(means.rename(columns=lambda c: f"recall@{c[1:]}"))
    arr = arr_rows.groupby(["point", "config"], sort=False)[recall].mean()
    arr.columns = [f"train_recall@{c[1:]}" for c in recall]
    arr = arr.reset_index().rename(columns={"point": "run", "config": "label"})
    best, _ = figure3.best_arr_run(arr, [int(c[1:]) for c in recall])
    best_rows = None if best is None else arr_rows[arr_rows["point"] == best["run"]].drop(columns=["point", "config"])
    decided: dict[str, Finding] = {}
    found = figure3.findings(
        table, p["de_dims"], p["ce_dim"], p["alpha"], p["de_alpha_dim"], p["alphas"], arr=arr,
        tol=p["on_par_tol"], per_query=configs, arr_per_query=best_rows, decided=decided,
    )  # fmt: skip
    arr_points = [point for point in pd.unique(per_query["point"]) if point != p["run_name"]]
    runs = _runs_of(results, [p["run_name"], *arr_points])
    budget = f"DE {p['de_steps']:,} steps, CE {p['ce_steps']:,}"
    if best is not None:  # the ARR run the findings compare: the best on its training queries
        label, run = best["label"], str(best["run"])
        budget += f"; {label}: {results[run]['params']['steps']:,} steps" if run in results else f"; {label}"
    rows = [Row(KEYS[f.claim], source, budget, f, runs) for f in figure3.findings_rows(found, decided)]
    notebook = f"{RUN} 07 -p run_name {p['run_name']} -p arr_runs '{p['arr_runs']}'"
    return rows, runs, commands(source, arr_points, notebook), ""


READERS = {"table1": _table1_rows, "curve": _curve_rows, "figure3": _figure3_rows}


def _points(f: Finding) -> str:
    """``+1.0 [+0.1, +2.0]``: the estimate and its interval in points."""
    if f.estimate is None or f.interval is None:
        return ""
    lo, hi = f.interval
    return f"{f.estimate * 100:+.1f} [{lo * 100:+.1f}, {hi * 100:+.1f}]"


def _claim_table(rows: list[Row]) -> list[str]:
    head = ["source", "budget", "checked as", "estimate, 95% CI (points)", "p", "verdict", "Holm"]
    head += ["runs", "run time (summed)", "code digest"]
    cells, before = [], None
    for row in rows:
        f = row.finding
        checked = "" if f.claim == CLAIMS[row.key][0] else f.claim
        estimate = _points(f) or (f"{len(f.parts)} parts, below" if f.parts else "")
        source, budget = row.source.key, row.budget
        if before is not None and before.source.key == source:  # what the row above says is not said again
            source, checked = "", "〃" if checked and before.finding.claim == f.claim else checked
            (setting, sep, rest), above = budget.partition(": "), before.budget.partition(": ")[0]
            if sep and curve.data_setting(setting) == curve.data_setting(above):  # nor a setting, or its data
                budget = rest if setting == above else f"{curve.choice_text(setting)}: {rest}".removeprefix(": ")
        cells.append([source, budget, checked, estimate, p_text(f.p_value), f.verdict, holm_cell(f),
                      *row.runs.cells()])  # fmt: skip
        before = row
        cells += [
            ["", "", f"↳ {name}", _points(p), p_text(p.p_value), p.verdict, "", "", "", ""] for name, p in f.parts
        ]
    return markdown_lines(head, cells)


class DamagedDataError(ValueError):
    """A committed data file that does not match ``DATA``'s manifest: named, and nothing is written."""


def check_data() -> None:
    """Refuse (``DamagedDataError``, one line) when a file under ``DATA`` is not the one its manifest
    records (size, sha256, rows), is missing, or is not listed there."""
    if problem := manifest_problem(paths.ROOT / DATA, whole=True):
        raise DamagedDataError(
            f"{DATA}: {problem}; nothing was written: restore it (git checkout -- {DATA}), or, for data "
            f"changed on purpose, record them with `python -m arrank.results.reproduction --record`"
        )


def record_data() -> dict[str, dict]:
    """Record every file under ``DATA`` as it is now (size, sha256, rows) in its manifest: after changing
    the committed data on purpose. A gzip file cut short is refused (``DamagedDataError``)."""
    try:
        return write_manifest(paths.ROOT / DATA, rows=True)
    except ValueError as err:
        raise DamagedDataError(f"{err}; nothing was recorded") from None


def page() -> str:
    """The reproduction matrix as Markdown, from the committed data (``SOURCES``), checked first
    (``check_data``) where a source reads them."""
    if any(str(f).startswith(DATA) for s in SOURCES for f in (s.per_query, s.points, s.results) if f):
        check_data()
    rows: list[Row] = []
    sensitivity: list[str] = []  # one text per budget-curve source
    out = [
        "# Reproduction matrix",
        "",
        "*Generated by `python -m arrank.results.reproduction` (`make reproduction`) from the data committed under "
        "`docs/data/`; do not edit by hand. `tests/results/test_reproduction.py` regenerates it and fails when this "
        "page and the data disagree.*",
        "",
        f"The paper: {paper.TEXT_FOLLOWED} (SHA-256 of its main LaTeX file {paper.TEX_SHA256[:16]}…). Each claim "
        "of it that the workbook checks on committed data, per data set: the budget, the estimate with its 95% "
        "interval (points; a paired bootstrap over the held-out queries with "
        f"{S.N_RESAMPLES:,} resamples, widened by the spread of the seeds where a variant has several), the "
        "p-value that interval implies (below 0.05 exactly when the verdict is decided), the verdict (holds, "
        "fails, undecided), the verdict Holm-adjusted within its family, the runs it is read from with their "
        "summed wall time (runs side by side took less) and the code "
        "digest their `results.json` record (a SHA-256 over `lib/` and `notebooks/`). A compound claim's parts "
        "follow it (↳); a blank source, and 〃, repeat the row above; a blank 'checked as' is the claim's words. What the verdicts and the families mean: `docs/findings.md`.",
        "",
        "## The data and how to make them again",
        "",
    ]
    for source in SOURCES:
        results = _results(source.results)
        found, runs, make, after = READERS[source.kind](source, results)
        rows += found
        if after:
            sensitivity.append(f"**{source.key}**: {after}")
        n_found = sum(r.finding.family_size is not None for r in found)
        family = {"table1": f"the {n_found} findings of the sweep", "figure3": f"the {n_found} findings of Figure 3"}
        device = _device(results)
        machine = f"{source.machine} ({device})" if device else source.machine
        data = ", ".join(f"`{p}`" for p in (source.points, source.per_query) if p)
        if source.results:
            data += f", the runs' `results.json` under `{source.results.split('*')[0].rstrip('/')}/`"
        n, seconds, digests = runs.cells()
        head = (
            f"**{source.key}**: {source.title}. Profile `{source.profile}` on a {machine}; data: {data}; {n} runs, "
            f"{seconds} of run time (summed); code digest: {digests}. Holm family: "
            f"{family.get(source.kind, 'the claims of one budget and setting (3)')}."
        )
        out += [head, "", "```bash", *make, "```", ""]
    out += ["## The claims", ""]
    for key, (words, section) in CLAIMS.items():
        mine = [r for r in rows if r.key == key]
        out += [f"### {words} ({section})", "", *(_claim_table(mine) if mine else ["No committed data decide it."]), ""]
    if sensitivity:
        lead = (
            "Read along the curve (where does a claim hold?), the family is one claim's budgets within a setting "
            '(`curve.holm_families(findings, ("claim", "setting"))`). With that family, per source:'
        )
        out += ["## The budget curve with another family", "", lead, "", "\n\n".join(sensitivity), ""]
    return "\n".join(out)


def _sensitivity(found: pd.DataFrame) -> str:
    """What changes on the budget curve when one claim's budgets in a setting are the family instead of
    the claims of one budget (``curve.holm_families``): the reading that looks for the budget at which
    a claim holds."""
    across = curve.holm_families(found, ("claim", curve.SETTING))
    changed = across[across["holm_verdict"] != across["verdict"]]
    if changed.empty:
        return "no verdict changes."
    items = [
        f"{r['claim']} ({r[curve.SETTING]}, step {int(r['step'])}): {r['verdict']} → **{r['holm_verdict']}** "
        f"(p {p_text(r['p_value'])}, Holm over {int(r['family_size'])} budgets {p_text(r['p_holm'])})"
        for _, r in changed.iterrows()
    ]
    return "these verdicts change:\n\n" + "\n".join(f"- {i}" for i in items)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point: write the page, or with ``--check`` compare it with the committed one."""
    parser = argparse.ArgumentParser(prog="python -m arrank.results.reproduction", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed page differs from the data")
    parser.add_argument("--output", default=PAGE, help=f"where to write the page (default: {PAGE})")
    parser.add_argument("--record", action="store_true", help=f"record {DATA} as it is now in its {MANIFEST} first")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    path = paths.ROOT / args.output  # an absolute output stays as it is
    if not args.output or path.is_dir() or not path.parent.is_dir():
        parser.error(f"--output {args.output!r} must name a file in an existing folder")
    try:
        if args.record:
            print(f"recorded {len(record_data())} files in {DATA}/{MANIFEST}")
        text = page()
    except (DamagedDataError, outputs.DamagedResultsError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.check:
        old = path.read_text() if path.exists() else ""
        if old == text:
            print(f"{args.output} agrees with the committed data")
            return 0
        diff = difflib.unified_diff(old.splitlines(), text.splitlines(), args.output, "regenerated", lineterm="")
        print("\n".join(list(diff)[:60]), file=sys.stderr)
        print(f"{args.output} differs from the committed data: run `make reproduction`", file=sys.stderr)
        return 1
    outputs.write_text_atomic(path, text)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
