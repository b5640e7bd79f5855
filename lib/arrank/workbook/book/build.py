"""Build the reading-group book: ``python -m arrank.workbook.book`` (``make book``).

The site goes to ``outputs/book/site/`` (``index.html`` opens from disk), a zip of it to
``outputs/book/book.zip`` and the generated sources to ``outputs/book/src/``; what it renders and
when it runs missing stages: docs/book.md. A failed build leaves the previous site as it was.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from arrank.common import paths
from arrank.common.outputs import DamagedResultsError, read_results
from arrank.workbook.book.executed import for_the_book, with_download_link
from arrank.workbook.book.pages import index_page, results_page, unlink_missing

SITE_SOURCES = Path(__file__).parent / "site"
HAND_WRITTEN = ("meetings.md", "running.md")
MATHJAX = "sphinx-mathjax-offline/static/mathjax/tex-svg-full.js"  # MathJax 3.2.2, TeX to SVG, one file


class BookError(RuntimeError):
    """The book cannot be built; the message says why and what to do."""


def executed_notebooks(run_name: str = "workbook") -> dict[str, Path]:
    """Each workbook notebook's executed ``.ipynb`` from ``make workbook``'s run ``run_name``, in
    paper order (notebook 05: the sweep point that notebook 06 evaluates), whether it exists or not."""
    from arrank.common.outputs import run_path
    from arrank.workbook.whole import stages

    steps = stages()
    train_run = next(s["overrides"]["train_run"] for s in steps if s["prefix"] == "06")
    runs = {s["prefix"]: train_run if s["kind"] == "sweep" else run_name for s in steps}
    return {p.stem: run_path(p.stem, runs[p.stem[:2]]) / f"{p.stem}.ipynb" for p in paths.notebooks()}


def _finished(ipynb: Path) -> bool:
    """A run counts when its results.json exists next to the executed notebook."""
    return ipynb.exists() and (ipynb.parent / "results.json").exists()


def _copy_static(static: Path) -> None:
    """plotly.min.js (from the installed plotly) and MathJax (one file, from the PyPI package
    sphinx-mathjax-offline) into the site's ``_static``: the site loads nothing from outside itself."""
    from importlib.metadata import distribution

    import plotly

    (static / "mathjax").mkdir(parents=True, exist_ok=True)
    shutil.copy2(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", static / "plotly.min.js")
    shutil.copy2(
        Path(distribution("sphinx-mathjax-offline").locate_file(MATHJAX)), static / "mathjax" / "tex-svg-full.js"
    )


def _run_label(run_name: str, results: Path | None) -> str:
    """How the results page names the run: its name and when its first notebook ran."""
    try:
        when = read_results(results).get("env", {}).get("time", "") if results else ""
    except DamagedResultsError:
        when = ""
    return f"run `{run_name}` of `make workbook`, quick profile" + (f", started {when}" if when else "")


def write_sources(src: Path, notebooks: dict[str, Path], run_name: str) -> list[str]:
    """The Sphinx sources of the book in ``src``; returns the notebooks left out (no finished run).
    Each notebook page links the notebook file ``write_downloads`` puts beside it; the landing page
    names the text of the paper the workbook follows; the reproduction matrix is the committed
    docs/reproduction.md (``arrank.results.reproduction``)."""
    from arrank.results.paper import TEXT_FOLLOWED
    from arrank.workbook.whole import findings_summary, table1_summary

    (src / "notebooks").mkdir(parents=True)
    shutil.copy2(SITE_SOURCES / "conf.py", src / "conf.py")
    _copy_static(src / "_static")
    loaded, missing = {}, []
    for stem, ipynb in notebooks.items():
        if not _finished(ipynb):
            missing.append(stem)
            continue
        loaded[stem] = json.loads(ipynb.read_text())
        page = with_download_link(for_the_book(loaded[stem]), f"{stem}.ipynb")
        (src / "notebooks" / f"{stem}.ipynb").write_text(json.dumps(page, indent=1))
    for name in HAND_WRITTEN:
        (src / name).write_text(unlink_missing((SITE_SOURCES / name).read_text(), missing))
    (src / "reproduction.md").write_text(reproduction_page())
    pages = [f"notebooks/{stem}" for stem in loaded]
    landing = (SITE_SOURCES / "landing.md").read_text().replace("{paper}", TEXT_FOLLOWED)
    (src / "index.md").write_text(index_page(landing, pages, missing))
    first = notebooks[next(iter(loaded))].parent / "results.json" if loaded else None
    (src / "results.md").write_text(
        results_page(loaded, table1_summary(), findings_summary(run_name), _run_label(run_name, first))
    )
    return missing


def reproduction_page() -> str:
    """The reproduction matrix: the committed docs/reproduction.md (a test keeps it in step with the
    committed data), else made from that data (``arrank.results.reproduction``)."""
    from arrank.results import reproduction

    committed = paths.ROOT / reproduction.PAGE
    return committed.read_text() if committed.is_file() else reproduction.page()


def write_downloads(site: Path, notebooks: dict[str, Path]) -> list[Path]:
    """Each finished notebook's executed ``.ipynb`` as the run wrote it, beside its page in the site
    (``site/notebooks/<stem>.ipynb``, the file the page's download link names); returns the files."""
    finished = {stem: ipynb for stem, ipynb in notebooks.items() if _finished(ipynb)}
    return [Path(shutil.copy2(ipynb, site / "notebooks" / f"{stem}.ipynb")) for stem, ipynb in finished.items()]


def sphinx_build(src: Path, site: Path, doctrees: Path) -> str:
    """Sphinx's HTML builder over ``src`` into ``site``, in a child process; returns its warnings."""
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-d", str(doctrees), str(src), str(site)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise BookError(f"sphinx-build failed (exit {done.returncode}):\n{done.stderr.strip()[-3000:]}")
    return done.stderr.strip()


def _replace(staging: Path, dest: Path) -> None:
    """Move the finished ``site``, ``src`` and ``book.zip`` from ``staging`` into ``dest``, each
    replacing the previous one only once the new one is complete."""
    for name in ("site", "src", "book.zip"):
        old = dest / f".old-{name}-{os.getpid()}"
        if (dest / name).exists():
            (dest / name).rename(old)
        (staging / name).rename(dest / name)
        shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink(missing_ok=True)


def build_book(run_name: str = "workbook", dest: Path | None = None, run_missing: bool = True) -> Path:
    """Build the book from the executed workbook (running its missing stages first when
    ``run_missing``); returns the site's ``index.html``."""
    dest = dest or paths.OUTPUTS / "book"
    notebooks = executed_notebooks(run_name)
    if run_missing and not all(_finished(p) for p in notebooks.values()):
        from arrank.workbook.whole import run_workbook

        print("the workbook has not run completely: running its missing stages first (make workbook)", flush=True)
        run_workbook(run_name)
    if not any(_finished(p) for p in notebooks.values()):
        raise BookError(f"no executed notebook of run {run_name!r} under {paths.OUTPUTS}: run `make workbook` first")
    dest.mkdir(parents=True, exist_ok=True)
    staging = dest / f".staging-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        missing = write_sources(staging / "src", notebooks, run_name)
        warnings = sphinx_build(staging / "src", staging / "site", staging / "doctrees")
        write_downloads(staging / "site", notebooks)
        shutil.make_archive(str(staging / "book"), "zip", staging / "site")
        _replace(staging, dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
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
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
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
