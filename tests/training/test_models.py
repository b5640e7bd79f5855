"""Tiny BPE tokenizer and model, and reading E from a saved model folder."""

import numpy as np
import pytest

from arrank import theory
from arrank.data import docids
from arrank.training import models, tokenizer

TEXTS = ["even-toed_ungulate.n.01", "deer.n.01", "ruminant.n.01", "dog.n.01", "cat.n.01"] * 20


@pytest.fixture(scope="module")
def tok():
    return tokenizer.train_bpe(TEXTS + docids.random_numeric_docids(200, seed=1), vocab_size=300)


def test_bpe_keeps_docids_whole_pre_tokens(tok):
    alone = tok("deer.n.01", add_special_tokens=False)["input_ids"]
    inside = tok("query: dog.n.01 deer.n.01", add_special_tokens=False)["input_ids"]
    assert len(alone) >= 1 and inside[-len(alone) :] == alone
    assert tok.decode(alone) == "deer.n.01"


def test_docid_token_ids_include_eos(tok):
    ids = theory.docid_token_ids(tok, ["deer.n.01"])
    assert tok.eos_token_id in ids and ids == sorted(ids)
    assert tok.eos_token_id not in theory.docid_token_ids(tok, ["deer.n.01"], with_eos=False)
    for bad in (3, 4, 300.0, True):  # the 4 special tokens count: at least one learnt token more
        with pytest.raises(ValueError, match=rf"^vocab_size={bad!r} must be an integer > 4$"):
            tokenizer.train_bpe(TEXTS, bad)


def test_bpe_special_tokens_and_pre_tokens():
    """pad, bos, eos, unk are ids 0-3; an unseen character is unk, not dropped; trained on prompts,
    no token spans whitespace, so a docID inside a prompt keeps the tokens it has alone."""
    tok = tokenizer.train_bpe(["query: dog.n.01 answer: deer.n.01"] * 50 + TEXTS, vocab_size=300)
    assert [tok.pad_token, tok.bos_token, tok.eos_token, tok.unk_token] == list(tokenizer.SPECIAL_TOKENS)
    assert [tok.pad_token_id, tok.bos_token_id, tok.eos_token_id, tok.unk_token_id] == [0, 1, 2, 3]
    assert tok("Ü", add_special_tokens=False)["input_ids"] == [tok.unk_token_id]
    assert not [t for t in tok.get_vocab() if " " in t or "Ġ" in t]
    alone = tok("deer.n.01", add_special_tokens=False)["input_ids"]
    assert tok("query: dog.n.01 answer: deer.n.01", add_special_tokens=False)["input_ids"][-len(alone) :] == alone


def test_numeric_docids_format():
    ids = docids.random_numeric_docids(50, n_components=100, nnz=3, seed=0)
    parts = [list(map(int, d.split(","))) for d in ids]
    assert all(len(p) == 3 == len(set(p)) and all(0 <= i < 100 for i in p) for p in parts)
    assert docids.format_docid([25, 36, 39]) == "25,36,39"
    with pytest.raises(ValueError, match="nnz=5"):
        docids.random_numeric_docids(1, n_components=4, nnz=5)


def test_saved_model_embeddings_and_docid_rank(tok, tmp_path):
    model = models.build_tiny_model(len(tok), hidden=16, layers=1, heads=2, intermediate=32, tokenizer=tok)
    ids = {f"{r}_token_id": getattr(tok, f"{r}_token_id") for r in ("pad", "bos", "eos")}
    assert {k: getattr(model.config, k) for k in ids} == ids and None not in ids.values()
    assert not model.config.tie_word_embeddings  # E is its own matrix, not the input embeddings
    assert model.get_output_embeddings().weight.data_ptr() != model.get_input_embeddings().weight.data_ptr()
    model.save_pretrained(tmp_path / "m")
    E = models.output_embeddings(model)
    assert E.shape == (len(tok), 16)
    np.testing.assert_array_equal(models.load_output_embeddings(tmp_path / "m"), E)
    ids = theory.docid_token_ids(tok, docids.random_numeric_docids(200, seed=1))
    info = theory.docid_token_rank(E, ids)
    assert info["rank_e_prime"] == min(len(ids), 17)  # rank([E 1]) of a random E: min(|V_docids|, n + 1)


def test_a_saved_run_model_loads_pads_with_eos_and_is_refused_when_damaged(tok, tmp_path):
    """A model notebook 05 saved (``save_atomic``) loads back with the same weights; a tokenizer without
    a pad token pads with its EOS; a weights file that no longer matches its manifest is refused."""
    import copy

    import torch

    model = models.build_tiny_model(len(tok), hidden=16, layers=1, heads=2, intermediate=32, tokenizer=tok)
    no_pad = copy.deepcopy(tok)
    no_pad.pad_token = None
    folder = models.save_atomic(model, no_pad, tmp_path / "run" / "model")
    loaded, loaded_tok = models.load_model(folder)
    assert all(torch.equal(a.cpu(), b) for a, b in zip(loaded.parameters(), model.parameters()))  # a GPU loads onto it
    assert loaded_tok.pad_token_id == loaded_tok.eos_token_id == tok.eos_token_id
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-64] + bytes(64))  # same size, other numbers
    with pytest.raises(ValueError, match=rf"^the saved model {folder} is damaged: model.safetensors does not match"):
        models.load_model(folder)


def test_lora_takes_the_named_modules_and_alpha(tok):
    """``target_modules`` as a comma-separated list (spaces allowed) adapts exactly those; the LoRA
    scaling is alpha / r (here 8 / 2)."""
    model = models.build_tiny_model(len(tok), hidden=16, layers=2, heads=2, intermediate=32, tokenizer=tok)
    lora = models.add_lora(model, "transformers", 2, 8, 0.0, "q_proj, v_proj")
    adapted = {n.rsplit(".", 1)[-1]: m for n, m in lora.named_modules() if hasattr(m, "lora_A")}
    names = [n for n, m in lora.named_modules() if hasattr(m, "lora_A")]
    assert set(adapted) == {"q_proj", "v_proj"} and len(names) == 4  # both, in each of the 2 layers
    assert all(m.scaling["default"] == 4.0 for m in adapted.values())


def test_load_embeddings_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        models.load_output_embeddings(tmp_path / "absent")
    with pytest.raises(FileNotFoundError, match="no \\*.safetensors"):
        models.load_output_embeddings(tmp_path)


@pytest.mark.parametrize("damage", ["truncated weights", "garbled weights", "no manifest, truncated"])
def test_a_damaged_tiny_model_cache_is_named_set_aside_and_built_again(tmp_path, monkeypatch, capsys, damage):
    """A truncated model.safetensors in data/cache gave a SafetensorError naming nothing.
    The cached tiny model is derived (tokenizer and seeded weights from the task's texts): it is
    named in one line, set aside, and built again, with the same weights."""
    import torch

    from arrank.common import manifest, paths

    monkeypatch.setattr(paths, "CACHE", tmp_path / "cache")
    kw = dict(vocab_size=300, hidden=16, layers=1, heads=2, intermediate=32, seed=3)
    model, _ = models.tiny_model_and_tokenizer(TEXTS, **kw)
    before = [t.clone() for t in model.state_dict().values()]  # the loaded weights map the file
    (folder,) = (tmp_path / "cache" / "tiny").iterdir()
    assert models.model_folder_problem(folder) is None and (folder / manifest.MANIFEST).is_file()
    weights = folder / "model.safetensors"
    raw = weights.read_bytes()
    if damage == "garbled weights":  # the header intact, tensor data changed: only the hash tells
        weights.write_bytes(raw[:-64] + bytes(64))
    else:
        weights.write_bytes(raw[: len(raw) - 1000])
    if damage.startswith("no manifest"):  # a folder saved before manifests: its own header tells
        (folder / manifest.MANIFEST).unlink()
    capsys.readouterr()
    again, _ = models.tiny_model_and_tokenizer(TEXTS, **kw)
    said = capsys.readouterr().out.splitlines()
    why = {
        "truncated weights": "model.safetensors is ",
        "garbled weights": "model.safetensors does not match its sha256",
        "no manifest, truncated": "model.safetensors is ",
    }[damage]
    assert len(said) == 1 and said[0].startswith(f"{folder} is unusable: {why}")
    assert "the tiny model is built again" in said[0] and "set aside as broken-" in said[0]
    assert len(list(folder.parent.glob("broken-*"))) == 1 and models.model_folder_problem(folder) is None
    assert all(torch.equal(a, b) for a, b in zip(before, again.state_dict().values()))


def test_load_model_has_one_loader_for_every_kind_and_builds_tiny_from_the_tables_texts(tmp_path, monkeypatch):
    """``load_model``'s table covers every kind ``named_models.model_kind`` gives, and a run's saved model
    (a Path); ``"tiny"`` is the cached tiny model of the ranking table's prompts and every docID, the
    negatives included."""
    import pandas as pd
    import torch

    from arrank.common import named_models, paths

    (tmp_path / "m.gguf").write_bytes(b"")
    names = ["tiny", "paper", "smollm2-135m", "owner/name", str(tmp_path), str(tmp_path / "m.gguf")]
    assert set(models.LOADERS) == {named_models.model_kind(n) for n in names} | {"trained"}
    # what is loaded: an alias's hub id (the paper's model, section 5.1), a hub id or folder as given
    got = [models.resolve_model(n) for n in ("paper", "owner/name", str(tmp_path))]
    assert got == ["mistralai/Mistral-7B-Instruct-v0.3", "owner/name", str(tmp_path)]
    with pytest.raises(ValueError, match="model_name='tiny' is built, not loaded"):
        models.resolve_model("tiny")
    monkeypatch.setattr(paths, "CACHE", tmp_path / "cache")
    df = pd.DataFrame(
        {
            "prompt": ["query: dog.n.01 answer:", "query: cat.n.01 answer:"],
            "relevant": [["canine.n.02", "carnivore.n.01"], ["feline.n.01"]],
            "negative": ["zinc_blende.n.01", None],
        }
    )
    model, tok = models.load_model("tiny", df=df, tokenizer_vocab=300, seed=3)
    texts = list(df["prompt"]) + ["canine.n.02", "carnivore.n.01", "feline.n.01", "zinc_blende.n.01"]
    again, _ = models.tiny_model_and_tokenizer(texts, 300, seed=3)
    assert len(list((tmp_path / "cache" / "tiny").iterdir())) == 1  # the same texts, sizes and seed: one folder
    other, _ = models.tiny_model_and_tokenizer(texts, 300, seed=4)  # another seed: its own folder and weights
    assert len(list((tmp_path / "cache" / "tiny").iterdir())) == 2
    assert not torch.equal(other.lm_head.weight, model.lm_head.weight)
    assert model.config.vocab_size == len(tok) <= 300 and all(
        map(torch.equal, *(m.parameters() for m in (model, again)))
    )
    with pytest.raises(ValueError, match="model_name='tiny' is built for a ranking table's texts: give load_model"):
        models.load_model("tiny")
    with pytest.raises(TypeError, match="unexpected keyword argument 'sede'"):  # a misspelled keyword is refused
        models.load_model("tiny", df=df, sede=3)
    with pytest.raises(FileNotFoundError, match="holds no saved model"):
        models.load_model(tmp_path / "absent")  # a Path: a run's saved model
    with pytest.raises(ValueError, match="neither a known name"):
        models.load_model(str(tmp_path / "absent"))  # a str: a model_name
