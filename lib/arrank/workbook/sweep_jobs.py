"""Where a sweep's points run: one executor interface, two executors (docs/scale-out.md).

``local`` (the default): each point a child process of the sweep command, at most ``--jobs`` at
once, each with its share of the cores and, with ``--gpus G``, its own G GPUs of this machine.
``slurm``: each point one Slurm job, submitted through ``submitit`` (the standard Python client;
no scheduler is written here). Both are made as ``EXECUTORS[kind](command, env, resources, jobs)``,
which refuses what the executor cannot give before anything runs; both run ``command`` + the
point's overrides (JSON) for a point, with its output in the attempt's log, and answer the same
three calls: :meth:`start` a point, its :meth:`end` (None while it runs), :meth:`stop` the
attempts still running when the sweep is interrupted; ``poll_s``: seconds between two looks at
the running points.

No job registry: a point is done exactly when its ``results.json`` exists; an attempt at it is its
log (``outputs/sweeps/<sweep>/logs/<run_name>.<time>.log``) and, for a Slurm job, submitit's
folder ``jobs/<log stem>/`` holding the ``<job id>_submitted.pkl`` submitit writes; a later call
attaches to the Slurm job of a point's newest attempt while it is queued or running.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from subprocess import Popen
from typing import Any

from arrank.common import paths, processes

RESOURCES = ("partition", "gpus_per_node", "timeout_min", "mem_gb", "cpus_per_task")
LOCAL_RESOURCES = ("gpus_per_node",)  # what a local point takes; the rest asks Slurm
DEFAULT_TIMEOUT_MIN = 24 * 60  # submitit's own default (5 min on Slurm) would kill a training point
ENDED = set(
    "COMPLETED CANCELLED FAILED TIMEOUT OUT_OF_MEMORY NODE_FAIL BOOT_FAIL DEADLINE PREEMPTED REVOKED "
    "SPECIAL_EXIT GONE".split()
)
LOG_TIME = "%Y%m%d-%H%M%S"


class JobError(ValueError):
    """An executor or resource request that cannot be honoured here; raised before any submission."""


def check_resources(resources: Any, where: str = "resources") -> dict[str, Any]:
    """A resources mapping (sweep file key ``resources`` or the command-line flags) checked:
    known keys only, a partition name, positive integers (gpus_per_node may be 0)."""
    if resources is None:
        return {}
    if not isinstance(resources, dict):
        raise JobError(f"{where} must be a mapping of {sorted(RESOURCES)}, got {resources!r}")
    if unknown := sorted(set(resources) - set(RESOURCES)):
        raise JobError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(RESOURCES)}")
    for key, value in resources.items():
        low = int(key != "gpus_per_node")
        if key == "partition" and not (isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9_.,-]+", value)):
            raise JobError(f"{where}.{key}={value!r} must be a Slurm partition name (letters, digits, _.,-)")
        if key != "partition" and (type(value) is not int or value < low):  # not a bool either
            raise JobError(f"{where}.{key}={value!r} must be an integer >= {low}")
    return dict(resources)


def _run(cmd: list[str]) -> str:
    """A Slurm/NVIDIA query's stdout ('' when the program is not on this machine)."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
    except FileNotFoundError:
        return ""


def machine_gpus() -> int:
    """GPUs this machine has (``nvidia-smi -L``; 0 without it)."""
    return sum(line.startswith("GPU ") for line in _run(["nvidia-smi", "-L"]).splitlines())


def gpu_groups(total: int, per_point: int) -> list[str]:
    """The CUDA_VISIBLE_DEVICES value of each point slot on a box with ``total`` GPUs when a point
    takes ``per_point`` of them: disjoint groups (8 GPUs, 2 a point: '0,1', '2,3', '4,5', '6,7')."""
    if per_point < 1:
        return []
    return [",".join(str(g) for g in range(i * per_point, (i + 1) * per_point)) for i in range(total // per_point)]


def attempt_log(folder: Path, run_name: str) -> Path:
    """The log of a new attempt at a point: ``<sweep folder>/logs/<run_name>.<time>.log``."""
    return folder / "logs" / f"{run_name}.{datetime.now().strftime(LOG_TIME)}.log"


def job_folder(log: Path) -> Path:
    """submitit's folder for the Slurm job of the attempt that writes ``log``."""
    return log.parent.parent / "jobs" / log.stem


@dataclass
class Attempt:
    """One try at a point: its log; the child process (local) or the Slurm job id; the GPUs it
    holds; what starting or attaching to it did (``note``, printed by the sweep); ``ended`` once
    known; when the sweep began it or attached to it (``began``, ``time.time()``)."""

    log: Path
    proc: subprocess.Popen | None = None
    job_id: str | None = None
    slot: str | None = None
    note: str = ""
    ended: str | None = None
    began: float = field(default_factory=time.time, compare=False)


def current_jobs(folder: Path) -> dict[str, Attempt]:
    """{run_name: attempt} for the points whose newest attempt (the last log in name order) is a
    Slurm job: its ``job_id``, and the ``note`` a call that attaches to it prints (with the time in
    the log's name, ``<run_name>.<time>.log``); one listing of the logs. A local attempt, or a
    submission that never reached the queue, has no job."""
    newest = {log.name.rsplit(".", 2)[0]: log for log in sorted((folder / "logs").glob("*.log"))}
    jobs = {}
    for name, log in newest.items():
        if found := sorted(job_folder(log).glob("*_submitted.pkl"), key=os.path.getmtime):  # the last submitted
            job_id, begun = found[-1].name.split("_", 1)[0], datetime.strptime(log.name.rsplit(".", 2)[1], LOG_TIME)
            jobs[name] = Attempt(
                log, job_id=job_id, note=f"attached to slurm job {job_id} (submitted {begun.isoformat()})"
            )
    return jobs


def slurm_state(job_id: str) -> str:
    """A Slurm job's state word: ``scontrol show job``, else ``sacct``, else GONE; UNKNOWN where
    Slurm is not installed (never taken as ended). Not submitit's ``Job.state``, which asks only
    ``sacct``: UNKNOWN for ever on a cluster without accounting."""
    if shutil.which("scontrol") is None:
        return "UNKNOWN"
    if match := re.search(r"\bJobState=(\S+)", _run(["scontrol", "-o", "show", "job", job_id])):
        return match.group(1)
    out = _run(["sacct", "-n", "-X", "-P", "-o", "State", "-j", job_id]).strip()
    return out.split()[0] if out else "GONE"


def job_end(job_id: str, state: str | None = None) -> str | None:
    """How a Slurm job ended (``slurm job 12 ended CANCELLED``), or None while it is queued or running."""
    state = state or slurm_state(job_id)
    return None if state not in ENDED else f"slurm job {job_id} ended" + ("" if state == "GONE" else f" {state}")


def run_command(cmd: list[str], log: str, env: dict[str, str]) -> int:
    """What a Slurm job runs: the point's command with its output appended to the attempt's log."""
    with open(log, "a") as fh:
        return subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env={**os.environ, **env}).returncode


class Local:
    """Points as child processes of the sweep command; the sweep keeps at most ``jobs`` running.
    Refuses more GPUs than this machine has for ``jobs`` points at once."""

    kind, poll_s = "local", 0.2

    def __init__(self, command: list[str], env: dict[str, str], resources: dict[str, Any], jobs: int):
        gpus = resources.get("gpus_per_node", 0)  # the only resource a local point takes
        have = machine_gpus() if gpus else 0
        if gpus > have:
            raise JobError(f"gpus_per_node={gpus} cannot be given: this machine has {have} GPU(s)")
        if gpus * jobs > have:
            raise JobError(
                f"jobs={jobs} points at once with gpus_per_node={gpus} each need {gpus * jobs} GPUs; this "
                f"machine has {have}: use --jobs {have // gpus} or fewer"
            )
        self.command, self.env, self.slots = command, env, gpu_groups(have, gpus)

    def start(self, point: Any, log: Path) -> Attempt:
        """Start the point's process, its output in ``log`` (on its own GPUs when they are asked for)."""
        slot = self.slots.pop(0) if self.slots else None
        env = {**self.env, "CUDA_VISIBLE_DEVICES": slot} if slot is not None else self.env
        with open(log, "w") as fh:
            cmd = [*self.command, json.dumps(point.overrides)]
            proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=paths.ROOT, env=env)
        return Attempt(log, proc=proc, slot=slot, note=f"on GPU {slot}" if slot is not None else "")

    def end(self, attempt: Attempt) -> str | None:
        """``exit code N`` once the process ended (its GPUs given back), else None."""
        if (code := attempt.proc.poll()) is not None and attempt.slot is not None:
            self.slots.append(attempt.slot)
            attempt.slot = None
        return None if code is None else f"exit code {code}"

    def stop(self, attempts: list[Attempt], forward: bool, grace: float = 20.0) -> None:
        """Stop the points still running. A Ctrl-C at the terminal reached them already, so wait a
        little, then interrupt them; a SIGTERM or SIGHUP sent to the sweep alone (``forward``) is
        passed on to them at once (each keeps its run as failed and stops its kernel). Whatever
        still runs after ``grace`` seconds is terminated, then killed."""
        first = signal.SIGTERM if forward else signal.SIGINT
        steps = ((0 if forward else 5, lambda p: p.send_signal(first)), (grace, Popen.terminate), (grace, Popen.kill))
        for wait, act in steps:
            deadline = time.time() + wait
            for proc in (a.proc for a in attempts):
                try:
                    proc.wait(timeout=max(0.1, deadline - time.time()))
                except subprocess.TimeoutExpired:
                    act(proc)


class Slurm:
    """Points as Slurm jobs through submitit (one task on one node, the sweep's resources); on an
    interruption the jobs run on. Refuses, before anything is submitted, Slurm without ``sbatch``,
    an unknown partition, or more GPUs per node than the partition has (``sinfo``'s GRES column)."""

    kind, poll_s = "slurm", 5.0

    def __init__(self, command: list[str], env: dict[str, str], resources: dict[str, Any], jobs: int):
        if shutil.which("sbatch") is None:
            raise JobError(
                "executor='slurm' needs Slurm's sbatch on PATH, and it is not there: run the sweep on "
                "the cluster's login node, or use --executor local (this machine)"
            )
        found: dict[str, int] = {}  # partition -> the most GPUs one node has (gres gpu:4, gpu:a100:8(S:0-1))
        for line in _run(["sinfo", "-h", "-o", "%P|%G"]).splitlines():
            name, _, gres = line.partition("|")
            gpus = sum(int(n) for n in re.findall(r"gpu(?::[^:,(]+)?:(\d+)", gres))
            found[name.rstrip("*")] = max(found.get(name.rstrip("*"), 0), gpus)
        part, gpus = resources.get("partition"), resources.get("gpus_per_node", 0)
        if part is not None and part not in found:
            raise JobError(f"partition={part!r} is not a partition of this cluster; sinfo lists {sorted(found)}")
        most = found[part] if part is not None else max(found.values(), default=0)
        if gpus > most:
            raise JobError(
                f"gpus_per_node={gpus} cannot be given: the most GPUs one node of "
                f"{'partition ' + repr(part) if part else 'this cluster'} has is {most} (sinfo GRES); "
                "ask for fewer, or name a GPU partition"
            )
        kept = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", *processes.OPENMP_WAIT)  # the job inherits the rest
        self.command, self.env, self.resources = command, {k: v for k, v in env.items() if k in kept}, resources

    def start(self, point: Any, log: Path) -> Attempt:
        """Submit the point's job (the sweep attaches to a point's live job instead of calling this)."""
        import submitit

        log.touch()  # before submitting: the attempt is the point's newest
        executor = submitit.AutoExecutor(folder=job_folder(log), cluster="slurm")
        params = {"timeout_min": DEFAULT_TIMEOUT_MIN, **self.resources}
        params = {("slurm_partition" if k == "partition" else k): v for k, v in params.items()}
        executor.update_parameters(nodes=1, tasks_per_node=1, **params)
        handle = executor.submit(run_command, [*self.command, json.dumps(point.overrides)], str(log), self.env)
        return Attempt(log, job_id=str(handle.job_id), note=f"submitted slurm job {handle.job_id}")

    def end(self, attempt: Attempt) -> str | None:
        """``slurm job N ended STATE`` once the job ended, else None."""
        return job_end(attempt.job_id)

    def stop(self, attempts: list[Attempt], forward: bool) -> None:
        """Nothing: Slurm jobs keep running, and the next call follows them."""


EXECUTORS = {"local": Local, "slurm": Slurm}
