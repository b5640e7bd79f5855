"""The reproduction matrix (arrank.results.reproduction): the committed page agrees with the committed
data, its claims are the workbook's checks, and it follows the data it is made from."""

import gzip
import hashlib
import json
import os
import re
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from arrank.common import paths
from arrank.common.manifest import manifest_problem
from arrank.results import curve, figure3, paper, table1
from arrank.results import reproduction as R


def test_the_committed_page_agrees_with_the_committed_data():
    committed = (paths.ROOT / R.PAGE).read_text()
    assert R.page() == committed, f"{R.PAGE} is stale: run `make reproduction` and commit it"


def test_a_budget_cell_says_only_what_the_row_above_does_not():
    """A row of the same source names its setting's schedule and rate alone where its data setting is the
    row above's, and nothing where its setting is; the chosen row its choices alone."""
    page = (paths.ROOT / R.PAGE).read_text()
    for cell in (
        "| quick-cpu-protocol | 64 items a step, 300 held-out queries, constant rate: step 150 (0.49 epochs) |",
        "|  | step 300 (0.98 epochs) |",
        "|  | cosine: step 150 (0.49 epochs) |",
        "|  | cosine, lr 0.0005: step 300 (0.98 epochs) |",
        "|  | chosen on validation (Fractional α=2: step ",
    ):
        assert cell in page, cell
    assert "|  | 64 items a step, 300 held-out queries" not in page


def test_an_output_that_is_no_file_in_a_folder_is_refused_and_the_page_is_written_whole(tmp_path, capsys):
    for bad in ("", str(tmp_path), str(tmp_path / "nowhere" / "x.md")):
        with pytest.raises(SystemExit) as exit:
            R.main(["--output", bad])
        assert exit.value.code == 2 and "must name a file in an existing folder" in capsys.readouterr().err
    assert R.main(["--output", str(tmp_path / "page.md")]) == 0
    assert (tmp_path / "page.md").read_text() == (paths.ROOT / R.PAGE).read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["page.md"]  # no temporary file left


def test_the_claims_are_the_workbooks_checks_each_once():
    assert list(R.CLAIMS) == [*table1.CLAIMS, *figure3.CLAIMS] and len(R.CLAIMS) == 10
    assert {c.key for c in curve.COMPARISONS} <= set(table1.CLAIMS)  # the curve checks Table 1's claims
    # the curve's check of a Table 1 claim compares the same quantity (the central claim: the same words)
    assert curve.CENTRAL.claim == R.CLAIMS["central"][0] == table1.CLAIMS["central"]


PRETRAINED_MAKE = next(s.make for s in R.SOURCES if s.key == "pretrained-cpu")  # the powered sweep's command


def _table1_data(tmp_path: Path, frac_cvr: float) -> R.Source:
    """A Table 1 sweep of three points (NTP, fractional α=2, trie β=2) on 200 queries, written as
    docs/data's points and per-query CSVs; fractional's CVR rate is ``frac_cvr``."""
    rng = np.random.default_rng(0)
    n = 200
    rows, points = [], []
    spec = [
        ("indicator", None, "onehot", "NTP (steps=120)", 0.6, 0.9),
        ("fractional", 2.0, "onehot", "Fractional α=2 (steps=120)", frac_cvr, 0.6),
        ("indicator", None, "trie", "Trie β=2 (steps=120)", 0.05, 0.8),
    ]
    for scheme, alpha, targets, label, cvr, r1 in spec:
        name = f"table1_wordnet_pretrained-{scheme}-{targets}"
        points.append(
            {"run_name": name, "state": "done", "label": label, "scheme": scheme, "steps": 120, "alpha": alpha,
             "targets": targets, "combined": False, "cvr": cvr, "ndcg": 0.9, "recall@1": r1,
             **{f"recall@{k}": 0.7 for k in range(2, 6)}, "s_total": 100.0}
        )  # fmt: skip
        rows.append(
            pd.DataFrame(
                {"point": name, "variant": label, "seed": 0, "query": [f"q{i}" for i in range(n)],
                 "cvr": (rng.random(n) < cvr).astype(float), "ndcg": 0.9, "r1": (rng.random(n) < r1).astype(float),
                 **{f"r{k}": (rng.random(n) < 0.7).astype(float) for k in range(2, 6)}}
            )
        )  # fmt: skip
    pd.DataFrame(points).to_csv(tmp_path / "points.csv", index=False)
    pd.concat(rows).to_csv(tmp_path / "per_query.csv", index=False)
    return R.Source(
        "tiny", "a tiny sweep", "pretrained", "CPU", "table1", str(tmp_path / "per_query.csv"),
        PRETRAINED_MAKE, points=str(tmp_path / "points.csv"),
    )  # fmt: skip


def test_the_page_follows_its_data(tmp_path, monkeypatch):
    (tmp_path / "low").mkdir(), (tmp_path / "high").mkdir()
    monkeypatch.setattr(R, "SOURCES", (_table1_data(tmp_path / "low", 0.02),))
    low = R.page()
    cvr_row = next(line for line in low.splitlines() if line.startswith("| tiny | 120 steps |  | 3 parts, below"))
    assert "| holds | holds (p " in cvr_row and "| 3 | 300 s | not recorded |" in cvr_row  # NTP's CVR is the highest
    assert "make sweep SWEEP=sweeps/table1_wordnet_pretrained.yaml JOBS=2" in low
    assert "No committed data decide it" in low and "The budget curve with another family" not in low
    monkeypatch.setattr(R, "SOURCES", (_table1_data(tmp_path / "high", 0.9),))  # fractional's CVR above NTP's
    high = R.page()
    assert high != low
    assert "| tiny | 120 steps |  | 3 parts, below | " in high and "| fails | fails (p " in high
    out = tmp_path / "page.md"
    assert R.main(["--output", str(out)]) == 0 and out.read_text() == high
    assert R.main(["--check", "--output", str(out)]) == 0
    monkeypatch.setattr(R, "SOURCES", (_table1_data(tmp_path / "low", 0.02),))
    assert R.main(["--check", "--output", str(out)]) == 1  # the page no longer agrees with the data


def test_the_text_the_workbook_follows_is_named_once():
    readme = " ".join((paths.ROOT / "README.md").read_text().split())
    assert paper.TEXT_FOLLOWED in readme
    assert paper.TEXT_FOLLOWED in (paths.ROOT / R.PAGE).read_text()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", paper.TEXT_DATE) and re.fullmatch(r"[0-9a-f]{64}", paper.TEX_SHA256)


def test_the_text_followed_is_the_papers_source():
    """With ARRANK_PAPER_TEX naming the paper's main .tex file: it is the text the workbook follows
    (its SHA-256), and it names no arXiv version and no date, as paper.TEXT_FOLLOWED says."""
    tex_path = Path(os.environ.get("ARRANK_PAPER_TEX", ""))
    if not os.environ.get("ARRANK_PAPER_TEX") or not tex_path.is_file():
        pytest.skip("ARRANK_PAPER_TEX does not name the paper's LaTeX source")
    data = tex_path.read_bytes()
    assert hashlib.sha256(data).hexdigest() == paper.TEX_SHA256
    text = data.decode()
    assert "\\date{}" in text and not re.search(rf"{re.escape(paper.ARXIV_ID)}v\d", text)


FIGURE3 = next(s for s in R.SOURCES if s.kind == "figure3")


def _figure3_lines(page: str) -> list[str]:
    return [line for line in page.splitlines() if line.startswith(f"| {FIGURE3.key} |")]


def test_the_figure3_row_is_what_the_committed_rows_and_notebook_07_say():
    per_query = pd.read_csv(paths.ROOT / FIGURE3.per_query)
    page = (paths.ROOT / R.PAGE).read_text()
    lines = _figure3_lines(page)
    assert len(lines) == len(figure3.CLAIMS)  # one row per claim of Figure 3
    # the CE above the strongest DE: the paired mean difference of mean R@1..R@5 over the 300 queries
    baselines = per_query[per_query["config"].isin(["ce_n32_alpha5", "de_n32_alpha5"])]
    wide = baselines.pivot(index="query", columns="config", values=[f"r{k}" for k in range(1, 6)])
    diff = (wide.xs("ce_n32_alpha5", axis=1, level=1) - wide.xs("de_n32_alpha5", axis=1, level=1)).mean(axis=1)
    assert len(diff) == 300 and f"| {diff.mean() * 100:+.1f} [" in lines[1]
    # the ARR run compared is the best on its training queries (mean R@1..R@5), named in the budget
    arr = per_query[~per_query["config"].str.fullmatch(R.CONFIG.pattern)]
    best = arr.groupby("config")[[f"r{k}" for k in range(1, 6)]].mean().mean(axis=1).idxmax()
    assert all(f"; {best}: " in line for line in lines)
    # each verdict is the one notebook 07 recorded in its run's results.json
    run = next(r for r in R._results(FIGURE3.results).values() if r["notebook"] == "07_de_ce_baselines")
    recorded = [run["metrics"][f"finding_{key}_verdict"] for key in figure3.CLAIMS]
    assert [line.split(" | ")[5] for line in lines] == recorded
    assert ".venv/bin/python -m arrank.workbook.run 07 -p run_name workbook" in page


def test_the_figure3_row_follows_its_data(tmp_path, monkeypatch):
    per_query = pd.read_csv(paths.ROOT / FIGURE3.per_query)
    monkeypatch.setattr(R, "SOURCES", (FIGURE3,))
    out = tmp_path / "page.md"
    assert R.main(["--output", str(out)]) == 0 and R.main(["--check", "--output", str(out)]) == 0
    before = _figure3_lines(out.read_text())
    assert before[1].split(" | ")[5] == "fails"  # the CE below the strongest DE
    ce = per_query["config"] == "ce_n32_alpha5"
    per_query.loc[ce, [f"r{k}" for k in range(1, 6)]] = 1.0  # a perfect CE: above the DE
    per_query.to_csv(tmp_path / "per_query.csv", index=False)
    monkeypatch.setattr(R, "SOURCES", (replace(FIGURE3, per_query=str(tmp_path / "per_query.csv")),))
    after = _figure3_lines(R.page())
    cells = lambda line: line.split(" | ")[:6]  # up to the verdict (Holm's p moves with the family's)
    assert cells(after[1])[5] == "holds" and cells(after[0]) == cells(before[0]) and cells(after[3]) == cells(before[3])
    assert R.main(["--check", "--output", str(out)]) == 1  # the page no longer agrees with the data


def test_every_committed_data_file_is_recorded_in_the_manifest_and_matches_it():
    assert manifest_problem(paths.ROOT / R.DATA, whole=True) is None
    listed = json.loads((paths.ROOT / R.DATA / "manifest.json").read_text())["files"]
    for source in R.SOURCES:
        for name in (source.per_query, source.points):
            assert name is None or name.removeprefix(R.DATA + "/") in listed
    curve_rows = listed["pretrained_gpu_curve_per_query.csv.gz"]["rows"]
    assert curve_rows == len(pd.read_csv(paths.ROOT / R.DATA / "pretrained_gpu_curve_per_query.csv.gz"))


@pytest.fixture
def data_copy(tmp_path, monkeypatch):
    """docs/data copied to ``tmp_path/data``, which the page reads instead (``R.DATA``, ``R.SOURCES``)."""
    data = tmp_path / "data"
    shutil.copytree(paths.ROOT / R.DATA, data)
    moved = [
        replace(s, **{k: getattr(s, k).replace(R.DATA, str(data)) for k in ("per_query", "points", "results")
                      if getattr(s, k)})
        for s in R.SOURCES
    ]  # fmt: skip
    monkeypatch.setattr(R, "DATA", str(data))
    monkeypatch.setattr(R, "SOURCES", tuple(moved))
    return data


def _refused(out: Path, capsys) -> str:
    assert R.main(["--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nothing was written" in err and not out.exists()
    return err


def test_a_committed_data_file_cut_short_is_refused_by_name_before_anything_is_written(data_copy, tmp_path, capsys):
    curve = data_copy / "pretrained_gpu_curve_per_query.csv.gz"
    whole = curve.read_bytes()
    lines = gzip.decompress(whole).splitlines(keepends=True)
    curve.write_bytes(gzip.compress(b"".join(lines[: len(lines) // 2])))  # valid, half the rows
    err = _refused(tmp_path / "page.md", capsys)
    assert "pretrained_gpu_curve_per_query.csv.gz holds 70,749 rows where the manifest records 141,500" in err
    curve.write_bytes(whole[: len(whole) // 2])  # cut mid-stream: one line, not a traceback
    err = _refused(tmp_path / "page.md", capsys)
    assert "pretrained_gpu_curve_per_query.csv.gz is not a whole gzip file (Compressed file ended" in err
    assert R.main(["--record", "--output", str(tmp_path / "page.md")]) == 2  # nor recorded as it is
    assert "nothing was recorded" in capsys.readouterr().err
    curve.write_bytes(whole)
    (data_copy / "new.csv").write_text("a\n1\n")  # a file the manifest does not list
    assert "new.csv is not in its manifest.json (1 files are not)" in _refused(tmp_path / "page.md", capsys)
    assert R.record_data()["new.csv"]["rows"] == 1  # data changed on purpose: recorded, then read
    R.check_data()


def test_the_figure3_row_decides_on_par_with_the_tolerance_notebook_07_ran_with():
    """Section 5.3's "on par" within notebook 07's ``on_par_tol``: ARR − CE is +2.1 [+0.4, +3.9] points on
    the committed rows, undecided within ±2 points (the upper bound above +2), inside ±5 points: holds."""
    results = R._results(FIGURE3.results)
    run = next(r for r in results.values() if r["notebook"] == "07_de_ce_baselines")
    verdict = lambda: next(r for r in R._figure3_rows(FIGURE3, results)[0] if r.key == figure3.ON_PAR).finding.verdict
    assert run["params"]["on_par_tol"] == 0.02 and verdict() == "undecided"
    run["params"]["on_par_tol"] = 0.05
    assert verdict() == "holds"


def test_a_table1_row_reads_the_finished_points_only(tmp_path):
    """The runs a Table 1 row is read from are the sweep's finished points: a failed point's run is
    neither counted nor timed (3 runs of 100 s each: 300 s)."""
    source = _table1_data(tmp_path, 0.02)
    points = pd.read_csv(source.points)
    failed = points.iloc[:1].assign(run_name="table1_wordnet_pretrained-stepwise-onehot", state="failed", s_total=50.0)
    pd.concat([points, failed]).to_csv(source.points, index=False)
    rows, runs, make, _ = R._table1_rows(source, {})
    assert runs.names == tuple(points["run_name"]) and runs.cells() == ["3", "300 s", "not recorded"]
    assert all(row.runs == runs for row in rows) and rows[0].budget == "120 steps"


def test_the_holm_family_of_figure3_is_its_checks_with_a_p_value(tmp_path, monkeypatch):
    """Without the ARR runs' rows the two ARR claims of section 5.3 cannot be checked: Figure 3's family is
    the other 3 findings (the DE's growth with n, the CE above the DE, α at small k)."""
    per_query = pd.read_csv(paths.ROOT / FIGURE3.per_query)
    per_query[per_query["config"].str.fullmatch(R.CONFIG.pattern)].to_csv(tmp_path / "pq.csv", index=False)
    monkeypatch.setattr(R, "SOURCES", (replace(FIGURE3, per_query=str(tmp_path / "pq.csv")),))
    page = R.page()
    assert "Holm family: the 3 findings of Figure 3." in page
    assert [line.split(" | ")[5] for line in _figure3_lines(page)].count("unchecked") == 2


def test_a_chosen_row_reads_the_runs_of_its_data_setting_only(tmp_path):
    """Each method's budget chosen on validation queries (``results.chosen``) is chosen within one data
    setting (items a step, held-out queries): its row's runs and choices (one a seed, 2 seeds here) are
    that setting's, not another's."""
    protocol = next(s for s in R.SOURCES if s.key == "quick-cpu-protocol")
    rows = pd.read_csv(paths.ROOT / protocol.per_query)
    rows = rows[rows["setting"].str.endswith("constant rate") & (rows["seed"] < 2) & (rows["step"] < 600)]
    rows = rows[rows.groupby(["point", "step", "split"]).cumcount() < 40]  # 40 queries of each split: fast
    other = rows.assign(setting=rows["setting"].str.replace("64 items", "32 items"), point=rows["point"] + "-b")
    pd.concat([rows, other]).to_csv(tmp_path / "pq.csv", index=False)
    found = R._curve_rows(replace(protocol, per_query=str(tmp_path / "pq.csv")), {})[0]
    picked = {r.budget.split(":")[0]: r.runs.names for r in found if "chosen on validation" in r.budget}
    assert set(picked) == {"64 items a step, 300 held-out queries", "32 items a step, 300 held-out queries"}
    assert picked["64 items a step, 300 held-out queries"] == tuple(sorted(rows["point"].unique()))
    assert picked["32 items a step, 300 held-out queries"] == tuple(sorted(other["point"].unique()))
    chosen_budgets = [r.budget for r in found if "chosen on validation" in r.budget]
    assert all("of 2 seeds" in b and "of 4 seeds" not in b for b in chosen_budgets)  # 2 seeds a setting


def test_the_budget_curve_with_another_family_names_the_source_of_each_reading():
    """Each curve source's reading is under its key (two unnamed readings, one 'these verdicts change' and one
    'no verdict changes', read as a contradiction); the family is described once."""
    section = (paths.ROOT / R.PAGE).read_text().split("## The budget curve with another family")[1]
    assert section.count('("claim", "setting")') == 1
    for source in R.SOURCES:
        assert (f"**{source.key}**:" in section) == (source.kind == "curve"), source.key
