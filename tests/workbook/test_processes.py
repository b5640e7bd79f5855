"""Threads on a shared CPU (arrank.common.processes): passive OpenMP waiting for new processes,
torch threads from OMP_NUM_THREADS or the free cores, and the workbook sweep's parallelism."""

from __future__ import annotations

import os
import subprocess
import sys
import time

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


def test_process_count_and_rank_come_from_the_launchers_environment(monkeypatch):
    """WORLD_SIZE / RANK: set empty is not set; process 1 of 2 does not write; a count that is not a
    positive integer, or a rank outside [0, WORLD_SIZE), is refused, by ``check_launch`` too."""
    monkeypatch.setenv("WORLD_SIZE", "")
    monkeypatch.setenv("RANK", "")
    assert (processes.world_size(), processes.rank(), processes.is_main()) == (1, 0, True)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    assert (processes.world_size(), processes.rank(), processes.is_main()) == (2, 1, False)
    monkeypatch.setenv("RANK", "2")
    with pytest.raises(ParamError, match=r"^environment variable RANK=2 must lie in \[0, WORLD_SIZE=2\)$"):
        processes.check_launch("05_train", {"run_name": "r"})
    monkeypatch.setenv("WORLD_SIZE", "0")
    with pytest.raises(ParamError, match="^environment variable WORLD_SIZE=0 must be >= 1$"):
        processes.world_size()
    monkeypatch.setenv("WORLD_SIZE", "2.5")
    with pytest.raises(ParamError, match=r"^environment variable WORLD_SIZE='2.5' must be an integer \(set by"):
        processes.world_size()


def test_free_cores_leave_out_this_process_and_count_others_on_all_cpus(monkeypatch):
    """psutil's busy share is of all CPUs (os.cpu_count), this process's own CPU time during the
    sample is not another's load, and threads are the free cores rounded to the nearest."""
    import psutil

    def own_core_busy(window_s: float) -> float:  # this process keeps one of 2 cores busy
        start = time.process_time()
        while time.process_time() - start < window_s:
            pass
        return 50.0

    monkeypatch.setattr(processes, "usable_cores", lambda: 2)
    monkeypatch.setattr(processes.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(psutil, "cpu_percent", own_core_busy)
    assert processes.free_cores(0.05) == 2.0
    monkeypatch.setattr(processes, "usable_cores", lambda: 1)  # one core allowed of 4; another process fills one
    monkeypatch.setattr(processes.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(psutil, "cpu_percent", lambda window_s: 25.0)
    assert processes.free_cores(0.05) < 0.1
    monkeypatch.setattr(processes, "free_cores", lambda: 2.6)
    assert processes.torch_threads({}) == (3, "2.6 of 1 cores free")
