"""The GPU work call rehearsed on this CPU: gpu/curve_call.sh on each paper-protocol GPU sweep
(gpu/pretrained_protocol_*.yaml) at toy scale (``rehearsal``: the tiny model, a few queries, seed 0,
the same schedules, budgets and validation split scaled down), one sweep after another, then its tarball
brought in as after a GPU run and decided as notebook 08 decides it, so that the only unknown on the
GPU is speed."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pandas as pd
import pytest
import yaml

from arrank.common import paths

pytestmark = pytest.mark.slow  # runs a sweep of two trainings

spec = importlib.util.spec_from_file_location("gpu_kit", paths.ROOT / "gpu" / "kit.py")
kit = importlib.util.module_from_spec(spec)
sys.modules["gpu_kit"] = kit
spec.loader.exec_module(kit)


PROTOCOL = sorted((paths.ROOT / "gpu").glob("pretrained_protocol_*.yaml"))
STEP_SCALE = 35  # a GPU sweep's steps (69 .. 417) over this: the rehearsal's (2 .. 12)


def rehearsal(gpu_sweep: Path) -> str:
    """``gpu_sweep`` at toy scale on a CPU: the tiny model on a few canine queries (4 of the 12 held out
    for validation where it has them), 8 items a step, seed 0, every step count divided by ``STEP_SCALE``;
    its schedule, budgets and grid as they are."""
    data = yaml.safe_load(gpu_sweep.read_text())
    fixed = {k: v for k, v in data["fixed"].items() if k not in ("model_name", "backend", "profile")}
    fixed |= {"profile": "quick", "subtree": "canine.n.02", "min_relevant": 1, "n_eval": 12, "batch_size": 8}
    fixed |= {"query_batch": 4, "tokenizer_vocab": 400, "warmup_steps": 1} | ({"n_dev": 4} if "n_dev" in fixed else {})
    scale = lambda steps: (
        [max(1, round(s / STEP_SCALE)) for s in steps] if isinstance(steps, list) else scale([steps])[0]
    )
    fixed |= {k: scale(fixed[k]) for k in ("steps", "eval_steps") if k in fixed}
    grid = [
        group | {"seed": [0]} | ({"steps": scale(group["steps"])} if "steps" in group else {}) for group in data["grid"]
    ]
    return yaml.safe_dump({**data, "fixed": fixed, "grid": grid}, sort_keys=False)


def test_the_work_call_checks_scoring_runs_each_protocol_sweep_and_packs_what_08_decides(tmp_path, monkeypatch):
    out, outputs = tmp_path / "out", tmp_path / "run" / "outputs"
    out.mkdir()
    assert [p.stem for p in PROTOCOL] == [
        "pretrained_protocol_constant_gpu",
        "pretrained_protocol_cosine_gpu",
        "pretrained_protocol_cosine_gpu_3epochs",
        "pretrained_protocol_cosine_gpu_4epochs",
        "pretrained_protocol_cosine_gpu_4epochs_seed2",
        "pretrained_protocol_cosine_gpu_half",
        "pretrained_protocol_lr_gpu",
    ]
    sweeps = []
    for gpu_sweep in PROTOCOL:  # copies: a failed check writes a _one_query twin beside each
        sweeps.append(tmp_path / gpu_sweep.name)
        sweeps[-1].write_text(rehearsal(gpu_sweep))
    from arrank.workbook import sweep

    # the cosine sweeps differ in their budgets (and the last in its rates) alone: the first one runs for all
    cosine = [[{k: v for k, v in p.resolved.items() if k not in ("steps", "run_name", "lr")} for p in
               sweep.load_sweep(s).points] for s in sweeps[1:]]  # fmt: skip
    assert [len(c) for c in cosine] == [4, 2, 2, 2, 2, 4]  # each (its steps or rates) x NTP, fractional
    assert all(c[i : i + 2] == cosine[0][:2] for c in cosine for i in range(0, len(c), 2))
    assert {p["lr_schedule"] for p in cosine[0]} == {"cosine"}
    sweeps = sweeps[:2]
    env = {
        **os.environ,
        "OUT": str(out),
        "OUTPUTS": str(outputs),
        "PYTHON": sys.executable,
        "CHECK_MODEL": "tiny",
        "CHECK_QUERIES": "8",
        "CHECK_ARGS": "--subtree canine.n.02 --min-relevant 1 --n-eval 8",  # the rehearsal sweeps' data
        "DEVICE": "cpu",
        "LIMIT_S": "500",
        "JOBS": "2",
        "SEQUENTIAL": "1",
    }
    done = subprocess.run(
        ["bash", "gpu/curve_call.sh", *map(str, sweeps)], cwd=paths.ROOT, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    check = json.loads((out / "query-batch.json").read_text())
    assert check["agree"] and [r["queries_per_pass"] for r in check["sizes"]] == [1, 32]
    assert check["sizes"][1]["max_abs_diff"] < 1e-4  # fp32 on a CPU: batching changes rounding only
    log = (out / "sweep.log").read_text()
    assert "one after another" in log and [log.count(f"{n} ran, 0 done earlier, 0 failed") for n in (2, 4)] == [1, 1]
    with tarfile.open(out / "gpu-curve.tgz") as tar:
        names = tar.getnames()
    assert all(n.startswith(kit.RESULT_FOLDERS) or n in ("outputs/05_train", "outputs/sweeps") for n in names)
    assert not [n for n in names if n.endswith((".lock", ".ipynb")) or "/.curve-" in n or "/model/" in n]  # runs ended

    root = tmp_path / "here"
    runs, same = kit.unpack_results(out / "gpu-curve.tgz", root, tmp_path / "kit" / "model.gguf")
    assert len(runs) == 6 and not same
    for run in runs:
        rows = pd.read_csv(root / run / "curve_per_query.csv")
        params = json.loads((root / run / "results.json").read_text())["params"]
        steps = [*params["eval_steps"], params["steps"]]
        assert sorted(rows["step"].unique()) == steps and (params["lr_schedule"] == "constant") == (len(steps) == 3)
        assert rows.groupby(["step", "split"]).size().to_dict() == {
            (s, sp): n for s in steps for sp, n in (("dev", 4), ("test", 8))
        }
        final = pd.read_csv(root / run / "per_query.csv")  # the test queries, as the last step's test rows
        last = rows[(rows["step"] == params["steps"]) & (rows["split"] == "test")]
        assert last["ndcg"].tolist() == pytest.approx(final["ndcg"].tolist(), rel=1e-9)

    from arrank.results import chosen, curve
    from arrank.workbook import report

    frame = report.curves([sweep.load_sweep(s) for s in sweeps], outputs_root=root / "outputs")
    found = curve.curve_findings(frame, n_resamples=199)
    assert sorted(found.groupby(curve.SETTING)["step"].apply(lambda s: sorted(set(s))).to_dict().items()) == [
        ("8 items a step, 8 held-out queries, constant rate", [2, 4, 8]),
        ("8 items a step, 8 held-out queries, cosine to each budget", [4, 8]),
    ]
    at_chosen = chosen.chosen_findings(frame, n_resamples=199)
    assert [(data, f.claim, f.family_size) for data, f in at_chosen] == [
        ("8 items a step, 8 held-out queries", c.claim, 3) for c in curve.COMPARISONS
    ]
    assert "8 test queries, paired; budgets chosen on 4 validation queries; 1 / 1 seeds" in at_chosen[0][1].numbers

    # notebook 08 draws it: both schedules side by side, each method's chosen budget marked, the findings there
    from arrank.workbook import run

    monkeypatch.setenv("ARRANK_OUTPUTS", str(root / "outputs"))  # where the kernel reads the runs
    final = run.run_notebook(
        "08_results", {"sweep": str(sweeps[0]), "curve_sweeps": str(sweeps[1]), "run_name": "protocol"},
        outputs_root=root / "outputs", progress=False,
    )  # fmt: skip
    picks = pd.read_csv(final / "chosen_budgets.csv")
    assert sorted(picks["variant"]) == [curve.FRACTIONAL, curve.NTP] and picks["dev_mean"].between(0, 1).all()
    decided = pd.read_csv(final / "chosen_findings.csv")
    assert decided["claim"].tolist() == [c.claim for c in curve.COMPARISONS] and decided["family_size"].eq(3).all()
    names = {json.loads(f'"{n}"') for n in re.findall(r'"name":"([^"]*)"', (final / "curve.html").read_text())}
    assert {f"{curve.NTP}'s choice", f"{curve.FRACTIONAL}'s choice"} <= names and len(
        names & set(found[curve.SETTING])
    ) == 2
