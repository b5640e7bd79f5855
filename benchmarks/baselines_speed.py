"""Training speed of the DE and CE baselines (section 5.3, Appendix B) on the paper's WordNet data.

    python benchmarks/baselines_speed.py [--steps 300] [--threads 2] [--dims 4,8,16,32] [--naive-steps 20]

Data: all 82,114 noun queries, 701,954 positive pairs, a table of 82,115 rows; batch 2048. For
each n, ``steps`` real training steps of ``dual_encoder.train_de`` (lazy and dense row updates)
and of ``cross_encoder.train_ce`` (lazy, dense) are timed after a warm-up, and the steps/s are
turned into the time of a paper-scale run (DE 50k steps, CE 20k steps). Also timed: the DE step
written naively (B x B logits of ``de_loss``, autograd, torch.optim.SGD on the whole table and a
projection of every row), to show what deduplication and row-sparse updates buy.
"""

from __future__ import annotations

import argparse
import time

import torch

from arrank.baselines import cross_encoder as CE
from arrank.baselines import dual_encoder as DE
from arrank.baselines import figure3
from arrank.baselines.lookup import batch_indices, rank_weights


def naive_de_steps(pairs, n_rows: int, n: int, steps: int, batch: int) -> float:
    """Steps/s of the literal DE step: B x B logits, autograd, dense SGD, every row projected."""
    gen = torch.Generator().manual_seed(0)
    table = torch.nn.Parameter(DE.init_table(n_rows, n, gen))
    opt = torch.optim.SGD([table], lr=DE.LR, momentum=DE.MOMENTUM)
    weights = rank_weights(pairs.rank, 5.0)
    batches = list(batch_indices(len(pairs.query), batch, steps + 3, gen))
    for i, idx in enumerate(batches):
        if i == 3:
            start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        DE.de_loss(table[pairs.query[idx]], table[pairs.doc[idx]], weights[idx]).backward()
        opt.step()
        with torch.no_grad():
            DE.project_rows(table.data)
    return steps / (time.perf_counter() - start)


def rate(fn, steps: int, warmup: int = 20) -> float:
    """Steps/s of a training function run for ``steps`` steps, after a warm-up run."""
    fn(warmup)
    return fn(steps)[2]["steps_per_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--naive-steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dims", default="4,8,16,32")
    parser.add_argument("--batch", type=int, default=2048)
    a = parser.parse_args()
    torch.set_num_threads(a.threads)
    data = figure3.lookup_data(None, 1, 5000, 0)
    pairs, n_rows = data["pairs"], len(data["names"])
    print(
        f"{len(data['df']):,} queries, {len(pairs.query):,} pairs, table {n_rows:,} rows, "
        f"batch {a.batch}, {a.threads} threads, {a.steps} timed steps"
    )
    print(f"{'model':<6}{'n':>4}{'rows':>7}{'steps/s':>10}{'paper run (min)':>17}")
    for n in [int(x) for x in a.dims.split(",")]:
        for mode in ("lazy", "dense"):
            r = rate(
                lambda s, n=n, mode=mode: DE.train_de(
                    pairs, n_rows, n, 5.0, steps=s, batch_size=a.batch, row_updates=mode, progress=False
                ),
                a.steps,
            )
            print(f"{'DE':<6}{n:>4}{mode:>7}{r:>10.1f}{DE.STEPS / r / 60:>17.2f}", flush=True)
        r = naive_de_steps(pairs, n_rows, n, a.naive_steps, a.batch)
        print(f"{'DE':<6}{n:>4}{'naive':>7}{r:>10.1f}{DE.STEPS / r / 60:>17.2f}", flush=True)
    for mode in ("lazy", "dense"):
        r = rate(
            lambda s, mode=mode: CE.train_ce(
                pairs, n_rows, 32, 5.0, steps=s, batch_size=a.batch, row_updates=mode, progress=False
            ),
            a.steps,
        )
        print(f"{'CE':<6}{32:>4}{mode:>7}{r:>10.1f}{CE.STEPS / r / 60:>17.2f}", flush=True)


if __name__ == "__main__":
    main()
