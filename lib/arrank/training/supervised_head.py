"""The LM head applied only at the positions the loss reads, and always in float32.

STOICaL (section 4, eq. 3) reads the logits of the docID positions only. :func:`head_at` overrides,
for the duration of a ``with`` block, the ``forward`` of the model's output-embedding module, so
the model's own forward (through DDP, accelerate's hooks or peft) returns ``outputs.logits`` of
shape (N, V) for the chosen (row, position) pairs instead of (B, T, V); ``rows=None`` keeps every
position (scoring) and only the float32 rule applies. Float32 with autocast off, because a bf16
logit carries about 3 significant digits that the log-softmax would inherit. A model whose forward
never calls the output-embedding module (Unsloth's fused kernels may not) leaves ``used`` False:
the caller then gets full logits and slices them itself. docs/design.md, "Training".
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator

import torch


@dataclass
class HeadCall:
    """What :func:`head_at` saw: whether the model called its head (``used``) and on how many rows."""

    used: bool = False
    rows: int = 0


def output_head(model) -> torch.nn.Module:
    """The output-embedding module (``lm_head``) of a transformers model, peft-wrapped or not."""
    from accelerate.utils import extract_model_from_parallel

    inner = extract_model_from_parallel(model)  # the model inside a DistributedDataParallel wrapper
    if (head := inner.get_output_embeddings()) is None:
        raise ValueError(f"{type(inner).__name__} has no output embedding (lm_head) to apply")
    return head


def float32_head(head: torch.nn.Module, hidden: torch.Tensor, forward=None) -> torch.Tensor:
    """``head(hidden)`` in float32 with autocast off: a plain ``nn.Linear`` with its weight in float32,
    another module (a LoRA-wrapped head) on float32 input through ``forward`` (default: its class's)."""
    hidden = hidden.float()
    with torch.autocast(device_type=hidden.device.type, enabled=False):
        if type(head) is torch.nn.Linear:
            bias = None if head.bias is None else head.bias.float()
            return torch.nn.functional.linear(hidden, head.weight.float(), bias)
        return (type(head).forward(head, hidden) if forward is None else forward(hidden)).float()


@contextlib.contextmanager
def head_at(model, rows: tuple[torch.Tensor, torch.Tensor] | None = None) -> Iterator[HeadCall]:
    """Within the block, the model's forward applies its head to ``hidden[rows]`` only (``rows`` =
    (row indices, position indices), as ``Tensor.nonzero(as_tuple=True)`` gives), in float32:
    ``outputs.logits`` is (N, V), row n holding the logits at (rows[0][n], rows[1][n]); ``rows=None``:
    every position, (B, T, V). Yields a :class:`HeadCall` that says whether the head was called."""
    head = output_head(model)
    call = HeadCall()
    if rows is not None and (len(rows) != 2 or rows[0].shape != rows[1].shape or rows[0].dim() != 1):
        raise ValueError(
            f"rows must be two 1-D index tensors of equal length (row, position), got {[tuple(r.shape) for r in rows]}"
        )

    def forward(hidden: torch.Tensor) -> torch.Tensor:
        if rows is not None:
            if hidden.dim() != 3:
                raise ValueError(
                    f"head_at: the head got hidden states of shape {tuple(hidden.shape)}, "
                    "expected (batch, positions, hidden): was logits_to_keep passed too?"
                )
            hidden = hidden[rows[0].to(hidden.device), rows[1].to(hidden.device)]
        call.used, call.rows = True, int(hidden.shape[0]) if rows is not None else 0
        return float32_head(head, hidden, previous)

    previous = head.__dict__.get("forward")  # accelerate's hooks set one; kept and restored
    head.forward = forward  # an instance attribute: nn.Module.__call__ calls self.forward
    try:
        yield call
    finally:
        if previous is None:
            del head.forward
        else:
            head.forward = previous
