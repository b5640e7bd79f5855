"""Findings: one kind of data for every check the workbook makes of the paper (arXiv 2601.05588):
a :class:`Finding` says what it claims, the numbers compared and its verdict, three-valued where it
has a confidence interval (:func:`decide`), with the p-value its interval implies and, within a
family of findings, its Holm-adjusted verdict (``results.statistics.holm``); docs/findings.md says
what a verdict means.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Literal, Mapping, get_args

Verdict = Literal["holds", "fails", "undecided", "unchecked", "note"]
VERDICTS: tuple[str, ...] = get_args(Verdict)
WORDS = {
    "holds": "holds here",
    "fails": "does **not** hold here",
    "undecided": "**undecided** here",
    "unchecked": "cannot be checked here",
}
SIDES = (">", "<")
COLUMNS = ("claim", "verdict", "numbers", "estimate", "threshold", "side", "ci_low", "ci_high", "level")
COLUMNS += ("p_value", "p_holm", "holm_verdict", "family_size")


@dataclass(frozen=True)
class Finding:
    """A claim of the paper (or a fact the workbook checks) and how this run's numbers answer it:
    ``estimate``, ``threshold``, ``interval`` in the metric's units (fractions, as results.json
    keeps them); ``side`` ``">"`` when the claim is estimate > threshold, ``"<"`` when below.

    ``p_value``: the two-sided p-value the interval implies (1 - the largest confidence level whose
    interval still excludes the threshold: below ``1 - level`` exactly when the verdict is decided);
    ``p_holm``, ``holm_verdict``, ``family_size``: the Holm-adjusted p-value and verdict within the
    finding's family of ``family_size`` findings (``results.statistics.holm``); ``parts``: the named
    comparisons a compound claim is decided by (``results.statistics.combine``); ``means``: the means of
    the two sides compared (``results.claims.evaluate``), where the finding compares two."""

    claim: str
    verdict: Verdict
    numbers: str = ""
    estimate: float | None = None
    threshold: float | None = None
    side: str = ">"
    interval: tuple[float, float] | None = None
    level: float | None = None
    p_value: float | None = None
    p_holm: float | None = None
    holm_verdict: Verdict | None = None
    family_size: int | None = None
    parts: tuple[tuple[str, "Finding"], ...] = ()
    means: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        for name, allowed in (("verdict", VERDICTS), ("side", SIDES), ("holm_verdict", (*VERDICTS, None))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name}={getattr(self, name)!r} is not allowed; choose one of {list(allowed)}")

    @property
    def holds(self) -> bool | None:
        """True (holds), False (fails), None (undecided, unchecked or a note)."""
        return {"holds": True, "fails": False}.get(self.verdict)

    def as_dict(self) -> dict[str, Any]:
        """Plain fields for a table or JSON (the interval as two columns)."""
        interval = dict(zip(("ci_low", "ci_high"), self.interval or (None, None)))
        return {c: interval[c] if c in interval else getattr(self, c) for c in COLUMNS}

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> "Finding":
        """The inverse of ``as_dict``: a finding from a table row or a JSON record of its columns (missing
        or NaN values as None, the interval from ``ci_low`` and ``ci_high``)."""
        missing = lambda v: v is None or (isinstance(v, float) and math.isnan(v))
        get = lambda key: None if missing(row.get(key)) else row[key]
        values = {k: get(k) for k in COLUMNS if k not in ("ci_low", "ci_high")}
        interval = None if get("ci_low") is None else (get("ci_low"), get("ci_high"))
        size = values.pop("family_size")
        values = {k: v for k, v in values.items() if v is not None}
        return cls(**values, interval=interval, family_size=None if size is None else int(size))

    @property
    def holm_changed(self) -> bool:
        """True where the Holm-adjusted verdict differs from the verdict (a decided claim that its
        family's adjustment leaves undecided)."""
        return self.holm_verdict is not None and self.holm_verdict != self.verdict


def finding(claim: str, holds: bool | None, numbers: str) -> Finding:
    """A check decided from its numbers alone (no interval): holds / fails, or unchecked (None)."""
    return Finding(claim, "unchecked" if holds is None else "holds" if holds else "fails", numbers)


def note(text: str) -> Finding:
    """A row that states numbers and checks nothing."""
    return Finding(text, "note")


def excludes(interval: tuple[float, float], threshold: float) -> bool:
    """Whether ``interval`` lies wholly on one side of ``threshold`` (touching it is not excluding it):
    what makes a verdict decided (:func:`decide`)."""
    return interval[0] > threshold or interval[1] < threshold


def decide(
    claim: str,
    estimate: float,
    interval: tuple[float, float],
    threshold: float = 0.0,
    side: str = ">",
    numbers: str = "",
    level: float = 0.95,
    p_value: float | None = None,
) -> Finding:
    """The three-valued verdict of a claim on ``estimate`` from its ``level`` confidence interval
    against ``threshold`` (docs/findings.md, "The verdicts"); ``p_value``, where given, the p-value
    the same interval construction implies (``results.statistics``)."""
    lo, hi = float(interval[0]), float(interval[1])
    if not lo <= hi:
        raise ValueError(f"interval={interval!r} must be (low, high) with low <= high")
    decided = excludes((lo, hi), threshold)
    verdict = "undecided" if not decided else "holds" if (lo > threshold) == (side == ">") else "fails"
    p = None if p_value is None else float(p_value)
    return Finding(claim, verdict, numbers, float(estimate), float(threshold), side, (lo, hi), level, p)


def interval_text(f: Finding, scale: float = 100.0, unit: str = " points") -> str:
    """``+3.2 points, 95% CI [+1.1, +5.0]`` (fractions shown x ``scale``), or '' without an interval."""
    if f.interval is None or f.estimate is None:
        return ""
    lo, hi = f.interval
    level = f"{(f.level or 0.95) * 100:g}%"
    return f"{f.estimate * scale:+.1f}{unit}, {level} CI [{lo * scale:+.1f}, {hi * scale:+.1f}]"


def p_text(p: float | None) -> str:
    """A p-value for display: ``0.012``, ``0.31``, ``< 0.001``; '' for None."""
    return "" if p is None else "< 0.001" if p < 0.001 else f"{p:.3f}" if p < 0.1 else f"{p:.2f}"


def holm_cell(f: Finding) -> str:
    """A finding's Holm-adjusted verdict for a table cell, with the adjusted p-value: ``holds (p 0.012)``,
    or the change marked, ``holds → **undecided** (p 0.061)``; '' outside a family."""
    if f.holm_verdict is None:
        return ""
    head = f"{f.verdict} → **{f.holm_verdict}**" if f.holm_changed else f.holm_verdict
    return f"{head} (p {p_text(f.p_holm)})"


def findings_markdown(rows: Iterable[Finding], intro: str = "") -> str:
    """Findings as a Markdown list: ``- <claim>: holds here (numbers; estimate, 95% CI [...]); p = ...;
    Holm (n findings): p = ..., holds``; a verdict that Holm's adjustment changes reads ``holds here →
    **undecided** (Holm)``."""
    lines = [intro] if intro else []
    for f in rows:
        if f.verdict == "note":
            lines.append(f"- {f.claim}")
            continue
        detail = "; ".join(part for part in (f.numbers, interval_text(f)) if part)
        words = WORDS[f.verdict] + (f" → **{f.holm_verdict}** (Holm)" if f.holm_changed else "")
        tests = "" if f.p_value is None else f"; p = {p_text(f.p_value)}"
        if tests and f.p_holm is not None and f.holm_verdict is not None:
            tests += f"; Holm ({f.family_size} findings): p = {p_text(f.p_holm)}, {f.holm_verdict}"
        lines.append(f"- {f.claim}: {words}" + (f" ({detail})" if detail else "") + tests)
    return "\n".join(lines) + "\n"
