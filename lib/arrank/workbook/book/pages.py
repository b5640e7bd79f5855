"""The book's pages (MyST Markdown): the hand-written ones in ``site/`` with their generated parts
filled in: the landing page's table of contents, and the results page's tables, figures and
findings, written from the run's outputs (results.json files, the executed notebooks' printed
findings and figures), never by hand."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from arrank.workbook.book.executed import PLOTLY_MIME, first_heading, look_for_markdown, plotly_fragment

SITE_SOURCES = Path(__file__).parent / "site"
PAGES = {"landing.md": "index.md", "results.md": "results.md", "meetings.md": "meetings.md", "running.md": "running.md"}


def page(name: str, fields: dict[str, str], missing: list[str]) -> str:
    """The page ``site/<name>`` with each ``{field}`` of ``fields`` filled in (other braces, as in
    MyST's ``{toctree}``, kept) and its links to notebooks not in the book made text."""
    text = re.sub(r"\{(\w+)\}", lambda m: fields.get(m[1], m[0]), (SITE_SOURCES / name).read_text())
    return unlink_missing(text, missing)


def unlink_missing(text: str, missing: list[str]) -> str:
    """A hand-written page's Markdown with each link to a notebook page that is not in the book
    (``[01](notebooks/01_de_capacity.ipynb)`` for a missing 01) reduced to its text."""
    for stem in missing:
        text = re.sub(rf"\[([^\]]*)\]\(notebooks/{re.escape(stem)}\.ipynb\)", r"\1", text)
    return text


def _raw_figures(nb: dict[str, Any], words: str, name: str) -> str:
    """The plotly figures a notebook drew whose title contains ``words``, in order, each as a MyST
    raw-HTML block (div ids ``name-0``, ...)."""
    figures = (out.get("data", {}).get(PLOTLY_MIME) for cell in nb["cells"] for out in cell.get("outputs", []))
    found = enumerate(fig for fig in figures if fig and words in fig.get("layout", {}).get("title", {}).get("text", ""))
    return "".join(f"```{{raw}} html\n{plotly_fragment(fig, f'{name}-{i}')}\n```\n\n" for i, fig in found)


def fields(notebooks: dict[str, dict[str, Any]], missing: list[str], table1: str, findings: str, run: str) -> dict:
    """What the landing and results pages are filled with: the notebook pages in the table of
    contents and the notebooks ``missing`` (no run); Table 1 (``table1``: Markdown, from the
    workbook sweep's results.json files) and notebook 08's R@k figures, Figure 3 (the figures
    notebook 07 drew), the findings table ``make workbook`` prints (``findings``), and each
    notebook's "What to look for" findings as its run printed them; ``run`` names the run."""
    empty = {"cells": []}
    shows = [
        f"### {first_heading(nb) or stem}\n\nFrom [its page](notebooks/{stem}.ipynb), "
        f'"What to look for":\n\n{look_for_markdown(nb).strip() or "*(nothing printed)*"}\n'
        for stem, nb in notebooks.items()
    ]
    return {
        "missing": f"*Not in this book (no finished run): {', '.join(missing)}.*" if missing else "",
        "notebooks": "\n".join(f"notebooks/{stem}" for stem in notebooks),
        "run": run,
        "table1": f"{table1.strip() or '*No Table 1 run.*'}\n\n"
        + _raw_figures(notebooks.get("08_results", empty), "R@k per variant", "results-table1"),
        "figure3": _raw_figures(notebooks.get("07_de_ce_baselines", empty), "Figure 3", "results-figure3")
        or "*No Figure 3 run.*",
        "findings": findings.strip(),
        "shows": "\n".join(shows),
    }
