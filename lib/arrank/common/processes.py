"""Several processes for one training run (torchrun): which process this is (``RANK``,
``WORLD_SIZE``) and what the runner refuses before a kernel starts (docs/scale-out.md); and how
many threads a run takes on a shared CPU (docs/measurements.md, "Threads on a busy machine").
"""

from __future__ import annotations

import os
import time
from typing import Any

from arrank.common.display import shown
from arrank.common.params import ParamError

MULTI_PROCESS_NOTEBOOKS = ("05_train",)


def _env_int(name: str, default: int) -> int:
    if not (raw := os.environ.get(name)):
        return default
    try:
        return int(raw)
    except ValueError:
        raise ParamError(
            f"environment variable {name}={raw!r} must be an integer (set by torchrun / accelerate launch)"
        ) from None


def world_size() -> int:
    """How many processes train together (``WORLD_SIZE``; 1 when it is not set)."""
    size = _env_int("WORLD_SIZE", 1)
    if size < 1:
        raise ParamError(f"environment variable WORLD_SIZE={size} must be >= 1")
    return size


def rank() -> int:
    """This process's rank in [0, WORLD_SIZE) (``RANK``; 0 when it is not set)."""
    r, size = _env_int("RANK", 0), world_size()
    if not 0 <= r < size:
        raise ParamError(f"environment variable RANK={r} must lie in [0, WORLD_SIZE={size})")
    return r


def is_main() -> bool:
    """Whether this process writes (rank 0, or the only process)."""
    return rank() == 0


def unsloth_refusal(backend: str) -> str | None:
    """Why ``backend`` cannot train under this many processes, or None."""
    if backend == "unsloth" and world_size() > 1:
        return (
            f"backend='unsloth' trains on one GPU only (Unsloth does not support multi-GPU "
            f"training), and this is one of {world_size()} processes (WORLD_SIZE): use "
            "backend='transformers' or 'auto' (transformers + peft under several processes), "
            "or launch a single process"
        )
    return None


def check_launch(stem: str, values: dict[str, Any]) -> None:
    """Refuse, before any work, a notebook run that several processes cannot share: a notebook
    other than 05_train, ``run_name="auto"`` (each process would stamp its own time), ``eval_steps``
    (process 0 alone scores the held-out queries), Unsloth
    (``backend="unsloth"``, ``load_in_4bit``: one GPU only). Nothing to check for one process."""
    size = world_size()
    rank()  # a RANK outside [0, WORLD_SIZE) is an error here, not in the kernel
    if size == 1:
        return
    if stem not in MULTI_PROCESS_NOTEBOOKS:
        raise ParamError(
            f"{stem} runs in one process, and this is one of {size} (WORLD_SIZE={size}): "
            f"only {list(MULTI_PROCESS_NOTEBOOKS)} train on several processes; run "
            f"{stem} without torchrun / accelerate launch"
        )
    if values.get("run_name") == "auto":
        raise ParamError(
            f"run_name='auto' under {size} processes: each would stamp its own time, and "
            "they must share one run name (and its checkpoints); give -p run_name NAME"
        )
    if values.get("eval_steps"):
        raise ParamError(
            f"eval_steps={shown(values['eval_steps'])} scores the held-out queries on one process, and this is one "
            f"of {size}: give eval_steps [] or launch a single process"
        )
    if why := unsloth_refusal(values.get("backend", "auto")):
        raise ParamError(why)
    if values.get("load_in_4bit"):
        raise ParamError(
            f"load_in_4bit=True loads 4-bit base weights through Unsloth, which trains on one GPU "
            f"only, and this is one of {size} processes: give load_in_4bit=false (16-bit LoRA "
            "through transformers + peft) or launch a single process"
        )


# Threads on a shared CPU: OpenMP workers wait passively, and a run takes as many threads as
# cores are free when it starts, unless OMP_NUM_THREADS says (docs/measurements.md).

OPENMP_WAIT = {"OMP_WAIT_POLICY": "PASSIVE", "KMP_BLOCKTIME": "0"}  # libgomp; Intel OpenMP


def openmp_wait_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` with passive OpenMP waiting (``OPENMP_WAIT``) where the caller has not chosen; the
    OpenMP runtime reads it when torch loads, so it belongs in a new process's environment."""
    return {**OPENMP_WAIT, **env}


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, where the system has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def free_cores(window_s: float = 0.3) -> float:
    """Cores this process may use minus what other processes kept busy over a ``window_s`` sample
    of all CPUs (psutil's busy share, idle and iowait left out)."""
    import psutil

    cores = usable_cores()
    own0 = time.process_time()
    busy = psutil.cpu_percent(window_s) / 100 * (os.cpu_count() or cores)
    others = busy - (time.process_time() - own0) / window_s
    return max(0.0, min(float(cores), cores - max(0.0, others)))


def torch_threads(env: dict[str, str] | None = None) -> tuple[int, str]:
    """(torch threads for a run starting now, why): ``OMP_NUM_THREADS`` when set, else the cores
    free now (:func:`free_cores`, rounded, at least 1)."""
    env = os.environ if env is None else env
    if given := env.get("OMP_NUM_THREADS"):
        n = int(given) if given.strip().isdigit() else 0
        if n < 1:
            raise ParamError(f"environment variable OMP_NUM_THREADS={given!r} must be a positive integer")
        return n, f"OMP_NUM_THREADS={n}"
    free = free_cores()
    return max(1, round(free)), f"{free:.1f} of {usable_cores()} cores free"
