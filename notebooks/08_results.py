# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 08 · A sweep's results in the paper's layout (paper §5.2, Tables 1-3; §5.3, Figure 3)
#
# A sweep (`sweeps/*.yaml`, run with `make sweep SWEEP=...`) runs one notebook over a grid of
# parameters, one run per point under `outputs/<notebook>/<sweep>-<name>=<value>.../`. This
# notebook reads the `results.json` of every point of one sweep and prints the paper's table:
# rows = loss variant (NTP, Fractional α, Stepwise, Trie β, Combined α, β), columns = CVR, nDCG
# and R@k on the held-out queries, in percent, best value of each column in bold. For a sweep
# run in the `paper` profile the paper's own numbers stand beside each row; the quick profile
# (tiny model, CPU) is read against the random-scores floor instead, since its scale differs.
#
# It only reads: a point that has not run (or failed) is listed as missing, never run from here.

# %% [markdown]
# **Changing a parameter:** the next cell holds the values that run, those of the quick profile. In
# JupyterLab, edit a value and run all cells; with `profile = "paper"` every value you left as
# the cell has it takes the paper profile's (the cell after prints which). From the command line,
# `python -m arrank.workbook.run 08 -p profile paper` runs the notebook into `outputs/08_results/<run_name>/`
# (`--help` after `08` lists every parameter, each profile's values and what is allowed).

# %% tags=["parameters"]
profile: str = "quick"  # picks the default sweep: quick is the workbook's Table 1, paper the GPU Table 1
seed: int = 0  # nothing random here; kept by the parameter contract
run_name: str = "auto"  # folder under outputs/08_results/; auto: profile and date-time
sweep: str = "sweeps/table1_wordnet_workbook.yaml"  # sweep file
paper_rows: str = "auto"  # the paper's numbers beside each row: auto (when the sweep ran the paper profile), yes or no
curve_sweeps: str = ""  # more sweeps whose budget curves join this sweep's (comma-separated), e.g. the same runs trained longer

# %%
from IPython.display import Markdown, display

from arrank.common import findings, outputs, params
from arrank.results import chosen, curve, paper, table1, tables
from arrank.workbook import report
from arrank.workbook import sweep as sweeps

P = params.check_params("08_results", globals())
run_dir = outputs.start_run("08_results", P)
timings: dict[str, float] = {}
S = sweeps.load_sweep(P["sweep"])
P

# %% [markdown]
# ## 1. The points of the sweep
# Each point's run, its state (`done`, `failed`: only failed attempts exist, `missing`) and the
# row it belongs to. A finished run made with other parameters than the file now gives is an
# error, so a table never mixes two versions of a sweep.

# %%
with outputs.timed(timings, "collect"):
    frame = report.collect(S)
print(f"{S.name}: notebook {S.notebook}, {len(frame)} points, {(frame['state'] == 'done').sum()} finished")
print(S.description)
frame[["run_name", "state", "label", "profile"]]

# %% [markdown]
# ## 2. The table (percent; CVR lower is better, the rest higher)
# Variants in sweep order, averaged over seeds when the sweep varies the seed. Each value carries
# ± half the width of its 95% confidence interval: a bootstrap over the held-out queries of the
# runs' per-query metrics, widened by the spread between seeds where a variant has several
# (docs/findings.md); runs made before notebook 05 saved `per_query.csv` show ± one standard
# deviation over seeds instead (the caption says which). Written as `results_table.csv` and
# `results_table.md`, the per-query rows as `per_query.csv` (point, variant, seed, query, cvr,
# ndcg, r1..r5: fractions).

# %%
reference = report.paper_reference(S, frame, P["paper_rows"])
per_query = report.per_query_frame(S, frame) if S.notebook == "05_train" else None
if per_query is not None and len(per_query):
    report.write_per_query(per_query, run_dir / "per_query.csv")
table = tables.results_table(frame, reference, report.random_floor(S, frame), per_query)
tables.write_tables(table, run_dir, "results_table")
if reference:
    print(f"beside each row: the paper's {paper.PAPER[reference]['caption']}")
display(Markdown(tables.markdown(table)))

# %% [markdown]
# ## 3. R@k per variant
# Recall at each cut-off k, one line per variant (the paper's rows and the random floor dotted;
# click a legend entry to show or hide it).

# %%
fig = tables.recall_curves(table, f"{S.name}: R@k per variant, held-out queries "
                                 f"({tables.sweep_profile(frame) or 'mixed'} profile)")
outputs.save_figure(fig, run_dir, "recall_curves")
fig.show()

# %% [markdown]
# ## 4. CVR and nDCG against the swept temperatures
# Variants that differ only in α (or only in β) form one line; variants on no line (NTP,
# Stepwise) are dashed references.

# %%
fig = tables.parameter_curves(frame, S.notebook)
if fig is None:
    print("no parameter of this sweep takes two or more values within one family: no curve to draw")
else:
    outputs.save_figure(fig, run_dir, "parameter_curves", height=700)
    fig.show()

# %% [markdown]
# ## 5. The central finding against the training budget
# Table 1's central finding, fractional α = 2 above NTP at R@2..R@5, is a claim at one budget. A
# run of notebook 05 with `eval_steps` scores the same held-out queries at several optimizer steps
# (`curve_per_query.csv`), so a sweep of such runs can decide the finding at each budget: does it
# hold from the start, turn to holds as training goes on, or not yet at the largest budget? Each
# budget's difference gets its 95% interval as Table 1's findings do (paired bootstrap over the
# queries, seeds in quadrature; `results.curve`, docs/findings.md), beside NTP's R@1 and
# fractional's CVR. The three claims of one budget are one family: each verdict's p-value (the one
# its interval implies) is also Holm-adjusted within it, and a verdict the adjustment changes is
# marked (`holds → **undecided**`). Written as `curve_findings.csv`, `curve_metrics.csv` (each variant's means
# with their intervals, fractions) and the rows as `curve_per_query.csv`. `curve_sweeps` adds the
# curves of other sweeps: runs of the same setting (items a step, held-out queries; the `setting`
# column) join into one curve, e.g. the same runs trained longer; different settings, e.g. a GPU and
# a CPU sweep, a constant rate read at each budget and a cosine decay to each budget (one run per
# budget, the paper's schedule), or two learning rates, are decided and drawn side by side, one line each, never pooled. Runs
# with validation queries (notebook 05's `n_dev`) are read on their test queries here; section 6 uses
# the validation ones, and the figure marks each method's budget chosen on them.

# %%
more = [sweeps.load_sweep(f) for f in P["curve_sweeps"].split(",") if f]  # other runs, other budgets
curve_rows = report.curves([S, *more]) if S.notebook == "05_train" else None
if curve_rows is None or curve_rows.empty:
    print("no point of this sweep scored its queries at several budgets (notebook 05's eval_steps): no curve")
else:
    report.write_per_query(curve_rows, run_dir / "curve_per_query.csv")
    with outputs.timed(timings, "curve"):
        per_budget, means = curve.curve_findings(curve_rows), curve.curve_metrics(curve_rows)
    outputs.save_table(per_budget, run_dir, "curve_findings")
    outputs.save_table(means, run_dir, "curve_metrics")
    verdicts = findings.findings_markdown(curve.budget_verdicts(per_budget))
    display(Markdown(curve.budget_markdown(per_budget) + "\n" + verdicts))
    display(curve.metrics_table(means))
    picks = chosen.choices(curve_rows)  # each method's budget chosen on validation, per seed (section 6)
    if (per_budget["claim"] == curve.CENTRAL.claim).any():
        named = S.name + (f" + {len(more)} more sweeps" if more else "")  # the sweeps the curves come from
        fig = curve.curve_figure(per_budget, title=f"{named}: {curve.CENTRAL.name}", chosen=picks)
        outputs.save_figure(fig, run_dir, "curve")
        fig.show()

# %% [markdown]
# ## 6. Each method at its budget chosen on the validation queries
# Reading every budget on the test queries asks where a claim holds; a reader of the paper asks
# whether it holds for each method at its best budget. With validation queries (notebook 05's
# `n_dev`), each method's budget (and schedule and learning rate, where several were run) is chosen
# per seed by its validation mean R@2..R@5, and the test queries are read once, there
# (`results.chosen`); a choice at the largest budget offered is marked (`largest`): a larger one
# might do better. The interval resamples the seeds and both query sets and makes the choice again
# in each resample, so a choice that could have gone either way widens it. The three claims at the
# chosen budgets are one Holm family. Written as `chosen_budgets.csv` and `chosen_findings.csv`.

# %%
at_chosen = chosen.chosen_findings(curve_rows) if curve_rows is not None else []
if not at_chosen:
    print("no run of these sweeps has validation queries (notebook 05's n_dev): no budget chosen on them")
else:
    outputs.save_table(picks, run_dir, "chosen_budgets")
    outputs.save_table(chosen.findings_frame(at_chosen), run_dir, "chosen_findings")
    display(chosen.choices_table(picks))
    display(Markdown(findings.findings_markdown([f for _, f in at_chosen])))

# %% [markdown]
# ## Results

# %%
best = tables.best_variants(table)
metrics = {
    "points": len(frame),
    "finished": int((frame["state"] == "done").sum()),
    "failed": int((frame["state"] == "failed").sum()),
    "missing": int((frame["state"] == "missing").sum()),
    "variants": int((table["source"] == "this run").sum()),
    "paper_rows": reference is not None,
    **{f"best_{m}": ", ".join(labels) for m, labels in best.items()},
}
outputs.write_results(run_dir, "08_results", P, metrics, timings)
print(f"{len(metrics)} metrics written to the run's results.json")

# %% [markdown]
# ## What to look for
# The sweep against Table 1's findings (section 5.2), in words (`results.table1.table1_findings`; the
# zero-shot row, when the sweep has one, is checked against every fine-tuned row). Each is decided
# by the 95% interval of the per-query difference it is about (`results.statistics`,
# docs/findings.md): it **holds** when the interval lies on the claim's side of its threshold,
# does **not** hold when it lies on the other side, and is **undecided** when it covers the
# threshold: the runs cannot tell the difference from noise, and more queries (or seeds) would. A
# claim about several variants holds when every part holds, fails when one fails. Runs without
# per-query data give the point verdict, labelled as point estimates.
#
# The checks of this table are one family: each comes with the p-value its interval implies (below
# 0.05 exactly when the verdict is decided) and its Holm-adjusted verdict over the family, which
# keeps the chance of any wrong decided verdict among them at 5%. A verdict the adjustment leaves
# undecided reads `holds here → **undecided** (Holm)` (docs/findings.md, "A table's findings as a family").

# %%
Markdown(findings.findings_markdown(table1.sweep_findings(frame, S.notebook, per_query)))

# %% [markdown]
# ## Exercises
# Predict first, then run the command from the repository root (`python` is the workbook's
# environment, e.g. `.venv/bin/python`), then open the answer. This notebook only reads finished
# runs; it trains nothing.
#
# **1. The paper's numbers beside the quick table.** Put the paper's Table 1 (Mistral-7B, all WordNet
# nouns) beside each row of the workbook's table. Which of the paper's findings would you expect the
# tiny model to share, and where will it be furthest from the paper?
#
# ```bash
# python -m arrank.workbook.run 08 -p paper_rows yes -p run_name ex-paper-rows
# ```
#
# <details><summary>Answer</summary>
#
# All four of the table's findings hold at CPU scale, as in the paper: NTP has the highest CVR, the
# best R@1, fractional α = 2 a higher mean R@2..R@5 and the trie targets a low CVR (the findings the
# command prints decide each with its interval). The numbers are another matter: NTP's CVR is far
# above the paper's (a 7B model brings a prior the tiny model lacks), and the rank-aware rows are far
# below the paper at R@1, while trie β = 2 is above it at R@3..R@5. The table the command prints has
# each row's figures beside the paper's; it reads finished runs, so it takes seconds.
#
# </details>
#
# **2. A real pretrained LLM.** The `pretrained` profile fine-tunes SmolLM2-135M-Instruct with LoRA on
# Appendix D's prompts (minutes per row on 2 cores). Predict: does NTP still have a CVR near
# the random floor, and does fractional α = 2 still beat NTP at R@2..R@5?
#
# ```bash
# make sweep SWEEP=sweeps/table1_wordnet_pretrained.yaml
# python -m arrank.workbook.run 08 -p sweep sweeps/table1_wordnet_pretrained.yaml -p run_name ex-pretrained
# ```
#
# <details><summary>Answer</summary>
#
# No, and no. NTP's CVR falls far below the tiny model's: the instruct model brings an order of its
# own (zero-shot its CVR is already 3.8%); NTP's CVR is still the highest of the
# fine-tuned rows, fractional and trie β = 2 cut it further, and NTP keeps the best R@1. Fractional
# α = 2 is below NTP at R@2..R@5 at this budget. The findings the command prints decide each with its
# interval; docs/pretrained.md has the figures, and the budget curve along which the gap turns.
#
# </details>
