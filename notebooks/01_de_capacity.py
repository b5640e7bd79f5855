# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 01 · How many rankings can a dual encoder express? (paper §3.1, Proposition 3.1)
#
# A dual encoder (DE) scores a document by the negated Euclidean distance between the query's and
# the document's embeddings in $\mathbb R^n$ (eq. 1). Whatever the encoders are, the ranking of
# $k$ documents it gives a query is a *distance permutation* of $k$ sites. Skala (2009) counts them:
# at most
# $$N_{n,2}(k) = \sum_{i=0}^{n} \left[{k \atop k-i}\right]$$
# distinct permutations (unsigned Stirling numbers of the first kind). The paper bounds this by
# $k^{2n}$ and concludes (Proposition 3.1) that no DE solves a *complete* ranking task — one in which
# every ordering of the $k$ documents must be produced for some query — when
# $n < \ln(k!) / (2 \ln k)$ (eq. 2), i.e. the dimension must grow linearly with $k$.
#
# **What the paper proves:** the sufficient condition $n < \ln k!/(2\ln k)$ for failure.
# **What this notebook adds:** (1) exact LP counts for random sites agree with Skala's closed form,
# (2) sampling query points approaches but never exceeds it, (3) the *exact* smallest dimension at
# which all $k!$ rankings become realisable, derived from the closed form, and (4) the same count
# for the inner-product score $\langle q, d\rangle$ that the paper's experiments use.

# %% [markdown]
# **Changing a parameter:** the next cell holds the values that run, those of the quick profile. In
# JupyterLab, edit a value and run all cells; with `profile = "paper"` every value you left as
# the cell has it takes the paper profile's (the cell after prints which). From the command line,
# `python -m arrank.workbook.run 01 -p profile paper` runs the notebook into `outputs/01_de_capacity/<run_name>/`
# (`--help` after `01` lists every parameter, each profile's values and what is allowed).

# %% tags=["parameters"]
profile: str = "quick"  # "quick" (laptop CPU, about a minute) or "paper" (k up to 7, more samples)
seed: int = 0  # seeds every random site set and query sample
run_name: str = "auto"  # folder under outputs/01_de_capacity/; auto: profile and date-time
k_max_exact: int = 6  # largest number of sites k for exact LP counts (2..7)
mc_queries: int = 20_000  # largest Monte-Carlo sample of query points
k_max_bound: int = 1000  # largest k in the dimension-bound figure
site_sets: int = 1  # random site sets per (k, n)

# %%
import plotly.express as px
import plotly.graph_objects as go
from IPython.display import Markdown

from arrank.common import display, findings, outputs, params
from arrank import theory
from arrank.theory import tables

P = params.check_params("01_de_capacity", globals())
run_dir = outputs.start_run("01_de_capacity", P)
timings: dict[str, float] = {}
P

# %% [markdown]
# ## 1. Skala's closed form
# $N_{n,2}(k)$ for small $k$: it reaches $k!$ exactly at $n = k-1$, never before.

# %%
closed = tables.closed_form_table(P["k_max_exact"])
outputs.save_table(closed, run_dir, "closed_form")
closed.pivot(index="n", columns="k", values="skala_count")

# %% [markdown]
# ## 2. Exact counts for random sites equal the closed form
# For every permutation of the $k$ sites we ask a linear program whether some query point
# $q$ realises it: $\|q-s_{\pi_1}\| < \dots < \|q-s_{\pi_k}\|$ is a system of $k-1$ strict linear
# inequalities in $q$. Exact, no sampling; prefixes that are already infeasible are pruned.
# Sites drawn from a Gaussian are in general position with probability one, where Skala's
# maximum is attained.

# %%
with outputs.timed(timings, "exact_distance_counts"):
    exact = tables.exact_distance_counts(P["k_max_exact"], P["site_sets"], P["seed"])
outputs.save_table(exact, run_dir, "exact_vs_closed_form")
exact_matches = float((exact["exact"] == exact["closed_form"]).mean())
print(f"exact == closed form for {exact_matches:.0%} of {len(exact)} (k, n, site set) cases")
exact.pivot_table(index="n", columns="k", values="exact", aggfunc="min")

# %%
long = exact.groupby(["k", "n"], as_index=False)[["closed_form", "exact"]].min().melt(
    id_vars=["k", "n"], var_name="count", value_name="rankings")
fig = px.line(long, x="n", y="rankings", color="k", symbol="count", line_dash="count", log_y=True,
              markers=True, color_discrete_map=display.ordered_colors(long["k"]),
              title="Distance permutations of k random sites in R^n: closed form vs exact LP")
fig.update_traces(marker_size=9)
fig.update_layout(yaxis_title="number of realisable rankings", xaxis_dtick=1)
display.log_axis(fig, long["rankings"])
outputs.save_figure(fig, run_dir, "exact_vs_closed_form")
fig.show()

# %% [markdown]
# ## 3. Sampling query points approaches the count from below
# A Monte-Carlo count (distinct permutations seen from up to `mc_queries` random query points, for
# $k$ = `k_max_exact` sites in the plane, $n = 2$) is only a lower bound: small cells between the
# sites are rarely hit. It climbs towards the exact count and never passes it.

# %%
k_mc, n_mc = P["k_max_exact"], 2
with outputs.timed(timings, "monte_carlo"):
    mc = tables.monte_carlo_curve(k_mc, n_mc, P["mc_queries"], P["seed"])
outputs.save_table(mc, run_dir, "monte_carlo")
fig = px.line(mc, x="queries", y="monte_carlo", log_x=True, markers=True,
              title=f"Monte-Carlo count of distance permutations, k={k_mc} sites in R^{n_mc}")
fig.add_hline(y=int(mc["exact"].iloc[0]), line_dash="dash", annotation_text="exact (LP) = closed form")
fig.update_layout(yaxis_title="distinct permutations seen", xaxis_title="query points sampled")
display.log_axis(fig, mc["queries"], "xaxis")
outputs.save_figure(fig, run_dir, "monte_carlo")
fig.show()
mc.tail(3)

# %% [markdown]
# ## 4. How large must $n$ be? The paper's bound and the exact answer
# The last term of Skala's sum, $\left[{k \atop 1}\right] = (k-1)!$, is positive, so
# $N_{n,2}(k) = k!$ **exactly when $n \ge k-1$**: a DE needs dimension $k-1$ to realise every
# ranking of $k$ documents, and $k-2$ dimensions miss $(k-1)!$ of them. The paper's sufficient
# condition for failure, $n < \ln k!/(2\ln k) \approx k/2 - k/(2\ln k)$, is about half of that:
# both grow linearly in $k$, as the paper states. (The minimal dimension is derived here from the
# closed form; it is the workbook's addition, not a claim of the paper.)

# %%
bound = tables.dimension_bound_table(P["k_max_bound"])
outputs.save_table(bound, run_dir, "dimension_bound")
fig = go.Figure()
fig.add_scatter(x=bound["k"], y=bound["exact_min_dimension"], name="exact minimal n (= k-1, from Skala's formula)")
fig.add_scatter(x=bound["k"], y=bound["paper_bound"], name="paper: no DE below ln(k!)/(2 ln k)")
fig.update_layout(title="Dimension a dual encoder needs to realise all k! rankings",
                  xaxis_title="number of documents k", yaxis_title="embedding dimension n",
                  legend={"x": 0.02, "y": 0.98})
display.log_axis(display.log_axis(fig, bound["k"], "xaxis"), bound[["exact_min_dimension", "paper_bound"]].to_numpy().ravel())
outputs.save_figure(fig, run_dir, "dimension_bound")
fig.show()
bound.iloc[[0, len(bound) // 2, -1]]

# %% [markdown]
# ## 5. The inner-product score of the experiments
# The paper's experiments score with $\langle q, d\rangle$ rather than a distance. The ordering
# of $\langle q, d_i\rangle$ over $q \in \mathbb R^n$ is decided by the same kind of LP (a
# homogeneous system $\langle q, d_{\pi_i} - d_{\pi_{i+1}}\rangle > 0$); this is also exactly the
# count of orderings of the logits $E\varphi$ that notebook 02 studies, with the documents as rows of
# $E$. All $k!$ orderings appear only at $n \ge k-1$ as well.
#
# *An observation of this workbook, not a result of the paper:* for generic documents the exact
# counts follow $2\sum_{i} \left[{k \atop k-i}\right]$ over $0 \le i \le m-1$ with
# $i \equiv m-1 \pmod 2$, $m = \min(n, k-1)$ (column `observed_formula`; e.g. $2\binom k2$ in the
# plane). It matches every exact count computed here; it is not proved here.

# %%
with outputs.timed(timings, "inner_product_counts"):
    ip = tables.inner_product_counts(P["k_max_exact"], P["site_sets"], P["seed"])
outputs.save_table(ip, run_dir, "inner_product")
ip_min = ip.groupby(["k", "n"], as_index=False)[
    ["inner_product", "observed_formula", "euclidean_closed_form", "k_factorial"]].min()
print("exact inner-product counts == observed formula:", bool((ip["inner_product"] == ip["observed_formula"]).all()))
fig = px.line(ip_min, x="n", y="inner_product", color="k", markers=True, log_y=True,
              color_discrete_map=display.ordered_colors(ip_min["k"]),
              title="Orderings of <q, d_i> realisable by some q in R^n (random documents, exact LP)")
fig.update_layout(yaxis_title="number of realisable rankings", xaxis_dtick=1)
display.log_axis(fig, ip_min["inner_product"])
outputs.save_figure(fig, run_dir, "inner_product")
fig.show()
ip_min.pivot(index="n", columns="k", values="inner_product")

# %% [markdown]
# ## Results
# `results.json` records the checks above as flat metrics.

# %%
k_top = P["k_max_bound"]
below, at = ip_min.query("n < k - 1"), ip_min.query("n == k - 1")
metrics = {
    "exact_equals_closed_form": exact_matches,
    "max_exact_over_closed_form": float((exact["exact"] / exact["closed_form"]).max()),
    "max_monte_carlo_over_exact": float((mc["monte_carlo"] / mc["exact"]).max()),
    f"exact_min_dimension_k{k_top}": theory.exact_min_dimension(k_top),
    f"paper_bound_k{k_top}": theory.paper_dimension_bound(k_top),
    "inner_product_all_orderings_at_n_k_minus_1": bool((at["inner_product"] == at["k_factorial"]).all()),
    "inner_product_fewer_below_k_minus_1": bool((below["inner_product"] < below["k_factorial"]).all()),
    "inner_product_matches_observed_formula": bool((ip["inner_product"] == ip["observed_formula"]).all()),
}
outputs.write_results(run_dir, "01_de_capacity", P, metrics, timings)
print(f"{len(metrics)} metrics written to the run's results.json")

# %% [markdown]
# ## What to look for
# This run's numbers against section 3.1 (Proposition 3.1), in words: each line says whether
# the finding holds here and the numbers it rests on.

# %%
Markdown(findings.findings_markdown(tables.capacity_findings(metrics, k_top)))

# %% [markdown]
# ## Exercises
# Predict first, then run the command from the repository root (`python` is the workbook's
# environment, e.g. `.venv/bin/python`), then open the answer. Each command writes a new run to
# `outputs/01_de_capacity/<run_name>/` and leaves the others as they are.
#
# **1. The paper's bound at ten thousand documents.** At $k = 10\,000$, below which dimension does
# Proposition 3.1 say a DE must fail, and what is the exact smallest dimension at which it can give
# every ranking?
#
# ```bash
# python -m arrank.workbook.run 01 -p k_max_bound 10000 -p run_name ex-bound
# ```
#
# <details><summary>Answer</summary>
#
# The paper's bound is $\ln k!/(2\ln k) = 4457.4$; the exact smallest dimension is $9999 = k - 1$
# (`paper_bound_k10000`, `exact_min_dimension_k10000` in results.json). The bound stays at about
# 45% of the exact answer (42.8% of it at $k = 1000$: 427.9 against 999): both grow linearly, as the
# paper says, but the bound is loose by a factor of two.
#
# </details>
#
# **2. Ten times more query points.** The quick run samples up to 20,000 query points around $k = 6$
# sites in $\mathbb R^2$ and sees 97 of the 101 distance permutations. With 200,000 points, will
# Monte-Carlo find all 101?
#
# ```bash
# python -m arrank.workbook.run 01 -p mc_queries 200000 -p run_name ex-mc
# ```
#
# <details><summary>Answer</summary>
#
# No: 99 of 101 at 200,000 points (`max_monte_carlo_over_exact` 0.980, against 0.960 in the quick
# run), and never more than the exact count. The cells of the missing permutations are tiny; each
# sample size is a fresh sample, so the curve is not even monotone (98 at 13,428 points, 96 at
# 33,038). Only the exact LP count settles what a DE can realise.
#
# </details>
#
# **3. Seven documents.** With $k = 7$ sites there are $7! = 5040$ rankings. How many can a DE in
# $\mathbb R^5$ produce, and in $\mathbb R^6$?
#
# ```bash
# python -m arrank.workbook.run 01 -p k_max_exact 7 -p run_name ex-k7
# ```
#
# <details><summary>Answer</summary>
#
# 4320 in $\mathbb R^5$ and all 5040 in $\mathbb R^6$: exactly Skala's closed form (the exact LP
# count equals it in every case). $\mathbb R^5$ misses $\left[{7 \atop 1}\right] = 6! = 720$
# rankings, the last term of the sum. The LP enumeration grows fast: this run takes minutes.
#
# </details>
