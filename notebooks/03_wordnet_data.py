# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 03 · The WordNet hypernym-ranking dataset (paper §5.1, Appendix C, Appendix D.1)
#
# **Task.** A query is a noun synset at depth ≥ 1 (the root `entity.n.01` is never a query). Its
# relevant documents are its hypernyms, the synsets on its path up to the root, ranked most
# specific first: rank 1 is the direct hypernym. One negative per query is a random noun synset
# that is neither on the path nor the query. docIDs are the synset names themselves
# (`even-toed_ungulate.n.01`). The prompt is Appendix D.1's, with the relevant docIDs shuffled.
#
# **Choices the paper leaves open** (parameters, defaults in brackets): a synset with several
# hypernym paths uses one path chosen deterministically [`longest`; ties by name]; the root
# `entity.n.01` counts as relevant [yes: the D.1 prompt lists it, and only then do the per-docID
# items come to the paper's ~700k]; in a subtree (the quick profile's `animal.n.01`), the
# subtree root is the top of every path and is not itself relevant, and negatives come from the
# subtree. Two views of the same queries feed training: **top-1** (one item per query, the
# paper's 84k-scale NTP data) and **per-docID** (one item (q, d_r, r) per relevant document,
# the 700k-scale data of the item-weighted losses; both sizes from Appendix B). Held-out
# evaluation queries never appear in either training view.

# %% [markdown]
# **Changing a parameter:** the next cell holds the values that run, those of the quick profile. In
# JupyterLab, edit a value and run all cells; with `profile = "paper"` every value you left as
# the cell has it takes the paper profile's (the cell after prints which). From the command line,
# `python -m arrank.workbook.run 03 -p profile paper` runs the notebook into `outputs/03_wordnet_data/<run_name>/`
# (`--help` after `03` lists every parameter, each profile's values and what is allowed).

# %% tags=["parameters"]
profile: str = "quick"  # "quick" (animal.n.01 subtree, CPU) or "paper" (all 82k noun queries)
seed: int = 0  # seeds the negatives, the prompt shuffles and the train/eval split
run_name: str = "auto"  # folder under outputs/03_wordnet_data/; auto: profile and date-time
subtree: str = "animal.n.01"  # '' for all nouns, or a synset whose hyponyms are the queries
min_relevant: int = 5  # keep queries with at least this many relevant docIDs
max_queries: int = 0  # seeded sample of queries, 0 for all
n_eval: int = 300  # held-out evaluation queries
path_rule: str = "longest"  # hypernym path of a synset with several: longest, shortest or union
include_root: bool = True  # whether entity.n.01 is a relevant docID (all-nouns builds)
template: str = "wordnet"  # prompt: wordnet (Appendix D.1 word for word) or wordnet_short (tiny models)
tokenizer_name: str = "tiny"  # docID length statistics: tiny (BPE trained on this data) or a local folder
tokenizer_vocab: int = 2000  # vocabulary of the tiny BPE tokenizer

# %%
import plotly.express as px
from IPython.display import Markdown

from arrank.common import findings, outputs, params
from arrank.training import tokenizer
from arrank.data import wordnet as W

P = params.check_params("03_wordnet_data", globals())
run_dir = outputs.start_run("03_wordnet_data", P)
timings: dict[str, float] = {}
P

# %% [markdown]
# ## 1. Build the dataset
# Built once per parameter set and cached under `data/cache/wordnet/<hash>/` (written through a
# temporary folder, so an interrupted build never leaves a folder that looks complete).

# %%
with outputs.timed(timings, "build"):
    df = W.build_wordnet_dataset(path_rule=P["path_rule"], include_root=P["include_root"],
                                 subtree=P["subtree"] or None, max_queries=P["max_queries"] or None,
                                 min_relevant=P["min_relevant"], n_eval=P["n_eval"],
                                 template=P["template"], seed=P["seed"])
top1, per_docid = W.top1_view(df), W.per_docid_view(df)
summary = W.dataset_summary(df)
outputs.save_table(summary, run_dir, "summary")
print(f"cache: data/cache/wordnet/{df.attrs['hash']}/  ({timings['build']:.1f} s)")
summary

# %% [markdown]
# Evaluation queries never appear in training, in either view:

# %%
train_queries = set(df.loc[df["split"] == "train", "query"])
eval_queries = set(df.loc[df["split"] == "eval", "query"])
overlap = len(eval_queries & (set(top1.loc[top1["split"] == "train", "query"])
                              | set(per_docid.loc[per_docid["split"] == "train", "query"])))
print(f"{len(train_queries)} train / {len(eval_queries)} eval queries; eval queries in training items: {overlap}")
print(f"top-1 view: {len(top1):,} items; per-docID view: {len(per_docid):,} items")

# %% [markdown]
# ## 2. The paper's example: deer.n.01
# The ranked hypernyms of `deer.n.01` over all of WordNet (independent of the subtree chosen
# above) reproduce the list of section 5.1. The prompt below is this build's: Appendix D.1's
# template, listing only the hypernyms below the subtree's root (all 14 over all nouns).

# %%
deer = W.ranked_hypernyms("deer.n.01", P["path_rule"], include_root=True)
print(" > ".join(d.split(".")[0] for d in deer))
if "deer.n.01" in set(df["query"]):
    row = df.set_index("query").loc["deer.n.01"]
    print("\nin this build: negative =", row["negative"], "\n")
    print(row["prompt"])

# %% [markdown]
# ## 3. Statistics (Appendix C)
# How many relevant documents a query has, how deep queries sit, and how many tokens a docID
# takes for a tokenizer: with the tiny model's BPE (trained here on this data's docIDs) or any
# local tokenizer folder.

# %%
counts = W.query_distribution(df, "n_relevant")
depths = W.query_distribution(df, "depth")
outputs.save_table(counts, run_dir, "relevant_count_distribution")
outputs.save_table(depths, run_dir, "depth_distribution")
fig = px.bar(counts, x=counts.columns[0], y=counts.columns[1],
             title="Number of relevant docIDs (hypernyms) per query")
outputs.save_figure(fig, run_dir, "relevant_count_distribution")
fig.show()
fig = px.bar(depths, x=depths.columns[0], y=depths.columns[1], title="Depth of the query synsets")
outputs.save_figure(fig, run_dir, "depth_distribution")
fig.show()

# %%
if P["tokenizer_name"] == "tiny":
    docid_texts = sorted(set(df["query"]) | {d for ds in df["relevant"] for d in ds} | set(df["negative"]))
    tok = tokenizer.train_bpe(docid_texts, P["tokenizer_vocab"])
else:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(P["tokenizer_name"])
lengths = W.docid_token_lengths(df, tok)
length_dist = W.token_length_distribution(lengths)
outputs.save_table(length_dist, run_dir, "docid_token_lengths")
fig = px.bar(length_dist, x=length_dist.columns[0], y=length_dist.columns[1],
             title=f"docID length in tokens ({P['tokenizer_name']} tokenizer, EOS not counted)")
outputs.save_figure(fig, run_dir, "docid_token_lengths")
fig.show()

# %% [markdown]
# ## 4. A sample of prompts
# Saved as `prompts_sample.csv` in the run folder.

# %%
sample = df.sample(n=min(20, len(df)), random_state=P["seed"])[["query", "split", "negative", "prompt"]]
outputs.save_table(sample, run_dir, "prompts_sample")
print(sample["prompt"].iloc[0])

# %% [markdown]
# ## Results

# %%
paper_deer = ["ruminant", "even-toed_ungulate", "ungulate", "placental", "mammal", "vertebrate", "chordate",
              "animal", "organism", "living_thing", "whole", "object", "physical_entity", "entity"]
metrics = {
    "n_queries": len(df),
    "n_train_queries": len(train_queries),
    "n_eval_queries": len(eval_queries),
    "n_items_top1": len(top1),
    "n_items_per_docid": len(per_docid),
    "mean_relevant": float(df["n_relevant"].mean()),
    "max_relevant": int(df["n_relevant"].max()),
    "eval_queries_in_training": overlap,
    "deer_matches_paper": [d.split(".")[0] for d in deer] == paper_deer,
    "mean_docid_tokens": float((lengths["n_tokens"] * lengths["occurrences"]).sum() / lengths["occurrences"].sum()),
}
outputs.write_results(run_dir, "03_wordnet_data", P, metrics, timings)
print(f"{len(metrics)} metrics written to the run's results.json")

# %% [markdown]
# ## What to look for
# This build against section 5.1 and Appendix B (the paper's example and its scale), in words.

# %%
Markdown(findings.findings_markdown(W.dataset_findings(metrics, P)))

# %% [markdown]
# ## Exercises
# Predict first, then run the command from the repository root (`python` is the workbook's
# environment, e.g. `.venv/bin/python`), then open the answer.
#
# **1. The shortest path instead of the longest.** A synset with several hypernym paths gets the
# longest one (`path_rule = "longest"`). With the shortest, how many queries keep at least 5 relevant
# docIDs, and how many relevant docIDs does a query have on average?
#
# ```bash
# python -m arrank.workbook.run 03 -p path_rule shortest -p run_name ex-shortest
# ```
#
# <details><summary>Answer</summary>
#
# 3,029 queries instead of 3,248, with 6.90 relevant docIDs on average instead of 7.11 (at most 11
# instead of 12); 20,888 per-docID training items instead of 23,105. The paper's deer.n.01 example is
# unchanged (it has one path).
#
# </details>
#
# **2. A smaller subtree.** The quick profile uses the hyponyms of animal.n.01. What happens with
# those of dog.n.01 (189 queries) and the same `min_relevant = 5`?
#
# ```bash
# python -m arrank.workbook.run 03 -p subtree dog.n.01 -p run_name ex-dog
# ```
#
# <details><summary>Answer</summary>
#
# The run stops with an error, because relevant docIDs are the hypernyms *inside* the subtree:
# `no queries left after filtering: the hierarchy below dog.n.01 has 189 queries, and min_relevant=5
# keeps none (the most relevant docs any has is 4; ...)`. The executed notebook is kept as
# `outputs/03_wordnet_data/ex-dog.failed-<time>/`. With `-p min_relevant 1 -p n_eval 20` it runs:
# 171 queries (18 hyponyms have no relevant docID inside the subtree), 2.08 relevant docIDs on
# average, at most 4, and the tiny BPE tokenizer trained on so little text makes every docID one
# token (1.0 on average, against 2.46 for animal.n.01).
#
# </details>
