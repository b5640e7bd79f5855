"""Where a sweep's points run: one executor interface, two executors (docs/scale-out.md).

``local`` (the default): each point a child process of the sweep command, at most ``--jobs`` at
once, each with its share of the cores and, with ``--gpus G``, its own G GPUs of this machine.
``slurm``: each point one Slurm job, submitted through ``submitit`` (the standard Python client;
no scheduler is written here). Both run the same command for a point, with its output in the
attempt's log, and answer the same three calls: :meth:`start` a point, its :meth:`end` (None while
it runs), :meth:`stop` the attempts still running when the sweep is interrupted.

No job registry: a point is done exactly when its ``results.json`` exists; an attempt at it is its
log (``outputs/sweeps/<sweep>/logs/<run_name>.<time>.log``) and, for a Slurm job, submitit's
folder ``jobs/<log stem>/`` holding the ``<job id>_submitted.pkl`` submitit writes; a later call
attaches to the Slurm job of a point's newest attempt while it is queued or running.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

EXECUTORS = ("local", "slurm")
RESOURCES = {"partition": str, "gpus_per_node": int, "timeout_min": int, "mem_gb": int, "cpus_per_task": int}
LOCAL_RESOURCES = ("gpus_per_node",)  # what a local point takes; the rest asks Slurm
DEFAULT_TIMEOUT_MIN = 24 * 60  # submitit's own default (5 min on Slurm) would kill a training point
ENDED = set(
    "COMPLETED CANCELLED FAILED TIMEOUT OUT_OF_MEMORY NODE_FAIL BOOT_FAIL DEADLINE PREEMPTED REVOKED "
    "SPECIAL_EXIT GONE".split()
)
LOG_NAME = re.compile(r"(?P<run_name>.+)\.(?P<time>\d{8}-\d{6})\.log")
LOG_TIME = "%Y%m%d-%H%M%S"


class JobError(ValueError):
    """An executor or resource request that cannot be honoured here; raised before any submission."""


def check_executor(kind: str) -> str:
    """The executor name, or a JobError naming the allowed ones."""
    if kind not in EXECUTORS:
        raise JobError(f"executor={kind!r} is not known; choose one of {list(EXECUTORS)}")
    return kind


def check_resources(resources: Any, where: str = "resources") -> dict[str, Any]:
    """A resources mapping (sweep file key ``resources`` or the command-line flags) checked:
    known keys only, a partition name, positive integers (gpus_per_node may be 0)."""
    if resources is None:
        return {}
    if not isinstance(resources, dict):
        raise JobError(f"{where} must be a mapping of {sorted(RESOURCES)}, got {resources!r}")
    unknown = sorted(set(resources) - set(RESOURCES))
    if unknown:
        raise JobError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(RESOURCES)}")
    for key, value in resources.items():
        low = 0 if key == "gpus_per_node" else 1
        if RESOURCES[key] is str:
            if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z0-9_.,-]+", value):
                raise JobError(f"{where}.{key}={value!r} must be a Slurm partition name (letters, digits, _.,-)")
        elif isinstance(value, bool) or not isinstance(value, int) or value < low:
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
    if shutil.which("nvidia-smi") is None:
        return 0
    return sum(line.startswith("GPU ") for line in _run(["nvidia-smi", "-L"]).splitlines())


def gpu_groups(total: int, per_point: int) -> list[str]:
    """The CUDA_VISIBLE_DEVICES value of each point slot on a box with ``total`` GPUs when a point
    takes ``per_point`` of them: disjoint groups (8 GPUs, 2 a point: '0,1', '2,3', '4,5', '6,7')."""
    if per_point < 1:
        return []
    return [",".join(str(g) for g in range(i * per_point, (i + 1) * per_point)) for i in range(total // per_point)]


def preflight(kind: str, resources: dict[str, Any], jobs: int = 1) -> None:
    """Refuse, before anything is submitted, what this executor cannot give: Slurm without
    ``sbatch``, an unknown partition, more GPUs per node than the partition has (``sinfo``'s GRES
    column), or locally more GPUs than the box has for ``jobs`` points at once."""
    gpus = resources.get("gpus_per_node", 0)
    if kind == "local":
        have = machine_gpus() if gpus else 0
        if gpus > have:
            raise JobError(f"gpus_per_node={gpus} cannot be given: this machine has {have} GPU(s)")
        if gpus * jobs > have:
            raise JobError(
                f"jobs={jobs} points at once with gpus_per_node={gpus} each need {gpus * jobs} GPUs; this "
                f"machine has {have}: use --jobs {have // gpus} or fewer"
            )
        return
    if shutil.which("sbatch") is None:
        raise JobError(
            "executor='slurm' needs Slurm's sbatch on PATH, and it is not there: run the sweep on "
            "the cluster's login node, or use --executor local (this machine)"
        )
    found: dict[str, int] = {}  # partition -> the most GPUs one node has (gres gpu:4, gpu:a100:8(S:0-1))
    for line in _run(["sinfo", "-h", "-o", "%P|%G"]).splitlines():
        name, _, gres = line.partition("|")
        name = name.rstrip("*")
        found[name] = max(found.get(name, 0), sum(int(n) for n in re.findall(r"gpu(?::[^:,(]+)?:(\d+)", gres)))
    part = resources.get("partition")
    if part is not None and part not in found:
        raise JobError(f"partition={part!r} is not a partition of this cluster; sinfo lists {sorted(found)}")
    most = found[part] if part is not None else max(found.values(), default=0)
    if gpus > most:
        raise JobError(
            f"gpus_per_node={gpus} cannot be given: the most GPUs one node of "
            f"{'partition ' + repr(part) if part else 'this cluster'} has is {most} (sinfo GRES); "
            "ask for fewer, or name a GPU partition"
        )


def attempt_log(folder: Path, run_name: str) -> Path:
    """The log of a new attempt at a point: ``<sweep folder>/logs/<run_name>.<time>.log``."""
    return folder / "logs" / f"{run_name}.{datetime.now().strftime(LOG_TIME)}.log"


def job_folder(log: Path) -> Path:
    """submitit's folder for the Slurm job of the attempt that writes ``log``."""
    return log.parent.parent / "jobs" / log.stem


@dataclass(frozen=True)
class Job:
    """A point's Slurm job: its id and the log of the attempt that submitted it."""

    job_id: str
    log: Path

    @property
    def submitted(self) -> str:
        """When its attempt began (the time in its log's name)."""
        return datetime.strptime(LOG_NAME.fullmatch(self.log.name)["time"], LOG_TIME).isoformat()


def current_jobs(folder: Path, run_name: str | None = None) -> dict[str, Job]:
    """{run_name: job} for the points whose newest attempt is a Slurm job (one listing of the logs;
    of one point's logs only when ``run_name`` is given). A local attempt, or a submission that
    never reached the queue, has no job."""
    newest: dict[str, Path] = {}
    for log in (folder / "logs").glob(f"{glob.escape(run_name)}.*.log" if run_name else "*.log"):
        match = LOG_NAME.fullmatch(log.name)
        if match and log.name > newest.get(match["run_name"], Path()).name:
            newest[match["run_name"]] = log
    jobs = {}
    for name, log in newest.items():
        found = list(job_folder(log).glob("*_submitted.pkl"))
        if found:
            jobs[name] = Job(max(found, key=lambda p: p.stat().st_mtime).name.split("_", 1)[0], log)
    return jobs


def slurm_state(job_id: str) -> str:
    """A Slurm job's state word: ``scontrol show job``, else ``sacct``, else GONE; UNKNOWN where
    Slurm is not installed (never taken as ended). Not submitit's ``Job.state``, which asks only
    ``sacct``: UNKNOWN for ever on a cluster without accounting."""
    if shutil.which("scontrol") is None:
        return "UNKNOWN"
    match = re.search(r"\bJobState=(\S+)", _run(["scontrol", "-o", "show", "job", job_id]))
    if match:
        return match.group(1)
    out = _run(["sacct", "-n", "-X", "-P", "-o", "State", "-j", job_id]).strip()
    return out.split()[0] if out else "GONE"


def job_end(job_id: str, state: str | None = None) -> str | None:
    """How a Slurm job ended (``slurm job 12 ended CANCELLED``), or None while it is queued or running."""
    state = state or slurm_state(job_id)
    return None if state not in ENDED else f"slurm job {job_id} ended" + ("" if state == "GONE" else f" {state}")


@dataclass
class Attempt:
    """One try at a point: its log; the child process (local) or the Slurm job id; the GPUs it
    holds; what starting it did (``note``, printed by the sweep); ``ended`` once known."""

    log: Path
    proc: subprocess.Popen | None = None
    job_id: str | None = None
    slot: str | None = None
    note: str = ""
    ended: str | None = None


class Executor(Protocol):
    """What the sweep asks of an executor; ``poll_s``: seconds between two looks at the running points."""

    kind: str
    poll_s: float

    def start(self, point: Any, log: Path) -> Attempt: ...

    def end(self, attempt: Attempt) -> str | None: ...

    def stop(self, attempts: list[Attempt], forward: bool) -> None: ...


def run_command(cmd: list[str], log: str, env: dict[str, str]) -> int:
    """What a Slurm job runs: the point's command with its output appended to the attempt's log."""
    with open(log, "a") as fh:
        return subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env={**os.environ, **env}).returncode


class Local:
    """Points as child processes of the sweep command; the sweep keeps at most ``jobs`` running."""

    kind, poll_s = "local", 0.2

    def __init__(self, command: Any, env: dict[str, str], cwd: Path, gpus: int = 0):
        self.command, self.env, self.cwd = command, env, cwd
        self.slots = gpu_groups(machine_gpus(), gpus) if gpus else []  # preflight: jobs <= slots

    def start(self, point: Any, log: Path) -> Attempt:
        """Start the point's process, its output in ``log`` (on its own GPUs when they are asked for)."""
        slot = self.slots.pop(0) if self.slots else None
        env = {**self.env, "CUDA_VISIBLE_DEVICES": slot} if slot is not None else self.env
        with open(log, "w") as fh:
            proc = subprocess.Popen(self.command(point), stdout=fh, stderr=subprocess.STDOUT, cwd=self.cwd, env=env)
        return Attempt(log, proc=proc, slot=slot, note=f"on GPU {slot}" if slot is not None else "")

    def end(self, attempt: Attempt) -> str | None:
        """``exit code N`` once the process ended (its GPUs given back), else None."""
        code = attempt.proc.poll()
        if code is None:
            return None
        if attempt.slot is not None:
            self.slots.append(attempt.slot)
            attempt.slot = None
        return f"exit code {code}"

    def stop(self, attempts: list[Attempt], forward: bool, grace: float = 20.0) -> None:
        """Stop the points still running. A Ctrl-C at the terminal reached them already, so wait a
        little, then interrupt them; a SIGTERM or SIGHUP sent to the sweep alone (``forward``) is
        passed on to them at once (each keeps its run as failed and stops its kernel). Whatever
        still runs after ``grace`` seconds is terminated, then killed."""
        procs = [a.proc for a in attempts]
        deadline = time.time() + (0 if forward else 5)
        for proc in procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGTERM if forward else signal.SIGINT)
        for last in ("terminate", "kill"):
            deadline = time.time() + grace
            for proc in procs:
                try:
                    proc.wait(timeout=max(0.1, deadline - time.time()))
                except subprocess.TimeoutExpired:
                    getattr(proc, last)()


class Slurm:
    """Points as Slurm jobs through submitit; a point whose newest attempt is a job still queued or
    running is attached to, not submitted again; on an interruption the jobs run on."""

    kind, poll_s = "slurm", 5.0

    def __init__(self, command: Any, env: dict[str, str], folder: Path, resources: dict[str, Any]):
        self.command, self.env, self.folder, self.resources = command, env, folder, resources

    def start(self, point: Any, log: Path) -> Attempt:
        """Attach to the point's live job, or submit one (one task on one node, the sweep's resources)."""
        import submitit

        job = current_jobs(self.folder, point.run_name).get(point.run_name)
        if job is not None and job_end(job.job_id) is None:
            return Attempt(
                job.log, job_id=job.job_id, note=f"attached to slurm job {job.job_id} (submitted {job.submitted})"
            )
        log.touch()  # before submitting: the attempt is the point's newest
        executor = submitit.AutoExecutor(folder=job_folder(log), cluster="slurm")
        params = {
            "timeout_min": self.resources.get("timeout_min", DEFAULT_TIMEOUT_MIN),
            "nodes": 1,
            "tasks_per_node": 1,
        }
        params.update(
            {k: self.resources[k] for k in ("gpus_per_node", "mem_gb", "cpus_per_task") if k in self.resources}
        )
        if "partition" in self.resources:
            params["slurm_partition"] = self.resources["partition"]
        executor.update_parameters(**params)
        handle = executor.submit(run_command, self.command(point), str(log), self.env)
        return Attempt(log, job_id=str(handle.job_id), note=f"submitted slurm job {handle.job_id}")

    def end(self, attempt: Attempt) -> str | None:
        """``slurm job N ended STATE`` once the job ended, else None."""
        return job_end(attempt.job_id)

    def stop(self, attempts: list[Attempt], forward: bool) -> None:
        """Nothing: Slurm jobs keep running, and the next call follows them."""
