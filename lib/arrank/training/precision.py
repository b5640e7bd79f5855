"""Numerical precision of training and scoring: ``precision`` = ``auto`` | ``fp32`` | ``bf16``.

Mixed precision (bf16 autocast for matmuls, frozen base weights held in bf16, trainable weights,
logits and the loss of eq. 2 in float32) and the ``auto`` rule (:func:`resolve_precision`):
docs/design.md, "Training"; speed figures: docs/measurements.md. ``bf16`` where it would be
emulated is refused with a one-line error naming the missing flags.
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

import torch

PRECISIONS = ("auto", "fp32", "bf16")
CPU_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


@dataclass(frozen=True)
class Precision:
    """A resolved ``precision``: what was asked, what is used (``fp32`` or ``bf16``) and why."""

    requested: str
    used: str
    reason: str

    def record(self) -> dict[str, str]:
        """The fields a run records in results.json (``precision_used``, ``precision_reason``)."""
        return {f"precision_{k}": v for k, v in asdict(self).items() if k != "requested"}


def cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> set[str]:
    """The CPU feature flags of the first processor listed in ``cpuinfo`` (empty where unreadable)."""
    try:
        text = Path(cpuinfo).read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags") and ":" in line:
            return set(line.split(":", 1)[1].split())
    return set()


def cpu_model(cpuinfo: str | Path = "/proc/cpuinfo") -> str:
    """The CPU's model name as ``cpuinfo`` gives it (the first ``model name`` line), else the
    platform's processor string, else ``"unknown CPU"``."""
    import platform

    try:
        for line in Path(cpuinfo).read_text().splitlines():
            if line.startswith("model name") and ":" in line:
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def bf16_support(device: str = "cpu", flags: set[str] | None = None) -> tuple[bool, str]:
    """(whether ``device`` runs bf16 matmuls natively, the evidence in words): CPU flags avx512_bf16 or
    amx_bf16 (``flags``, default /proc/cpuinfo) or torch's CPU checks; CUDA without emulation."""
    if device == "cuda":
        if not torch.cuda.is_available():
            return False, "no CUDA GPU"
        name = torch.cuda.get_device_name()
        if torch.cuda.is_bf16_supported(including_emulation=False):
            return True, f"CUDA GPU {name} supports bf16"
        return False, f"CUDA GPU {name} has no native bf16"
    if device != "cpu":
        raise ValueError(f"device={device!r} is not allowed; choose 'cpu' or 'cuda'")
    flags = cpu_flags() if flags is None else flags
    found = [f for f in CPU_BF16_FLAGS if f in flags]
    if not flags:  # no /proc/cpuinfo (not Linux): ask torch
        if torch.cpu._is_amx_tile_supported():
            found = ["amx (torch)"]
        elif torch.cpu._is_avx512_bf16_supported():
            found = ["avx512_bf16 (torch)"]
    if found:
        return True, f"CPU has {' and '.join(found)}"
    return False, f"CPU has neither {' nor '.join(CPU_BF16_FLAGS)} (bf16 would be emulated, slower than fp32)"


# auto keeps fp32 for models narrower than this: the quick profile's tiny Llama (hidden 128)
# trained no faster in bf16 and scored slower (docs/measurements.md, "bf16 and the LM head")
AUTO_MIN_HIDDEN = 512


def resolve_precision(
    requested: str, device: str | None = None, flags: set[str] | None = None, hidden_size: int | None = None
) -> Precision:
    """``auto`` -> bf16 where ``device`` (default: cuda when available) runs it natively and
    ``hidden_size`` (when given) is at least ``AUTO_MIN_HIDDEN``, else fp32; ``fp32`` as asked;
    ``bf16`` as asked where supported, else a ValueError naming why (emulated bf16 is slower)."""
    if requested not in PRECISIONS:
        raise ValueError(f"precision={requested!r} is not allowed; choose one of {list(PRECISIONS)}")
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if requested == "fp32":
        return Precision(requested, "fp32", "asked for fp32")
    ok, why = bf16_support(device, flags)
    if requested == "bf16":
        if not ok:
            raise ValueError(f"precision='bf16' is not supported here: {why}; use precision='auto' or 'fp32'")
        return Precision(requested, "bf16", f"asked for bf16 ({why})")
    if ok and hidden_size is not None and hidden_size < AUTO_MIN_HIDDEN:
        return Precision(
            requested,
            "fp32",
            f"auto: {why}, but the model's hidden size {hidden_size} is below "
            f"{AUTO_MIN_HIDDEN}: its matmuls are too small for bf16 to pay",
        )
    return Precision(requested, "bf16" if ok else "fp32", f"auto: {why}")


def hidden_size(model) -> int | None:
    """The hidden size of a transformers model (peft-wrapped or not), None when it names none."""
    config = getattr(model, "config", None)
    return getattr(config, "hidden_size", None)


def dtype_of(used: str) -> torch.dtype:
    """torch dtype of a resolved precision (``fp32`` or ``bf16``)."""
    if used not in ("fp32", "bf16"):
        raise ValueError(f"precision {used!r} is not resolved; resolve_precision gives 'fp32' or 'bf16'")
    return torch.bfloat16 if used == "bf16" else torch.float32


def autocast(used: str, device_type: str = "cpu") -> contextlib.AbstractContextManager:
    """bf16 autocast for a resolved ``bf16`` (matmuls in bf16, reductions and softmax in fp32, as
    torch's autocast lists them); nothing for ``fp32``."""
    if dtype_of(used) == torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device_type, dtype=torch.bfloat16)


@contextlib.contextmanager
def mixed(model, used: str, device_type: str = "cpu") -> Iterator[None]:
    """:func:`autocast` for a forward of ``model``; under bf16, peft's cast of a LoRA layer's input to
    float32 is switched off, so the adapters' matmuls run in bf16 like the base layers'."""
    with autocast(used, device_type):
        if dtype_of(used) == torch.bfloat16 and _has_peft_layers(model):
            from peft.helpers import disable_input_dtype_casting

            with disable_input_dtype_casting(model):
                yield
        else:
            yield


def _has_peft_layers(model) -> bool:
    """Whether ``model`` holds peft adapter layers (checked without importing peft otherwise)."""
    import sys

    if "peft" not in sys.modules:
        return False
    from peft.tuners.tuners_utils import BaseTunerLayer

    return any(isinstance(m, BaseTunerLayer) for m in model.modules())


def frozen_linears(model) -> list[torch.nn.Linear]:
    """Every ``nn.Linear`` of ``model`` whose parameters are all frozen (the base layers under LoRA),
    except the output embedding and LoRA's own layers (float32 in notebooks 05 and 06 alike)."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    return [
        m
        for name, m in model.named_modules()
        if type(m) is torch.nn.Linear
        and m is not head
        and ".lora_" not in f".{name}"
        and not any(p.requires_grad for p in m.parameters())
    ]


def prepare_model(model, used: str) -> int:
    """Hold the frozen base weights of ``model`` in bf16 for a resolved ``bf16`` (nothing for ``fp32``);
    returns how many weights were cast. Call it after LoRA adapters are added."""
    if dtype_of(used) == torch.float32:
        return 0
    linears = frozen_linears(model)
    for m in linears:
        m.to(torch.bfloat16)
    return sum(m.weight.numel() for m in linears)


def apply_precision(model, requested: str) -> Precision:
    """Resolve ``requested`` for ``model`` (``resolve_precision``), ``prepare_model`` it and say so in
    one line: what notebooks 05 and 06 do before training or scoring."""
    numerics = resolve_precision(requested, hidden_size=hidden_size(model))
    held = prepare_model(model, numerics.used)
    print(f"precision: {numerics.used} ({numerics.reason}); {held:,} frozen weights held in bf16")
    return numerics


@contextlib.contextmanager
def inference(model, used: str) -> Iterator[None]:
    """Scoring (section 5.1) and decoding in a resolved precision: autocast, and the head in float32 at
    every position (``supervised_head.head_at``). A model prepared for bf16 runs only inside it."""
    from arrank.training.supervised_head import head_at

    device = next(model.parameters()).device.type
    with mixed(model, used, device), head_at(model):
        yield
