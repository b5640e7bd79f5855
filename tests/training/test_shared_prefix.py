"""The batch's shared prompt opening run once (arrank.training.shared_prefix): through the real
Trainer's loss, the same loss and gradients as the batch with the prefix in every row, unpacked,
packed and under LoRA; the prefix found is the longest one the prompts share."""

from __future__ import annotations

import copy

import pytest
import torch
from tiny_setup import THREE_QUERIES as QUERIES
from tiny_setup import ranked_queries_model

from arrank.training import models, packing, train
from arrank.training.packing import prefix_support
from arrank.training.shared_prefix import MIN_SHARED, prefix_cache, shared_length

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def data():
    df, model, tok = ranked_queries_model(QUERIES, "wordnet")  # D.1: a long shared opening
    items = train.training_items(df, tok, "fractional", alpha=2.0, targets="trie", beta=2.0)
    return model, tok, items


@pytest.fixture(scope="module")
def trainer_for(tmp_path_factory):
    """A real StoicalTrainer around a model (its compute_loss is what training runs)."""
    from arrank.training.trainer import StoicalTrainer

    hyper = train.profile_hyperparameters("quick")
    args = train.training_arguments(tmp_path_factory.mktemp("ckpt"), hyper, 0, use_cpu=True)
    return lambda model: StoicalTrainer(model=model, args=args, train_dataset=[{}])


def _loss_and_grads(trainer, batch):
    params = [p for p in trainer.model.parameters() if p.requires_grad]
    loss = trainer.compute_loss(trainer.model, dict(batch))
    grads = torch.autograd.grad(loss, params)
    return float(loss.detach()), torch.cat([g.flatten() for g in grads])


def _batches(items, pad, share, max_length=1024):
    yield "unpacked", train.collate(items, pad, share_prefix=share)
    seqs = packing.pack_items(items, max_length)
    rows = packing.row_length_for(seqs, max_length)
    yield "packed", packing.collate_packed(seqs, pad, row_length=rows, share_prefix=share)


def _same(trainer, items, pad, max_length=1024):
    pairs = zip(_batches(items, pad, False, max_length), _batches(items, pad, True, max_length))
    for (layout, plain), (_, shared) in pairs:
        assert "prefix_ids" in shared and "prefix_ids" not in plain, layout
        assert shared["input_ids"].numel() < plain["input_ids"].numel(), layout  # fewer tokens in the rows
        loss, grads = _loss_and_grads(trainer, plain)
        loss_s, grads_s = _loss_and_grads(trainer, shared)
        assert abs(loss_s - loss) <= 1e-6 * abs(loss), layout
        assert float((grads_s - grads).norm() / grads.norm()) <= 1e-5, layout
        assert grads.abs().max() > 1e-2  # a gradient that is there to compare


def test_shared_prefix_gives_the_same_loss_and_gradients(data, trainer_for):
    model, tok, items = data
    assert prefix_support(model)[0]
    _same(trainer_for(model), items, tok.pad_token_id)


def test_shared_prefix_works_through_a_lora_model(data, trainer_for):
    base, tok, items = data
    model = models.add_lora(copy.deepcopy(base), "transformers", 4, 8, 0.0, "all-linear", seed=0)
    with torch.no_grad():  # LoRA B starts at zero: move it so the adapters carry gradient both ways
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=torch.Generator().manual_seed(1)) * 0.1)
    _same(trainer_for(model), items, tok.pad_token_id)


def test_shared_prefix_at_its_cap_and_under_eager_attention(data, trainer_for):
    """One query's items share their whole prompt: unpacked, all of it but its last token leaves
    the rows (the cap, start - 1); packed into sequences of about one block, each sequence's
    remaining prompt is empty. The same under eager attention (an additive float mask)."""
    model, tok, items = data
    one = [it for it in items if it["query"] == "dog.n.01"]
    assert len(one) == 4
    eager = copy.deepcopy(model)
    eager.config._attn_implementation = "eager"
    short = max(len(it["input_ids"]) for it in one) + 1  # one block a sequence: the prefix repeats
    for m in (model, eager):
        _same(trainer_for(m), one, tok.pad_token_id, max_length=short)
    batch = train.collate(one, tok.pad_token_id, share_prefix=True)
    assert batch["prefix_ids"].shape[1] == one[0]["start"] - 1 and batch["input_ids"][:, 0].unique().numel() == 1
    seqs = packing.pack_items(one, short)
    packed = packing.collate_packed(seqs, tok.pad_token_id, share_prefix=True)
    assert len(seqs) >= 2 and packed["prefix_ids"].shape[1] == seqs[0]["prompt_length"]  # nothing left of it


def test_the_prefix_is_the_longest_opening_every_prompt_shares(data):
    _, tok, items = data
    batch = train.collate(items, tok.pad_token_id, share_prefix=True)
    n = batch["prefix_ids"].shape[1]
    assert n >= MIN_SHARED
    prompts_ = [it["input_ids"][: it["start"]] for it in items]
    assert all(p[:n] == prompts_[0][:n] for p in prompts_)  # shared by all
    assert len({tuple(p[: n + 1]) for p in prompts_}) > 1  # and one token more is not
    # the rows: each item without the prefix, its targets moved with it
    assert batch["attention_mask"].shape[1] == n + batch["input_ids"].shape[1]
    first = items[0]
    assert batch["input_ids"][0, : len(first["input_ids"]) - n].tolist() == first["input_ids"][n:]


def test_shared_length():
    a = list(range(20))
    assert shared_length([a, a[:12] + [99] * 8], [19, 19]) == 12
    assert shared_length([a, a], [10, 15]) == 10  # capped by the smallest limit
    assert shared_length([a, a, a], [15, 9, 12]) == 9  # wherever it stands
    assert shared_length([a, a[:MIN_SHARED] + [99]], [19, 19]) == MIN_SHARED  # just enough to pay
    assert shared_length([a, a[: MIN_SHARED - 1] + [99]], [19, 19]) == 0  # too short to pay
    assert shared_length([a], [19]) == 0  # one sequence: nothing to share
    with pytest.raises(ValueError, match="2 sequences but 1 limits"):
        shared_length([a, a], [3])


def test_no_sharing_under_gradient_checkpointing(data):
    model = copy.deepcopy(data[0])
    model.gradient_checkpointing_enable()
    ok, why = prefix_support(model)
    assert not ok and "gradient checkpointing" in why
    prefix = torch.tensor([list(range(4, 4 + MIN_SHARED))])
    with pytest.raises(ValueError, match=r"prefix_ids must be one row \(1, P\), got shape \(2, 8\)"):
        prefix_cache(model, prefix.repeat(2, 1), 3)
    model.train()  # checkpointing turns the cache off in training: said, not a crash further on
    with pytest.raises(RuntimeError, match="returned no key/value cache for the shared prefix"):
        prefix_cache(model, prefix, 3)
