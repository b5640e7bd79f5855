"""The STOICaL loss of eq. 3: one-hot + lambda = 1 is next-token cross-entropy (torch and
transformers agree), lambda(r) of section 4.1, trie targets of section 4.2, normalisation, errors."""

import math

import pytest
import torch
import torch.nn.functional as Fn

from arrank.training import schemes, trie
from arrank.training.stoical import (
    item_weight,
    pad_sparse_targets,
    stoical_loss,
    supervised_count,
    targets_from_labels,
)


def labels_batch(seed=0, B=3, T=12, V=50):
    """Random input ids; item b's docID occupies positions starts[b] .. starts[b]+lens[b]-1, the rest
    (prompt, right padding) is -100 in the labels."""
    g = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(4, V, (B, T), generator=g)
    starts, lens = [5, 7, 3][:B], [4, 5, 6][:B]
    labels = torch.full((B, T), -100)
    for b, (s, n) in enumerate(zip(starts, lens)):
        labels[b, s : s + n] = input_ids[b, s : s + n]
    return input_ids, labels, starts, lens


def test_one_hot_lambda1_is_mean_cross_entropy_over_docid_tokens():
    input_ids, labels, starts, lens = labels_batch()
    logits = torch.randn(*labels.shape, 50, generator=torch.Generator().manual_seed(1)) * 3
    ids, mass = targets_from_labels(labels)
    got = stoical_loss(logits, ids, mass, torch.ones(3))
    want = Fn.cross_entropy(logits[:, :-1].reshape(-1, 50), labels[:, 1:].reshape(-1), ignore_index=-100)
    assert abs(got.item() - want.item()) <= 1e-6 * abs(want.item())  # relative, float32
    # the same targets built by the collator helper from per-step one-hot lists
    per_item = [trie.one_hot_targets(labels[b, s : s + n].tolist()) for b, (s, n) in enumerate(zip(starts, lens))]
    ids2, mass2 = pad_sparse_targets(per_item, starts, labels.shape[1])
    assert ids2.shape == (3, 12, 1)
    assert abs(stoical_loss(logits, ids2, mass2, torch.ones(3)).item() - want.item()) <= 1e-6 * abs(want.item())


def test_one_hot_lambda1_equals_transformers_llama_loss():
    from arrank.training.models import build_tiny_model

    model = build_tiny_model(vocab_size=50, hidden=16, layers=1, heads=2, intermediate=32).eval()
    input_ids, labels, *_ = labels_batch()
    ids, mass = targets_from_labels(labels)
    with torch.no_grad():
        out = model(input_ids=input_ids, labels=labels)
        got = stoical_loss(out.logits, ids, mass, torch.ones(3))
        assert abs(got.item() - out.loss.item()) <= 1e-6 * abs(out.loss.item())
        # gradient-accumulation convention: both divide the summed loss by num_items_in_batch
        hf = model(input_ids=input_ids, labels=labels, num_items_in_batch=torch.tensor(40)).loss
        ours = stoical_loss(out.logits, ids, mass, torch.ones(3), num_items_in_batch=torch.tensor(40))
        assert abs(ours.item() - hf.item()) <= 1e-6 * abs(hf.item())


def uniform_batch(weights, steps=2, V=4, T=5):
    """Uniform logits: every supervised position has CE = log V; item b has `steps` docID tokens."""
    B = len(weights)
    logits = torch.zeros(B, T, V)
    ids, mass = pad_sparse_targets([trie.one_hot_targets([1] * steps)] * B, [2] * B, T)
    return logits, ids, mass, torch.tensor(weights)


@pytest.mark.parametrize(
    "scheme, alpha, want",
    [
        ("indicator", None, [1.0, 0.0, 0.0, 0.0]),
        ("fractional", 2, [1.0, 1 / 4, 1 / 9, 1 / 16]),
        ("stepwise", None, [1.0, 3 / 4, 1 / 2, 1 / 4]),
    ],
)
def test_item_weights_and_weighted_loss(scheme, alpha, want):
    lam = [item_weight(scheme, r, 4, alpha) for r in range(1, 5)]
    assert lam == pytest.approx(want, abs=1e-15)
    logits, ids, mass, w = uniform_batch(lam)
    # sum_b lambda_b * (2 log 4) over N = 8 supervised positions (lambda does not change N)
    assert stoical_loss(logits, ids, mass, w).item() == pytest.approx(sum(want) * 2 * math.log(4) / 8, rel=1e-6)


def test_fractional_alpha_values():
    assert item_weight("fractional", 3, 5, alpha=1) == pytest.approx(1 / 3)
    assert item_weight("fractional", 3, 5, alpha=0) == 1.0
    assert item_weight("stepwise", 5, 5) == pytest.approx(1 / 5)


def test_trie_targets_reward_mass_on_second_ranked_continuation():
    # Toy example of section 4.2, step 1 of d_1 = dog: valid tokens d, c, f (ids 2, 4, 8).
    EOS, D, OG, C, AT, S, EER, FF, ISH = range(1, 10)
    toy = [[D, OG, EOS], [C, AT, EOS], [C, AT, S, EOS], [D, EER, EOS], [FF, ISH, EOS]]
    y = trie.query_sparse_targets(toy, beta=1)[0]  # rank 1 (dog), beta = 1
    ids, mass = pad_sparse_targets([y[:1]], [1], 2)  # only the first step, at position 1
    assert ids[0, 1].tolist() == [D, C, FF]
    assert mass[0, 1].tolist() == pytest.approx([75 / 137, 50 / 137, 12 / 137])
    one_ids, one_mass = pad_sparse_targets([trie.one_hot_targets([D])], [1], 2)

    def logits_for(p):  # a model with next-token probabilities p over 10 tokens at position 0
        probs = torch.full((10,), 1e-3)
        for tok, v in p.items():
            probs[tok] = v
        probs = probs / probs.sum()
        return torch.stack([probs.log(), torch.zeros(10)]).unsqueeze(0)

    top1_only = logits_for({D: 0.9, C: 0.05, FF: 0.05})
    second_too = logits_for({D: 0.6, C: 0.35, FF: 0.05})  # mass on the second-ranked "c" (cat, cats)
    w = torch.ones(1)
    trie_a, trie_b = (stoical_loss(x, ids, mass, w).item() for x in (top1_only, second_too))
    hot_a, hot_b = (stoical_loss(x, one_ids, one_mass, w).item() for x in (top1_only, second_too))
    assert trie_b < trie_a and hot_a < hot_b  # trie targets prefer the rank-aware model; one-hot the other
    la, lb = top1_only[0, 0].log_softmax(-1), second_too[0, 0].log_softmax(-1)
    assert trie_a == pytest.approx(-(75 * la[D] + 50 * la[C] + 12 * la[FF]).item() / 137, rel=1e-6)
    assert trie_b == pytest.approx(-(75 * lb[D] + 50 * lb[C] + 12 * lb[FF]).item() / 137, rel=1e-6)


def test_gradient_is_lambda_times_softmax_minus_target_over_n():
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(2, 4, 6, generator=g, requires_grad=True)
    steps = [[[(1, 0.7), (3, 0.3)], [(2, 1.0)]], [[(5, 1.0)]]]
    ids, mass = pad_sparse_targets(steps, [1, 2], 4)
    w = torch.tensor([0.5, 2.0])
    stoical_loss(logits, ids, mass, w).backward()
    p = logits.detach().softmax(-1)
    want = torch.zeros(2, 4, 6)
    for b, t, lam, y in [(0, 0, 0.5, {1: 0.7, 3: 0.3}), (0, 1, 0.5, {2: 1.0}), (1, 1, 2.0, {5: 1.0})]:
        target = torch.zeros(6)
        for k, v in y.items():
            target[k] = v
        want[b, t] = lam * (p[b, t] - target) / 3  # N = 3 supervised positions
    torch.testing.assert_close(logits.grad, want, rtol=1e-5, atol=1e-7)


def test_num_items_in_batch_changes_only_the_normalisation():
    _, labels, *_ = labels_batch()
    logits = torch.randn(*labels.shape, 50, generator=torch.Generator().manual_seed(2))
    ids, mass = targets_from_labels(labels)
    w = torch.tensor([1.0, 0.25, 1 / 9])
    n = int((mass[:, 1:] > 0).any(-1).sum())
    assert n == 15
    base = stoical_loss(logits, ids, mass, w)
    for k in (7, torch.tensor(40.0)):
        assert (stoical_loss(logits, ids, mass, w, num_items_in_batch=k) * float(k)).item() == pytest.approx(
            base.item() * n, rel=1e-6
        )


def test_labels_on_every_position_leave_position_0_unsupervised():
    """Section 4 / transformers alignment: no logit predicts token 0, so labels = input_ids (every
    position labelled) supervise positions 1..T-1 only, and the loss is the shifted cross-entropy."""
    input_ids, *_ = labels_batch()
    logits = torch.randn(*input_ids.shape, 50, generator=torch.Generator().manual_seed(4))
    ids, mass = targets_from_labels(input_ids)
    assert mass[:, 0].sum().item() == 0.0 and supervised_count(mass) == 3 * 11
    want = Fn.cross_entropy(logits[:, :-1].reshape(-1, 50), input_ids[:, 1:].reshape(-1))
    assert stoical_loss(logits, ids, mass, torch.ones(3)).item() == pytest.approx(want.item(), rel=1e-6)
    everywhere = torch.ones(2, 4, 1)  # a position 0 with mass is still not counted
    assert supervised_count(everywhere) == 2 * 3


def test_per_position_weight_is_the_predicted_tokens_lambda():
    """Eq. 3 with a packed row's (B, T) lambda: the CE that predicts token t (from logits[t-1]) is
    weighted by lambda at position t, the block token t belongs to. Uniform logits over V = 4 give
    CE = log 4 at both docID tokens (positions 2 and 3): (3 + 5) log 4 / 2."""
    logits, ids, mass, _ = uniform_batch([1.0])
    w = torch.tensor([[0.0, 0.0, 3.0, 5.0, 7.0]])
    assert stoical_loss(logits, ids, mass, w).item() == pytest.approx(4 * math.log(4), rel=1e-6)


def test_cross_entropy_scales_with_target_mass():
    """CE(y, p) = -sum_k y_k log p_k (eq. 3): a target of mass 0.5 on one token of a uniform
    4-token distribution costs 0.5 log 4, not log 4 (no renormalisation of y)."""
    logits = torch.zeros(1, 2, 4)
    ids, mass = pad_sparse_targets([[[(1, 0.5)]]], [1], 2)
    assert stoical_loss(logits, ids, mass, torch.ones(1)).item() == pytest.approx(0.5 * math.log(4), rel=1e-6)


def test_no_supervised_position_gives_zero_with_graph():
    logits = torch.randn(2, 3, 5, requires_grad=True)
    loss = stoical_loss(logits, torch.zeros(2, 3, 1, dtype=torch.long), torch.zeros(2, 3, 1), torch.ones(2))
    assert loss.item() == 0.0 and loss.requires_grad


def test_pad_sparse_targets_layout():
    ids, mass = pad_sparse_targets([[[(3, 0.5), (4, 0.5)], [(7, 1.0)]], [[(9, 1.0)]]], [2, 1], 5)
    assert ids.shape == mass.shape == (2, 5, 2)
    assert ids[0, 2].tolist() == [3, 4] and ids[0, 3].tolist() == [7, 0] and mass[0, 3].tolist() == [1.0, 0.0]
    assert ids[1, 1].tolist() == [9, 0] and mass[1].sum().item() == 1.0 and mass[0, :2].sum().item() == 0.0
    assert pad_sparse_targets([[[(9, 1.0)]]], [1], 3, k=4)[0].shape == (1, 3, 4)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: item_weight("linear", 1, 4), "unknown item-weight scheme 'linear'"),
        (lambda: item_weight("fractional", 1, 4), "needs alpha"),
        (lambda: item_weight("fractional", 1, 4, alpha=-1), "alpha=-1"),
        (lambda: item_weight("stepwise", 0, 4), r"r=0 .*\[1, n_q=4\]"),
        (lambda: item_weight("stepwise", 5, 4), r"r=5"),
        (lambda: item_weight("indicator", 1, 0), "n_q=0 must be a positive integer"),
        (lambda: item_weight("stepwise", 1, 2.5), "n_q=2.5 must be a positive integer"),
        (lambda: pad_sparse_targets([[[(1, 1.0)]]], [0], 4), "position 0"),
        (lambda: pad_sparse_targets([[[(1, 1.0)]] * 3], [2], 4), r"within positions \[1, 4\)"),
        (lambda: pad_sparse_targets([[[(1, 1.0)]]], [1, 2], 4), "one start per item"),
    ],
)
def test_bad_helper_inputs_raise(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_bad_loss_inputs_raise():
    logits = torch.zeros(2, 4, 6)
    ids, mass = pad_sparse_targets([[[(1, 1.0)]], [[(2, 1.0)]]], [1, 1], 4)
    w = torch.ones(2)
    with pytest.raises(ValueError, match="target_ids must be"):
        stoical_loss(logits, ids[:, :3], mass[:, :3], w)
    with pytest.raises(ValueError, match="target_mass shape"):
        stoical_loss(logits, ids, mass[..., :0], w)
    with pytest.raises(ValueError, match="item_weight must be"):
        stoical_loss(logits, ids, mass, torch.ones(3))
    with pytest.raises(ValueError, match="item_weight must be finite and >= 0"):
        stoical_loss(logits, ids, mass, torch.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="target_mass must be finite"):
        stoical_loss(logits, ids, -mass, w)
    with pytest.raises(ValueError, match="position 0"):
        bad = mass.clone()
        bad[0, 0, 0] = 1.0
        stoical_loss(logits, ids, bad, w)
    loud = (ValueError, IndexError, RuntimeError)  # not re-checked here, but never a silent loss
    with pytest.raises(loud):
        stoical_loss(logits[0], ids, mass, w)  # logits not (B, T, V)
    with pytest.raises(loud):
        stoical_loss(logits, ids + 6, mass, w)  # a target id outside [0, V)
    with pytest.raises(loud):
        pad_sparse_targets([[[(1, 0.5), (2, 0.5)]]], [1], 4, k=1)  # a step wider than k
    with pytest.raises(ValueError, match="num_items_in_batch=0"):
        stoical_loss(logits, ids, mass, w, num_items_in_batch=0)
    with pytest.raises(ValueError, match="integer token ids"):
        stoical_loss(logits, ids.float(), mass, w)


def test_schemes_listed():
    assert list(schemes.SCHEMES) == ["indicator", "fractional", "stepwise"]


@pytest.mark.parametrize("alpha", [math.nan, True])
def test_fractional_refuses_nan_and_bool_alpha(alpha):
    """lambda(r) = 1/r**alpha (section 4.1) needs a number alpha >= 0: NaN would weigh every item
    NaN and True would silently run alpha = 1."""
    with pytest.raises(ValueError, match=rf"alpha={alpha!r} must be a number >= 0"):
        item_weight("fractional", 2, 4, alpha=alpha)


def test_a_scheme_name_is_registered_once_and_unknown_schemes_sort_last():
    with pytest.raises(ValueError, match="a scheme named 'indicator' is registered already"):
        schemes.register(schemes.SCHEMES["indicator"])
    assert [schemes.scheme_order(s) for s in ("indicator", "fractional", "stepwise", "linear", None)] == [0, 1, 2, 3, 3]


def test_a_combined_run_of_a_scheme_other_than_fractional_is_labelled_combined():
    """Stepwise item weights with trie targets, combined (Appendix: combined item-and-token loss) or
    not, are two rows of a table: their labels differ."""
    run = {"scheme": "stepwise", "targets": "trie", "beta": 0.5}
    assert schemes.loss_label(run) == "Stepwise + trie β=0.5"
    assert schemes.loss_label({**run, "combined": True}) == "Stepwise + trie β=0.5 (combined)"
