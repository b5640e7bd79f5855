"""The paper's own numbers as data (arrank.results.paper): Tables 1-3 of arXiv 2601.05588, percent
as printed, and the row a training run is compared with."""

import os
import re
from pathlib import Path

import pytest

from arrank.results import paper


def _tex_rows(tex, label):
    start = tex.rfind("\\begin{tabular}", 0, tex.index(f"\\label{{{label}}}"))
    rows = []
    for line in tex[start : tex.index("\\end{tabular}", start)].splitlines():
        cells = [
            re.sub(r"\\textbf\{([^}]*)\}", r"\1", c).replace("\\%", "").strip()
            for c in line.strip().rstrip("\\").split("&")
        ]
        numbers = [float(c) for c in cells if re.fullmatch(r"\d+(\.\d+)?", c)]
        if numbers:
            rows.append(numbers)
    return rows


def test_the_papers_numbers_match_the_tex():
    """paper.PAPER holds Tables 1-3 as the paper's LaTeX source has them (arXiv 2601.05588, the
    source is on arXiv): set ARRANK_PAPER_TEX to the path of its main .tex file to check."""
    tex_path = Path(os.environ.get("ARRANK_PAPER_TEX", ""))
    if not os.environ.get("ARRANK_PAPER_TEX") or not tex_path.is_file():
        pytest.skip("ARRANK_PAPER_TEX does not name the paper's LaTeX source")
    tex = tex_path.read_text()
    for key, label in [
        ("table1", "tab:wordnet-results"),
        ("table2", "tab:esci-results"),
        ("table3", "tab:wordnet-combined-loss-from-checkpoint"),
    ]:
        assert _tex_rows(tex, label) == list(paper.PAPER[key]["rows"].values()), key


def test_each_row_has_one_percent_per_column_and_the_cvr_landmarks_are_table_1s():
    """Table 1: NTP's CVR 27.66%; the highest CVR of a ranking-aware row is Trie β=5's 13.04%."""
    for key, table in paper.PAPER.items():
        for label, values in table["rows"].items():
            assert len(values) == len(table["columns"]) and all(0 <= v <= 100 for v in values), (key, label)
    assert paper.NTP_CVR == 27.66 and paper.RANK_AWARE_CVR_MAX == 13.04


def test_a_run_is_given_its_tables_row_with_that_tables_columns():
    """A combined loss is Table 3's row (Appendix F); an ESCI run is Table 2's, whose columns are nDCG
    and R@1, 2, 5, 10, 25, 50 (no CVR)."""
    combined = {"scheme": "fractional", "targets": "trie", "alpha": 2.0, "beta": 2.0, "combined": True}
    caption, values = paper.paper_row(combined)
    assert paper.paper_row({"scheme": "fractional", "alpha": 9.0}) is None  # no such row in Table 1
    assert caption.startswith("Table 3") and values["cvr"] == 0.02 and values["recall@1"] == 92.36
    caption, values = paper.paper_row({"scheme": "indicator", "targets": "trie", "beta": 2.0, "dataset": "esci"})
    assert caption == "Table 2: ESCI, 310 held-out queries"
    assert values == {
        "ndcg": 97.21,
        "recall@1": 70.32,
        "recall@2": 58.06,
        "recall@5": 51.07,
        "recall@10": 48.08,
        "recall@25": 54.96,
        "recall@50": 69.03,
    }
