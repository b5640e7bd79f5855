"""The project's ``backend="unsloth"`` path end to end on a CPU, through Unsloth's CPU fallback
(``UNSLOTH_FORCE_CPU=1``; docs/gpu.md says how to install unsloth 2026.10.9 on a CPU machine).
Skipped where unsloth is not installed (the workbook's own environment does not hold it)."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys

import pytest

from arrank.common import paths

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("unsloth") is None,
    reason="unsloth is not installed (optional; docs/gpu.md: Unsloth on a CPU)",
)

# Build a tiny Llama folder once (first argument), then train it 3 STOICaL steps through the
# backend named by the second argument: notebook 05's route (load_model, add_lora, train).
SCRIPT = r"""
import json, sys, warnings
from pathlib import Path
folder, backend, work = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
import pandas as pd, torch
torch.set_num_threads(1)
from arrank.training import models, tokenizer, train
if not folder.exists():
    texts = ["query: dog.n.01 answer:", "query: cat.n.01 answer:", "canine.n.02", "carnivore.n.01",
             "feline.n.01", "placental.n.01"] * 20
    tok = tokenizer.train_bpe(texts, 300)
    tok.chat_template = models.TINY_CHAT_TEMPLATE
    models.save_atomic(models.build_tiny_model(len(tok), 64, 2, 4, 128, 0, tok), tok, folder)
    sys.exit(0)
resolved = models.resolve_backend(backend)
model, tok = models.load_model(str(folder), backend, 64)
model = models.add_lora(model, backend, 8, 16, 0.0, "all-linear", 0)
df = pd.DataFrame([
    {"query": "dog.n.01", "relevant": ["canine.n.02", "carnivore.n.01", "placental.n.01"], "split": "train",
     "prompt": "query: dog.n.01 answer:"},
    {"query": "cat.n.01", "relevant": ["feline.n.01", "carnivore.n.01"], "split": "train",
     "prompt": "query: cat.n.01 answer:"}])
items = train.training_items(df, tok, "fractional", alpha=2.0, max_length=64)
hyper = {**train.profile_hyperparameters("quick"), "steps": 3, "batch_size": 4, "max_length": 64, "warmup_steps": 0,
         "logging_steps": 1, "save_steps": 100}
log = train.train(model, tok, items, hyper, work / "checkpoints", seed=0, sampling="weighted", packing="none")
lora_b = sum(float(p.detach().float().abs().sum()) for n, p in model.named_parameters() if "lora_B" in n)
print(json.dumps({"resolved": resolved, "class": type(model).__name__, "losses": log["loss"].tolist(),
                  "lora_b": lora_b, "dtype": str(next(model.parameters()).dtype)}))
"""


def run(args: list[str], unsloth: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": str(paths.ROOT / "lib"), "OMP_NUM_THREADS": "1"}
    env.pop("UNSLOTH_FORCE_CPU", None)
    if unsloth:
        env["UNSLOTH_FORCE_CPU"] = "1"
    out = subprocess.run([sys.executable, "-c", SCRIPT, *args], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {}


def test_unsloth_backend_trains_stoical_on_cpu_like_transformers(tmp_path):
    folder = tmp_path / "tiny"
    run([str(folder), "none", str(tmp_path)], unsloth=False)
    u = run([str(folder), "unsloth", str(tmp_path / "u")], unsloth=True)
    t = run([str(folder), "transformers", str(tmp_path / "t")], unsloth=False)
    assert u["resolved"] == "unsloth" and t["resolved"] == "transformers"
    assert u["class"].startswith("PeftModel") and u["dtype"] == "torch.bfloat16"
    assert len(u["losses"]) == 3 and all(math.isfinite(x) and x > 0 for x in u["losses"])
    assert u["losses"][-1] < u["losses"][0]  # 3 steps at lr 2e-3 on 5 items: the loss falls
    assert u["lora_b"] > 0  # LoRA's B starts at 0: the adapters trained
    # step 1's loss is the base model's on the same batch (B = 0): bf16 (Unsloth) vs float32
    assert abs(u["losses"][0] - t["losses"][0]) / t["losses"][0] < 0.02, (u["losses"], t["losses"])
