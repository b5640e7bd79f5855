"""Packed per-query training (arrank.training.packing): the block mask, packing and splitting, exactness of
per-item losses and gradients against unpacked items, the fallback, and packed training runs."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from tiny_setup import ranked_queries_model

from arrank.common import notices
from arrank.training import models, packing, stoical, train

# Queries with their relevant docIDs in rank order (shared prefixes make the tries non-trivial).
QUERIES = {
    "dog.n.01": ["canine.n.02", "carnivore.n.01", "placental.n.01", "mammal.n.01", "vertebrate.n.01"],
    "wolf.n.01": ["canine.n.02", "carnivore.n.01", "placental.n.01"],
    "cat.n.01": ["feline.n.01", "carnivore.n.01"],
    "whale.n.01": ["cetacean.n.01"],
    "robin.n.01": ["thrush.n.03", "oscine.n.01", "passerine.n.01", "bird.n.01"],
}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def data():
    """A dataset table as ``training_items`` reads it, with the Appendix D.1 prompt, and the tiny
    model (BPE tokenizer + Llama) with large weights so that a wrong mask or position moves every
    loss far beyond the tolerance (checked in ``test_exactness_has_power``)."""
    torch.manual_seed(0)
    return ranked_queries_model(QUERIES, "wordnet")


# --------------------------------------------------------------------------- the mask


def test_segments_layout_by_hand():
    # [p0 p1][a0 a1][b0] + one padding token
    T, F = True, False
    expected = torch.tensor(
        [
            [T, F, F, F, F, F],  # p0: causal prompt
            [T, T, F, F, F, F],  # p1
            [T, T, T, F, F, F],  # a0: prompt + itself
            [T, T, T, T, F, F],  # a1: prompt + a0, a1
            [T, T, F, F, T, F],  # b0: prompt + itself, never block a
            [F, F, F, F, F, T],  # padding: itself only
        ]
    )
    mask, positions = packing.segments_layout([(2, [2, 1])], 6)
    assert torch.equal(mask, expected) and positions.tolist() == [0, 1, 2, 3, 2, 0]
    assert torch.equal(packing.segments_layout([(2, [2, 1])])[0], expected[:5, :5])
    with pytest.raises(ValueError, match="at least one docID block"):
        packing.segments_layout([(3, [])])
    with pytest.raises(ValueError, match="prompt_length=-1"):
        packing.segments_layout([(-1, [2])])
    with pytest.raises(ValueError, match=r"block lengths must be integers >= 1, got \[2, -1\]"):
        packing.segments_layout([(0, [2, -1])])  # would broadcast into a 2 x 2 mask for one token
    mask, positions = packing.segments_layout([(0, [2, 1])])
    assert positions.tolist() == [0, 1, 0]  # no prefix: blocks stand alone
    assert torch.equal(mask, torch.tensor([[T, F, F], [T, T, F], [F, F, T]]))
    with pytest.raises(ValueError, match="length=3 is shorter"):
        packing.segments_layout([(2, [2])], 3)


# --------------------------------------------------------------------------- packing and splitting


def test_pack_items_one_sequence_per_query(data):
    df, _, tok = data
    items = train.training_items(df, tok, "fractional", alpha=2.0, targets="trie", beta=2.0, combined=True)
    packed = packing.pack_items(items, max_length=1024)
    assert [p["query"] for p in packed] == list(QUERIES)
    for p in packed:
        own = [i for i in items if i["query"] == p["query"]]
        P = p["prompt_length"]
        assert P == own[0]["start"] - 1  # the shared prefix: the prompt minus its last token
        assert p["ranks"] == list(range(1, len(own) + 1))
        assert p["weights"] == [1 / r**2 for r in p["ranks"]]
        # each block = the prompt's last token + the docID: the item's own tail
        assert p["input_ids"] == own[0]["input_ids"][:P] + [t for i in own for t in i["input_ids"][P:]]
        assert p["targets"] == [s for i in own for s in [[]] + i["targets"]]  # Appendix F targets per rank
        assert len(p["input_ids"]) == P + sum(len(i["input_ids"]) - P for i in own)


def test_long_query_is_split_never_truncated(data):
    df, _, tok = data
    items = [i for i in train.training_items(df, tok, "stepwise") if i["query"] == "dog.n.01"]
    P = items[0]["start"] - 1
    longest = max(len(i["input_ids"]) for i in items)
    packed = packing.pack_items(items, max_length=longest + 3)  # room for one docID behind the prompt
    assert len(packed) > 1
    assert all(len(p["input_ids"]) <= longest + 3 for p in packed)
    assert all(p["input_ids"][:P] == items[0]["input_ids"][:P] for p in packed)  # prompt repeated
    assert [r for p in packed for r in p["ranks"]] == [1, 2, 3, 4, 5]
    assert [n for p in packed for n in p["block_lengths"]] == [len(i["input_ids"]) - P for i in items]
    with pytest.raises(ValueError, match="never truncated"):
        packing.pack_items(items, max_length=longest - 1)


def test_a_sequence_may_fill_max_length_exactly(data):
    """max_length bounds a packed sequence's tokens: a query whose prompt and blocks take exactly that
    many stays one sequence, and an item of exactly max_length tokens is packed, not refused."""
    df, _, tok = data
    items = [i for i in train.training_items(df, tok, "stepwise") if i["query"] == "dog.n.01"]
    P = items[0]["start"] - 1
    full = P + sum(len(i["input_ids"]) - P for i in items)
    (one,) = packing.pack_items(items, max_length=full)
    assert len(one["input_ids"]) == full and one["ranks"] == [1, 2, 3, 4, 5]
    assert len(packing.pack_items(items, max_length=full - 1)) == 2
    (single,) = packing.pack_items(items[:1], max_length=len(items[0]["input_ids"]))
    assert single["input_ids"] == items[0]["input_ids"]


def test_row_length_is_twice_the_mean_sequence_within_bounds():
    """Rows hold 2 x the mean packed sequence, at least the longest one, at most max_length."""
    seqs = lambda *lengths: [{"input_ids": [0] * n} for n in lengths]  # noqa: E731
    assert packing.row_length_for(seqs(10, 20, 30), 100) == 40  # 2 x 20
    assert packing.row_length_for(seqs(10, 20, 30), 35) == 35  # capped
    assert packing.row_length_for(seqs(10, 10, 100), 1000) == 100  # 2 x 40 = 80 < the longest


def test_bad_input_errors(data):
    df, _, tok = data
    bad = pd.concat(
        [df, pd.DataFrame([{"query": "ghost.n.01", "relevant": [], "split": "train", "prompt": "synset: ghost.n.01"}])],
        ignore_index=True,
    )
    with pytest.raises(ValueError, match="'ghost.n.01' has an empty relevant list"):
        train.training_items(bad, tok, "fractional", alpha=2.0)
    with pytest.raises(ValueError, match="no training items"):
        packing.pack_items([], 64)
    with pytest.raises(ValueError, match="packing='always'"):
        packing.resolve_packing("always", [], data[1])


# --------------------------------------------------------------------------- exactness


def _per_item_losses_and_grads(model, batch, spans, packed):
    """lambda-weighted summed loss of each item (its own positions only) and its gradient."""
    kw = (
        {"attention_mask": packing.model_mask(model, batch["allowed"]), "position_ids": batch["position_ids"]}
        if packed
        else {"attention_mask": batch["attention_mask"]}
    )
    logits = model(input_ids=batch["input_ids"], **kw).logits
    params = [p for p in model.parameters() if p.requires_grad]
    out = []
    for b, lo, hi in spans:
        mass = torch.zeros_like(batch["target_mass"])
        mass[b, lo:hi] = batch["target_mass"][b, lo:hi]
        loss = stoical.stoical_loss(logits, batch["target_ids"], mass, batch["item_weight"], num_items_in_batch=1)
        grads = torch.autograd.grad(loss, params, retain_graph=True)
        out.append((loss.detach(), torch.cat([g.flatten() for g in grads])))
    whole = stoical.stoical_loss(logits, batch["target_ids"], batch["target_mass"], batch["item_weight"])
    return out, whole.detach()


def _spans(items, packed_seqs, row_length=None):
    """(row, first, end) positions of every item: unpacked, and in the packed rows (in item order)."""
    unpacked = [(b, i["start"], len(i["input_ids"])) for b, i in enumerate(items)]
    where = {}
    for r, row in enumerate(packing.fill_rows([len(p["input_ids"]) for p in packed_seqs], row_length)):
        at = 0
        for i in row:
            lo = at + packed_seqs[i]["prompt_length"]
            where[i] = []
            for n in packed_seqs[i]["block_lengths"]:
                where[i].append((r, lo, lo + n))
                lo += n
            at += len(packed_seqs[i]["input_ids"])
    return unpacked, [span for i in range(len(packed_seqs)) for span in where[i]]


@pytest.mark.parametrize("attn,row_length", [("sdpa", None), ("eager", None), ("sdpa", 200)])
def test_packed_losses_and_gradients_equal_unpacked(data, attn, row_length):
    df, model, tok = data
    model.config._attn_implementation = attn
    items = train.training_items(df, tok, "fractional", alpha=2.0, targets="trie", beta=2.0, combined=True)
    packed_seqs = packing.pack_items(items, 1024)
    u_spans, p_spans = _spans(items, packed_seqs, row_length)
    unpacked, u_whole = _per_item_losses_and_grads(model, train.collate(items, tok.pad_token_id), u_spans, False)
    batch = packing.collate_packed(packed_seqs, tok.pad_token_id, row_length=row_length)
    assert batch["input_ids"].shape[0] == (5 if row_length is None else 3)  # 200-token rows hold 2 queries
    packed, p_whole = _per_item_losses_and_grads(model, batch, p_spans, True)
    assert len(packed) == len(unpacked) == len(items) == 15
    for (lu, gu), (lp, gp) in zip(unpacked, packed):
        # relative to the quantity's scale (float32; measured: ~3e-8 for losses, ~1e-7 for gradients
        # here, 1.2e-6 of the largest gradient on a CPU with AMX, where an absolute 1e-5 failed)
        assert abs(lu - lp) <= 1e-6 * abs(lu), (lu, lp)
        assert (gu - gp).abs().max() <= 1e-5 * gu.abs().max(), (gu - gp).abs().max() / gu.abs().max()
        assert gu.abs().max() > 1e-2  # a gradient that is there to compare
    assert abs(u_whole - p_whole) <= 1e-5 * u_whole  # same supervised positions: same normaliser
    model.config._attn_implementation = "sdpa"


def test_exactness_has_power(data):
    """A row where blocks see each other (plain causal mask) or keep counting positions moves the
    per-item losses far beyond 1e-5: the test above would catch a wrong mask or position ids."""
    df, model, tok = data
    items = [i for i in train.training_items(df, tok, "stepwise") if i["query"] == "dog.n.01"]
    seq = packing.pack_items(items, 1024)
    batch = packing.collate_packed(seq, tok.pad_token_id)
    _, spans = _spans(items, seq)
    right, _ = _per_item_losses_and_grads(model, batch, spans, True)
    causal = {**batch, "allowed": torch.tril(torch.ones_like(batch["allowed"]))}
    wrong_mask, _ = _per_item_losses_and_grads(model, causal, spans, True)
    counting = {**batch, "position_ids": torch.arange(batch["input_ids"].shape[1])[None, :]}
    wrong_pos, _ = _per_item_losses_and_grads(model, counting, spans, True)
    assert abs(right[0][0] - wrong_mask[0][0]) < 1e-6  # block 1 sees only the prompt either way
    assert max(abs(r[0] - w[0]) for r, w in zip(right[1:], wrong_mask[1:])) > 1e-2
    assert max(abs(r[0] - w[0]) for r, w in zip(right[1:], wrong_pos[1:])) > 1e-2


def test_weighted_sampling_weights_blocks_by_their_share(data):
    df, _, tok = data
    items = train.training_items(df, tok, "fractional", alpha=1.0)
    seqs = packing.pack_items(items, 1024)
    batch = packing.collate_packed(seqs[:1], tok.pad_token_id, weight_scale=2.0)
    P, lengths = seqs[0]["prompt_length"], seqs[0]["block_lengths"]
    total = sum(1 / r for r in range(1, 6))
    starts = np.cumsum([P] + lengths[:-1]) + 1  # each block's first docID token
    assert [round(float(batch["item_weight"][0, s]), 6) for s in starts] == [
        round(2 / r / total, 6) for r in range(1, 6)
    ]
    assert batch["item_weight"][0, :P].sum() == 0
    assert packing.sequence_weights(seqs)[0] == pytest.approx(total)
    plain = packing.collate_packed(seqs[:1], tok.pad_token_id)  # uniform draws: lambda(r) itself
    assert [round(float(plain["item_weight"][0, s]), 6) for s in starts] == [round(1 / r, 6) for r in range(1, 6)]


def test_packed_batch_carries_the_unpacked_steps_weight(data):
    df, _, tok = data
    items = train.training_items(df, tok, "fractional", alpha=2.0)  # 15 items of 5 queries
    total = sum(i["weight"] for i in items)
    # weighted: 30 items of weight 1 carry 30; a sequence carries total / 5 on average
    assert train.packed_batch_size(30, items, 5, weighted=True) == round(30 * 5 / total)
    # uniform: 30 items carry 30 * mean lambda: the weight of 30 / 3 = 10 sequences
    assert train.packed_batch_size(30, items, 5, weighted=False) == 10
    assert train.packed_batch_size(1, items, 5, weighted=False) == 1  # at least one


def test_rows_hold_several_sequences_apart():
    # two sequences in one row: [p0 | a0 a1] [q0 q1 | b0] + one padding token
    T, F = True, False
    expected = torch.tensor(
        [
            [T, F, F, F, F, F, F],
            [T, T, F, F, F, F, F],  # a0: its prompt + itself
            [T, T, T, F, F, F, F],  # a1
            [F, F, F, T, F, F, F],  # q0: the second prompt starts afresh
            [F, F, F, T, T, F, F],
            [F, F, F, T, T, T, F],  # b0: its own prompt + itself, nothing of the first sequence
            [F, F, F, F, F, F, T],  # padding
        ]
    )
    mask, positions = packing.segments_layout([(1, [2]), (2, [1])], 7)
    assert torch.equal(mask, expected) and positions.tolist() == [0, 1, 2, 0, 1, 2, 0]
    assert packing.fill_rows([50, 30, 40, 20], 70) == [[0, 3], [2, 1]]
    assert packing.fill_rows([5, 6], None) == [[0], [1]]
    with pytest.raises(ValueError, match="80 tokens does not fit row_length=70"):
        packing.fill_rows([80], 70)


# --------------------------------------------------------------------------- layout choice and training


def test_resolve_packing_and_fallback(data):
    df, model, tok = data
    every = train.training_items(df, tok, "fractional", alpha=2.0)
    top1 = train.training_items(df, tok, "indicator")
    assert packing.resolve_packing("auto", every, model) == ("per_query", None)
    assert packing.resolve_packing("auto", top1, model) == ("none", None)  # one item per query
    assert packing.resolve_packing("none", every, model) == ("none", None)
    model.config._attn_implementation = "flash_attention_2"
    try:
        layout, warning = packing.resolve_packing("auto", every, model)
        assert layout == "none" and "unpacked items" in warning and "flash_attention_2" in warning
        assert packing.resolve_packing("auto", top1, model) == ("none", None)  # nothing to warn about
        assert train.packing_layout("per_query", every, model) == "none"
        said = [m for m in notices.told() if m.startswith("packing: ")]  # printed, and kept for results.json
        assert said and "falls back to unpacked items" in said[-1] and "flash_attention_2" in said[-1]
    finally:
        model.config._attn_implementation = "sdpa"
    model.config.unsloth_version = "2026.1"
    try:
        assert packing.mask_support(model)[0] is False and "Unsloth" in packing.mask_support(model)[1]
    finally:
        del model.config.unsloth_version


def test_sliding_window_attention_is_never_packed(data):
    """A custom 4-D mask replaces a model's sliding window: such a model trains unpacked, and says why."""
    df, model, tok = data
    every = train.training_items(df, tok, "fractional", alpha=2.0)
    before = getattr(model.config, "sliding_window", None)
    model.config.sliding_window = 4096
    try:
        ok, why = packing.mask_support(model)
        assert not ok and why == (
            "the model has sliding-window attention (window 4096), which a custom 4-D mask would replace"
        )
        assert packing.resolve_packing("auto", every, model)[0] == "none"
    finally:
        model.config.sliding_window = before
    assert packing.resolve_packing("auto", every, model) == ("per_query", None)


def test_packed_training_lowers_the_loss(data, tmp_path):
    df, _, tok = data
    torch.manual_seed(1)
    model = models.build_tiny_model(len(tok), hidden=32, layers=1, heads=2, intermediate=64, seed=1, tokenizer=tok)
    items = train.training_items(df, tok, "fractional", alpha=2.0)
    hyper = {
        **train.profile_hyperparameters("quick"),
        "steps": 15,
        "batch_size": 6,
        "warmup_steps": 1,
        "lr": 1e-2,
        "logging_steps": 1,
        "save_steps": 100,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # auto packs silently
        log = train.train(model, tok, items, hyper, tmp_path / "ckpt", seed=0, sampling="uniform")
    assert log["step"].iloc[-1] == 15
    assert log["loss"].iloc[-3:].mean() < 0.5 * log["loss"].iloc[:3].mean()
