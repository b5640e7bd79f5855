"""Every notebooks/*.py is paired with an output-free .ipynb holding the same cells."""

from pathlib import Path

import jupytext
import nbformat
import pytest

from arrank.workbook import params, paths, run

SOURCES = sorted(paths.NOTEBOOKS.glob("[0-9][0-9]_*.py"))


def _cells(nb):
    return [(c.cell_type, c.source.strip(), tuple(c.metadata.get("tags", []))) for c in nb.cells]


def test_there_are_notebooks():
    assert [p.stem for p in SOURCES][:2] == ["01_de_capacity", "02_rank_condition"]


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_pair_in_sync_and_without_outputs(source: Path):
    ipynb = source.with_suffix(".ipynb")
    assert ipynb.exists(), f"{ipynb.name} missing: run `make sync`"
    paired = nbformat.read(ipynb, as_version=4)
    assert _cells(jupytext.read(source)) == _cells(paired), f"{source.name} and {ipynb.name} differ: run `make sync`"
    for cell in paired.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{ipynb.name} has outputs"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_parameters_cell_matches_spec(source: Path):
    defaults = run.parameters_cell(run.read_notebook(source), source)
    assert sorted(defaults) == sorted(params.spec_for(source.stem))
    assert defaults["profile"] == "quick" and defaults["run_name"] == "auto"
    params.validate(source.stem, defaults)  # the defaults themselves are valid
