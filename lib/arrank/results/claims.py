"""The paper's claims as data (arXiv 2601.05588, sections 5.2-5.3; docs/findings.md): a :class:`Claim`
is one comparison a claim is checked by (two sides, a metric, a threshold and a direction), each table
lists its claims as a tuple of them (``table1.COMPARISONS``, ``figure3.COMPARISONS``,
``curve.COMPARISONS``), and one function decides them.

``evaluate`` decides one comparison on per-query data: the estimate and its 95% interval from one
paired bootstrap over queries (seeds in quadrature, ``statistics.compare``), with the p-value that
interval implies, as a ``common.findings.Finding``. ``decide_claim`` decides a claim of the paper from
its comparisons, their sides resolved on a table's roles ("each trie variant": one comparison per trie
variant): one comparison is the finding, several are its parts (``statistics.combine``); without
per-query data for every variant, the point verdict of the means a table gives.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Callable, Mapping, Sequence

import pandas as pd

from arrank.common.findings import SIDES, Finding, decide, finding
from arrank.results import statistics as S

POINT_ESTIMATE = "point estimates, no interval (runs without per-query data)"
_ROUND = 1e-9  # a point estimate this close to the threshold of an inclusive claim is on it
Member = tuple[str, tuple[str, ...]]  # a side in words and the variant labels it pools
Means = Callable[[tuple[str, ...], tuple[str, ...]], float]  # (labels, metrics) -> the point mean


def recall(*ks: int) -> tuple[str, ...]:
    """The per-query columns of R@k at ``ks``: ``recall(2, 3)`` -> ``("r2", "r3")``."""
    return tuple(f"r{k}" for k in ks)


def metric_name(metric: str) -> str:
    """A metric in words: ``cvr`` -> ``CVR``, ``ndcg`` -> ``nDCG``, ``r2`` or ``recall@2`` -> ``R@2``."""
    return {"cvr": "CVR", "ndcg": "nDCG"}.get(metric, "R@" + metric.removeprefix("recall@").removeprefix("r"))


@dataclass(frozen=True)
class Claim:
    """One comparison a claim of the paper is checked by: the mean over queries of ``a - weight * b``,
    each query's value the mean of its ``metrics`` (per-query columns: ``cvr``, ``ndcg``, ``r1``..),
    claimed on ``side`` (``">"`` or ``"<"``) of ``threshold`` (a fraction). ``a`` and ``b`` are a variant
    label, several pooled, or a role the table resolves (``resolve``). ``key`` names the paper's claim
    the comparison belongs to and ``claim`` words it (the comparisons of one key are its parts);
    ``name`` words the comparison (``{a}``, ``{b}``: the sides, ``{quantity}``: ``quantity``, ``{points}``:
    the threshold's size in points).
    ``inclusive``: a point estimate on the threshold holds ("at most", "within"); an interval that
    touches it never decides."""

    key: str
    claim: str
    name: str
    a: str | tuple[str, ...]
    b: str | tuple[str, ...]
    metrics: tuple[str, ...]
    threshold: float = 0.0
    side: str = ">"
    weight: float = 1.0
    inclusive: bool = False

    def __post_init__(self) -> None:
        if self.side not in SIDES:
            raise ValueError(f"side={self.side!r} of the claim {self.name!r} is not allowed: one of {list(SIDES)}")

    def quantity(self, metrics: Sequence[str] | None = None) -> str:
        """What is compared, in words: ``CVR``, ``R@1``, ``mean R@2..R@5`` (over ``metrics``, the ones a
        table has of the claim's; a claim of several metrics keeps "mean" with one)."""
        shown = list(metrics or self.metrics)
        if len(self.metrics) == 1:
            return metric_name(shown[0])
        return "mean " + "..".join(dict.fromkeys(metric_name(m) for m in (shown[0], shown[-1])))


def evaluate(claim: Claim, per_query: pd.DataFrame, n_resamples: int = S.N_RESAMPLES) -> Finding:
    """The finding of one comparison on per-query data (``arrank.workbook.report.per_query_frame``'s
    rows; ``a`` and ``b`` variant labels): the mean per-query difference and its 95% interval
    from one bootstrap (``statistics.compare``), decided against the threshold (``findings.decide``)
    with the p-value the interval implies; ``numbers``: how the interval was made, and the
    two sides' means over their queries in ``means``."""
    a, b = (S.variant_values(per_query, side, claim.metrics) for side in (claim.a, claim.b))
    c = S.compare(a, b, claim.weight, n_resamples=n_resamples)
    p = c.p_value(claim.threshold)
    found = decide(claim.claim, c.estimate, c.interval, claim.threshold, claim.side, c.text(), c.level, p)
    return replace(found, means=(float(a.by_query.mean()), float(b.by_query.mean())))


def members(side: str | tuple[str, ...], roles: Mapping[str, Sequence[Member]]) -> list[Member]:
    """The members of a claim's side: a role's (``roles``), or the side itself, a variant label (or
    several pooled)."""
    if isinstance(side, str) and side in roles:
        return list(roles[side])
    return [(side, (side,))] if isinstance(side, str) else [(" + ".join(side), tuple(side))]


def resolve(claims: Sequence[Claim], roles: Mapping[str, Sequence[Member]], columns: Sequence[str]) -> list[Claim]:
    """The comparisons of ``claims`` with their sides resolved: a side that names a role of ``roles``
    is each of its members (both sides roles: member by member; a role of no member: no comparison),
    any other side is a variant label; ``metrics`` cut to the ``columns`` at hand (none: no
    comparison) and ``name`` filled in. Consecutive claims of the same two sides come variant by
    variant."""
    out = []
    for _, group in itertools.groupby(claims, key=lambda c: (c.a, c.b)):
        group = list(group)
        a, b = (members(side, roles) for side in (group[0].a, group[0].b))
        if len(a) > 1 and len(b) > 1 and len(a) != len(b):
            raise ValueError(f"the sides of {group[0].name!r} are {len(a)} and {len(b)} variants: one, or as many")
        a, b = (a * len(b) if len(a) == 1 else a), (b * len(a) if len(b) == 1 else b)
        for ((a_name, a_labels), (b_name, b_labels)), c in itertools.product(zip(a, b), group):
            if metrics := tuple(m for m in c.metrics if m in columns):
                name = c.name.format(a=a_name, b=b_name, quantity=c.quantity(metrics), points=abs(c.threshold) * 100)
                out.append(replace(c, name=name, a=a_labels, b=b_labels, metrics=metrics))
    return out


def point_holds(claim: Claim, means: Means) -> bool:
    """Whether the point estimate ``means(a) - weight * means(b)`` lies on the claim's side of its
    threshold (on it, for an ``inclusive`` claim)."""
    gap = means(claim.a, claim.metrics) - claim.weight * means(claim.b, claim.metrics) - claim.threshold
    gap = -gap if claim.side == "<" else gap
    return gap >= -_ROUND if claim.inclusive else gap > 0


def point_finding(claim: str, holds: bool | None, numbers: str) -> Finding:
    """The fallback for runs without per-query data: the point verdict of ``findings.finding``, its
    numbers labelled as point estimates (``POINT_ESTIMATE``)."""
    return finding(claim, holds, f"{numbers}; {POINT_ESTIMATE}" if numbers else POINT_ESTIMATE)


def decide_claim(
    parts: Sequence[Claim],
    per_query: pd.DataFrame | None,
    numbers: str = "",
    means: Means | None = None,
    to_decide: bool = False,
) -> Finding | None:
    """The finding of the claim of the paper that ``parts`` (resolved comparisons, ``resolve``) check:
    with per-query rows of every variant, one comparison's finding (``evaluate``) under the claim's
    words, ``numbers`` before it (``to_decide``: an undecided paired one also names the budget that
    would decide it, ``statistics.budget_to_decide``), or several decided together
    (``statistics.combine``); else the point verdict of ``means`` (every part on its side), its
    numbers labelled as point estimates; None without ``means`` or without a part."""
    parts = [replace(c, a=members(c.a, {})[0][1], b=members(c.b, {})[0][1]) for c in parts]  # labels as tuples
    labels = {v for c in parts for v in (*c.a, *c.b)}
    if not parts or not S.has_variants(per_query, *labels):
        if means is None or not parts:
            return None
        return point_finding(parts[0].claim, all(point_holds(c, means) for c in parts), numbers)
    if len(parts) > 1:
        return S.combine(parts[0].claim, [(c.name, evaluate(c, per_query)) for c in parts], numbers)
    c = parts[0]
    one = evaluate(c, per_query)
    numbers = "; ".join(p for p in (numbers, one.numbers) if p)
    if to_decide and one.verdict == "undecided" and c.weight == 1.0:  # at today's effect and spreads
        numbers += f"; to decide: {S.budget_to_decide(per_query, c.a, c.b, c.metrics, c.threshold).text()}"
    return replace(one, numbers=numbers)
