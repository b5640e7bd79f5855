# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 02 · The rank(E′) condition of autoregressive rankers (paper §3.2, Appendix A)
#
# An autoregressive ranker (ARR) turns a context $c$ into a hidden vector $\varphi(c)\in\mathbb R^n$
# and next-token probabilities $\sigma(E\varphi(c))$ over the docID tokens $\mathcal V$, with $E$ their
# $|\mathcal V|\times n$ embeddings (the paper's $E_{docids}$, constrained decoding). With
# $E' = [E\ \mathbf 1]$ (E augmented by a column of ones) the paper shows that an ARR whose
# $\varphi$ may be any vector can produce
# - **any strictly positive distribution** over the docID tokens (Proposition "Arbitrary
#   Distributions over Tokens", 3.2),
# - hence any distribution over docID **sequences** (Corollary "Arbitrary Distributions over
#   Sequences", 3.1),
# - and **any permutation** of the tokens (Proposition "Arbitrary Permutations over Tokens", 3.3),
#
# each **iff $\operatorname{rank}(E') = |\mathcal V|$**. Unlike a dual encoder (notebook 01), the
# required dimension does not grow with the number of documents. This notebook checks each
# statement numerically, exactly where it can.

# %% [markdown]
# **Changing a parameter:** the next cell holds the values that run, those of the quick profile. In
# JupyterLab, edit a value and run all cells; with `profile = "paper"` every value you left as
# the cell has it takes the paper profile's (the cell after prints which). From the command line,
# `python -m arrank.workbook.run 02 -p profile paper` runs the notebook into `outputs/02_rank_condition/<run_name>/`
# (`--help` after `02` lists every parameter, each profile's values and what is allowed).

# %% tags=["parameters"]
profile: str = "quick"  # "quick" (laptop CPU, about a minute) or "paper" (|V| up to 7, more targets)
seed: int = 0  # seeds every random matrix and target distribution
run_name: str = "auto"  # folder under outputs/02_rank_condition/; auto: profile and date-time
v_max: int = 6  # largest vocabulary |V| for exact ordering counts (2..7)
n_targets: int = 20  # random target distributions per case
seq_vocab: int = 4  # Corollary: docID tokens |V|
seq_len: int = 3  # Corollary: docID length L (|V|^L sequences)
seq_dim: int = 3  # Corollary: model dimension n; full rank(E') needs n of at least |V| - 1
tokenizer_vocab: int = 2000  # BPE vocabulary of the tiny model's tokenizer
model_name: str = "smollm2-135m"  # a pretrained LLM beside the tiny model: a known name, hub id or local folder; '' for none

# %%
import math

import numpy as np
import pandas as pd
import plotly.express as px
from IPython.display import Markdown

from arrank.data import docids
from arrank.training import models, tokenizer
from arrank.common import display, findings, outputs, params
from arrank import theory
from arrank.theory import tables
from arrank.data import wordnet

P = params.check_params("02_rank_condition", globals())
run_dir = outputs.start_run("02_rank_condition", P)
timings: dict[str, float] = {}
rng = np.random.default_rng(P["seed"])
P

# %% [markdown]
# ## 1. Orderings of the logits: all $|\mathcal V|!$ exactly when rank(E′) = |V|
# For random $E$ and every $n$ we count, exactly, the orderings of $E\varphi$ that some
# $\varphi\in\mathbb R^n$ realises (one LP per ordering prefix, as in notebook 01). Because softmax is
# shift invariant, adding the column of ones costs nothing: rank(E′) = min(|V|, n+1) for random E,
# so $n = |\mathcal V|-1$ suffices.

# %%
with outputs.timed(timings, "token_orderings"):
    orders = tables.token_permutation_table(P["v_max"], P["seed"])
outputs.save_table(orders, run_dir, "token_orderings")
rule_holds = bool((orders["all_orderings"] == orders["full_rank"]).all())
print("all |V|! orderings  <=>  rank(E') = |V| :", rule_holds)
orders

# %%
orders["fraction_realisable"] = orders["orderings"] / orders["V_factorial"]
fig = px.line(orders, x="n", y="fraction_realisable", color="V", markers=True, log_y=True,
              color_discrete_map=display.ordered_colors(orders["V"]),
              title="Share of the |V|! orderings of E phi realisable by some phi (random E)")
full = orders[orders["full_rank"]]
fig.add_scatter(x=full["n"], y=full["fraction_realisable"], mode="markers", name="rank(E') = |V|",
                marker={"symbol": "circle-open", "size": 16, "color": "black"})
fig.update_layout(xaxis_dtick=1, yaxis_title="realisable orderings / |V|!", legend_title="|V|")
display.log_axis(fig, orders["fraction_realisable"])
outputs.save_figure(fig, run_dir, "token_orderings")
fig.show()

# %% [markdown]
# ## 2. $n \ge |\mathcal V|$ is not enough: an affine counterexample
# The condition is on **affine** independence of the embeddings. Take four tokens in $\mathbb R^4$
# with one embedding the midpoint of two others: $n = 4 \ge |\mathcal V| = 4$, yet rank(E′) = 3.
# The proof of the forward direction (Appendix A) builds a vector $h \ne 0$ with $h^\top E' = 0$ and
# shows no $\varphi$ can rank every token with $h_i < 0$ above every token with $h_i > 0$.
# Here $h$ is computed, and the LP confirms that its ordering is never realised.

# %%
E_bad = theory.affine_counterexample(4)
h = theory.null_vector_h(E_bad)
bad_order = theory.unrealisable_permutation(E_bad)
realisable = theory.realisable_token_permutations(E_bad)
print("E =\n", E_bad)
print("rank(E') =", theory.augmented_rank(E_bad), "  |V| =", E_bad.shape[0], "  n =", E_bad.shape[1])
print("h =", np.round(h, 4), "  |h^T E'| max =", float(np.abs(h @ np.c_[E_bad, np.ones(4)]).max()))
print("ordering that puts h<0 tokens above h>0 tokens:", bad_order, "-> realisable?", bad_order in realisable)
print(f"realisable orderings: {len(realisable)} of {math.factorial(4)}")

# %% [markdown]
# ## 3. Distributions, not only orderings (Proposition 3.2)
# With rank(E′) = |V| we solve $E'\varphi' = \log p$ and drop the last coordinate: softmax($E\varphi$)
# then equals any strictly positive target $p$ up to round-off. With rank(E′) < |V| some targets
# are out of reach: the best $\varphi$ (minimising the convex cross-entropy) stays away from them.
# The last row asks the counterexample for a target that puts the midpoint token first.

# %%
with outputs.timed(timings, "distribution_fit"):
    fits = tables.distribution_fit_table(P["v_max"], P["n_targets"], P["seed"])
adversarial = np.array([0.1, 0.1, 0.7, 0.1])  # the midpoint token (row 2) above both ends
_, adversarial_error = theory.solve_phi_for_distribution(E_bad, adversarial)
fits.loc[len(fits)] = {"case": "counterexample, target (0.1, 0.1, 0.7, 0.1)", "V": 4, "n": 4,
                       "rank_E_prime": 3, "full_rank": False, "targets": 1, "max_error": adversarial_error,
                       "median_error": adversarial_error, "min_error": adversarial_error}
outputs.save_table(fits, run_dir, "distribution_fit")
fig = px.bar(fits, x="case", y="max_error", log_y=True, color="full_rank",
             title="Largest |softmax(E phi) - p| over target distributions p")
fig.update_layout(xaxis_title="", yaxis_title="max abs error", legend_title="rank(E') = |V|")
fig.update_yaxes(exponentformat="power")
outputs.save_figure(fig, run_dir, "distribution_fit")
fig.show()
fits[["case", "rank_E_prime", "full_rank", "targets", "max_error", "median_error"]]

# %% [markdown]
# ## 4. Sequences (Corollary 3.1) against a dual encoder of the same dimension
# An idealised ARR chooses $\varphi$ per prefix. With $|\mathcal V| = 4$ tokens (`seq_vocab`), docIDs
# of length $L = 3$ (`seq_len`; 64 sequences) and $n = 3$ (`seq_dim`; a random E, so rank(E′) = 4),
# the chain rule lets it match an arbitrary distribution over all 64 docIDs, hence any of their $64!$
# rankings. A dual encoder of the same dimension realises at most Skala's $N_{3,2}(64)$ rankings
# (notebook 01; `theory.skala_count`): a vanishing fraction.

# %%
V, L, n = P["seq_vocab"], P["seq_len"], P["seq_dim"]
E_seq = rng.standard_normal((V, n))
target = rng.dirichlet(np.ones(V**L)).reshape((V,) * L)
with outputs.timed(timings, "sequence_fit"):
    seq = theory.sequence_distribution_fit(E_seq, target, L)
k_docs = V**L
de_log10_fraction = theory.log10_de_fraction_realisable(n, k_docs)
print(f"rank(E') = {theory.augmented_rank(E_seq)} (|V| = {V}); prefixes solved: {seq['n_prefixes']}")
print(f"max |model - target| over all {k_docs} sequences: {seq['max_abs_error']:.2e}")
print(f"DE in R^{n}: at most skala_count({n}, {k_docs}) = {theory.skala_count(n, k_docs):,} rankings "
      f"of {k_docs}! ~ 10^{math.lgamma(k_docs + 1) / math.log(10):.1f}; fraction 10^{de_log10_fraction:.1f}")
fig = px.scatter(x=target.ravel(), y=seq["model"].ravel(), log_x=True, log_y=True,
                 labels={"x": "target probability", "y": "idealised ARR probability"},
                 title=f"Idealised ARR (n={n}) vs an arbitrary distribution over {k_docs} docIDs")
outputs.save_figure(fig, run_dir, "sequence_fit")
fig.show()

# %% [markdown]
# ## 5. The paper's remark in practice: real tokenizers
# Is rank(E′) = |V_docids| met by real models? For WordNet the docIDs are synset names, whose
# tokens span most of the vocabulary, far more than the model dimension; for ESCI the docIDs are
# short lists of numbers ("25,36,39"), whose few tokens come much closer to it. Below: the tiny
# model of the quick profile (a BPE tokenizer trained on all noun synset names and 20,000 random numeric
# docIDs, a random-initialised 4-layer Llama with hidden size 128), and the pretrained model given
# by `model_name`: by default SmolLM2-135M-Instruct (hidden size n = 576, vocabulary 49,152,
# embeddings tied to the output layer), with its own byte-level BPE tokenizer. E is read from the
# model's safetensors without loading the model, so a 7B folder works on a laptop too. EOS counts
# as a docID token (the workbook ends every docID with it, so that in the trie of section 4.2 "cat"
# can end before "cats"; for an instruct model it is the end-of-turn token).

# %%
with outputs.timed(timings, "tiny_tokenizer"):
    names = wordnet.noun_synset_names()
    numeric = docids.random_numeric_docids(20_000, seed=P["seed"])
    tok = tokenizer.train_bpe(names + numeric, P["tokenizer_vocab"])
tiny = models.build_tiny_model(len(tok), seed=P["seed"], tokenizer=tok)
docid_sets = {"WordNet synset names": names, "ESCI-style numeric docIDs": numeric}
ranks = tables.docid_rank_table(models.output_embeddings(tiny), tok, docid_sets)
ranks.insert(0, "model", f"tiny (|V|={len(tok)})")
if P["model_name"]:
    with outputs.timed(timings, "pretrained"):
        E_pre, pre_tok = models.pretrained_embeddings(P["model_name"])
    pre = tables.docid_rank_table(E_pre, pre_tok, docid_sets)
    pre.insert(0, "model", f"{P['model_name']} (|V|={len(pre_tok)})")
    ranks = pd.concat([ranks, pre], ignore_index=True)
outputs.save_table(ranks, run_dir, "docid_rank")
ranks

# %% [markdown]
# As the paper remarks, WordNet's docID tokens far outnumber $n+1$, so rank(E′) < |V_docids|:
# a real model cannot realise every ordering of them, and relies on the fact that only a tiny
# subset of docID sequences is ever needed. On the real SmolLM2-135M-Instruct (measured here, the
# quick profile): the 82,115 WordNet synset names use 8,786 distinct tokens against n + 1 = 577,
# and rank(E′) is 577, the most an n = 576 model can have. Numeric ESCI-style docIDs use only 12
# tokens (the digits, the comma and EOS: SmolLM2 splits numbers into single digits) and rank(E′)
# is 12 = |V_docids|: every ordering of those tokens is realisable at every step of decoding.

# %% [markdown]
# ## Results

# %%
metrics = {
    "rank_rule_holds": rule_holds,
    "counterexample_rank_e_prime": theory.augmented_rank(E_bad),
    "counterexample_orderings": len(realisable),
    "counterexample_order_realisable": bad_order in realisable,
    "full_rank_max_distribution_error": float(fits.loc[fits["full_rank"], "max_error"].max()),
    "counterexample_adversarial_error": float(adversarial_error),
    "sequence_max_error": float(seq["max_abs_error"]),
    "de_log10_fraction_of_rankings": float(de_log10_fraction),
    **tables.docid_rank_metrics(ranks),
}
outputs.write_results(run_dir, "02_rank_condition", P, metrics, timings)
print(f"{len(metrics)} metrics written to the run's results.json")

# %% [markdown]
# ## What to look for
# This run's numbers against section 3.2 (the rank(E′) propositions and the remark on real
# tokenizers), in words.

# %%
Markdown(findings.findings_markdown(tables.rank_condition_findings(metrics)))

# %% [markdown]
# ## Exercises
# Predict first, then run the command from the repository root (`python` is the workbook's
# environment, e.g. `.venv/bin/python`), then open the answer.
#
# **1. One dimension short.** Section 4 fits an arbitrary distribution over the 64 docIDs of length 3
# over $|\mathcal V| = 4$ tokens with $n = 3$ (rank(E′) = 4), to rounding error. With $n = 2$, how
# close does the idealised ARR get?
#
# ```bash
# python -m arrank.workbook.run 02 -p seq_dim 2 -p model_name '' -p run_name ex-dim2
# ```
#
# <details><summary>Answer</summary>
#
# Not close: the largest error over the 64 sequences is 0.049 (`sequence_max_error`), against
# $4.9 \times 10^{-16}$ at $n = 3$. With rank(E′) = 3 < |V| the next-token distributions live on a
# lower-dimensional family, so the chain rule cannot reach every target (`model_name ''`: no section 5).
#
# </details>
#
# **2. Real docID tokens.** SmolLM2-135M has hidden size $n = 576$, so rank(E′) is at most 577. Its
# WordNet docIDs (synset names) and numeric docIDs (digits): which of the two token sets can be
# ordered arbitrarily?
#
# ```bash
# python -m arrank.workbook.run 02 -p run_name ex-tokens
# ```
#
# <details><summary>Answer</summary>
#
# Only the numeric one. The workbook's quick run counts 8,786 distinct tokens in SmolLM2's WordNet
# docIDs against rank(E′) = 577 = n + 1: far from the paper's condition. Its numeric docIDs use 12
# tokens (the digits, the separator, EOS) with rank 12: every ordering of them is realisable. The
# tiny model of the quick profile ($n = 128$) is alike: 1,892 WordNet docID tokens at rank 129, 113
# numeric ones at rank 113.
#
# </details>
