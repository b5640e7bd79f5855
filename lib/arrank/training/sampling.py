"""Weighted item sampling whose order depends only on (seed, epoch) (``arrank.training.train``'s
``sampling="weighted"``): a resumed run draws the items of the run it replaces, and
``train.trained_sequences`` can replay a run's draws without training."""

from __future__ import annotations

from typing import Sequence

import torch


def epoch_seed(seed: int, epoch: int) -> int:
    """The generator seed of one epoch of weighted sampling: ``seed`` for epoch 0 (as before), a
    32-bit mix of (seed, epoch) after it (torch's CPU generator keeps only 32 bits of a seed)."""
    import numpy as np

    return seed if epoch == 0 else int(np.random.SeedSequence([seed, epoch]).generate_state(1)[0])


def epoch_weighted_sampler(weights: Sequence[float], seed: int) -> torch.utils.data.WeightedRandomSampler:
    """Draw ``len(weights)`` items an epoch with replacement, in proportion to ``weights``, in an order
    that depends only on (seed, epoch): the Trainer calls ``set_epoch`` before each epoch, also on
    resume, which then continues the interrupted epoch's order."""
    sampler = torch.utils.data.WeightedRandomSampler(
        weights, len(weights), replacement=True, generator=torch.Generator().manual_seed(seed)
    )
    sampler.set_epoch = lambda epoch: sampler.generator.manual_seed(epoch_seed(seed, epoch))
    return sampler
