"""The small WordNet task and the tiny model that the training tests share (not a test module)."""

import torch

from arrank.data import wordnet as W
from arrank.training import models


def canine_data():
    """The canine.n.02 subtree (10 held out, short prompts, no cache) and the texts its BPE learns."""
    df = W.build_wordnet_dataset(
        subtree="canine.n.02", min_relevant=1, n_eval=10, template="wordnet_short", cache=False
    )
    texts = list(df["prompt"]) + sorted({d for r in df["relevant"] for d in r})
    return df, texts


def tiny_model(texts, seed=0):
    """A one-layer tiny Llama (hidden 32) and its BPE of 400 tokens, seeded."""
    torch.manual_seed(seed)
    return models.tiny_model_and_tokenizer(
        texts, vocab_size=400, hidden=32, layers=1, heads=2, intermediate=64, seed=seed, cache=False
    )
