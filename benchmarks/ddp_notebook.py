"""Notebook 05 on 2 processes (torchrun, DDP, gloo on CPU) against 1 process with twice the batch,
as the runner launches it: the runs' training logs, weights and held-out metrics, and which folders each wrote.

    OMP_NUM_THREADS=1 python benchmarks/ddp_notebook.py [--steps 20] [--batch 8] [--kill-after 0]

Both runs go to a fresh outputs folder (``ARRANK_OUTPUTS``): ``torchrun --standalone
--nproc_per_node 2 -m arrank.workbook.run 05 -p batch_size B -p run_name ddp`` and ``python -m
arrank.workbook.run 05 -p batch_size 2B -p run_name one``, with the same other parameters (quick
profile, fractional lambda, unpacked, 50 held-out queries). ``--kill-after S`` stops the 2-process
run (SIGTERM to torchrun) a few seconds after its checkpoint of step S exists (the quick
profile saves every 300 steps) and runs the same command again, which resumes on both processes;
it is then compared with the same 2-process run never interrupted. ``--accumulate`` adds 1 process
with B items x 2 accumulated micro-batches, compared with the 2-process run (the same arithmetic
in the same float order) and with 1 process x 2B (the same arithmetic, another order). Printed:
the wall time of each command, the largest differences of the logged losses, gradient norms and
weights, the held-out metrics that differ, and the folders under outputs/05_train.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMON = ["--no-progress", "-p", "eval_queries", "50", "-p", "scheme", "fractional", "-p", "packing", "none"]


def launch(args: list[str], env: dict[str, str], kill_when: Path | None = None) -> tuple[int, float]:
    """Run a command; with ``kill_when``, SIGTERM it a few seconds after that path exists."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    if kill_when is not None:
        while proc.poll() is None and not kill_when.exists():
            time.sleep(0.5)
        time.sleep(5)
        proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate()
    wall = time.perf_counter() - start
    print(
        f"{wall:6.1f} s rc {proc.returncode}: {' '.join(args[2:])}\n  " + "\n  ".join(out.strip().splitlines()[-2:]),
        flush=True,
    )
    return proc.returncode, wall


def compare(a: Path, b: Path) -> None:
    """Print the largest differences between two finished 05_train runs."""
    import pandas as pd
    from safetensors.torch import load_file

    la, lb = pd.read_csv(a / "training_log.csv"), pd.read_csv(b / "training_log.csv")
    assert list(la["step"]) == list(lb["step"]), "the logs have other steps"
    for column in ("loss", "grad_norm"):
        diff = (la[column] - lb[column]).abs()
        print(
            f"max |{column} difference| {diff.max():.3g} over {len(la)} logged steps; per step: "
            + " ".join(f"{s}:{d:.1g}" for s, d in zip(la["step"], diff))
        )
    wa, wb = load_file(a / "model" / "model.safetensors"), load_file(b / "model" / "model.safetensors")
    print(f"max |parameter difference| {max((wa[k] - wb[k]).abs().max().item() for k in wa):.3g}")
    ma = json.loads((a / "results.json").read_text())["metrics"]
    mb = json.loads((b / "results.json").read_text())["metrics"]
    print("metrics that differ:", {k: (ma[k], mb[k]) for k in ma if ma[k] != mb[k]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=8, help="items per process (1 process: twice that)")
    parser.add_argument("--kill-after", type=int, default=0, help="a checkpoint step (the quick profile: 300)")
    parser.add_argument("--accumulate", action="store_true", help="also 1 process, B x 2 accumulated")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "ARRANK_OUTPUTS": tmp, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
        common = COMMON + ["-p", "steps", str(args.steps)]
        torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
        run = [sys.executable, "-m", "arrank.workbook.run", "05", *common]
        two = [*torchrun, *run[1:], "-p", "run_name", "ddp", "-p", "batch_size", str(args.batch)]
        one = [*run, "-p", "run_name", "one", "-p", "batch_size", str(2 * args.batch)]
        if args.kill_after:
            launch(two, env, Path(tmp) / "05_train" / ".checkpoints-ddp" / f"checkpoint-{args.kill_after}")
        assert launch(two, env)[0] == 0 and launch(one, env)[0] == 0
        folder = Path(tmp) / "05_train"
        print("outputs/05_train:", sorted(p.name for p in folder.iterdir()))
        resumed = json.loads((folder / "ddp" / "results.json").read_text())["metrics"]["resumed_from_step"]
        print("resumed_from_step:", resumed)
        print("== 2 processes x B against 1 process x 2B")
        compare(folder / "ddp", folder / "one")
        if args.kill_after:
            assert (
                launch([*torchrun, *run[1:], "-p", "run_name", "ddpfull", "-p", "batch_size", str(args.batch)], env)[0]
                == 0
            )
            print("== 2 processes, killed and resumed, against 2 processes never interrupted")
            compare(folder / "ddp", folder / "ddpfull")
        if args.accumulate:
            assert (
                launch(
                    [
                        *run,
                        "-p",
                        "run_name",
                        "accumulated",
                        "-p",
                        "batch_size",
                        str(args.batch),
                        "-p",
                        "grad_accum",
                        "2",
                    ],
                    env,
                )[0]
                == 0
            )
            print("== 1 process, B x 2 accumulated, against 2 processes x B")
            compare(folder / "accumulated", folder / ("ddpfull" if args.kill_after else "ddp"))
            print("== 1 process, B x 2 accumulated, against 1 process x 2B")
            compare(folder / "accumulated", folder / "one")


if __name__ == "__main__":
    main()
