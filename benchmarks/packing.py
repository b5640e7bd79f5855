"""Items trained per second, packed per query vs unpacked (arrank.training.packing), and peak memory of both.

    python benchmarks/packing.py [--queries 2000] [--template wordnet] [--batch 64] [--steps 12]
                                 [--warmup 3] [--threads 2] [--seed 0] [--no-memory] [--model tiny]
    python benchmarks/packing.py --model smollm2-135m --queries 300 --batch 8 --steps 4 --warmup 1 --no-memory

Data: the WordNet per-docID view (section 5.1, every relevant docID of a query is an item) of a
seeded sample of ``--queries`` noun queries (all nouns, min_relevant 1, as in the paper) with the
Appendix D.1 prompt (template ``wordnet``); fractional lambda(r) = 1/r^2 items with one-hot
targets. Model: the quick profile's tiny Llama (hidden 128, 4 layers, 4 heads, intermediate 384)
with a BPE tokenizer (2000) trained on the sample's prompts and docIDs, in float32 on the CPU; or
``--model NAME``, a pretrained model (e.g. ``smollm2-135m``) through notebook 05's pretrained
route: its own tokenizer and chat template, LoRA r = 16 on all linear layers (only the adapters
train), the pretrained profile's max length.

One training step = collate + forward + STOICaL loss + backward + AdamW step, as the Trainer does
it (``train.collate`` / ``packing.collate_packed``, the mask handed over by ``packing.model_mask``).
Unpacked steps take ``--batch`` items; packed steps take the number of packed sequences that hold
about as many items, sharing rows as training lays them out (``packing.row_length_for``, the
quick profile's max length), so both modes count items the same way. The two
modes run on their own model copies, interleaved step by step in rotating order, on batches drawn
from the same seeded item order; items/s = items trained / seconds over the timed steps.

Peak memory: each mode is re-run alone in a fresh subprocess (``--mode``) for ``--warmup +
--steps`` steps. After the set-up (imports, data, tokenizer, model) the process's peak resident
set is reset (Linux: ``5`` written to /proc/self/clear_refs) and its peak over the steps is read
as ``VmHWM`` from /proc/self/status; the resident set just before the first step is printed
beside it, so the difference is what the training steps add. Where the reset is refused the
lifetime peak ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` is printed instead, and says so.
"""

from __future__ import annotations

import argparse
import copy
import json
import resource
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

from arrank.data import wordnet as W
from arrank.training import models, packing, stoical, train

MAX_LENGTH = train.profile_hyperparameters("quick")["max_length"]  # the quick profile's, as training packs
PRETRAINED_MAX_LENGTH = train.profile_hyperparameters("pretrained")["max_length"]


def max_length(a: argparse.Namespace) -> int:
    return MAX_LENGTH if a.model == "tiny" else PRETRAINED_MAX_LENGTH


def load_model(a: argparse.Namespace, texts: list[str]):
    """The tiny model, or a pretrained one with LoRA r = 16 on all linear layers (notebook 05)."""
    if a.model == "tiny":
        return models.tiny_model_and_tokenizer(texts, vocab_size=2000, seed=a.seed, cache=False)
    model, tok = models.load_model(a.model, "transformers", max_length(a))
    return models.add_lora(model, "transformers", 16, 32, 0.0, "all-linear", a.seed), tok


def setup(a: argparse.Namespace):
    """(model, tokenizer, items, packed sequences) for the benchmark's data."""
    df = W.build_wordnet_dataset(max_queries=a.queries, n_eval=10, template=a.template, seed=a.seed)
    texts = list(df["prompt"]) + sorted({d for ds in df["relevant"] for d in ds})
    model, tok = load_model(a, texts)
    items = train.training_items(df, tok, "fractional", alpha=2.0, max_length=max_length(a))
    return model.float().train(), tok, items, packing.pack_items(items, max_length(a))


def batches(a: argparse.Namespace, items: list, packed: list, n: int):
    """``n`` unpacked and ``n`` packed batches drawn from the same seeded order of queries."""
    rng = np.random.default_rng(a.seed)
    per_step = max(1, round(a.batch * len(packed) / len(items)))  # sequences holding ~a.batch items
    order = rng.permutation(len(packed))
    by_query: dict = {}
    for item in items:
        by_query.setdefault(item["query"], []).append(item)
    flat = [it for i in order for it in by_query[packed[i]["query"]] if it["rank"] in packed[i]["ranks"]]
    unpacked = [flat[s * a.batch : (s + 1) * a.batch] for s in range(n)]
    packs = [[packed[i] for i in order[s * per_step : (s + 1) * per_step]] for s in range(n)]
    if len(unpacked[-1]) < a.batch or len(packs[-1]) < per_step:
        raise ValueError(f"--queries {a.queries} holds too few items for {n} steps of {a.batch}")
    return unpacked, packs


def step_fn(model, tok, mode: str, row_length: int | None = None):
    """One training step of ``mode`` on a list of items or packed sequences; returns (items, tokens).
    Packed sequences share rows of ``row_length`` tokens as in training (``packing.row_length_for``)."""
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-3, weight_decay=0.01)

    def step(batch) -> tuple[int, int]:
        opt.zero_grad(set_to_none=True)
        if mode == "packed":
            b = packing.collate_packed(batch, tok.pad_token_id, row_length=row_length)
            logits = model(
                input_ids=b["input_ids"],
                position_ids=b["position_ids"],
                attention_mask=packing.model_mask(model, b["allowed"]),
            ).logits
            n_items = sum(len(p["ranks"]) for p in batch)
        else:
            b = train.collate(batch, tok.pad_token_id)
            logits = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits
            n_items = len(batch)
        stoical.stoical_loss(logits, b["target_ids"], b["target_mass"], b["item_weight"]).backward()
        opt.step()
        return n_items, int(b["input_ids"].numel())

    return step


def status_kib(field: str) -> int:
    """A memory field of this process (KiB) from /proc/self/status: VmRSS (now), VmHWM (peak)."""
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith(field + ":"))


def memory_run(a: argparse.Namespace) -> None:
    """Subprocess: run one mode alone and print its peak resident set over the steps as JSON."""
    model, tok, items, packed = setup(a)
    unpacked, packs = batches(a, items, packed, a.warmup + a.steps)
    step = step_fn(model, tok, a.mode, packing.row_length_for(packed, max_length(a)))
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # reset the peak resident set (VmHWM) to the current one
        how = "VmHWM over the steps"
    except OSError:
        how = "ru_maxrss over the whole process (peak reset refused)"
    before = status_kib("VmRSS")
    for batch in packs if a.mode == "packed" else unpacked:
        step(batch)
    peak = status_kib("VmHWM") if how.startswith("VmHWM") else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"mode": a.mode, "rss_before_kib": before, "peak_kib": peak, "how": how}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--template", default="wordnet")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--model", default="tiny", help="tiny, or a pretrained model name/folder (LoRA r = 16)")
    ap.add_argument("--mode", choices=["packed", "unpacked"], help=argparse.SUPPRESS)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.mode:
        return memory_run(a)

    t = time.perf_counter()
    base, tok, items, packed = setup(a)
    ok, why = packing.mask_support(base)
    if not ok:
        raise SystemExit(f"the {a.model} model cannot take the packed mask: {why}")
    n_prompt = statistics.mean(p["prompt_length"] + 1 for p in packed)
    print(
        f"set-up {time.perf_counter() - t:.1f} s: {len(items):,} items of {len(packed):,} queries "
        f"(template {a.template!r}, mean prompt {n_prompt:.0f} tokens, mean n_q "
        f"{len(items) / len(packed):.2f}), model {a.model}, attention {base.config._attn_implementation}, "
        f"threads {torch.get_num_threads()}, torch {torch.__version__}"
    )
    unpacked, packs = batches(a, items, packed, a.warmup + a.steps)
    steps = {
        "unpacked": step_fn(copy.deepcopy(base), tok, "unpacked"),
        "packed": step_fn(copy.deepcopy(base), tok, "packed", packing.row_length_for(packed, max_length(a))),
    }
    data = {"unpacked": unpacked, "packed": packs}
    seconds = {m: 0.0 for m in steps}
    counted = {m: [0, 0] for m in steps}
    names = list(steps)
    for s in range(a.warmup + a.steps):
        for mode in names[s % 2 :] + names[: s % 2]:
            t = time.perf_counter()
            n_items, n_tokens = steps[mode](data[mode][s])
            dt = time.perf_counter() - t
            if s >= a.warmup:
                seconds[mode] += dt
                counted[mode][0] += n_items
                counted[mode][1] += n_tokens
    rate = {m: counted[m][0] / seconds[m] for m in steps}
    print(f"{'mode':<9} {'items/step':>10} {'tokens/step':>12} {'s/step':>7} {'items/s':>8}")
    for m in names:
        print(
            f"{m:<9} {counted[m][0] / a.steps:>10.1f} {counted[m][1] / a.steps:>12.0f} "
            f"{seconds[m] / a.steps:>7.3f} {rate[m]:>8.1f}"
        )
    print(f"speed-up packed / unpacked (items/s): {rate['packed'] / rate['unpacked']:.2f}x  (target >= 3x)")
    if a.no_memory:
        return
    for mode in names:
        args = [
            sys.executable,
            __file__,
            "--mode",
            mode,
            "--queries",
            str(a.queries),
            "--template",
            a.template,
            "--batch",
            str(a.batch),
            "--steps",
            str(a.steps),
            "--warmup",
            str(a.warmup),
            "--threads",
            str(a.threads),
            "--seed",
            str(a.seed),
            "--model",
            a.model,
        ]
        out = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
        print(
            f"peak memory {mode:<9} ({out['how']}): {out['peak_kib'] / 1024:7.1f} MiB; "
            f"before the steps {out['rss_before_kib'] / 1024:7.1f} MiB; added by the steps "
            f"{(out['peak_kib'] - out['rss_before_kib']) / 1024:6.1f} MiB"
        )


if __name__ == "__main__":
    main()
