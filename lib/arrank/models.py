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
