"""Causal language models of the workbook: the ``tiny`` random-initialised model, and the output
embedding matrix E (section 3.2: P(. | c) = softmax(E phi(c))) of any model.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def build_tiny_model(vocab_size: int, hidden: int = 128, layers: int = 4, heads: int = 4,
                     intermediate: int = 384, seed: int = 0, tokenizer=None):
    """A random-initialised Llama-architecture causal LM (transformers), seeded.

    Defaults are the CPU-feasible size of notes/cpu-feasibility.md (4 layers, hidden 128).
    When a tokenizer is given its pad/bos/eos ids go into the config.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    ids = {}
    if tokenizer is not None:
        ids = {"pad_token_id": tokenizer.pad_token_id, "bos_token_id": tokenizer.bos_token_id,
               "eos_token_id": tokenizer.eos_token_id}
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=heads,
                         intermediate_size=intermediate, max_position_embeddings=2048,
                         tie_word_embeddings=False, **ids)
    torch.manual_seed(seed)
    return LlamaForCausalLM(config)


def output_embeddings(model) -> np.ndarray:
    """E: the model's output embedding matrix (|V| x n) as float64 numpy."""
    return model.get_output_embeddings().weight.detach().float().cpu().numpy().astype(np.float64)


def load_output_embeddings(path: str | Path) -> np.ndarray:
    """E of a local pretrained model folder, read from its safetensors files without loading the
    model: ``lm_head.weight``, or the input embeddings when the model ties them.

    Works for a 7B model on a laptop (reads one |V| x n tensor). Clear errors for a missing folder,
    no safetensors, or no such tensor.
    """
    from safetensors import safe_open

    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"pretrained model folder {folder} does not exist")
    files = sorted(folder.glob("*.safetensors"))
    if not files:
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


# --------------------------------------------------------------------------- model_name / backends

BACKENDS = ("auto", "unsloth", "transformers")
# A chat template for the tiny model that is exactly BOS + the prompt: the prompt itself ends with
# its answer marker, and the docID follows it directly (arrank.training.encoding).
TINY_CHAT_TEMPLATE = "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}"
# The paper's model and Unsloth's mirrors of it (documented choices for model_name).
PAPER_MODELS = {
    "paper": "mistralai/Mistral-7B-Instruct-v0.3",
    "unsloth-16bit": "unsloth/mistral-7b-instruct-v0.3",
    "unsloth-4bit": "unsloth/mistral-7b-instruct-v0.3-bnb-4bit",
}


def tiny_model_and_tokenizer(texts: list[str], vocab_size: int = 2000, hidden: int = 128, layers: int = 4,
                             heads: int = 4, intermediate: int = 384, seed: int = 0, cache: bool = True):
    """``model_name="tiny"``: a BPE tokenizer trained on ``texts`` (the task's prompts and docIDs)
    and a random-initialised Llama of the given size, built once and cached under
    ``data/cache/tiny/<hash>/`` (the hash covers the texts and every size). Returns (model, tokenizer).
    """
    import hashlib

    from transformers import AutoTokenizer, LlamaForCausalLM

    from arrank.workbook import paths
    from arrank.data.cache import params_hash
    from arrank.training.tokenizer import train_bpe

    digest = hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest()
    key = params_hash({"texts": digest, "vocab_size": vocab_size, "hidden": hidden, "layers": layers,
                       "heads": heads, "intermediate": intermediate, "seed": seed, "version": 1})
    folder = paths.CACHE / "tiny" / key
    if cache and (folder / "config.json").exists() and (folder / "tokenizer.json").exists():
        return LlamaForCausalLM.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)
    tokenizer = train_bpe(texts, vocab_size)
    tokenizer.chat_template = TINY_CHAT_TEMPLATE
    model = build_tiny_model(len(tokenizer), hidden, layers, heads, intermediate, seed, tokenizer)
    if cache:  # reloaded from the folder so that LoRA adapters record it as their base model
        save_atomic(model, tokenizer, folder)
        return LlamaForCausalLM.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)
    return model, tokenizer


def save_atomic(model, tokenizer, folder: Path) -> Path:
    """``save_pretrained`` model and tokenizer into a temporary folder renamed into place."""
    import shutil
    import tempfile

    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.tmp-", dir=folder.parent))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        from arrank.workbook.outputs import umask_permissions

        umask_permissions(tmp).rename(folder)  # mkdtemp's 0700 would hide the model from other users
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def resolve_backend(backend: str) -> str:
    """``auto`` -> ``unsloth`` when CUDA and unsloth are importable, else ``transformers``.
    ``unsloth`` without CUDA fails at once (Unsloth runs only on NVIDIA GPUs)."""
    import importlib.util

    import torch

    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r} is not allowed; choose one of {list(BACKENDS)}")
    has_unsloth = importlib.util.find_spec("unsloth") is not None
    if backend == "unsloth" and not torch.cuda.is_available():
        raise RuntimeError("backend='unsloth' needs an NVIDIA GPU with CUDA, and this machine has none; "
                           "use backend='transformers' (or 'auto')")
    if backend == "unsloth" and not has_unsloth:
        raise RuntimeError("backend='unsloth' but unsloth is not installed: pip install -e '.[gpu]'")
    if backend == "auto":
        return "unsloth" if torch.cuda.is_available() and has_unsloth else "transformers"
    return backend


def load_pretrained(model_name: str, backend: str, max_length: int, load_in_4bit: bool = False):
    """A pretrained causal LM (hub id or local folder) and its tokenizer through the backend.

    Unsloth: ``FastLanguageModel.from_pretrained`` with ``load_in_4bit`` (False = 16-bit LoRA,
    which needs no bitsandbytes) and ``use_exact_model_name`` for a local folder; logits are
    returned (``UNSLOTH_RETURN_LOGITS=1``) because the STOICaL loss is computed from them.
    """
    import os

    model_name = PAPER_MODELS.get(model_name, model_name)
    if resolve_backend(backend) == "unsloth":
        os.environ.setdefault("UNSLOTH_RETURN_LOGITS", "1")
        from unsloth import FastLanguageModel

        model, tokenizer = FastLanguageModel.from_pretrained(
            model_name=model_name, max_seq_length=max_length, load_in_4bit=load_in_4bit, dtype=None,
            use_exact_model_name=Path(model_name).is_dir())
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(model_name)
        tokenizer = AutoTokenizer.from_pretrained(model_name)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def add_lora(model, backend: str, r: int, alpha: int, dropout: float, target_modules: str, seed: int = 0):
    """LoRA adapters (peft, or Unsloth's ``get_peft_model``); ``r = 0`` keeps full fine-tuning.
    ``target_modules`` is ``all-linear`` or a comma-separated list of module names."""
    if r == 0:
        return model
    targets = "all-linear" if target_modules == "all-linear" else [m.strip() for m in target_modules.split(",")]
    if resolve_backend(backend) == "unsloth":
        from unsloth import FastLanguageModel

        if targets == "all-linear":
            targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
        return FastLanguageModel.get_peft_model(model, r=r, lora_alpha=alpha, lora_dropout=dropout,
                                                target_modules=targets, random_state=seed)
    from peft import LoraConfig, get_peft_model

    return get_peft_model(model, LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout,
                                            target_modules=targets, task_type="CAUSAL_LM"))


def load_trained(folder: Path | str, backend: str = "auto", max_length: int = 1024):
    """A model that notebook 05 saved into ``<run>/model`` and its tokenizer: full weights, or a
    LoRA adapter on the base model its ``adapter_config.json`` names. Clear error when the folder
    holds no model."""
    folder = Path(folder)
    adapter = folder / "adapter_config.json"
    if not (folder / "config.json").exists() and not adapter.exists():
        raise FileNotFoundError(f"{folder} holds no saved model (no config.json or adapter_config.json); "
                                "give a finished notebook 05 run")
    if not adapter.exists():
        from transformers import AutoModelForCausalLM, AutoTokenizer

        return AutoModelForCausalLM.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)
    base = json.loads(adapter.read_text()).get("base_model_name_or_path")
    if not base:
        raise ValueError(f"{adapter} names no base model (base_model_name_or_path)")
    if resolve_backend(backend) == "unsloth":
        return load_pretrained(str(folder), backend, max_length)  # Unsloth loads base + adapter itself
    from peft import PeftModel
    from transformers import AutoTokenizer

    model, _ = load_pretrained(base, backend, max_length)
    return PeftModel.from_pretrained(model, folder), AutoTokenizer.from_pretrained(folder)
