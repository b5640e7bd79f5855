"""Training with STOICaL on a really trained tiny model: items, collator, loss decrease, resume."""

import importlib.util
import math

import pytest
import torch
from tiny_setup import tiny_model as _tiny

from arrank.common.params import ParamError
from arrank.training import checkpoints, models, train
from arrank.training.tokenizer import train_bpe

pytestmark = pytest.mark.slow  # trains a model or runs notebooks / kernels / sweeps

HYPER = {
    **train.profile_hyperparameters("quick"),
    "steps": 20,
    "batch_size": 16,
    "warmup_steps": 2,
    "lr": 1e-2,
    "logging_steps": 2,
    "save_steps": 100,
}


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
    # trie targets (section 4.2) follow each item's own docID: one step per token, each giving it mass
    coarse = train_bpe(texts, 80)  # a BPE of 80 tokens splits docIDs (the tiny one keeps most whole)
    for i in train.training_items(df, coarse, "fractional", alpha=1.0, targets="trie", beta=1.0):
        path = i["input_ids"][i["start"] :]
        assert len(i["targets"]) == len(path) and all(dict(y).get(t, 0) > 0 for y, t in zip(i["targets"], path))


def test_collate_masks_the_prompt(data):
    df, texts = data
    model, tok = _tiny(texts)
    items = train.training_items(df, tok, "fractional", alpha=1.0, targets="trie", beta=2.0)[:5]
    batch = train.collate(items, tok.pad_token_id)
    for b, item in enumerate(items):
        supervised = batch["target_mass"][b].sum(-1)
        assert torch.allclose(supervised[item["start"] : len(item["input_ids"])], torch.ones(len(item["targets"])))
        assert supervised[: item["start"]].sum() == 0 and supervised[len(item["input_ids"]) :].sum() == 0
    assert batch["attention_mask"].sum(1).tolist() == [len(i["input_ids"]) for i in items]  # no pad attended
    assert torch.allclose(batch["item_weight"], torch.tensor([i["weight"] for i in items]))
    assert torch.all(train.collate(items, tok.pad_token_id, weighted_sampling=True)["item_weight"] == 1)
    one = [i for i in items if i["query"] == items[-1]["query"]]  # one query's items share its whole prompt
    assert len(one) > 1 and train.shared_opening(model, one) == one[0]["start"] - 1 >= 8  # its last token kept
    model.gradient_checkpointing_enable()  # no decoder cache: the opening is not run once, none recorded
    assert train.shared_opening(model, one) == 0


def test_twenty_steps_lower_the_loss(data, tmp_path):
    df, texts = data
    model, tok = _tiny(texts)
    items = train.training_items(df, tok, "indicator")
    log = train.train(model, tok, items, HYPER, tmp_path / "ckpt", seed=0)
    assert log["step"].iloc[-1] == 20
    assert log["loss"].iloc[-1] < 0.8 * log["loss"].iloc[0]
    assert not (tmp_path / "ckpt").exists()  # checkpoints are removed once training finished


@pytest.mark.parametrize("packing", ["none", "per_query"])
def test_queries_seen_replays_what_training_draws(data, tmp_path, monkeypatch, packing):
    """``trained_sequences`` replays, in order, the sequences of the batches the Trainer really
    collates (recorded by wrapping the collators), packed or not, across an epoch's short last
    batch; the Trainer may collate one batch more than it trains on (accelerate's look-ahead)."""
    df, texts = data
    model, tok = _tiny(texts)
    items = train.training_items(df, tok, "fractional", alpha=1.0)
    seen, scales = [], set()
    for name in ("collate", "collate_packed"):
        real = getattr(train, name)
        monkeypatch.setattr(
            train,
            name,
            lambda b, *a, _real=real, **k: (seen.extend(x["query"] for x in b), scales.add(a[1]), _real(b, *a, **k))[2],
        )
    n_sequences = len(train.pack_items(items, HYPER["max_length"])) if packing == "per_query" else len(items)
    batch = train.packed_batch_size(16, items, n_sequences, True) if packing == "per_query" else 16
    hyper = {**HYPER, "steps": n_sequences // batch + 2}  # into the second epoch
    train.train(model, tok, items, hyper, tmp_path / "ckpt", seed=3, packing=packing)
    dataset, drawn = train.trained_sequences(items, hyper, 3, packing)
    assert [dataset[i]["query"] for i in drawn] == seen[: len(drawn)] and len(seen) - len(drawn) in (0, batch)
    assert n_sequences < len(drawn) < hyper["steps"] * batch  # an epoch ended with a short batch
    counted = train.queries_seen(items, hyper, 3, "weighted", packing)
    assert counted == {"sequences": len(drawn), "queries": len(set(seen[: len(drawn)]))}
    assert train.queries_seen(items, hyper, 3, "uniform", packing) is None
    if packing == "per_query":  # weighted draws: block weights are scaled by c, the mean summed lambda of a sequence
        assert list(scales) == [pytest.approx(sum(i["weight"] for i in items) / n_sequences)]


def test_a_step_larger_than_the_training_data_is_refused_naming_what_fits():
    """An epoch draws each item (packed: each query's sequence) once and a step ends with it, so a
    step of more items than that would train one epoch while results.json counts batch_size x
    grad_accum: refused before training, naming both, their product, what there is and what fits."""
    items = [
        {"input_ids": [10 + q, 1, 2, 3], "start": 3, "targets": [[(3, 1.0)]], "weight": 1 / r**2, "rank": r, "query": q}
        for q in range(4)
        for r in (1, 2, 3)
    ]  # 4 queries x 3 ranks: 12 items, 4 packed sequences
    hyper = {"steps": 10, "batch_size": 4, "grad_accum": 3, "max_length": 64}
    train.training_dataset(items, hyper, "none", True)  # 12 items a step: one epoch, as recorded
    with pytest.raises(
        ParamError,
        match=r"^batch_size=5 x grad_accum=3 = 15 items a step, more than the 12 training items: each step "
        r"would train those 12 \(one epoch\) while results.json counts 15 items; give -p batch_size B -p grad_accum G with B x G at most 12$",
    ):
        train.training_dataset(items, {**hyper, "batch_size": 5}, "none", True)
    packed = {**hyper, "grad_accum": 1, "batch_size": 6}  # weighted: round(6 x 4 / sum of lambda 5.44) = 4 sequences
    assert train.packed_batch_size(8, items, 4, True) == 6  # 8 x 4 / 5.44 = 5.88, rounded
    assert [train.packed_batch_size(b, items, 4, False) for b in (1, 5)] == [1, 2]  # b x mean lambda x 4 / 5.44 = b / 3
    train.training_dataset(items, packed, "per_query", True)
    with pytest.raises(ParamError, match=r"= 7 items a step, 5 sequences packed per query, more than the 4 training "
                       r"sequences \(12 items\): .* give -p batch_size 6 or less with grad_accum 1$"):  # fmt: skip
        train.training_dataset(items, {**packed, "batch_size": 7}, "per_query", True)
    with pytest.raises(ParamError, match=r"give -p batch_size 1 -p grad_accum 4 or less$"):
        train.training_dataset(items, {**packed, "grad_accum": 5}, "per_query", True)
    train.training_dataset(items, {**hyper, "batch_size": 4096, "steps": 0}, "none", True)  # zero-shot trains nothing


def test_train_refuses_a_step_larger_than_the_data_and_leaves_no_checkpoints_folder(data, tmp_path):
    """``train`` itself refuses such a step (``check_step_fits``), before the Trainer starts and before
    it records the run's parameters: no checkpoints folder is made."""
    df, texts = data
    model, tok = _tiny(texts)
    items = train.training_items(df, tok, "indicator")
    hyper = {**HYPER, "batch_size": len(items) + 1, "grad_accum": 1}
    assert train.resume_point(tmp_path / "ckpt", {"steps": 20}) == 0
    with pytest.raises(ParamError, match=rf"^batch_size={len(items) + 1} x grad_accum=1 = .* \(one epoch\)"):
        train.train(model, tok, items, hyper, tmp_path / "ckpt", packing="none", record={"steps": 20})
    assert not (tmp_path / "ckpt").exists()


def test_train_refuses_bad_arguments_and_zero_steps_train_nothing(tmp_path):
    """A sampling, a precision or an empty item list ``train`` cannot take is refused naming it, before
    any model or folder is touched; ``steps = 0`` returns an empty log and removes an earlier start's
    checkpoints (nothing to resume)."""
    ckpt, item = tmp_path / "ckpt", {"input_ids": [5, 1, 2], "start": 1, "targets": [[(1, 1.0)], [(2, 1.0)]]}
    for kw, match in [({"sampling": "bogus"}, "bogus"), ({"precision": "fp16"}, "fp16")]:
        with pytest.raises(ValueError, match=match):
            train.train(None, None, [item], HYPER, ckpt, **kw)
    with pytest.raises(ValueError, match="no training items"):
        train.train(None, None, [], HYPER, ckpt)
    assert not ckpt.exists()
    (ckpt / "checkpoint-5").mkdir(parents=True)
    log = train.train(None, None, [item], {**HYPER, "steps": 0}, ckpt)
    assert log.empty and list(log.columns) == ["step", "loss", "learning_rate", "grad_norm"] and not ckpt.exists()


def test_every_hyper_parameter_reaches_the_trainer(tmp_path):
    """``training_arguments`` hands each training hyper-parameter to the Trainer, and the run's seed
    to both its model seed and its data order (uniform sampling's shuffle)."""
    hyper = {
        **HYPER, "lr": 3e-4, "warmup_steps": 7, "weight_decay": 0.05, "max_grad_norm": 0.3, "steps": 90,
        "batch_size": 5, "grad_accum": 4, "logging_steps": 6, "save_steps": 30, "lr_schedule": "constant",
    }  # fmt: skip
    a = train.training_arguments(tmp_path, hyper, seed=11, use_cpu=True)
    got = (a.learning_rate, a.warmup_steps, a.weight_decay, a.max_grad_norm, a.max_steps)
    assert got == (3e-4, 7, 0.05, 0.3, 90) and (a.per_device_train_batch_size, a.gradient_accumulation_steps) == (5, 4)
    assert (a.logging_steps, a.save_steps, a.seed, a.data_seed) == (6, 30, 11, 11)
    assert a.lr_scheduler_type.value == "constant_with_warmup" and a.output_dir == str(tmp_path)


def test_adafactor_is_appendix_b(tmp_path):
    """Adafactor of Appendix B: beta1 = 0.9, the given fixed learning rate, no relative step or
    parameter scaling, no weight decay, over the trainable parameters only."""
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Linear(3, 1))
    model[0].weight.requires_grad_(False)
    opt = train.adafactor(model, 2e-3)
    assert {k: opt.defaults[k] for k in ("lr", "beta1", "relative_step", "scale_parameter", "warmup_init")} == {
        "lr": 2e-3, "beta1": 0.9, "relative_step": False, "scale_parameter": False, "warmup_init": False,
    }  # fmt: skip
    assert opt.defaults["weight_decay"] == 0.0 and sum(len(g["params"]) for g in opt.param_groups) == 3


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
    assert checkpoints.checkpoints(tmp_path / "ckpt")[-1].name == "checkpoint-5"

    class Count(TrainerCallback):
        steps: list[int] = []

        def on_step_end(self, args, state, control, **kw):
            self.steps.append(state.global_step)

    model, tok = _tiny(texts)
    log = train.train(model, tok, items, hyper, tmp_path / "ckpt", callbacks=[Count()])
    assert Count.steps == [6, 7, 8, 9, 10]  # resumed after the step-5 checkpoint, not from scratch
    # 10 steps log every step (logging_steps is capped at steps // 10): one log, restored part included
    assert list(log["step"]) == list(range(1, 11))


class _StopAt:
    """A callback that kills training (KeyboardInterrupt, as Ctrl-C does) after step ``n``."""

    def __new__(cls, n):
        from transformers import TrainerCallback

        class Stop(TrainerCallback):
            def on_step_end(self, args, state, control, **kw):
                if state.global_step == n:
                    raise KeyboardInterrupt(f"simulated kill after step {n}")

        return Stop()


def _weights(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_kill_and_resume_trains_exactly_the_uninterrupted_run(data, tmp_path):
    """Interrupted after the step-15 checkpoint (in the second epoch: 206 items,
    16 a step) and resumed, the run has the same log, weights and held-out metrics as one that
    was never interrupted. Before the fix the weighted sampler replayed epoch 0's order on
    resume, and losses differed from step 16 on."""
    from arrank.data import ranking
    from arrank.evaluation import evaluate

    df, texts = data
    hyper = {**HYPER, "steps": 20, "save_steps": 15, "logging_steps": 1}
    params = {"run_name": "r", "scheme": "indicator", "seed": 0}

    model, tok = _tiny(texts)
    items = train.training_items(df, tok, "indicator")
    assert len(items) == 206  # 13 steps an epoch: the checkpoint lies in epoch 1
    full_log = train.train(model, tok, items, hyper, tmp_path / "full", seed=0, sampling="weighted")
    full = _weights(model)

    ckpt = tmp_path / "ckpt"
    assert train.resume_point(ckpt, params) == 0
    killed, _ = _tiny(texts)
    with pytest.raises(KeyboardInterrupt, match="after step 17"):
        train.train(
            killed, tok, items, hyper, ckpt, seed=0, sampling="weighted", callbacks=[_StopAt(17)], record=params
        )
    assert train.resume_point(ckpt, params) == 15  # the real resume path: a fresh model, the checkpoint
    resumed, _ = _tiny(texts)
    log = train.train(resumed, tok, items, hyper, ckpt, seed=0, sampling="weighted")

    assert list(log["step"]) == list(range(1, 21))
    for column in ("loss", "learning_rate", "grad_norm"):
        assert log[column].tolist() == full_log[column].tolist(), column
    after = _weights(resumed)
    assert after.keys() == full.keys() and all(torch.equal(after[k], full[k]) for k in full)
    ks = ranking.ks_for("wordnet")
    assert (
        evaluate.evaluate_held_out(resumed, tok, df, ks=ks, progress=False)[0]
        == evaluate.evaluate_held_out(model, tok, df, ks=ks, progress=False)[0]
    )


def test_each_epoch_of_weighted_sampling_depends_only_on_seed_and_epoch():
    sampler = train.epoch_weighted_sampler([1.0, 2.0, 3.0, 4.0] * 5, seed=7)
    epoch0, again = list(sampler), list(sampler)
    assert epoch0 != again  # without set_epoch the generator runs on (as within one process)
    sampler.set_epoch(1)
    epoch1 = list(sampler)
    fresh = train.epoch_weighted_sampler([1.0, 2.0, 3.0, 4.0] * 5, seed=7)
    fresh.set_epoch(1)
    assert list(fresh) == epoch1 != epoch0  # a sampler built on resume continues at epoch 1
    fresh.set_epoch(0)
    assert list(fresh) == epoch0
    seeds = {train.epoch_seed(s, e) for s in range(50) for e in range(50)}
    assert len(seeds) == 2500 and max(seeds) < 2**32 and train.epoch_seed(7, 0) == 7


def test_resuming_with_other_parameters_is_refused_and_destroys_nothing(data, tmp_path):
    """Checkpoints of an interrupted run keep its parameters; a resume with
    others is refused with the differences listed and the ways out; the checkpoints stay."""
    from arrank.common.outputs import ResumeError

    df, texts = data
    hyper = {**HYPER, "steps": 10, "save_steps": 5}
    before = {"run_name": "r", "scheme": "indicator", "alpha": 2.0, "lr": None, "seed": 0}
    ckpt = tmp_path / "ckpt"
    assert train.resume_point(ckpt, before) == 0
    model, tok = _tiny(texts)
    items = train.training_items(df, tok, "indicator")
    with pytest.raises(KeyboardInterrupt):
        train.train(model, tok, items, hyper, ckpt, callbacks=[_StopAt(7)], record=before)
    after = {**before, "scheme": "fractional", "alpha": 3.0, "lr": 1e-4}
    with pytest.raises(ResumeError) as err:
        train.resume_point(ckpt, after)
    message = str(err.value)
    assert "alpha was 2.0, now 3.0, lr was None, now 0.0001, scheme was 'indicator', now 'fractional'" in message
    assert "(step 5)" in message and "another run_name" in message and f"delete {ckpt}" in message
    assert checkpoints.checkpoints(ckpt)[-1].name == "checkpoint-5"  # nothing destroyed
    assert train.resume_point(ckpt, {**before, "run_name": "same-params"}) == 5  # same parameters: resumes
    (ckpt / "params.json").unlink()  # checkpoints whose parameters were never recorded cannot be trusted
    with pytest.raises(ResumeError, match="<parameters> was 'not recorded'"):
        train.resume_point(ckpt, before)


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
    empty = df.copy()
    empty.at[empty.index[empty["split"] == "train"][0], "relevant"] = []
    with pytest.raises(ValueError, match=r"has an empty relevant list"):
        train.training_items(empty, tok, "indicator")
    # max_length bounds prompt + the query's LONGEST docID: that length passes, one token less is refused
    coarse = train_bpe(texts, 80)  # docIDs of several lengths
    one = df[df["split"] == "train"].iloc[[1]]
    lengths = [len(i["input_ids"]) for i in train.training_items(one, coarse, "fractional", alpha=1.0)]
    longest = max(lengths)
    assert min(lengths) < longest and len(
        train.training_items(one, coarse, "fractional", alpha=1.0, max_length=longest)
    )
    with pytest.raises(ValueError, match=rf"take {longest} tokens > max_length={longest - 1};"):
        train.training_items(one, coarse, "fractional", alpha=1.0, max_length=longest - 1)


def test_unsloth_without_cuda_fails_at_once():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(RuntimeError, match="needs an NVIDIA GPU"):
        models.resolve_backend("unsloth")
    assert models.resolve_backend("auto") == "transformers"
    with pytest.raises(ValueError, match="backend='jax'"):
        models.resolve_backend("jax")


def test_unsloth_cpu_fallback_is_an_explicit_opt_in(monkeypatch):
    """UNSLOTH_FORCE_CPU=1 lets backend='unsloth' past the CUDA check (then it needs unsloth
    itself); 'auto' never picks Unsloth on a CPU."""
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    monkeypatch.setenv("UNSLOTH_FORCE_CPU", "1")
    assert models.unsloth_cpu_opt_in() and models.resolve_backend("auto") == "transformers"
    real = importlib.util.find_spec
    with monkeypatch.context() as m:  # even where unsloth is installed, 'auto' takes it only with CUDA
        m.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "unsloth" else real(name, *a))
        assert models.resolve_backend("auto") == "transformers"
    if importlib.util.find_spec("unsloth") is None:
        with pytest.raises(RuntimeError, match="unsloth is not installed"):
            models.resolve_backend("unsloth")
    else:
        assert models.resolve_backend("unsloth") == "unsloth"
    monkeypatch.setenv("UNSLOTH_FORCE_CPU", "0")
    assert not models.unsloth_cpu_opt_in()
    with pytest.raises(RuntimeError, match="needs an NVIDIA GPU"):
        models.resolve_backend("unsloth")


def test_training_curves_show_the_learning_rate_in_scientific_notation():
    import pandas as pd

    log = pd.DataFrame({"step": [10, 20, 30], "loss": [3.0, 2.0, 1.5], "learning_rate": [2e-3, 1e-3, 2.9e-5]})
    fig = train.curves_figure(log, "Training: Fractional α=2")
    assert fig.layout.yaxis2.tickformat == ".1e" and fig.layout.yaxis2.exponentformat == "e"
    assert fig.layout.yaxis2.rangemode == "tozero" and list(fig.data[1].y) == [2e-3, 1e-3, 2.9e-5]
    assert fig.layout.title.text == "Training: Fractional α=2"
    assert train.final_loss(log) == 1.5 and train.final_loss(log.iloc[:0]) is None  # the last logged loss
    assert train.epochs_of(20, 16, 206) == 20 * 16 / 206 and math.isnan(train.epochs_of(20, 16, 0))
