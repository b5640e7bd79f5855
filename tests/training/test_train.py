"""Training with STOICaL on a really trained tiny model: items, collator, loss decrease, resume."""

import pytest
import torch

from arrank.training import models, train
from arrank.data import wordnet as W

HYPER = {**train.HYPERPARAMETERS["quick"], "steps": 20, "batch_size": 16, "warmup_steps": 2, "lr": 1e-2,
         "logging_steps": 2, "save_steps": 100}


@pytest.fixture(scope="module")
def data():
    df = W.build_wordnet_dataset(subtree="canine.n.02", min_relevant=1, n_eval=10,
                                 template="wordnet_short", cache=False)
    texts = list(df["prompt"]) + sorted({d for r in df["relevant"] for d in r})
    return df, texts


def _tiny(texts, seed=0):
    torch.manual_seed(seed)
    return models.tiny_model_and_tokenizer(texts, vocab_size=400, hidden=32, layers=1, heads=2,
                                           intermediate=64, seed=seed, cache=False)


def test_items_per_scheme(data):
    df, texts = data
    _, tok = _tiny(texts)
    n_train = int((df["split"] == "train").sum())
    top1 = train.training_items(df, tok, "indicator")
    every = train.training_items(df, tok, "fractional", alpha=2.0)
    assert len(top1) == n_train and {i["rank"] for i in top1} == {1}
    assert len(every) == int(df.loc[df["split"] == "train", "n_relevant"].sum())
    assert sorted({round(i["weight"], 6) for i in every})[-1] == 1.0
    assert all(abs(i["weight"] - 1 / i["rank"] ** 2) < 1e-12 for i in every)
    step = train.training_items(df, tok, "stepwise")
    assert all(i["start"] + len(i["targets"]) == len(i["input_ids"]) for i in step)


def test_collate_masks_the_prompt(data):
    df, texts = data
    _, tok = _tiny(texts)
    items = train.training_items(df, tok, "fractional", alpha=1.0, targets="trie", beta=2.0)[:5]
    batch = train.collate(items, tok.pad_token_id)
    for b, item in enumerate(items):
        supervised = batch["target_mass"][b].sum(-1)
        assert torch.allclose(supervised[item["start"]:len(item["input_ids"])], torch.ones(len(item["targets"])))
        assert supervised[:item["start"]].sum() == 0 and supervised[len(item["input_ids"]):].sum() == 0
    assert torch.allclose(batch["item_weight"], torch.tensor([i["weight"] for i in items]))
    assert torch.all(train.collate(items, tok.pad_token_id, weighted_sampling=True)["item_weight"] == 1)


def test_twenty_steps_lower_the_loss(data, tmp_path):
    df, texts = data
    model, tok = _tiny(texts)
    items = train.training_items(df, tok, "indicator")
    log = train.train(model, tok, items, HYPER, tmp_path / "ckpt", seed=0)
    assert log["step"].iloc[-1] == 20
    assert log["loss"].iloc[-1] < 0.8 * log["loss"].iloc[0]
    assert not (tmp_path / "ckpt").exists()  # checkpoints are removed once training finished


def test_interrupted_run_resumes_from_its_checkpoint(data, tmp_path):
    from transformers import TrainerCallback

    class Stop(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if state.global_step == 7:
                raise KeyboardInterrupt("simulated interruption")

    df, texts = data
    hyper = {**HYPER, "steps": 10, "save_steps": 5}
    model, tok = _tiny(texts)
    items = train.training_items(df, tok, "indicator")
    with pytest.raises(KeyboardInterrupt):
        train.train(model, tok, items, hyper, tmp_path / "ckpt", callbacks=[Stop()])
    assert train.last_checkpoint(tmp_path / "ckpt").endswith("checkpoint-5")
    class Count(TrainerCallback):
        steps: list[int] = []

        def on_step_end(self, args, state, control, **kw):
            self.steps.append(state.global_step)

    model, tok = _tiny(texts)
    log = train.train(model, tok, items, hyper, tmp_path / "ckpt", callbacks=[Count()])
    assert Count.steps == [6, 7, 8, 9, 10]  # resumed after the step-5 checkpoint, not from scratch
    # 10 steps log every step (logging_steps is capped at steps // 10): one log, restored part included
    assert list(log["step"]) == list(range(1, 11))


def test_bad_variants_are_refused(data):
    df, texts = data
    _, tok = _tiny(texts)
    with pytest.raises(ValueError, match="unknown|not allowed|scheme"):
        train.training_items(df, tok, "exponential")
    with pytest.raises(ValueError, match="alpha"):
        train.training_items(df, tok, "fractional", alpha=-1.0)
    with pytest.raises(ValueError, match="beta=-1"):
        train.training_items(df, tok, "indicator", targets="trie", beta=-1.0)
    with pytest.raises(ValueError, match="max_length=8"):
        train.training_items(df, tok, "indicator", max_length=8)
    with pytest.raises(ValueError, match="combined"):
        train.training_items(df, tok, "indicator", combined=True)


def test_unsloth_without_cuda_fails_at_once():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(RuntimeError, match="needs an NVIDIA GPU"):
        models.resolve_backend("unsloth")
    assert models.resolve_backend("auto") == "transformers"
    with pytest.raises(ValueError, match="backend='jax'"):
        models.resolve_backend("jax")
