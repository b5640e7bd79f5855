"""Lookup-table cross encoder (CE) of section 5.3, with its loss and Appendix B's optimiser.

Model: the pair's embeddings E_phi(q), E_phi(d) (one table, as for the DE), concatenated and
scored by f_MLP: R^2n -> R, three hidden ReLU layers of width 2n; MLP weights i.i.d. N(0, 1/(2n)),
biases 0 (Appendix B); rows i.i.d. N(0, table_init_std^2) (default 1, the workbook's choice).
Loss (section 5.3), negatives (q_i, d_rho(i)) with rho a random permutation of the batch (to the
letter: rho may map i to itself or to another relevant document):

    L_CE = - sum_i [ lambda(r_i) / (sum_j lambda(r_j)) * log sigma(f(q_i, d_i))
                     + (1/B) * log sigma(-f(q_i, d_rho(i))) ]

Optimiser (Appendix B): "Adam, learning rate 0.001, weight decay 0.001", 20k steps, batch 2048
(the paper's "2k"); ``optimizer`` names the two readings of the weight decay: ``"adamw"``
(default, decoupled) and ``"adam_l2"`` (Adam's L2 term, which erodes rows absent from a batch at
paper scale). ``row_updates``: ``"dense"`` (default, the whole table) or ``"lazy"`` (the batch's
rows, LazyAdam). Both are measured in docs/measurements.md ("DE and CE baselines (notebook 07,
section 5.3, Figure 3)"); the trained rows' norms are returned with the facts.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import torch

from arrank.baselines.lookup import Pairs, rank_weights, train_steps
from arrank.common.params import CE_OPTIMIZERS as OPTIMIZERS  # decoupled weight decay (default) or Adam's coupled L2
from arrank.common.params import ROW_UPDATES, choice

LR = 1e-3
WEIGHT_DECAY = 1e-3
STEPS = 20_000
BATCH_SIZE = 2048
BETAS = (0.9, 0.999)
EPS = 1e-8
OPTIMIZER = "adamw"
TABLE_INIT_STD = 1.0


def init_table(n_rows: int, n: int, generator: torch.Generator, std: float = TABLE_INIT_STD) -> torch.Tensor:
    """The CE's embedding table: i.i.d. N(0, std^2) entries (see the module docstring); the same
    generator state gives ``std`` times the std = 1 table."""
    if not (isinstance(std, (int, float)) and not isinstance(std, bool) and math.isfinite(std) and std > 0):
        raise ValueError(f"table_init_std={std!r} is not allowed: it must be a finite number > 0")
    return torch.randn(n_rows, n, generator=generator).mul_(float(std))


def mlp(n: int, generator: torch.Generator) -> torch.nn.Sequential:
    """f_MLP: R^2n -> R, three hidden ReLU layers of width 2n; weights N(0, 1/(2n)), biases 0."""
    width = 2 * n
    layers: list[torch.nn.Module] = []
    for out in (width, width, width, 1):
        linear = torch.nn.Linear(width, out)
        torch.nn.init.normal_(linear.weight, 0.0, 1.0 / math.sqrt(width), generator=generator)
        torch.nn.init.zeros_(linear.bias)
        layers += [linear, torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])


def ce_loss(pos_logits: torch.Tensor, neg_logits: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """L_CE of section 5.3 from f_MLP of the B positives, of the B negatives (q_i, d_rho(i)) and
    lambda(r_i): ``-sum_i [weights_i / sum(weights) * log sigma(pos_i) + log sigma(-neg_i) / B]``."""
    positive = (weights / weights.sum() * torch.nn.functional.logsigmoid(pos_logits)).sum()
    return -(positive + torch.nn.functional.logsigmoid(-neg_logits).sum() / pos_logits.numel())


def pair_logits(model: torch.nn.Module, q_emb: torch.Tensor, d_emb: torch.Tensor) -> torch.Tensor:
    """f_MLP(concat(E(q_i), E(d_i))) for aligned embedding rows, shape (B,)."""
    return model(torch.cat([q_emb, d_emb], dim=1)).squeeze(1)


def train_ce(
    pairs: Pairs,
    n_rows: int,
    n: int,
    alpha: float,
    steps: int = STEPS,
    batch_size: int = BATCH_SIZE,
    lr: float = LR,
    weight_decay: float = WEIGHT_DECAY,
    seed: int = 0,
    row_updates: str = "dense",
    optimizer: str = OPTIMIZER,
    table_init_std: float = TABLE_INIT_STD,
    progress: bool = True,
) -> tuple[tuple[torch.Tensor, torch.nn.Sequential], pd.DataFrame, dict[str, Any]]:
    """Train a lookup-table CE (section 5.3, Appendix B; ``optimizer``, ``row_updates`` and
    ``table_init_std``: module docstring) on ``pairs`` over a table of ``n_rows``. Returns ((table,
    MLP), a log with the mean loss of every ``lookup.LOG_EVERY`` steps, facts: ``lookup.train_steps``).
    The same arguments and seed give the same model (CPU).
    """
    choice(*OPTIMIZERS)("optimizer", optimizer)  # the edge (notebook 07's rules) checks them too; a direct call
    choice(*ROW_UPDATES)("row_updates", row_updates)  # must not fall back silently
    gen = torch.Generator().manual_seed(seed)
    table, model = init_table(n_rows, n, gen, table_init_std), mlp(n, gen)
    weights = rank_weights(pairs.rank, alpha)
    # Appendix B's Adam: torch.optim.AdamW ("adamw") or torch.optim.Adam with its L2 weight_decay ("adam_l2")
    adam = torch.optim.AdamW if optimizer == "adamw" else torch.optim.Adam
    settings = dict(lr=lr, betas=BETAS, eps=EPS, weight_decay=weight_decay)
    if row_updates == "dense":
        param = torch.nn.Parameter(table)  # shares the table's storage: Adam updates the table in place
        param.grad = torch.zeros_like(table)  # one table-sized gradient buffer, reused every step
        opt = adam([param, *model.parameters()], **settings, fused=True)
    else:
        opt = adam(list(model.parameters()), **settings)
        m, v = torch.zeros_like(table), torch.zeros_like(table)

    @torch.no_grad()
    def lazy_adam_step(rows: torch.Tensor, grad: torch.Tensor, step: int) -> None:
        """torch.optim.Adam's update (L2 ``weight_decay`` added to the gradient), or for ``"adamw"``
        torch.optim.AdamW's (rows first scaled by 1 - lr * weight_decay), bias correction by
        ``step``, the global step count, applied to the given ``rows`` of ``table`` only, in place;
        betas and eps: ``BETAS``, ``EPS``."""
        (beta1, beta2), decoupled = BETAS, optimizer == "adamw"
        theta = table.index_select(0, rows)
        if decoupled:
            theta.mul_(1 - lr * weight_decay)
        g = grad.add(theta, alpha=weight_decay) if weight_decay and not decoupled else grad
        m_rows = m.index_select(0, rows).mul_(beta1).add_(g, alpha=1 - beta1)
        v_rows = v.index_select(0, rows).mul_(beta2).addcmul_(g, g, value=1 - beta2)
        m.index_copy_(0, rows, m_rows)
        v.index_copy_(0, rows, v_rows)
        denom = v_rows.sqrt().div_(math.sqrt(1 - beta2**step)).add_(EPS)
        table.index_copy_(0, rows, theta.addcdiv_(m_rows, denom, value=-lr / (1 - beta1**step)))

    def step(i: int, idx: torch.Tensor) -> float:
        q, d, B = pairs.query.index_select(0, idx), pairs.doc.index_select(0, idx), idx.numel()
        rho = torch.randperm(B, generator=gen)
        model.zero_grad(set_to_none=True)
        # the batch's distinct rows as one leaf: its gradient is dL/dE on those rows, 0 elsewhere
        rows, where = torch.unique(torch.cat([q, d]), return_inverse=True)
        emb = table.index_select(0, rows).requires_grad_()
        eq, ed = emb[where[:B]], emb[where[B:]]
        logits = pair_logits(model, torch.cat([eq, eq]), torch.cat([ed, ed[rho]]))
        loss = ce_loss(logits[:B], logits[B:], weights.index_select(0, idx))
        loss.backward()
        if row_updates == "dense":  # the whole table's gradient, written into the reused buffer
            param.grad.zero_().index_copy_(0, rows, emb.grad)
        opt.step()
        if row_updates == "lazy":
            lazy_adam_step(rows, emb.grad, i)
        return loss.item()

    desc, diverged = f"CE n={n} alpha={alpha:g}", "CE training diverged (loss {loss})"
    log, facts = train_steps(step, pairs, table, batch_size, steps, gen, desc, progress, diverged)
    return (table, model.eval()), log, facts


@torch.no_grad()
def ce_scores(
    table: torch.Tensor, model: torch.nn.Module, q: torch.Tensor, d: torch.Tensor, block: int = 65_536
) -> torch.Tensor:
    """f_MLP(concat(E(q_i), E(d_i))) for aligned row tensors q, d (the CE's score), by blocks."""
    rows = lambda x, s: table.index_select(0, x[s : s + block])
    scores = [pair_logits(model, rows(q, s), rows(d, s)) for s in range(0, q.numel(), block)]
    return torch.cat(scores) if scores else torch.zeros(0)
