"""Build the reading-group book: ``python -m arrank.workbook.book`` (``make book``).

The site goes to ``outputs/book/site/`` (``index.html`` opens from disk), a zip of it to
``outputs/book/book.zip`` and the generated sources to ``outputs/book/src/``; what it renders and
when it runs missing stages: docs/book.md. A failed build leaves the previous book as it was.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from arrank.common import paths
from arrank.common.outputs import damaged, run_path, staged_folder
from arrank.workbook.book.executed import for_the_book, with_download_link
from arrank.workbook.book.pages import PAGES, SITE_SOURCES, fields, page


class BookError(RuntimeError):
    """The book cannot be built; the message says why and what to do."""


def executed_notebooks(run_name: str = "workbook") -> dict[str, Path]:
    """Each workbook notebook's executed ``.ipynb`` from ``make workbook``'s run ``run_name``, in
    paper order (notebook 05: the sweep point that notebook 06 evaluates), whether it exists or not."""
    from arrank.workbook.whole import stages

    steps = stages()  # one per notebook, in order
    train_run = next(s["overrides"]["train_run"] for s in steps if s["prefix"] == "06")
    runs = {p.stem: train_run if s["kind"] == "sweep" else run_name for s, p in zip(steps, paths.notebooks())}
    return {stem: run_path(stem, run) / f"{stem}.ipynb" for stem, run in runs.items()}


def _finished(ipynb: Path) -> bool:
    """A run counts when its results.json exists next to the executed notebook."""
    return ipynb.exists() and (ipynb.parent / "results.json").exists()


def executed(ipynb: Path) -> dict:
    """An executed notebook's JSON; one cut short or not a notebook is ``BookError`` naming it."""
    with contextlib.suppress(ValueError):
        if isinstance(nb := json.loads(ipynb.read_text()), dict) and isinstance(nb.get("cells"), list):
            return nb
    raise BookError(str(damaged(ipynb, "not a notebook's JSON")))


def write_sources(src: Path, notebooks: dict[str, Path], run_name: str) -> list[str]:
    """The Sphinx sources of the book in ``src``; returns the notebooks left out (no finished run).
    Each notebook page links the notebook file as it ran, which Sphinx copies beside the page from
    ``src/extra/`` (``html_extra_path``); the landing page names the text of the paper the workbook
    follows; the reproduction matrix is the committed docs/reproduction.md (a test keeps it in step
    with the committed data), else made from that data (``arrank.results.reproduction``)."""
    from arrank.results import reproduction
    from arrank.results.paper import TEXT_FOLLOWED
    from arrank.workbook.whole import findings_summary, table1_summary

    for folder in ("notebooks", "extra/notebooks"):
        (src / folder).mkdir(parents=True)
    shutil.copy2(SITE_SOURCES / "conf.py", src / "conf.py")
    loaded = {stem: executed(ipynb) for stem, ipynb in notebooks.items() if _finished(ipynb)}
    missing = [stem for stem in notebooks if stem not in loaded]
    for stem, nb in loaded.items():
        page_nb = with_download_link(for_the_book(nb), f"{stem}.ipynb")
        (src / "notebooks" / f"{stem}.ipynb").write_text(json.dumps(page_nb, indent=1))
        shutil.copy2(notebooks[stem], src / "extra" / "notebooks" / f"{stem}.ipynb")
    committed = paths.ROOT / reproduction.PAGE
    (src / "reproduction.md").write_text(committed.read_text() if committed.is_file() else reproduction.page())
    started = next(iter(loaded.values()), {}).get("metadata", {}).get("papermill", {}).get("start_time") or ""
    started = started[:16].replace("T", " ")  # papermill's UTC time, to the minute
    run = f"run `{run_name}` of `make workbook`, quick profile" + (f", started {started} UTC" if started else "")
    filled = fields(loaded, missing, table1_summary(), findings_summary(run_name), run) | {"paper": TEXT_FOLLOWED}
    for name, target in PAGES.items():
        (src / target).write_text(page(name, filled, missing))
    return missing


def sphinx_build(src: Path, site: Path, doctrees: Path) -> str:
    """Sphinx's HTML builder over ``src`` into ``site``, in a child process; returns its warnings."""
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-d", str(doctrees), str(src), str(site)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise BookError(f"sphinx-build failed (exit {done.returncode}):\n{done.stderr.strip()[-3000:]}")
    return done.stderr.strip()


def build_book(run_name: str = "workbook", dest: Path | None = None, run_missing: bool = True) -> Path:
    """Build the book from the executed workbook (running its missing stages first when
    ``run_missing``) in a staging folder beside ``dest`` that replaces ``dest`` once complete;
    returns the site's ``index.html``."""
    dest = dest or paths.OUTPUTS / "book"
    notebooks = executed_notebooks(run_name)
    if run_missing and not all(_finished(p) for p in notebooks.values()):
        from arrank.workbook.whole import run_workbook

        print("the workbook has not run completely: running its missing stages first (make workbook)", flush=True)
        run_workbook(run_name)
    if not any(_finished(p) for p in notebooks.values()):
        raise BookError(f"no executed notebook of run {run_name!r} under {paths.OUTPUTS}: run `make workbook` first")
    with staged_folder(dest, replace=True) as staging:
        missing = write_sources(staging / "src", notebooks, run_name)
        warnings = sphinx_build(staging / "src", staging / "site", staging / "doctrees")
        for scratch in ("doctrees", "jupyter_execute"):  # Sphinx's and MyST-NB's working folders
            shutil.rmtree(staging / scratch, ignore_errors=True)
        shutil.make_archive(str(staging / "book"), "zip", staging / "site")
    if warnings:
        print(warnings, file=sys.stderr)
    if missing:
        print(f"left out (no finished run): {', '.join(missing)}", file=sys.stderr)
    return dest / "site" / "index.html"


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(prog="python -m arrank.workbook.book", description=__doc__.split("\n")[0])
    parser.add_argument("--run-name", default="workbook", help="the workbook run to render (default: workbook)")
    parser.add_argument("--no-run", action="store_true", help="never run the workbook; build from the runs there are")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        index = build_book(args.run_name, run_missing=not args.no_run)
    except BookError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(
        f"book built in {time.perf_counter() - start:.1f} s: open file://{index}\n"
        f"to share: {index.parent.parent / 'book.zip'} (the same folder, zipped; any static host serves it)"
    )
    return 0
