"""A run's numbers against the paper's findings, in words: the "what to look for" cells at the
end of notebooks 05 and 06 (the sweep-level checks are ``report.table1_findings``, notebook 08;
the theory, data and baseline notebooks have theirs beside their code: ``theory.tables``,
``data.wordnet``, ``data.esci``, ``baselines.figure3``). Rows are ``display.finding`` (a claim,
whether it holds here, the numbers) and ``display.note`` (numbers, no verdict); percent as the
paper's tables (arXiv 2601.05588)."""

from __future__ import annotations

import re
from typing import Any

from arrank.workbook.display import finding, note, percent_text
from arrank.workbook.report import PAPER, column_title, loss_label


RANK_AWARE_CVR_MAX = max(row[0] for label, row in PAPER["table1"]["rows"].items() if label != "NTP")  # 13.04
NTP_CVR = PAPER["table1"]["rows"]["NTP"][0]  # 27.66


def paper_row(params: dict[str, Any]) -> tuple[str, dict[str, float]] | None:
    """(the table's caption, metric -> percent) of the paper's row for a 05_train run's variant
    (Table 1 for WordNet, Table 3 for a combined loss, Table 2 for ESCI), or None."""
    key = "table2" if params.get("dataset") == "esci" else "table3" if params.get("combined") else "table1"
    table, label = PAPER[key], loss_label(params)
    if label not in table["rows"]:
        return None
    return table["caption"], dict(zip(table["columns"], table["rows"][label]))


def _curve(m: dict[str, Any], prefix: str = "") -> str:
    ks = sorted(int(k.split("@")[1]) for k in m if re.fullmatch(rf"{prefix}recall@\d+", k))
    return (f"R@{ks[0]}..{ks[-1]} " + percent_text([m[f'{prefix}recall@{k}'] for k in ks])) if ks else "no R@k"


def run_findings(params: dict[str, Any], m: dict[str, Any], floor: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """A notebook 05 run (its params and results.json metrics ``m``; the random-scores floor of
    the same queries) against the paper's Tables 1-3 and section 5.2, in words: rows of
    ``display.finding`` / ``display.note``. Sweep-level checks (NTP against the other variants)
    are ``table1_findings``, notebook 08."""
    label, pct = loss_label(params), lambda v: percent_text(v)
    has_cvr = m.get("cvr") is not None
    here = (f"This run, {label}, in percent on {m.get('n_queries')} held-out queries: "
            + (f"CVR {pct(m['cvr'])}, " if has_cvr else "") + f"nDCG {pct(m.get('ndcg'))}, {_curve(m)}.")
    rows = [note(here)]
    row = paper_row(params)
    if row:
        caption, values = row
        rows.append(note(f"The paper's row ({caption}, Mistral-7B): " + ", ".join(
            f"{column_title(c).split(' (')[0].replace(' %', '')} {v:.2f}" for c, v in values.items()) + "."))
    if floor:
        mean = lambda d: sum(d[f"recall@{k}"] for k in range(1, 6) if d.get(f"recall@{k}") is not None)
        rows.append(finding("fine-tuning ranks above random scores on the same queries (nDCG and the summed R@1..R@5)",
                            m["ndcg"] > floor["ndcg"] and mean(m) > mean(floor),
                            f"nDCG {pct(m['ndcg'])} vs {pct(floor['ndcg'])}; {_curve(m)} vs {_curve(floor)}"))
    if has_cvr and label != "Zero-shot":
        if label == "NTP":
            rows.append(finding(f"Table 1: NTP (top-1 items only) leaves a high CVR, above every ranking-aware row "
                                f"(at most {RANK_AWARE_CVR_MAX:.2f}%; NTP {NTP_CVR:.2f}%)", m["cvr"] * 100 > RANK_AWARE_CVR_MAX,
                                f"CVR {pct(m['cvr'])}%"))
        else:
            rows.append(finding(f"section 5.2: ranking-aware losses drastically reduce the CVR (Table 1: at most "
                                f"{RANK_AWARE_CVR_MAX:.2f}%, NTP {NTP_CVR:.2f}%)", m["cvr"] * 100 <= RANK_AWARE_CVR_MAX,
                                f"CVR {pct(m['cvr'])}%"))
    train = {k.removeprefix("train_"): v for k, v in m.items() if k.startswith("train_")}
    if train:
        rows.append(note(f"On {train.get('n_queries')} of its training queries (Figure 3 (a)'s capacity question, "
                         f"notebook 07): {_curve(train)}" + (f", CVR {pct(train['cvr'])}" if train.get("cvr") is not None
                                                             else "") + f"; held out: {_curve(m)}."))
    return rows


def decoding_findings(decoded: dict[str, Any], k: int) -> list[dict[str, Any]]:
    """Notebook 06's decoding metrics against the paper's claim that its losses "suppress invalid
    docID generations" (section 5.2; the paper scores by mean token log-probability and names
    greedy decoding as a proxy for beam search), as notes: the numbers, no verdict (the paper
    reports no decoding numbers to compare with)."""
    pct = lambda key: percent_text(decoded.get(key))
    return [note(f"Decoding {decoded.get('n_decoded')} held-out queries: greedy decoding writes one of the query's "
                 f"docIDs {pct('greedy_valid_rate')}% of the time (the rank-1 docID {pct('greedy_top1_rate')}%); "
                 f"beam search over the query's docID trie finds {pct(f'beam_recall@{k}_gold')}% of the gold top {k} "
                 f"({pct(f'beam_recall@{k}_scorer')}% of the scorer's); unconstrained, "
                 f"{pct('beam_invalid_rate_unconstrained')}% of its {k} outputs are no docID of the query.")]


def sweep_findings(frame: Any, notebook: str) -> list[dict[str, Any]]:
    """A sweep's collected points (``report.collect``) against Table 1's findings
    (``report.table1_findings``: NTP's CVR and R@1, fractional α=2 at R@2..R@5, trie CVR, the
    zero-shot row) as rows; a note where no Table 1 finding applies to the sweep."""
    from arrank.workbook.report import table1_findings

    if notebook != "05_train" or frame.empty or not (frame["state"] == "done").any():
        return [note(f"No Table 1 finding applies to this sweep ({notebook}, "
                     f"{int((frame['state'] == 'done').sum()) if len(frame) else 0} finished points)"
                     + ("; Figure 3's findings: notebook 07 with from_runs." if notebook == "07_de_ce_baselines" else "."))]
    checks = table1_findings(frame)
    if checks.empty:
        return [note("This sweep has no NTP row, which every Table 1 finding compares with.")]
    return [finding(r.check, r.holds, r.numbers) for r in checks.itertuples(index=False)]
