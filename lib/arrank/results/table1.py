"""Table 1's findings (section 5.2 of arXiv 2601.05588) checked on a WordNet sweep's collected
points: ``COMPARISONS`` lists the comparisons that decide them (``claims.Claim``; sides are roles of
the sweep's variants, ``roles``), ``table1_findings`` gives one ``Finding`` per claim (notebook 08's
"what to look for"), the checks of one sweep a family whose verdicts are also given Holm-adjusted
(``statistics.holm``, docs/findings.md)."""

from __future__ import annotations

import itertools
from typing import Any, Sequence

import numpy as np
import pandas as pd

from arrank.common.display import percent_text
from arrank.common.findings import Finding, note
from arrank.results import statistics as S
from arrank.results.claims import Claim, Means, Member, decide_claim, members, recall, resolve

NEAR = 0.02  # "NTP's R@1 is the best or within NEAR of it": 2 points
# The roles of a sweep's variants that Table 1's claims compare (``roles``): "each ..." is one
# comparison per variant, the others pool their variants' runs.
NTP, OTHERS, FRACTIONAL, FRACTIONAL_2 = "NTP", "each variant but NTP", "each fractional variant", "fractional α=2"
TRIE, TUNED, ZERO_SHOT = "each trie variant", "each fine-tuned variant", "zero-shot"
CVR = "NTP has the highest CVR; fractional variants at most half of it"
R1 = "NTP's R@1 is the best or within 2 points of it"
CENTRAL, TRIE_CVR = "fractional α=2 has a higher mean R@2..R@5 than NTP", "trie variants lower CVR relative to NTP"
BEATS_ZERO_SHOT = "every fine-tuned variant beats the zero-shot model (nDCG and mean R@1..R@5)"
# Table 1's findings (section 5.2) as the comparisons that decide them, and the workbook's own check that
# fine-tuning beats the zero-shot model (the paper's Table 1 has no zero-shot row)
COMPARISONS = (
    Claim("cvr", CVR, "{a} CVR below NTP's", OTHERS, NTP, ("cvr",), side="<"),
    Claim("cvr", CVR, "{a} CVR at most half NTP's", FRACTIONAL, NTP, ("cvr",), side="<", weight=0.5, inclusive=True),
    Claim("r1", R1, "NTP − {b} R@1 above −{points:g} points", NTP, OTHERS, ("r1",), threshold=-NEAR, inclusive=True),
    Claim("central", CENTRAL, "fractional α=2 − NTP, {quantity}", FRACTIONAL_2, NTP, recall(2, 3, 4, 5)),
    Claim("trie", TRIE_CVR, "{a} CVR below NTP's", TRIE, NTP, ("cvr",), side="<"),
    Claim("zero_shot", BEATS_ZERO_SHOT, "{a} − zero-shot {quantity}", TUNED, ZERO_SHOT, ("ndcg",)),
    Claim("zero_shot", BEATS_ZERO_SHOT, "{a} − zero-shot {quantity}", TUNED, ZERO_SHOT, recall(1, 2, 3, 4, 5)),
)
CLAIMS = {c.key: c.claim for c in COMPARISONS}  # each claim of Table 1 checked, by key, in words


def roles(finished: pd.DataFrame) -> dict[str, list[Member]]:
    """The variants of a sweep's finished points in each role of ``COMPARISONS`` (first-seen order):
    NTP (the indicator scheme on one-hot targets, not combined), the fractional variants, fractional
    α=2, the trie variants, the fine-tuned variants (``steps`` > 0) and the zero-shot rows
    (``steps = 0``); a pooled role has one member, or none."""
    zero = finished["steps"].eq(0) if "steps" in finished else pd.Series(False, index=finished.index)
    done = finished[~zero]
    get = lambda col, default: (done[col] if col in done else pd.Series(default, index=done.index)).fillna(default)
    scheme, targets = get("scheme", "indicator"), get("targets", "onehot")
    plain = ~get("combined", False).astype(bool)
    ntp = done[(scheme == "indicator") & (targets == "onehot") & plain]
    frac = (scheme == "fractional") & (targets == "onehot") & plain
    alpha = pd.to_numeric(get("alpha", np.nan), errors="coerce")
    labels = lambda part: tuple(dict.fromkeys(part["label"]))
    each = lambda part: [(v, (v,)) for v in labels(part)]
    pooled = lambda name, part: [(name, labels(part))] if len(part) else []
    return {
        NTP: pooled(NTP, ntp),
        OTHERS: each(done[~done["label"].isin(labels(ntp))]),
        FRACTIONAL: each(done[frac]),
        FRACTIONAL_2: pooled(FRACTIONAL_2, done[frac & (alpha == 2.0)]),
        TRIE: each(done[(targets == "trie") & plain]),
        TUNED: each(done),
        ZERO_SHOT: pooled(ZERO_SHOT, finished[zero]),
    }


def summary(claims: Sequence[Claim], sides: dict[str, list[Member]], columns: Sequence[str], means: Means) -> str:
    """The means the first comparison of ``claims`` (and those of the same sides) compares, percent, from
    the sweep's collected runs: ``CVR (%): NTP 92.3; Fractional α=2 3.3, Trie β=2 4.3``: the pooled sides
    first, then each variant of a per-variant side; several quantities as ``x / y``."""
    first = claims[0]
    cut = [(c, tuple(m for m in c.metrics if m in columns)) for c in claims if (c.a, c.b) == (first.a, first.b)]
    cut = [(c, metrics) for c, metrics in cut if metrics]
    text = lambda labels: " / ".join(percent_text(means(labels, metrics)) for _, metrics in cut)
    shown: dict[bool, list[str]] = {False: [], True: []}  # per-variant side or not -> "name value"
    for side in (first.a, first.b):
        shown[str(side).startswith("each ")] += [f"{name} {text(labels)}" for name, labels in members(side, sides)]
    head = " / ".join(c.quantity(metrics) for c, metrics in cut) + " (%): " + ", ".join(shown[False])
    return head + (f"; {', '.join(shown[True])}" if shown[True] else "")


def table1_findings(
    frame: pd.DataFrame, per_query: pd.DataFrame | None = None, claims: tuple[Claim, ...] = COMPARISONS
) -> list[Finding]:
    """The CPU-scale checks of Table 1's findings (section 5.2) on a WordNet sweep's collected runs
    (``collect``; mean over seeds per variant), one ``Finding`` per claim of ``claims`` (default
    ``COMPARISONS``) whose variants the sweep has (``roles``): NTP has the highest CVR and every
    fractional variant at most half of it; NTP's R@1 is the best or within 2 points of it;
    fractional α=2 has a higher mean R@2..R@5 than NTP; every trie variant has a lower CVR than NTP;
    every fine-tuned variant beats a zero-shot row (``steps = 0``). With ``per_query``
    (``arrank.workbook.report.per_query_frame``) each is decided by intervals (``claims.decide_claim``,
    docs/findings.md; an undecided single comparison names the budget that would decide it); variants
    without per-query rows get the point verdict, labelled as such. The checks decided by intervals
    form one family: each also carries its Holm-adjusted verdict (``S.holm``)."""
    finished = frame[frame["state"] == "done"]
    if finished.empty:
        raise ValueError("no finished points in this sweep: run it first")
    sides = roles(finished)
    columns = {S.column(c): c for c in finished if c in S.METRIC_COLUMNS}  # per-query column -> the frame's

    def means(labels: tuple[str, ...], metrics: tuple[str, ...]) -> float:
        rows = finished[finished["label"].isin(labels)]
        return float(rows[[columns[m] for m in metrics]].mean(axis=1).mean())

    rows = []
    for _, group in itertools.groupby(claims, key=lambda c: c.key):
        group = list(group)
        if parts := resolve(group, sides, columns):
            rows.append(decide_claim(parts, per_query, summary(group, sides, columns, means), means, to_decide=True))
    return S.holm(rows)


def sweep_findings(frame: Any, notebook: str, per_query: pd.DataFrame | None = None) -> list[Finding]:
    """A sweep's collected points (``arrank.workbook.report.collect``) against Table 1's findings
    (``table1_findings``: NTP's CVR and R@1, fractional α=2 at R@2..R@5, trie CVR, the zero-shot
    row), with intervals where ``per_query`` has the runs' per-query metrics; a note where no
    Table 1 finding applies to the sweep."""
    done = int((frame["state"] == "done").sum()) if len(frame) else 0
    if notebook != "05_train" or not done:
        end = "; Figure 3's findings: notebook 07 with from_runs." if notebook == "07_de_ce_baselines" else "."
        return [note(f"No Table 1 finding applies to this sweep ({notebook}, {done} finished points){end}")]
    checks = table1_findings(frame, per_query=per_query)
    return checks or [note("This sweep has no NTP row and another variant, which every Table 1 finding compares.")]
