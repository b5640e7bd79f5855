# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 06 · Evaluation: scoring, CVR / nDCG / R@k, greedy and trie-constrained beam search (paper §5.1)
#
# A trained run of notebook 05 (or an untrained model, the baseline row) is evaluated on the
# held-out queries that run never trained on. Every candidate docID $d$ of a query (its relevant
# docIDs, and for WordNet its sampled negative) is scored by the mean log-probability of its tokens
# after the augmented prompt $\bar q$,
# $$\mathrm{score}(d) = \frac{1}{|\mathcal T(d)|}\sum_{k=1}^{|\mathcal T(d)|}\log p_\theta\big(\mathcal T(d)[k]\mid \mathcal T(\bar q), \mathcal T(d)_{<k}\big),$$
# with $d$ tokenised exactly as in training (`arrank.training.encoding`). The prompt runs once and its
# key/value cache serves all candidates (`arrank.evaluation.scoring`); on a GPU, `query_batch` queries
# share one forward pass instead, each in its own row (the same scores up to float rounding). Metrics,
# as in the paper:
#
# - **CVR**: the share of queries whose negative scores above *some* positive (WordNet only);
# - **nDCG** of the predicted scores against the gold gains $\log(n_q+1)\dots\log 2$ (negative: 0);
# - **R@k** $= |\text{gold top-}k \cap \text{predicted top-}k| / k$, over the queries with at least
#   $k$ relevant docIDs (Table 1: $k = 1..5$; Table 2: 1, 2, 5, 10, 25, 50).
#
# Then decoding, what ARR is for and the paper does not measure: **greedy decoding** (section 5.1's
# proxy for beam search; here: is the greedy string a valid docID?) and **beam search constrained to the query's docID
# trie**, which returns a ranked top-$k$ list directly, compared with the gold and with the
# scorer's ranking; and unconstrained beam search, to see how many of its outputs are no docID.

# %% [markdown]
# **Changing a parameter:** the next cell holds the values that run, those of the quick profile. In
# JupyterLab, edit a value and run all cells; with `profile = "pretrained"` every value you left as
# the cell has it takes the pretrained profile's (the cell after prints which). From the command line,
# `python -m arrank.workbook.run 06 -p profile pretrained` runs the notebook into `outputs/06_evaluate/<run_name>/`
# (`--help` after `06` lists every parameter, each profile's values and what is allowed).

# %% tags=["parameters"]
profile: str = "quick"  # "quick" (CPU, minutes), "pretrained" (SmolLM2-135M, CPU) or "paper" (the paper's scale, GPU)
seed: int = 0  # seeds the untrained model and the random floor
run_name: str = "auto"  # folder under outputs/06_evaluate/
train_run: str = "latest"  # run name of a finished 05_train run, latest, or none (an untrained model)
model_name: str = "tiny"  # train_run none: tiny (random init), smollm2-135m, paper (Mistral-7B), a hub id or local folder
backend: str = "auto"  # auto, unsloth or transformers (loading a pretrained model or an adapter)
dataset: str = "wordnet"  # train_run none: wordnet, esci or custom (a trained run brings its own data)
data_path: str = ""  # train_run none, dataset custom: its JSON Lines file of queries
custom_docids: str = "id"  # train_run none, dataset custom: docIDs from id, text or semantic
subtree: str = "animal.n.01"  # train_run none: WordNet subtree, '' for all nouns
min_relevant: int = 5  # train_run none: queries with at least this many hypernyms
n_eval: int = 300  # train_run none: held-out queries
template: str = "short"  # train_run none: prompt, short (the dataset's short one) or full (Appendix D's), or a template's name
tokenizer_vocab: int = 2000  # train_run none: BPE vocabulary of the untrained tiny model
eval_queries: int = 0  # score at most this many held-out queries, 0 for all
include_eos: bool = False  # count the docID's closing EOS in its mean score (the paper: docID tokens only)
method: str = "prefix_shared"  # prefix_shared (one prompt pass per query) or naive (one pass per candidate)
query_batch: int = 0  # queries scored in one forward pass; 0: auto (32 on a GPU, 1 on a CPU)
beam_k: int = 5  # beam size and top-k of beam search
decode_queries: int = 50  # decode at most this many held-out queries
precision: str = "auto"  # auto (bf16 where a GPU has it natively, or a CPU with bf16 instructions measured it faster on the model's matmuls; fp32 elsewhere and for the tiny model), fp32 or bf16 (scores from fp32 logits)

# %%

from IPython.display import Markdown

from arrank.evaluation import evaluate, plots, scoring, trec
from arrank.common import display, findings, outputs, params
from arrank.results import reading
from arrank.training import precision as mixed_precision
from arrank.data import ranking

P = params.check_params("06_evaluate", globals())
run_dir = outputs.start_run("06_evaluate", P)
timings: dict[str, float] = {}
P

# %% [markdown]
# ## 1. The model and its held-out queries
# A trained run brings its model and the data parameters it was trained with, so the held-out
# split here is exactly the one it never saw.

# %%
with outputs.timed(timings, "load"):
    subject = evaluate.model_under_test(P, outputs.outputs_root(run_dir))
model, tok, df, data = subject["model"], subject["tokenizer"], subject["df"], subject["data"]
numerics = mixed_precision.apply_precision(model, P["precision"])  # frozen weights in bf16 where bf16 is used
ks = ranking.ks_for(data["dataset"])
held_out = evaluate.eval_queries(df, P["eval_queries"] or None)
evaluate.check_beam_k(held_out, P["beam_k"])  # before scoring: beam search needs queries with beam_k relevant docIDs
print(f"model: {subject['source']}\ndata: {data}\n{len(held_out)} held-out queries, "
      f"{held_out['n_relevant'].sum() + held_out['negative'].notna().sum():,} candidates to score")

# %% [markdown]
# ## 2. Scores and the metrics of Tables 1-2 (percent, as the paper's tables)
# Random scores on the same queries are the floor: with few relevant docIDs per query R@k is
# high by chance, and nDCG is squeezed near 1 (docs/design.md). The scores also go out as TREC
# files, `run.trec` and `qrels.trec`, for trec_eval, ir_measures or ranx (docs/findings.md).

# %%
P["query_batch"] = scoring.resolve_query_batch(model, P["query_batch"] or None, P["method"])  # the number used
with outputs.timed(timings, "score"):
    result, per_query, records = evaluate.evaluate_held_out(model, tok, df, P["eval_queries"] or None, ks,
                                                            P["include_eos"], P["method"],
                                                            precision=numerics.used, query_batch=P["query_batch"])
floor = evaluate.random_floor(df, P["seed"], P["eval_queries"] or None, ks)
scores = evaluate.scores_frame(records)
scores.to_parquet(run_dir / "per_query_scores.parquet", index=False)
outputs.save_table(per_query, run_dir, "per_query_metrics")
with outputs.timed(timings, "trec"):
    trec.write_trec(run_dir, records, P["run_name"], subject["trec_ids"])  # one's own data: its query_id and id
table = evaluate.metrics_table({"this model": result, "random scores": floor})
outputs.save_table(table, run_dir, "metrics")  # fractions, as results.json; shown in percent
display.percent_table(table)

# %% [markdown]
# ## 3. Where the scores fall, rank by rank
# The mean score of the docIDs at each gold rank over the held-out queries (rank 1 = each query's
# most specific hypernym), the negative first; error bars are ±1 standard error of that mean over
# the queries that have the rank (ranks beyond the minimum list length hold fewer queries). A
# rank-aware model *tends* to give rank 1 the highest mean and the negative the lowest, but the
# means pool different docIDs: general hypernyms near the root recur in many queries (and are
# easy to predict) while rank 1 differs from query to query, so the curve can rise from rank 1
# to rank 2 even when each query is ranked reasonably. `mean_predicted_rank` (the docID's position
# within its own query, 1 = top) is the ranking view; the sentence below the figure reads it.

# %%
curve = evaluate.per_rank_scores(scores)
scale = plots.scale_text(subject["scale"], len(held_out))  # the run and its scale, named in every title
fig = plots.per_rank_figure({"this model": curve}, scale)
outputs.save_figure(fig, run_dir, "per_rank_scores")
fig.show()
print(plots.per_rank_reading(curve))
curve

# %% [markdown]
# ## 4. Violations
# The queries whose negative beats a positive by the widest margin (WordNet; ESCI has no
# negative). Each dot is a candidate's score; the red cross is the negative.

# %%
examples = evaluate.violation_examples(records)
if len(examples):
    fig = plots.violations_figure(records, examples, scale)
    outputs.save_figure(fig, run_dir, "violation_examples")
    fig.show()
examples

# %% [markdown]
# ## 5. Decoding: greedy, and beam search over the query's docID trie
# Greedy decoding runs for the longest candidate's token count (+ its EOS). Constrained beam
# search ranks docIDs by their sequence probability $p(d\mid\bar q)$ (EOS included), which can
# differ from the mean-token score above: `beam_recall@k_scorer` says by how much.

# %%
with outputs.timed(timings, "decode"):
    decoded, beams = evaluate.decode_held_out(model, tok, df, records, P["beam_k"], P["decode_queries"] or None,
                                              precision=numerics.used)
outputs.save_table(beams, run_dir, "decoding")
display.percent_series(decoded)

# %% [markdown]
# ## 6. R@k at a glance

# %%
beam_row = {f"recall@{P['beam_k']}": decoded[f"beam_recall@{P['beam_k']}_gold"]}
fig = plots.recall_figure({"scorer": result, "random scores": floor, "constrained beam": beam_row}, scale)
outputs.save_figure(fig, run_dir, "recall_at_k")
fig.show()

# %% [markdown]
# ## Results

# %%
metrics = {**result, **decoded, "source": subject["source"], "dataset": data["dataset"],
           "model_name": subject["scale"]["model_name"], "steps": subject["scale"]["steps"], **numerics.record()}
outputs.write_results(run_dir, "06_evaluate", P, metrics, timings)
print(f"{len(metrics)} metrics written to the run's results.json")

# %% [markdown]
# ## What to look for
# The evaluated run against the paper's row for its loss variant and section 5.2, the per-rank
# scores, and decoding, in words.

# %%
rows = (reading.run_findings(subject["params"], result, floor) + [findings.note(plots.per_rank_reading(curve))]
        + reading.decoding_findings(decoded, P["beam_k"]))
Markdown(findings.findings_markdown(rows))

# %% [markdown]
# ## Exercises
# Predict first, then run the command from the repository root (`python` is the workbook's
# environment, e.g. `.venv/bin/python`), then open the answer. Runs of a trained model give numbers
# that differ by a point or two between machines.
#
# **1. No training at all.** Evaluate the tiny model as initialised (`train_run = "none"`): predict
# its CVR and R@1 against the random-scores floor (CVR 87.7%, R@1 10.3%), and how often greedy
# decoding writes a valid docID.
#
# ```bash
# python -m arrank.workbook.run 06 -p train_run none -p run_name ex-untrained
# ```
#
# <details><summary>Answer</summary>
#
# About the floor: CVR 92.7%, nDCG 88.4%, R@1 11.0% on the 300 held-out queries; greedy decoding
# never writes a valid docID (0 of 50) and unconstrained beam search gives no docID at all (100%
# invalid). Beam search constrained to the query's docID trie still returns valid candidates (R@5
# against the gold list 64.4%): the constraint, not the model, is doing the work.
#
# </details>
#
# **2. The closing EOS in the score.** A docID's score is the mean log-probability of its tokens;
# the paper counts the docID tokens only. Count the closing EOS too: predict what moves.
#
# ```bash
# python -m arrank.workbook.run 06 -p train_run "table1_wordnet_workbook-scheme=fractional-alpha=2" -p include_eos true -p run_name ex-eos
# ```
#
# <details><summary>Answer</summary>
#
# Little: CVR from 3.3% to 3.3-4.3% (by machine), R@1 from 38.0% to 37.0%, R@5 from 91.6% to 90.1%,
# nDCG from 97.9% to 97.7%. Decoding does not use the mean score and is unchanged (greedy valid 80%,
# unconstrained beam 36% invalid).
#
# </details>
#
# **3. Beam search without the trie.** Before reading section 5 above: on the workbook's fractional
# α = 2 run, predict what share of unconstrained beam search's top-5 outputs are not docIDs at all,
# and how often greedy decoding is valid.
#
# ```bash
# python -m arrank.workbook.run 06 -p train_run "table1_wordnet_workbook-scheme=fractional-alpha=2" -p run_name ex-fractional
# ```
#
# <details><summary>Answer</summary>
#
# 36% of the unconstrained outputs are not docIDs (`beam_invalid_rate_unconstrained` 0.36), and
# greedy decoding is valid for 80% of 50 queries, the gold top docID for 26%. Constrained to the
# query's trie, beam search reaches R@5 86.8% against the gold list and 97.6% against the scorer's
# own top 5. These are the workbook's own 06 run (`outputs/06_evaluate/workbook/`); the command
# repeats it under another name.
#
# </details>
