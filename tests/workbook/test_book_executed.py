"""arrank.workbook.book.executed: an executed notebook made ready for a static page."""

from __future__ import annotations

import json

import plotly.graph_objects as go

from arrank.workbook.book import executed


def _bar_state(desc: str, value: float, total: float, right: str) -> dict:
    """The widget state tqdm.notebook leaves in a papermill-executed notebook (one progress bar)."""
    return {
        "box": {"model_name": "HBoxModel", "state": {"children": ["IPY_MODEL_l", "IPY_MODEL_p", "IPY_MODEL_r"]}},
        "l": {"model_name": "HTMLModel", "state": {"value": desc.replace(" ", "\u2007")}},
        "p": {"model_name": "FloatProgressModel", "state": {"value": value, "max": total}},
        "r": {"model_name": "HTMLModel", "state": {"value": right.replace(" ", "\u2007")}},
    }


def _nb(outputs: list[dict], widgets: dict | None = None) -> dict:
    meta = {"widgets": {executed.WIDGET_STATE_MIME: {"state": widgets, "version_major": 2}}} if widgets else {}
    return {
        "cells": [
            {"cell_type": "markdown", "source": ["# 09 · A title\n", "text"]},
            {"cell_type": "code", "source": "x", "outputs": outputs},
        ],
        "metadata": meta,
    }


def test_plotly_json_gains_an_html_fragment_without_the_library():
    fig = json.loads(go.Figure(go.Scatter(x=[1, 2], y=[3, 4]), layout={"title": {"text": "t"}}).to_json())
    out = executed.for_the_book(_nb([{"output_type": "display_data", "data": {executed.PLOTLY_MIME: fig}}]))
    data = out["cells"][1]["outputs"][0]["data"]
    html = data["text/html"]
    assert data[executed.PLOTLY_MIME] == fig
    assert 'id="plotly-figure-1"' in html and "Plotly.newPlot" in html and '"y":[3,4]' in html
    assert len(html) < 50_000 and "<script src" not in html and "MathJax" not in html  # no plotly.js, no CDN tag


def test_a_progress_widget_becomes_its_final_line():
    state = _bar_state("counts: 100%", 15.0, 15.0, " 15/15 [00:02&lt;00:00, 16.48it/s]")
    view = {
        "output_type": "display_data",
        "data": {executed.WIDGET_VIEW_MIME: {"model_id": "box"}, "text/plain": "counts:   0%|   | 0/15"},
    }
    out = executed.for_the_book(_nb([view], state))
    assert out["cells"][1]["outputs"] == [
        {"output_type": "stream", "name": "stdout", "text": "counts: 100%|██████████| 15/15 [00:02<00:00, 16.48it/s]\n"}
    ]
    assert "widgets" not in out["metadata"]  # no widget state: MyST-NB adds no widget JavaScript
    half = executed.progress_text("box", _bar_state("d: 50%", 2.0, 4.0, " 2/4"))
    assert half == "d: 50%|█████     | 2/4"


def test_other_widgets_are_left_out_and_the_input_is_untouched():
    nb = _nb([{"output_type": "display_data", "data": {executed.WIDGET_VIEW_MIME: {"model_id": "nope"}}}], {})
    before = json.dumps(nb)
    assert executed.for_the_book(nb)["cells"][1]["outputs"] == []
    assert json.dumps(nb) == before


def test_stderr_progress_keeps_its_last_redraw_and_other_stderr_stays():
    bar = "run:   0%|   | 0/4\rrun:  50%|█████     | 2/4\rrun: 100%|██████████| 4/4\n"
    warning = "UserWarning: something real\n"
    out = executed.for_the_book(
        _nb(
            [
                {"output_type": "stream", "name": "stderr", "text": bar},
                {"output_type": "stream", "name": "stderr", "text": warning},
            ]
        )
    )
    assert out["cells"][1]["outputs"][0] == {
        "output_type": "stream",
        "name": "stdout",
        "text": "run: 100%|██████████| 4/4\n",
    }
    assert out["cells"][1]["outputs"][1]["text"] == warning and out["cells"][1]["outputs"][1]["name"] == "stderr"
    assert executed.progress_lines(warning) is None and executed.progress_lines("50%| no carriage return\n") is None


def test_look_for_and_title():
    nb = {
        "cells": [
            {"cell_type": "markdown", "source": "# 07 · Baselines\nmore"},
            {"cell_type": "markdown", "source": "## What to look for\nthe paper says"},
            {
                "cell_type": "code",
                "source": "",
                "outputs": [
                    {"output_type": "execute_result", "data": {"text/markdown": ["- a: **holds here**\n", "- b"]}}
                ],
            },
            {"cell_type": "markdown", "source": "## Exercises"},
        ]
    }
    assert executed.look_for_markdown(nb) == "- a: **holds here**\n- b"
    assert executed.first_heading(nb) == "07 · Baselines"
    assert executed.look_for_markdown({"cells": nb["cells"][:1]}) == ""


def test_the_download_link_goes_under_the_title_of_the_first_markdown_cell():
    nb = executed.with_download_link(_nb([]), "09_a.ipynb")
    assert nb["cells"][0]["source"] == (
        '# 09 · A title\n\n<a class="notebook-download" href="09_a.ipynb" download>'
        "Download this notebook (09_a.ipynb, as it ran)</a>\n\ntext"
    )
    assert nb["cells"][1]["source"] == "x"  # code cells untouched
    untitled = {"cells": [{"cell_type": "code", "source": "x"}, {"cell_type": "markdown", "source": "no title"}]}
    assert executed.with_download_link(untitled, "n.ipynb")["cells"][1]["source"].startswith("\n<a class=")


def test_only_a_horizontal_box_of_a_bar_is_a_progress_bar_and_mixed_stderr_or_results_stay():
    """A VBox of the same three widgets is not tqdm's bar; stderr of a bar and a warning line stays as
    it was (red, every redraw); an execute_result (no stream text) is kept unchanged."""
    state = _bar_state("d: 50%", 2.0, 4.0, " 2/4")
    state["box"]["model_name"] = "VBoxModel"
    assert executed.progress_text("box", state) is None
    mixed = {"output_type": "stream", "name": "stderr", "text": "UserWarning: x\nrun:  50%|█\rrun: 100%|██\n"}
    result = {"output_type": "execute_result", "data": {"text/plain": "3"}, "execution_count": 1}
    assert executed.for_the_book(_nb([mixed, result]))["cells"][1]["outputs"] == [mixed, result]


def test_the_findings_follow_the_look_for_heading_not_a_mention_and_the_title_is_the_first_h1():
    nb = {
        "cells": [
            {"cell_type": "markdown", "source": "## Setup\nSee What to look for at the end."},
            {"cell_type": "code", "source": "", "outputs": [{"data": {"text/markdown": "not the findings"}}]},
            {"cell_type": "markdown", "source": "# 07 · Baselines"},
            {"cell_type": "markdown", "source": "## What to look for"},
            {"cell_type": "code", "source": "", "outputs": [{"data": {"text/markdown": m}} for m in ("a\n", "b")]},
        ]
    }
    assert executed.look_for_markdown(nb) == "a\nb" and executed.first_heading(nb) == "07 · Baselines"
