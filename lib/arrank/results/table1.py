"""Table 1's findings (section 5.2 of arXiv 2601.05588) checked on a WordNet sweep's collected
points: one ``Finding`` per check (notebook 08's "what to look for")."""

from __future__ import annotations

from typing import Any

import pandas as pd

from arrank.common.display import percent_text
from arrank.common.findings import Finding, finding, note


def table1_findings(frame: pd.DataFrame, near: float = 0.02) -> list[Finding]:
    """The CPU-scale reproduction checks of Table 1's findings (section 5.2) on a WordNet sweep's
    collected runs (``collect``; one row per finished point, mean over seeds per variant):

    - NTP (indicator, one-hot) has the highest CVR of all variants, and every fractional variant
      has at most half of it;
    - fractional alpha = 2 has a higher mean of R@2..R@5 than NTP;
    - NTP's R@1 is the best or within ``near`` (absolute) of the best;
    - every trie variant has a lower CVR than NTP;
    - where the sweep has a zero-shot row (``steps = 0``, the model before fine-tuning, which is no
      loss variant and is left out of the checks above): every fine-tuned variant has a higher
      nDCG and mean R@1..R@5 than it.

    One ``Finding`` per check the sweep has the variants for, with the numbers compared in percent
    as the paper's tables (``near`` is a fraction, as in results.json)."""
    done = frame[frame["state"] == "done"].copy()
    if done.empty:
        raise ValueError("no finished points in this sweep: run it first")
    zero = done["steps"].eq(0) if "steps" in done else pd.Series(False, index=done.index)
    zero_shot, done = done[zero], done[~zero]
    get = lambda col, default=None: done[col] if col in done else pd.Series(default, index=done.index)
    scheme, targets = get("scheme", "indicator").fillna("indicator"), get("targets", "onehot").fillna("onehot")
    combined = get("combined", False).fillna(False).astype(bool)
    ntp = done[(scheme == "indicator") & (targets == "onehot") & ~combined]
    frac = done[(scheme == "fractional") & (targets == "onehot") & ~combined]
    frac2 = frac[get("alpha").loc[frac.index].astype(float) == 2.0] if len(frac) else frac
    trie = done[(targets == "trie") & ~combined]
    by = lambda part: part.groupby("label", sort=False).mean(numeric_only=True)
    r25 = [f"recall@{k}" for k in range(2, 6) if f"recall@{k}" in done]  # the R@2..R@5 the sweep has
    mean25 = lambda part: float(part[r25].mean(axis=1).mean())
    pct = lambda value: percent_text(float(value))
    rows = []
    if len(ntp):
        ntp_cvr, variants = float(ntp["cvr"].mean()), by(done)
        others = variants.drop(index=ntp["label"].iloc[0], errors="ignore")
        holds = bool((others["cvr"] < ntp_cvr).all()) and (not len(frac) or bool((by(frac)["cvr"] <= ntp_cvr / 2).all()))
        rows.append(finding("NTP has the highest CVR; fractional variants at most half of it", holds,
                     f"CVR (%): NTP {pct(ntp_cvr)}; " + ", ".join(f"{k} {pct(v)}" for k, v in others["cvr"].items())))
        best_r1 = float(variants["recall@1"].max())
        rows.append(finding(f"NTP's R@1 is the best or within {near * 100:g} points of it",
                     float(ntp["recall@1"].mean()) >= best_r1 - near,
                     f"R@1 (%): NTP {pct(ntp['recall@1'].mean())}, best {pct(best_r1)}"))
        if len(frac2) and r25:
            span = f"R@2..R@{r25[-1].split('@')[1]}" if len(r25) > 1 else "R@2"
            rows.append(finding("fractional α=2 has a higher mean R@2..R@5 than NTP",
                         mean25(frac2) > mean25(ntp),
                         f"mean {span} (%): fractional α=2 {pct(mean25(frac2))}, NTP {pct(mean25(ntp))}"))
        if len(trie):
            t = by(trie)["cvr"]
            rows.append(finding("trie variants lower CVR relative to NTP", bool((t < ntp_cvr).all()),
                         f"CVR (%): NTP {pct(ntp_cvr)}; " + ", ".join(f"{k} {pct(v)}" for k, v in t.items())))
    if len(zero_shot) and len(done):
        mean15 = lambda part: part[[f"recall@{k}" for k in range(1, 6) if f"recall@{k}" in part]].mean(axis=1)
        tuned = by(done.assign(m15=mean15(done)))
        z_ndcg, z15 = float(zero_shot["ndcg"].mean()), float(mean15(zero_shot).mean())
        rows.append(finding("every fine-tuned variant beats the zero-shot model (nDCG and mean R@1..R@5)",
                     bool((tuned["ndcg"] > z_ndcg).all() and (tuned["m15"] > z15).all()),
                     f"nDCG / mean R@1..R@5 (%): zero-shot {pct(z_ndcg)} / {pct(z15)}; " + ", ".join(
                         f"{k} {pct(r.ndcg)} / {pct(r.m15)}" for k, r in tuned.iterrows())))
    return rows


def sweep_findings(frame: Any, notebook: str) -> list[Finding]:
    """A sweep's collected points (``arrank.workbook.report.collect``) against Table 1's findings
    (``table1_findings``: NTP's CVR and R@1, fractional α=2 at R@2..R@5, trie CVR, the zero-shot
    row); a note where no Table 1 finding applies to the sweep."""
    if notebook != "05_train" or frame.empty or not (frame["state"] == "done").any():
        return [note(f"No Table 1 finding applies to this sweep ({notebook}, "
                     f"{int((frame['state'] == 'done').sum()) if len(frame) else 0} finished points)"
                     + ("; Figure 3's findings: notebook 07 with from_runs." if notebook == "07_de_ce_baselines" else "."))]
    checks = table1_findings(frame)
    if not checks:
        return [note("This sweep has no NTP row, which every Table 1 finding compares with.")]
    return checks
