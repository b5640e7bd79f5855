# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 07 · Dual- and cross-encoder baselines on WordNet (paper §5.3, Figure 3, Appendix B)
#
# Section 5.3 compares ARR with the two classical rankers on the WordNet task of notebook 03.
# Both map each noun synset to a row of one **lookup table** $E_\phi$ (82,115 rows, dimension $n$)
# and are trained on the positive pairs $(q_i, d_i, r_i)$: a query, one of its hypernyms, and that
# hypernym's rank. The rank enters through the item weight of §4.1, $\lambda(r) = 1/r^\alpha$.
#
# **Dual encoder (DE).** Score $\langle E(q), E(d)\rangle$; weighted in-batch softmax loss with
# $\tau = 0.05$:
# $$\mathcal L_{DE} = -\frac1B\sum_{i=1}^B \lambda(r_i)\log\frac{\exp(\langle E(q_i),E(d_i)\rangle/\tau)}{\sum_{j=1}^B\exp(\langle E(q_i),E(d_j)\rangle/\tau)}$$
# SGD, learning rate 1.0, momentum 0.9, batch 2048, 50k steps, every updated row projected back to
# the unit sphere.
#
# **Cross encoder (CE).** Score $f_{MLP}(\mathrm{concat}(E(q), E(d)))$, an MLP with three ReLU
# hidden layers of width $2n$ (weights $\mathcal N(0, 1/2n)$, biases 0). Negatives pair each query
# with the document of a random permutation $\rho$ of the batch:
# $$\mathcal L_{CE} = -\sum_{i=1}^B\Big(\frac{\lambda(r_i)}{\sum_j\lambda(r_j)}\log\sigma(f(q_i,d_i)) + \frac1B\log\sigma(-f(q_i,d_{\rho(i)}))\Big)$$
# Adam, learning rate 1e-3, weight decay 1e-3, batch 2048, 20k steps (Appendix B). The weight
# decay is applied *decoupled* (AdamW, `ce_optimizer = "adamw"`), as optax and Keras apply weight
# decay; see "Choices" below for why this matters here.
#
# **A capacity experiment.** A lookup table cannot embed a synset it never saw, so the baselines
# train on the pairs of *all* queries, the evaluation queries' pairs included, and are evaluated
# on the evaluation queries: they show how well a DE or a CE of dimension $n$ can *fit* the
# rankings, not how they generalise. The same question, asked of ARR, is its score on queries it
# trained on: notebook 05 scores a sample of its training queries beside the held-out ones, and
# Figure 3 (a) below draws both (the held-out curve is a harder test the tables cannot take: they
# have no row for a query they never saw). Evaluation is the ARR evaluation (§5.1, the same
# `arrank.evaluation.metrics` functions): per query, its relevant hypernyms and its negative are scored and
# ranked; CVR, nDCG and R@k. The negative is a random synset, never trained on as a negative.
#
# **Choices the paper leaves open** (see `arrank.baselines.dual_encoder`, `arrank.baselines.cross_encoder`):
# how the optimiser treats table rows outside the batch. `dense` is torch.optim's update of the
# whole table (a row keeps moving on its momentum, or Adam moments, after it left the batch);
# `lazy` moves only the rows in the batch (TensorFlow's sparse updates). The DE is *lazy* by
# default (`de_row_updates`; the same quick-profile results as dense, and a paper-scale run stays
# under 5 minutes), the CE *dense* (`ce_row_updates`; with Adam + L2 it fits far better: R@1 100.0%
# vs 89.7% at n = 32, α = 5, docs/measurements.md). The CE's random negatives may hit a relevant
# document (e.g. entity.n.01, relevant to every query), as the formula allows. Batches are drawn
# epoch by epoch without replacement.
#
# *How the CE's weight decay enters* (`ce_optimizer`). `adam_l2` reads "Adam, weight decay
# 0.001" as torch.optim.Adam's `weight_decay`: an L2 term added to the gradient before Adam
# normalises it. For a table row that is not in the batch that term is the whole gradient, so
# Adam moves the row about lr = 1e-3 towards 0 every step. At paper scale a row is in a batch
# about once in 343 steps, and after 20k steps the mean row norm of the CE n = 32 table has
# fallen from 5.6 to **0.056**: the table is eroded (CE R@1 88.7% at α = 5). `adamw`, the
# default, decays every parameter by the factor 1 - lr * wd per step apart from the Adam step, so
# an absent row keeps 98 % of its norm over 20k steps (mean row norm 5.4; see results.json's
# `ce_..._row_norm_mean` and docs/measurements.md). On the quick subtree rows are in most
# batches and the two readings differ little. *The CE table's init scale* (`ce_table_init_std`,
# rows $\mathcal N(0, \mathrm{std}^2)$, default 1: with the $\mathcal N(0, 1/2n)$ MLP weights,
# unit-variance pre-activations) is the workbook's choice; the paper gives none. The DE has no
# such choice: every row is projected to the unit sphere, so only directions matter, and its
# row norms stay 1 (results.json: `de_..._row_norm_min`/`_max`).
#
# **Profiles.** `quick`: the data of notebook 05's quick profile (the `animal.n.01` subtree,
# queries with ≥ 5 hypernyms, the same 300 evaluation queries, so its ARR runs plot beside the
# baselines), 3000 steps per model: all of Figure 3 in a few minutes on a 2-core CPU. `paper`:
# all 82,114 noun queries (5000 evaluated) and Appendix B's step counts; a DE run of 50k steps takes
# about 4 minutes on 2 cores, a CE run of 20k steps under 3 (docs/measurements.md, "DE and CE
# baselines").
# `model = "de"` or `"ce"` trains one configuration at `n`, `alpha` (a sweep point);
# `from_runs = "paper-fig3-*"` draws Figure 3 and its findings from such finished runs (e.g. the
# points of `sweeps/fig3_baselines_paper.yaml`) without training.

# %% [markdown]
# **Changing a parameter:** the next cell holds the values that run, those of the quick profile. In
# JupyterLab, edit a value and run all cells; with `profile = "paper"` every value you left as
# the cell has it takes the paper profile's (the cell after prints which). From the command line,
# `python -m arrank.workbook.run 07 -p profile paper` runs the notebook into `outputs/07_de_ce_baselines/<run_name>/`
# (`--help` after `07` lists every parameter, each profile's values and what is allowed).

# %% tags=["parameters"]
profile: str = "quick"  # "quick" (animal.n.01 subtree, 3000 steps) or "paper" (all nouns, Appendix B steps)
seed: int = 0  # seeds the data split and negatives, the tables, the batches and the CE permutations
run_name: str = "auto"  # folder under outputs/07_de_ce_baselines/; auto: profile and date-time
model: str = "figure3"  # figure3 (every run of Figure 3), de or ce (one run at n and alpha)
n: int = 32  # embedding dimension of a single de or ce run
alpha: float = 5.0  # lambda(r) is 1 / r**alpha, for a single run and for panel (a)
de_dims: list = [4, 8, 16, 32]  # panel (a): the DE dimensions
ce_dim: int = 32  # panels (a) and (c): the CE dimension
de_alpha_dim: int = 8  # panel (b): the DE dimension of the alpha sweep
alphas: list = [0, 1, 2, 3, 4, 5]  # panels (b) and (c): the alpha values
de_steps: int = 3000  # DE steps
ce_steps: int = 3000  # CE steps
batch_size: int = 2048  # positive pairs per step (Appendix B: 2k)
tau: float = 0.05  # DE softmax temperature
de_lr: float = 1.0  # DE SGD learning rate
de_momentum: float = 0.9  # DE SGD momentum
ce_lr: float = 0.001  # CE Adam learning rate
ce_weight_decay: float = 0.001  # CE weight decay (Appendix B: 0.001), applied as ce_optimizer says
ce_optimizer: str = "adamw"  # adamw (decoupled decay: keeps the table) or adam_l2 (Adam's L2 term: erodes absent rows)
ce_table_init_std: float = 1.0  # CE table rows start N(0, std^2) (the workbook's choice; the paper gives none)
de_row_updates: str = "lazy"  # DE: lazy (rows in the batch only) or dense (torch.optim SGD on the whole table)
ce_row_updates: str = "dense"  # CE: dense (torch.optim Adam on the whole table, Appendix B) or lazy
retrieval: bool = True  # DE extra: full-corpus retrieval R@k over every synset of the hierarchy
arr_runs: str = "*"  # 05_train runs plotted in panel (a): a glob on their run names
from_runs: str = ""  # a glob on 07 run names: draw Figure 3 from those single-config runs (a sweep's points), no training
k_max: int = 10  # R@k for k from 1 to k_max
on_par_tol: float = 0.02  # findings: two R@k curves are "on par" within this, "above" beyond it
threads: int = 2  # CPU cores: Figure 3's configs train in this many 1-thread processes at once; a single de or ce run uses this many threads
precision: str = "auto"  # auto, fp32 or bf16: accepted and recorded; the DE and CE train in fp32 (bf16 does not pay at these sizes)
subtree: str = "animal.n.01"  # '' for all nouns or a synset
min_relevant: int = 5  # queries with at least this many hypernyms
n_eval: int = 300  # evaluation queries

# %%
import torch
from IPython.display import Markdown

from arrank.baselines import figure3 as BL, panels
from arrank.results import figure3 as F3
from arrank.common import display, findings, outputs, params

P = params.check_params("07_de_ce_baselines", globals())
run_dir = outputs.start_run("07_de_ce_baselines", P)
torch.set_num_threads(P["threads"])
numerics = BL.baseline_precision(P["precision"])
print(f"precision: {numerics.used} ({numerics.reason})")
timings: dict[str, float] = {}
ks = list(range(1, P["k_max"] + 1))
hyper = {k: P[k] for k in ("de_steps", "ce_steps", "batch_size", "tau", "de_lr", "de_momentum", "ce_lr",
                           "ce_weight_decay", "de_row_updates", "ce_row_updates", "ce_optimizer",
                           "ce_table_init_std")}
P

# %% [markdown]
# ## 1. Data: the lookup-table view
# The WordNet dataset of notebook 03 (cached), one table row per noun synset, and the positive
# pairs of every query (both splits: see above).

# %%
dataset = {k: P[k] for k in ("subtree", "min_relevant", "n_eval", "seed")}
with outputs.timed(timings, "data"):
    data = BL.lookup_data(P["subtree"] or None, P["min_relevant"], P["n_eval"], P["seed"])
print(f"{len(data['df']):,} queries, {len(data['pairs'].query):,} positive pairs (all trained on); "
      f"{len(data['eval']):,} evaluation queries; table of {len(data['names']):,} rows; "
      f"retrieval corpus of {len(data['corpus']):,} synsets")

# %% [markdown]
# ## 2. Train and evaluate
# Each configuration trains, then is evaluated on the evaluation queries (and, for a DE, by
# full-corpus retrieval); with `threads` > 1 the configurations run that many at once, one
# thread each, a progress bar counting them. One row per configuration, CVR, nDCG and R@k in
# percent (`results.csv` keeps fractions); the training losses follow. Each configuration's scores
# also go out as a TREC run, `trec/<config>.trec`, with the queries' `trec/qrels.trec`
# (docs/findings.md, "TREC files").

# %%
configs = (BL.figure3_configs(P["de_dims"], P["ce_dim"], P["alpha"], P["de_alpha_dim"], P["alphas"])
           if P["model"] == "figure3" else BL.single_config(P["model"], P["n"], P["alpha"]))
point_runs: list[str] = []
with outputs.timed(timings, "train_and_evaluate"):
    if P["from_runs"]:  # Figure 3 from finished single-config runs on the same data
        results, logs, per_query, point_runs = BL.point_results({**dataset, **hyper}, P["from_runs"], configs)
        print(f"{len(results)} configurations from the runs {point_runs}")
    else:
        results, logs, per_query = BL.run_configs(configs, data["pairs"], len(data["names"]), data["eval"],
                                                  data["rows"], hyper, ks, P["seed"],
                                                  corpus=data["corpus"] if P["retrieval"] else None,
                                                  workers=P["threads"], trec_dir=run_dir / "trec")
outputs.save_table(results, run_dir, "results")
outputs.save_table(per_query, run_dir, "per_query")  # per-query R@1..5 of each config: the findings' intervals
outputs.save_table(logs, run_dir, "training_log")
fig = panels.loss_figure(logs)
outputs.save_figure(fig, run_dir, "training_loss")
fig.show()
display.percent_table(results.drop(columns=[c for c in results.columns if c.startswith("n_queries@")]), 1)

# %% [markdown]
# ## 3. Figure 3
# (a) R@k (percent) against k for the DEs and the CE at the same α (`alpha`, named in the CE's
# curve: the paper's caption gives α = 5 to the DEs only), all trained and scored on the same
# queries (solid), with the finished ARR runs of notebook 05 (those named by `arr_runs`) that
# evaluated the same evaluation queries: each run twice, on a sample of *its training queries*
# (dashed: the same capacity question as the tables) and on the *held-out* queries it never
# trained on (dotted: generalisation; a run made before notebook 05 scored training queries has
# this curve only). (b) The DE's α sweep; (c) the CE's, colours ordered by α. Each panel is also
# saved as a CSV table (R@k as fractions, `scored_on` says which queries); the last figure is the
# DE's full-corpus retrieval R@k.

# %%
arr = panels.arr_runs(dataset, len(data["eval"]), pattern=P["arr_runs"])
drawn = panels.figure3_panels(results, ks, arr, P["model"] == "figure3", P["de_dims"], P["ce_dim"], P["alpha"],
                             P["de_alpha_dim"])
for name, (table, fig) in drawn.items():
    outputs.save_table(table, run_dir, name)
    outputs.save_figure(fig, run_dir, name)
    fig.show()
print(f"{len(arr)} ARR run(s) on the same evaluation queries: {list(arr['label'])}")

# %% [markdown]
# ## 4. The findings of Figure 3, checked on this run
# Section 5.3 reads Figure 3 (a) as "autoregressive ranking is on par with CEs while being
# significantly more powerful than DEs", (b) as "an increasing alpha improves Recall@k,
# particularly for small k", and the DEs grow with n. The checks compare R@1..5 curves with the
# tolerance `on_par_tol` (0.02, i.e. 2 points of R@k: about one standard error of R@1 on the quick
# profile's 300 queries): *on par* = within it at every k; *above* = nowhere below by more than it
# and somewhere above by more than it, a tie at R@k = 100% never counting as a failure. The baselines live in the
# capacity setting (trained and scored on the same queries), so the checks are:
# - `finding_de_grows_with_n`: the DE's mean R@1..5 rises with every step of `de_dims`;
# - `finding_ce_above_de`: the CE above the strongest DE (n = 32), both at `alpha` (the paper's two
#   claims together imply it);
# - `finding_arr_on_par_with_ce`, `finding_arr_above_de`: the ARR run of panel (a) with the highest
#   mean R@1..5 on its training queries, that curve against them: the same capacity question. The
#   numbers give its held-out curve beside it. None where no ARR run scored its training queries;
# - `finding_alpha_raises_de_small_k`: the DE at `de_alpha_dim`, largest alpha above smallest, at k = 1, 2.
#
# Each comes with `..._numbers`, the curves it compared (percent); None where the run lacks them.
# Where the run has per-query metrics (this run's `per_query.csv`; the ARR run's
# `per_query_train.csv`), each check is decided by the 95% bootstrap interval of the per-query
# difference of mean R@1..5 instead (`results.statistics`, docs/findings.md): *above* = the
# interval above 0; *on par* = the interval within ±`on_par_tol`; *grows with n* = every step
# above 0. The verdict is then holds, fails or **undecided** (the interval covers the threshold);
# without per-query data the point verdict stands, labelled as point estimates.
# In the paper-profile run with AdamW (all 15 points; docs/results.md, "Figure 3 at paper scale"):
# - *DE recall grows with n* holds: mean R@1..5 80.3 / 88.2 / 92.5 / 94.5% for n = 4 / 8 / 16 / 32
#   (full-corpus retrieval R@1 2.1 / 7.2 / 28.7 / 59.1%);
# - *a larger α raises the DE's R@k for small k* holds at small k: DE n = 8, R@1 78.2 -> 99.7%,
#   R@2 85.3 -> 96.1% (α 0 -> 5); not at large k: R@5 peaks at α = 1 (95.4%) and falls to 77.1%;
# - *the CE above the DE* does **not** hold: CE n = 32, α = 5, R@1..5 97.6 87.2 77.4 76.9
#   79.2% against the DE n = 32's 100.0 99.9 96.2 90.2 86.1%. Decoupled weight decay lifted
#   the CE's R@1 from 88.7% (Adam + L2: eroded table, mean row norm 0.056) to 97.6%, not its
#   R@2..5. At α = 5 the CE's CVR is ~90% by the letter of its loss: its permutation
#   negatives are mostly the top hypernyms every query shares, pushed below random synsets;
# - the ARR checks need paper-profile ARR runs (GPU), which that run lacks: None. At the quick
#   profile, notebook 05's 1200-step trie β = 2 run on its training queries is above the DEs and
#   above the CE by 4-17 points at k = 2..5 (docs/results.md, "The quick workbook").

# %%
figure3 = P["model"] == "figure3"
best_arr, _ = F3.best_arr_run(arr, [k for k in ks if k <= 5])
found = (F3.findings(results, P["de_dims"], P["ce_dim"], P["alpha"], P["de_alpha_dim"], P["alphas"], arr=arr,
                     tol=P["on_par_tol"], per_query=per_query,
                     arr_per_query=panels.arr_per_query(best_arr["run"] if best_arr is not None else None))
         if figure3 else {})
print(f"{sum(found.get(f'finding_{k}') is True for k in F3.CLAIMS)} of {len(F3.CLAIMS)} findings hold here"
      if figure3 else "one configuration: Figure 3's findings need model = figure3 (or from_runs)")

# %% [markdown]
# ## Results

# %%
metrics = {**BL.flat_metrics(results), **found, "n_eval_queries": len(data["eval"]),
           "n_pairs": len(data["pairs"].query), "n_table_rows": len(data["names"]), "n_arr_runs": len(arr),
           "from_runs": point_runs, **numerics.record()}
outputs.write_results(run_dir, "07_de_ce_baselines", P, metrics, timings)
print(f"{len(metrics)} metrics written to the run's results.json")

# %% [markdown]
# ## What to look for
# Section 5.3's findings against this run, in words (section 4's checks; R@k in percent). At the
# quick profile the baselines fit a 3,248-query subtree, so read the numbers for their direction.

# %%
rows = F3.findings_rows(found) or [findings.note("One configuration: Figure 3's findings need model = figure3 "
                                                "or from_runs; R@k of this run: " + ", ".join(
                                                    f"{display.metric_title(k)} {display.percent_text(v)}"
                                                    for k, v in metrics.items() if k.startswith("recall@")))]
Markdown(findings.findings_markdown(rows))

# %% [markdown]
# ## Exercises
# Predict first, then run the command from the repository root (`python` is the workbook's
# environment, e.g. `.venv/bin/python`), then open the answer. `-p model de` (or `ce`) trains one
# lookup table instead of all of Figure 3 (quick: 3000 steps, about 1-3 minutes).
#
# **1. More dimensions for the DE.** Panel (a) stops at $n = 32$. Predict where a DE with $n = 64$
# (α = 5) lands: R@1..R@5 against DE $n = 32$'s 100.0, 99.7, 97.3, 92.9, 91.4%.
#
# ```bash
# python -m arrank.workbook.run 07 -p model de -p n 64 -p threads 1 -p run_name ex-de64
# ```
#
# <details><summary>Answer</summary>
#
# 100.0, 99.8, 98.9, 94.7, 92.5% (mean R@1..5 97.2% against 96.3% at $n = 32$): the curve keeps
# rising with $n$, most at $k = 3$-$5$, as Proposition 3.1 predicts (a larger $n$ realises more
# rankings). Its training queries are its evaluation queries: a lookup table answers a capacity
# question.
#
# </details>
#
# **2. α = 0 for the DE.** Panel (b): with $\alpha = 0$ every relevant pair weighs the same. Predict R@1
# and R@2 of DE $n = 8$ against its α = 5 values (100.0% and 97.7% in the workbook's run).
#
# ```bash
# python -m arrank.workbook.run 07 -p model de -p n 8 -p alpha 0 -p threads 1 -p run_name ex-de8-alpha0
# ```
#
# <details><summary>Answer</summary>
#
# R@1 93.7% and R@2 90.3% (CVR 9.7%): 6.3 and 7.4 points below α = 5, the same numbers as the
# α = 0 point of panel (b) in the workbook's run. A flat weight asks the table to put every hypernym
# first; a steep one (large α) spends its few dimensions on the top of the list, which is the small-k
# gain the paper reports.
#
# </details>
#
# **3. Weight decay as Adam's L2 term.** Appendix B gives the CE a weight decay of 0.001. Read as
# `torch.optim.Adam`'s L2 term (`-p ce_optimizer adam_l2`) rather than AdamW's decoupled decay, what
# happens to the CE's table and its R@1?
#
# ```bash
# python -m arrank.workbook.run 07 -p model ce -p ce_optimizer adam_l2 -p threads 1 -p run_name ex-ce-l2
# python -m arrank.workbook.run 07 -p profile paper -p model ce -p ce_optimizer adam_l2 -p run_name ex-ce-l2-paper
# ```
#
# <details><summary>Answer</summary>
#
# At the quick scale, little: the subtree's rows are in most batches (CE $n = 32$, α = 5: R@1 100.0,
# R@2 95.8 with Adam + L2 against 98.3, 94.7 with AdamW). At the paper's scale a row is in a batch
# once every ~343 steps and moves ~lr towards 0 at every other step: the mean row norm falls from 5.6
# to 0.056 in 20k steps and R@1 is 88.7% against AdamW's 97.6% (docs/results.md, "Figure 3 at
# paper scale"; docs/measurements.md, "DE and CE baselines").
#
# </details>
