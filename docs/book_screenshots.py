"""Take the README's screenshots of the reading-group book (docs/images/book_*.png) with headless
Chromium (Debian's chromium, driven by playwright; no browser download).

Not part of the workbook or its tests: run it after ``make book``:

    .venv/bin/python docs/book_screenshots.py [outputs/book/site]

1. ``book_landing.png``: the landing page.
2. ``book_notebook.png``: notebook 05's page at its training curve (a plotly figure drawn by the one
   plotly.min.js of the site).
3. ``book_exercise.png``: notebook 05's exercises, the first answer opened.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

IMAGES = Path(__file__).resolve().parent / "images"


def main(site: Path) -> None:
    """Take the screenshots of the book in ``site``."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1300, "height": 850})
        page.goto((site / "index.html").resolve().as_uri(), wait_until="load")
        page.wait_for_timeout(1500)  # MathJax
        page.screenshot(path=str(IMAGES / "book_landing.png"))
        page.goto((site / "notebooks" / "05_train.html").resolve().as_uri(), wait_until="load")
        figure = page.locator("div.plotly-graph-div").first
        figure.locator("svg.main-svg").first.wait_for(state="attached")
        figure.scroll_into_view_if_needed()
        page.evaluate("window.scrollBy(0, -220)")
        page.wait_for_timeout(800)
        page.screenshot(path=str(IMAGES / "book_notebook.png"))
        exercises = page.locator("#exercises")
        exercises.scroll_into_view_if_needed()
        page.locator("details summary").first.click()
        page.evaluate("document.querySelector('#exercises').scrollIntoView()")
        page.wait_for_timeout(500)
        page.screenshot(path=str(IMAGES / "book_exercise.png"))
        browser.close()
    print("written:", *(IMAGES / f"book_{n}.png" for n in ("landing", "notebook", "exercise")))


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "outputs/book/site"))
