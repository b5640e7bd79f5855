"""Sweep points as ``submitit`` jobs: one job per point, on a Slurm cluster (``--executor slurm``)
or on this machine (``--executor local``, submitit's LocalExecutor, the same code path).

No job registry of its own: an attempt at a point is its log
(``outputs/sweeps/<sweep>/logs/<run_name>.<time>.log``) and, for a job, submitit's folder
``jobs/<executor>/<log stem>/`` with its ``<job id>_submitted.pkl``; a second call attaches to the
job of a point's newest attempt while it is queued or running (docs/scale-out.md).
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
from typing import Any, Callable

EXECUTORS = ("subprocess", "local", "slurm")
RESOURCES = {"partition": str, "gpus_per_node": int, "timeout_min": int, "mem_gb": int, "cpus_per_task": int}
DEFAULT_TIMEOUT_MIN = 24 * 60  # submitit's own default (5 min on Slurm) would kill a training point
ENDED = {
    "COMPLETED",
    "CANCELLED",
    "FAILED",
    "TIMEOUT",
    "OUT_OF_MEMORY",
    "NODE_FAIL",
    "BOOT_FAIL",
    "DEADLINE",
    "PREEMPTED",
    "REVOKED",
    "SPECIAL_EXIT",
    "FINISHED",
    "INTERRUPTED",
    "GONE",
}
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
    check_executor(kind)
    gpus = resources.get("gpus_per_node", 0)
    if kind == "slurm":
        if shutil.which("sbatch") is None:
            raise JobError(
                "executor='slurm' needs Slurm's sbatch on PATH, and it is not there: run the sweep on "
                "the cluster's login node, or use --executor local (this machine) or subprocess"
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
    elif kind == "local" and gpus > 0:
        have = machine_gpus()
        if gpus > have:
            raise JobError(f"gpus_per_node={gpus} cannot be given: this machine has {have} GPU(s)")
        if gpus * jobs > have:
            raise JobError(
                f"jobs={jobs} points at once with gpus_per_node={gpus} each need {gpus * jobs} GPUs; this "
                f"machine has {have}: use --jobs {have // gpus} or fewer"
            )


def make_executor(kind: str, folder: Path, resources: dict[str, Any]) -> Any:
    """A submitit executor for one job per point (one task, one node) with the sweep's resources."""
    import submitit

    executor = submitit.AutoExecutor(folder=folder, cluster=kind)
    params = {"timeout_min": resources.get("timeout_min", DEFAULT_TIMEOUT_MIN), "nodes": 1, "tasks_per_node": 1}
    params.update({k: resources[k] for k in ("gpus_per_node", "mem_gb", "cpus_per_task") if k in resources})
    if kind == "slurm" and "partition" in resources:
        params["slurm_partition"] = resources["partition"]
    executor.update_parameters(**params)
    return executor


@dataclass(frozen=True)
class Job:
    """A point's job: its id (Slurm's, or the local controller's process id), the executor that
    submitted it, and the log it writes."""

    job_id: str
    executor: str
    log: Path

    @property
    def submitted(self) -> str:
        """When its attempt began (the time in its log's name)."""
        return datetime.strptime(LOG_NAME.fullmatch(self.log.name)["time"], LOG_TIME).isoformat()


def attempt_log(folder: Path, run_name: str) -> Path:
    """The log of a new attempt at a point: ``<sweep folder>/logs/<run_name>.<time>.log``."""
    return folder / "logs" / f"{run_name}.{datetime.now().strftime(LOG_TIME)}.log"


def job_folder(log: Path, kind: str) -> Path:
    """submitit's folder for the job of the attempt that writes ``log``."""
    return log.parent.parent / "jobs" / kind / log.stem


def current_jobs(folder: Path, run_name: str | None = None) -> dict[str, Job]:
    """{run_name: job} for the points whose newest attempt is a job (one listing of the logs; of
    one point's logs only when ``run_name`` is given). A subprocess attempt, or a submission that
    never reached the queue, has no job."""
    newest: dict[str, Path] = {}
    for log in (folder / "logs").glob(f"{glob.escape(run_name)}.*.log" if run_name else "*.log"):
        match = LOG_NAME.fullmatch(log.name)
        if match and log.name > newest.get(match["run_name"], Path()).name:
            newest[match["run_name"]] = log
    jobs = {}
    for name, log in newest.items():
        for kind in ("local", "slurm"):
            found = list(job_folder(log, kind).glob("*_submitted.pkl"))
            if found:
                jobs[name] = Job(max(found, key=lambda p: p.stat().st_mtime).name.split("_", 1)[0], kind, log)
                break
    return jobs


def job_state(job: Job) -> str:
    """A job's state: a Slurm state word (``scontrol show job``, else ``sacct``, else GONE; UNKNOWN
    where Slurm is not installed, so never taken as ended), or for a local job RUNNING / GONE from
    its controller's process (a zombie has ended). Not submitit's ``Job.state``: docs/scale-out.md."""
    if job.executor == "local":
        try:
            fields = Path(f"/proc/{int(job.job_id)}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, ValueError, IndexError):
            return "GONE"
        return "GONE" if fields[0] in ("Z", "X") else "RUNNING"
    if shutil.which("scontrol") is None:
        return "UNKNOWN"
    match = re.search(r"\bJobState=(\S+)", _run(["scontrol", "-o", "show", "job", job.job_id]))
    if match:
        return match.group(1)
    out = _run(["sacct", "-n", "-X", "-P", "-o", "State", "-j", job.job_id]).strip()
    return out.split()[0] if out else "GONE"


def ended(state: str) -> bool:
    """Whether a job in this state will do nothing more."""
    return state in ENDED


def cancel(job: Job) -> None:
    """Interrupt a job (scancel; SIGINT to a local job's controller) so it stops as Ctrl-C would."""
    if job.executor == "slurm":
        subprocess.run(["scancel", job.job_id], capture_output=True, timeout=60)
        return
    try:
        os.kill(int(job.job_id), signal.SIGINT)
    except ProcessLookupError:
        pass


def wait_for(job: Job, stop: Callable[[], bool], poll_s: float, handle: Any = None) -> str:
    """Poll a job until it ends (its final state) or ``stop()`` is true (its state then). A local
    job submitted by this process is polled through its submitit handle (no zombie is left)."""
    while True:
        if handle is not None and job.executor == "local":
            state = "GONE" if handle.done() else "RUNNING"
        else:
            state = job_state(job)
        if ended(state) or stop():
            return state
        time.sleep(poll_s)
