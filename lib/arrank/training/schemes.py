"""The item-weight schemes lambda(r) of section 4.1 (arXiv 2601.05588), registered in one place.

A scheme is a function ``weight(r, n_q, **params) -> float``, the names of its parameters, its
label in the paper's tables and its place in their row order. ``stoical.item_weight``, the notebook
parameter ``scheme``, the tables' labels (``loss_label``) and row order read the registry: a new
scheme is one function and one :func:`register` call (and its test)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from arrank.common import params
from arrank.common.display import number_text


@dataclass(frozen=True)
class Scheme:
    """lambda(r) and how the workbook names it. ``label`` formats the table row from the
    scheme's parameters (numbers as ``number_text`` shows them)."""

    name: str
    weight: Callable[..., float]
    params: tuple[str, ...]
    label: Callable[[dict[str, str]], str]


SCHEMES: dict[str, Scheme] = {}


def register(scheme: Scheme) -> Scheme:
    """Add a scheme to the registry (its name must be new)."""
    if scheme.name in SCHEMES:
        raise ValueError(f"a scheme named {scheme.name!r} is registered already")
    SCHEMES[scheme.name] = scheme
    params.register_name("scheme", scheme.name)  # the notebook parameter ``scheme`` accepts it
    return scheme


def _check_alpha(alpha: Any) -> float:
    if alpha is None:
        raise ValueError("the fractional scheme lambda(r) = 1/r**alpha needs alpha (a number >= 0)")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or math.isnan(alpha) or alpha < 0:
        raise ValueError(f"alpha={alpha!r} must be a number >= 0 for lambda(r) = 1/r**alpha")
    return float(alpha)


# I_{r=1}: the top-1 items only, next-token prediction (the NTP baseline)
register(Scheme("indicator", lambda r, n_q: 1.0 if r == 1 else 0.0, (), lambda p: "NTP"))
# 1 / r^alpha
register(
    Scheme(
        "fractional",
        lambda r, n_q, alpha=None: 1.0 / r ** _check_alpha(alpha),
        ("alpha",),
        lambda p: f"Fractional α={p['alpha']}",
    )
)
# (n_q - r + 1) / n_q
register(Scheme("stepwise", lambda r, n_q: (n_q - r + 1) / n_q, (), lambda p: "Stepwise"))


def scheme(name: str) -> Scheme:
    """The registered scheme ``name``, or a clear error listing the registered ones."""
    if name not in SCHEMES:
        raise ValueError(f"unknown item-weight scheme {name!r}; allowed: {', '.join(SCHEMES)}")
    return SCHEMES[name]


def loss_label(params: dict[str, Any]) -> str:
    """The paper's name of a 05_train loss variant (eq. 3: item weight λ(r), token targets y), or
    ``Zero-shot`` for a run of 0 steps: NTP, Fractional α=a, Stepwise, Trie β=b, Combined α=a, β=b."""
    if params.get("steps") == 0:
        return "Zero-shot"  # nothing trained: the model as loaded (the item weights play no part)
    name, trie = params.get("scheme"), params.get("targets") == "trie"
    b = number_text(params.get("beta"))
    if name in SCHEMES:
        item = SCHEMES[name].label({p: number_text(params.get(p)) for p in SCHEMES[name].params})
    else:
        item = str(name)
    if not trie:
        return item
    if name == "indicator":
        return f"Trie β={b}"
    if name == "fractional" and params.get("combined"):
        return f"Combined α={number_text(params.get('alpha'))}, β={b}"
    return f"{item} + trie β={b}" + (" (combined)" if params.get("combined") else "")


def scheme_order(name: Any) -> int:
    """The place of a scheme in the paper's row order (registration order; unknown last)."""
    return list(SCHEMES).index(name) if name in SCHEMES else len(SCHEMES)
