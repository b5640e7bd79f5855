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


# three training queries with their WordNet hypernyms in rank order (2 to 4 docIDs each)
THREE_QUERIES = {
    "dog.n.01": ["canine.n.02", "carnivore.n.01", "placental.n.01", "mammal.n.01"],
    "cat.n.01": ["feline.n.01", "carnivore.n.01"],
    "robin.n.01": ["thrush.n.03", "oscine.n.01", "passerine.n.01"],
}


def ranked_queries_model(queries, template):
    """A ranking table of ``queries`` ({query: relevant docIDs in rank order}, every one a training
    query, prompts from ``template``) and a two-layer tiny Llama with its BPE of 400 tokens, its
    weights redrawn large (std 0.2) so that a wrong mask, position or target moves losses and
    gradients far beyond rounding: (table, float32 model, tokenizer)."""
    import pandas as pd

    from arrank.data import prompts

    rows = [
        {
            "query": q,
            "relevant": rel,
            "split": "train",
            "prompt": prompts.wordnet_prompt(q, rel, prompts.query_rng(0, q), name=template),
        }
        for q, rel in queries.items()
    ]
    df = pd.DataFrame(rows)
    texts = list(df["prompt"]) + sorted({d for r in queries.values() for d in r})
    model, tok = models.tiny_model_and_tokenizer(
        texts, vocab_size=400, hidden=32, layers=2, heads=2, intermediate=64, seed=0, cache=False
    )
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" not in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.2)
    return df, model.float(), tok
