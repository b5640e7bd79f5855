"""Take the README's JupyterLab screenshots (docs/images/lab_*.png) with headless Chromium.

Not part of the workbook or its tests: it drives a real browser against a running ``make lab``
and needs Playwright (``pip install playwright`` in any Python; it uses the system Chromium).

    make lab LAB_ARGS="--no-browser --ip=127.0.0.1 --port=18899 --IdentityProvider.token=tok" &
    python docs/lab_screenshots.py http://127.0.0.1:18899 tok

1. ``lab_double_click_py.png``: the file browser, ``notebooks/05_train.py`` opened by a
   double-click: a notebook (cells, kernel), not a text editor; the tab is not marked modified.
2. ``lab_run_cells.png``: ``notebooks/01_de_capacity.py`` after running its first code cells and
   saving (Ctrl+S): outputs in the notebook, saved (they go to the untracked .ipynb only).
Prints whether each tab is marked modified (JupyterLab's ``jp-mod-dirty``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

IMAGES = Path(__file__).resolve().parent / "images"


def open_by_double_click(page: Page, base: str, token: str, name: str) -> None:
    """A fresh workspace, then double-click ``notebooks`` and ``name`` in the file browser."""
    page.goto(f"{base}/lab/workspaces/shot{int(time.time() * 1000)}?reset&token={token}")
    page.wait_for_selector(".jp-DirListing-item", timeout=60000)
    page.locator(".jp-DirListing-item[title^='Name: notebooks']").first.dblclick()
    page.locator(f".jp-DirListing-item[title^='Name: {name}']").first.dblclick()
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60000)
    page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=120000)  # kernel connected
    time.sleep(2)


def dirty(page: Page) -> bool:
    """Whether the current tab is marked modified."""
    tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current").first
    return "jp-mod-dirty" in (tab.get_attribute("class") or "")


def main(base: str, token: str) -> None:
    """Take both screenshots."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 860})
        open_by_double_click(page, base, token, "05_train.py")
        print("05_train.py opened, modified:", dirty(page))
        page.screenshot(path=str(IMAGES / "lab_double_click_py.png"))

        open_by_double_click(page, base, token, "01_de_capacity.py")
        page.locator(".jp-Notebook .jp-Cell").first.click()
        for _ in range(4):  # title, parameters, set-up, first result
            page.keyboard.press("Shift+Enter")
        page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=120000)
        time.sleep(3)
        page.keyboard.press("Control+s")
        time.sleep(3)
        print("01_de_capacity.py after running 3 code cells and saving, modified:", dirty(page))
        page.screenshot(path=str(IMAGES / "lab_run_cells.png"))
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
