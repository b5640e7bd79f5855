"""The Trainer subclass (arrank.training.trainer): the precision its forward runs in and the N of
eq. 3 that one optimizer step's micro-batches share."""

from __future__ import annotations

import pytest
import torch
from tiny_setup import THREE_QUERIES, ranked_queries_model

from arrank.training import train

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """A StoicalTrainer around the tiny model of three ranked queries, and their items."""
    from arrank.training.trainer import StoicalTrainer

    df, model, tok = ranked_queries_model(THREE_QUERIES, "wordnet")
    items = train.training_items(df, tok, "fractional", alpha=1.0)
    args = train.training_arguments(tmp_path_factory.mktemp("ckpt"), train.profile_hyperparameters("quick"), 0, True)
    return StoicalTrainer(model=model, args=args, train_dataset=[{}]), tok, items


@pytest.mark.parametrize("used, dtype", [("bf16", torch.bfloat16), ("fp32", torch.float32)])
def test_the_forward_runs_in_the_precision_the_run_records(setup, used, dtype):
    """``precision_used`` is what the decoder's layers compute in (bf16: autocast); the loss is float32."""
    trainer, tok, items = setup
    seen = []
    mlp = trainer.model.model.layers[0].mlp
    hook = mlp.register_forward_hook(lambda m, i, out: seen.append(out.dtype))
    trainer.precision_used = used
    try:
        loss = trainer.compute_loss(trainer.model, train.collate(items, tok.pad_token_id))
    finally:
        hook.remove()
        trainer.precision_used = "fp32"
    assert seen == [dtype] and loss.dtype == torch.float32 and torch.isfinite(loss)


def test_the_step_normaliser_counts_every_micro_batch(setup):
    """N of eq. 3 for a step of two accumulated micro-batches: the supervised positions of both, one
    per docID token (EOS included), whatever the micro-batches' sizes."""
    from arrank.training.trainer import step_normaliser

    trainer, tok, items = setup
    micro = [train.collate(items[:2], tok.pad_token_id), train.collate(items[2:5], tok.pad_token_id)]
    n = step_normaliser(trainer, micro, "cpu")
    assert int(n) == sum(len(it["input_ids"]) - it["start"] for it in items[:5])
    assert step_normaliser(trainer, [], "cpu") is None
