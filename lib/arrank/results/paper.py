"""The paper's own numbers (arXiv 2601.05588, percent as printed): Tables 1-3, and the row of a
training run's loss variant; and which text of the paper the workbook follows (``TEXT_FOLLOWED``)."""

from __future__ import annotations

from typing import Any

from arrank.training.schemes import loss_label

ARXIV_ID = "2601.05588"
# The text the workbook follows. Neither the paper's LaTeX source nor its metadata names an arXiv
# version (its \date is empty), so the workbook names the identifier and the date of the text it
# checks against, with the SHA-256 of the source's main .tex file to tell that text from another.
TEXT_DATE = "2026-11-26"
TEX_SHA256 = "ea21466c5ad1af802b6674c244a899dd741b74c209ee588f21e7474e2138a464"
TEXT_FOLLOWED = (
    f"arXiv {ARXIV_ID}; its LaTeX source names no version, so the text followed is the one as of {TEXT_DATE}"
)

_T1 = ["cvr", "ndcg", "recall@1", "recall@2", "recall@3", "recall@4", "recall@5"]
_T2 = ["ndcg", "recall@1", "recall@2", "recall@5", "recall@10", "recall@25", "recall@50"]

# The paper's numbers (percent), in the order of its rows: Table 1 (tab:wordnet-results), Table 2
# (tab:esci-results), Table 3 (tab:wordnet-combined-loss-from-checkpoint, Appendix F).
# tests/results/test_paper.py checks them against the .tex when it is at hand.
PAPER: dict[str, dict[str, Any]] = {
    "table1": {
        "caption": "Table 1: WordNet, 5000 held-out queries",
        "columns": _T1,
        "rows": {
            "NTP": [27.66, 94.89, 99.96, 62.43, 55.3, 55.16, 63.42],
            "Fractional α=1": [0.0, 99.6, 91.1, 87.68, 88.81, 92.13, 93.94],
            "Fractional α=2": [0.0, 99.83, 97.74, 95.69, 95.48, 96.89, 96.58],
            "Fractional α=3": [0.0, 99.81, 99.22, 97.35, 96.16, 96.07, 95.53],
            "Fractional α=4": [0.02, 99.78, 99.36, 97.46, 95.63, 96.03, 95.31],
            "Fractional α=5": [0.04, 99.67, 99.6, 97.14, 94.55, 95.71, 93.52],
            "Stepwise": [0.0, 99.6, 51.62, 69.88, 82.09, 89.6, 93.34],
            "Trie β=1": [1.48, 96.54, 98.1, 72.93, 63.06, 59.64, 64.25],
            "Trie β=2": [1.38, 96.54, 99.3, 67.31, 57.51, 56.98, 62.45],
            "Trie β=3": [2.04, 96.34, 99.44, 67.58, 59.95, 58.58, 63.17],
            "Trie β=4": [4.54, 96.36, 99.58, 68.53, 62.25, 62.12, 67.41],
            "Trie β=5": [13.04, 96.47, 99.78, 70.84, 65.12, 64.81, 70.43],
        },
    },
    "table2": {
        "caption": "Table 2: ESCI, 310 held-out queries",
        "columns": _T2,
        "rows": {
            "NTP": [95.23, 95.16, 52.58, 27.64, 23.51, 37.98, 62.99],
            "Trie β=1": [97.21, 70.0, 56.61, 45.57, 46.27, 54.78, 69.58],
            "Trie β=2": [97.21, 70.32, 58.06, 51.07, 48.08, 54.96, 69.03],
            "Trie β=3": [97.11, 68.71, 56.13, 48.03, 45.78, 52.31, 67.63],
            "Trie β=4": [96.96, 69.03, 54.84, 44.6, 43.9, 50.29, 67.7],
            "Trie β=5": [96.89, 66.77, 56.13, 44.21, 42.4, 50.72, 67.61],
        },
    },
    "table3": {
        "caption": "Table 3: WordNet, combined loss, 5000 held-out queries",
        "columns": _T1,
        "rows": {
            "Combined α=2, β=1": [0.0, 99.12, 73.38, 83.37, 86.83, 90.08, 91.51],
            "Combined α=2, β=2": [0.02, 99.74, 92.36, 94.45, 94.73, 95.39, 96.11],
            "Combined α=2, β=3": [0.0, 99.71, 94.28, 94.1, 94.49, 95.46, 96.06],
            "Combined α=2, β=4": [0.0, 99.7, 94.9, 94.3, 94.28, 95.53, 95.67],
            "Combined α=2, β=5": [0.0, 99.74, 95.92, 94.54, 95.17, 95.38, 95.7],
            "Combined α=2, β=6": [0.0, 99.77, 97.68, 96.29, 95.67, 95.7, 95.69],
            "Combined α=2, β=7": [0.0, 99.83, 97.82, 95.74, 94.83, 95.79, 95.93],
            "Combined α=2, β=9": [0.0, 99.76, 98.32, 95.72, 94.86, 94.85, 95.19],
            "Combined α=2, β=25": [0.0, 99.71, 97.38, 94.42, 94.64, 94.82, 95.05],
        },
    },
}
LOWER_IS_BETTER = {"cvr"}
RANK_AWARE_CVR_MAX = max(row[0] for label, row in PAPER["table1"]["rows"].items() if label != "NTP")  # 13.04
NTP_CVR = PAPER["table1"]["rows"]["NTP"][0]  # 27.66


def paper_row(params: dict[str, Any]) -> tuple[str, dict[str, float]] | None:
    """(the table's caption, metric -> percent) of the paper's row for a 05_train run's variant
    (Table 1 for WordNet, Table 3 for a combined loss, Table 2 for ESCI), or None."""
    key = "table2" if params.get("dataset") == "esci" else "table3" if params.get("combined") else "table1"
    table, label = PAPER[key], loss_label(params)
    return (table["caption"], dict(zip(table["columns"], table["rows"][label]))) if label in table["rows"] else None
