"""A run's numbers against the paper's findings, in words: the "what to look for" cells at the end
of notebooks 05 and 06 (sweep-level checks: ``results.table1``; Figure 3's: ``results.figure3``).
Every row is a ``common.findings.Finding``; percent as the paper's tables (arXiv 2601.05588)."""

from __future__ import annotations

import re
from typing import Any

from arrank.common.display import percent_text
from arrank.common.findings import Finding, finding, note
from arrank.results.claims import metric_name
from arrank.results.paper import NTP_CVR, RANK_AWARE_CVR_MAX, paper_row
from arrank.training.schemes import loss_label


def _curve(m: dict[str, Any]) -> str:
    ks = sorted(int(k.split("@")[1]) for k in m if re.fullmatch(r"recall@\d+", k))
    return (f"R@{ks[0]}..{ks[-1]} " + percent_text([m[f"recall@{k}"] for k in ks])) if ks else "no R@k"


def run_findings(params: dict[str, Any], m: dict[str, Any], floor: dict[str, Any] | None = None) -> list[Finding]:
    """A notebook 05 run (its params and results.json metrics ``m``; the random-scores floor of
    the same queries) against the paper's Tables 1-3 and section 5.2, in words: rows of
    ``Finding``. Sweep-level checks are ``table1_findings``, notebook 08."""
    label, pct = loss_label(params), percent_text
    has_cvr = m.get("cvr") is not None
    cvr = f"CVR {pct(m['cvr'])}, " if has_cvr else ""
    here = f"This run, {label}, in percent on {m.get('n_queries')} held-out queries: {cvr}nDCG {pct(m.get('ndcg'))}"
    rows = [note(f"{here}, {_curve(m)}.")]
    if row := paper_row(params):
        caption, values = row
        shown = ", ".join(f"{metric_name(c)} {v:.2f}" for c, v in values.items())
        rows.append(note(f"The paper's row ({caption}, Mistral-7B): {shown}."))
    if floor:
        mean = lambda d: sum(d[f"recall@{k}"] for k in range(1, 6) if d.get(f"recall@{k}") is not None)
        subject = "the model as loaded" if label == "Zero-shot" else "fine-tuning"  # steps 0: nothing fine-tuned
        claim = f"{subject} ranks above random scores on the same queries (nDCG and the summed R@1..R@5)"
        shown = f"nDCG {pct(m['ndcg'])} vs {pct(floor['ndcg'])}; {_curve(m)} vs {_curve(floor)}"
        rows.append(finding(claim, m["ndcg"] > floor["ndcg"] and mean(m) > mean(floor), shown))
    if has_cvr and label != "Zero-shot":
        ntp = label == "NTP"
        most, ntp_cvr = f"at most {RANK_AWARE_CVR_MAX:.2f}%", f"NTP {NTP_CVR:.2f}%"
        claim = (
            f"Table 1: NTP (top-1 items only) leaves a high CVR, above every ranking-aware row ({most}; {ntp_cvr})"
            if ntp
            else f"section 5.2: ranking-aware losses drastically reduce the CVR (Table 1: {most}, {ntp_cvr})"
        )
        # Explicit comparisons both ways, so that a NaN CVR fails either claim.
        holds = m["cvr"] * 100 > RANK_AWARE_CVR_MAX if ntp else m["cvr"] * 100 <= RANK_AWARE_CVR_MAX
        rows.append(finding(claim, holds, f"CVR {pct(m['cvr'])}%"))
    if train := {k.removeprefix("train_"): v for k, v in m.items() if k.startswith("train_")}:
        cvr = f", CVR {pct(train['cvr'])}" if train.get("cvr") is not None else ""
        text = f"On {train.get('n_queries')} of its training queries (Figure 3 (a)'s capacity question, notebook 07): "
        rows.append(note(f"{text}{_curve(train)}{cvr}; held out: {_curve(m)}."))
    return rows


def decoding_findings(decoded: dict[str, Any], k: int) -> list[Finding]:
    """Notebook 06's decoding metrics against the paper's claim that its losses "suppress invalid
    docID generations" (section 5.2; the paper scores by mean token log-probability and names
    greedy decoding as a proxy for beam search), as notes: the numbers, no verdict (the paper
    reports no decoding numbers to compare with)."""
    pct = lambda key: percent_text(decoded.get(key))
    return [
        note(
            f"Decoding {decoded.get('n_decoded')} held-out queries: greedy decoding writes one of the query's "
            f"docIDs {pct('greedy_valid_rate')}% of the time (the rank-1 docID {pct('greedy_top1_rate')}%); "
            f"beam search over the query's docID trie finds {pct(f'beam_recall@{k}_gold')}% of the gold top {k} "
            f"({pct(f'beam_recall@{k}_scorer')}% of the scorer's); unconstrained, "
            f"{pct('beam_invalid_rate_unconstrained')}% of its {k} outputs are no docID of the query."
        )
    ]
