"""The Trainer subclass of STOICaL training (section 4, eq. 3), for both backends: its loss, its
step normaliser, its weighted sampler and its guarded checkpoints. ``arrank.training.train``
imports it on first use: importing transformers is the slow part of importing this module."""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import Trainer

from arrank.training import checkpoints as ckpt
from arrank.training.packing import model_mask
from arrank.training.precision import mixed
from arrank.training.sampling import epoch_weighted_sampler
from arrank.training.shared_prefix import prefix_cache
from arrank.training.stoical import stoical_loss, stoical_loss_at, supervised_count, supervised_positions
from arrank.training.supervised_head import head_at


class StoicalTrainer(ckpt.GuardedCheckpoints, Trainer):
    """transformers.Trainer whose loss is STOICaL (eq. 3), for both backends; its checkpoints
    are transactions and a non-finite loss or gradient norm stops it (``checkpoints``).

    The model is called without labels and the loss computed from its logits (Unsloth: set
    UNSLOTH_RETURN_LOGITS=1). ``sample_weights`` switches to weighted item sampling. A packed batch
    brings ``allowed`` (handed over as ``packing.model_mask``) and ``position_ids``; a batch with
    ``prefix_ids`` runs that prefix once (``shared_prefix.prefix_cache``). The LM head runs at the
    supervised positions only, in float32 (``supervised_head.head_at``), the rest under ``precision_used``.
    """

    sample_weights: list[float] | None = None
    precision_used: str = "fp32"  # arrank.training.precision: "fp32" or "bf16" (autocast)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # compute_loss takes num_items_in_batch (the Trainer then leaves the loss of an
        # accumulated micro-batch undivided: the step's normaliser already covers them all)
        self.model_accepts_loss_kwargs = True

    def _get_num_items_in_batch(self, batch_samples, device):
        """N of eq. 3's normaliser for one optimizer step (``step_normaliser``)."""
        return step_normaliser(self, batch_samples, device)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        target_ids, target_mass, weights = (inputs.pop(k) for k in ("target_ids", "target_mass", "item_weight"))
        inner = self.accelerator.unwrap_model(model)  # DDP's wrapper has no config to read
        if "allowed" in inputs:
            kwargs = {"position_ids": inputs["position_ids"], "attention_mask": model_mask(inner, inputs["allowed"])}
        else:
            kwargs = {"attention_mask": inputs["attention_mask"]}
        prefix = inputs.pop("prefix_ids", None)  # the batch's shared opening (shared_prefix), run once
        rows = supervised_positions(target_mass)  # the logits eq. 3 reads: the head runs there only
        with mixed(inner, self.precision_used, inputs["input_ids"].device.type):
            if prefix is not None:  # through the unwrapped model: under DDP the gradient hooks sit on the parameters
                kwargs.update(past_key_values=prefix_cache(inner, prefix, inputs["input_ids"].shape[0]), use_cache=True)
            with head_at(inner, rows) as head:
                outputs = model(input_ids=inputs["input_ids"], **kwargs)
        # the supervised positions' logits, or full logits from a forward that bypasses the head module (Unsloth)
        loss_of = stoical_loss_at if head.used else stoical_loss
        loss = loss_of(outputs.logits, target_ids, target_mass, weights, num_items_in_batch)
        if num_items_in_batch is not None and self.args.average_tokens_across_devices:
            # DDP averages the processes' gradients; N counts every process's positions, so
            # the mean of W * (this process's sum / N) is the whole step's sum / N
            loss = loss * self.accelerator.num_processes
        return (loss, outputs) if return_outputs else loss

    def _load_optimizer_and_scheduler(self, checkpoint):
        """On resume under several CPU processes (gloo), load the optimizer state onto the CPU
        (transformers maps it onto ``cpu:0``, which ``torch.load`` does not know); else the Trainer's own."""
        files = [Path(checkpoint or "") / name for name in ("optimizer.pt", "scheduler.pt")]
        one = self.args.device.type != "cpu" or self.args.world_size == 1  # not several CPU processes
        if one or not checkpoint or not all(f.is_file() for f in files):
            return super()._load_optimizer_and_scheduler(checkpoint)
        self.optimizer.load_state_dict(torch.load(files[0], map_location="cpu", weights_only=True))
        self.lr_scheduler.load_state_dict(torch.load(files[1], weights_only=True))

    def _get_train_sampler(self, train_dataset=None):
        if self.sample_weights is None:
            return super()._get_train_sampler(train_dataset)
        return epoch_weighted_sampler(self.sample_weights, self.args.seed)


def step_normaliser(trainer, batch_samples: list[dict[str, torch.Tensor]], device) -> torch.Tensor | None:
    """The N that divides one optimizer step's summed STOICaL loss (eq. 3): the supervised positions
    of every micro-batch the step accumulates, summed over all processes when
    ``average_tokens_across_devices`` is on (docs/scale-out.md)."""
    if not batch_samples or "target_mass" not in batch_samples[0]:
        return None
    count = torch.tensor(sum(supervised_count(b["target_mass"]) for b in batch_samples), device=device)
    if trainer.args.average_tokens_across_devices and trainer.args.world_size > 1:
        count = trainer.accelerator.gather(count).sum()
    return count
