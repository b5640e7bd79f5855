"""arrank.workbook.book.build without Sphinx: which executed notebooks the book reads, the sources it
writes from the finished ones, and what it refuses (the whole build: tests/workbook/test_book.py)."""

from __future__ import annotations

import json

import pytest

from arrank.common import paths
from arrank.results import reproduction
from arrank.workbook import whole
from arrank.workbook.book import build

NB = {
    "cells": [{"cell_type": "markdown", "metadata": {}, "source": "# 01 · Capacity\n\nText."}],
    "metadata": {"papermill": {"start_time": "2026-01-02T03:04:05.678901"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def test_the_book_reads_each_notebooks_run_and_for_05_the_point_06_evaluates(outputs_root):
    notebooks = build.executed_notebooks("wb")
    assert list(notebooks) == [p.stem for p in paths.notebooks()]
    assert notebooks["01_de_capacity"] == outputs_root / "01_de_capacity/wb/01_de_capacity.ipynb"
    point = "table1_wordnet_workbook-scheme=fractional-alpha=2"
    assert notebooks["05_train"] == outputs_root / "05_train" / point / "05_train.ipynb"
    assert notebooks["08_results"] == outputs_root / "08_results/wb/08_results.ipynb"


def test_sources_are_written_from_the_finished_runs_only(outputs_root, tmp_path):
    notebooks = build.executed_notebooks("wb")
    for stem in ("01_de_capacity", "02_rank_condition"):  # 02 ran, but has no results.json: unfinished
        notebooks[stem].parent.mkdir(parents=True)
        notebooks[stem].write_text(json.dumps(NB))
    (notebooks["01_de_capacity"].parent / "results.json").write_text("{}")
    src = tmp_path / "src"
    missing = build.write_sources(src, notebooks, "wb")
    assert missing == list(notebooks)[1:]
    assert sorted(p.name for p in (src / "notebooks").iterdir()) == ["01_de_capacity.ipynb"]
    assert (src / "extra/notebooks/01_de_capacity.ipynb").read_bytes() == notebooks["01_de_capacity"].read_bytes()
    assert sorted(p.name for p in src.glob("*.*")) == [
        "conf.py", "index.md", "meetings.md", "reproduction.md", "results.md", "running.md"
    ]  # fmt: skip
    assert (src / "reproduction.md").read_text() == (paths.ROOT / reproduction.PAGE).read_text()
    assert (
        "run `wb` of `make workbook`, quick profile, started 2026-01-02 03:04 UTC" in (src / "results.md").read_text()
    )
    index = (src / "index.md").read_text()
    assert f"*Not in this book (no finished run): {', '.join(missing)}.*" in index
    assert "\nnotebooks/01_de_capacity\n```" in index
    for damage in [json.dumps(NB)[:60], "[]", '{"cells": {}}']:  # cut short, not a notebook (nor its cells)
        notebooks["01_de_capacity"].write_text(damage)
        with pytest.raises(
            build.BookError, match=r"01_de_capacity.ipynb is damaged \(not a notebook's JSON\): delete its run folder"
        ):
            build.write_sources(tmp_path / f"src-{len(damage)}", notebooks, "wb")


def test_missing_stages_are_run_first_and_no_finished_run_is_refused(outputs_root, tmp_path, monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(whole, "run_workbook", ran.append)
    with pytest.raises(
        build.BookError, match="^no executed notebook of run 'none' under .*: run `make workbook` first$"
    ):
        build.build_book("none", dest=tmp_path / "book")
    assert ran == ["none"] and not (tmp_path / "book").exists()
    assert build.main(["--run-name", "none", "--no-run"]) == 1 and ran == ["none"]
    err = capsys.readouterr().err
    assert err.startswith("error: no executed notebook of run 'none' under ") and err.count("\n") == 1


def test_a_failing_sphinx_build_is_a_book_error(tmp_path):
    (tmp_path / "src").mkdir()  # no conf.py
    with pytest.raises(build.BookError, match=r"^sphinx-build failed \(exit 2\):\n"):
        build.sphinx_build(tmp_path / "src", tmp_path / "site", tmp_path / "doctrees")


def test_a_partly_run_workbook_is_completed_first_or_with_no_run_built_from_what_there_is(
    outputs_root, tmp_path, monkeypatch, capsys
):
    notebooks = build.executed_notebooks("wb")
    notebooks["01_de_capacity"].parent.mkdir(parents=True)
    notebooks["01_de_capacity"].write_text(json.dumps(NB))
    (notebooks["01_de_capacity"].parent / "results.json").write_text("{}")

    def sphinx(*_):
        raise build.BookError("sphinx reached")

    def run_workbook(run_name):
        raise RuntimeError(run_name)

    monkeypatch.setattr(build, "sphinx_build", sphinx)
    monkeypatch.setattr(whole, "run_workbook", run_workbook)
    with pytest.raises(RuntimeError, match="^wb$"):  # 02-08 have no finished run: make workbook runs them
        build.build_book("wb", dest=tmp_path / "book")
    with pytest.raises(build.BookError, match="^sphinx reached$"):
        build.build_book("wb", dest=tmp_path / "book", run_missing=False)
    assert not (tmp_path / "book").exists()

    def sphinx_warns(src, site, doctrees):
        site.mkdir()
        (site / "index.html").write_text("<html></html>")
        return "WARNING: a warning"

    monkeypatch.setattr(build, "sphinx_build", sphinx_warns)
    capsys.readouterr()
    assert build.build_book("wb", dest=tmp_path / "book", run_missing=False) == tmp_path / "book/site/index.html"
    left_out = ", ".join(list(notebooks)[1:])
    assert capsys.readouterr().err == f"WARNING: a warning\nleft out (no finished run): {left_out}\n"
    assert sorted(p.name for p in (tmp_path / "book").iterdir()) == ["book.zip", "site", "src"]
