"""Shared fixtures: every run a test makes goes to a temporary outputs folder."""

from __future__ import annotations

import pytest


@pytest.fixture
def outputs_root(tmp_path, monkeypatch):
    """A temporary outputs/ root; also used by start_run() through ARRANK_OUTPUTS-free patching."""
    from arrank.workbook import paths

    root = tmp_path / "outputs"
    root.mkdir()
    monkeypatch.setattr(paths, "OUTPUTS", root)
    monkeypatch.delenv("ARRANK_RUN_DIR", raising=False)
    return root


@pytest.fixture(scope="module")
def one_torch_thread():
    """One torch thread while a module's tiny tests run (2 threads spin badly on a busy 2-core
    machine); use with ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
