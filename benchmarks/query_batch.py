"""Speed of scoring several queries in one forward pass (``scoring.score_query_batch``) against one
query at a time (``score_prefix_shared``, the prompt's cache then its packed candidates), on the
pretrained profile's WordNet held-out queries (Appendix D.1 prompt, animal.n.01, >= 5 hypernyms).

    python benchmarks/query_batch.py [--model smollm2-135m|tiny] [--queries 64] [--groups 1 4 16 32]
                                     [--precision auto|fp32|bf16] [--reps 2] [--threads 2] [--device cpu|cuda]

Every group size scores the same queries through ``evaluate.score_and_evaluate`` (so under the
notebooks' precision context), the sizes in rotating order, ``--reps`` times each after one warm-up
pass; printed: the median queries/s of each size, its ratio to size 1 (one query at a time, the
CPU default) and the largest |score difference| to size 1 over every candidate. A GPU machine runs
it with ``--device cuda`` (docs/gpu.md). ``--json FILE`` also writes the figures and whether every
size agrees with size 1 within ``TOLERANCE`` (``agree``): gpu/curve_call.sh scores one query a pass
where it does not.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from arrank.data.ranking import ranking_dataset, tokenizer_texts
from arrank.evaluation import evaluate
from arrank.training import models
from arrank.training.precision import apply_precision


def load(name: str, df, device: str):
    """(model, tokenizer) in eval mode on ``device``: the tiny random Llama or a pretrained model."""
    if name == "tiny":
        model, tok = models.tiny_model_and_tokenizer(tokenizer_texts(df), 2000, seed=0)
    else:
        model, tok = models.load_pretrained(name, "transformers", 512)
    return model.to(device).eval(), tok


def timed_scores(model, tok, queries, group: int, precision: str) -> tuple[float, list[dict]]:
    """(seconds, per-query records) of scoring ``queries`` ``group`` at a time."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    t = time.perf_counter()
    _, _, records = evaluate.score_and_evaluate(
        model, tok, queries, progress=False, precision=precision, query_batch=group
    )
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - t, records


# Scores agree when |a - b| <= TOLERANCE * max(1, |b|): four units of bf16's rounding (2^-8), which
# a different batch's padding and reduction order can move a mean log-probability by; far below the
# gaps between a query's candidates that decide its metrics.
TOLERANCE = 2**-6


def max_diff(a: list[dict], b: list[dict]) -> float:
    """The largest |score difference| between two scorings of the same queries."""
    return max(abs(s - rb["scores"][d]) for ra, rb in zip(a, b) for d, s in ra["scores"].items())


def agrees(a: list[dict], b: list[dict], tolerance: float = TOLERANCE) -> bool:
    """Whether every score of ``a`` is ``b``'s within ``tolerance`` relative (at least 1 absolute)."""
    return all(
        abs(s - rb["scores"][d]) <= tolerance * max(1.0, abs(rb["scores"][d]))
        for ra, rb in zip(a, b)
        for d, s in ra["scores"].items()
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--queries", type=int, default=64)
    ap.add_argument("--n-eval", type=int, default=2000, help="held-out queries of the dataset (the GPU sweep's)")
    ap.add_argument(
        "--subtree", default="animal.n.01", help="WordNet subtree of the queries (the pretrained profile's)"
    )
    ap.add_argument("--min-relevant", type=int, default=5, help="queries with at least this many hypernyms")
    ap.add_argument("--groups", type=int, nargs="+", default=[1, 4, 16, 32])
    ap.add_argument("--precision", default="auto")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--json", type=Path, help="write the figures and the agreement verdict here")
    a = ap.parse_args()
    if 1 not in a.groups:
        a.groups = [1, *a.groups]
    torch.set_num_threads(a.threads)
    df = ranking_dataset("wordnet", "pretrained", 0, a.n_eval, None, a.subtree, a.min_relevant)
    queries = evaluate.eval_queries(df, a.queries)
    model, tok = load(a.model, df, a.device)
    used = apply_precision(model, a.precision).used
    n_cands = int(queries["n_relevant"].sum() + queries["negative"].notna().sum())
    print(
        f"{a.model} on {a.device} ({torch.get_num_threads()} threads, torch {torch.__version__}), {used}; "
        f"{len(queries)} held-out queries, {n_cands} candidates, median prompt "
        f"{int(queries['prompt'].str.len().median())} characters"
    )
    seconds: dict[int, list[float]] = {g: [] for g in a.groups}
    records: dict[int, list[dict]] = {}
    for rep in range(a.reps + 1):  # rep 0 warms up
        order = a.groups[rep % len(a.groups) :] + a.groups[: rep % len(a.groups)]
        for g in order:
            s, records[g] = timed_scores(model, tok, queries, g, used)
            if rep:
                seconds[g].append(s)
    base = statistics.median(seconds[1])
    print(f"{'queries/pass':>12} {'queries/s':>10} {'vs 1':>6} {'max|diff| vs 1':>15}")
    rows = []
    for g in a.groups:
        med = statistics.median(seconds[g])
        rows.append(
            {
                "queries_per_pass": g,
                "queries_per_s": len(queries) / med,
                "speedup": base / med,
                "max_abs_diff": max_diff(records[g], records[1]),
                "agree": agrees(records[g], records[1]),
            }
        )
        print(
            f"{g:>12} {rows[-1]['queries_per_s']:>10.2f} {rows[-1]['speedup']:>5.2f}x {rows[-1]['max_abs_diff']:>15.1e}"
        )
    agree = all(r["agree"] for r in rows)
    print(f"every size agrees with one query a pass within {TOLERANCE:g} relative: {agree}", flush=True)
    if a.json:
        report = {"model": a.model, "device": a.device, "precision": used, "queries": len(queries)}
        a.json.write_text(json.dumps({**report, "tolerance": TOLERANCE, "agree": agree, "sizes": rows}, indent=1))


if __name__ == "__main__":
    main()
