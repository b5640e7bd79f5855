"""Speed of candidate scoring (section 5.1): naive (one forward per candidate) vs prefix-shared
(prompt run once, its key/value cache reused by all candidates in one batched pass).

    python benchmarks/scoring_speed.py [--nq 10 50 100] [--templates wordnet wordnet_short]
                                       [--queries 5] [--warmup 2] [--vocab 2000] [--threads 2]
                                       [--batch-size N] [--include-eos] [--device cpu|cuda] [--seed 0]

Model: the quick profile's tiny random Llama (models.build_tiny_model: hidden 128, 4 layers, 4 heads,
intermediate 384) with a BPE tokenizer (~2000 tokens) trained on the WordNet noun synset names plus
the prompt templates' own words (as ``models.tiny_model_and_tokenizer`` does with the task's texts),
and the tiny chat template (BOS + prompt). For each template and n_q, every query is a random synset
name with n_q random synset names as candidates, listed (shuffled) in the prompt as in Appendix D.1.
Naive and prefix-shared (the layouts of ``score_prefix_shared``: ``packed``, the default, the
prompt's cache then all candidates in one row with the 4-D block mask of ``arrank.training.packing``;
``one_pass``, prompt and candidates in one row and one pass with the same mask, no cache;
``padded``, a batch of right-padded rows with a 2-D mask and the prompt cache expanded to every
row) run on the same queries in rotating order;
per-query medians after warm-up are printed with the speed-ups over naive and the max |score
difference| to naive over all queries, warm-up included.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from arrank.data import prompts
from arrank.data.wordnet import noun_synset_names
from arrank.evaluation import scoring
from arrank.training import encoding, models


def tiny_setup(vocab: int, seed: int, device: str):
    """(model, tokenizer): BPE on synset names + template words, random tiny Llama in eval mode."""
    names = noun_synset_names()
    texts = names + [prompts.template(n).format(query="", documents="") for n in prompts.TEMPLATES]
    model, tok = models.tiny_model_and_tokenizer(texts, vocab_size=vocab, seed=seed, cache=False)
    return model.to(device).eval(), tok, names


def timed(fn, *args) -> tuple[float, np.ndarray]:
    """(milliseconds, result) of one call; synchronises CUDA around it."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    t = time.perf_counter()
    out = fn(*args)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return 1e3 * (time.perf_counter() - t), out


def run_case(model, tok, names: list[str], template: str, nq: int, a: argparse.Namespace) -> dict:
    """Median ms/query of both methods on the same random queries, and their max |difference|."""
    rng = np.random.default_rng([a.seed, nq, len(template)])
    ms: dict[str, list[float]] = {"naive": [], "packed": [], "one_pass": [], "padded": []}
    diffs, p_lens = [], []
    for q in range(a.warmup + a.queries):
        picks = rng.choice(len(names), nq + 1, replace=False)
        query, docids = names[picks[0]], [names[i] for i in picks[1:]]
        text = prompts.wordnet_prompt(query, docids, prompts.query_rng(a.seed, query), name=template)
        ids = encoding.prompt_ids(tok, text)
        cands = [encoding.docid_ids(tok, d) for d in docids]
        runs = [("naive", scoring.score_naive, (model, ids, cands, a.include_eos))]
        runs += [
            (lay, scoring.score_prefix_shared, (model, ids, cands, a.include_eos, a.batch_size, lay))
            for lay in ("packed", "one_pass", "padded")
        ]
        res = {}
        for label, fn, args in runs[q % 4 :] + runs[: q % 4]:  # rotate the order
            res[label] = timed(fn, *args)
        diffs += [float(np.abs(res["naive"][1] - res[lay][1]).max()) for lay in ("packed", "one_pass", "padded")]
        if q >= a.warmup:
            for label in ms:
                ms[label].append(res[label][0])
            p_lens.append(len(ids))
    med = {k: statistics.median(v) for k, v in ms.items()}
    return {
        "template": template,
        "n_q": nq,
        "prompt_tokens": int(statistics.median(p_lens)),
        **{f"{k}_ms": v for k, v in med.items()},
        "speedup_packed": med["naive"] / med["packed"],
        "speedup_one_pass": med["naive"] / med["one_pass"],
        "speedup_padded": med["naive"] / med["padded"],
        "max_diff": max(diffs),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nq", type=int, nargs="+", default=[10, 50, 100])
    ap.add_argument("--templates", nargs="+", default=["wordnet", "wordnet_short"])
    ap.add_argument("--queries", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=None)
    ap.add_argument("--include-eos", action="store_true")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    t = time.perf_counter()
    model, tok, names = tiny_setup(a.vocab, a.seed, a.device)
    print(
        f"set-up {time.perf_counter() - t:.1f} s: vocab {len(tok)}, device {a.device}, "
        f"threads {torch.get_num_threads()}, torch {torch.__version__}, "
        f"{a.queries} timed queries after {a.warmup} warm-up, include_eos={a.include_eos}"
    )
    print(
        f"{'template':<14} {'n_q':>4} {'prompt tok':>10} {'naive ms/q':>11} {'packed ms/q':>12} "
        f"{'speed-up':>9} {'1-pass ms/q':>12} {'speed-up':>9} {'padded ms/q':>12} {'speed-up':>9} "
        f"{'max|diff|':>10}"
    )
    for template in a.templates:
        for nq in a.nq:
            r = run_case(model, tok, names, template, nq, a)
            print(
                f"{r['template']:<14} {r['n_q']:>4} {r['prompt_tokens']:>10} {r['naive_ms']:>11.1f} "
                f"{r['packed_ms']:>12.1f} {r['speedup_packed']:>8.1f}x {r['one_pass_ms']:>12.1f} "
                f"{r['speedup_one_pass']:>8.1f}x {r['padded_ms']:>12.1f} "
                f"{r['speedup_padded']:>8.1f}x {r['max_diff']:>10.1e}",
                flush=True,
            )


if __name__ == "__main__":
    main()
