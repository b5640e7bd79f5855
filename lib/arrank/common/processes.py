"""Several processes for one training run: which process this is, and what is allowed.

``torchrun --nproc_per_node N`` and ``accelerate launch`` start N copies of a command with
``RANK``/``WORLD_SIZE``/``LOCAL_RANK``/``MASTER_ADDR``/``MASTER_PORT`` set; the transformers
Trainer reads them and trains with DistributedDataParallel (DDP: gradients averaged by DDP's own
all-reduce). This module only reads those variables, so the runner (``arrank.workbook.run``) can
decide before any kernel starts that process 0 writes the run and the others write nothing
(docs/scale-out.md, "Several processes for one training run"), and refuses what cannot work:

- a notebook other than ``05_train`` (only training is spread over processes);
- ``run_name="auto"``: each process would stamp its own time, and the processes must share one
  name (its checkpoints folder is where every process resumes from);
- ``backend="unsloth"``, and ``load_in_4bit=True`` (which loads through Unsloth): Unsloth trains on
  one GPU only; ``backend="auto"`` resolves to transformers + peft under several processes
  (``arrank.training.models.resolve_backend``).
"""

from __future__ import annotations

import os
from typing import Any

from arrank.common.params import ParamError

MULTI_PROCESS_NOTEBOOKS = ("05_train",)


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
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
    """Refuse, before any work, a notebook run that several processes cannot share (module
    docstring); nothing to check for a single process."""
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
    why = unsloth_refusal(values.get("backend", "auto"))
    if why:
        raise ParamError(why)
    if values.get("load_in_4bit"):
        raise ParamError(
            f"load_in_4bit=True loads 4-bit base weights through Unsloth, which trains on one GPU "
            f"only, and this is one of {size} processes: give load_in_4bit=false (16-bit LoRA "
            "through transformers + peft) or launch a single process"
        )


# --------------------------------------------------------------------------- threads on a shared CPU
#
# The rule (docs/measurements.md, "Threads on a busy machine"): OpenMP workers that spin while
# they wait for each other collapse as soon as another process wants one of their cores, where
# one thread per process barely slows down. So every kernel and sweep point waits passively
# (:func:`openmp_wait_env`, set before torch starts its thread pool), and a run takes as many
# threads as cores are free when it starts (:func:`torch_threads`), unless OMP_NUM_THREADS says.

OPENMP_WAIT = {"OMP_WAIT_POLICY": "PASSIVE", "KMP_BLOCKTIME": "0"}  # libgomp; Intel OpenMP


def openmp_wait_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` with passive OpenMP waiting (``OPENMP_WAIT``) where the caller has not chosen:
    idle workers sleep instead of spinning on a core another process needs. Read by the OpenMP
    runtime when torch loads, so it belongs in the environment of a new process (a kernel, a
    sweep point), not in a running one."""
    return {**OPENMP_WAIT, **env}


def _cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs from /proc/stat, (0, 0) where unreadable."""
    try:
        with open("/proc/stat") as fh:
            fields = [int(x) for x in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields[:8]) - idle, sum(fields[:8])


def free_cores(window_s: float = 0.3) -> float:
    """Cores this process may use (``os.sched_getaffinity``) minus what other processes kept
    busy over a ``window_s`` sample of /proc/stat (this process's own CPU time taken out). On a
    system without /proc/stat: the usable cores."""
    import time

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    busy0, total0 = _cpu_ticks()
    own0 = time.process_time()
    time.sleep(window_s)
    busy1, total1 = _cpu_ticks()
    own = time.process_time() - own0
    if total1 <= total0:
        return float(cores)
    ncpu = os.cpu_count() or cores
    others = (busy1 - busy0) / (total1 - total0) * ncpu - own / window_s
    return max(0.0, min(float(cores), cores - max(0.0, others)))


def torch_threads(env: dict[str, str] | None = None) -> tuple[int, str]:
    """(torch threads for a run starting now, why): ``OMP_NUM_THREADS`` when set (a sweep with
    ``--jobs N`` sets cores / N; the caller's choice wins), else the cores free now
    (:func:`free_cores`, rounded, at least 1)."""
    env = os.environ if env is None else env
    given = env.get("OMP_NUM_THREADS")
    if given:
        try:
            n = int(given)
        except ValueError:
            raise ParamError(f"environment variable OMP_NUM_THREADS={given!r} must be a positive integer") from None
        if n < 1:
            raise ParamError(f"environment variable OMP_NUM_THREADS={given!r} must be a positive integer")
        return n, f"OMP_NUM_THREADS={n}"
    free = free_cores()
    n = max(1, round(free))
    return (
        n,
        f"{free:.1f} of {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()} cores free",
    )
