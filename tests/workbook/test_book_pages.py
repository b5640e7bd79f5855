"""arrank.workbook.book.pages: the book's generated pages."""

from __future__ import annotations

import json

import plotly.graph_objects as go

from arrank.workbook.book import pages
from arrank.workbook.book.executed import PLOTLY_MIME


def _fig(title: str) -> dict:
    return json.loads(go.Figure(go.Scatter(x=[1], y=[2]), layout={"title": {"text": title}}).to_json())


def test_links_to_notebooks_not_in_the_book_become_text():
    text = "see [01](notebooks/01_de_capacity.ipynb) and [02 page](notebooks/02_rank_condition.ipynb)."
    assert pages.unlink_missing(text, ["02_rank_condition"]) == "see [01](notebooks/01_de_capacity.ipynb) and 02 page."
    assert pages.unlink_missing(text, []) == text


def _page(name: str, notebooks: dict, missing: list, table1: str = "", findings: str = "", run: str = "r") -> str:
    return pages.page(name, pages.fields(notebooks, missing, table1, findings, run) | {"paper": "arXiv:x"}, missing)


def test_index_lists_the_pages_and_what_is_missing():
    page = _page("landing.md", {"01_de_capacity": {"cells": []}}, ["05_train"])
    assert page.startswith("# Autoregressive Ranking") and "*Not in this book (no finished run): 05_train.*" in page
    assert "(arXiv:x)" in page and "{toctree}" in page and "{missing}" not in page
    assert (
        "```{toctree}\n:maxdepth: 1\n:caption: The notebooks, in paper order\n\nnotebooks/01_de_capacity\n```" in page
    )
    assert page.count("```{toctree}") == 2 and "results\nreproduction\nmeetings\nrunning" in page


def test_results_page_is_read_from_the_run():
    nb07 = {
        "cells": [
            {"cell_type": "markdown", "source": "# 07 · Baselines"},
            {
                "cell_type": "code",
                "source": "",
                "outputs": [
                    {"output_type": "display_data", "data": {PLOTLY_MIME: _fig("Figure 3 (a): R@k")}},
                    {"output_type": "display_data", "data": {PLOTLY_MIME: _fig("training loss")}},
                ],
            },
            {"cell_type": "markdown", "source": "## What to look for"},
            {
                "cell_type": "code",
                "source": "",
                "outputs": [
                    {
                        "output_type": "execute_result",
                        "data": {"text/markdown": "- DE recall grows with n: **holds here**"},
                    }
                ],
            },
        ]
    }
    page = _page(
        "results.md",
        {"07_de_ce_baselines": nb07},
        [],
        "| variant | CVR |\n|---|---|\n| NTP | 92.33 |",
        "| finding | holds |\n|---|---|\n| x | yes |",
        "run `workbook`",
    )
    assert "| NTP | 92.33 |" in page and "| x | yes |" in page and "run `workbook`" in page
    assert page.count("```{raw} html") == 1 and 'id="results-figure3-0"' in page  # Figure 3 only, not the loss
    assert "### 07 · Baselines" in page and "- DE recall grows with n: **holds here**" in page
    assert "[its page](notebooks/07_de_ce_baselines.ipynb)" in page
    assert "*No Figure 3 run.*" not in page
    empty = _page("results.md", {}, [])
    assert "*No Table 1 run.*" in empty and "*No Figure 3 run.*" in empty


def test_every_notebook_is_in_the_contents_and_the_results_and_a_missing_ones_links_are_text():
    """Two notebooks: both in the landing page's contents and on the results page, one with nothing
    printed under "What to look for"; the meetings page links only notebooks in the book."""
    nbs = {"01_de_capacity": {"cells": []}, "02_rank_condition": {"cells": []}}
    landing = _page("landing.md", nbs, ["03_wordnet_data"])
    assert "\n\nnotebooks/01_de_capacity\nnotebooks/02_rank_condition\n```" in landing
    results = _page("results.md", nbs, ["03_wordnet_data"])
    assert "### 01_de_capacity\n" in results and "### 02_rank_condition\n" in results
    assert results.count("*(nothing printed)*") == 2
    meetings = _page("meetings.md", nbs, ["03_wordnet_data"])
    assert "| 03, [04](notebooks/04_esci_data.ipynb) |" in meetings
    assert set(pages.PAGES.values()) == {"index.md", "results.md", "meetings.md", "running.md"}


def test_table1_shows_notebook_08s_figures_of_r_at_k_per_variant_only():
    def out(title: str) -> dict:
        return {"output_type": "display_data", "data": {PLOTLY_MIME: _fig(title)}}

    nb08 = {"cells": [{"cell_type": "code", "source": "", "outputs": [out("R@k per variant, k=10"), out("R@k")]}]}
    page = _page("results.md", {"08_results": nb08}, [], "| a |")
    assert page.count("```{raw} html") == 1 and 'id="results-table1-0"' in page
