"""Causal language models of the workbook: every model is loaded by :func:`load_model`, through one
table of model kind -> loader (:data:`LOADERS`: the ``tiny`` random-initialised model built for a
ranking table, a pretrained model through transformers or Unsloth, a run's saved model); and the
output embedding matrix E (section 3.2: P(. | c) = softmax(E phi(c))) of any model.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from arrank.common import named_models, paths, processes
from arrank.common.manifest import MANIFEST, manifest_problem, set_aside, write_manifest
from arrank.common.outputs import staged_folder
from arrank.common.params import BACKENDS, choice


def build_tiny_model(
    vocab_size: int,
    hidden: int = 128,
    layers: int = 4,
    heads: int = 4,
    intermediate: int = 384,
    seed: int = 0,
    tokenizer=None,
):
    """A random-initialised, seeded Llama causal LM (transformers) of the CPU-feasible size of
    docs/design.md by default; a ``tokenizer``'s pad/bos/eos ids go into the config."""
    from transformers import LlamaConfig, LlamaForCausalLM

    ids = special_token_ids(tokenizer) if tokenizer is not None else {}
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        intermediate_size=intermediate,
        max_position_embeddings=2048,
        tie_word_embeddings=False,
        **ids,
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(config)


def special_token_ids(tokenizer) -> dict[str, int | None]:
    """``pad_token_id``, ``bos_token_id`` and ``eos_token_id`` of ``tokenizer``, for a model config."""
    return {f"{role}_token_id": getattr(tokenizer, f"{role}_token_id") for role in ("pad", "bos", "eos")}


def output_embeddings(model) -> np.ndarray:
    """E: the model's output embedding matrix (|V| x n) as float64 numpy."""
    return model.get_output_embeddings().weight.detach().float().cpu().numpy().astype(np.float64)


def load_output_embeddings(path: str | Path) -> np.ndarray:
    """E of a local pretrained model folder, read from its safetensors files without loading the
    model (one |V| x n tensor): ``lm_head.weight``, or the input embeddings when the model ties them.
    Clear errors for a missing folder, no safetensors, or no such tensor."""
    from safetensors import safe_open

    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"pretrained model folder {folder} does not exist")
    if not (files := sorted(folder.glob("*.safetensors"))):
        raise FileNotFoundError(f"{folder} holds no *.safetensors files")
    config = json.loads((folder / "config.json").read_text()) if (folder / "config.json").exists() else {}
    wanted = ["lm_head.weight"]
    if config.get("tie_word_embeddings"):
        wanted = ["model.embed_tokens.weight", "embed_tokens.weight", *wanted]
    for name in wanted:
        for file in files:
            with safe_open(str(file), framework="pt") as fh:
                if name in fh.keys():
                    return fh.get_tensor(name).float().numpy().astype(np.float64)
    raise KeyError(f"none of {wanted} found in {folder}'s safetensors files")


def pretrained_embeddings(model_name: str) -> tuple[np.ndarray, object]:
    """E (|V| x n, float64) and the tokenizer of a pretrained ``model_name`` (:func:`resolve_model`),
    read from its safetensors without loading the model; a hub id must be in the local hub cache."""
    from transformers import AutoTokenizer

    folder = Path(resolve_model(model_name))
    if not folder.is_dir():
        from huggingface_hub import snapshot_download

        folder = Path(snapshot_download(str(folder), allow_patterns=["*.json", "*.safetensors", "*.model"]))
    return load_output_embeddings(folder), AutoTokenizer.from_pretrained(folder)


# --------------------------------------------------------------------------- model_name / backends

# A chat template for the tiny model that is exactly BOS + the prompt: the prompt itself ends with
# its answer marker, and the docID follows it directly (arrank.training.encoding).
TINY_CHAT_TEMPLATE = "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}"
# Above this many trainable parameters, full fine-tuning (lora_r = 0) gets a warning with its cost.
FULL_FINETUNE_WARN = 20_000_000


def resolve_model(model_name: str) -> str:
    """What transformers (or Unsloth) loads for a pretrained ``model_name`` (``arrank.common.named_models``):
    an alias gives its hub id; a GGUF model (a known name, or a ``.gguf`` path) is converted once
    (:func:`convert_gguf`) into a folder under ``data/cache/models/``, which every later load takes."""
    kind = named_models.model_kind(model_name)
    if kind == "tiny":
        raise ValueError("model_name='tiny' is built, not loaded: it has no pretrained weights (load_model builds it)")
    if kind not in ("gguf_name", "gguf_file"):
        return named_models.HUB_ALIASES.get(model_name, model_name)  # an alias's hub id; a hub id or folder as it is
    if kind == "gguf_name":
        gguf = named_models.gguf_file(model_name)
        folder = paths.CACHE / "models" / f"{model_name}-{named_models.GGUF_MODELS[model_name]['version']}"
    else:
        gguf = Path(model_name).expanduser().resolve()
        folder = paths.CACHE / "models" / f"{gguf.stem}-{gguf.stat().st_size}-{int(gguf.stat().st_mtime)}"
    return str(derived_folder(folder, lambda f: convert_gguf(gguf, f), f"it is converted again from {gguf.name}"))


def derived_folder(folder: Path, build, again: str) -> Path:
    """A model folder the workbook derives (a converted GGUF, the tiny model): one that fails
    :func:`model_folder_problem` is set aside, saying what happens ``again``; a missing one is made
    by ``build(folder)``, atomically (another process that made it first wins)."""
    if why := (model_folder_problem(folder) if folder.exists() else None):
        set_aside(folder, f"{why}; {again}")
    if not (folder / "config.json").exists():
        try:
            build(folder)
        except OSError:  # another process (torchrun's other ranks) made it first: its folder is complete
            if not (folder / "config.json").exists():
                raise
    return folder


def convert_gguf(gguf: Path, folder: Path) -> Path:
    """De-quantise a GGUF file into a float32 transformers model folder, written atomically.

    transformers reads GGUF but refuses to save a GGUF-marked model, so the weights are copied into
    a model built from the same configuration. The special tokens come from the file's own metadata
    (``tokenizer.ggml.*_token_id``): transformers reads SmolLM2's EOS as ``<|im_start|>`` where the
    file says ``<|im_end|>``, the token that ends every docID (section 4.2). A truncated or
    unreadable file is a clear error, and nothing is left in ``folder``.
    """
    from gguf import GGUFReader
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        fields = GGUFReader(str(gguf)).fields
    except Exception as err:  # gguf raises ValueError/IndexError/struct errors on short files
        raise ValueError(
            f"{gguf} is not a readable GGUF file ({type(err).__name__}: {err}); "
            "is it truncated? reinstall it or give another file"
        ) from None
    special = {}
    for gguf_role, role in (("bos", "bos"), ("eos", "eos"), ("padding", "pad")):
        if (field := fields.get(f"tokenizer.ggml.{gguf_role}_token_id")) is not None:
            special[role] = int(field.parts[field.data[0]][0])
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):  # the GGUF marker that makes save_pretrained refuse
        del config.quantization_config
    for role, token_id in special.items():
        setattr(tokenizer, f"{role}_token", tokenizer.convert_ids_to_tokens(token_id))
        setattr(config, f"{role}_token_id", token_id)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    model.generation_config.eos_token_id = config.eos_token_id
    model.generation_config.pad_token_id = getattr(config, "pad_token_id", None)
    return save_atomic(model, tokenizer, folder)


def tiny_model_and_tokenizer(
    texts: list[str],
    vocab_size: int = 2000,
    hidden: int = 128,
    layers: int = 4,
    heads: int = 4,
    intermediate: int = 384,
    seed: int = 0,
    cache: bool = True,
):
    """``model_name="tiny"``: a BPE tokenizer trained on ``texts`` (the task's prompts and docIDs)
    and a random-initialised Llama of the given size, built once and cached under
    ``data/cache/tiny/<hash>/`` (the hash covers the texts and every size). Returns (model, tokenizer).
    """
    from transformers import AutoTokenizer, LlamaForCausalLM

    from arrank.data.cache import params_hash
    from arrank.training.tokenizer import train_bpe

    digest = hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest()
    sizes = {"vocab_size": vocab_size, "hidden": hidden, "layers": layers, "heads": heads, "intermediate": intermediate}
    key = params_hash({"texts": digest, **sizes, "seed": seed, "version": 1})

    def build(folder: Path | None):
        tokenizer = train_bpe(texts, vocab_size)
        tokenizer.chat_template = TINY_CHAT_TEMPLATE
        model = build_tiny_model(len(tokenizer), hidden, layers, heads, intermediate, seed, tokenizer)
        return (model, tokenizer) if folder is None else save_atomic(model, tokenizer, folder)

    if not cache:
        return build(None)
    folder = paths.CACHE / "tiny" / key
    derived_folder(folder, build, "the tiny model is built again (the same seed gives the same weights)")
    # loaded from the folder, also just after it was built, so that LoRA adapters record it as their base model
    return LlamaForCausalLM.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)


def model_folder_problem(folder: Path) -> str | None:
    """What makes a saved model folder unusable, in words, or None: a file against its manifest;
    without one, no readable config.json, a safetensors file whose size disagrees with its header,
    or no tokenizer.json."""
    folder = Path(folder)
    if (folder / MANIFEST).exists():
        return manifest_problem(folder)
    try:
        json.loads((folder / "config.json").read_text())
    except (OSError, ValueError) as err:
        return f"its config.json is missing or unreadable ({type(err).__name__})"
    for path in sorted(folder.glob("*.safetensors")):
        with open(path, "rb") as fh:
            head = fh.read(8)
            try:
                n = int.from_bytes(head, "little")
                header = json.loads(fh.read(n)) if len(head) == 8 and n < (1 << 30) else None
                end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
            except (ValueError, TypeError, AttributeError, KeyError):
                return f"{path.name} has no readable safetensors header"
        if path.stat().st_size != 8 + n + end:
            return f"{path.name} is {path.stat().st_size:,} bytes where its header says {8 + n + end:,}"
    return None if (folder / "tokenizer.json").is_file() else "it has no tokenizer.json"


def save_atomic(model, tokenizer, folder: Path) -> Path:
    """``save_pretrained`` model and tokenizer into a temporary folder, a manifest of its files
    (``arrank.common.manifest``: sizes and sha256, flushed to disk), then renamed into place
    (``outputs.staged_folder``). transformers' "Writing model shards" progress bar (one per save)
    is kept out of a notebook's outputs; the Trainer's training progress bar stays."""
    from transformers.utils.logging import disable_progress_bar

    disable_progress_bar()
    with staged_folder(folder) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        write_manifest(tmp)
    return folder


def unsloth_cpu_opt_in() -> bool:
    """Whether ``UNSLOTH_FORCE_CPU=1`` asks for Unsloth's CPU fallback, a check of the Unsloth code path
    on a CPU machine (docs/gpu.md); ``auto`` never picks it."""
    return os.environ.get("UNSLOTH_FORCE_CPU", "") == "1"


def resolve_backend(backend: str) -> str:
    """``auto`` -> ``unsloth`` when CUDA and unsloth are importable and one process trains, else
    ``transformers``. ``unsloth`` fails at once without CUDA (unless :func:`unsloth_cpu_opt_in`) and
    under several processes (``arrank.common.processes``)."""
    choice(*BACKENDS)("backend", backend)
    if refused := processes.unsloth_refusal(backend):
        raise RuntimeError(refused)
    has_unsloth = importlib.util.find_spec("unsloth") is not None
    if backend == "unsloth" and not torch.cuda.is_available() and not unsloth_cpu_opt_in():
        raise RuntimeError(
            "backend='unsloth' needs an NVIDIA GPU with CUDA, and this machine has none; "
            "use backend='transformers' (or 'auto'), or set UNSLOTH_FORCE_CPU=1 to run "
            "Unsloth's CPU fallback (a check of the code path, not a speed route: docs/gpu.md)"
        )
    if backend == "unsloth" and not has_unsloth:
        raise RuntimeError("backend='unsloth' but unsloth is not installed: pip install -e '.[gpu]'")
    if backend == "auto":
        return (
            "unsloth" if torch.cuda.is_available() and has_unsloth and processes.world_size() == 1 else "transformers"
        )
    return backend


def on_accelerator(model):
    """The model on the GPU where CUDA is available, else as it is. transformers loads onto the CPU;
    the Trainer moves a model for training, but notebook 06 scores wherever the model is
    (``evaluation.scoring.model_device``), so on a GPU machine a model left on the CPU would be
    scored there. Unsloth places its models itself."""
    return model.to("cuda") if torch.cuda.is_available() and model.device.type == "cpu" else model


def tiny_for_table(model_name: str, df=None, tokenizer_vocab: int = 2000, seed: int = 0, **_):
    """``"tiny"``: :func:`tiny_model_and_tokenizer` for the texts of the ranking table ``df``
    (``arrank.data.ranking``): every prompt, then every docID (relevant and negative) once, sorted."""
    if df is None:
        raise ValueError("model_name='tiny' is built for a ranking table's texts: give load_model its df")
    docids = {d for ds in df["relevant"] for d in ds} | {d for d in df["negative"] if isinstance(d, str)}
    return tiny_model_and_tokenizer(list(df["prompt"]) + sorted(docids), tokenizer_vocab, seed=seed)


def pretrained_model(
    model_name: str, backend: str = "auto", max_length: int = 1024, load_in_4bit: bool = False, peft: bool = False, **_
):
    """A pretrained causal LM and its tokenizer, for any name :func:`resolve_model` takes, through the
    backend (:func:`resolve_backend`). Unsloth: ``load_in_4bit`` (False = 16-bit LoRA) and logits
    returned (``UNSLOTH_RETURN_LOGITS=1``: the STOICaL loss is computed from them); transformers:
    :func:`on_accelerator`, and with ``peft`` a LoRA adapter folder on the base model it names
    (Unsloth loads those itself). A tokenizer without a pad token pads with its EOS."""
    used = resolve_backend(backend)
    if load_in_4bit and used != "unsloth":
        raise ValueError(
            f"load_in_4bit=True needs backend='unsloth' (4-bit base weights through bitsandbytes "
            f"on an NVIDIA GPU); backend={backend!r} resolves to transformers here: give "
            "load_in_4bit=False (16-bit LoRA) or run on a GPU with unsloth installed"
        )
    source = resolve_model(model_name)
    if used == "unsloth":
        os.environ.setdefault("UNSLOTH_RETURN_LOGITS", "1")
        from unsloth import FastLanguageModel

        exact = Path(source).is_dir()  # a local folder as named, not mapped to an Unsloth variant
        how = dict(max_seq_length=max_length, load_in_4bit=load_in_4bit, dtype=None, use_exact_model_name=exact)
        model, tokenizer = FastLanguageModel.from_pretrained(model_name=source, **how)
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if peft:  # the base model adapter_config.json names, then the adapter
            from peft import AutoPeftModelForCausalLM as AutoModelForCausalLM
        model = on_accelerator(AutoModelForCausalLM.from_pretrained(source))
        tokenizer = AutoTokenizer.from_pretrained(source)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def trained_model(folder: Path, backend: str = "auto", max_length: int = 1024, **_):
    """A model notebook 05 saved into ``<run>/model`` (:func:`pretrained_model`): full weights through
    transformers whatever the backend, or a LoRA adapter on the base model its ``adapter_config.json``
    names, through the backend. A clear error when the folder holds no model, a file disagrees with
    its manifest, or the base model it names cannot be loaded here."""
    config = folder / "adapter_config.json"
    if not (folder / "config.json").exists() and not config.exists():
        raise FileNotFoundError(
            f"{folder} holds no saved model (no config.json or adapter_config.json); give a finished notebook 05 run"
        )
    if why := manifest_problem(folder, required=False):  # a run's result: named, never rebuilt or evaluated
        raise ValueError(
            f"the saved model {folder} is damaged: {why}; nothing is evaluated from it: train it again "
            "(notebook 05 with another run_name), or restore the run folder from a copy"
        )
    if adapter := config.exists():  # the base it names must be loadable here: a clear error, not a hub request
        try:
            named_models.model_kind(json.loads(config.read_text()).get("base_model_name_or_path") or "")
        except ValueError as err:
            raise ValueError(f"{config} names a base model that cannot be loaded here: {err}") from None
    return pretrained_model(str(folder), backend if adapter else "transformers", max_length, peft=adapter)


# A model's kind -> its loader, (model_name, **how) -> (model, tokenizer): the kinds of
# arrank.common.named_models.model_kind, and "trained", a model notebook 05 saved (a Path).
LOADERS: dict[str, Callable[..., tuple]] = {
    "tiny": tiny_for_table,
    "trained": trained_model,
    **dict.fromkeys(("alias", "hub", "folder", "gguf_name", "gguf_file"), pretrained_model),
}


def load_model(
    model_name: str | Path, backend: str = "auto", max_length: int = 1024, load_in_4bit: bool = False,
    *, df=None, tokenizer_vocab: int = 2000, seed: int = 0,
):  # fmt: skip
    """A model and its tokenizer, the one way to load either: the :data:`LOADERS` entry of its kind.
    A ``str`` is a notebook's ``model_name`` (``arrank.common.named_models.model_kind``); a ``Path`` is
    a model notebook 05 saved (``<run>/model``). ``"tiny"`` takes the keywords ``df`` (the ranking
    table its BPE is trained on), ``tokenizer_vocab`` and ``seed``; the other loaders ignore them.
    ``backend``, ``max_length`` and ``load_in_4bit`` are a loaded model's (Unsloth's sequence length
    and 4-bit base weights)."""
    kind = "trained" if isinstance(model_name, Path) else named_models.model_kind(model_name)
    how = dict(backend=backend, max_length=max_length, load_in_4bit=load_in_4bit)
    return LOADERS[kind](model_name, **how, df=df, tokenizer_vocab=tokenizer_vocab, seed=seed)


def add_lora(model, backend: str, r: int, alpha: int, dropout: float, target_modules: str, seed: int = 0):
    """LoRA adapters (peft, or Unsloth's ``get_peft_model``); ``r = 0`` keeps full fine-tuning,
    with a warning of its cost for a model above ``FULL_FINETUNE_WARN`` parameters.
    ``target_modules`` is ``all-linear`` or a comma-separated list of module names."""
    if r == 0:
        n = sum(p.numel() for p in model.parameters())
        if n > FULL_FINETUNE_WARN:
            warnings.warn(
                f"lora_r=0: full fine-tuning of all {n / 1e6:.1f} M parameters; AdamW keeps "
                f"weights, gradients and two moments, about {16 * n / 2**30:.1f} GiB in float32, "
                "and every step updates them all (LoRA r = 16 trains under 5% of them); give "
                "lora_r > 0 unless that is what you want",
                stacklevel=2,
            )
        return model
    targets = "all-linear" if target_modules == "all-linear" else [m.strip() for m in target_modules.split(",")]
    if resolve_backend(backend) == "unsloth":
        from unsloth import FastLanguageModel

        if targets == "all-linear":
            targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
        return FastLanguageModel.get_peft_model(
            model, r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules=targets, random_state=seed
        )
    from peft import LoraConfig, get_peft_model

    return get_peft_model(
        model, LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules=targets, task_type="CAUSAL_LM")
    )
