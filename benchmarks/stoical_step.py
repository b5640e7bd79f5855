"""Cost of the STOICaL loss (section 4, eq. 3) in a full training step on the quick-profile model.

    python benchmarks/stoical_step.py [--batch 64] [--prompt 30] [--docid 6] [--vocab 2000]
                                      [--k 10] [--threads 2] [--warmup 5] [--reps 30] [--model tiny]
    python benchmarks/stoical_step.py --model smollm2-135m --batch 8 --prompt 180 --docid 8 --warmup 1 --reps 4

Three identical tiny Llama models (models.build_tiny_model: hidden 128, 4 layers, 4 heads,
intermediate 384), each with its own AdamW, train on the same random batches; one step =
forward, loss, backward, AdamW step. ``--model NAME``: three copies of a pretrained model (e.g.
``smollm2-135m``) with LoRA r = 16 on all linear layers instead, its vocabulary as ``--vocab``.
Variants:
  (a) plain next-token CE computed by the model itself (``labels`` with the prompt at -100);
  (b) ``stoical_loss`` with one-hot targets and lambda = 1 (must equal (a)'s loss);
  (c) ``stoical_loss`` with sparse trie-like targets, 1..k (token, mass) pairs per position,
      and fractional lambda(r) = 1/r**2 for random ranks.
The variants are interleaved (their order rotates each repetition) and the median step time after
warm-up is reported, with the ratios b/a and c/a (target: <= 1.05). Also printed: the collator-side
cost of building trie targets (trie.query_sparse_targets) for a batch of WordNet-like queries.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch

from arrank.training import models, stoical, trie


def make_batch(a: argparse.Namespace, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    T = a.prompt + a.docid
    input_ids = torch.randint(4, a.vocab, (a.batch, T), generator=g)
    labels = torch.full_like(input_ids, -100)
    labels[:, a.prompt :] = input_ids[:, a.prompt :]
    one_ids, one_mass = stoical.targets_from_labels(labels)
    # trie-like targets: the teacher-forced token plus 0..k-1 other valid tokens with random masses
    steps = []
    for b in range(a.batch):
        item = []
        for j in range(a.docid):
            n = int(torch.randint(1, a.k + 1, (1,), generator=g))
            others = torch.randperm(a.vocab, generator=g)[: n - 1].tolist()
            toks = sorted(set([int(input_ids[b, a.prompt + j])] + others))
            m = torch.rand(len(toks), generator=g) + 0.05
            item.append(list(zip(toks, (m / m.sum()).tolist())))
        steps.append(item)
    trie_ids, trie_mass = stoical.pad_sparse_targets(steps, [a.prompt] * a.batch, T, k=a.k)
    ranks = torch.randint(1, 8, (a.batch,), generator=g)
    lam = torch.tensor([stoical.item_weight("fractional", int(r), 7, alpha=2) for r in ranks])
    return input_ids, labels, (one_ids, one_mass, torch.ones(a.batch)), (trie_ids, trie_mass, lam)


def step_fn(model, opt, input_ids, labels, targets):
    def step() -> float:
        opt.zero_grad(set_to_none=True)
        if targets is None:
            loss = model(input_ids=input_ids, labels=labels).loss
        else:
            loss = stoical.stoical_loss(model(input_ids=input_ids).logits, *targets)
        loss.backward()
        opt.step()
        return loss.item()

    return step


def trie_collate_cost(a: argparse.Namespace, queries: int = 64, n_q: int = 7) -> float:
    """Seconds to build combined trie targets for all ranks of ``queries`` queries (CPU, Python)."""
    g = torch.Generator().manual_seed(1)
    batches = []
    for _ in range(queries):
        first = torch.randint(4, 40, (n_q,), generator=g).tolist()  # shared first tokens -> deeper tries
        batches.append([[f] + torch.randint(4, a.vocab, (a.docid - 2,), generator=g).tolist() + [2] for f in first])
    t0 = time.perf_counter()
    for docids in batches:
        unique = list(dict.fromkeys(tuple(d) for d in docids))
        trie.query_sparse_targets(unique, beta=2, combined=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--prompt", type=int, default=30)
    ap.add_argument("--docid", type=int, default=6)
    ap.add_argument("--vocab", type=int, default=2000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--model", default="tiny", help="tiny, or a pretrained model name/folder (LoRA r = 16)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)

    if a.model == "tiny":
        base = models.build_tiny_model(vocab_size=a.vocab, hidden=128, layers=4, heads=4, intermediate=384, seed=0)
    else:
        base, _ = models.load_model(a.model, "transformers", a.prompt + a.docid)
        a.vocab = base.config.vocab_size
    input_ids, labels, one_hot, trie_like = make_batch(a)
    variants = {}
    for name, targets in (("a_plain_ce", None), ("b_stoical_onehot", one_hot), ("c_stoical_trie", trie_like)):
        model = copy.deepcopy(base)
        if a.model != "tiny":
            model = models.add_lora(model, "transformers", 16, 32, 0.0, "all-linear", seed=0)
        model.train()
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-3, weight_decay=0.01)
        variants[name] = step_fn(model, opt, input_ids, labels, targets)

    first = {name: fn() for name, fn in variants.items()}  # first step: identical weights
    print(f"first-step losses: {first}  |a-b| = {abs(first['a_plain_ce'] - first['b_stoical_onehot']):.2e}")
    times: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for rep in range(a.warmup + a.reps):
        order = names[rep % 3 :] + names[: rep % 3]
        for name in order:
            t0 = time.perf_counter()
            variants[name]()
            dt = time.perf_counter() - t0
            if rep >= a.warmup:
                times[name].append(dt)

    tokens = a.batch * (a.prompt + a.docid)
    med = {name: statistics.median(ts) for name, ts in times.items()}
    print(
        f"model {a.model}, batch {a.batch} x ({a.prompt} prompt + {a.docid} docID) tokens, vocab {a.vocab}, k {a.k}, "
        f"threads {a.threads}, {a.reps} reps after {a.warmup} warm-up"
    )
    for name, m in med.items():
        print(f"  {name:18s} median {m * 1e3:7.1f} ms/step  ({tokens / m:,.0f} tokens/s)")
    print(
        f"ratio b/a = {med['b_stoical_onehot'] / med['a_plain_ce']:.3f}   "
        f"ratio c/a = {med['c_stoical_trie'] / med['a_plain_ce']:.3f}   (target <= 1.05)"
    )
    cost = trie_collate_cost(a)
    print(f"collator: combined trie targets for 64 queries x 7 docIDs: {cost * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
