"""notebooks/NN_name.py is the only tracked form of a notebook: what JupyterLab saves back into it
is byte-identical to the committed file, and the .ipynb (with your outputs) never reaches git."""

import ast
import subprocess
import tempfile
from pathlib import Path

import jupytext
import pytest
from jupytext.config import load_jupytext_config

from arrank.common import params, paths
from arrank.workbook import lab, run

SOURCES = sorted(paths.NOTEBOOKS.glob("[0-9][0-9]_*.py"))


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(paths.ROOT), *args], capture_output=True, text=True)


def _in_git_checkout() -> bool:
    return _git("rev-parse", "--is-inside-work-tree").stdout.strip() == "true"


def test_there_are_notebooks():
    assert [p.stem for p in SOURCES][:2] == ["01_de_capacity", "02_rank_condition"]


@pytest.mark.skipif(not _in_git_checkout(), reason="not a git checkout")
def test_no_ipynb_is_committed_or_would_be():
    """The .ipynb of every notebook is ignored: not tracked, and `git add` would not take it."""
    tracked = _git("ls-files", "--", "notebooks").stdout.split()
    assert [t for t in tracked if t.endswith(".ipynb")] == []
    assert sorted(Path(t).name for t in tracked if t.endswith(".py")) == sorted(p.name for p in SOURCES)
    ipynbs = [str(p.with_suffix(".ipynb").relative_to(paths.ROOT)) for p in SOURCES]
    ignored = _git("check-ignore", "--no-index", *ipynbs).stdout.split()
    assert ignored == ipynbs


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_saving_writes_the_same_py(source: Path):
    """The jupytext contents manager saves a notebook as `writes(nb, config)`: for the committed
    file that is the file itself, and its kernelspec is the one the python3 kernel reports, so
    opening and saving in JupyterLab changes nothing git tracks."""
    text = source.read_text()
    nb = jupytext.reads(text, fmt="py:percent")
    assert jupytext.writes(nb, fmt="py:percent", config=load_jupytext_config(str(source.parent))) == text
    assert nb.metadata["kernelspec"] == lab.kernel_metadata()["kernelspec"]


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_parameters_cell_is_a_valid_spec(source: Path):
    """Every line of the cell is read by papermill's own parser (``papermill.inspect_notebook`` on
    the .ipynb the Lab writes), with the names and defaults the runner reads, and the defaults
    (the quick profile's values) are valid."""
    import papermill

    defaults = run.parameters_cell(source)
    assert defaults["profile"] == "quick" and defaults["run_name"] == "auto"
    assert params.validate(source.stem, defaults).keys() == defaults.keys()
    with tempfile.TemporaryDirectory() as tmp:
        ipynb = Path(tmp) / f"{source.stem}.ipynb"
        jupytext.write(run.read_notebook(source), ipynb)
        read = papermill.inspect_notebook(str(ipynb))
    assert list(read) == list(defaults)
    assert {n: ast.literal_eval(p["default"]) for n, p in read.items()} == defaults
