"""JupyterLab set-up: ``notebooks/NN_name.py`` opens as a notebook, and interactive use never
touches what git tracks.

``install_lab_settings`` makes a double-click on a ``.py`` open it as a notebook (and fetches no
news); ``pair_notebooks`` writes each untracked local ``.ipynb`` from its ``.py`` with the kernel's
metadata, so JupyterLab does not mark it modified (docs/design.md, "Notebooks and JupyterLab").
``python -m arrank.workbook.lab`` does both (``make setup`` and ``make sync`` call it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from arrank.common import paths

SETTINGS_DIR = Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings"  # JupyterLab's, of this environment
LAB_SETTINGS: dict[str, Any] = {
    # the viewer a double-click (and /lab/tree/<path>) uses for *.py files
    "@jupyterlab/docmanager-extension:plugin": {"defaultViewers": {"python": "Jupytext Notebook"}},
    # no "get notified about Jupyter news?" prompt, no request to jupyter.org
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
}


class PairingConflictError(RuntimeError):
    """A local ``.ipynb`` is newer than its ``.py`` and holds other cells: nothing was overwritten."""


def install_lab_settings(settings_dir: Path = SETTINGS_DIR) -> Path:
    """Write ``LAB_SETTINGS`` to ``<settings_dir>/overrides.d/arrank-workbook.json`` (default: the
    running environment's); a user's own ``overrides.json`` there is left alone and wins."""
    target = settings_dir / "overrides.d" / "arrank-workbook.json"
    text = json.dumps(LAB_SETTINGS, indent=2) + "\n"
    if not target.exists() or target.read_text() != text:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return target


def kernel_metadata() -> dict[str, Any]:
    """The ``kernelspec`` and ``language_info`` that JupyterLab writes into a notebook once the
    project's ``python3`` kernel runs it (ipykernel's own values for this interpreter)."""
    from ipykernel.ipkernel import IPythonKernel
    from ipykernel.kernelspec import get_kernel_dict

    spec = get_kernel_dict()
    return {
        "kernelspec": {"display_name": spec["display_name"], "language": spec["language"], "name": "python3"},
        "language_info": json.loads(json.dumps(IPythonKernel.language_info)),
    }


def pair_notebook(source: Path) -> bool:
    """Write ``source``'s ``.ipynb``: cells from the ``.py``, outputs of the existing ``.ipynb``
    where its cells still match, the kernel's metadata. Returns whether the file was written.
    Raises ``PairingConflictError`` when the ``.ipynb`` is newer and holds other cells."""
    import jupytext
    import nbformat
    from jupytext.combine import combine_inputs_with_outputs

    ipynb = source.with_suffix(".ipynb")
    nb = jupytext.read(source)
    before = nbformat.read(ipynb, as_version=4) if ipynb.exists() else nbformat.v4.new_notebook()
    old_cells, new_cells = ([(c.cell_type, c.source) for c in x.cells] for x in (before, nb))
    if ipynb.exists() and ipynb.stat().st_mtime > source.stat().st_mtime + 1 and old_cells != new_cells:
        raise PairingConflictError(
            f"{ipynb} is newer than {source.name} and their cells differ; nothing overwritten. Keep the "
            f".ipynb's cells: `jupytext --sync {ipynb}`; keep the .py's: delete {ipynb.name}"
        )
    nb = combine_inputs_with_outputs(nb, before)
    nb.metadata.update(kernel_metadata())
    nb.metadata.pop("jupytext", None)
    if before == nb:
        return False
    nbformat.write(nb, ipynb)
    os.utime(ipynb, (source.stat().st_atime, source.stat().st_mtime))  # never newer than its source
    return True


def pair_notebooks(sources: list[Path] | None = None) -> list[Path]:
    """Pair every ``notebooks/NN_name.py``; returns the ``.ipynb`` files written. A conflict is
    reported and skipped, so one notebook never blocks the set-up of the others."""
    written = []
    for source in sources or paths.notebooks():
        try:
            if pair_notebook(source):
                written.append(source.with_suffix(".ipynb"))
        except PairingConflictError as err:
            print(f"warning: {err}", file=sys.stderr)
    return written


def main(argv: list[str] | None = None) -> int:
    """Install the JupyterLab settings and pair the notebooks; print what was done (``--help``: what it does)."""
    argparse.ArgumentParser(prog="python -m arrank.workbook.lab", description=__doc__.split("\n\n")[0]).parse_args(argv)
    print(
        f"JupyterLab: .py notebooks open as notebooks ({install_lab_settings()}); "
        f"{len(pair_notebooks())} .ipynb written from their .py (not tracked by git)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
