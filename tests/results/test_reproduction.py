"""The reproduction matrix (arrank.results.reproduction): the committed page agrees with the committed
data, its claims are the workbook's checks, and it follows the data it is made from."""

import hashlib
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from arrank.common import paths
from arrank.results import curve, figure3, paper, table1
from arrank.results import reproduction as R


def test_the_committed_page_agrees_with_the_committed_data():
    committed = (paths.ROOT / R.PAGE).read_text()
    assert R.page() == committed, f"{R.PAGE} is stale: run `make reproduction` and commit it"


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
