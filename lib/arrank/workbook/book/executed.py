"""An executed notebook made ready for a static page, without executing anything.

papermill keeps a plotly figure only as ``application/vnd.plotly.v1+json``, which static site
tools drop; a progress bar is an ipywidget (its final state in the notebook's metadata) or text
with carriage returns on stderr. For the book each figure gains a ``text/html`` fragment that
draws it with the one ``plotly.min.js`` the site loads in its head (no library inside the page),
and each progress bar becomes the one line of text it ended as.
"""

from __future__ import annotations

import copy
import html
import itertools
import re
from typing import Any

from tqdm.std import Bar

PLOTLY_MIME = "application/vnd.plotly.v1+json"
WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE_MIME = "application/vnd.jupyter.widget-state+json"
LOOK_FOR = "What to look for"
TQDM_BAR = ["HTMLModel", "FloatProgressModel", "HTMLModel"]  # the widgets of a tqdm notebook bar


def _text(value: Any) -> str:
    """A notebook string field, which nbformat stores as a string or a list of lines."""
    return value if isinstance(value, str) else "".join(value)


def plotly_fragment(figure: dict[str, Any], div_id: str) -> str:
    """An HTML ``<div>`` + ``<script>`` drawing ``figure`` (plotly's JSON) with a page-level
    ``Plotly`` object: no plotly.js, no MathJax tag, no request."""
    import plotly.io as pio

    return pio.to_html(
        figure, config={"responsive": True}, include_plotlyjs=False, full_html=False, div_id=div_id, validate=False
    )


def progress_text(model_id: str, state: dict[str, Any]) -> str | None:
    """The line a tqdm notebook bar ended as (``desc: 100%|██████████| 15/15 [00:02<00:00]``), from
    the widget state papermill saved; None when the model is not such a bar."""
    box = state.get(model_id, {})
    parts = [state.get(c.removeprefix("IPY_MODEL_"), {}) for c in box.get("state", {}).get("children", [])]
    if box.get("model_name") != "HBoxModel" or [p.get("model_name") for p in parts] != TQDM_BAR:
        return None
    left, bar, right = (p["state"] for p in parts)
    done = Bar(min(1.0, bar.get("value", 0) / bar["max"] if bar.get("max") else 0.0))  # tqdm's own 10-cell bar
    text = f"{html.unescape(left.get('value', ''))}|{done}|{html.unescape(right.get('value', ''))}"
    return text.replace("\u2007", " ")


def progress_lines(text: str) -> str | None:
    """Text that is progress bars only (tqdm's ``NN%|...|`` lines redrawn with ``\\r``) as a terminal
    shows it: of each line's ``\\r``-separated rewrites, the last one; None for any other text."""
    shown = "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n"))
    lines = [ln for ln in shown.split("\n") if ln.strip()]
    return shown if "\r" in text and lines and all(re.search(r"\d+%\|", ln) for ln in lines) else None


def _output(output: dict[str, Any], widgets: dict[str, Any], n: int) -> dict[str, Any] | None:
    """One output as the book shows it, or None to leave it out."""
    data = output.get("data", {})
    if PLOTLY_MIME in data:
        fragment = plotly_fragment(data[PLOTLY_MIME], f"plotly-figure-{n}")
        return {**output, "data": {"text/html": fragment, PLOTLY_MIME: data[PLOTLY_MIME]}}
    if WIDGET_VIEW_MIME in data:
        text = progress_text(data[WIDGET_VIEW_MIME].get("model_id", ""), widgets)
        return None if text is None else {"output_type": "stream", "name": "stdout", "text": text + "\n"}
    if output.get("name") == "stderr" and (shown := progress_lines(_text(output["text"]))) is not None:
        return {"output_type": "stream", "name": "stdout", "text": shown}
    return output


def for_the_book(nb: dict[str, Any]) -> dict[str, Any]:
    """A copy of an executed notebook (nbformat JSON as a dict) ready for a static page: plotly
    figures with an HTML fragment beside their JSON, progress bars as their final line of text,
    widgets that are not progress bars left out, no widget state (no widget JavaScript)."""
    out = copy.deepcopy(nb)
    widgets = out.get("metadata", {}).pop("widgets", {}).get(WIDGET_STATE_MIME, {}).get("state", {})
    n = itertools.count(1)  # each code output's number, for its figure's div id
    for cell in out["cells"]:
        if cell["cell_type"] == "code":
            shown = (_output(output, widgets, next(n)) for output in cell.get("outputs", []))
            cell["outputs"] = [new for new in shown if new is not None]
    return out


DOWNLOAD_LINK = '<a class="notebook-download" href="{name}" download>Download this notebook ({name}, as it ran)</a>'


def with_download_link(nb: dict[str, Any], name: str) -> dict[str, Any]:
    """``nb`` (not copied) with a link to ``name``, the notebook file the book writes beside its page,
    under the title of its first Markdown cell (raw HTML: a Markdown link to an ``.ipynb`` would be
    read as a link to the page itself)."""
    cell = next((c for c in nb["cells"] if c["cell_type"] == "markdown"), None)
    if cell is not None:
        lines = _text(cell["source"]).split("\n")
        at = next((i + 1 for i, line in enumerate(lines) if line.startswith("# ")), 0)
        cell["source"] = "\n".join([*lines[:at], "", DOWNLOAD_LINK.format(name=name), "", *lines[at:]])
    return nb


def is_look_for_heading(cell: dict[str, Any]) -> bool:
    """A Markdown cell headed "What to look for" (the findings cell of a notebook follows it)."""
    return cell["cell_type"] == "markdown" and any(
        line.startswith("#") and LOOK_FOR in line for line in _text(cell["source"]).splitlines()
    )


def look_for_markdown(nb: dict[str, Any]) -> str:
    """The findings a notebook prints under its "What to look for" heading (the Markdown output of
    the code cell after that Markdown cell); empty when the notebook has none."""
    after = next((cell for before, cell in zip(nb["cells"], nb["cells"][1:]) if is_look_for_heading(before)), {})
    outputs = after.get("outputs", [])
    return "".join(_text(o["data"]["text/markdown"]) for o in outputs if "text/markdown" in o.get("data", {}))


def first_heading(nb: dict[str, Any]) -> str:
    """The title of a notebook: its first Markdown heading, without the ``#``."""
    lines = (line for c in nb["cells"] if c["cell_type"] == "markdown" for line in _text(c["source"]).splitlines())
    return next((line[2:].strip() for line in lines if line.startswith("# ")), "")
