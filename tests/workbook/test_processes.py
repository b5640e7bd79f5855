"""Threads on a shared CPU (arrank.common.processes): passive OpenMP waiting for new processes,
torch threads from OMP_NUM_THREADS or the free cores, and the workbook sweep's parallelism."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from arrank.common import processes
from arrank.common.params import ParamError
from arrank.workbook import sweep, whole


def test_new_processes_wait_passively_unless_the_caller_chose():
    assert processes.openmp_wait_env({"A": "1"}) == {"A": "1", "OMP_WAIT_POLICY": "PASSIVE", "KMP_BLOCKTIME": "0"}
    assert processes.openmp_wait_env({"OMP_WAIT_POLICY": "ACTIVE"})["OMP_WAIT_POLICY"] == "ACTIVE"
    env = sweep.thread_env(2)
    assert env["OMP_WAIT_POLICY"] == os.environ.get("OMP_WAIT_POLICY", "PASSIVE")


def test_torch_threads_from_omp_num_threads_or_the_free_cores():
    assert processes.torch_threads({"OMP_NUM_THREADS": "3"}) == (3, "OMP_NUM_THREADS=3")
    with pytest.raises(ParamError, match="OMP_NUM_THREADS='two' must be a positive integer"):
        processes.torch_threads({"OMP_NUM_THREADS": "two"})
    cores = len(os.sched_getaffinity(0))
    n, why = processes.torch_threads({})
    assert 1 <= n <= cores and f"of {cores} cores free" in why


def test_a_busy_process_takes_a_core_off_the_free_ones():
    """One busy-looping process beside this one: at most cores - 0.5 free (load from other
    processes on a shared machine can only lower it further)."""
    cores = len(os.sched_getaffinity(0))
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        free = processes.free_cores(0.5)
    finally:
        hog.kill()
        hog.wait()
    assert 0.0 <= free <= cores - 0.5


def test_the_workbook_sweep_runs_one_point_per_core():
    cores = len(os.sched_getaffinity(0))
    assert whole.workbook_jobs(4) == min(cores, 4) and whole.workbook_jobs(1) == 1
