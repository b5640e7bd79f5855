"""Speed of scoring several queries in one forward pass (``scoring.score_query_batch``) against one
query at a time (``score_prefix_shared``, the prompt's cache then its packed candidates), on the
pretrained profile's WordNet held-out queries (Appendix D.1 prompt, animal.n.01, >= 5 hypernyms);
with ``--opening``, also the prompts' shared opening run once against every prompt run whole.

    python benchmarks/query_batch.py [--model smollm2-135m|tiny] [--queries 64] [--groups 1 4 16 32]
                                     [--precision auto|fp32|bf16] [--reps 2] [--threads 2] [--device cpu|cuda]
                                     [--opening]

Every group size scores the same queries through ``evaluate.score_and_evaluate`` (so under the
notebooks' precision context), the sizes in rotating order, ``--reps`` times each after one warm-up
pass; printed: the median queries/s of each size, its ratio to size 1 (one query at a time, the
CPU default) and the largest |score difference| to size 1 over every candidate. A GPU machine runs
it with ``--device cuda`` (docs/gpu.md). ``--json FILE`` also writes the figures and whether every
size agrees with size 1 within ``TOLERANCE`` (``agree``): gpu/curve_call.sh scores one query a pass
where it does not.

``--opening``: every size is also scored with ``share_opening=False`` (the path before the opening
was shared: each query runs its whole prompt), in the same rotation; printed per size: both
speeds, their ratio (whole / shared time) and the largest absolute and relative score difference
between the two; then one query a pass with the opening shared but the packed layout (the prompt's
rest, then the candidates behind its cache: two passes, where ``auto`` takes one), and a last line ``shared opening at one query a pass: <x>x faster than whole
prompts; largest relative score difference <d>; <CPU model>``. In bf16, every prompt is also scored
whole in fp32 once: each path's mean and largest relative difference from those scores, so that
what the shared opening moves is read against bf16's own rounding (two bf16 paths differ by about
as much as either differs from fp32), and whether the shared opening's mean is within ``OWN_ERROR``
of the whole prompts'.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from arrank.data.ranking import ranking_dataset
from arrank.evaluation import evaluate
from arrank.evaluation.scoring import opening_cache, opening_support, score_queries
from arrank.training import models
from arrank.training.precision import apply_precision, cpu_model, inference


def load(name: str, df, device: str):
    """(model, tokenizer) in eval mode on ``device``: the tiny random Llama or a pretrained model."""
    model, tok = models.load_model(name, "transformers", 512, df=df)
    return model.to(device).eval(), tok


def timed_scores(model, tok, queries, group: int, precision: str, mode: str = "opening") -> tuple[float, list[dict]]:
    """(seconds, per-query records) of scoring ``queries`` ``group`` at a time; ``mode``: ``opening``
    (the prompts' opening run once, ``scoring.score_queries``), ``whole`` (every prompt whole) or
    ``shared-packed`` (the opening run once, each query then in the packed layout's two passes)."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    t = time.perf_counter()
    if mode == "shared-packed":  # score_and_evaluate's own path, the layout named
        items = [(row["prompt"], evaluate.candidates(row)) for row in queries.to_dict("records")]
        with inference(model, precision):
            scores = score_queries(model, tok, items, progress=False, layout="packed", query_batch=group)
        records = [{"scores": dict(zip(it[1], map(float, sc)))} for it, sc in zip(items, scores)]
    else:
        _, _, records = evaluate.score_and_evaluate(
            model, tok, queries, progress=False, precision=precision, query_batch=group, share_opening=mode == "opening"
        )
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - t, records


# Scores agree when |a - b| <= TOLERANCE * max(1, |b|): four units of bf16's rounding (2^-8), which
# a different batch's padding and reduction order can move a mean log-probability by; far below the
# gaps between a query's candidates that decide its metrics.
TOLERANCE = 2**-6


def diffs(a: list[dict], b: list[dict], relative: bool = False) -> list[float]:
    """Every |score difference| between two scorings of the same queries (``relative``: divided by
    |``b``'s score|)."""
    return [
        abs(s - rb["scores"][d]) / (abs(rb["scores"][d]) if relative else 1.0)
        for ra, rb in zip(a, b)
        for d, s in ra["scores"].items()
    ]


def max_diff(a: list[dict], b: list[dict], relative: bool = False) -> float:
    """The largest of :func:`diffs`."""
    return max(diffs(a, b, relative))


def agrees(a: list[dict], b: list[dict], tolerance: float = TOLERANCE) -> bool:
    """Whether every score of ``a`` is ``b``'s within ``tolerance`` relative (at least 1 absolute)."""
    return all(
        abs(s - rb["scores"][d]) <= tolerance * max(1.0, abs(rb["scores"][d]))
        for ra, rb in zip(a, b)
        for d, s in ra["scores"].items()
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
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
    ap.add_argument("--opening", action="store_true", help="also score every prompt whole (no shared opening)")
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
        f"{a.model} on {a.device} ({torch.get_num_threads()} threads, torch {torch.__version__}, "
        f"{cpu_model()}), {used}; {len(queries)} held-out queries, {n_cands} candidates, median prompt "
        f"{int(queries['prompt'].str.len().median())} characters"
    )
    if a.opening:
        opening_line(model, tok, queries)
    runs = [(g, "opening") for g in a.groups]
    if a.opening:
        runs += [(g, "whole") for g in a.groups] + [(1, "shared-packed")]
    seconds: dict[tuple[int, str], list[float]] = {r: [] for r in runs}
    every: dict[tuple[int, str], list[dict]] = {}
    for rep in range(a.reps + 1):  # rep 0 warms up
        for g, mode in runs[rep % len(runs) :] + runs[: rep % len(runs)]:
            s, every[g, mode] = timed_scores(model, tok, queries, g, used, mode)
            if rep:
                seconds[g, mode].append(s)
    records = {g: every[g, "opening"] for g in a.groups}
    base = statistics.median(seconds[1, "opening"])
    print(f"{'queries/pass':>12} {'queries/s':>10} {'vs 1':>6} {'max|diff| vs 1':>15}")
    rows = []
    for g in a.groups:
        med = statistics.median(seconds[g, "opening"])
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
    if a.opening:
        print(
            f"{'queries/pass':>12} {'whole q/s':>10} {'shared q/s':>11} {'speed-up':>9} {'max|diff|':>10} {'max rel':>8}"
        )
        for row in rows:
            g = row["queries_per_pass"]
            whole = statistics.median(seconds[g, "whole"])
            row["opening_speedup"] = whole / statistics.median(seconds[g, "opening"])
            row["opening_max_abs_diff"] = max_diff(every[g, "opening"], every[g, "whole"])
            row["opening_max_rel_diff"] = max_diff(every[g, "opening"], every[g, "whole"], relative=True)
            print(
                f"{g:>12} {len(queries) / whole:>10.2f} {row['queries_per_s']:>11.2f} {row['opening_speedup']:>8.2f}x "
                f"{row['opening_max_abs_diff']:>10.1e} {row['opening_max_rel_diff']:>8.1e}"
            )
        one = next(r for r in rows if r["queries_per_pass"] == 1)
        packed = statistics.median(seconds[1, "shared-packed"])
        one["opening_packed_speedup"] = statistics.median(seconds[1, "whole"]) / packed
        print(
            f"one query a pass, the opening shared but each query in two passes (layout packed): "
            f"{len(queries) / packed:.2f} q/s, {one['opening_packed_speedup']:.2f}x whole prompts; "
            f"max rel diff {max_diff(every[1, 'shared-packed'], every[1, 'whole'], relative=True):.1e}"
        )
        print(
            f"shared opening at one query a pass: {one['opening_speedup']:.2f}x faster than whole prompts; "
            f"largest relative score difference {max(r['opening_max_rel_diff'] for r in rows):.1e}; {cpu_model()}",
            flush=True,
        )
        if used == "bf16":
            from_fp32(model, tok, queries, {r["queries_per_pass"]: r for r in rows}, every)
    if a.json:
        report = {"model": a.model, "device": a.device, "precision": used, "queries": len(queries)}
        a.json.write_text(json.dumps({**report, "tolerance": TOLERANCE, "agree": agree, "sizes": rows}, indent=1))


OWN_ERROR = 1.1  # the shared opening's mean difference from fp32 against whole prompts': within 10%


def from_fp32(model, tok, queries, rows: dict[int, dict], every: dict) -> None:
    """bf16's own rounding against what the shared opening adds: every prompt scored whole in fp32
    once (the reference), then each bf16 path's mean and largest relative difference from it. Two
    bf16 paths differ by about bf16's error from fp32 (a different summation order, as a different
    batch's padding gives); the opening adds nothing when its error from fp32 is the whole prompt's."""
    _, reference = timed_scores(model, tok, queries, 1, "fp32", "whole")
    print(f"{'queries/pass':>12} {'whole vs fp32 mean/max rel':>27} {'shared vs fp32 mean/max rel':>28}")
    for g, row in rows.items():
        for mode in ("whole", "opening"):
            rel = diffs(every[g, mode], reference, relative=True)
            row[f"{mode}_fp32_rel_diff"] = [statistics.mean(rel), max(rel)]
        w, o = row["whole_fp32_rel_diff"], row["opening_fp32_rel_diff"]
        print(f"{g:>12} {w[0]:>17.1e} / {w[1]:.1e} {o[0]:>18.1e} / {o[1]:.1e}")
    w, o = rows[1]["whole_fp32_rel_diff"][0], rows[1]["opening_fp32_rel_diff"][0]
    print(
        f"bf16 against fp32 at one query a pass: mean relative difference {w:.1e} whole, {o:.1e} with the shared "
        f"opening; the opening within bf16's own error (at most {OWN_ERROR:g}x whole's): {o <= OWN_ERROR * w}",
        flush=True,
    )


def opening_line(model, tok, queries) -> None:
    """Print whether the opening is shared for ``model`` and how many of the prompts' tokens it holds."""
    from arrank.training.encoding import prompt_ids

    ok, why = opening_support(model)
    prompts = [prompt_ids(tok, p) for p in queries["prompt"]]
    with torch.inference_mode():
        opening = opening_cache(model.eval(), prompts) if ok else None
    n = len(opening.ids) if opening else 0
    mean = statistics.mean(map(len, prompts))
    print(f"shared opening: {n} of a prompt's {mean:.0f} tokens on average ({why})")


if __name__ == "__main__":
    main()
