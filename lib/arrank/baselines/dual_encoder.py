"""Lookup-table dual encoder (DE) of section 5.3 with the weighted batch softmax loss; Appendix B.

One embedding table E_phi (rows = synsets, dimension n) for queries and documents; the score of a
pair is <E(q), E(d)>. Loss (section 5.3), over a batch of B positive pairs, tau = 0.05:

    L_DE = -(1/B) sum_i lambda(r_i) * log( exp(<E(q_i), E(d_i)>/tau) / sum_j exp(<E(q_i), E(d_j)>/tau) )

with lambda(r) = 1/r^alpha (alpha = 0: the plain batch softmax loss); the sum over j runs over all B
documents of the batch, the positive's own column and repeated documents included.

Optimiser (Appendix B): SGD, learning rate 1.0, momentum 0.9, 50k steps, batch 2048 (the paper's
"2k"), each row projected back to the unit sphere after every update. The logits run over the
batch's distinct documents with log-count offsets (the same loss as the literal ``de_loss``),
gradients by hand. ``row_updates``: ``"lazy"`` (default: only the batch's rows and their momentum
move, TensorFlow's sparse momentum update) or ``"dense"`` (``torch.optim.SGD`` on the whole
table); docs/measurements.md compares them.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import torch

from arrank.baselines.lookup import Pairs, rank_weights, train_steps
from arrank.common.params import ROW_UPDATES, choice

TAU = 0.05
LR = 1.0
MOMENTUM = 0.9
STEPS = 50_000
BATCH_SIZE = 2048
LOG2E, LN2 = 1.0 / math.log(2.0), math.log(2.0)


def init_table(n_rows: int, n: int, generator: torch.Generator) -> torch.Tensor:
    """The embedding table: i.i.d. N(0, 1) rows projected onto the unit sphere (uniform on it).
    No init scale to choose: Appendix B projects every row to the unit sphere, so only the
    direction of a row matters, and any scale of the Gaussian gives the same table."""
    table = torch.randn(n_rows, n, generator=generator)
    return table / table.norm(dim=1, keepdim=True)


def de_loss(q_emb: torch.Tensor, d_emb: torch.Tensor, weights: torch.Tensor, tau: float = TAU) -> torch.Tensor:
    """L_DE of section 5.3, written as the formula reads (B x B logits): for rows q_emb[i],
    d_emb[i] and weights[i] = lambda(r_i),
    ``-(1/B) sum_i weights[i] * log_softmax_j(<q_i, d_j>/tau)[i]``."""
    return -(weights * torch.log_softmax(q_emb @ d_emb.T / tau, dim=1).diagonal()).mean()


def de_loss_and_grad(
    table: torch.Tensor, q: torch.Tensor, d: torch.Tensor, weights: torch.Tensor, tau: float = TAU
) -> tuple[float, torch.Tensor, torch.Tensor]:
    """(L_DE, rows, dL/dE[rows]) for the batch of pairs (q[i], d[i]) with lambda(r_i) = weights[i].

    Same value as ``de_loss(table[q], table[d], weights, tau)``, computed over the distinct
    queries and documents of the batch (document u counted c_u times: logits s_iu + log c_u), with
    the gradient written out: for P = softmax over documents and w_a = (1/B) sum_{i: q_i = a}
    lambda(r_i), dL/dS = w P - (1/B) lambda_i at each positive (q_i, d_i), and S = Q D^T / tau.
    """
    B = q.numel()
    uq, qi = torch.unique(q, return_inverse=True)
    ud, di, counts = torch.unique(d, return_inverse=True, return_counts=True)
    Q, D = table.index_select(0, uq), table.index_select(0, ud)
    # Base-2 logits plus log2-counts in one matmul, [Q log2(e)/tau, 1] @ [D, log2 c]^T (the right
    # factor made contiguous: faster in MKL), and exp2, which is about twice as fast as exp here.
    Qa = torch.cat([Q * (LOG2E / tau), torch.ones(uq.numel(), 1, dtype=Q.dtype)], dim=1)
    Da = torch.cat([D, counts.to(Q.dtype).log2()[:, None]], dim=1).T.contiguous()
    e = Qa @ Da
    top = e.amax(dim=1)
    sumexp = e.sub_(top[:, None]).exp2_().sum(dim=1)  # e: c_u exp(s_iu - top_i)
    lse = (top + sumexp.log2()) * LN2  # log sum_j exp(s_ij), natural log
    lam = weights / B
    Qp, Dp = Q.index_select(0, qi), D.index_select(0, di)
    positive = (Qp * Dp).sum(1) / tau
    w = torch.zeros(uq.numel(), dtype=Q.dtype).index_add_(0, qi, lam)
    loss = float((w * lse).sum() - (lam * positive).sum())
    grad_s = e.mul_((w / sumexp)[:, None])  # dL/dS = w * softmax, without the positives' term
    grad_q = (grad_s @ D).index_add_(0, qi, Dp.mul_(-lam[:, None])).div_(tau)
    grad_d = (grad_s.T @ Q).index_add_(0, di, Qp.mul_(-lam[:, None])).div_(tau)
    rows, where = torch.unique(torch.cat([uq, ud]), return_inverse=True)
    grad = torch.zeros(rows.numel(), table.shape[1], dtype=Q.dtype).index_add_(0, where, torch.cat([grad_q, grad_d]))
    return loss, rows, grad


def project_rows(x: torch.Tensor) -> torch.Tensor:
    """Each row divided by its l2 norm (Appendix B's projection onto the unit sphere), in place."""
    return x.div_(x.norm(dim=1, keepdim=True).clamp_min_(1e-12))


def lazy_momentum_step(
    table: torch.Tensor, buffer: torch.Tensor, rows: torch.Tensor, grad: torch.Tensor, lr: float, momentum: float
) -> None:
    """SGD with momentum on the touched ``rows`` only (buffer = momentum * buffer + grad;
    row -= lr * buffer; row projected to the unit sphere), in place; other rows untouched."""
    buf = buffer.index_select(0, rows).mul_(momentum).add_(grad)
    buffer.index_copy_(0, rows, buf)
    table.index_copy_(0, rows, project_rows(table.index_select(0, rows).sub_(buf, alpha=lr)))


def train_de(
    pairs: Pairs,
    n_rows: int,
    n: int,
    alpha: float,
    steps: int = STEPS,
    batch_size: int = BATCH_SIZE,
    tau: float = TAU,
    lr: float = LR,
    momentum: float = MOMENTUM,
    seed: int = 0,
    row_updates: str = "lazy",
    progress: bool = True,
) -> tuple[torch.Tensor, pd.DataFrame, dict[str, Any]]:
    """Train a lookup-table DE (section 5.3, Appendix B) on ``pairs`` over a table of ``n_rows``.
    Returns (the table, a log with the mean loss of every ``lookup.LOG_EVERY`` steps, facts:
    ``lookup.train_steps``, the row norms 1 up to rounding). The same arguments and seed give
    the same table (CPU).
    """
    choice(*ROW_UPDATES)("row_updates", row_updates)
    gen = torch.Generator().manual_seed(seed)
    table = init_table(n_rows, n, gen)
    weights = rank_weights(pairs.rank, alpha)
    if row_updates == "dense":
        param = torch.nn.Parameter(table)  # shares the table's storage: SGD updates the table in place
        param.grad = torch.zeros_like(table)  # one table-sized gradient buffer, reused every step
        optimizer = torch.optim.SGD([param], lr=lr, momentum=momentum)
    else:
        buffer = torch.zeros_like(table)

    def step(_: int, idx: torch.Tensor) -> float:
        batch = (pairs.query.index_select(0, idx), pairs.doc.index_select(0, idx), weights.index_select(0, idx))
        loss, rows, grad = de_loss_and_grad(table, *batch, tau)
        if row_updates == "lazy":
            lazy_momentum_step(table, buffer, rows, grad, lr, momentum)
        else:
            param.grad.zero_().index_copy_(0, rows, grad)
            optimizer.step()
            project_rows(table)
        return loss

    desc, diverged = f"DE n={n} alpha={alpha:g}", "DE training diverged (loss {loss}); lower lr or raise tau"
    return (table, *train_steps(step, pairs, table, batch_size, steps, gen, desc, progress, diverged))


def de_scores(table: torch.Tensor, q: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    """<E(q_i), E(d_i)> for aligned row tensors q, d (the DE's score of section 5.3)."""
    return (table.index_select(0, q) * table.index_select(0, d)).sum(1)


def retrieve(
    table: torch.Tensor, q: torch.Tensor, corpus: torch.Tensor, k: int, block: int = 256
) -> tuple[torch.Tensor, torch.Tensor]:
    """Full-corpus retrieval: for each query row, the corpus rows with the k highest inner
    products (ties at the k-th score all kept: returns (rows, scores) padded with -1 / -inf),
    the query itself excluded. Exact, by blocks of queries."""
    C = table.index_select(0, corpus)
    out_rows, out_scores = [], []
    for start in range(0, q.numel(), block):
        qb = q[start : start + block]
        s = table.index_select(0, qb) @ C.T
        s[qb[:, None] == corpus] = -math.inf  # a query never retrieves itself
        keep = s >= s.topk(k, dim=1).values[:, -1:]  # the top k and every tie of the k-th
        vals, pos = s.masked_fill(~keep, -math.inf).topk(int(keep.sum(1).max()), dim=1)
        out_rows.append(torch.where(torch.isfinite(vals), corpus[pos], -1))
        out_scores.append(vals)
    width = max(r.shape[1] for r in out_rows)
    pad = lambda t, v: torch.nn.functional.pad(t, (0, width - t.shape[1]), value=v)
    return torch.cat([pad(r, -1) for r in out_rows]), torch.cat([pad(s, -math.inf) for s in out_scores])
