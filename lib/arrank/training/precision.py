"""Numerical precision of training and scoring: ``precision`` = ``auto`` | ``fp32`` | ``bf16``.

Mixed precision (bf16 autocast for matmuls, frozen base weights held in bf16, trainable weights,
logits and the loss of eq. 3 in float32) and the ``auto`` rule (:func:`resolve_precision`; on a CPU
a short timing of the model's own matmul shapes in both precisions, :func:`probe_matmuls`, kept per
machine by :func:`cpu_probe`): docs/design.md, "Training"; speed figures: docs/measurements.md.
``bf16`` where it would be emulated is refused with a one-line error naming the missing flags.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

import torch

from arrank.common.params import PRECISIONS, choice

CPU_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


@dataclass(frozen=True)
class Precision:
    """A resolved ``precision``: what was asked, what is used (``fp32`` or ``bf16``), why, and the
    CPU probe's figures where ``auto`` timed the matmuls (:func:`cpu_probe`)."""

    requested: str
    used: str
    reason: str
    probe: dict[str, Any] | None = None

    def record(self) -> dict[str, Any]:
        """The fields a run records in results.json: ``precision_used``, ``precision_reason`` and,
        where a probe decided, ``precision_probe_<figure>`` (its shapes, threads, best fp32 and bf16
        milliseconds, bf16's speed-up, whether it was read from the cache)."""
        probe = {f"precision_probe_{key}": self.probe[key] for key in PROBE_RECORD} if self.probe else {}
        return {"precision_used": self.used, "precision_reason": self.reason, **probe}


PROBE_RECORD = ("shapes", "threads", "fp32_ms", "bf16_ms", "bf16_speedup", "cached")


def cpu_capabilities() -> Mapping[str, Any]:
    """The CPU's features and name as torch detects them (``torch.cpu.get_capabilities``, torch >= 2.12);
    empty on an older torch (the GPU machines' image has 2.11), where no CPU bf16 is assumed."""
    get = getattr(torch.cpu, "get_capabilities", None)
    return get() if get is not None else {}


def cpu_model() -> str:
    """The CPU's model name as torch reads it (:func:`cpu_capabilities`), else the platform's
    processor string, else ``"unknown CPU"``."""
    import platform

    return cpu_capabilities().get("cpu_name") or platform.processor() or "unknown CPU"


def cpu_bf16_flags() -> list[str]:
    """The flags of ``CPU_BF16_FLAGS`` the CPU has (:func:`cpu_capabilities`)."""
    return [f for f in CPU_BF16_FLAGS if cpu_capabilities().get(f)]


def bf16_support(device: str = "cpu") -> tuple[bool, str]:
    """(whether ``device`` runs bf16 matmuls natively, the evidence in words): CPU flags avx512_bf16 or
    amx_bf16 (:func:`cpu_bf16_flags`); CUDA without emulation."""
    if device == "cuda":
        if not torch.cuda.is_available():
            return False, "no CUDA GPU"
        ok = torch.cuda.is_bf16_supported(including_emulation=False)
        return ok, f"CUDA GPU {torch.cuda.get_device_name()} {'supports bf16' if ok else 'has no native bf16'}"
    if device != "cpu":
        raise ValueError(f"device={device!r} is not allowed; choose 'cpu' or 'cuda'")
    if found := cpu_bf16_flags():
        return True, f"CPU has {' and '.join(found)}"
    return False, f"CPU has neither {' nor '.join(CPU_BF16_FLAGS)} (bf16 would be emulated, slower than fp32)"


# auto keeps fp32 for models narrower than this: the quick profile's tiny Llama (hidden 128)
# trained no faster in bf16 and scored slower (docs/measurements.md, "bf16 and the LM head")
AUTO_MIN_HIDDEN = 512

# the CPU probe: bf16 must run the model's matmuls at least this much faster than fp32 for auto to
# pick it (a CPU's bf16 flag alone misleads: docs/design.md, "Training")
PROBE_MIN_SPEEDUP = 1.1
PROBE_TOKENS = 128  # rows of the probe's matmuls: a scoring pass's tokens, a quarter of a training row's
PROBE_FLOPS = 5e8  # at most this many FLOPs a shape: fewer rows for wide models, so it stays short
PROBE_REPS = 5
PROBE_CACHE = "precision_probe.json"  # under paths.CACHE, one entry per probe_key


def probe_shapes(hidden: int, intermediate: int | None = None) -> list[tuple[int, int, int]]:
    """The (rows, in, out) matmuls the CPU probe times: a decoder MLP's up and down projections,
    hidden x intermediate and back (hidden x hidden where the model names no intermediate size),
    with ``PROBE_TOKENS`` rows or fewer to keep each under ``PROBE_FLOPS``."""
    inner = intermediate or hidden
    rows = max(16, min(PROBE_TOKENS, int(PROBE_FLOPS // (2 * hidden * inner))))
    return [(rows, hidden, inner), (rows, inner, hidden)]


def probe_matmuls(shapes: list[tuple[int, int, int]], reps: int = PROBE_REPS) -> dict[str, float]:
    """Best seconds of one round of ``shapes`` (``x @ w.T`` as a linear layer runs it) in fp32 and in
    bf16 at torch's current thread count, after one warm-up round each; rounds alternate between the
    precisions, so a moment's load elsewhere slows both (the best of ``reps`` rounds, not the
    first, decides: oneDNN may still be building a bf16 kernel in the first timed round)."""
    g = torch.Generator().manual_seed(0)
    base = [(torch.randn(m, k, generator=g), torch.randn(n, k, generator=g)) for m, k, n in shapes]
    mats = {"fp32": base, "bf16": [(x.bfloat16(), w.bfloat16()) for x, w in base]}

    def round_(kind: str) -> float:
        start = time.perf_counter()
        for x, w in mats[kind]:
            torch.nn.functional.linear(x, w)
        return time.perf_counter() - start

    best = {"fp32": float("inf"), "bf16": float("inf")}
    with torch.inference_mode():
        for kind in best:  # warm-up: oneDNN builds its kernels on first use
            round_(kind)
        for _ in range(reps):
            best["fp32"] = min(best["fp32"], round_("fp32"))
            best["bf16"] = min(best["bf16"], round_("bf16"))
    return best


def probe_choice(fp32_s: float, bf16_s: float, min_speedup: float = PROBE_MIN_SPEEDUP) -> tuple[str, str]:
    """(``bf16`` or ``fp32``, why) from the probe's best times: bf16 only where it ran the model's
    matmuls at least ``min_speedup`` times as fast as fp32."""
    if not (fp32_s > 0 and bf16_s > 0):
        raise ValueError(f"probe times must be positive seconds, got fp32 {fp32_s!r} and bf16 {bf16_s!r}")
    speedup = fp32_s / bf16_s
    used = "bf16" if speedup >= min_speedup else "fp32"
    verdict = "at least" if used == "bf16" else "below"
    return used, f"bf16 ran the model's matmuls at {speedup:.2f}x fp32's speed on this CPU, {verdict} {min_speedup}x"


def shapes_text(shapes: list[tuple[int, int, int]]) -> str:
    """``rows x in x out`` of each probed matmul, comma-separated (as the cache and results.json name them)."""
    return ", ".join("x".join(map(str, s)) for s in shapes)


def probe_key(cpu: str, flags: list[str], torch_version: str, threads: int, shapes: list[tuple[int, int, int]]) -> str:
    """The cache key of a probe: the CPU model, its bf16 flags, torch's version, the thread count and the shapes."""
    return " | ".join([cpu, "+".join(flags), f"torch {torch_version}", f"{threads} threads", shapes_text(shapes)])


def cpu_probe(shapes: list[tuple[int, int, int]], cache_file: Path | None = None) -> dict[str, Any]:
    """The probe's figures for ``shapes`` on this CPU at torch's current thread count: read from
    ``cache_file`` (default ``paths.CACHE / PROBE_CACHE``) where this CPU model and bf16 flags, torch
    version, thread count and shapes were probed before (``cached`` True), else measured
    (:func:`probe_matmuls`) and added to it. A cache that cannot be read is probed over; one that
    cannot be written is left as it was."""
    from arrank.common import paths
    from arrank.common.outputs import write_json_atomic

    cache_file = Path(cache_file) if cache_file is not None else paths.CACHE / PROBE_CACHE
    threads, cpu = torch.get_num_threads(), cpu_model()
    key = probe_key(cpu, cpu_bf16_flags(), torch.__version__, threads, shapes)
    try:
        known = json.loads(cache_file.read_text())
        known = known if isinstance(known, dict) else {}
    except (OSError, ValueError):
        known = {}
    entry = known.get(key)
    figures = ("fp32_ms", "bf16_ms", "bf16_speedup")
    if isinstance(entry, dict) and all(isinstance(entry.get(k), (int, float)) and entry[k] > 0 for k in figures):
        return {**entry, "cached": True}
    start = time.perf_counter()
    best = probe_matmuls(shapes)
    entry = {"cpu": cpu, "torch": torch.__version__, "threads": threads, "shapes": shapes_text(shapes)}
    entry |= {f"{kind}_ms": round(1e3 * best[kind], 3) for kind in ("fp32", "bf16")}
    entry |= {"bf16_speedup": round(best["fp32"] / best["bf16"], 3), "probe_s": round(time.perf_counter() - start, 3)}
    with contextlib.suppress(OSError):  # a cache that cannot be written is left as it was
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(cache_file, {**known, key: entry})
    return {**entry, "cached": False}


def resolve_precision(
    requested: str,
    device: str | None = None,
    hidden_size: int | None = None,
    intermediate_size: int | None = None,
    cache_file: Path | None = None,
) -> Precision:
    """``fp32`` as asked; ``bf16`` as asked where ``device`` (default: cuda when available) runs it
    natively, else a ValueError naming why (emulated bf16 is slower). ``auto``: on CUDA, bf16 where
    the GPU has native bf16; on a CPU, fp32 where it has no bf16 instructions (:func:`bf16_support`,
    not probed) or for a model narrower than ``AUTO_MIN_HIDDEN`` (or of no known width), else what
    the probe of its matmul shapes picks (:func:`cpu_probe`, cached per machine in ``cache_file``;
    :func:`probe_choice`)."""
    choice(*PRECISIONS)("precision", requested)
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if requested == "fp32":
        return Precision(requested, "fp32", "asked for fp32")
    ok, why = bf16_support(device)
    if requested == "bf16" and not ok:
        raise ValueError(f"precision='bf16' is not supported here: {why}; use precision='auto' or 'fp32'")
    if requested == "bf16":
        return Precision(requested, "bf16", f"asked for bf16 ({why})")
    if device != "cpu" or not ok:  # a GPU's native bf16 decides; a CPU without bf16 instructions is not probed
        return Precision(requested, "bf16" if ok else "fp32", f"auto: {why}")
    if hidden_size is None:
        return Precision(requested, "fp32", "auto: the model names no hidden size, so no matmul shape to time for bf16")
    if hidden_size < AUTO_MIN_HIDDEN:
        why = f"the model's hidden size {hidden_size} is below {AUTO_MIN_HIDDEN}: its matmuls are too small for bf16 to pay"
        return Precision(requested, "fp32", f"auto: {why}")
    probe = cpu_probe(probe_shapes(hidden_size, intermediate_size), cache_file)
    used, why = probe_choice(probe["fp32_ms"], probe["bf16_ms"])
    return Precision(requested, used, f"auto: {why}", probe)


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
    with autocast(used, device_type), contextlib.ExitStack() as stack:
        if dtype_of(used) == torch.bfloat16 and "peft" in sys.modules:  # peft never imported: no adapters
            from peft.helpers import disable_input_dtype_casting

            stack.enter_context(disable_input_dtype_casting(model))
        yield


def prepare_model(model, used: str) -> int:
    """Hold the frozen base weights of ``model`` in bf16 for a resolved ``bf16`` (nothing for ``fp32``):
    every ``nn.Linear`` whose parameters are all frozen (the base layers under LoRA), except the
    output embedding and LoRA's own layers (float32 in notebooks 05 and 06 alike); returns how many
    weights were cast. Call it after LoRA adapters are added."""
    if dtype_of(used) == torch.float32:
        return 0
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    linears = [
        m
        for name, m in model.named_modules()
        if type(m) is torch.nn.Linear
        and m is not head
        and ".lora_" not in f".{name}"
        and not any(p.requires_grad for p in m.parameters())
    ]
    for m in linears:
        m.to(torch.bfloat16)
    return sum(m.weight.numel() for m in linears)


def apply_precision(model, requested: str) -> Precision:
    """Resolve ``requested`` for ``model`` (``resolve_precision``), ``prepare_model`` it and say so in
    one line: what notebooks 05 and 06 do before training or scoring."""
    # the hidden size and the MLP's inner width of a transformers model (peft-wrapped or not), None where it names none
    sizes = {k: getattr(getattr(model, "config", None), k, None) for k in ("hidden_size", "intermediate_size")}
    numerics = resolve_precision(requested, **sizes)
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
