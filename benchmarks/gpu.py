"""GPU training throughput of STOICaL on one model and batch: Unsloth vs transformers + peft, STOICaL vs
next-token loss, packed per query vs unpacked items; and the loss agreement of the two backends.

    python benchmarks/gpu.py --model FOLDER_OR_NAME [--queries 2000] [--batch 8] [--steps 20]
                             [--warmup 3] [--parts b,d,e,a,c] [--dtype auto] [--json FILE]
    python benchmarks/gpu.py --model tiny --queries 60 --batch 8 --steps 2 --warmup 1   # CPU, toy scale
    python benchmarks/gpu.py --build-paper-architecture --model /tmp/mistral7b --parts b,d --json /tmp/bd.json
    python benchmarks/gpu.py --model /tmp/mistral7b --parts e,a,c --merge /tmp/bd.json   # all five, one report

Parts, each in a fresh process (Unsloth patches transformers' model classes when it loads a
model, so (b) and (d) must not share a process with it; the peak memory is then each part's own):

- (a) Unsloth + LoRA + STOICaL: ``models.load_model(..., "unsloth")``, ``models.add_lora``
  (r = 16, all linear layers), unpacked items (Unsloth's attention takes no packed mask), the
  STOICaL loss (``stoical.stoical_loss``, eq. 3) from the logits (``UNSLOTH_RETURN_LOGITS=1``).
- (b) transformers + peft + STOICaL: the same through ``backend="transformers"`` (sdpa attention),
  unpacked items, the model cast to ``--dtype``.
- (c) Unsloth + LoRA + next-token loss: (a)'s model trained on the same items with the model's own
  loss from ``labels`` (docID tokens; Unsloth's fused cross-entropy, ``UNSLOTH_RETURN_LOGITS=0``):
  what the NTP baseline costs through Unsloth, against which (a) is the cost of STOICaL.
- (d) packed per query vs unpacked: (b)'s route with every ranked docID of a query behind one
  prompt (``packing.pack_items``, ``packing.collate_packed``, rows shared as training shares them)
  against ``train.collate`` items, steps interleaved; plus the STOICaL loss of the first packed
  batch against the loss of exactly the items it holds, unpacked (equal up to float rounding).
- (e) the workbook's own step against (d)'s packed step: ``StoicalTrainer.compute_loss``, as
  notebook 05 trains, on the same packed batches: the batch's shared prompt opening run once
  (``shared_prefix``, where ``packing.prefix_support`` allows), the LM head at the supervised
  positions only (``supervised_head.head_at``), ``precision.mixed`` (bf16 for a bf16 model).
  Steps interleaved; plus the loss of the first batch both ways (equal up to rounding).

Loss agreement (a) vs (b): the STOICaL loss of the same first batch, before any update (LoRA's B
is zero, so both are the base model's), with one-hot and with trie targets (beta = 1).

Data: the WordNet per-docID view of a seeded sample of ``--queries`` noun queries (Appendix D.1
prompt), fractional lambda(r) = 1/r^2 items (``train.training_items``), drawn as
``benchmarks/packing.py`` draws them. A step: collate, forward, loss, backward, AdamW step on the
trainable parameters. Timed with the device synchronised around each step, after ``--warmup``
steps; tokens/s counts the tokens that are not padding, items/s the (query, docID) items trained.
Peak memory: ``torch.cuda.max_memory_allocated`` over the timed steps on CUDA, the process's peak
resident set (``VmHWM`` after a reset) on a CPU. What the machine cannot run is skipped with the
reason: (a) and (c) need unsloth and CUDA (or ``UNSLOTH_FORCE_CPU=1``, its CPU fallback).
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PARTS = ("b", "d", "e", "a", "c")
TITLES = {
    "a": "Unsloth + LoRA + STOICaL",
    "b": "transformers + peft + STOICaL",
    "c": "Unsloth + LoRA + next-token loss",
    "d": "transformers + peft + STOICaL, packed per query",
    "e": "the workbook's own step (StoicalTrainer)",
}


def packing_bench():
    """benchmarks/packing.py as a module: its seeded batch drawing and memory reading are reused."""
    spec = importlib.util.spec_from_file_location("packing_benchmark", HERE / "packing.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def unsloth_refusal() -> str | None:
    """Why Unsloth's parts cannot run here, or None (checked before torch is imported)."""
    if importlib.util.find_spec("unsloth") is None:
        return "unsloth is not installed (the gpu extra; docs/gpu.md)"
    import torch

    if not torch.cuda.is_available() and os.environ.get("UNSLOTH_FORCE_CPU") != "1":
        return "no CUDA device (set UNSLOTH_FORCE_CPU=1 for Unsloth's CPU fallback: a code-path check, not a speed)"
    return None


def device_and_dtype(a: argparse.Namespace):
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    name = a.dtype if a.dtype != "auto" else ("bfloat16" if device.type == "cuda" else "float32")
    return device, getattr(torch, name)


def load(a: argparse.Namespace, backend: str, texts: list[str]):
    """(model with LoRA r = 16 on all linear layers, tokenizer) through ``backend``, on the device."""
    from arrank.training import models

    device, dtype = device_and_dtype(a)
    if a.model == "tiny":
        if backend == "unsloth":
            raise SystemExit("the tiny model is built, not loaded: give Unsloth a model folder")
        model, tok = models.tiny_model_and_tokenizer(texts, vocab_size=2000, seed=a.seed, cache=False)
    else:
        model, tok = models.load_model(a.model, backend, a.max_length)
    if backend != "unsloth":
        model = model.to(device=device, dtype=dtype)
    model = models.add_lora(model, backend, 16, 32, 0.0, "all-linear", a.seed)
    return model.train(), tok


def dataset(a: argparse.Namespace):
    from arrank.data import wordnet as W

    df = W.build_wordnet_dataset(max_queries=a.queries, n_eval=10, template="wordnet", seed=a.seed)
    return df, list(df["prompt"]) + sorted({d for ds in df["relevant"] for d in ds})


def make_step(model, tok, layout: str, loss: str, device, row_length: int | None = None):
    """One training step on a list of items (``layout="items"``) or packed sequences
    (``"packed"``), with the STOICaL loss or the model's own next-token loss; returns
    (items, real tokens, padded tokens)."""
    import torch

    from arrank.training import packing, stoical, train

    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)

    def step(batch) -> tuple[int, int, int]:
        opt.zero_grad(set_to_none=True)
        if layout == "packed":
            b = packing.collate_packed(batch, tok.pad_token_id, row_length=row_length)
            b = {k: v.to(device) for k, v in b.items()}
            out = model(
                input_ids=b["input_ids"],
                position_ids=b["position_ids"],
                attention_mask=packing.model_mask(model, b["allowed"]),
            )
            n_items, real = sum(len(p["ranks"]) for p in batch), sum(len(p["input_ids"]) for p in batch)
        else:
            b = {k: v.to(device) for k, v in train.collate(batch, tok.pad_token_id).items()}
            n_items, real = len(batch), int(b["attention_mask"].sum())
            if loss == "ntp":
                labels = torch.where(b["target_mass"][..., 0] > 0, b["target_ids"][..., 0], -100)
                out = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"], labels=labels)
            else:
                out = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"])
        value = (
            out.loss
            if loss == "ntp"
            else stoical.stoical_loss(out.logits, b["target_ids"], b["target_mass"], b["item_weight"])
        )
        value.backward()
        opt.step()
        return n_items, real, int(b["input_ids"].numel())

    return step


def workbook_step(model, tok, device, row_length: int, share: bool | None = None):
    """(a training step, the loss of a batch without an update) as notebook 05 trains: packed
    sequences collated with the batch's shared opening split off where ``packing.prefix_support``
    allows, the loss from ``StoicalTrainer.compute_loss`` (head at the supervised positions,
    ``precision.mixed``: bf16 for a bf16 model); and whether the opening is shared, with why.
    ``share=True`` shares it wherever the model can (``packing.prefix_possible``), on a GPU too."""
    import tempfile

    import torch
    from transformers import TrainingArguments

    from arrank.training import packing
    from arrank.training.trainer import StoicalTrainer

    share, why = packing.prefix_support(model) if share is None else packing.prefix_possible(model)
    args = TrainingArguments(output_dir=tempfile.mkdtemp(), report_to=[], use_cpu=device.type == "cpu")
    trainer = StoicalTrainer(model=model, args=args)
    trainer.precision_used = "bf16" if next(model.parameters()).dtype == torch.bfloat16 else "fp32"
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)

    def inputs(batch) -> dict:
        b = packing.collate_packed(batch, tok.pad_token_id, row_length=row_length, share_prefix=share)
        return {k: v.to(device) for k, v in b.items()}

    def step(batch) -> tuple[int, int, int]:
        opt.zero_grad(set_to_none=True)
        b = inputs(batch)
        padded = int(b["input_ids"].numel()) + (int(b["prefix_ids"].numel()) if "prefix_ids" in b else 0)
        trainer.compute_loss(model, b).backward()
        opt.step()
        return sum(len(p["ranks"]) for p in batch), sum(len(p["input_ids"]) for p in batch), padded

    def loss(batch) -> float:
        with torch.no_grad():
            return float(trainer.compute_loss(model, inputs(batch)))

    return step, loss, (share, why)


def batch_loss(model, tok, batch, layout: str, device, row_length: int | None = None) -> float:
    """The STOICaL loss of one batch, without gradients and without an update."""
    import torch

    from arrank.training import packing, stoical, train

    with torch.no_grad():
        if layout == "packed":
            b = {
                k: v.to(device)
                for k, v in packing.collate_packed(batch, tok.pad_token_id, row_length=row_length).items()
            }
            logits = model(
                input_ids=b["input_ids"],
                position_ids=b["position_ids"],
                attention_mask=packing.model_mask(model, b["allowed"]),
            ).logits
        else:
            b = {k: v.to(device) for k, v in train.collate(batch, tok.pad_token_id).items()}
            logits = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits
        return float(stoical.stoical_loss(logits, b["target_ids"], b["target_mass"], b["item_weight"]))


def reset_peak(device) -> str:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        return "torch.cuda.max_memory_allocated over the timed steps"
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return "VmHWM (peak resident set) over the timed steps"
    except OSError:
        return "ru_maxrss over the whole process (peak reset refused)"


def peak_mib(device, how: str, bench) -> float:
    import resource

    import torch

    if device.type == "cuda":
        return torch.cuda.max_memory_allocated() / 2**20
    if how.startswith("VmHWM"):
        return bench.status_kib("VmHWM") / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(steps: dict, data: dict, a: argparse.Namespace, device) -> dict:
    """Run the steps of every mode interleaved (rotating order), time each after the warm-up."""
    import torch

    names = list(steps)
    seconds = {m: 0.0 for m in names}
    counted = {m: [0, 0, 0] for m in names}
    how = None
    for s in range(a.warmup + a.steps):
        if s == a.warmup:
            how = reset_peak(device)
        for mode in names[s % len(names) :] + names[: s % len(names)]:
            if device.type == "cuda":
                torch.cuda.synchronize()
            t = time.perf_counter()
            got = steps[mode](data[mode][s])
            if device.type == "cuda":
                torch.cuda.synchronize()
            if s >= a.warmup:
                seconds[mode] += time.perf_counter() - t
                counted[mode] = [c + g for c, g in zip(counted[mode], got)]
    peak = peak_mib(device, how, packing_bench())
    return {
        m: {
            "items_per_s": counted[m][0] / seconds[m],
            "tokens_per_s": counted[m][1] / seconds[m],
            "padded_tokens_per_s": counted[m][2] / seconds[m],
            "s_per_step": seconds[m] / a.steps,
            "items_per_step": counted[m][0] / a.steps,
            "tokens_per_step": counted[m][1] / a.steps,
            "peak_mib": peak,
            "peak_how": how,
        }
        for m in names
    }


def run_part(a: argparse.Namespace) -> dict:
    """One part in this process (``--part``): its figures as a dict."""
    if a.part in ("a", "c"):
        why = unsloth_refusal()
        if why:
            return {"part": a.part, "skipped": why}
        os.environ["UNSLOTH_RETURN_LOGITS"] = "0" if a.part == "c" else "1"
        import unsloth  # noqa: F401  (first, so that it patches transformers before the model loads)
    import torch

    from arrank.training import packing, train

    torch.manual_seed(a.seed)
    device, _ = device_and_dtype(a)
    df, texts = dataset(a)
    backend = "unsloth" if a.part in ("a", "c") else "transformers"
    t = time.perf_counter()
    model, tok = load(a, backend, texts)
    load_s = time.perf_counter() - t
    items = train.training_items(df, tok, "fractional", alpha=2.0, max_length=a.max_length)
    packed = packing.pack_items(items, a.max_length)
    bench = packing_bench()
    unpacked_batches, packed_batches = bench.batches(a, items, packed, a.warmup + a.steps)
    result = {
        "part": a.part,
        "title": TITLES[a.part],
        "backend": backend,
        "device": str(device),
        "dtype": str(next(model.parameters()).dtype),
        "load_s": load_s,
        "items": len(items),
        "queries": len(packed),
        "attention": getattr(model.config, "_attn_implementation", None),
        "gradient_checkpointing": bool(getattr(model, "is_gradient_checkpointing", False)),
        "trainable_parameters": sum(p.numel() for p in model.parameters() if p.requires_grad),
    }
    if a.part in ("a", "b"):  # the agreement batch first: the base model's loss (LoRA B = 0)
        first = unpacked_batches[0]
        result["loss_onehot"] = batch_loss(model, tok, first, "items", device)
        trie_items = train.training_items(
            df, tok, "fractional", alpha=2.0, targets="trie", beta=1.0, max_length=a.max_length
        )
        by_key = {(it["query"], it["rank"]): it for it in trie_items}
        result["loss_trie"] = batch_loss(
            model, tok, [by_key[(it["query"], it["rank"])] for it in first], "items", device
        )
    if a.part == "d":
        ok, why = packing.mask_support(model)
        if not ok:
            return {**result, "skipped": f"the model cannot take the packed mask: {why}"}
        rows = packing.row_length_for(packed, a.max_length)
        first = packed_batches[0]
        held = [it for p in first for it in items if it["query"] == p["query"] and it["rank"] in p["ranks"]]
        result["loss_packed"] = batch_loss(model, tok, first, "packed", device, rows)
        result["loss_unpacked_same_items"] = batch_loss(model, tok, held, "items", device)
        steps = {
            "unpacked": make_step(copy.deepcopy(model), tok, "items", "stoical", device),
            "packed": make_step(model, tok, "packed", "stoical", device, rows),
        }
        result["timing"] = timed(steps, {"unpacked": unpacked_batches, "packed": packed_batches}, a, device)
    elif a.part == "e":
        ok, why = packing.mask_support(model)
        if not ok:
            return {**result, "skipped": f"the model cannot take the packed mask: {why}"}
        rows = packing.row_length_for(packed, a.max_length)
        plain = make_step(copy.deepcopy(model), tok, "packed", "stoical", device, rows)
        result["loss_packed"] = batch_loss(model, tok, packed_batches[0], "packed", device, rows)
        steps = {"packed": plain}
        if packing.prefix_possible(model)[0] and not packing.prefix_support(model)[0]:  # a GPU: time both
            steps["workbook_shared"] = workbook_step(copy.deepcopy(model), tok, device, rows, share=True)[0]
        steps["workbook"], loss, (shared, why) = workbook_step(model, tok, device, rows)
        result["loss_workbook"] = loss(packed_batches[0])
        result["shared_prefix"] = {"on": shared, "why": why}
        result["timing"] = timed(steps, dict.fromkeys(steps, packed_batches), a, device)
    else:
        step = make_step(model, tok, "items", "ntp" if a.part == "c" else "stoical", device)
        result["timing"] = timed({"unpacked": step}, {"unpacked": unpacked_batches}, a, device)
    return result


def build_paper_architecture(a: argparse.Namespace) -> None:
    """The random-weight Mistral-7B-Instruct-v0.3 folder ``--model`` names, built once, with a BPE
    tokenizer trained on the benchmark's own WordNet texts (docs/gpu.md)."""
    import paper_architecture  # benchmarks/paper_architecture.py, beside this script
    import torch

    folder = Path(a.model)
    if (folder / "config.json").exists():
        print(f"{folder}: already built", flush=True)
        return
    t = time.perf_counter()
    _, texts = dataset(a)
    paper_architecture.random_paper_model(
        folder, texts, seed=a.seed, device="cuda" if torch.cuda.is_available() else "cpu"
    )
    size = sum(f.stat().st_size for f in folder.iterdir()) / 2**30
    print(f"built {folder} ({size:.1f} GiB) in {time.perf_counter() - t:.0f} s", flush=True)


def spawn(a: argparse.Namespace, part: str) -> dict:
    """Run ``part`` in a fresh process and read its JSON line; a crash is reported, not raised."""
    args = [
        sys.executable,
        __file__,
        "--part",
        part,
        "--model",
        a.model,
        "--queries",
        str(a.queries),
        "--batch",
        str(a.batch),
        "--steps",
        str(a.steps),
        "--warmup",
        str(a.warmup),
        "--seed",
        str(a.seed),
        "--dtype",
        a.dtype,
        "--max-length",
        str(a.max_length),
    ]
    out = subprocess.run(args, capture_output=True, text=True)
    lines = [line for line in out.stdout.splitlines() if line.startswith('{"part"')]
    if out.returncode != 0 or not lines:
        return {
            "part": part,
            "failed": (out.stderr or out.stdout).strip().splitlines()[-1:] or ["no output"],
            "stderr_tail": out.stderr[-4000:],
        }
    return json.loads(lines[-1])


def relative(x: float | None, y: float | None) -> float | None:
    return None if x is None or y is None else abs(x - y) / abs(y)


def summary(results: dict) -> dict:
    """Ratios against the targets of docs/gpu.md, where both sides ran."""

    def rate(part: str, mode: str = "unpacked", key: str = "tokens_per_s"):
        return results.get(part, {}).get("timing", {}).get(mode, {}).get(key)

    out = {}
    if rate("a") and rate("b"):
        out["a/b tokens/s (target >= 1.5)"] = rate("a") / rate("b")
    if rate("a") and rate("c"):
        out["a/c tokens/s (target >= 0.95)"] = rate("a") / rate("c")
    if rate("d", "packed", "items_per_s") and rate("d", "unpacked", "items_per_s"):
        out["d packed/unpacked items/s (target >= 3)"] = rate("d", "packed", "items_per_s") / rate(
            "d", "unpacked", "items_per_s"
        )
    a, b, d = results.get("a", {}), results.get("b", {}), results.get("d", {})
    for kind in ("onehot", "trie"):
        r = relative(a.get(f"loss_{kind}"), b.get(f"loss_{kind}"))
        if r is not None:
            out[f"|loss a - loss b| / loss b, {kind} targets"] = r
    r = relative(d.get("loss_packed"), d.get("loss_unpacked_same_items"))
    if r is not None:
        out["|loss packed - loss unpacked| / loss unpacked (same items)"] = r
    if rate("e", "workbook") and rate("e", "packed"):
        out["e workbook/packed tokens/s"] = rate("e", "workbook") / rate("e", "packed")
    if rate("e", "workbook_shared") and rate("e", "packed"):
        out["e workbook with the opening shared, over packed, tokens/s"] = rate("e", "workbook_shared") / rate(
            "e", "packed"
        )
    e = results.get("e", {})
    r = relative(e.get("loss_workbook"), e.get("loss_packed"))
    if r is not None:
        out["|loss workbook - loss packed| / loss packed (same batch)"] = r
    return out


def report(results: dict) -> None:
    print(f"{'part':<5} {'what':<48} {'tokens/s':>10} {'items/s':>9} {'s/step':>8} {'peak MiB':>9}")
    for part in PARTS:
        r = results.get(part)
        if r is None:
            continue
        if "skipped" in r or "failed" in r:
            print(f"{part:<5} {TITLES[part]:<48} skipped: {r.get('skipped') or r.get('failed')}")
            continue
        for mode, t in r["timing"].items():
            label = {"d": f"transformers + peft + STOICaL, {mode}", "e": f"{mode} step (d's, or the workbook's)"}.get(
                part, TITLES[part]
            )
            print(
                f"{part:<5} {label:<48} {t['tokens_per_s']:>10.0f} {t['items_per_s']:>9.1f} "
                f"{t['s_per_step']:>8.3f} {t['peak_mib']:>9.0f}"
            )
    for name, value in summary(results).items():
        print(f"{name}: {value:.3g}")


def merged(a: argparse.Namespace, parts: list[str]) -> dict:
    """The parts of the earlier run ``--merge`` names that this run does not run again; refused
    when that run measured another model, data or batch."""
    if not a.merge.is_file():
        raise SystemExit(f"--merge {a.merge}: no such file (give the --json file of an earlier run)")
    earlier = json.loads(a.merge.read_text())
    same = {k: earlier["args"].get(k) for k in ("model", "queries", "batch", "seed", "max_length")}
    if same != {k: getattr(a, k) for k in same}:
        raise SystemExit(f"--merge {a.merge} ran with {same}; this run differs: compare like with like")
    return {p: r for p, r in earlier["results"].items() if p not in parts}


def save(a: argparse.Namespace, results: dict) -> None:
    """Every figure so far to ``--json`` (replaced whole, through a temporary file), if given."""
    if not a.json:
        return
    a.json.parent.mkdir(parents=True, exist_ok=True)
    report = {"args": vars(a) | {"json": str(a.json)}, "results": results, "summary": summary(results)}
    tmp = a.json.with_name(a.json.name + ".tmp")
    tmp.write_text(json.dumps(report, indent=1, default=str))
    tmp.replace(a.json)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="tiny, a model folder, or a model_name (smollm2-135m, ...)")
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=8, help="items per unpacked step (Appendix B: 8)")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--dtype",
        default="auto",
        choices=["auto", "bfloat16", "float32"],
        help="(b), (d) and (e): auto = bfloat16 on CUDA, float32 on a CPU; Unsloth picks its own",
    )
    ap.add_argument("--max-length", type=int, default=1024, help="Appendix B: 1024")
    ap.add_argument("--parts", default=",".join(PARTS), help="a comma-separated subset of " + ",".join(PARTS))
    ap.add_argument("--json", type=Path, help="also write every figure to this JSON file")
    ap.add_argument(
        "--merge",
        type=Path,
        help="a --json file of an earlier run on the same model and batch: its "
        "parts join this run's report and ratios (parts run now replace them)",
    )
    ap.add_argument(
        "--build-paper-architecture",
        action="store_true",
        help="first build Mistral-7B-Instruct-v0.3's architecture, random bf16 weights, into the "
        "folder --model names (on CUDA when there; benchmarks/paper_architecture.py), unless it exists",
    )
    ap.add_argument(
        "--build-only",
        action="store_true",
        help="with --build-paper-architecture: build the folder and stop (e.g. in the background while "
        "the kit's last call is staged)",
    )
    ap.add_argument("--part", choices=PARTS, help=argparse.SUPPRESS)
    a = ap.parse_args()
    parts = [p.strip() for p in a.parts.split(",") if p.strip()]
    bad = [p for p in parts if p not in PARTS]
    if bad or not parts:
        raise SystemExit(f"--parts {a.parts!r}: each part must be one of {list(PARTS)}")
    if a.steps < 1 or a.warmup < 0 or a.batch < 1:
        raise SystemExit(f"--steps {a.steps} must be >= 1, --warmup {a.warmup} >= 0, --batch {a.batch} >= 1")
    if a.build_only and not a.build_paper_architecture:
        raise SystemExit("--build-only builds the model: give it with --build-paper-architecture")
    if a.part:
        print(json.dumps(run_part(a)), flush=True)
        return
    import torch

    results = merged(a, parts) if a.merge else {}
    if a.build_paper_architecture:
        build_paper_architecture(a)
    if a.build_only:
        return
    print(
        f"model {a.model}, {a.queries} queries, batch {a.batch}, {a.steps} timed steps after {a.warmup}; "
        f"torch {torch.__version__}, "
        f"{torch.cuda.get_device_name() if torch.cuda.is_available() else 'no CUDA: CPU'}",
        flush=True,
    )
    for part in parts:
        results[part] = spawn(a, part)
        save(a, results)  # after every part: a call stopped at its time limit keeps what finished
        print(
            f"part {part}: "
            + (
                "skipped: " + results[part]["skipped"]
                if "skipped" in results[part]
                else "failed: " + " ".join(results[part]["failed"])
                if "failed" in results[part]
                else "done"
            ),
            flush=True,
        )
    report(results)
    if any("failed" in r for r in results.values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
