"""Packed per-query layout: every ranked docID of a query behind ONE copy of its prompt.

One sequence holds ``[prompt minus its last token p][p d_1][p d_2]...[p d_k]`` behind a block
mask, so each block's logits, loss lambda(r) * sum_t CE(y(r, t), p) (eq. 3) and gradient are the
unpacked item's up to float rounding, the prompt run once per query (section 5.2 names the
unpacked cost as why the paper trained ESCI with trie targets). The mask (:func:`segments_layout`) is
used by training and by candidate scoring (``arrank.evaluation.scoring``). Which models can take
it (:func:`mask_support`), how a query is split and how blocks are weighted: docs/design.md,
"Training".
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from arrank.common.params import PACKINGS, choice
from arrank.training.shared_prefix import shared_length

MASK_ATTENTION = ("sdpa", "eager")


Segment = tuple[int, Sequence[int]]  # (prompt length, docID block lengths) of one packed sequence


def segments_layout(segments: Sequence[Segment], length: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The attention pattern and position ids of one row holding packed sequences side by side, each
    ``[prompt][block 1]...[block k]``. The pattern is a boolean (L, L) matrix, True where token i may
    attend to token j: prompt tokens attend causally to their prompt; a block's tokens to their
    sequence's prompt and causally to their own block. Position ids are 0..P-1 for each prompt, then
    P, P+1, ... restarting at P for every block (the positions the block has as an unpacked item).
    ``length`` pads the row to L tokens; a padding token attends to itself only (no softmax runs over
    nothing), at position 0.
    """
    if len(segments) == 0:
        raise ValueError("a packed row needs at least one sequence")
    seg, blk, pos = [], [], []
    for s, (prompt_length, block_lengths) in enumerate(segments):
        if isinstance(prompt_length, bool) or not isinstance(prompt_length, int) or prompt_length < 0:
            raise ValueError(f"prompt_length={prompt_length!r} must be an integer >= 0")
        if len(block_lengths) == 0:
            raise ValueError("a packed row needs at least one docID block")
        if any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in block_lengths):
            raise ValueError(f"block lengths must be integers >= 1, got {list(block_lengths)}")  # -1 would broadcast
        seg += [s] * (prompt_length + sum(block_lengths))
        blk += [-1] * prompt_length + [b for b, n in enumerate(block_lengths) for _ in range(n)]
        pos += [*range(prompt_length)] + [prompt_length + i for n in block_lengths for i in range(n)]
    used = len(seg)
    L = used if length is None else length
    if L < used:
        raise ValueError(f"length={length} is shorter than the row's {used} tokens")
    seg_t = torch.tensor(seg + [-1] * (L - used), dtype=torch.long)  # -1: padding
    blk_t = torch.tensor(blk + [-2] * (L - used), dtype=torch.long)  # -1: prompt, b >= 0: block b
    idx = torch.arange(L)
    causal = idx[None, :] <= idx[:, None]
    same_seq = (seg_t[None, :] == seg_t[:, None]) & (seg_t[:, None] >= 0)
    visible = (blk_t[None, :] == -1) | (blk_t[None, :] == blk_t[:, None])
    mask = (causal & same_seq & visible) | torch.eye(L, dtype=torch.bool)
    return mask, torch.tensor(pos + [0] * (L - used), dtype=torch.long)


def mask_support(model) -> tuple[bool, str]:
    """(whether ``model`` can take the packed 4-D mask, why not): docs/design.md, "Training"."""
    config = getattr(model, "config", None)
    if config is None:
        return False, f"{type(model).__name__} has no transformers config"
    if hasattr(config, "unsloth_version"):
        return False, (
            "the model is patched by Unsloth, whose attention kernels take the lengths of "
            "independent sequences, not a shared-prompt 4-D mask"
        )
    impl = getattr(config, "_attn_implementation", None) or "eager"
    if impl not in MASK_ATTENTION:
        return False, (
            f"attention implementation {impl!r} does not read a custom 4-D mask "
            f"(packing needs one of {list(MASK_ATTENTION)})"
        )
    if window := getattr(config, "sliding_window", None):
        return False, f"the model has sliding-window attention (window {window}), which a custom 4-D mask would replace"
    return True, ""


def prefix_possible(model) -> tuple[bool, str]:
    """(whether the model can run a batch's shared prompt opening once, why or why not): where the
    packed mask works (:func:`mask_support`: its rows read the prefix through the same kind of
    custom mask and cache) and the model does not checkpoint its activations (that turns the
    decoder's cache off)."""
    ok, why = mask_support(model)
    if not ok:
        return False, why
    if getattr(model, "is_gradient_checkpointing", False):
        return False, "gradient checkpointing turns the decoder's key/value cache off"
    return True, "the decoder's key/value cache of the prefix serves every row"


def prefix_support(model) -> tuple[bool, str]:
    """(whether training runs a batch's shared prompt opening once for ``model``
    (``arrank.training.shared_prefix``), why or why not): where :func:`prefix_possible`, and not on
    a GPU. On the H200 the opening's own forward and backward cost more than the tokens it saves:
    a 7B LoRA step of 7 packed rows took 0.386 s with it against 0.207 s without (docs/gpu.md); a
    CPU, where time follows the tokens, gains up to 1.31x (docs/measurements.md)."""
    ok, why = prefix_possible(model)
    if ok and torch.cuda.is_available():  # the Trainer trains on the GPU wherever there is one
        return False, "on a GPU, running the opening once was slower than running it in every row (docs/gpu.md)"
    return ok, why


def model_mask(model, allowed: torch.Tensor) -> torch.Tensor:
    """The mask tensor the model's attention reads, from a boolean (B, 1, Q, K) ``allowed``:
    the boolean itself for ``sdpa`` (True = attend), an additive float mask (0 or the dtype's
    minimum) in the model's dtype for ``eager``."""
    ok, why = mask_support(model)
    if not ok:
        raise ValueError(f"this model cannot take a packed mask: {why}")
    if allowed.dtype != torch.bool or allowed.dim() != 4:
        raise ValueError(f"allowed must be a boolean (B, 1, Q, K) tensor, got {allowed.dtype} {tuple(allowed.shape)}")
    if (model.config._attn_implementation or "eager") == "sdpa":
        return allowed
    dtype = model.get_input_embeddings().weight.dtype
    if not dtype.is_floating_point:
        dtype = torch.float32
    mask = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    return mask.masked_fill_(~allowed, torch.finfo(dtype).min)


def resolve_packing(packing: str, items: Sequence[dict[str, Any]], model) -> tuple[str, str | None]:
    """(``"per_query"`` or ``"none"``, a warning or None) for a ``packing`` option: ``"auto"`` packs
    when some query has more than one item and the model can take the mask; a model that cannot
    gets unpacked items and a warning naming the reason; ``"none"`` never packs.
    """
    choice(*PACKINGS)("packing", packing)
    queries = [item.get("query") for item in items]
    if packing == "none" or (packing == "auto" and len(set(queries)) == len(queries)):
        return "none", None  # auto: one item per query, nothing to share
    ok, why = mask_support(model)
    if ok:
        return "per_query", None
    fallback = "trains unpacked items" if packing == "auto" else "falls back to unpacked items"
    return "none", f"packing={packing!r} {fallback}: {why}"


def pack_items(items: Sequence[dict[str, Any]], max_length: int) -> list[dict[str, Any]]:
    """Packed sequences from training items (``arrank.training.train.training_items``): consecutive
    items of one query go into ``[prefix][p d_r1][p d_r2]...`` (module docstring), a new sequence
    repeating the prefix when the next block would pass ``max_length``; an item longer than that is
    an error. Each holds ``input_ids``, ``prompt_length`` (the prefix's), ``block_lengths``,
    ``targets`` (per position after the prefix; none at each copy of p), ``weights`` (lambda(r) per
    block), ``ranks`` and ``query``.
    """
    if not items:
        raise ValueError("no training items to pack")
    packed: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for n, item in enumerate(items):
        start, ids = item["start"], list(item["input_ids"])
        query = item.get("query", n)
        if start < 1 or start >= len(ids):
            raise ValueError(
                f"item {n} (query {query!r}): start={start} must leave a prompt token "
                f"before the docID and docID tokens after it ({len(ids)} tokens)"
            )
        prompt, block = ids[: start - 1], ids[start - 1 :]  # block = last prompt token + docID
        if len(item["targets"]) != len(block) - 1:
            raise ValueError(
                f"item {n} (query {query!r}): {len(item['targets'])} target steps for {len(block) - 1} docID tokens"
            )
        if len(ids) > max_length:
            raise ValueError(
                f"query {query!r}: prompt + docID of rank {item.get('rank')} take "
                f"{len(ids)} tokens > max_length={max_length}; a docID is "
                "never truncated: use a shorter template or a larger max_length"
            )
        opened = current and (current["query"], current["input_ids"][: current["prompt_length"]])  # the query's own
        if opened != (query, prompt) or len(current["input_ids"]) + len(block) > max_length:
            current = {"input_ids": list(prompt), "prompt_length": len(prompt)}
            current.update(block_lengths=[], targets=[], weights=[], ranks=[], query=query)
            packed.append(current)
        current["input_ids"] += block
        current["block_lengths"].append(len(block))
        current["targets"] += [[]] + list(item["targets"])  # no target at the copy of p
        current["weights"].append(float(item["weight"]))
        current["ranks"].append(item.get("rank"))
    return packed


def fill_rows(lengths: Sequence[int], row_length: int | None) -> list[list[int]]:
    """Indices of sequences grouped into rows of at most ``row_length`` tokens (first fit, longest
    first: fewer, fuller rows waste less on padding), or one sequence per row when it is None."""
    if row_length is None:
        return [[i] for i in range(len(lengths))]
    rows: list[list[int]] = []
    room: list[int] = []
    for i in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        if lengths[i] > row_length:
            raise ValueError(f"a packed sequence of {lengths[i]} tokens does not fit row_length={row_length}")
        for r, free in enumerate(room):
            if lengths[i] <= free:
                rows[r].append(i)
                room[r] -= lengths[i]
                break
        else:
            rows.append([i])
            room.append(row_length - lengths[i])
    return rows


def row_length_for(packed: Sequence[dict[str, Any]], max_length: int) -> int:
    """The row length training packs sequences into: twice the mean packed sequence, at least the
    longest one, at most ``max_length`` (the trade-off: docs/measurements.md)."""
    lengths = [len(p["input_ids"]) for p in packed]
    return min(max_length, max(max(lengths), round(2 * sum(lengths) / len(lengths))))


def collate_packed(
    batch: list[dict[str, Any]],
    pad_id: int,
    weight_scale: float | None = None,
    row_length: int | None = None,
    share_prefix: bool = False,
) -> dict[str, torch.Tensor]:
    """Right-padded ``input_ids``, the boolean block mask ``allowed`` (R, 1, L, L), ``position_ids``,
    the padded sparse targets and per-position weights ``item_weight`` (R, L) of packed sequences.

    ``row_length``: sequences share rows of at most that many tokens (:func:`fill_rows`), else one
    per row. Block r weighs lambda(r), or c * lambda(r) / Lambda with ``weight_scale`` c (weighted
    sampling; docs/design.md, "Training"). ``share_prefix``: the common opening leaves the sequences
    as ``prefix_ids`` (1, P) (``arrank.training.shared_prefix``); ``allowed`` is then
    (R, 1, L, P + L) and position ids start at P.
    """
    from arrank.training.stoical import pad_sparse_targets

    shared = shared_length([b["input_ids"] for b in batch], [b["prompt_length"] for b in batch]) if share_prefix else 0
    prefix = list(batch[0]["input_ids"][:shared])
    if shared:
        batch = [
            {**b, "input_ids": b["input_ids"][shared:], "prompt_length": b["prompt_length"] - shared} for b in batch
        ]
    rows = fill_rows([len(b["input_ids"]) for b in batch], row_length)
    L = max(sum(len(batch[i]["input_ids"]) for i in row) for row in rows)
    R = len(rows)
    input_ids = torch.full((R, L), pad_id, dtype=torch.long)
    allowed = torch.zeros((R, 1, L, shared + L), dtype=torch.bool)
    positions = torch.zeros((R, L), dtype=torch.long)
    weights = torch.zeros((R, L), dtype=torch.float32)
    targets: list[list] = []
    for r, row in enumerate(rows):
        segments = [(batch[i]["prompt_length"], batch[i]["block_lengths"]) for i in row]
        allowed[r, 0, :, shared:], positions[r] = segments_layout(segments, L)
        positions[r] += shared
        at, steps = 0, []
        for i in row:
            b = batch[i]
            n, P = len(b["input_ids"]), b["prompt_length"]
            input_ids[r, at : at + n] = torch.tensor(b["input_ids"])
            total = sum(b["weights"])
            if total <= 0:
                raise ValueError(f"packed sequence of query {b['query']!r} has total weight 0")
            factor = 1.0 if weight_scale is None else weight_scale / total
            lam = torch.tensor([w * factor for w in b["weights"]], dtype=torch.float32)
            weights[r, at + P : at + n] = torch.repeat_interleave(lam, torch.tensor(b["block_lengths"]))
            steps += [[]] * P + list(b["targets"])  # no target on prompts and on each copy of p
            at += n
        allowed[r, 0, :at, :shared] = True  # every real token sees the shared prefix; padding only itself
        targets.append(steps)
    # position 0 is a prompt token or a block's copy of p (never a target): start at 1
    target_ids, target_mass = pad_sparse_targets([t[1:] for t in targets], [1] * R, L)
    out = dict(input_ids=input_ids, allowed=allowed, position_ids=positions, target_ids=target_ids)
    out.update(target_mass=target_mass, item_weight=weights)
    if shared:
        out["prefix_ids"] = torch.tensor([prefix], dtype=torch.long)
    return out


def sequence_weights(packed: Sequence[dict[str, Any]]) -> list[float]:
    """Draw weights of packed sequences for weighted sampling: the sum of their blocks' lambda(r)."""
    return [float(sum(p["weights"])) for p in packed]
