"""Fine-tuning with the STOICaL loss (section 4, eq. 3; Appendix B; Appendix F): items, targets,
the data collator and the training entry point (its Trainer subclass: ``arrank.training.trainer``).

Items, sampling (``uniform`` | ``weighted``), packing (``auto`` | ``per_query`` | ``none``), the
weight a packed step carries, several processes and resuming: docs/design.md, "Training".
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

import pandas as pd
import torch

from arrank.common import processes
from arrank.common.notices import notice
from arrank.common.outputs import check_resume, record_resume_params
from arrank.common.params import SAMPLINGS, TARGETS, ParamError, choice, items_per_step, lr_schedule, profile_values
from arrank.training import checkpoints as ckpt
from arrank.training.encoding import docid_table, prompt_ids
from arrank.training.packing import (
    collate_packed,
    pack_items,
    prefix_support,
    resolve_packing,
    row_length_for,
    sequence_weights,
)
from arrank.training.precision import dtype_of
from arrank.training.sampling import epoch_seed, epoch_weighted_sampler  # noqa: F401 (part of this module's API)
from arrank.training.shared_prefix import shared_length
from arrank.training.stoical import item_weight, pad_sparse_targets
from arrank.training.trie import one_hot_targets, query_sparse_targets


def training_items(
    df: pd.DataFrame,
    tokenizer,
    scheme: str,
    alpha: float | None = None,
    targets: str = "onehot",
    beta: float | None = None,
    combined: bool = False,
    max_length: int = 1024,
) -> list[dict[str, Any]]:
    """Items of every training query of a dataset table (``arrank.data.wordnet`` columns
    ``query, relevant, prompt, split``): per ranked docID r of a query, its token ids, where the
    docID starts, its sparse targets per step, lambda(r), r and the query; items whose lambda(r) is
    0 (indicator, r > 1) are not made. A prompt + docID longer than ``max_length`` is an error
    naming the query (a docID is never truncated): shorten the prompt template or raise the limit.
    The scheme, alpha and beta are refused, naming the value, by the first item's weight and targets."""
    choice(*TARGETS)("targets", targets)
    if combined and targets != "trie":
        raise ValueError("combined=True (Appendix F) needs targets='trie'")
    train = df[df["split"] == "train"]
    if train.empty:
        raise ValueError("the dataset has no training queries")
    items: list[dict[str, Any]] = []
    for query, relevant, prompt in zip(train["query"], train["relevant"], train["prompt"]):
        if len(relevant) == 0:
            raise ValueError(
                f"query {query!r} has an empty relevant list: every training query needs at least one relevant docID"
            )
        ids = docid_table(tokenizer, relevant)
        p_ids = prompt_ids(tokenizer, prompt)
        longest = len(p_ids) + max(len(v) for v in ids.values())
        if longest > max_length:
            raise ValueError(
                f"query {query!r}: prompt + docID take {longest} tokens > max_length="
                f"{max_length}; use a shorter template or a larger max_length"
            )
        ranked = [ids[d] for d in relevant]
        trie = query_sparse_targets(ranked, beta, combined=combined) if targets == "trie" else None
        for r, docid in enumerate(ranked, start=1):
            weight = item_weight(scheme, r, len(ranked), alpha)
            if weight > 0:
                steps = trie[r - 1] if trie is not None else one_hot_targets(docid)
                item = {"input_ids": p_ids + list(docid), "start": len(p_ids), "targets": steps, "weight": weight}
                items.append({**item, "rank": r, "query": query})
    return items


def collate(
    batch: list[dict[str, Any]], pad_id: int, weighted_sampling: bool = False, share_prefix: bool = False
) -> dict[str, torch.Tensor]:
    """Right-padded ``input_ids``/``attention_mask`` and the padded sparse targets of a batch;
    ``item_weight`` is lambda(r), or 1 under weighted sampling. ``share_prefix``: the common opening
    (each item keeps its last prompt token) leaves the rows as ``prefix_ids`` (1, P)
    (``arrank.training.shared_prefix``), and ``attention_mask`` covers prefix + rows, (B, P + L)."""
    shared = shared_length([b["input_ids"] for b in batch], [b["start"] - 1 for b in batch]) if share_prefix else 0
    rows = [torch.tensor(b["input_ids"][shared:], dtype=torch.long) for b in batch]
    input_ids = torch.nn.utils.rnn.pad_sequence(rows, batch_first=True, padding_value=pad_id)
    seq_len, lengths = input_ids.shape[1], torch.tensor([len(r) for r in rows])
    mask = (torch.arange(shared + seq_len)[None, :] < shared + lengths[:, None]).long()  # prefix + the row's own
    starts = [b["start"] - shared for b in batch]
    target_ids, target_mass = pad_sparse_targets([b["targets"] for b in batch], starts, seq_len)
    out = dict(input_ids=input_ids, attention_mask=mask, target_ids=target_ids, target_mass=target_mass)
    out["item_weight"] = torch.tensor([1.0 if weighted_sampling else b["weight"] for b in batch], dtype=torch.float32)
    if shared:
        out["prefix_ids"] = torch.tensor([list(batch[0]["input_ids"][:shared])], dtype=torch.long)
    return out


def training_arguments(output_dir: Path, profile_args: dict[str, Any], seed: int, use_cpu: bool):
    """transformers TrainingArguments from a run's training hyper-parameters (``hyperparameters``)."""
    from transformers import TrainingArguments

    a = profile_args
    return TrainingArguments(
        output_dir=str(output_dir),
        max_steps=a["steps"],
        per_device_train_batch_size=a["batch_size"],
        gradient_accumulation_steps=a["grad_accum"],
        learning_rate=a["lr"],
        warmup_steps=a["warmup_steps"],
        lr_scheduler_type=SCHEDULES[a.get("lr_schedule", "cosine")],
        weight_decay=a["weight_decay"],
        max_grad_norm=a["max_grad_norm"],
        logging_steps=min(a["logging_steps"], max(1, a["steps"] // 10)),
        save_steps=a["save_steps"],  # every checkpoint kept by the Trainer: checkpoints.commit keeps the newest two
        seed=seed,
        logging_nan_inf_filter=False,  # a NaN loss must reach checkpoints.refuse_non_finite, not be averaged away
        data_seed=seed,
        remove_unused_columns=False,
        use_cpu=use_cpu,
        average_tokens_across_devices=True,  # N of eq. 3 counts every process's positions
        disable_tqdm=False,
    )


# What ``lr_schedule`` names in transformers' scheduler types: both warm up linearly over ``warmup_steps``.
SCHEDULES = {"cosine": "cosine", "constant": "constant_with_warmup"}


# The training hyper-parameters a 05 run reads from its resolved parameters; their values per
# profile (Appendix B for paper) are the notebook's parameter definitions (arrank.common.params).
HYPERPARAMETERS = tuple(
    "optimizer lr warmup_steps weight_decay max_grad_norm steps batch_size grad_accum logging_steps save_steps max_length".split()
)


def adafactor(model, lr: float):
    """Adafactor with beta1 = 0.9, a fixed learning rate (no relative step) and no weight decay
    (Appendix B); the Trainer adds the warm-up + cosine schedule."""
    from transformers.optimization import Adafactor

    params = [p for p in model.parameters() if p.requires_grad]
    return Adafactor(
        params, lr=lr, beta1=0.9, scale_parameter=False, relative_step=False, warmup_init=False, weight_decay=0.0
    )


def resume_point(checkpoints: Path, params: dict[str, Any]) -> int:
    """The step an interrupted run resumes from (0 for a fresh start), after refusing checkpoints
    made with other parameters (``ResumeError``) and setting aside those that fail their manifest
    (``checkpoints.usable_checkpoint``); ``train(record=params)`` records them at a fresh start."""
    check_resume(checkpoints, params)
    found = ckpt.usable_checkpoint(checkpoints, tidy=processes.is_main())
    return 0 if found is None else ckpt.step_of(found)


def packing_layout(packing: str, items: list[dict[str, Any]], model) -> str:
    """The layout ``packing`` gives for these items and this model, ``"per_query"`` or ``"none"``
    (``packing.resolve_packing``), with one warning where it falls back to ``"none"``."""
    layout, warning = resolve_packing(packing, items, model)
    if warning:
        notice(f"packing: {warning}")
    return layout


def packed_batch_size(batch_size: int, items: Sequence[dict[str, Any]], n_sequences: int, weighted: bool) -> int:
    """Packed sequences per step that carry the expected total loss weight of an unpacked step of
    ``batch_size`` items, at least one: batch_size * (mean lambda of an item, or 1 when drawn in
    proportion to lambda) / (mean summed lambda of a sequence)."""
    total = sum(item["weight"] for item in items)
    per_item = 1.0 if weighted else total / len(items)
    return max(1, round(batch_size * per_item * n_sequences / total))


def training_dataset(
    items: list[dict[str, Any]], hyper: dict[str, Any], layout: str, weighted: bool
) -> tuple[list[dict[str, Any]], int, list[float]]:
    """What ``train`` samples from under a resolved ``layout`` (``"per_query"`` or ``"none"``): (the
    items or packed sequences, sequences per device step, the weights a weighted draw uses); a step
    larger than them is refused (``check_step_fits``)."""
    if layout == "per_query":
        dataset = pack_items(items, hyper["max_length"])
        batch = packed_batch_size(hyper["batch_size"], items, len(dataset), weighted)
        built = dataset, batch, sequence_weights(dataset)
    else:
        built = items, hyper["batch_size"], [item["weight"] for item in items]
    check_step_fits(items, hyper, layout, weighted, len(built[0]), built[1])
    return built


def check_step_fits(
    items: list[dict[str, Any]], hyper: dict[str, Any], layout: str, weighted: bool, n: int, batch: int
) -> None:
    """Refuse (``ParamError``) an optimizer step larger than the ``n`` items or packed sequences it draws
    ``batch`` of: an epoch draws each once (weighted sampling: as many draws), shared by the processes
    (``WORLD_SIZE``), and the Trainer ends a step with its epoch, so such a step trains one epoch while
    results.json, ``params.items_per_step`` and notebook 08's curves count ``batch_size * grad_accum``
    items. ``steps = 0`` trains nothing and passes."""
    ga, procs = hyper["grad_accum"], processes.world_size()
    if hyper["steps"] == 0 or batch * ga * procs <= n:
        return
    factors = f"batch_size={hyper['batch_size']} x grad_accum={ga}" + (f" x {procs} processes" if procs > 1 else "")
    total = items_per_step(hyper, procs)
    if layout == "per_query":
        fits, over = 0, hyper["batch_size"]  # the largest batch_size that fits with this grad_accum, by bisection
        while over - fits > 1:
            mid = (fits + over) // 2
            fits, over = (mid, over) if packed_batch_size(mid, items, n, weighted) * ga * procs <= n else (fits, mid)
        packed, unit = f", {batch * ga * procs:,} sequences packed per query", f"sequences ({len(items):,} items)"
        most = n // (packed_batch_size(1, items, n, weighted) * procs)  # grad_accum with batch_size 1
        todo = (
            f"-p batch_size {fits} or less with grad_accum {ga}"
            if fits
            else f"-p batch_size 1 -p grad_accum {most} or less"
        )
    else:
        packed, unit, todo = "", "items", f"-p batch_size B -p grad_accum G with B x G at most {n // procs:,}"
    raise ParamError(
        f"{factors} = {total:,} items a step{packed}, more than the {n:,} training {unit}: each step would "
        f"train those {n:,} (one epoch) while results.json counts {total:,} items; give {todo}"
    )


def train(
    model,
    tokenizer,
    items: list[dict[str, Any]],
    hyper: dict[str, Any],
    checkpoints: Path,
    seed: int = 0,
    sampling: str = "weighted",
    callbacks: list | None = None,
    packing: str = "auto",
    precision: str = "fp32",
    record: dict[str, Any] | None = None,
) -> pd.DataFrame:
    """Train with STOICaL; resume from the newest checkpoint in ``checkpoints`` if there is one. A step
    larger than the training data is refused first (``check_step_fits``); a fresh start then records
    the run's parameters ``record`` beside the checkpoints, so that a resume with others is refused.

    ``packing``: ``"auto"``, ``"per_query"`` or ``"none"`` (``packing_layout``). ``precision``: a
    resolved ``"fp32"`` or ``"bf16"`` (call ``precision.prepare_model`` first). Returns the training
    log (step, loss, learning_rate, grad_norm), empty for ``steps = 0`` (zero-shot). The checkpoints
    folder is removed at the end: the caller saves the final model into its run directory.
    """
    choice(*SAMPLINGS)("sampling", sampling)
    dtype_of(precision)  # a resolved precision: fp32 or bf16
    if not items:
        raise ValueError("no training items")
    if hyper["steps"] == 0:  # zero-shot: the model as loaded (its LoRA adapters are still zero)
        if processes.is_main():  # nothing to resume: an earlier start's folder is not left behind
            ckpt.remove(checkpoints)
        return pd.DataFrame(columns=["step", "loss", "learning_rate", "grad_norm"])
    weighted = sampling == "weighted"
    pad = tokenizer.pad_token_id
    layout = packing_layout(packing, items, model)
    dataset, batch, draw = training_dataset(items, hyper, layout, weighted)  # a step trains at most one epoch
    hyper = {**hyper, "batch_size": batch}
    share, why = prefix_support(model)
    print(f"shared prompt prefix: {'run once per batch' if share else 'off'} ({why})")
    if layout == "per_query":
        scale = sum(draw) / len(draw) if weighted else None
        rows = row_length_for(dataset, hyper["max_length"])
        collator = lambda b: collate_packed(b, pad, scale, rows, share)  # noqa: E731
    else:
        collator = lambda b: collate(b, pad, weighted, share)  # noqa: E731
    if not torch.cuda.is_available():
        # the cores free now, unless OMP_NUM_THREADS says otherwise (a sweep with --jobs N sets
        # cores / N): spinning OpenMP workers collapse beside a busy process (processes.torch_threads)
        threads, why = processes.torch_threads()
        torch.set_num_threads(threads)
        print(f"torch threads: {threads} ({why})")
    args = training_arguments(checkpoints, hyper, seed, use_cpu=not torch.cuda.is_available())
    optimizers = (adafactor(model, hyper["lr"]), None) if hyper["optimizer"] == "adafactor" else (None, None)
    from transformers import ProgressCallback

    from arrank.training.trainer import StoicalTrainer  # imports transformers: on first use

    trainer = StoicalTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        optimizers=optimizers,
        data_collator=collator,
        callbacks=callbacks,
    )
    trainer.sample_weights = draw if weighted else None
    trainer.precision_used = precision
    resume = ckpt.usable_checkpoint(checkpoints, tidy=processes.is_main())
    if resume is None and record is not None and processes.is_main():  # one writes; all resume from it
        record_resume_params(checkpoints, record)
    try:
        trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    finally:  # stopped by an error (a NaN, Ctrl-C): the progress bar ends here, not at the interpreter's exit
        for callback in trainer.callback_handler.callbacks:
            if isinstance(callback, ProgressCallback) and callback.training_bar is not None:
                callback.training_bar.close()
    log = pd.DataFrame([r for r in trainer.state.log_history if "loss" in r])
    trainer.accelerator.wait_for_everyone()  # under several processes: none still writes a checkpoint
    if trainer.is_world_process_zero():
        ckpt.remove(checkpoints)
    return log[[c for c in ("step", "loss", "learning_rate", "grad_norm", "epoch") if c in log.columns]]


def trained_sequences(
    items: list[dict[str, Any]], hyper: dict[str, Any], seed: int, packing: str
) -> tuple[list[dict[str, Any]], list[int]]:
    """What ``train`` with weighted sampling draws in ``hyper['steps']`` steps on one process,
    replayed without training: (the dataset, the indices trained on in order). An epoch is
    ``epoch_weighted_sampler``'s draws cut into batches, a step ``grad_accum`` of them (fewer at an
    epoch's end), as the Trainer does."""
    dataset, batch, draw = training_dataset(items, hyper, packing, True)
    per_step, drawn, steps, epoch = batch * hyper["grad_accum"], [], 0, 0
    while steps < hyper["steps"]:
        sampler = epoch_weighted_sampler(draw, seed)
        sampler.set_epoch(epoch)
        order = list(sampler)
        n = min(math.ceil(len(order) / per_step), hyper["steps"] - steps)  # the epoch's steps, the last one short
        drawn, steps, epoch = drawn + order[: n * per_step], steps + n, epoch + 1
    return dataset, drawn


def queries_seen(
    items: list[dict[str, Any]], hyper: dict[str, Any], seed: int, sampling: str, packing: str
) -> dict[str, int] | None:
    """How much of the training data ``train`` sees (``trained_sequences``): ``sequences`` drawn
    and distinct training ``queries`` among them; None for uniform sampling (the Trainer's shuffle)."""
    if sampling != "weighted":
        return None
    dataset, drawn = trained_sequences(items, hyper, seed, packing)
    return {"sequences": len(drawn), "queries": len({dataset[i]["query"] for i in drawn})}


def shared_opening(model, items: Sequence[dict[str, Any]]) -> int:
    """Tokens of the opening all ``items``' prompts share, which ``train`` runs once per batch
    (``shared_prefix``); 0 where ``model`` does not take it (``packing.prefix_support``) or it is
    shorter than ``shared_prefix.MIN_SHARED``. Notebook 05 records it as ``prefix_shared_tokens``."""
    if not items or not prefix_support(model)[0]:
        return 0
    return shared_length([it["input_ids"] for it in items], [it["start"] - 1 for it in items])


def final_loss(log: pd.DataFrame) -> float | None:
    """The last logged training loss, None when nothing was trained (``steps = 0``)."""
    return float(log["loss"].iloc[-1]) if len(log) else None


def epochs_of(steps: int, batch: int, n_items: int) -> float:
    """How many passes over the items ``steps`` optimizer steps of ``batch`` items make."""
    return steps * batch / max(n_items, 1) if n_items else math.nan


def hyperparameters(params: dict[str, Any]) -> dict[str, Any]:
    """The training hyper-parameters (``HYPERPARAMETERS``) of a 05 run's resolved parameters, or a
    clear error naming those left unresolved."""
    if missing := [k for k in HYPERPARAMETERS if params.get(k) is None]:
        raise ValueError(
            f"training hyper-parameter(s) {missing} are unresolved: resolve the parameters with "
            "arrank.common.params.check_params first"
        )
    return {
        **{k: params[k] for k in HYPERPARAMETERS},
        "lr_schedule": lr_schedule(params.get("lr_schedule", "auto"), params.get("eval_steps")),
    }


def profile_hyperparameters(profile: str) -> dict[str, Any]:
    """The training hyper-parameters notebook 05 takes in ``profile`` (its parameter definitions)."""
    return hyperparameters(profile_values("05_train", profile))


def curves_figure(log: pd.DataFrame, title: str):
    """Training loss and learning rate against the step (plotly, two y axes; the learning rate in
    scientific notation, e.g. 2.0e-03)."""
    import plotly.graph_objects as go

    from arrank.common.display import scientific_axis, style

    fig = go.Figure()
    fig.add_scatter(x=log["step"], y=log["loss"], name="STOICaL loss")
    fig.add_scatter(x=log["step"], y=log["learning_rate"], name="learning rate", yaxis="y2")
    style(fig, title)
    fig.update_layout(
        xaxis_title="optimizer step",
        yaxis_title="loss",
        yaxis2={"title": "learning rate", "overlaying": "y", "side": "right", "rangemode": "tozero"},
        legend={"x": 0.5, "xanchor": "center", "y": 1.0, "yanchor": "bottom", "orientation": "h"},
    )
    return scientific_axis(fig, "yaxis2")
