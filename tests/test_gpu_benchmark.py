"""benchmarks/gpu.py at toy scale on the CPU: its transformers parts (b: transformers + peft +
STOICaL; d: packed per query vs unpacked items; e: the workbook's own step) on the tiny model,
and the Unsloth parts skipped with their reason where unsloth is not installed. The GPU figures are docs/gpu.md's."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys

import pytest

from arrank.common import paths

pytestmark = pytest.mark.slow  # trains the tiny model through benchmarks/gpu.py

SCRIPT = paths.ROOT / "benchmarks" / "gpu.py"


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """One call of the script for every part these tests read (b, d, a, e; each part runs in its own
    process, as on the GPU): 60 queries, 16 items a step, so that (e)'s packed batches hold several
    queries. Returns (the --json results, stdout)."""
    out = tmp_path_factory.mktemp("gpu") / "gpu.json"
    env = {**os.environ, "PYTHONPATH": str(paths.ROOT / "lib"), "OMP_NUM_THREADS": "1"}
    env.pop("UNSLOTH_FORCE_CPU", None)
    args = ["--model", "tiny", "--queries", "60", "--batch", "16", "--steps", "1", "--warmup", "0"]
    run = subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--parts", "b,d,a,e", "--json", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(out.read_text())["results"], run.stdout


def test_transformers_parts_measure_real_figures_and_packing_keeps_the_loss(toy):
    results, stdout = toy
    b, d = results["b"], results["d"]
    for part, modes in ((b, ["unpacked"]), (d, ["unpacked", "packed"])):
        assert part["backend"] == "transformers" and part["attention"] == "sdpa"
        assert 0 < part["trainable_parameters"] < 1_000_000  # LoRA adapters only
        for mode in modes:
            t = part["timing"][mode]
            assert all(
                math.isfinite(t[k]) and t[k] > 0
                for k in ("tokens_per_s", "items_per_s", "padded_tokens_per_s", "peak_mib")
            )
            assert t["padded_tokens_per_s"] >= t["tokens_per_s"]
            assert t["items_per_s"] * t["s_per_step"] == t["items_per_step"] or math.isclose(
                t["items_per_s"] * t["s_per_step"], t["items_per_step"], rel_tol=1e-9
            )
    assert d["timing"]["unpacked"]["items_per_step"] == 16  # --batch items a step
    assert d["timing"]["packed"]["items_per_step"] > 16 * 0.5  # sequences holding about as many
    # a packed batch's STOICaL loss is that of the same items unpacked (float32: rounding only)
    assert d["loss_packed"] > 0 and math.isclose(d["loss_packed"], d["loss_unpacked_same_items"], rel_tol=1e-5)
    # the agreement batch: finite base-model losses for one-hot and trie targets (beta = 1)
    assert b["loss_onehot"] > 0 and b["loss_trie"] > 0 and b["loss_trie"] != b["loss_onehot"]
    if importlib.util.find_spec("unsloth") is None:
        assert results["a"] == {"part": "a", "skipped": "unsloth is not installed (the gpu extra; docs/gpu.md)"}
        assert "part a: skipped: unsloth is not installed" in stdout


def test_the_workbooks_own_step_keeps_the_loss_and_runs_the_shared_opening_once(toy):
    """Part (e): StoicalTrainer.compute_loss on (d)'s packed batches (16 items: several queries a
    batch, so that their prompts' common opening is split off and run once)."""
    results, stdout = toy
    e = results["e"]
    assert e["shared_prefix"]["on"] and set(e["timing"]) == {"packed", "workbook"}
    assert e["loss_packed"] > 0 and math.isclose(e["loss_workbook"], e["loss_packed"], rel_tol=1e-5)
    padded = {m: t["padded_tokens_per_s"] * t["s_per_step"] for m, t in e["timing"].items()}
    assert padded["workbook"] < 0.9 * padded["packed"]  # the opening counted once, not once per row
    assert e["timing"]["workbook"]["items_per_step"] == e["timing"]["packed"]["items_per_step"] > 8
    assert "e workbook/packed tokens/s" in stdout


def test_a_later_run_merges_an_earlier_one_of_the_same_model_and_batch(tmp_path):
    """Parts measured in two calls give one report and its ratios."""
    env = {**os.environ, "PYTHONPATH": str(paths.ROOT / "lib"), "OMP_NUM_THREADS": "1"}
    env.pop("UNSLOTH_FORCE_CPU", None)
    timing = lambda items: {
        "items_per_s": items,
        "tokens_per_s": 10 * items,
        "s_per_step": 1.0,  # noqa: E731
        "peak_mib": 100.0,
    }
    earlier = {
        "args": {"model": "tiny", "queries": 30, "batch": 4, "seed": 0, "max_length": 1024},
        "results": {
            "d": {
                "part": "d",
                "timing": {"unpacked": timing(3.0), "packed": timing(9.0)},
                "loss_packed": 1.0,
                "loss_unpacked_same_items": 1.0,
            },
            "a": {"part": "a", "skipped": "an earlier reason"},
        },
    }
    (tmp_path / "earlier.json").write_text(json.dumps(earlier))
    common = [
        sys.executable,
        str(SCRIPT),
        "--model",
        "tiny",
        "--queries",
        "30",
        "--batch",
        "4",
        "--parts",
        "a",
        "--merge",
        str(tmp_path / "earlier.json"),
    ]
    run = subprocess.run(
        common + ["--json", str(tmp_path / "now.json")], env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    now = json.loads((tmp_path / "now.json").read_text())
    assert now["results"]["d"] == earlier["results"]["d"]  # kept from the earlier run
    assert now["results"]["a"]["skipped"] != "an earlier reason"  # run again: replaced
    assert now["summary"]["d packed/unpacked items/s (target >= 3)"] == 3.0
    other = subprocess.run(common[:5] + ["31"] + common[6:], env=env, capture_output=True, text=True, timeout=300)
    assert other.returncode != 0 and "this run differs: compare like with like" in other.stderr


def test_bad_parts_are_refused_with_the_allowed_ones():
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--model", "tiny", "--parts", "b,x"],
        env={**os.environ, "PYTHONPATH": str(paths.ROOT / "lib")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode != 0 and "--parts 'b,x': each part must be one of ['b', 'd', 'e', 'a', 'c']" in run.stderr
