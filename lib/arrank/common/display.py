"""One display convention for every table and figure (DEVELOPERS.md, "Notebooks"): metrics in
percent as in Tables 1-3 (results.json keeps fractions), α / β, ordered colour scales, readable ticks.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable, Mapping

import pandas as pd

SYMBOLS = {"alpha": "α", "beta": "β"}
# A qualitative palette for unordered variants (plotly's D3 without its blue, which the ordered
# scales use): one colour per variant.
QUALITATIVE = ("#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
TEMPLATE = "plotly_white"


def is_percent_metric(name: str) -> bool:
    """Whether a metric is shown in percent: cvr, ndcg, recall@k, prefixed or not (``train_recall@1``,
    ``beam_recall@5_gold``), and the decoding rates (``greedy_valid_rate``); not a learning rate."""
    return bool(re.fullmatch(r"(\w+_)?(cvr|ndcg|recall@\d+(_\w+)?)|\w+_(valid|top1|invalid)_rate(_\w+)?", str(name)))


def percent(value: Any) -> Any:
    """A fraction in percent (None and NaN stay as they are)."""
    return value if value is None or pd.isna(value) else float(value) * 100


def percent_text(values: Any, digits: int = 1, sep: str = " ") -> str:
    """A fraction, or a sequence of them, as percent numbers in text: 0.9756 -> '97.6';
    [0.5, 1.0] -> '50.0 100.0'; None -> 'n/a'."""
    if isinstance(values, (list, tuple)):
        return sep.join(percent_text(v, digits) for v in values)
    return "n/a" if values is None or pd.isna(values) else f"{float(values) * 100:.{digits}f}"


def percent_series(m: Mapping[str, Any], digits: int = 2) -> pd.Series:
    """A flat metrics dict for display: its percent metrics x100 under ``metric_title``
    names, the rest as they are."""
    shown = {}
    for k, v in m.items():
        if is_percent_metric(k):
            k, v = metric_title(k), round(percent(v), digits) if isinstance(v, (int, float)) else v
        shown[k] = v
    return pd.Series(shown, dtype=object)


def percent_table(frame: pd.DataFrame, digits: int = 2) -> pd.DataFrame:
    """A copy of ``frame`` with its percent metrics (``is_percent_metric``) x100, rounded to
    ``digits``, and their columns titled as ``metric_title`` says; other columns as they are."""
    out = frame.copy()
    cols = [c for c in out.columns if is_percent_metric(c)]
    out[cols] = out[cols].astype(float).mul(100).round(digits)
    return out.rename(columns={c: metric_title(c) for c in cols})


def metric_title(name: str) -> str:
    """The display name of a metric with its unit: ``CVR (%)``, ``nDCG (%)``, ``R@5 (%)``,
    ``training R@1 (%)``; other percent metrics as ``<name> (%)``; the rest as ``greek`` writes them."""
    if not (m := re.fullmatch(r"(train_)?(cvr|ndcg|recall@(\d+))", str(name))):
        return f"{name} (%)" if is_percent_metric(name) else greek(str(name))
    base = {"cvr": "CVR", "ndcg": "nDCG"}.get(m.group(2), f"R@{m.group(3)}")
    return ("training " if m.group(1) else "") + f"{base} (%)"


def greek(text: str) -> str:
    """``alpha`` and ``beta`` as α and β (whole words, and in ``alpha=2``)."""
    for word, symbol in SYMBOLS.items():
        text = re.sub(rf"\b{word}\b", symbol, text)
    return text


def number_text(value: Any) -> str:
    """2.0 -> '2', 0.5 -> '0.5', True -> 'true' (labels and run names agree on this)."""
    if isinstance(value, bool):
        return str(value).lower()
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def ordered_colors(values: Iterable[Any], scale: str = "Viridis", lo: float = 0.0, hi: float = 0.9) -> dict[Any, str]:
    """value -> colour of a sequential plotly colour scale, the distinct ``values`` sorted from ``lo`` to
    ``hi`` (one value: ``hi``; 0.9 keeps Viridis's largest readable on white)."""
    from plotly.colors import sample_colorscale

    distinct = sorted(set(values))
    n = len(distinct)
    where = [lo + (hi - lo) * i / (n - 1) for i in range(n)] if n > 1 else [hi]  # one value: hi
    return dict(zip(distinct, sample_colorscale(scale, where)))


def qualitative_colors(names: Iterable[str]) -> dict[str, str]:
    """name -> colour of ``QUALITATIVE``, in first-seen order (cycling when there are more)."""
    distinct = list(dict.fromkeys(names))
    return {n: QUALITATIVE[i % len(QUALITATIVE)] for i, n in enumerate(distinct)}


def scientific_axis(fig, axis: str = "yaxis") -> Any:
    """Ticks of ``axis`` (a layout key: yaxis, yaxis2, xaxis) in scientific notation: 2e-3, not
    0.002 or -0.000029."""
    fig.update_layout({axis: {"exponentformat": "e", "showexponent": "all", "tickformat": ".1e"}})
    return fig


def percent_axis(fig, axis: str = "yaxis", title: str = "R@k (%)", full: bool = True) -> Any:
    """``axis`` titled ``title``; with ``full`` its range 0-100 (with room for markers at 100)."""
    fig.update_layout({axis: {"title": title, **({"range": [0, 102]} if full else {})}})
    return fig


def style(fig, title: str | None = None) -> Any:
    """The workbook's figure style: white template, and the title when one is given (titles are
    written with α / β by their callers: ``greek`` would also change run names such as alpha=2)."""
    fig.update_layout(template=TEMPLATE, **({"title": title} if title is not None else {}))
    return fig


def subtitle(title: str, note: str) -> str:
    """A plotly title with a smaller second line (what the figure shows, in words)."""
    return f"{title}<br><sup>{note}</sup>"


def log_axis(fig, values: Iterable[float], axis: str = "yaxis") -> Any:
    """``axis`` on a log scale with labelled ticks at 1, 2, 5 x 10^k over the range of ``values``
    (plotly's default labels the minor ticks with bare digits, ``2 3 ... 9``, which read as the
    wrong numbers); labels as ``0.2``, ``1``, ``5000``."""
    if not (positive := [float(v) for v in values if v is not None and float(v) > 0]):
        return fig
    lo, hi = math.floor(math.log10(min(positive))), math.ceil(math.log10(max(positive)))
    ticks = [m * 10.0**e for e in range(lo, hi + 1) for m in (1, 2, 5)]
    ticks = [t for t in ticks if min(positive) / 2.5 <= t <= max(positive) * 2.5]
    fig.update_layout({axis: {"type": "log", "tickvals": ticks, "ticktext": [f"{t:g}" for t in ticks]}})
    return fig


def shown(value: Any, most: int = 80) -> str:
    """``repr(value)`` for an error message, cut to ``most`` characters with the full length said:
    a 10,000-character value is named, not echoed back whole."""
    text = repr(value)
    return text if len(text) <= most else f"{text[:most]}... ({len(text):,} characters)"
