"""Findings: one kind of data for every check the workbook makes of the paper (arXiv 2601.05588):
a :class:`Finding` says what it claims, the numbers compared and its verdict, three-valued where it
has a confidence interval (:func:`decide`); docs/findings.md says what a verdict means.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Literal

Verdict = Literal["holds", "fails", "undecided", "unchecked", "note"]
VERDICTS: tuple[str, ...] = ("holds", "fails", "undecided", "unchecked", "note")
WORDS = {
    "holds": "holds here",
    "fails": "does **not** hold here",
    "undecided": "**undecided** here",
    "unchecked": "cannot be checked here",
}
SIDES = (">", "<")
COLUMNS = ("claim", "verdict", "numbers", "estimate", "threshold", "side", "ci_low", "ci_high", "level")


@dataclass(frozen=True)
class Finding:
    """A claim of the paper (or a fact the workbook checks) and how this run's numbers answer it:
    ``estimate``, ``threshold``, ``interval`` in the metric's units (fractions, as results.json
    keeps them); ``side`` ``">"`` when the claim is estimate > threshold, ``"<"`` when below."""

    claim: str
    verdict: Verdict
    numbers: str = ""
    estimate: float | None = None
    threshold: float | None = None
    side: str = ">"
    interval: tuple[float, float] | None = None
    level: float | None = None

    def __post_init__(self) -> None:
        for name, value, allowed in (("verdict", self.verdict, VERDICTS), ("side", self.side, SIDES)):
            if value not in allowed:
                raise ValueError(f"{name}={value!r} is not allowed; choose one of {list(allowed)}")

    @property
    def holds(self) -> bool | None:
        """True (holds), False (fails), None (undecided, unchecked or a note)."""
        return {"holds": True, "fails": False}.get(self.verdict)

    def as_dict(self) -> dict[str, Any]:
        """Plain fields for a table or JSON (the interval as two columns)."""
        lo, hi = self.interval if self.interval else (None, None)
        values = (self.claim, self.verdict, self.numbers, self.estimate, self.threshold, self.side, lo, hi, self.level)
        return dict(zip(COLUMNS, values))


def finding(claim: str, holds: bool | None, numbers: str) -> Finding:
    """A check decided from its numbers alone (no interval): holds / fails, or unchecked (None)."""
    return Finding(claim, "unchecked" if holds is None else "holds" if holds else "fails", numbers)


def note(text: str) -> Finding:
    """A row that states numbers and checks nothing."""
    return Finding(text, "note")


def decide(
    claim: str,
    estimate: float,
    interval: tuple[float, float],
    threshold: float = 0.0,
    side: str = ">",
    numbers: str = "",
    level: float = 0.95,
) -> Finding:
    """The three-valued verdict of a claim on ``estimate`` from its ``level`` confidence interval
    against ``threshold`` (docs/findings.md, "The verdicts")."""
    lo, hi = float(interval[0]), float(interval[1])
    if not lo <= hi:
        raise ValueError(f"interval={interval!r} must be (low, high) with low <= high")
    claimed, opposite = (lo > threshold, hi < threshold) if side == ">" else (hi < threshold, lo > threshold)
    verdict = "holds" if claimed else "fails" if opposite else "undecided"
    return Finding(claim, verdict, numbers, float(estimate), float(threshold), side, (lo, hi), level)


def interval_text(f: Finding, scale: float = 100.0, unit: str = " points") -> str:
    """``+3.2 points, 95% CI [+1.1, +5.0]`` (fractions shown x ``scale``), or '' without an interval."""
    if f.interval is None or f.estimate is None:
        return ""
    lo, hi = f.interval
    level = f"{(f.level or 0.95) * 100:g}%"
    return f"{f.estimate * scale:+.1f}{unit}, {level} CI [{lo * scale:+.1f}, {hi * scale:+.1f}]"


def findings_markdown(rows: Iterable[Finding], intro: str = "") -> str:
    """Findings as a Markdown list: ``- <claim>: holds here (numbers; estimate, 95% CI [...])``."""
    lines = [intro] if intro else []
    for f in rows:
        if f.verdict == "note":
            lines.append(f"- {f.claim}")
            continue
        detail = "; ".join(part for part in (f.numbers, interval_text(f)) if part)
        lines.append(f"- {f.claim}: {WORDS[f.verdict]}" + (f" ({detail})" if detail else ""))
    return "\n".join(lines) + "\n"


def findings_frame(rows: Iterable[Finding]):
    """Findings as a pandas DataFrame (one row each, ``Finding.as_dict`` columns)."""
    import pandas as pd

    return pd.DataFrame([f.as_dict() for f in rows], columns=list(COLUMNS))
