"""The paper's model architecture, random-initialised: Mistral-7B-Instruct-v0.3 (Appendix B), for
throughput and memory measurements where the real weights cannot be had (no model hub).

Speed and memory depend on the architecture, dtype and lengths, not on the weights' values
(``benchmarks/gpu.py --build-paper-architecture``, which imports this file; docs/gpu.md). The tokenizer is a local BPE on the task's texts (the ``tiny``
model's route) of at most 32,768 entries, while the embeddings keep all 32,768 rows, so the logits
have the real model's width; token ids and lengths are the local tokenizer's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# Mistral-7B-Instruct-v0.3's config.json, in transformers' MistralConfig field names (transformers
# 5 keeps rope_theta inside rope_parameters). bf16 weights, untied input and output embeddings, no
# sliding window: every layer attends to the whole sequence.
MISTRAL_7B_V03: dict[str, Any] = {
    "vocab_size": 32768,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "hidden_act": "silu",
    "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-5,
    "initializer_range": 0.02,
    "rope_parameters": {"rope_type": "default", "rope_theta": 1e6},
    "sliding_window": None,
    "tie_word_embeddings": False,
    "attention_dropout": 0.0,
    "bos_token_id": 1,
    "eos_token_id": 2,
}


def mistral_config(**overrides: Any):
    """A transformers ``MistralConfig`` of :data:`MISTRAL_7B_V03`, dtype bf16, with ``overrides`` (a
    scaled-down copy for tests); an override MistralConfig does not know is an error naming it."""
    from transformers import MistralConfig

    unknown = sorted(set(overrides) - set(MistralConfig().to_dict()) - set(MISTRAL_7B_V03))
    if unknown:
        raise ValueError(f"unknown MistralConfig fields {unknown}; allowed: {sorted(MISTRAL_7B_V03)}")
    values = {**MISTRAL_7B_V03, **overrides}
    if values["hidden_size"] != values["num_attention_heads"] * values["head_dim"]:
        raise ValueError(
            f"hidden_size={values['hidden_size']} must equal num_attention_heads="
            f"{values['num_attention_heads']} x head_dim={values['head_dim']}"
        )
    config = MistralConfig(**values)
    config.dtype = "bfloat16"
    config.architectures = ["MistralForCausalLM"]
    return config


def random_paper_model(
    folder: Path | str, texts: list[str], seed: int = 0, device: str = "cpu", **overrides: Any
) -> Path:
    """Mistral-7B-Instruct-v0.3's architecture (:func:`mistral_config` with ``overrides``) with seeded
    random bf16 weights, saved atomically with a BPE tokenizer trained on ``texts`` (at most
    ``vocab_size`` entries, else an error) into ``folder``, a folder ``model_name`` accepts. ``device="cuda"``
    initialises on the GPU; an existing ``folder`` is refused, never overwritten."""
    import torch
    from transformers import AutoModelForCausalLM

    from arrank.training.models import TINY_CHAT_TEMPLATE, save_atomic, special_token_ids
    from arrank.training.tokenizer import train_bpe

    folder = Path(folder)
    if folder.exists():
        raise FileExistsError(f"{folder} exists; give a new folder (a model folder is never overwritten)")
    config = mistral_config(**overrides)
    tokenizer = train_bpe(texts, config.vocab_size)
    if len(tokenizer) > config.vocab_size:
        raise ValueError(f"the tokenizer has {len(tokenizer)} entries > vocab_size={config.vocab_size}")
    tokenizer.chat_template = TINY_CHAT_TEMPLATE
    config.update(special_token_ids(tokenizer))
    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return save_atomic(model, tokenizer, folder)
