"""Shared fixtures: every run a test makes goes to a temporary outputs folder."""

from __future__ import annotations

import pytest


@pytest.fixture
def outputs_root(tmp_path, monkeypatch):
    """A temporary outputs/ root; also used by start_run() through ARRANK_OUTPUTS-free patching."""
    from arrank import paths

    root = tmp_path / "outputs"
    root.mkdir()
    monkeypatch.setattr(paths, "OUTPUTS", root)
    monkeypatch.delenv("ARRANK_RUN_DIR", raising=False)
    return root
