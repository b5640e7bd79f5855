"""Precision of training and scoring (arrank.training.precision): what auto picks and why (on a CPU
the probe of the model's matmul shapes: its decision on given timings, its cache, the real probe on
this machine), bf16 refused where it would be emulated, the mixed-precision layout of a LoRA model,
and a tiny model that still learns its task when trained in bf16."""

from __future__ import annotations

import copy
import json

import pytest
import torch
from tiny_setup import tiny_model as _tiny

from arrank.evaluation import evaluate
from arrank.training import models, precision, train

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_the_cpu_is_named_by_torch_and_a_torch_without_capabilities_assumes_no_cpu_bf16(monkeypatch):
    import platform

    named = torch.cpu.get_capabilities().get("cpu_name")  # the probe's cache key names the CPU
    assert precision.cpu_model() == (named or platform.processor() or "unknown CPU")
    monkeypatch.delattr(torch.cpu, "get_capabilities")  # torch 2.11, the GPU machines' image
    assert precision.cpu_capabilities() == {}
    assert precision.cpu_model() == (platform.processor() or "unknown CPU")
    assert precision.bf16_support("cpu") == (
        False,
        "CPU has neither avx512_bf16 nor amx_bf16 (bf16 would be emulated, slower than fp32)",
    )


def fake_probe(monkeypatch, fp32_s: float, bf16_s: float) -> list:
    """``precision.probe_matmuls`` replaced by given best times; returns the list of its calls."""
    calls: list = []

    def probe(shapes, reps=precision.PROBE_REPS):
        calls.append(shapes)
        return {"fp32": fp32_s, "bf16": bf16_s}

    monkeypatch.setattr(precision, "probe_matmuls", probe)
    return calls


def test_probe_choice_picks_bf16_only_where_it_measured_faster():
    """The decision on given timings: bf16 at >= 1.1x fp32's speed, fp32 below (an Intel Xeon with
    AVX512-BF16 and no AMX ran bf16 matmuls at 0.51x: the flag alone would have picked bf16)."""
    assert precision.probe_choice(1.0, 0.45) == (
        "bf16",
        "bf16 ran the model's matmuls at 2.22x fp32's speed on this CPU, at least 1.1x",
    )
    assert precision.probe_choice(1.0, 1 / 1.1)[0] == "bf16"  # exactly the threshold
    assert precision.probe_choice(1.0, 0.95)[0] == "fp32"  # 1.05x: not measurably faster
    used, why = precision.probe_choice(0.51, 1.0)
    assert used == "fp32" and why == "bf16 ran the model's matmuls at 0.51x fp32's speed on this CPU, below 1.1x"
    assert precision.probe_choice(1.0, 0.8, min_speedup=1.5)[0] == "fp32"
    for bad in ((0.0, 1.0), (1.0, -1.0), (float("nan"), 1.0)):
        with pytest.raises(ValueError, match="probe times must be positive seconds"):
            precision.probe_choice(*bad)


def test_probe_shapes_are_the_models_mlp_kept_small():
    assert precision.probe_shapes(576, 1536) == [(128, 576, 1536), (128, 1536, 576)]  # SmolLM2-135M
    assert precision.probe_shapes(4096, 14336) == [(16, 4096, 14336), (16, 14336, 4096)]  # a 7B: 16 rows
    assert precision.probe_shapes(1024) == [(128, 1024, 1024), (128, 1024, 1024)]  # no intermediate size
    assert precision.probe_shapes(1024, 4096) == [(59, 1024, 4096), (59, 4096, 1024)]  # 5e8 FLOPs a shape


def test_probe_is_cached_per_cpu_flags_torch_threads_and_shapes(tmp_path, monkeypatch):
    """The cache round-trip: a probe is measured once, then read back (``cached``) for the same CPU
    model, bf16 flags, torch version, thread count and shapes; another thread count, shape, flag set
    (a virtual machine that hides AMX) or torch version is probed anew; an unreadable cache file is
    probed over and rewritten."""

    cache = tmp_path / "sub" / "probe.json"
    calls = fake_probe(monkeypatch, 0.004, 0.002)
    shapes = precision.probe_shapes(576, 1536)
    first = precision.cpu_probe(shapes, cache)
    assert first["cached"] is False and len(calls) == 1
    assert (first["fp32_ms"], first["bf16_ms"], first["bf16_speedup"]) == (4.0, 2.0, 2.0)
    assert first["threads"] == torch.get_num_threads() and first["shapes"] == "128x576x1536, 128x1536x576"
    assert first["cpu"] == precision.cpu_model() and first["torch"] == torch.__version__
    stored = json.loads(cache.read_text())
    flags = precision.cpu_bf16_flags()
    key = precision.probe_key(precision.cpu_model(), flags, torch.__version__, torch.get_num_threads(), shapes)
    assert list(stored) == [key] and key.endswith(" threads | 128x576x1536, 128x1536x576")
    assert key.startswith(f"{precision.cpu_model()} | {'+'.join(flags)} | torch {torch.__version__} | ")
    again = precision.cpu_probe(shapes, cache)
    assert again == {**first, "cached": True} and len(calls) == 1  # read back, not measured
    precision.cpu_probe(precision.probe_shapes(960, 2560), cache)  # other shapes: a new entry
    threads = torch.get_num_threads()
    torch.set_num_threads(threads + 1)
    try:
        precision.cpu_probe(shapes, cache)  # another thread count: probed again
    finally:
        torch.set_num_threads(threads)
    assert len(calls) == 3 and len(json.loads(cache.read_text())) == 3
    other = {f: True for f in precision.CPU_BF16_FLAGS if f not in flags}  # never this CPU's set
    monkeypatch.setattr(precision, "cpu_capabilities", lambda: other)
    assert precision.cpu_probe(shapes, cache)["cached"] is False  # other flags: probed again
    monkeypatch.setattr(torch, "__version__", "9.9.9")
    assert precision.cpu_probe(shapes, cache)["torch"] == "9.9.9" and len(calls) == 5  # another torch
    assert precision.cpu_probe(shapes, cache)["cached"] is True and len(json.loads(cache.read_text())) == 5
    cache.write_text("{not json")
    assert precision.cpu_probe(shapes, cache)["cached"] is False and len(calls) == 6
    assert len(json.loads(cache.read_text())) == 1


def on_cpu(monkeypatch, *flags: str) -> None:
    """This CPU read as one with ``flags`` (``precision.cpu_capabilities``, its name kept): the bf16
    check and the probe cache's key both see them, as on a CPU of that kind."""
    name = precision.cpu_model()
    monkeypatch.setattr(precision, "cpu_capabilities", lambda: {"cpu_name": name, **dict.fromkeys(flags, True)})


def test_auto_on_a_cpu_follows_the_probe_where_it_has_bf16(tmp_path, monkeypatch):
    """auto on a CPU with bf16 instructions: what the probe measured decides (AVX512-BF16 alone does
    not make bf16 faster); the probe's figures go to results.json through ``record()``; a CPU
    without bf16 instructions (bf16 emulated), a model narrower than AUTO_MIN_HIDDEN, or of unknown
    width keeps fp32 without probing; CUDA keeps its rule (native bf16), with no probe."""
    fake_probe(monkeypatch, 0.0051, 0.01)  # the Intel Xeon with AVX512-BF16 and no AMX: 0.51x
    on_cpu(monkeypatch, "avx512_bf16")
    slow = precision.resolve_precision("auto", "cpu", 576, 1536, tmp_path / "probe.json")
    assert slow.used == "fp32" and slow.requested == "auto"
    assert slow.reason == "auto: bf16 ran the model's matmuls at 0.51x fp32's speed on this CPU, below 1.1x"
    assert slow.record() == {
        "precision_used": "fp32",
        "precision_reason": slow.reason,
        "precision_probe_shapes": "128x576x1536, 128x1536x576",
        "precision_probe_threads": torch.get_num_threads(),
        "precision_probe_fp32_ms": 5.1,
        "precision_probe_bf16_ms": 10.0,
        "precision_probe_bf16_speedup": 0.51,
        "precision_probe_cached": False,
    }
    fake_probe(monkeypatch, 0.01, 0.0045)  # AMX-like: bf16 well ahead
    for flags in (["amx_bf16"], ["avx512_bf16", "amx_bf16"], ["amx_bf16"]):
        on_cpu(monkeypatch, *flags)
        got = precision.resolve_precision("auto", "cpu", 576, 1536, tmp_path / "fast.json")
        assert got.used == "bf16" and got.reason.startswith("auto: bf16 ran the model's matmuls at 2.22x")
    assert got.record()["precision_probe_cached"] is True  # each CPU kind probed once, under its own flags
    assert [k.split(" | ")[1] for k in json.loads((tmp_path / "fast.json").read_text())] == [
        "amx_bf16",
        "avx512_bf16+amx_bf16",
    ]
    calls = fake_probe(monkeypatch, 0.01, 0.001)  # no probe below: bf16 would look 10x faster
    on_cpu(monkeypatch, "avx2", "avx512f")
    emulated = precision.resolve_precision("auto", "cpu", 576, 1536, tmp_path / "t")
    assert emulated.used == "fp32" and emulated.probe is None
    assert (
        emulated.reason == "auto: CPU has neither avx512_bf16 nor amx_bf16 (bf16 would be emulated, slower than fp32)"
    )
    on_cpu(monkeypatch, "avx512_bf16")
    tiny = precision.resolve_precision("auto", "cpu", hidden_size=128, cache_file=tmp_path / "t")
    assert tiny.used == "fp32" and "hidden size 128 is below 512" in tiny.reason and tiny.probe is None
    assert tiny.record() == {"precision_used": "fp32", "precision_reason": tiny.reason}
    unknown = precision.resolve_precision("auto", "cpu", cache_file=tmp_path / "t")
    assert unknown.used == "fp32" and "no hidden size" in unknown.reason
    cuda = precision.resolve_precision("auto", "cuda", hidden_size=576, cache_file=tmp_path / "t")
    assert cuda.probe is None and cuda.reason.startswith("auto: ")
    assert (cuda.used == "bf16") == (torch.cuda.is_available() and torch.cuda.is_bf16_supported(False))
    assert calls == [] and not (tmp_path / "t").exists()
    assert precision.resolve_precision("fp32", "cpu", 576).used == "fp32"
    assert precision.resolve_precision("bf16", "cpu", hidden_size=128).used == "bf16"  # asked


def test_auto_on_this_cpu_is_what_its_real_probe_measured(tmp_path):
    """The real probe of SmolLM2-135M's shapes on this machine: auto's decision matches its figures
    where the CPU has bf16 instructions; where it has none auto keeps fp32 unprobed, and the probe
    confirms why (bf16 emulated: an AMD EPYC without them ran these shapes at 0.14x fp32 at one
    thread)."""
    got = precision.resolve_precision("auto", "cpu", 576, 1536, tmp_path / "probe.json")
    probe = precision.cpu_probe(precision.probe_shapes(576, 1536), tmp_path / "probe.json")
    assert probe["fp32_ms"] > 0 and probe["bf16_ms"] > 0
    if precision.cpu_bf16_flags():
        assert got.probe == {**probe, "cached": False} and probe["cached"] is True
        assert got.used == precision.probe_choice(probe["fp32_ms"], probe["bf16_ms"])[0]
    else:
        assert got.used == "fp32" and got.probe is None and probe["bf16_speedup"] < 1, probe


def test_bf16_where_unsupported_is_refused_in_one_line(monkeypatch):
    on_cpu(monkeypatch, "avx2", "avx512f")
    with pytest.raises(ValueError) as err:
        precision.resolve_precision("bf16", "cpu")
    message = str(err.value)
    assert "\n" not in message and "precision='bf16' is not supported here" in message
    assert "neither avx512_bf16 nor amx_bf16" in message and "precision='auto' or 'fp32'" in message
    on_cpu(monkeypatch, "avx512_bf16")
    assert precision.resolve_precision("bf16", "cpu").used == "bf16"
    with pytest.raises(ValueError, match=r"precision='fp16' is not allowed; choose one of \['auto', 'fp32', 'bf16'\]"):
        precision.resolve_precision("fp16")
    with pytest.raises(ValueError, match="not resolved"):
        precision.autocast("auto")


def test_the_notebooks_spec_takes_precision_and_refuses_other_values():
    from arrank.common import params

    for stem in ("05_train", "06_evaluate", "07_de_ce_baselines"):
        spec = params.spec_for(stem)["precision"]
        assert [spec("precision", v) for v in ("auto", "fp32", "bf16")] == ["auto", "fp32", "bf16"]
        with pytest.raises(params.ParamError, match="precision='half' is not allowed"):
            spec("precision", "half")


def test_lora_model_holds_frozen_base_weights_in_bf16_and_trainable_ones_in_fp32(data):
    _, texts = data
    base, _ = _tiny(texts)
    full = copy.deepcopy(base)
    assert precision.prepare_model(full, "bf16") == 0  # full fine-tuning: every weight trains, none cast
    assert all(p.dtype == torch.float32 for p in full.parameters())
    lora = models.add_lora(copy.deepcopy(base), "transformers", 4, 8, 0.0, "all-linear", seed=0)
    assert precision.prepare_model(lora, "fp32") == 0
    cast = precision.prepare_model(lora, "bf16")
    dtypes = {name: p.dtype for name, p in lora.named_parameters()}
    assert cast > 0 and cast == sum(p.numel() for n, p in lora.named_parameters() if p.dtype == torch.bfloat16)
    assert all(d == torch.float32 for n, d in dtypes.items() if "lora_" in n)  # adapters: fp32
    assert all(d == torch.bfloat16 for n, d in dtypes.items() if "base_layer" in n)  # frozen linears: bf16
    assert lora.get_output_embeddings().weight.dtype == torch.float32  # the head (and embedding)
    assert all(d == torch.float32 for n, d in dtypes.items() if "norm" in n)
    opt = torch.optim.AdamW([p for p in lora.parameters() if p.requires_grad])
    ids = torch.tensor([[5, 6, 7, 8, 9]])
    with precision.autocast("bf16"):
        loss = lora(input_ids=ids).logits.float().logsumexp(-1).mean()
    loss.backward()
    opt.step()
    assert all(s["exp_avg"].dtype == torch.float32 for s in opt.state.values())  # optimizer state: fp32


@pytest.mark.slow  # runs the workbook / trains the tiny model
def test_tiny_model_learns_its_task_in_bf16(data, tmp_path):
    """A short real training in bf16 (fractional alpha = 2, packed) brings the CVR of the training
    queries far below that of random scores on the same queries, as in fp32 (at 60 steps R@1
    and nDCG are still near the random floor: the loss has learnt the negative first)."""
    df, texts = data
    hyper = {
        **train.profile_hyperparameters("quick"),
        "steps": 60,
        "batch_size": 16,
        "warmup_steps": 5,
        "lr": 1e-2,
        "logging_steps": 10,
        "save_steps": 1000,
    }
    got = {}
    for used in ("bf16", "fp32"):
        model, tok = _tiny(texts)
        items = train.training_items(df, tok, "fractional", alpha=2.0)
        log = train.train(model, tok, items, hyper, tmp_path / used, seed=0, precision=used)
        got[used] = evaluate.evaluate_training_queries(model, tok, df, 60, 0, progress=False, precision=used)[0]
        assert log["loss"].iloc[-1] < 0.5 * log["loss"].iloc[0], used
    floor = evaluate.random_floor(evaluate.training_sample(df, 60, 0).assign(split="eval"), 0)  # same queries
    assert got["bf16"]["train_n_queries"] == floor["n_queries"] == 60
    # CVR (section 5.1): random scores put the negative above a positive in most queries
    assert floor["cvr"] > 0.6 and got["bf16"]["train_cvr"] <= floor["cvr"] - 0.4, (got, floor)
    assert abs(got["bf16"]["train_cvr"] - got["fp32"]["train_cvr"]) <= 0.1, got
    with pytest.raises(ValueError, match="not resolved"):
        train.train(model, tok, items, hyper, tmp_path / "x", precision="auto")


def test_auto_probes_a_model_exactly_as_wide_as_the_minimum_and_trusts_no_bad_cache_entry(tmp_path, monkeypatch):
    """auto keeps fp32 unprobed only for a model *narrower* than AUTO_MIN_HIDDEN (512): one of hidden
    size 512 is probed. A cache entry whose figures are not positive numbers (a hand-edited or
    truncated file) is probed over rather than handed to ``probe_choice``, which would refuse it."""
    calls = fake_probe(monkeypatch, 0.01, 0.0045)  # bf16 at 2.22x: picked where probed
    on_cpu(monkeypatch, "amx_bf16")
    cache = tmp_path / "probe.json"
    got = precision.resolve_precision("auto", "cpu", hidden_size=precision.AUTO_MIN_HIDDEN, cache_file=cache)
    assert got.used == "bf16" and len(calls) == 1
    key = next(iter(json.loads(cache.read_text())))
    for bad in (0, "2.0", None):
        cache.write_text(json.dumps({key: {"fp32_ms": 10.0, "bf16_ms": bad, "bf16_speedup": 2.0}}))
        probe = precision.cpu_probe(precision.probe_shapes(precision.AUTO_MIN_HIDDEN), cache)
        assert probe["cached"] is False and probe["bf16_ms"] == 4.5
    assert len(calls) == 4


def test_auto_on_a_gpu_with_native_bf16_takes_it_without_a_cpu_probe(tmp_path, monkeypatch):
    """On CUDA, auto follows the GPU's native bf16 (docs/design.md, "Training"): the CPU probe, which
    here would say fp32, is not run."""
    calls = fake_probe(monkeypatch, 0.0051, 0.01)
    monkeypatch.setattr(precision, "bf16_support", lambda device="cpu": (True, "CUDA GPU X supports bf16"))
    got = precision.resolve_precision("auto", "cuda", 576, 1536, tmp_path / "probe.json")
    assert (got.used, got.reason, got.probe, calls) == ("bf16", "auto: CUDA GPU X supports bf16", None, [])


def test_lora_adapters_take_bf16_inputs_under_mixed_precision(data):
    """Under ``mixed(model, "bf16")`` peft's cast of a LoRA layer's input to float32 is off: the adapter
    of o_proj (whose input is the attention's bf16 output) receives bf16, as its base layer does."""
    _, texts = data
    base, _ = _tiny(texts)
    lora = models.add_lora(base, "transformers", 4, 8, 0.0, "all-linear", seed=0)
    precision.prepare_model(lora, "bf16")
    seen = []
    adapter = next(m for name, m in lora.named_modules() if name.endswith("o_proj.lora_A.default"))
    adapter.register_forward_pre_hook(lambda module, args: seen.append(args[0].dtype))
    with precision.mixed(lora, "bf16"):
        lora(input_ids=torch.tensor([[5, 6, 7]]))
    assert seen == [torch.bfloat16]
