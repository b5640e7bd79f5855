"""A real single-node Slurm cluster: Debian's ``slurm-wlm`` and ``munge`` started on
loopback from a slurm.conf generated in a temporary folder (munged, slurmctld and slurmd in the
foreground, stopped at the end with every job they ran). A two-point sweep of notebook 01 is
submitted through ``--executor slurm`` (submitit), one job is cancelled with ``scancel``, and the
next call records it and reruns only that point while it attaches to the other point's job.

Where the daemons cannot start (packages missing, not root) the test is skipped with the reason
(``pytest -ra`` prints it); CI (``.ci/run``) installs the packages as root.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from arrank.workbook import sweep

pytestmark = pytest.mark.slow  # trains a model or runs notebooks / kernels / sweeps

SBIN = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "scontrol", "sinfo")

CONF = """ClusterName=arrank
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={dir}/munge.sock
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
SwitchType=switch/none
MinJobAge=600
NodeName=localhost NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""


def free_port() -> int:
    """A TCP port nobody listens on now (loopback)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def why_not() -> str | None:
    """Why a single-node Slurm cannot start here, or None when it can."""
    missing = [p for p in PROGRAMS if shutil.which(p, path=SBIN) is None]
    if missing:
        return (
            f"Slurm is not installed ({', '.join(missing)} missing): apt-get install slurm-wlm munge "
            "(.ci/run does, as root)"
        )
    if os.geteuid() != 0:
        return "slurmd runs jobs as their user and must start as root; this test runs as uid " + str(os.geteuid())
    return None


def _wait(check, seconds: float, what: str, logs: list[Path]) -> None:
    deadline = time.time() + seconds
    while not check():
        if time.time() > deadline:
            tails = "; ".join(f"{p.name}: {p.read_text(errors='replace')[-300:]!r}" for p in logs if p.exists())
            pytest.skip(f"single-node Slurm did not start ({what} within {seconds:.0f} s); {tails}")
        time.sleep(0.2)


def _stop(procs: list[subprocess.Popen]) -> None:
    for proc in reversed(procs):
        if proc.poll() is None:
            proc.terminate()
    for proc in reversed(procs):
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def slurm(tmp_path_factory, monkeypatch):
    """munged + slurmctld + slurmd on loopback, SLURM_CONF set for this test; yields the folder.
    At the end: every job cancelled, the three daemons stopped (they are this fixture's children)."""
    reason = why_not()
    if reason:
        pytest.skip(reason)
    folder = Path(str(tmp_path_factory.mktemp("slurm")))  # short path: the munge socket name has a length limit
    for sub in ("state", "spool"):
        (folder / sub).mkdir()
    key = folder / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    folder.chmod(0o700)
    conf = folder / "slurm.conf"
    conf.write_text(CONF.format(dir=folder, ctld_port=free_port(), d_port=free_port(), cpus=2))
    monkeypatch.setenv("SLURM_CONF", str(conf))
    env = dict(os.environ, SLURM_CONF=str(conf))
    logs = [folder / "munged.log", folder / "slurmctld.log", folder / "slurmd.log"]
    procs: list[subprocess.Popen] = []
    try:
        procs.append(
            subprocess.Popen(
                [
                    shutil.which("munged", path=SBIN),
                    "-F",
                    "--force",
                    f"--socket={folder}/munge.sock",
                    f"--key-file={key}",
                    f"--pid-file={folder}/munged.pid",
                    f"--log-file={logs[0]}",
                    f"--seed-file={folder}/munge.seed",
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.STDOUT,
            )
        )
        _wait(lambda: (folder / "munge.sock").exists(), 10, "munged's socket", logs)
        procs.append(
            subprocess.Popen(
                [shutil.which("slurmctld", path=SBIN), "-D", "-i", "-f", str(conf)],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.STDOUT,
            )
        )
        procs.append(
            subprocess.Popen(
                [shutil.which("slurmd", path=SBIN), "-D", "-N", "localhost", "-f", str(conf)],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.STDOUT,
            )
        )

        def idle() -> bool:
            out = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, env=env).stdout
            return out.strip() == "idle"

        _wait(idle, 30, "the node idle in sinfo", logs)
        yield folder
    finally:
        ids = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True, env=env).stdout.split()
        if ids:
            subprocess.run(["scancel", *ids], capture_output=True, env=env)
            deadline = time.time() + 20
            while (
                time.time() < deadline
                and subprocess.run(["squeue", "-h"], capture_output=True, text=True, env=env).stdout.strip()
            ):
                time.sleep(0.5)
        _stop(procs)


def squeue_ids() -> list[str]:
    """The ids of the jobs the cluster has queued or running."""
    return subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True).stdout.split()


def test_slurm_cancelled_job_is_recorded_and_only_its_point_reruns(slurm, tmp_path, outputs_root, monkeypatch):
    monkeypatch.setattr(sweep.sweep_jobs.Slurm, "poll_s", 0.5)  # a look at the jobs every 0.5 s, not 5
    path = tmp_path / "cap.yaml"
    path.write_text(
        "notebook: 01_de_capacity\nfixed: {k_max_exact: 3, mc_queries: 300}\ngrid: {k_max_bound: [20, 21]}\n"
    )
    s = sweep.load_sweep(path)
    folder = outputs_root / "sweeps" / "cap"

    # a GPU count the cluster cannot give: refused before anything is submitted
    with pytest.raises(
        sweep.sweep_jobs.JobError,
        match=r"gpus_per_node=1 cannot be given: the most GPUs one node of "
        r"this cluster has is 0 \(sinfo GRES\)",
    ):
        sweep.run_sweep(s, outputs_root=outputs_root, executor="slurm", resources={"gpus_per_node": 1})
    with pytest.raises(
        sweep.sweep_jobs.JobError,
        match=r"partition='gpu' is not a partition of this cluster; "
        r"sinfo lists \['debug'\]",
    ):
        sweep.run_sweep(s, outputs_root=outputs_root, executor="slurm", resources={"partition": "gpu"})
    assert squeue_ids() == [] and not (folder / "jobs").exists()

    # call 1: submit both points and return; submitit's files and --list name the jobs
    resources = {"partition": "debug", "cpus_per_task": 1, "timeout_min": 10}
    rows = sweep.run_sweep(
        s, outputs_root=outputs_root, echo=lambda _: None, executor="slurm", resources=resources, wait=False
    )
    ids = [r["job_id"] for r in rows]
    assert [r["status"] for r in rows] == ["submitted", "submitted"] and sorted(squeue_ids()) == sorted(ids)
    assert {k: v.job_id for k, v in sweep.sweep_jobs.current_jobs(folder).items()} == {
        p.run_name: i for p, i in zip(s.points, ids)
    }
    listing = sweep.describe(s, outputs_root).splitlines()
    for line, job_id in zip(listing[2:], ids):
        assert line.split()[0] in ("queued", "running") and f"(slurm job {job_id} " in line

    # scancel the second job; call 2 records it, attaches to the first job, reruns only the second point
    subprocess.run(["scancel", ids[1]], check=True)
    lines: list[str] = []
    rows = sweep.run_sweep(s, outputs_root=outputs_root, echo=lines.append, executor="slurm", resources=resources)
    assert [r["status"] for r in rows] == ["done", "done"], lines
    assert rows[0]["job_id"] == ids[0] and rows[1]["job_id"] not in ids  # the first point was not submitted again
    assert rows[1]["previous_error"].endswith(f"(slurm job {ids[1]} ended CANCELLED)") or rows[1][
        "previous_error"
    ].startswith(f"slurm job {ids[1]} ended CANCELLED")
    assert any(f"attached to slurm job {ids[0]}" in ln for ln in lines)
    assert sum("submitted slurm job" in ln for ln in lines) == 1
    assert len(list((folder / "jobs").rglob("*_submitted.pkl"))) == 3  # 2 + the rerun, nothing twice
    status = (folder / "status.json").read_text()
    assert f"slurm job {ids[1]} ended CANCELLED" in status
    current = sweep.sweep_jobs.current_jobs(folder)  # each point's newest job: the attached one, the rerun
    assert [current[p.run_name].job_id for p in s.points] == [ids[0], rows[1]["job_id"]] and squeue_ids() == []

    # call 3: nothing left to do, nothing submitted
    rows = sweep.run_sweep(s, outputs_root=outputs_root, echo=lambda _: None, executor="slurm", resources=resources)
    assert [r["status"] for r in rows] == ["done earlier", "done earlier"]
    assert len(list((folder / "jobs").rglob("*_submitted.pkl"))) == 3
