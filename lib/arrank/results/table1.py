"""Table 1's findings (section 5.2 of arXiv 2601.05588) checked on a WordNet sweep's collected
points: one ``Finding`` per check (notebook 08's "what to look for"), the checks of one sweep a family
whose verdicts are also given Holm-adjusted (``statistics.holm``, docs/findings.md)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd

from arrank.common.display import percent_text
from arrank.common.findings import Finding, note
from arrank.results import statistics as S

NEAR = 0.02  # "NTP's R@1 is the best or within NEAR of it": 2 points
CLAIMS = {  # Table 1's findings in words (section 5.2), as table1_findings names them; {near}: points
    "cvr": "NTP has the highest CVR; fractional variants at most half of it",
    "r1": "NTP's R@1 is the best or within {near:g} points of it",
    "central": "fractional α=2 has a higher mean R@2..R@5 than NTP",
    "trie": "trie variants lower CVR relative to NTP",
    "zero_shot": "every fine-tuned variant beats the zero-shot model (nDCG and mean R@1..R@5)",
}


def table1_findings(frame: pd.DataFrame, near: float = NEAR, per_query: pd.DataFrame | None = None) -> list[Finding]:
    """The CPU-scale checks of Table 1's findings (section 5.2) on a WordNet sweep's collected runs
    (``collect``; mean over seeds per variant), one ``Finding`` per check the sweep has the variants
    for: NTP has the highest CVR and every fractional variant at most half of it; fractional α=2
    has a higher mean R@2..R@5 than NTP; NTP's R@1 is the best or within ``near`` (a fraction) of
    it; every trie variant has a lower CVR than NTP; every fine-tuned variant beats a zero-shot row
    (``steps = 0``). With ``per_query`` (``arrank.workbook.report.per_query_frame``) each is decided
    by intervals (docs/findings.md; an undecided single comparison names the budget that would
    decide it); variants without per-query rows get the point verdict, labelled as such. The checks
    decided by intervals form one family: each also carries its Holm-adjusted verdict (``S.holm``)."""
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
    labels = lambda part: list(dict.fromkeys(part["label"]))
    rows = []

    def add(claim: str, holds: bool, numbers: str, parts: list[tuple[str, Any, Any, Any, float, str, float]]) -> None:
        """Append the interval verdict of the parts (name, a, b, metrics, threshold, side, weight)
        when the per-query data have their variants, else the point verdict ``holds``."""
        names = {
            v for _, a, b, *_ in parts for v in ([a] if isinstance(a, str) else a) + ([b] if isinstance(b, str) else b)
        }
        if not parts or not S.has_variants(per_query, *names):
            rows.append(S.point_check(claim, holds, numbers))
        elif len(parts) == 1:
            name, a, b, m, threshold, side, weight = parts[0]
            one = S.check(name, per_query, a, b, m, threshold, side, weight)
            numbers = f"{numbers}; {one.numbers}"
            if one.verdict == "undecided" and weight == 1.0:  # what would decide it, at today's effect and spreads
                numbers += f"; to decide: {S.budget_to_decide(per_query, a, b, m, threshold).text()}"
            rows.append(replace(one, claim=claim, numbers=numbers))
        else:
            rows.append(S.combine(claim, [(name, S.check(name, per_query, *rest)) for name, *rest in parts], numbers))

    if len(ntp):
        ntp_cvr, variants = float(ntp["cvr"].mean()), by(done)
        ntp_labels = labels(ntp)
        others = variants.drop(index=ntp_labels, errors="ignore")
        holds = bool((others["cvr"] < ntp_cvr).all()) and (
            not len(frac) or bool((by(frac)["cvr"] <= ntp_cvr / 2).all())
        )
        parts = [(f"{v} CVR below NTP's", v, ntp_labels, "cvr", 0.0, "<", 1.0) for v in others.index]
        parts += [(f"{v} CVR at most half NTP's", v, ntp_labels, "cvr", 0.0, "<", 0.5) for v in labels(frac)]
        add(
            CLAIMS["cvr"],
            holds,
            f"CVR (%): NTP {pct(ntp_cvr)}; " + ", ".join(f"{k} {pct(v)}" for k, v in others["cvr"].items()),
            parts,
        )
        best_r1 = float(variants["recall@1"].max())
        add(
            CLAIMS["r1"].format(near=near * 100),
            float(ntp["recall@1"].mean()) >= best_r1 - near,
            f"R@1 (%): NTP {pct(ntp['recall@1'].mean())}, best {pct(best_r1)}",
            [
                (f"NTP − {v} R@1 above −{near * 100:g} points", ntp_labels, v, "recall@1", -near, ">", 1.0)
                for v in others.index
            ],
        )
        if len(frac2) and r25:
            span = f"R@2..R@{r25[-1].split('@')[1]}" if len(r25) > 1 else "R@2"
            add(
                CLAIMS["central"],
                mean25(frac2) > mean25(ntp),
                f"mean {span} (%): fractional α=2 {pct(mean25(frac2))}, NTP {pct(mean25(ntp))}",
                [(f"fractional α=2 − NTP, mean {span}", labels(frac2), ntp_labels, r25, 0.0, ">", 1.0)],
            )
        if len(trie):
            t = by(trie)["cvr"]
            add(
                CLAIMS["trie"],
                bool((t < ntp_cvr).all()),
                f"CVR (%): NTP {pct(ntp_cvr)}; " + ", ".join(f"{k} {pct(v)}" for k, v in t.items()),
                [(f"{v} CVR below NTP's", v, ntp_labels, "cvr", 0.0, "<", 1.0) for v in t.index],
            )
    if len(zero_shot) and len(done):
        r15 = [f"recall@{k}" for k in range(1, 6) if f"recall@{k}" in done]
        mean15 = lambda part: part[[c for c in r15 if c in part]].mean(axis=1)
        tuned = by(done.assign(m15=mean15(done)))
        z_ndcg, z15 = float(zero_shot["ndcg"].mean()), float(mean15(zero_shot).mean())
        zero_labels = labels(zero_shot)
        parts = [
            p
            for v in tuned.index
            for p in (
                (f"{v} − zero-shot nDCG", v, zero_labels, "ndcg", 0.0, ">", 1.0),
                (f"{v} − zero-shot mean R@1..R@5", v, zero_labels, r15, 0.0, ">", 1.0),
            )
        ]
        add(
            CLAIMS["zero_shot"],
            bool((tuned["ndcg"] > z_ndcg).all() and (tuned["m15"] > z15).all()),
            f"nDCG / mean R@1..R@5 (%): zero-shot {pct(z_ndcg)} / {pct(z15)}; "
            + ", ".join(f"{k} {pct(r.ndcg)} / {pct(r.m15)}" for k, r in tuned.iterrows()),
            parts,
        )
    return S.holm(rows)


def sweep_findings(frame: Any, notebook: str, per_query: pd.DataFrame | None = None) -> list[Finding]:
    """A sweep's collected points (``arrank.workbook.report.collect``) against Table 1's findings
    (``table1_findings``: NTP's CVR and R@1, fractional α=2 at R@2..R@5, trie CVR, the zero-shot
    row), with intervals where ``per_query`` has the runs' per-query metrics; a note where no
    Table 1 finding applies to the sweep."""
    if notebook != "05_train" or frame.empty or not (frame["state"] == "done").any():
        return [
            note(
                f"No Table 1 finding applies to this sweep ({notebook}, "
                f"{int((frame['state'] == 'done').sum()) if len(frame) else 0} finished points)"
                + ("; Figure 3's findings: notebook 07 with from_runs." if notebook == "07_de_ce_baselines" else ".")
            )
        ]
    checks = table1_findings(frame, per_query=per_query)
    if not checks:
        return [note("This sweep has no NTP row, which every Table 1 finding compares with.")]
    return checks
