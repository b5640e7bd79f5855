"""bf16 and the LM head at the supervised positions: training step and scoring speed, in one run.

    python benchmarks/precision.py [--threads 2] [--reps 5] [--warmup 2] [--models smollm2-135m tiny]
                                   [--score-queries 12] [--profile] [--busy 0] [--rows 4]
                                   [--lora-targets all-linear] [--auto-only]
    python benchmarks/precision.py --threads-study [--reps 15]
    python benchmarks/precision.py --baselines 300 --threads 1
    python benchmarks/precision.py --probe 576x1536 960x2560 4096x14336 [--threads 2]

Training step (forward, STOICaL loss, backward, AdamW step; ``arrank.training``), median over
``--reps`` interleaved repetitions after ``--warmup``, on the same random batch for every variant:

- SmolLM2-135M-Instruct (``smollm2-135m``) + LoRA r = 16 on all linear layers, batch 4 x 256
  tokens (239 prompt + 17 docID tokens per row: the docID positions are the supervised ones);
- the quick profile's tiny Llama (hidden 128, 4 layers, full fine-tuning), batch 64 x 36 tokens
  (30 + 6), as ``benchmarks/stoical_step.py``.

Variants: (a) fp32, logits at every position (the old path: ``stoical_loss`` on the
model's full logits); (b) fp32, the head at the supervised positions only
(``supervised_head.head_at`` + ``stoical_loss_at``); (c) bf16 as the workbook trains
(``precision.mixed``: autocast, peft's float32 cast of LoRA inputs off; frozen LoRA base weights
held in bf16 by ``precision.prepare_model``), head at the supervised positions in float32; (d)
as (c), with the tokens every row opens with run once for the batch and the rows behind their
expanded key/value cache (``training.shared_prefix``: the SmolLM2 batch's first 102 tokens are the
same in every row, as the chat template's system turn and the D.1 instruction are in WordNet's
prompts), the way the workbook trains, and the same in fp32 (``d_fp32``). For LoRA also the
other ways of mixed precision: (c2) plain autocast with the base weights left in float32 (cast
every forward); (c3) base weights held in bf16 but peft's input cast kept.

Also measured in the same run: the 2048 x 2048 matmul peak of fp32 and bf16 at the same thread
count, each step's model FLOP/s (matmul FLOPs of the linear layers, attention and head actually
run, forward and backward) as a share of its dtype's peak (the best matmul measured before and
after the model's steps), the relative difference of the losses
and gradients of (b), (c) against (a), and the scoring throughput (queries/s) in fp32 and bf16
on real held-out WordNet queries (``evaluation.evaluate.score_and_evaluate``, as the workbook
scores). After each model, ``auto`` beside them: what ``precision='auto'`` picks on this CPU (its
matmul probe timed afresh: fp32's and bf16's milliseconds and the probe's seconds), the training
step the workbook runs ((d) or (c)) and a query's scoring in fp32 and in bf16, and ``auto/best``:
the time of auto's choice over the faster one's (1.00 where auto picked the faster); ``--auto-only``
times just (a) and the workbook's step in both precisions.
``--profile`` prints torch.profiler's five largest self-CPU costs of one bf16 step of
the first model. ``--busy N`` runs N busy-looping processes beside the whole run.

The last line reads ``step speed-up over fp32 all-logits: <x>x; bf16 step at <y>% of bf16
matmul peak`` for the first model's training step as the workbook runs it ((d), or (c) for a model
whose batch shares no prefix; targets: x >= 2.5, y >= 30). FLOP/s count the FLOPs run, so (d)'s
share of the peak does not gain from the FLOPs it leaves out.

``--threads-study``: the tiny model's step (head at the supervised positions, fp32 and bf16) in
fresh processes, each setting quiet and with one busy-looping process beside it: 1 or 2 torch
threads, OpenMP's default waiting or ``OMP_WAIT_POLICY=PASSIVE`` (set before torch loads), and
two 1-thread processes at once (the sweep's ``--jobs 2``: its steps per second counted over both).

``--probe HIDDENxINTERMEDIATE ...``: what ``precision='auto'`` measures on this CPU for models of
those widths (``precision.cpu_probe`` into a temporary cache, so each is timed afresh): the probed
shapes, fp32's and bf16's best milliseconds a round, bf16's speed-up, the probe's own seconds
(tensors made, warm-up and rounds) and auto's choice (fp32 unprobed on a CPU without bf16
instructions, where the probe shows what it would have measured).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import subprocess
import sys
import time

import torch

from arrank.training import models, precision, stoical
from arrank.training.shared_prefix import prefix_cache
from arrank.training.supervised_head import head_at, output_head

# batch, prompt tokens, docID tokens, tokens every prompt opens with (SmolLM2: the chat template's
# system turn and the D.1 instruction, 102 tokens; the quick profile's short template opens with
# two shared tokens, below shared_prefix.MIN_SHARED: its batches run unshared)
SHAPES = {"smollm2-135m": (4, 239, 17, 102), "tiny": (64, 30, 6, 0)}


def matmul_peak(dtype: torch.dtype, n: int = 2048, reps: int = 5) -> float:
    """Best FLOP/s of an n x n matmul in ``dtype`` at the current thread count (the best of
    ``reps``: on a shared machine the median is what the others left, not what the CPU does)."""
    a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
    a @ b
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t)
    return 2 * n**3 / min(times)


def update_peaks(peaks: dict[str, float]) -> None:
    """Measure both peaks again and keep the higher (called before and after each model)."""
    for key, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        peaks[key] = max(peaks.get(key, 0.0), matmul_peak(dtype))


def make_batch(vocab: int, batch: int, prompt: int, docid: int, shared: int = 0, seed: int = 0):
    """Random ids, the first ``shared`` the same in every row; one-hot targets on the docID
    positions, fractional lambda(r) for random ranks."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, vocab, (batch, prompt + docid), generator=g)
    ids[:, :shared] = ids[0, :shared]
    labels = torch.full_like(ids, -100)
    labels[:, prompt:] = ids[:, prompt:]
    t_ids, t_mass = stoical.targets_from_labels(labels)
    ranks = torch.randint(1, 8, (batch,), generator=g)
    lam = torch.tensor([stoical.item_weight("fractional", int(r), 7, alpha=2) for r in ranks])
    return ids, t_ids, t_mass, lam


def build(name: str, score_df=None):
    """(base model, tokenizer or None, LoRA?) for a benchmark model name."""
    model, tok = models.load_model(name, "transformers", 512, df=score_df)
    return model, tok, name != "tiny"


def with_lora(base, lora: bool, targets: str = "all-linear"):
    """The model every variant copies: ``base``, with LoRA r = 16 adapters on ``targets`` when
    ``lora`` (their B starts at zero; moved off it so the first step's gradients reach A too)."""
    if not lora:
        return base
    model = models.add_lora(copy.deepcopy(base), "transformers", 16, 32, 0.0, targets, seed=0)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 1e-3)
    return model


def variant_model(start, prec: str, hold_bf16: bool = True):
    """A copy of ``start`` prepared for ``prec`` (frozen base weights held in bf16 unless not
    ``hold_bf16``: then autocast casts them every forward)."""
    model = copy.deepcopy(start)
    if hold_bf16:
        precision.prepare_model(model, prec)
    model.train()
    return model


def step_fn(model, opt, batch, mode: str, prec: str, peft_cast: bool = False, shared: int = 0):
    """One training step of a variant; ``step(capture=True)`` also returns the gradients.
    ``peft_cast``: keep peft's cast of each LoRA input to float32 (plain autocast). Mode
    ``"prefix"``: the rows' first ``shared`` tokens run once (``shared_prefix.prefix_cache``), the
    rest of each row behind the expanded cache, as ``trainer.StoicalTrainer`` trains."""
    ids, t_ids, t_mass, lam = batch
    rows = stoical.supervised_positions(t_mass)
    rows_after = stoical.supervised_positions(t_mass[:, shared:])
    context = (lambda: precision.autocast(prec)) if peft_cast else (lambda: precision.mixed(model, prec))

    def step(capture: bool = False):
        opt.zero_grad(set_to_none=True)
        with context():
            if mode == "all":
                loss = stoical.stoical_loss(model(input_ids=ids).logits, t_ids, t_mass, lam)
            elif mode == "prefix":
                cache = prefix_cache(model, ids[:1, :shared], ids.shape[0])
                mask = torch.ones(ids.shape, dtype=torch.long)
                with head_at(model, rows_after):
                    rest = ids[:, shared:]
                    logits = model(input_ids=rest, attention_mask=mask, past_key_values=cache, use_cache=True).logits
                loss = stoical.stoical_loss_at(logits, t_ids[:, shared:], t_mass[:, shared:], lam)
            else:
                with head_at(model, rows):
                    logits = model(input_ids=ids).logits
                loss = stoical.stoical_loss_at(logits, t_ids, t_mass, lam)
        loss.backward()
        grads = [p.grad.detach().clone() for p in model.parameters() if p.requires_grad] if capture else None
        opt.step()
        return loss.item(), grads

    return step


def step_flops(model, batch: int, seq: int, n_sup: int, head_rows: int, shared: int = 0) -> float:
    """Matmul FLOPs of one training step as run: linear layers (forward 2, input gradient 2,
    weight gradient 2 when trainable, per weight and token), attention (QK^T and AV, forward and
    the backward's two, per query-key pair), the head on ``head_rows`` rows (tied, trainable only
    in full fine-tuning). ``shared``: the first tokens run once for the batch, not per row."""
    head = output_head(model)
    tokens = batch * (seq - shared) + shared
    pairs = batch * (seq - shared) * seq + shared * shared
    flops = 0.0
    for m in model.modules():
        if isinstance(m, torch.nn.Linear) and m is not head:
            factor = 6 if m.weight.requires_grad else 4
            flops += factor * m.in_features * m.out_features * tokens
    cfg = getattr(model, "config", None) or model.get_base_model().config
    flops += cfg.num_hidden_layers * 3 * 4 * pairs * cfg.hidden_size
    flops += (6 if head.weight.requires_grad else 4) * head.in_features * head.out_features * head_rows
    return flops


def time_steps(steps: dict, warmup: int, reps: int) -> dict[str, float]:
    times: dict[str, list[float]] = {k: [] for k in steps}
    names = list(steps)
    for rep in range(warmup + reps):
        for name in names[rep % len(names) :] + names[: rep % len(names)]:
            t = time.perf_counter()
            steps[name]()
            if rep >= warmup:
                times[name].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def bench_model(name: str, a: argparse.Namespace, df, peaks: dict[str, float]) -> dict:
    base, tok, lora = build(name, df)
    B, P, D, S = SHAPES[name]
    B = a.rows if a.rows and name != "tiny" else B
    batch = make_batch(base.config.vocab_size, B, P, D, S)
    n_sup = stoical.supervised_count(batch[2])
    # key: (logits, precision, frozen base weights held in bf16, peft's float32 input cast kept)
    plan = {
        "a_fp32_all": ("all", "fp32", True, False),
        "b_fp32_rows": ("rows", "fp32", True, False),
        "c_bf16_rows": ("rows", "bf16", True, False),
    }
    if lora:  # the two other ways of mixed precision with LoRA, for comparison
        plan["c2_bf16_autocast_only"] = ("rows", "bf16", False, True)  # base fp32, cast every step
        plan["c3_bf16_peft_cast"] = ("rows", "bf16", True, True)  # activations cast up per adapter
    if S:  # as the workbook trains: bf16, head at the supervised rows, the shared opening run once
        plan["d_bf16_rows_prefix"] = ("prefix", "bf16", True, False)
        plan["d_fp32_rows_prefix"] = ("prefix", "fp32", True, False)  # the same step in fp32: auto's other choice
    if a.auto_only:  # (a) and the workbook's step in both precisions
        keep = ("a_fp32_all", *(("d_fp32_rows_prefix", "d_bf16_rows_prefix") if S else ("b_fp32_rows", "c_bf16_rows")))
        plan = {k: v for k, v in plan.items() if k in keep}
    start = with_lora(base, lora, a.lora_targets)
    steps, models_, first = {}, {}, {}
    for key, (mode, prec, hold, peft_cast) in plan.items():
        model = variant_model(start, prec, hold)
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
        steps[key] = step_fn(model, opt, batch, mode, prec, peft_cast, S)
        models_[key] = model
    for key, fn in steps.items():  # first step: identical weights; losses and gradients compared
        t = time.perf_counter()
        first[key] = fn(capture=True)
        print(f"  ({name} {key}: first step {time.perf_counter() - t:.1f} s)", flush=True)
    ref_loss, ref_grads = first["a_fp32_all"]
    med = time_steps(steps, a.warmup, a.reps)
    update_peaks(peaks)
    print(
        f"\n== {name}: batch {B} x {P + D} tokens ({n_sup} supervised positions, {S} shared by every row), "
        f"{'LoRA r=16' if lora else 'full fine-tuning'}, threads {torch.get_num_threads()}"
    )
    out = {}
    for key, t in med.items():
        prec = "bf16" if "bf16" in key else "fp32"
        rows = B * (P + D) if key == "a_fp32_all" else n_sup
        flops = step_flops(models_[key], B, P + D, n_sup, rows, S if key.startswith("d_") else 0)
        loss, grads = first[key]
        gdiff = rel(torch.cat([g.flatten() for g in grads]), torch.cat([r.flatten() for r in ref_grads]))
        if (
            key == "d_bf16_rows_prefix" and "c_bf16_rows" in first
        ):  # against (c): the same numerics but the prefix in every row
            c_loss, c_grads = first["c_bf16_rows"]
            vs_c = rel(torch.cat([g.flatten() for g in grads]), torch.cat([r.flatten() for r in c_grads]))
            print(f"  (d against c: loss rel.diff {abs(loss - c_loss) / abs(c_loss):.1e}, grad rel.diff {vs_c:.1e})")
        share = flops / t / peaks[prec]
        out[key] = {"s": t, "share": share}
        print(
            f"  {key:22s} {t * 1e3:8.1f} ms/step  {flops / t / 1e9:7.1f} GFLOP/s = {100 * share:5.1f}% of "
            f"{prec} peak   loss rel.diff {abs(loss - ref_loss) / abs(ref_loss):.1e}  grad rel.diff {gdiff:.1e}"
        )
    print(
        "  speed-up over a: "
        + ", ".join(
            f"{'_'.join(k.split('_')[:2])} {med['a_fp32_all'] / t:.2f}x" for k, t in med.items() if k != "a_fp32_all"
        )
    )
    if a.profile and not a.profiled:
        a.profiled = True
        profile_step(steps["d_bf16_rows_prefix" if S else "c_bf16_rows"], name)
    scoring = score_speed(base, tok, lora, df, a) if df is not None and a.score_queries else None
    auto_line(base, out, scoring)
    return out


def auto_line(base, out: dict, scoring: dict[str, float] | None) -> None:
    """What ``precision='auto'`` picks for ``base`` on this CPU (its probe timed afresh into a
    temporary cache) beside both precisions' measured training step (the workbook's: (d) in fp32
    and bf16 where the batch shares an opening, else (b) and (c)) and scoring time, and auto's time
    over the faster precision's (target: at most 1.05)."""
    import tempfile
    from pathlib import Path

    cfg = base.config
    cache = Path(tempfile.mkdtemp()) / "probe.json"
    got = precision.resolve_precision("auto", "cpu", cfg.hidden_size, getattr(cfg, "intermediate_size", None), cache)
    p = got.probe
    probe = f"probe: fp32 {p['fp32_ms']:.2f} ms, bf16 {p['bf16_ms']:.2f} ms in {p['probe_s']:.2f} s; " if p else ""
    print(f"  auto -> {got.used}: {probe}{got.reason}")
    step = (
        ("d_fp32_rows_prefix", "d_bf16_rows_prefix") if "d_bf16_rows_prefix" in out else ("b_fp32_rows", "c_bf16_rows")
    )
    times = {"training step": {"fp32": out[step[0]]["s"], "bf16": out[step[1]]["s"]}}
    if scoring:
        times["scoring, s a query"] = scoring
    for what, t in times.items():
        print(
            f"  {what}: fp32 {t['fp32']:.3f} s, bf16 {t['bf16']:.3f} s (bf16 {t['fp32'] / t['bf16']:.2f}x); "
            f"auto/best {t[got.used] / min(t.values()):.2f}"
        )


def profile_step(step, name: str) -> None:
    """torch.profiler's five largest self-CPU costs of one bf16 step."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    print(f"  profile of one bf16 step ({name}), five largest self-CPU costs:")
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=5)
    print("\n".join("    " + ln for ln in table.splitlines()))


def score_speed(base, tok, lora: bool, df, a: argparse.Namespace) -> dict[str, float]:
    """Scoring throughput (queries/s) in fp32 and bf16 on the same held-out queries, and the
    largest score difference between the two; returns each precision's seconds a query."""
    from arrank.evaluation import evaluate

    queries = evaluate.eval_queries(df, a.score_queries)
    res = {}
    start = with_lora(base, lora, a.lora_targets)
    for prec in ("fp32", "bf16", "fp32", "bf16"):  # each twice, the second timed (warm)
        model = variant_model(start, prec).eval()
        t = time.perf_counter()
        _, _, records = evaluate.score_and_evaluate(model, tok, queries, progress=False, precision=prec)
        res[prec] = (time.perf_counter() - t, records)
    diff = max(
        abs(s - res["bf16"][1][i]["scores"][d]) for i, r in enumerate(res["fp32"][1]) for d, s in r["scores"].items()
    )
    n = len(queries)
    print(
        f"  scoring {n} held-out queries: fp32 {n / res['fp32'][0]:.2f} q/s, bf16 {n / res['bf16'][0]:.2f} q/s "
        f"({res['fp32'][0] / res['bf16'][0]:.2f}x); max |score fp32 - bf16| {diff:.3f}"
    )
    return {prec: t / n for prec, (t, _) in res.items()}


def child_step(threads: int, prec: str, reps: int) -> None:
    """One process's median tiny-model step (ms), printed as ``ms=<value>``."""
    torch.set_num_threads(threads)
    base = models.build_tiny_model(vocab_size=2000, hidden=128, layers=4, heads=4, intermediate=384, seed=0)
    batch = make_batch(2000, *SHAPES["tiny"])
    model = variant_model(base, prec)
    step = step_fn(model, torch.optim.AdamW(model.parameters(), lr=1e-4), batch, "rows", prec)
    print(f"ms={1e3 * time_steps({'s': step}, 3, reps)['s']:.1f}", flush=True)


def threads_study(reps: int) -> None:
    """Each thread setting quiet and beside one busy process (module docstring)."""
    import os

    def run(threads: int, prec: str, policy: str | None, procs: int = 1) -> float:
        env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "KMP_BLOCKTIME")}
        env.update({"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)})
        if policy:
            env.update({"OMP_WAIT_POLICY": policy, "KMP_BLOCKTIME": "0"})
        cmd = [sys.executable, __file__, "--child-step", str(threads), prec, "--reps", str(reps)]
        children = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True) for _ in range(procs)]
        ms = [float(c.communicate()[0].split("ms=")[-1]) for c in children]
        return 1 / sum(1 / m for m in ms)  # ms per step, the steps of all processes together

    settings = [(1, None, 1), (2, None, 1), (1, "PASSIVE", 1), (2, "PASSIVE", 1), (1, "PASSIVE", 2)]
    for busy in (0, 1):
        hog = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
        try:
            with open("/proc/loadavg") as fh:
                load = fh.read().split()[:3]
            for prec in ("fp32", "bf16"):
                for threads, policy, procs in settings:
                    ms = run(threads, prec, policy, procs)
                    what = f"{procs} x {threads} thread(s)" if procs > 1 else f"{threads} thread(s)"
                    print(
                        f"{'busy' if busy else 'quiet'} (load {load}) tiny {prec} {what:16s} "
                        f"wait {policy or 'default':8s} {ms:7.1f} ms/step",
                        flush=True,
                    )
        finally:
            for p in hog:
                p.kill()
                p.wait()


def baselines_ab(steps: int) -> None:
    """Notebook 07's CE (n = 32, alpha = 5, quick data) trained in fp32 and inside bf16 autocast,
    twice each: steps/s and final loss (the DE's hand-written gradient does not run under
    autocast at all: ``dual_encoder.de_loss_and_grad`` mixes dtypes in ``index_add_``)."""
    from arrank.baselines import figure3 as BL

    data = BL.lookup_data("animal.n.01", 5, 300, 0)
    hyper = {
        "de_steps": steps,
        "ce_steps": steps,
        "batch_size": 2048,
        "tau": 0.05,
        "de_lr": 1.0,
        "de_momentum": 0.9,
        "ce_lr": 1e-3,
        "ce_weight_decay": 1e-3,
        "de_row_updates": "lazy",
        "ce_row_updates": "dense",
        "ce_optimizer": "adamw",
        "ce_table_init_std": 1.0,
    }
    for _rep in range(2):
        for prec in ("fp32", "bf16"):
            t = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=prec == "bf16"):
                _, log, _ = BL.train_config(
                    {"model": "ce", "n": 32, "alpha": 5.0}, data["pairs"], len(data["names"]), hyper, 0, progress=False
                )
            print(
                f"CE n=32 alpha=5 {prec}: {steps / (time.perf_counter() - t):.1f} steps/s, "
                f"final loss {log['loss'].iloc[-1]:.4f}"
            )


def probe_study(widths: list[str]) -> None:
    """``precision='auto'``'s CPU probe for each ``HIDDENxINTERMEDIATE``, timed afresh (module docstring)."""
    import tempfile
    from pathlib import Path

    cache = Path(tempfile.mkdtemp()) / "probe.json"
    print(f"{precision.cpu_model()}, {torch.get_num_threads()} threads, torch {torch.__version__}")
    for width in widths:
        hidden, inner = (int(x) for x in width.split("x"))
        p = precision.cpu_probe(precision.probe_shapes(hidden, inner), cache)  # timed even where auto skips it
        got = precision.resolve_precision("auto", "cpu", hidden, inner, cache)
        print(
            f"  {p['shapes']:32s} fp32 {p['fp32_ms']:8.2f} ms  bf16 {p['bf16_ms']:8.2f} ms  "
            f"bf16 speed-up {p['bf16_speedup']:5.2f}x  probe {p['probe_s']:5.2f} s  -> {got.used}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--models", nargs="+", default=["smollm2-135m", "tiny"])
    ap.add_argument("--score-queries", type=int, default=12)
    ap.add_argument("--rows", type=int, default=None, help="rows of SmolLM2's batch (default 4, the issue's shape)")
    ap.add_argument(
        "--lora-targets", default="all-linear", help="LoRA target modules (default all-linear, the workbook's)"
    )
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--auto-only", action="store_true", help="steps (a) and the workbook's in fp32 and bf16 only")
    ap.add_argument("--busy", type=int, default=0)
    ap.add_argument("--threads-study", action="store_true")
    ap.add_argument(
        "--baselines",
        type=int,
        default=0,
        metavar="STEPS",
        help="only the CE of notebook 07 in fp32 and bf16 for STEPS steps",
    )
    ap.add_argument(
        "--probe",
        nargs="+",
        metavar="HxI",
        help="only auto's CPU probe for models of these hidden x intermediate widths",
    )
    ap.add_argument("--child-step", nargs=2, metavar=("THREADS", "PRECISION"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    if a.child_step:
        return child_step(int(a.child_step[0]), a.child_step[1], a.reps)
    if a.probe:
        torch.set_num_threads(a.threads)
        return probe_study(a.probe)
    if a.threads_study:
        return threads_study(a.reps)
    if a.baselines:
        torch.set_num_threads(a.threads)
        return baselines_ab(a.baselines)
    a.profiled = False
    torch.set_num_threads(a.threads)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(a.busy)]
    try:
        with open("/proc/loadavg") as fh:
            print(f"load {fh.read().split()[:4]}, {a.busy} busy process(es) started beside this run")
        peaks: dict[str, float] = {}
        update_peaks(peaks)
        ok, why = precision.bf16_support("cpu")
        print(
            f"matmul 2048x2048 at {a.threads} threads: fp32 {peaks['fp32'] / 1e9:.0f} GFLOP/s, "
            f"bf16 {peaks['bf16'] / 1e9:.0f} GFLOP/s ({peaks['bf16'] / peaks['fp32']:.2f}x); {why}"
        )
        df = None
        if a.score_queries or "tiny" in a.models:
            from arrank.data.ranking import ranking_dataset

            df = ranking_dataset("wordnet", "pretrained", 0, 100, None, "animal.n.01", 5)
        results = {}
        for name in a.models:
            d = df if name != "tiny" else ranking_dataset("wordnet", "quick", 0, 300, None, "animal.n.01", 5)
            results[name] = bench_model(name, a, d, peaks)
        print(
            f"matmul peaks, best over the run: fp32 {peaks['fp32'] / 1e9:.0f} GFLOP/s, "
            f"bf16 {peaks['bf16'] / 1e9:.0f} GFLOP/s (shares above use the peaks known when each model finished)"
        )
        main_model = results[a.models[0]]
        final = "d_bf16_rows_prefix" if "d_bf16_rows_prefix" in main_model else "c_bf16_rows"
        x = main_model["a_fp32_all"]["s"] / main_model[final]["s"]
        y = 100 * main_model[final]["share"]
        print(f"step speed-up over fp32 all-logits: {x:.2f}x; bf16 step at {y:.0f}% of bf16 matmul peak")
    finally:
        for p in busy:
            p.kill()
            p.wait()


if __name__ == "__main__":
    main()
