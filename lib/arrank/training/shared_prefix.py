"""The prompt's fixed opening run once per training batch, not once per sequence.

A causal model computes the keys and values of the tokens every sequence of a batch opens with
identically in each row; here the batch's common opening (:func:`shared_length`) runs once,
through the decoder alone, and its key/value cache is expanded to every row as a view
(:func:`prefix_cache`). The collators strip the prefix (``share_prefix=True``: ``prefix_ids`` in
the batch) and ``trainer.StoicalTrainer.compute_loss`` runs it, where ``packing.prefix_support``
allows. Loss and gradients equal the unshared batch's up to float rounding
(tests/training/test_shared_prefix.py); docs/design.md, "Training"; savings: docs/measurements.md.
"""

from __future__ import annotations

import os
from typing import Sequence

import torch

# below this many shared tokens the prefix's own forward call costs about what it saves
MIN_SHARED = 8


def shared_length(sequences: Sequence[Sequence[int]], limits: Sequence[int]) -> int:
    """How many leading tokens the batch runs once: the longest prefix every sequence shares, at most
    the smallest of ``limits`` (per sequence: an unpacked item keeps its last prompt token); 0 for
    fewer than two sequences or fewer than ``MIN_SHARED`` tokens."""
    if len(sequences) != len(limits):
        raise ValueError(f"{len(sequences)} sequences but {len(limits)} limits")
    if len(sequences) < 2:
        return 0
    n = min(min(limits), len(os.path.commonprefix([list(s) for s in sequences])))  # works on any sequences
    return n if n >= MIN_SHARED else 0


def decoder_of(model) -> torch.nn.Module:
    """The decoder stack of a causal LM (peft-wrapped or not): the model without its head."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return base.get_decoder()


def expand_cache(model, cache, batch: int):
    """A fresh ``DynamicCache`` holding ``cache``'s keys/values expanded (views) to ``batch`` rows;
    gradients from every row flow back into the one prefix, and ``cache`` itself serves any number
    of batches."""
    from transformers import DynamicCache

    layers = [(k.expand(batch, -1, -1, -1), v.expand(batch, -1, -1, -1)) for k, v, *_ in cache]
    return DynamicCache(ddp_cache_data=layers, config=model.config)


def prefix_cache(model, prefix_ids: torch.Tensor, rows: int):
    """Run ``prefix_ids`` (1, P) once through ``model``'s decoder; its key/value cache expanded to
    ``rows`` rows, to pass as ``past_key_values`` to the forward over the rows."""
    if prefix_ids.dim() != 2 or prefix_ids.shape[0] != 1:
        raise ValueError(f"prefix_ids must be one row (1, P), got shape {tuple(prefix_ids.shape)}")
    cache = decoder_of(model)(input_ids=prefix_ids, use_cache=True).past_key_values
    if cache is None or cache.get_seq_length() != prefix_ids.shape[1]:
        raise RuntimeError(
            f"{type(model).__name__}'s decoder returned no key/value cache for the shared prefix "
            "(gradient checkpointing turns caching off): train with share_prefix off"
        )
    return expand_cache(model, cache, rows)
