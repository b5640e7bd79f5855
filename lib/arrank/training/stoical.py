"""STOICaL, the generalised rank-aware training loss of section 4 (eq. 3,
``eq:general-loss-formulation``):

    L(q, d_r, r; theta) = lambda(r) * sum_t CE( y(r, t), p_theta(. | T(q_bar), T(d_r)_<t) )

``item_weight`` is lambda(r) (section 4.1); y(r, t) is one-hot or marginalised over the prefix
tree (``arrank.training.trie``, section 4.2; Appendix F). Targets are sparse: at most K
``(token id, mass)`` pairs per position, padded to (B, T, K) by :func:`pad_sparse_targets`, and
aligned like transformers ``labels``: ``target_ids[b, t]`` is the target of token t, predicted
from ``logits[b, t-1]`` (the loss shifts; position 0 is never supervised).

Normalisation: the summed loss is divided by N, the supervised positions of the batch (any mass
> 0, whatever their lambda), or by ``num_items_in_batch`` when given (the whole optimizer step:
``arrank.training.trainer.step_normaliser``). One-hot targets with lambda = 1 thus give the mean
next-token cross-entropy over the docID tokens, and every variant has the same denominator.
"""

from __future__ import annotations

from typing import Sequence

import torch

from arrank.training import schemes


def item_weight(scheme: str, r: int, n_q: int, alpha: float | None = None, **params: float) -> float:
    """lambda(r) of section 4.1 for rank r (1 = most relevant) of a query with n_q docIDs, from the
    registered scheme (``arrank.training.schemes``): ``"indicator"`` 1[r = 1] (NTP), ``"fractional"``
    1 / r**alpha (alpha >= 0 required), ``"stepwise"`` (n_q - r + 1) / n_q; a scheme's other
    parameters come by name in ``params``."""
    found = schemes.scheme(scheme)
    if isinstance(n_q, bool) or not isinstance(n_q, int) or n_q < 1:  # else a wrong weight, silently
        raise ValueError(f"n_q={n_q!r} must be a positive integer (docIDs of the query)")
    if isinstance(r, bool) or not isinstance(r, int) or not 1 <= r <= n_q:
        raise ValueError(f"rank r={r!r} must be an integer in [1, n_q={n_q}]")
    return float(found.weight(r, n_q, **{p: {"alpha": alpha, **params}.get(p) for p in found.params}))


def pad_sparse_targets(
    targets: Sequence[Sequence[Sequence[tuple[int, float]]]], starts: Sequence[int], seq_len: int, k: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Padded (B, seq_len, K) ``target_ids`` (long) and ``target_mass`` (float32) for a batch.

    ``targets[b]`` is item b's per-step ``(token id, mass)`` pairs, step j landing at position
    ``starts[b] + j`` (the docID's first token at ``starts[b]``). K is the widest step, or ``k``
    (then no step may hold more). Padding and unsupervised positions: id 0, mass 0."""
    if len(targets) != len(starts):
        raise ValueError(f"{len(targets)} target lists but {len(starts)} starts; one start per item")
    if k is None:  # the widest step (a step wider than a given k is an IndexError below)
        k = max([1, *(len(step) for item in targets for step in item)])
    ids = torch.zeros(len(targets), seq_len, k, dtype=torch.long)
    mass = torch.zeros(len(targets), seq_len, k, dtype=torch.float32)
    entries = []  # (row, position, slot, token, mass), filled in one assignment below
    for b, (item, start) in enumerate(zip(targets, starts)):
        start = int(start)
        if start < 1 or start + len(item) > seq_len:
            raise ValueError(
                f"item {b}: docID of {len(item)} steps starting at position {start} "
                f"must lie within positions [1, {seq_len}) (position 0 is never predicted)"
            )
        entries += [(b, start + j, slot, tok, m) for j, step in enumerate(item) for slot, (tok, m) in enumerate(step)]
    if entries:
        rows, cols, slots, toks, masses = zip(*entries)
        where = (torch.tensor(rows), torch.tensor(cols), torch.tensor(slots))
        ids[where] = torch.tensor(toks, dtype=torch.long)
        mass[where] = torch.tensor(masses, dtype=torch.float32)
    return ids, mass


def targets_from_labels(labels: torch.Tensor, ignore_index: int = -100) -> tuple[torch.Tensor, torch.Tensor]:
    """One-hot (B, T, 1) ``target_ids`` / ``target_mass`` from transformers-style ``labels`` (section
    4); ``ignore_index`` positions and position 0 get no loss."""
    keep = labels != ignore_index
    keep[..., 0] = False
    ids = torch.where(keep, labels, torch.zeros_like(labels)).long().unsqueeze(-1)
    return ids, keep.float().unsqueeze(-1)


def supervised_count(target_mass: torch.Tensor) -> int:
    """How many positions of a (B, T, K) batch of targets are supervised (any mass > 0; position
    0 never is): the N that :func:`stoical_loss` divides by when no ``num_items_in_batch`` is given."""
    return int((target_mass[:, 1:] > 0).any(-1).sum())


def supervised_positions(target_mass: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(row, position) indices of every logit eq. 3 reads, in row-major order: ``logits[b, t]``
    predicts token t + 1, which carries target mass. The LM head runs there only."""
    return (target_mass[:, 1:] > 0).any(-1).nonzero(as_tuple=True)


def _check_targets(
    B: int, T: int, target_ids: torch.Tensor, target_mass: torch.Tensor, item_weight: torch.Tensor
) -> None:
    """Clear errors for targets and weights that do not fit a (B, T) batch (``stoical_loss``)."""
    if target_ids.dim() != 3 or tuple(target_ids.shape[:2]) != (B, T):
        raise ValueError(f"target_ids must be (B={B}, T={T}, K), got shape {tuple(target_ids.shape)}")
    if tuple(target_mass.shape) != tuple(target_ids.shape):
        raise ValueError(f"target_mass shape {tuple(target_mass.shape)} != target_ids shape {tuple(target_ids.shape)}")
    if target_ids.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"target_ids must hold integer token ids, got dtype {target_ids.dtype}")
    if not torch.is_floating_point(target_mass):
        raise ValueError(f"target_mass must be a floating-point tensor, got dtype {target_mass.dtype}")
    if tuple(item_weight.shape) not in ((B,), (B, T)):
        raise ValueError(f"item_weight must be (B={B},) or (B={B}, T={T}), got shape {tuple(item_weight.shape)}")
    if not torch.isfinite(target_mass).all() or (target_mass < 0).any():
        raise ValueError("target_mass must be finite and >= 0")
    if not torch.isfinite(item_weight).all() or (item_weight < 0).any():
        raise ValueError(f"item_weight must be finite and >= 0 (lambda(r)), got {item_weight.tolist()}")
    if (target_mass[:, 0] > 0).any():
        raise ValueError(
            "target_mass at position 0 is nonzero, but no logit predicts the first "
            "token: targets follow the labels alignment (row t = token t)"
        )


def stoical_loss(
    logits: torch.Tensor,
    target_ids: torch.Tensor,
    target_mass: torch.Tensor,
    item_weight: torch.Tensor,
    num_items_in_batch: int | torch.Tensor | None = None,
) -> torch.Tensor:
    """The STOICaL loss of eq. 3 (section 4) for a batch of (query, docID, rank) items, on full logits.

    ``logits``: (B, T, V) for ``input_ids`` (B, T). ``target_ids`` / ``target_mass``: (B, T, K) sparse
    y(r, t), aligned as the module docstring says; an all-zero row is an unsupervised position.
    ``item_weight``: (B,) lambda(r) per item, or (B, T) per position (a packed row's blocks,
    ``arrank.training.packing``). loss = sum_b lambda_b * sum_t CE(y_bt, p_bt) / N with
    CE = -sum_k mass_k * log_softmax(logits)[id_k], computed in float32 at the supervised positions
    only (no dense target); a batch with none gives a zero loss still in the graph. Training calls
    :func:`stoical_loss_at` on the supervised positions' logits (``arrank.training.supervised_head``).
    """
    B, T, _ = logits.shape  # (B, T, V): another shape cannot be unpacked
    _check_targets(B, T, target_ids, target_mass, item_weight)
    b_idx, t_idx = supervised_positions(target_mass)
    rows = logits[b_idx.to(logits.device), t_idx.to(logits.device)]
    return stoical_loss_at(rows, target_ids, target_mass, item_weight, num_items_in_batch)


def stoical_loss_at(
    rows: torch.Tensor,
    target_ids: torch.Tensor,
    target_mass: torch.Tensor,
    item_weight: torch.Tensor,
    num_items_in_batch: int | torch.Tensor | None = None,
) -> torch.Tensor:
    """:func:`stoical_loss` (eq. 3) from the logits of the supervised positions only: ``rows`` (N, V),
    row n at the n-th pair of :func:`supervised_positions`, as ``supervised_head.head_at`` returns them."""
    B, T = target_ids.shape[:2] if target_ids.dim() == 3 else (-1, -1)
    _check_targets(B, T, target_ids, target_mass, item_weight)
    b_idx, t_idx = supervised_positions(target_mass)
    n_sup = b_idx.numel()
    if rows.dim() != 2 or rows.shape[0] != n_sup:
        raise ValueError(
            f"rows must be (N={n_sup}, V): the logits of the {n_sup} supervised positions, "
            f"got shape {tuple(rows.shape)}"
        )
    denom = float(n_sup) if num_items_in_batch is None else num_items_in_batch
    if torch.is_tensor(denom):
        denom = denom.to(rows.device, torch.float32)
    if num_items_in_batch is not None and not (denom > 0):
        raise ValueError(f"num_items_in_batch={num_items_in_batch!r} must be > 0")
    if n_sup == 0:
        return rows.sum() * 0.0

    rows = rows.float()  # (N, V): logits[b, t] -> token t+1
    ids = target_ids[b_idx, t_idx + 1].to(rows.device, torch.long)  # (N, K)
    mass = target_mass[b_idx, t_idx + 1].to(rows.device, rows.dtype)  # (N, K)
    logz = torch.logsumexp(rows, dim=-1)  # (N,)
    picked = rows.gather(1, ids)  # (N, K)
    ce = mass.sum(-1) * logz - (mass * picked).sum(-1)  # -sum_k m_k log p(id_k)
    weight = item_weight.to(rows.device, rows.dtype)
    b_dev, t_dev = b_idx.to(rows.device), t_idx.to(rows.device)
    lam = weight[b_dev] if weight.dim() == 1 else weight[b_dev, t_dev + 1]
    return (lam * ce).sum() / denom
