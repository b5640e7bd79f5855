"""paths: the workbook's folders from ARRANK_ROOT / ARRANK_OUTPUTS, its notebooks in paper order,
a path as the user gave it, and the first unused numbered name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from arrank.common import paths

SHOW = "from arrank.common import paths as p; print(p.ROOT, p.NOTEBOOKS, p.CACHE, p.NLTK_DATA, p.OUTPUTS)"


def test_folders_follow_arrank_root_and_outputs_follow_arrank_outputs():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "ARRANK_ROOT": "/r", "ARRANK_OUTPUTS": "/o"}
    shown = subprocess.run([sys.executable, "-c", SHOW], env=env, capture_output=True, text=True, check=True)
    assert shown.stdout.split() == ["/r", "/r/notebooks", "/r/data/cache", "/r/data/nltk_data", "/o"]
    del env["ARRANK_OUTPUTS"]
    for unset in ({}, {"ARRANK_OUTPUTS": ""}):  # empty is unset (it was '.': runs written into the working folder)
        shown = subprocess.run(
            [sys.executable, "-c", SHOW], env=env | unset, capture_output=True, text=True, check=True
        )
        assert shown.stdout.split()[-1] == "/r/outputs"


def test_notebooks_are_the_numbered_sources_in_paper_order(tmp_path, monkeypatch):
    for name in ["12_l.py", *(f"{n:02d}_x.py" for n in range(11, 0, -1)), "helper.py", "01_a.ipynb"]:
        (tmp_path / name).touch()  # made in reverse order: a folder's listing order is not sorted
    monkeypatch.setattr(paths, "NOTEBOOKS", tmp_path)
    assert [p.name for p in paths.notebooks()] == [f"{n:02d}_x.py" for n in range(1, 12)] + ["12_l.py"]


def test_a_given_path_is_read_from_the_working_folder_else_from_the_repository(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(paths, "ROOT", Path("/repo"))
    Path("here.yaml").touch()
    assert paths.given("here.yaml") == Path("here.yaml")
    assert paths.given("sweeps/x.yaml") == Path("/repo/sweeps/x.yaml")
    assert paths.given(tmp_path / "missing.yaml") == tmp_path / "missing.yaml"


def test_unused_numbers_a_name_that_is_taken_by_a_folder_or_a_file(tmp_path):
    assert paths.unused(tmp_path / "run") == tmp_path / "run"
    (tmp_path / "run").touch()
    assert paths.unused(tmp_path / "run") == tmp_path / "run-2"
    (tmp_path / "run-2").mkdir()
    assert paths.unused(tmp_path / "run") == tmp_path / "run-3"
