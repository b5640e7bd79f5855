"""A run's numbers against the paper's findings, in words (the "what to look for" cells)."""

import pandas as pd

from arrank.common.findings import finding, findings_markdown, note
from arrank.results import paper, reading, table1

NTP = {"scheme": "indicator", "targets": "onehot", "alpha": 2.0, "beta": 2.0, "combined": False, "dataset": "wordnet"}
FLOOR = {"cvr": 0.88, "ndcg": 0.86, **{f"recall@{k}": 0.1 * k for k in range(1, 6)}}


def _metrics(cvr, **extra):
    return {"n_queries": 300, "cvr": cvr, "ndcg": 0.95, **{f"recall@{k}": 0.8 for k in range(1, 6)}, **extra}


def test_a_05_run_is_read_against_its_variants_row_and_section_5_2():
    rows = reading.run_findings(
        NTP,
        _metrics(0.92, train_n_queries=300, train_cvr=0.9, **{f"train_recall@{k}": 0.9 for k in range(1, 6)}),
        FLOOR,
    )
    text = findings_markdown(rows)
    assert text.splitlines()[0] == (
        "- This run, NTP, in percent on 300 held-out queries: CVR 92.0, nDCG 95.0, R@1..5 80.0 80.0 80.0 80.0 80.0."
    )
    assert (
        "The paper's row (Table 1: WordNet, 5000 held-out queries, Mistral-7B): CVR 27.66, nDCG 94.89, R@1 99.96"
        in text
    )
    assert "above random scores on the same queries (nDCG and the summed R@1..R@5): holds here" in text
    assert "NTP (top-1 items only) leaves a high CVR, above every ranking-aware row (at most 13.04%" in text
    assert "On 300 of its training queries" in text and "R@1..5 90.0 90.0 90.0 90.0 90.0, CVR 90.0" in text
    frac = reading.run_findings({**NTP, "scheme": "fractional"}, _metrics(0.30), FLOOR)
    assert [r.holds for r in frac if r.verdict != "note"] == [True, False]  # 30% CVR: not "drastically reduced"
    assert paper.paper_row({**NTP, "dataset": "esci", "targets": "trie"})[0].startswith("Table 2: ESCI")
    assert paper.paper_row({**NTP, "scheme": "stepwise", "targets": "trie"}) is None  # no such row in the paper


def test_a_sweep_is_read_against_table_1_or_says_why_not():
    frame = pd.DataFrame(
        [
            {
                "state": "done",
                "label": "NTP",
                "scheme": "indicator",
                "alpha": None,
                "targets": "onehot",
                "combined": False,
                "cvr": 0.9,
                **{f"recall@{k}": 0.7 for k in range(1, 6)},
            },
            {
                "state": "done",
                "label": "Fractional α=2",
                "scheme": "fractional",
                "alpha": 2.0,
                "targets": "onehot",
                "combined": False,
                "cvr": 0.1,
                **{f"recall@{k}": 0.8 for k in range(1, 6)},
            },
        ]
    )
    rows = table1.sweep_findings(frame, "05_train")
    assert [r.holds for r in rows] == [True, False, True]  # NTP's R@1 0.7 is 10 points below the best
    assert rows[1].claim == "NTP's R@1 is the best or within 2 points of it"
    assert table1.sweep_findings(frame, "07_de_ce_baselines")[0].claim.endswith("notebook 07 with from_runs.")
    assert "no NTP row" in table1.sweep_findings(frame.iloc[1:], "05_train")[0].claim


def test_findings_markdown_words():
    text = findings_markdown([finding("A", True, "1"), finding("B", False, "2"), finding("C", None, "3"), note("D")])
    assert text == ("- A: holds here (1)\n- B: does **not** hold here (2)\n- C: cannot be checked here (3)\n- D\n")


def test_the_random_floor_needs_both_ndcg_and_the_summed_recall_above_it():
    """The floor check: nDCG above the floor's and R@1 + ... + R@5 above its sum (run: 5 x 0.8 = 4.0)."""
    verdict = lambda floor: [r.holds for r in reading.run_findings(NTP, _metrics(0.9), floor) if r.verdict != "note"][0]
    # R@1 above the floor's (0.8 > 0.7) but the sum below it (4.0 < 0.7 + 4 x 0.9 = 4.3): no
    assert verdict({**FLOOR, "recall@1": 0.7, **{f"recall@{k}": 0.9 for k in range(2, 6)}}) is False
    assert verdict({**FLOOR, **{f"recall@{k}": 0.8 for k in range(1, 6)}}) is False  # a tie is not above
    assert verdict({**FLOOR, "ndcg": 0.96}) is False and verdict(FLOOR) is True  # nDCG 0.95 vs 0.96 / 0.86


def test_the_cvr_claim_compares_percent_with_table_1_and_skips_a_zero_shot_run():
    """Section 5.2 / Table 1: ranking-aware rows have CVR at most 13.04%, NTP 27.66%."""
    cvr_row = lambda params, cvr: [r for r in reading.run_findings(params, _metrics(cvr)) if r.verdict != "note"]
    assert cvr_row(NTP, 0.20)[0].holds is True  # 20% > 13.04%
    assert cvr_row({**NTP, "scheme": "fractional"}, 0.1304)[0].holds is True  # at most 13.04%: the bound itself
    assert cvr_row({**NTP, "steps": 0}, 0.5) == []  # Zero-shot: nothing trained, no loss to credit
    zero_shot = reading.run_findings({**NTP, "steps": 0}, _metrics(0.5), FLOOR)[1].claim
    assert zero_shot.startswith("the model as loaded ranks above random scores")  # not "fine-tuning"


def test_decoding_findings_name_each_rate():
    decoded = {
        "n_decoded": 40,
        "greedy_valid_rate": 0.9,
        "greedy_top1_rate": 0.5,
        "beam_recall@3_gold": 0.6,
        "beam_recall@3_scorer": 0.7,
        "beam_invalid_rate_unconstrained": 0.25,
    }
    (row,) = reading.decoding_findings(decoded, 3)
    assert row.claim == (
        "Decoding 40 held-out queries: greedy decoding writes one of the query's docIDs 90.0% of the time "
        "(the rank-1 docID 50.0%); beam search over the query's docID trie finds 60.0% of the gold top 3 "
        "(70.0% of the scorer's); unconstrained, 25.0% of its 3 outputs are no docID of the query."
    )
