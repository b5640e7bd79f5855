"""The reading-group book built from a tiny executed workbook and opened in headless Chromium
(Debian's chromium driven by playwright): every page loads with no JavaScript error and no request
outside the site, every plotly figure draws its SVG, MathJax typesets, every internal link
resolves, the exercises' answers stay collapsed until opened."""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from arrank.common import paths
from arrank.results import paper
from arrank.workbook import run
from arrank.workbook.book import build

pytestmark = pytest.mark.slow  # runs a notebook and builds the book in a browser

TINY_BOOK = {  # the smallest parameters tests/test_notebooks.py runs it with (one notebook keeps make test short)
    "01_de_capacity": {"k_max_exact": 4, "mc_queries": 3000, "k_max_bound": 100},
}


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def tiny_book(tmp_path_factory):
    """Notebook 01 executed tiny under a temporary outputs/ as run ``workbook``, then the book."""
    root = tmp_path_factory.mktemp("book")
    before = paths.OUTPUTS
    paths.OUTPUTS = root / "outputs"
    paths.OUTPUTS.mkdir()
    try:
        for stem, params in TINY_BOOK.items():
            run.run_notebook(stem, {**params, "run_name": "workbook"}, progress=False)
        index = build.build_book("workbook", dest=root / "book", run_missing=False)
        yield index
    finally:
        paths.OUTPUTS = before


def test_build_renders_the_executed_notebooks_without_executing(tiny_book):
    site = tiny_book.parent
    assert tiny_book.name == "index.html" and (site.parent / "book.zip").stat().st_size > 100_000
    assert sorted(p.name for p in site.parent.iterdir()) == ["book.zip", "site", "src"]
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html") if "_static" not in p.parts)
    assert {
        "index.html",
        "results.html",
        "reproduction.html",
        "meetings.html",
        "running.html",
        "notebooks/01_de_capacity.html",
    } <= set(pages)
    assert not (site / "notebooks" / "05_train.html").exists()  # no run: not in the book, not executed
    page = (site / "notebooks" / "01_de_capacity.html").read_text()
    assert page.count('class="plotly-graph-div"') == 4  # the notebook's four figures, as HTML fragments
    assert "plotly.min.js" in page and "cdn.plot.ly" not in page and "Plotly.newPlot" in page
    assert "TqdmWarning" not in page and "|          | 0/" not in page  # progress bars: their final line only
    assert "exact distance-permutation counts: 100%|██████████| 6/6 [" in page  # (k, n): k = 2..4, n < k
    src = json.loads((site.parent / "src" / "notebooks" / "01_de_capacity.ipynb").read_text())
    ran = json.loads(
        (site.parent.parent / "outputs" / "01_de_capacity" / "workbook" / "01_de_capacity.ipynb").read_text()
    )
    counts = [[c.get("execution_count") for c in nb["cells"]] for nb in (src, ran)]
    assert counts[0] == counts[1] and "".join(src["cells"][0]["source"]).startswith("# 01 ")  # the run's cells
    results = (site / "results.html").read_text()
    assert "What each notebook" in results and "holds here" in results  # 01's findings, as its run printed them


def test_a_chapter_page_links_its_notebook_written_beside_it(tiny_book):
    site = tiny_book.parent
    page = (site / "notebooks" / "01_de_capacity.html").read_text()
    assert re.search(r'<a class="notebook-download" href="01_de_capacity\.ipynb" download>', page)
    offered = site / "notebooks" / "01_de_capacity.ipynb"  # the file the link names, beside the page
    ran = site.parent.parent / "outputs" / "01_de_capacity" / "workbook" / "01_de_capacity.ipynb"
    assert offered.read_bytes() == ran.read_bytes()  # the notebook as it ran, outputs and all
    assert json.loads(offered.read_text())["cells"][0]["source"][0].startswith("# 01 ")
    with zipfile.ZipFile(site.parent / "book.zip") as z:
        assert "notebooks/01_de_capacity.ipynb" in z.namelist()
    assert not (site / "notebooks" / "05_train.ipynb").exists()  # no run, no page, no file
    # the landing page names the text of the paper followed; the reproduction matrix is a page
    assert paper.TEXT_FOLLOWED in " ".join(re.sub(r"<[^>]+>", "", (site / "index.html").read_text()).split())
    assert "Reproduction matrix" in (site / "reproduction.html").read_text()


def test_failed_build_keeps_the_previous_site(tiny_book, monkeypatch):
    site = tiny_book.parent
    before = (site / "index.html").read_bytes()

    def broken(*_):
        raise build.BookError("sphinx-build failed (exit 2): simulated")

    monkeypatch.setattr(build, "sphinx_build", broken)
    monkeypatch.setattr(paths, "OUTPUTS", site.parent.parent / "outputs")
    with pytest.raises(build.BookError, match="simulated"):
        build.build_book("workbook", dest=site.parent, run_missing=False)
    assert (site / "index.html").read_bytes() == before
    assert sorted(p.name for p in site.parent.parent.iterdir()) == ["book", "outputs"]  # no staging or old folder


def test_no_executed_notebook_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "OUTPUTS", tmp_path / "outputs")
    with pytest.raises(build.BookError, match="no executed notebook of run 'nothing'.*make workbook"):
        build.build_book("nothing", dest=tmp_path / "book", run_missing=False)
    assert not (tmp_path / "book" / "site").exists()


def _internal_target(page: Path, href: str) -> tuple[Path, str] | None:
    """The file and fragment an internal link points to; None for a link outside the site."""
    parsed = urlparse(href)
    if parsed.scheme in ("http", "https", "mailto"):
        return None
    path = (
        Path(unquote(parsed.path))
        if parsed.scheme == "file"
        else (page.parent / unquote(parsed.path) if parsed.path else page)
    )
    return path.resolve(), parsed.fragment


@pytest.mark.skipif(_chromium() is None, reason="no Chromium (python -m arrank.workbook.bootstrap installs it)")
def test_every_page_in_a_real_browser(tiny_book):
    from playwright.sync_api import sync_playwright

    site = tiny_book.parent.resolve()
    pages = sorted(
        p
        for p in site.rglob("*.html")  # every page (_static holds the themes' template bits)
        if "_static" not in p.relative_to(site).parts
    )
    outside, errors, failed, figures, maths = [], [], [], 0, 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
        page = browser.new_page()
        page.on(
            "request",
            lambda r: None if r.url.startswith(("file://" + str(site), "data:", "about:")) else outside.append(r.url),
        )
        page.on("requestfailed", lambda r: failed.append(r.url))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        for html in pages:
            page.goto(html.as_uri(), wait_until="load")
            divs = page.locator("div.plotly-graph-div")
            for i in range(divs.count()):  # each figure draws its SVG
                divs.nth(i).locator("svg.main-svg").first.wait_for(state="attached", timeout=15000)
            figures += divs.count()
            page.wait_for_function(  # MathJax typesets every formula of the page (as SVG)
                "document.querySelectorAll('mjx-container svg').length >= document.querySelectorAll('span.math, div.math').length",
                timeout=15000,
            )
            maths += page.locator("mjx-container svg").count()
            for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))"):
                target = _internal_target(html, href)
                if target is None:
                    continue
                path, fragment = target
                assert path.is_file(), f"{html.name}: link {href} points to a missing file"
                if fragment and path.suffix == ".html":
                    assert re.search(rf'id="{re.escape(fragment)}"', path.read_text()), (
                        f"{html.name}: no #{fragment} in {path.name}"
                    )
            details = page.locator("details")
            for i in range(details.count()):  # the answers: collapsed until their summary is clicked
                d = details.nth(i)
                assert d.get_attribute("open") is None
                assert not d.locator(":scope > :not(summary)").first.is_visible()
                d.locator("summary").click()
                assert d.get_attribute("open") is not None
        opened = [html.name for html in pages if "<details" in html.read_text()]
        browser.close()
    assert outside == [] and failed == [] and errors == []
    assert figures == 4 and maths >= 20  # 01's four figures and its formulas
    assert "01_de_capacity.html" in opened  # its exercises


def test_the_book_renders_the_runs_make_workbook_writes(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "OUTPUTS", tmp_path / "outputs")
    found = build.executed_notebooks("workbook")
    assert list(found) == sorted(p.stem for p in paths.NOTEBOOKS.glob("[0-9][0-9]_*.py"))  # paper order
    assert found["01_de_capacity"] == tmp_path / "outputs" / "01_de_capacity" / "workbook" / "01_de_capacity.ipynb"
    # notebook 05: the workbook sweep's fractional point, the run notebook 06 evaluates
    assert found["05_train"].parent.name == "table1_wordnet_workbook-scheme=fractional-alpha=2"
