"""Weighted item sampling (``sampling="weighted"``): items drawn with replacement, in proportion to
lambda(r) (section 4.1), ``len(weights)`` draws an epoch."""

import collections

import pytest

from arrank.training import sampling


def test_weighted_draws_follow_lambda_with_replacement():
    """Stepwise lambda(r) = (n_q - r + 1)/n_q for n_q = 4 is 1, 3/4, 1/2, 1/4 (sum 5/2): ranks are drawn
    with probabilities 0.4, 0.3, 0.2, 0.1. 20,000 draws put each rank's share within 0.015 of it
    (over 4 standard deviations); an item of weight 0 is never drawn."""
    weights = [1.0, 0.75, 0.5, 0.25, 0.0] * 4000
    drawn = list(sampling.epoch_weighted_sampler(weights, seed=0))
    assert len(drawn) == len(weights) == 20_000
    counts = collections.Counter(i % 5 for i in drawn)
    assert counts[4] == 0
    assert [counts[r] / len(drawn) for r in range(4)] == pytest.approx([0.4, 0.3, 0.2, 0.1], abs=0.015)
    assert len(set(drawn)) < len(drawn)  # with replacement: items repeat
