"""The book's generated pages (MyST Markdown): the landing page's table of contents and the results
page, written from the run's outputs (results.json files, the executed notebooks' printed
findings and figures), never by hand."""

from __future__ import annotations

import re
from typing import Any

from arrank.workbook.book.executed import PLOTLY_MIME, first_heading, look_for_markdown, plotly_fragment


def index_page(landing: str, pages: list[str], missing: list[str]) -> str:
    """The landing text, the list of notebook pages, and the table of contents Sphinx follows.
    ``pages``: document names (``notebooks/01_de_capacity``); ``missing``: notebooks without a run."""
    lines = [landing.rstrip(), ""]
    if missing:
        lines += [f"*Not in this book (no finished run): {', '.join(missing)}.*", ""]
    lines += _toctree("The notebooks, in paper order", ["\n".join(pages)])
    lines += _toctree("The group", ["results", "reproduction", "meetings", "running"])
    return "\n".join(lines)


def _toctree(caption: str, entries: list[str]) -> list[str]:
    """The lines of a MyST ``toctree`` directive listing ``entries`` under ``caption``."""
    return ["```{toctree}", ":maxdepth: 1", f":caption: {caption}", "", *entries, "```", ""]


def unlink_missing(text: str, missing: list[str]) -> str:
    """A hand-written page's Markdown with each link to a notebook page that is not in the book
    (``[01](notebooks/01_de_capacity.ipynb)`` for a missing 01) reduced to its text."""
    for stem in missing:
        text = re.sub(rf"\[([^\]]*)\]\(notebooks/{re.escape(stem)}\.ipynb\)", r"\1", text)
    return text


def figures_titled(nb: dict[str, Any], words: str) -> list[dict[str, Any]]:
    """The plotly figures a notebook drew whose title contains ``words``, in order."""
    found = []
    for cell in nb["cells"]:
        for output in cell.get("outputs", []) if cell["cell_type"] == "code" else []:
            fig = output.get("data", {}).get(PLOTLY_MIME)
            title = (fig or {}).get("layout", {}).get("title", {})
            if fig and words in (title.get("text", "") if isinstance(title, dict) else str(title)):
                found.append(fig)
    return found


def _raw_figure(fig: dict[str, Any], div_id: str) -> str:
    """A figure as a MyST raw-HTML block."""
    return "```{raw} html\n" + plotly_fragment(fig, div_id) + "\n```\n"


def results_page(notebooks: dict[str, dict[str, Any]], table1: str, findings: str, run_label: str) -> str:
    """The results page: Table 1 (``table1``: Markdown, from the workbook sweep's results.json
    files), Figure 3 (the figures notebook 07 drew), the findings table ``make workbook`` prints
    (``findings``) and each notebook's "What to look for" findings as its run printed them."""
    out = [
        "# The results of this run",
        "",
        f"Everything on this page is read from the workbook's outputs ({run_label}): the run's "
        "`results.json` files and what the executed notebooks printed and drew. CVR, nDCG and R@k "
        "are in percent; CVR is better lower, the others higher.",
        "",
        "## Table 1 at CPU scale (WordNet, held-out queries)",
        "",
        table1.strip() or "*No Table 1 run.*",
        "",
    ]
    t1 = figures_titled(notebooks.get("08_results", {"cells": []}), "R@k per variant")
    out += [_raw_figure(fig, f"results-table1-{i}") for i, fig in enumerate(t1)]
    out += ["## Figure 3: ARR beside dual and cross encoders", ""]
    f3 = figures_titled(notebooks.get("07_de_ce_baselines", {"cells": []}), "Figure 3")
    out += [_raw_figure(fig, f"results-figure3-{i}") for i, fig in enumerate(f3)] or ["*No Figure 3 run.*", ""]
    out += [
        "## The paper's findings, checked at CPU scale",
        "",
        findings.strip(),
        "",
        "## What each notebook's run shows",
        "",
    ]
    for stem, nb in notebooks.items():
        text = look_for_markdown(nb).strip()
        out += [
            f"### {first_heading(nb) or stem}",
            "",
            f'From [its page](notebooks/{stem}.ipynb), "What to look for":',
            "",
            text or "*(nothing printed)*",
            "",
        ]
    return "\n".join(out)
