"""The prompt's fixed opening run once per training batch, not once per sequence.

Every augmented prompt of a dataset opens with the same tokens: the chat template's system turn
and the D.1 instruction up to the synset or product query (Appendix D). With SmolLM2's template
that is 102 of a WordNet prompt's ~190 tokens, about half of every training item. A causal
model computes those tokens' keys and values identically in every sequence of a batch, because a
token attends only to the tokens before it. Here the batch's common opening (the longest token
prefix all its sequences share, :func:`shared_length`) runs once, through the decoder alone (no
loss reads its logits), and its key/value cache is expanded to every row as a view
(:func:`prefix_cache`); the rows carry the rest of each sequence, with position ids offset by
the prefix length and a mask whose first columns are the prefix. Autograd sums the rows'
gradients into the one prefix pass, so the loss and the gradients are those of the batch with the
prefix copied into every row, up to float rounding (tests/training/test_shared_prefix.py). One
difference where dropout is on (``lora_dropout`` > 0; 0 in every profile): the prefix then gets
one dropout draw for the batch instead of one per row, the same expected gradient from fewer draws.

The collators strip the prefix (``train.collate`` and ``packing.collate_packed`` with
``share_prefix=True``: ``prefix_ids`` in the batch), the Trainer runs it
(``trainer.StoicalTrainer.compute_loss``). It is used where the packed mask is
(``packing.prefix_support``: transformers with ``sdpa`` or ``eager`` attention, no sliding window,
not Unsloth, no gradient checkpointing), the same models whose custom masks and caches the scoring of section 5.1 already
relies on. What it saves is measured in docs/measurements.md (benchmarks/precision.py).
"""

from __future__ import annotations

from typing import Sequence

import torch

# below this many shared tokens the prefix's own forward call costs about what it saves
MIN_SHARED = 8


def shared_length(sequences: Sequence[Sequence[int]], limits: Sequence[int]) -> int:
    """How many leading tokens the batch runs once: the longest prefix every sequence shares,
    at most the smallest of ``limits`` (per sequence, the tokens that may leave the rows: an
    unpacked item keeps its last prompt token, whose logits predict the docID's first); 0 when
    fewer than two sequences share it or it is shorter than ``MIN_SHARED``."""
    if len(sequences) != len(limits):
        raise ValueError(f"{len(sequences)} sequences but {len(limits)} limits")
    if len(sequences) < 2:
        return 0
    first = sequences[0]
    n = min(min(limits), *(len(s) for s in sequences))
    for seq in sequences[1:]:
        k = 0
        while k < n and seq[k] == first[k]:
            k += 1
        n = k
    return n if n >= MIN_SHARED else 0


def decoder_of(model) -> torch.nn.Module:
    """The decoder stack of a causal LM (peft-wrapped or not): the model without its head."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return base.get_decoder()


def expand_cache(model, cache, batch: int):
    """A fresh ``DynamicCache`` holding ``cache``'s keys/values for ``batch`` rows (``expand``;
    the new cache's first ``update`` concatenates them with the rows' own keys and values, one
    copy per layer; gradients from every row flow back into the one prefix). The cache itself is
    left untouched, so it can serve any number of batches (transformers 5.17: iterating a cache
    yields ``(keys, values, ...)`` per layer, each [1, kv_heads, seq, head_dim])."""
    from transformers import DynamicCache

    layers = [(k.expand(batch, -1, -1, -1), v.expand(batch, -1, -1, -1)) for k, v, *_ in cache]
    return DynamicCache(ddp_cache_data=layers, config=model.config)


def prefix_cache(model, prefix_ids: torch.Tensor, rows: int):
    """Run ``prefix_ids`` (1, P) once through ``model``'s decoder and return its key/value cache
    expanded to ``rows`` rows, ready to be passed as ``past_key_values`` to the forward over the
    rest of the batch (inside the same autocast, with gradients)."""
    if prefix_ids.dim() != 2 or prefix_ids.shape[0] != 1:
        raise ValueError(f"prefix_ids must be one row (1, P), got shape {tuple(prefix_ids.shape)}")
    cache = decoder_of(model)(input_ids=prefix_ids, use_cache=True).past_key_values
    if cache is None or cache.get_seq_length() != prefix_ids.shape[1]:
        raise RuntimeError(
            f"{type(model).__name__}'s decoder returned no key/value cache for the shared prefix "
            "(gradient checkpointing turns caching off): train with share_prefix off"
        )
    return expand_cache(model, cache, rows)
