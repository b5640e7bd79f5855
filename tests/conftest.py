"""Shared fixtures: every run a test makes goes to a temporary outputs folder."""

from __future__ import annotations

import os
import signal

import pytest
import tqdm.auto  # noqa: F401

# tqdm.auto picks its bar class once, at its first import: the notebook (widget) bar when
# ipykernel.zmqshell is loaded. tests/test_jupyter_server.py loads it into this process (nbclient),
# so without this import every later test's bars (the Trainer's included) would become widgets
# that print nothing: chosen here, before any test, the bars are a plain process's.


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C as at a terminal. The tests that send SIGINT to a command they started (the runner,
    the workbook, a sweep) stand for a terminal, where a foreground command has SIGINT at its default.
    pytest started where SIGINT is ignored (a background job of a non-interactive shell, some CI
    runners) passes that on to every command it starts, and each would rightly ignore the Ctrl-C
    (``run.interrupt_on_signals`` keeps an ignored SIGINT ignored) and run to its end. So the suite's
    processes take the default handler back before any test, whatever started them."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With worker processes (``make test``: pytest-xdist, ``TEST_JOBS`` of them), the modules that train or run notebooks
    go first, the end-to-end ones of tests/ itself (notebooks, the lab, the GPU calls) before those
    of the subfolders, each module's tests kept together: the long tests start early and the short
    ones fill the gaps, instead of a long test ending the run alone."""
    if "PYTEST_XDIST_WORKER" not in os.environ:  # what each worker collects is what it is given
        return
    slow = {item.module for item in items if item.get_closest_marker("slow")}
    order = {item: i for i, item in enumerate(items)}
    items.sort(key=lambda item: (item.module not in slow, item.path.parent.name != "tests", order[item]))


@pytest.fixture
def outputs_root(tmp_path, monkeypatch):
    """A temporary outputs/ root; also used by start_run() through ARRANK_OUTPUTS-free patching."""
    from arrank.common import paths

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


def _obey_permissions() -> None:
    """In a child process started by root: drop the capabilities that let root write where the
    permission bits say no (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), so a read-only folder really
    refuses writes; a no-op for other users, whom the bits already bind."""
    import ctypes

    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # PR_CAPBSET_DROP = 24
        if libc.prctl(24, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@pytest.fixture
def obey_permissions():
    """A ``preexec_fn`` for subprocesses that must meet a read-only folder for real, as root too."""
    return _obey_permissions


@pytest.fixture(autouse=True)
def _fresh_notices():
    """Each test starts a new record of what runs tell their user (``arrank.common.notices``), as
    each run does (``outputs.start_run``): one test's notices never reach another's results.json."""
    from arrank.common import notices

    notices.forget()
    yield
