# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 04 · The ESCI shopping-queries ranking dataset (paper §5.1, Appendix D.2)
#
# **Task.** From the Shopping Queries Dataset (Reddy et al., 2022): embed every query and product
# title, and give each query the **1st, 100th, 200th, …, 10000th** titles by inner product, in
# descending order, as its ranked relevant documents (step 100 keeps neighbouring ranks
# meaningfully different). Non-English queries and titles are filtered out; queries left with no
# English title are dropped. Titles are long, so each gets a short **docID** from sparse
# dictionary learning over the title embeddings: 100 atoms, OMP with 3 nonzero coefficients, the
# docID being the atom indices sorted by descending |coefficient| ("25,36,39"). The prompt is
# Appendix D.2's: each title preceded by its docID in brackets.
#
# **What differs from the paper.** The paper embeds with Gecko (`gecko-1b-en`), which is not
# public: here the embedder is a parameter (precomputed `.npy`/`.parquet` files, a
# sentence-transformers model, or an offline TF-IDF + SVD default that needs no download). The
# quick profile runs on a **fixture**: a few hundred products and a few dozen queries in the
# exact schema of the real files (`data/fixtures/`), with a shorter step and depth. The real
# files (`shopping_queries_dataset_examples.parquet`, `shopping_queries_dataset_products.parquet`
# from the esci-data repository, fetched with git lfs) go in `data/esci/` for the paper profile;
# the code path is the same.

# %% [markdown]
# **Changing a parameter:** the next cell holds the values that run, those of the quick profile. In
# JupyterLab, edit a value and run all cells; with `profile = "paper"` every value you left as
# the cell has it takes the paper profile's (the cell after prints which). From the command line,
# `python -m arrank.workbook.run 04 -p profile paper` runs the notebook into `outputs/04_esci_data/<run_name>/`
# (`--help` after `04` lists every parameter, each profile's values and what is allowed).

# %% tags=["parameters"]
profile: str = "quick"  # "quick" (the committed fixture, CPU) or "paper" (the real files in data/esci)
seed: int = 0  # seeds the embedder, the dictionary learning and the prompt shuffles
run_name: str = "auto"  # folder under outputs/04_esci_data/; auto: profile and date-time
data_dir: str = "fixture"  # fixture (the committed sample), or the folder of the two ESCI parquet files
embedder: str = "tfidf"  # tfidf, tfidf:DIM, precomputed:FOLDER or st:MODEL (sentence-transformers)
step: int = 5  # take every step-th title by inner product
depth: int = 60  # down to this rank
n_components: int = 32  # dictionary atoms (docID alphabet)
nnz: int = 3  # nonzero OMP coefficients, i.e. components of a docID
collisions: str = "keep"  # titles sharing a docID: keep (as in Appendix D.2), drop or suffix
filter_titles: str = "before"  # English filter before ranking (default) or after it
max_queries: int = 0  # 0 for all queries
template: str = "esci"  # prompt: esci (Appendix D.2 word for word) or esci_short (tiny models)
tokenizer_vocab: int = 2000  # vocabulary of the tiny BPE tokenizer for title/docID length statistics

# %%
from pathlib import Path

import plotly.express as px
from IPython.display import Markdown

from arrank.common import findings, outputs, params, paths
from arrank.training import tokenizer
from arrank.data import esci

P = params.check_params("04_esci_data", globals())
run_dir = outputs.start_run("04_esci_data", P)
timings: dict[str, float] = {}
source = esci.FIXTURE_DIR if P["data_dir"] == "fixture" else paths.ROOT / Path(P["data_dir"])
print("data:", source, "(FIXTURE: a small stand-in in the real schema)" if P["data_dir"] == "fixture" else "")
P

# %% [markdown]
# ## 1. Build the dataset
# Loading checks the two files and their columns (a missing file says where to get it), then
# filters, embeds, ranks by exact blocked top-k and learns the docIDs. Cached under
# `data/cache/esci/<hash>/`.

# %%
with outputs.timed(timings, "build"):
    tables = esci.build_esci_dataset(source, embedder=P["embedder"], step=P["step"], depth=P["depth"],
                                     n_components=P["n_components"], nnz=P["nnz"], template=P["template"],
                                     seed=P["seed"], max_queries=P["max_queries"] or None,
                                     collisions=P["collisions"], filter_titles=P["filter_titles"])
queries, titles, stats = tables["queries"], tables["titles"], tables["stats"].iloc[0]
outputs.save_table(tables["stats"], run_dir, "stats")
stats.to_frame("value")

# %% [markdown]
# ## 2. One query, its ranked titles and the prompt
# The titles at ranks 1, 1+step, … by inner product, with their docIDs. Titles sharing a docID
# are kept (the paper's own Appendix D.2 prompt shows `[25,36,39]` twice) and counted.

# %%
example = queries.iloc[0]
print(f"query: {example['query']!r}  ({example['n_titles']} titles, {example['n_collisions']} sharing a docID)")
for pos, docid, title in list(zip(example["positions"], example["docids"], example["titles"]))[:6]:
    print(f"  rank {pos:>5}  [{docid}]  {title[:90]}")
print()
print(example["prompt"][:1500])

# %% [markdown]
# ## 3. Statistics: list sizes, docID collisions and how trie-friendly the docIDs are
# A prefix tree over the docIDs (section 4.2) only helps when docIDs share prefixes: below, per
# depth, how many distinct prefixes there are and how many children an internal node has, over
# the whole corpus and within one query's list.

# %%
fig = px.histogram(queries, x="n_titles", title="Relevant titles per query")
outputs.save_figure(fig, run_dir, "titles_per_query")
fig.show()
fig = px.histogram(tables["docid_counts"], x="count", log_y=True, title="Titles per docID (collisions when > 1)")
outputs.save_figure(fig, run_dir, "docid_collisions")
fig.show()
outputs.save_table(tables["trie_corpus"], run_dir, "trie_corpus")
outputs.save_table(tables["trie_queries"], run_dir, "trie_queries")
tables["trie_corpus"], tables["trie_queries"]

# %% [markdown]
# Lengths in tokens of titles and docIDs for a tiny BPE tokenizer trained on the titles (as a
# pretrained tokenizer, it never saw the docIDs, so "25,36,39" splits into numbers and commas). Real
# titles take dozens of tokens, which is why ESCI needs docIDs; the fixture's are short (~10).

# %%
tok = tokenizer.train_bpe(list(titles["title"]), P["tokenizer_vocab"])
titles["title_tokens"] = [len(tok(t, add_special_tokens=False)["input_ids"]) for t in titles["title"]]
titles["docid_tokens"] = [len(tok(d, add_special_tokens=False)["input_ids"]) for d in titles["docid"]]
fig = px.histogram(titles.melt(value_vars=["title_tokens", "docid_tokens"], var_name="text", value_name="tokens"),
                   x="tokens", color="text", barmode="overlay", title="Length in tokens: titles vs docIDs")
outputs.save_figure(fig, run_dir, "token_lengths")
fig.show()

# %% [markdown]
# ## 4. A sample of prompts
# Saved as `prompts_sample.csv` in the run folder; below, the queries drawn.

# %%
sample = queries.sample(n=min(10, len(queries)), random_state=P["seed"])[["query", "n_titles", "prompt"]]
outputs.save_table(sample, run_dir, "prompts_sample")
sample[["query", "n_titles"]]

# %% [markdown]
# ## Results

# %%
metrics = {
    "n_queries": len(queries),
    "n_titles": len(titles),
    "mean_titles_per_query": float(queries["n_titles"].mean()),
    "queries_dropped_no_english_titles": int(stats["queries_dropped_no_english_titles"]),
    "us_titles_not_english": int(stats["us_titles_not_english"]),
    "docid_n_distinct": int(stats["docid_n_distinct"]),
    "docid_colliding_fraction": float(stats["docid_colliding_fraction"]),
    "queries_with_collisions": int(stats["queries_with_collisions"]),
    "trie_mean_children_depth1": float(tables["trie_corpus"]["mean_children"].iloc[0]),
    "mean_title_tokens": float(titles["title_tokens"].mean()),
    "mean_docid_tokens": float(titles["docid_tokens"].mean()),
}
outputs.write_results(run_dir, "04_esci_data", P, metrics, timings)
print(f"{len(metrics)} metrics written to the run's results.json")

# %% [markdown]
# ## What to look for
# This build against section 5.1 and Table 2, in words.

# %%
Markdown(findings.findings_markdown(esci.dataset_findings(metrics, P)))

# %% [markdown]
# ## Exercises
# Predict first, then run the command from the repository root (`python` is the workbook's
# environment, e.g. `.venv/bin/python`), then open the answer. The quick profile uses the committed
# ESCI fixture: 30 queries, 227 titles.
#
# **1. One dictionary atom per docID.** A title's docID is the indices of its 3 nonzero OMP
# coefficients (`nnz = 3`) among 32 atoms. With one atom per title, how many distinct docIDs do the
# 227 titles get, and how many queries have titles that share a docID?
#
# ```bash
# python -m arrank.workbook.run 04 -p nnz 1 -p run_name ex-nnz1
# ```
#
# <details><summary>Answer</summary>
#
# 31 distinct docIDs instead of 137 (135 on some machines: docs/measurements.md): 98.7% of the titles
# share their docID with another (about 60% with `nnz = 3`), and all 30 queries have a collision (18
# with `nnz = 3`). The docIDs shrink from 6.2 to 1.3 tokens. Short docIDs are cheap to decode but
# cannot tell the titles apart.
#
# </details>
#
# **2. Dropping colliding titles.** Appendix D.2 keeps titles that share a docID. Drop them instead:
# how many titles does a query keep?
#
# ```bash
# python -m arrank.workbook.run 04 -p collisions drop -p run_name ex-drop
# ```
#
# <details><summary>Answer</summary>
#
# 12.1 titles per query on average instead of 13.0, and no query has a collision left (18 had one);
# the distinct docIDs are the same.
#
# </details>
