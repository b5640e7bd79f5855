"""The GPU work call rehearsed on this CPU: gpu/curve_call.sh on gpu/curve_rehearsal.yaml (the
tiny model, two budgets, one seed, a few queries) and an NTP copy of it side by side, then its
tarball brought in as after a GPU run, so that the only unknown on the GPU is speed."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tarfile

import pandas as pd
import pytest

from arrank.common import paths

pytestmark = pytest.mark.slow  # runs a sweep of two trainings

spec = importlib.util.spec_from_file_location("gpu_kit", paths.ROOT / "gpu" / "kit.py")
kit = importlib.util.module_from_spec(spec)
sys.modules["gpu_kit"] = kit
spec.loader.exec_module(kit)


def test_the_work_call_checks_scoring_runs_the_curve_and_packs_what_08_reads(tmp_path):
    out, outputs = tmp_path / "out", tmp_path / "run" / "outputs"
    out.mkdir()
    rehearsal = (paths.ROOT / "gpu" / "curve_rehearsal.yaml").read_text()
    sweep = tmp_path / "curve_rehearsal.yaml"  # a copy: a failed check writes its _one_query twin beside it
    sweep.write_text(rehearsal)
    ntp = tmp_path / "curve_rehearsal_ntp.yaml"  # a second sweep, run beside the first
    ntp.write_text(rehearsal.replace("scheme: [fractional]\n    alpha: [2]", "scheme: [indicator]"))
    env = {
        **os.environ,
        "OUT": str(out),
        "OUTPUTS": str(outputs),
        "PYTHON": sys.executable,
        "CHECK_MODEL": "tiny",
        "CHECK_QUERIES": "8",
        "CHECK_ARGS": "--subtree canine.n.02 --min-relevant 1 --n-eval 8",  # the rehearsal sweep's data
        "DEVICE": "cpu",
        "LIMIT_S": "400",
        "JOBS": "1",
    }
    done = subprocess.run(
        ["bash", "gpu/curve_call.sh", str(sweep), str(ntp)],
        cwd=paths.ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=500,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    check = json.loads((out / "query-batch.json").read_text())
    assert check["agree"] and [r["queries_per_pass"] for r in check["sizes"]] == [1, 32]
    assert check["sizes"][1]["max_abs_diff"] < 1e-4  # fp32 on a CPU: batching changes rounding only
    assert (out / "sweep.log").read_text().count("1 ran, 0 done earlier, 0 failed") == 2
    with tarfile.open(out / "gpu-curve.tgz") as tar:
        names = tar.getnames()
    assert all(n.startswith(kit.RESULT_FOLDERS) or n in ("outputs/05_train", "outputs/sweeps") for n in names)
    assert not [n for n in names if n.endswith((".lock", ".ipynb")) or "/.curve-" in n or "/model/" in n]  # runs ended

    root = tmp_path / "here"
    runs, same = kit.unpack_results(out / "gpu-curve.tgz", root, tmp_path / "kit" / "model.gguf")
    assert len(runs) == 2 and not same and any("indicator" in r for r in runs)
    for run in runs:
        curve = pd.read_csv(root / run / "curve_per_query.csv")
        assert sorted(curve["step"].unique()) == [2, 4] and curve.groupby("step").size().tolist() == [8, 8]
        results = json.loads((root / run / "results.json").read_text())
        assert results["params"]["lr_schedule"] == "constant" and results["params"]["eval_steps"] == [2, 4]
        final = pd.read_csv(root / run / "per_query.csv")
        assert curve.loc[curve["step"] == 4, "ndcg"].tolist() == pytest.approx(final["ndcg"].tolist(), rel=1e-9)
        assert curve["items"].tolist() == [s * 8 for s in curve["step"]]
