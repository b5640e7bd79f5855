"""Numeric docIDs of the ESCI experiments (section 5.1): the indices of the nonzero coefficients of
a title's sparse code, sorted by descending |coefficient| and joined by commas ("25,36,39").
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def format_docid(indices: Sequence[int]) -> str:
    """``[25, 36, 39]`` -> ``"25,36,39"`` (the order given is kept: it is the |coefficient| order)."""
    return ",".join(str(int(i)) for i in indices)


def random_numeric_docids(count: int, n_components: int = 100, nnz: int = 3, seed: int = 0) -> list[str]:
    """``count`` docIDs in the ESCI format with ``nnz`` distinct atoms out of ``n_components``,
    in random order: stand-ins with the same token statistics, for tokenizer-level questions
    (e.g. rank(E') of the docID tokens) when no sparse codes have been computed."""
    if not 1 <= nnz <= n_components:
        raise ValueError(f"nnz={nnz} must be in [1, n_components={n_components}]")
    rng = np.random.default_rng(seed)
    return [format_docid(rng.choice(n_components, size=nnz, replace=False)) for _ in range(count)]
