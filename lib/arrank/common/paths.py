"""Paths of the workbook, computed from the repository root (never from a notebook's location).

papermill executes a notebook in the caller's working directory, so every path in lib is built
from ``ROOT`` (docs/design.md, "Known pitfalls"). ``ARRANK_ROOT`` overrides the root for tests.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT: Path = Path(os.environ.get("ARRANK_ROOT", Path(__file__).resolve().parents[3]))
NOTEBOOKS: Path = ROOT / "notebooks"
DATA: Path = ROOT / "data"
CACHE: Path = DATA / "cache"
NLTK_DATA: Path = DATA / "nltk_data"
OUTPUTS: Path = Path(os.environ.get("ARRANK_OUTPUTS", ROOT / "outputs"))


def unused(path: Path) -> Path:
    """``path``, or the first of ``path-2``, ``path-3``, ... that does not exist."""
    target, n = path, 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}-{n}")
    return target
