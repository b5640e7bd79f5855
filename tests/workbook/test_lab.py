"""arrank.workbook.lab: JupyterLab settings and the local .ipynb written from each notebook's .py."""

import json
import os
import shutil
import sys
from pathlib import Path

import nbformat
import pytest

from arrank.common import paths
from arrank.workbook import lab

SOURCE = paths.NOTEBOOKS / "01_de_capacity.py"


def test_install_lab_settings_is_idempotent_and_leaves_user_overrides(tmp_path):
    (tmp_path / "overrides.json").write_text('{"x": 1}')
    target = lab.install_lab_settings(tmp_path)
    assert json.loads(target.read_text())["@jupyterlab/docmanager-extension:plugin"] == {
        "defaultViewers": {"python": "Jupytext Notebook"}
    }
    mtime = target.stat().st_mtime_ns
    assert lab.install_lab_settings(tmp_path) == target and target.stat().st_mtime_ns == mtime
    assert (tmp_path / "overrides.json").read_text() == '{"x": 1}'


def test_default_settings_dir_is_in_the_running_environment():
    assert lab.SETTINGS_DIR == Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings"


@pytest.fixture
def source(tmp_path):
    dst = tmp_path / SOURCE.name
    shutil.copy(SOURCE, dst)
    return dst


def test_pair_writes_cells_and_kernel_metadata_once(source):
    assert lab.pair_notebook(source) is True
    nb = nbformat.read(source.with_suffix(".ipynb"), as_version=4)
    assert nb.metadata["language_info"]["name"] == "python"
    assert nb.metadata["kernelspec"]["display_name"] == "Python 3 (ipykernel)"
    assert nb.cells[0].source.startswith("# 01 ") and all(c.get("outputs", []) == [] for c in nb.cells)
    assert source.with_suffix(".ipynb").stat().st_mtime <= source.stat().st_mtime
    assert lab.pair_notebook(source) is False  # nothing to do the second time


def test_pair_keeps_outputs_and_takes_new_cells_from_the_py(source):
    lab.pair_notebook(source)
    ipynb = source.with_suffix(".ipynb")
    nb = nbformat.read(ipynb, as_version=4)
    code = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    nb.cells[code].outputs = [nbformat.v4.new_output("stream", name="stdout", text="kept\n")]
    nbformat.write(nb, ipynb)
    os.utime(ipynb, (0, 0))  # older than the .py, as after `git pull` updates the .py
    source.write_text(source.read_text() + "\n# %%\nprint('new cell')\n")
    assert lab.pair_notebook(source) is True
    nb = nbformat.read(ipynb, as_version=4)
    assert nb.cells[code].outputs[0]["text"] == "kept\n"
    assert nb.cells[-1].source == "print('new cell')"


def test_pair_refuses_a_newer_ipynb_with_other_cells(source):
    lab.pair_notebook(source)
    ipynb = source.with_suffix(".ipynb")
    nb = nbformat.read(ipynb, as_version=4)
    nb.cells[0].source = "# edited in the .ipynb"
    nbformat.write(nb, ipynb)
    os.utime(source, (0, 0))
    before = ipynb.read_text()
    with pytest.raises(lab.PairingConflictError, match="01_de_capacity.ipynb is newer than 01_de_capacity.py"):
        lab.pair_notebook(source)
    assert ipynb.read_text() == before
    assert lab.pair_notebooks([source]) == []  # reported, not raised, by the set-up


def test_help_sets_up_nothing(monkeypatch, capsys):
    """``python -m arrank.workbook.lab --help`` (and ``bootstrap``'s) print what they do and exit 0;
    an argument they do not take is refused (2); neither runs any set-up."""
    from arrank.common import wordnet_setup
    from arrank.workbook import bootstrap

    monkeypatch.setattr(wordnet_setup, "ensure_wordnet", lambda **kw: pytest.fail("set-up ran"))
    monkeypatch.setattr(lab, "install_lab_settings", lambda: pytest.fail("set-up ran"))
    for main, argv, code in ((lab.main, ["--help"], 0), (bootstrap.main, ["--help"], 0), (bootstrap.main, ["-n"], 2)):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == code
    assert "JupyterLab set-up" in capsys.readouterr().out
