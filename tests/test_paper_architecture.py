"""Mistral-7B-Instruct-v0.3's architecture, random-initialised (benchmarks/paper_architecture.py, which
benchmarks/gpu.py builds): the exact configuration's fields, and the build-and-save path at a scaled-down size."""

from __future__ import annotations

import importlib.util
import json

import pytest
import torch

from arrank.common import paths
from arrank.training import models

_spec = importlib.util.spec_from_file_location(
    "paper_architecture", paths.ROOT / "benchmarks" / "paper_architecture.py"
)
PA = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(PA)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TEXTS = [f"query: {w}.n.01 answer:" for w in ("dog", "cat", "deer", "wolf")] * 5 + [
    "canine.n.02",
    "feline.n.01",
    "ruminant.n.01",
    "carnivore.n.01",
]
SMALL = {
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "vocab_size": 256,
}


def test_config_is_mistral_7b_v03_in_transformers_field_names():
    from transformers import MistralConfig

    assert set(PA.MISTRAL_7B_V03) <= set(MistralConfig().to_dict())  # every name is a real field
    c = PA.mistral_config().to_dict()
    assert (
        c["hidden_size"],
        c["num_hidden_layers"],
        c["num_attention_heads"],
        c["num_key_value_heads"],
        c["intermediate_size"],
        c["vocab_size"],
        c["max_position_embeddings"],
    ) == (4096, 32, 32, 8, 14336, 32768, 32768)
    assert c["rope_parameters"]["rope_theta"] == 1e6 and c["sliding_window"] is None
    assert c["rms_norm_eps"] == 1e-5 and c["tie_word_embeddings"] is False and c["dtype"] == "bfloat16"
    # 7.25 B parameters: the published size of Mistral-7B-v0.3 (vocabulary 32,768), counted from
    # the configuration on the meta device (nothing is allocated)
    with torch.device("meta"):
        from transformers import AutoModelForCausalLM

        n = sum(p.numel() for p in AutoModelForCausalLM.from_config(PA.mistral_config()).parameters())
    assert n == 7_248_023_552


def test_bad_overrides_are_named():
    with pytest.raises(ValueError, match=r"unknown MistralConfig fields \['hidden'\]"):
        PA.mistral_config(hidden=8)
    with pytest.raises(ValueError, match="hidden_size=64 must equal num_attention_heads=4 x head_dim=128"):
        PA.mistral_config(hidden_size=64, num_attention_heads=4)


def test_scaled_down_model_saves_loads_and_trains(tmp_path):
    folder = PA.random_paper_model(tmp_path / "m", TEXTS, seed=0, **SMALL)
    saved = json.loads((folder / "config.json").read_text())
    assert saved["model_type"] == "mistral" and saved["dtype"] == "bfloat16"
    assert saved["num_key_value_heads"] == 2 and saved["rope_parameters"]["rope_theta"] == 1e6
    model, tok = models.load_model(str(folder), "transformers", 64)
    assert next(model.parameters()).dtype == torch.bfloat16
    assert model.get_output_embeddings().weight.shape == (256, 64) and len(tok) <= 256
    assert tok.eos_token_id == model.config.eos_token_id and tok.pad_token_id is not None
    # the saved weights are the seeded ones: the same seed rebuilds them bit for bit, another does not
    again = PA.random_paper_model(tmp_path / "again", TEXTS, seed=0, **SMALL)
    other = PA.random_paper_model(tmp_path / "other", TEXTS, seed=1, **SMALL)
    E = models.load_output_embeddings(folder)
    assert (models.load_output_embeddings(again) == E).all()
    assert not (models.load_output_embeddings(other) == E).all()
    # initialiser_range 0.02: the output layer's entries have that standard deviation
    assert abs(E.std() - 0.02) < 0.002
    ids = tok("query: dog.n.01 answer: canine.n.02", return_tensors="pt")["input_ids"]
    logits = model(input_ids=ids).logits
    assert logits.shape == (1, ids.shape[1], 256) and torch.isfinite(logits.float()).all()


def test_existing_folder_is_refused(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "keep.txt").write_text("x")
    with pytest.raises(FileExistsError, match="never overwritten"):
        PA.random_paper_model(tmp_path / "m", TEXTS, **SMALL)
    assert (tmp_path / "m" / "keep.txt").read_text() == "x"
