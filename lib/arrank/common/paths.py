"""Paths of the workbook, built from the repository root ``ROOT`` (``ARRANK_ROOT`` for tests), never
from a notebook's location: papermill runs in the caller's folder (docs/design.md, "Known pitfalls").
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

ROOT: Path = Path(os.environ.get("ARRANK_ROOT", Path(__file__).resolve().parents[3]))
NOTEBOOKS: Path = ROOT / "notebooks"
DATA: Path = ROOT / "data"
CACHE: Path = DATA / "cache"
NLTK_DATA: Path = DATA / "nltk_data"
OUTPUTS: Path = Path(os.environ.get("ARRANK_OUTPUTS") or ROOT / "outputs")  # empty: unset


def notebooks() -> list[Path]:
    """The workbook's notebook sources, ``notebooks/NN_name.py``, in paper order."""
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py"))


def given(path: str | Path) -> Path:
    """A path as the user gave it: from the working directory where it exists there, else (relative)
    from the repository, where the notebooks' kernels run (a sweep file such as ``sweeps/x.yaml``)."""
    path = Path(path)
    return ROOT / path if not path.is_absolute() and not path.exists() else path


def unused(path: Path) -> Path:
    """``path``, or the first of ``path-2``, ``path-3``, ... that does not exist."""
    numbered = (path.with_name(f"{path.name}-{n}") for n in itertools.count(2))
    return next(p for p in itertools.chain([path], numbered) if not p.exists())
