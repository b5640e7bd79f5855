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
# **Changing a parameter:** in JupyterLab, edit its value in the next cell (say `profile = "paper"`)
# and run all cells; from the command line,
# `python -m arrank.workbook.run 08 -p profile paper` runs the notebook into
# `outputs/08_results/<run_name>/` (`--help` after `08` lists every parameter and its allowed values).

# %% tags=["parameters"]
profile = "quick"  # picks the default sweep: quick is the workbook's Table 1, paper the GPU Table 1
seed = 0  # nothing random here; kept by the parameter contract
run_name = "auto"  # folder under outputs/08_results/; auto: profile and date-time
sweep = None  # sweep file; None: sweeps/table1_wordnet_workbook.yaml quick, sweeps/table1_wordnet_paper.yaml paper
paper_rows = "auto"  # the paper's numbers beside each row: auto (when the sweep ran the paper profile), yes or no

# %%
from IPython.display import Markdown, display

from arrank.common import findings, outputs, params
from arrank.results import paper, table1, tables
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

# %%
Markdown(findings.findings_markdown(table1.sweep_findings(frame, S.notebook, per_query)))
