"""Training on several processes (DDP through the transformers Trainer, gloo on 2 CPU processes):
2 processes with B items each train the run of 1 process with 2B items, up to float rounding.

One ``torchrun --standalone --nproc_per_node 2`` launch of ``ddp_worker.py`` trains, on the tiny
model: weighted sampling with trie targets (fractional lambda); uniform sampling with the packed
per-query layout and 2 accumulated micro-batches; and the first run again, killed after step 3
(checkpoint at step 2) and resumed from its checkpoints by a fresh model on both processes.
Meanwhile this process trains the 1-process references (twice the batch), and the first run as
B items x 2 accumulated (docs/scale-out.md, "Several processes for one training run": the
measured figures).
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from arrank.data import prompts
from arrank.training import models, train

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]  # slow: trains or runs notebooks

HERE = Path(__file__).parent
B = 4  # items per process and step (unpacked)
PACKED_B = 9  # items per process and step, packed: 3 packed sequences of about 3 items each
H = {
    **train.profile_hyperparameters("quick"),
    "warmup_steps": 1,
    "lr": 1e-2,
    "logging_steps": 1,
    "save_steps": 100,
    "steps": 4,
}
# relative: of the loss (grad norm) values compared, and of the largest parameter magnitude
# (measured: 0 and at most 2.3e-7 absolute, float32 sums in another order)
LOSS_TOL, PARAM_TOL = 1e-5, 1e-4


def configs(processes: int) -> list[dict]:
    """The runs; batch sizes are per process, so 1 process gets twice 2 processes' batch."""
    per = 2 // processes
    weighted = {"name": "weighted", "hyper": {**H, "batch_size": B * per}, "sampling": "weighted", "packing": "none"}
    packed = {
        "name": "uniform_packed",
        "hyper": {**H, "batch_size": PACKED_B * per, "grad_accum": 2},
        "sampling": "uniform",
        "packing": "per_query",
    }
    kill = {**weighted, "name": "killed", "hyper": {**weighted["hyper"], "save_steps": 2}, "stop_at": 3}
    resume = {**kill, "name": "resumed", "stop_at": None, "resume_of": "killed"}
    accumulated = {**weighted, "name": "accumulated", "hyper": {**weighted["hyper"], "batch_size": B, "grad_accum": 2}}
    return [weighted, packed] + ([kill, resume] if processes == 2 else [accumulated])


def ranking_table(n_queries: int = 64) -> pd.DataFrame:
    """A ranking table as ``training_items`` reads it (WordNet-like names, the D.1 prompt, whose
    opening every batch runs once: ``training.shared_prefix``, under DDP too): query
    i has 1-5 relevant docIDs in rank order, drawn from 12 that share prefixes (non-trivial tries)."""
    pool = [f"{a}_{b}.n.01" for a in ("canine", "feline", "placental") for b in ("dog", "cat", "wolf", "bear")]
    rng = np.random.default_rng(0)
    rows = []
    for i in range(n_queries):
        q = f"animal_{i}.n.01"
        relevant = [str(d) for d in rng.choice(pool, size=1 + i % 5, replace=False)]
        rows.append(
            {
                "query": q,
                "relevant": relevant,
                "split": "train",
                "prompt": prompts.wordnet_prompt(q, relevant, prompts.query_rng(0, q)),
            }
        )
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{(config name, processes): {"log", "state", "batches" per rank}} after both launches."""
    folder = tmp_path_factory.mktemp("ddp")
    df = ranking_table()
    texts = list(df["prompt"]) + sorted({d for r in df["relevant"] for d in r})
    model, tok = models.tiny_model_and_tokenizer(
        texts, vocab_size=400, hidden=32, layers=1, heads=2, intermediate=64, seed=0, cache=False
    )
    model.config._attn_implementation = "sdpa"  # the packed layout's mask
    model.save_pretrained(folder / "model")
    tok.save_pretrained(folder / "model")
    items = train.training_items(df, tok, "fractional", alpha=1.0, targets="trie", beta=2.0)
    torch.save(items, folder / "items.pt")
    # the packed step is a number of sequences per process: 2 x that of B items must be that of 2B
    n_seq = len(train.pack_items(items, H["max_length"]))
    assert (
        2 * train.packed_batch_size(PACKED_B, items, n_seq, False)
        == train.packed_batch_size(2 * PACKED_B, items, n_seq, False)
        == 6
    )

    (folder / "configs.json").write_text(json.dumps(configs(2)))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    start = time.perf_counter()
    launch = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            str(HERE / "ddp_worker.py"),
            str(folder),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    sys.path.insert(0, str(HERE))  # the 1-process reference meanwhile, in this process
    try:
        import ddp_worker
    finally:
        sys.path.remove(str(HERE))
    for cfg in configs(1):
        out = ddp_worker.run_config(folder, cfg, 0)
        (folder / f"{cfg['name']}.w1.rank0.json").write_text(json.dumps(out["batches"]))
        torch.save({"log": out["log"], "state": out["state"]}, folder / f"{cfg['name']}.w1.pt")
    output, _ = launch.communicate(timeout=300)
    print(f"torchrun 2 processes + 1-process references: {time.perf_counter() - start:.1f} s")
    assert launch.returncode == 0, output[-4000:]
    found = {"initial": model.state_dict()}
    for n in (1, 2):
        for name in [c["name"] for c in configs(n)]:
            found[name, n] = {
                **torch.load(folder / f"{name}.w{n}.pt", weights_only=False),
                "batches": [json.loads((folder / f"{name}.w{n}.rank{r}.json").read_text()) for r in range(n)],
            }
    return found


def _max_diff(a: dict, b: dict, key: str) -> float:
    """The largest difference of a logged quantity, relative to its scale (largest |value|)."""
    scale = max(abs(x) for x in a["log"][key])
    return max(abs(x - y) for x, y in zip(a["log"][key], b["log"][key])) / scale


def _param_diff(a: dict, b: dict) -> float:
    """The largest parameter difference, relative to the largest parameter magnitude."""
    scale = max(v.abs().max().item() for v in a["state"].values())
    return max((a["state"][k] - b["state"][k]).abs().max().item() for k in a["state"]) / scale


@pytest.mark.parametrize("name", ["weighted", "uniform_packed"])
def test_two_processes_of_b_items_train_the_run_of_one_process_of_2b(runs, name):
    one, two = runs[name, 1], runs[name, 2]
    assert one["log"]["step"] == two["log"]["step"] == [1, 2, 3, 4]
    assert two["log"]["epoch"][-1] < 1  # within one epoch (at its end the last batches differ: docs)
    loss = _max_diff(one, two, "loss")
    params = _param_diff(one, two)
    print(f"{name}: max relative loss difference {loss:.2e}, max relative parameter difference {params:.2e}")
    assert loss < LOSS_TOL and _max_diff(one, two, "grad_norm") < LOSS_TOL
    assert params < PARAM_TOL
    moved = _param_diff(one, {"state": runs["initial"]})
    assert moved > 100 * PARAM_TOL  # the tolerance is far below what training moves

    # the items: process 0's micro-batch k and process 1's micro-batch k make 1 process's, in order
    micro = 4 * {c["name"]: c for c in configs(1)}[name]["hyper"]["grad_accum"]
    (single,), (rank0, rank1) = one["batches"], two["batches"]
    for k in range(micro):
        assert rank0[k] != rank1[k]
        assert rank0[k] + rank1[k] == single[k], (name, k)


def test_a_killed_two_process_run_resumes_on_both_processes(runs):
    """Killed after step 3, resumed from the step-2 checkpoints: the same log and weights as the
    run never interrupted (and so as the 1-process run), and both processes skipped the 2
    batches of the checkpointed steps."""
    full, resumed = runs["weighted", 2], runs["resumed", 2]
    assert resumed["log"]["step"] == [1, 2, 3, 4]
    assert resumed["log"]["loss"] == full["log"]["loss"]
    assert all(torch.equal(resumed["state"][k], full["state"][k]) for k in full["state"])
    for r in (0, 1):
        assert resumed["batches"][r][:2] == full["batches"][r][2:4]


def test_one_process_accumulating_two_batches_of_b_trains_the_same_run(runs):
    """The same normaliser on one process: 2 accumulated micro-batches of B items are one step of
    2B items (the step's supervised positions divide the loss, not each micro-batch's), as the
    paper profile's 8 x 8 accumulation means a batch of 64."""
    one, accumulated = runs["weighted", 1], runs["accumulated", 1]
    assert accumulated["log"]["step"] == [1, 2, 3, 4]
    assert _max_diff(one, accumulated, "loss") < LOSS_TOL
    assert _param_diff(one, accumulated) < PARAM_TOL
    (single,), (micro,) = one["batches"], accumulated["batches"]
    assert [micro[2 * k] + micro[2 * k + 1] for k in range(4)] == single[:4]
