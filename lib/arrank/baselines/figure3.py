"""DE and CE baselines on WordNet (paper section 5.3, Figure 3, Appendix B): train, evaluate,
tabulate and plot, beside any ARR runs of notebook 05 on the same data.

Figure 3: (a) R@k against k for DEs with n in {4, 8, 16, 32} at alpha = 5 and a CE with n = 32
(and the ARR model); (b) a DE with n = 8 for several alpha; (c) a CE with n = 32 for several alpha.
The models are in ``arrank.baselines.dual_encoder`` and ``arrank.baselines.cross_encoder``, the pairs in
``arrank.baselines.lookup``.

Evaluation is the ARR evaluation of section 5.1 (``arrank.evaluation.metrics``, the same functions): per
evaluation query, its relevant hypernyms and its negative are scored (DE: inner product, CE: MLP)
and ranked; CVR, nDCG and R@k. Extra, DE only: full-corpus retrieval R@k, the same R@k with every
synset of the hierarchy as a candidate (the query itself excluded).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from arrank.baselines import cross_encoder as CE, dual_encoder as DE
from arrank.evaluation import metrics
from arrank.workbook import paths
from arrank.workbook.display import percent_text
from arrank.baselines.lookup import Pairs, check_alpha, check_dim

MODELS = ("de", "ce")
SMALL_KS = (1, 2)  # "small k" in the findings of Figure 3


def config_key(model: str, n: int, alpha: float) -> str:
    """Flat name of one trained configuration, e.g. ``de_n32_alpha5`` (prefix of its metrics)."""
    return f"{model}_n{n}_alpha{alpha:g}"


def figure3_configs(de_dims: Sequence[int], ce_dim: int, alpha: float, alpha_dim: int,
                    alphas: Sequence[float]) -> list[dict[str, Any]]:
    """The distinct (model, n, alpha) runs Figure 3 needs, each with the panels it appears in:
    (a) DE n in ``de_dims`` at ``alpha`` and CE ``ce_dim`` at ``alpha``; (b) DE ``alpha_dim`` for
    every alpha in ``alphas``; (c) CE ``ce_dim`` for every alpha in ``alphas``."""
    if not de_dims or not alphas:
        raise ValueError("Figure 3 needs at least one DE dimension and one alpha")
    wanted = [("de", check_dim(n), check_alpha(alpha), "a") for n in de_dims]
    wanted.append(("ce", check_dim(ce_dim), check_alpha(alpha), "a"))
    wanted += [("de", check_dim(alpha_dim), check_alpha(a), "b") for a in alphas]
    wanted += [("ce", check_dim(ce_dim), check_alpha(a), "c") for a in alphas]
    configs: dict[tuple[str, int, float], dict[str, Any]] = {}
    for model, n, a, panel in wanted:
        entry = configs.setdefault((model, n, a), {"model": model, "n": n, "alpha": a, "panels": []})
        if panel not in entry["panels"]:
            entry["panels"].append(panel)
    return list(configs.values())


def single_config(model: str, n: int, alpha: float) -> list[dict[str, Any]]:
    """One DE or CE run (a sweep point) as a config list."""
    if model not in MODELS:
        raise ValueError(f"model={model!r} is not allowed; choose one of {list(MODELS)} (or figure3)")
    return [{"model": model, "n": check_dim(n), "alpha": check_alpha(alpha), "panels": []}]


# --------------------------------------------------------------------------- evaluation (section 5.1)


def candidate_rows(df_eval: pd.DataFrame, rows: Mapping[str, int]) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    """Every (query, candidate) pair of the evaluation queries: candidates = relevant docIDs (rank
    order) then the negative. Returns (query rows, candidate rows, candidates per query)."""
    sizes = np.array([len(r) + 1 for r in df_eval["relevant"]], dtype=np.int64)
    q = np.repeat([rows[x] for x in df_eval["query"]], sizes)
    d = [rows[x] for rel, neg in zip(df_eval["relevant"], df_eval["negative"]) for x in (*rel, neg)]
    return torch.as_tensor(q, dtype=torch.int64), torch.as_tensor(d, dtype=torch.int64), sizes


def score_records(df_eval: pd.DataFrame, scores: torch.Tensor, sizes: np.ndarray) -> list[dict[str, Any]]:
    """Records for ``metrics.per_query_metrics``: relevant, negative and docID -> score."""
    values = scores.double().numpy()
    ends = np.cumsum(sizes)
    out = []
    for (query, rel, neg), end, size in zip(df_eval[["query", "relevant", "negative"]].itertuples(index=False), ends, sizes):
        out.append({"query": query, "relevant": list(rel), "negative": neg,
                    "scores": dict(zip((*rel, neg), values[end - size: end].tolist()))})
    return out


def evaluate(df_eval: pd.DataFrame, scores: torch.Tensor, sizes: np.ndarray,
             ks: Iterable[int]) -> tuple[dict[str, Any], pd.DataFrame]:
    """(flat metrics, per-query frame) of section 5.1 for the candidates' scores."""
    frame = metrics.per_query_metrics(score_records(df_eval, scores, sizes), ks)
    return metrics.summarize(frame, ks), frame


def retrieval_recall(table: torch.Tensor, df_eval: pd.DataFrame, rows: Mapping[str, int],
                     corpus: Sequence[str], ks: Sequence[int]) -> dict[str, Any]:
    """Full-corpus retrieval with a DE: ``retrieval_recall@k`` = mean over the evaluation queries
    with >= k relevant docIDs of R@k (``metrics.recall_at_k``) with every synset of ``corpus``
    but the query as a candidate. Exact: the candidates passed to recall_at_k are the retrieved
    top-max(ks) (ties kept) plus the relevant docIDs, which decide every top-k, k <= max(ks)."""
    corpus_rows = torch.as_tensor([rows[c] for c in corpus], dtype=torch.int64)
    names = np.asarray(corpus, dtype=object)
    column = {int(r): i for i, r in enumerate(corpus_rows.tolist())}
    q = torch.as_tensor([rows[x] for x in df_eval["query"]], dtype=torch.int64)
    found, found_scores = DE.retrieve(table, q, corpus_rows, max(ks))
    out: dict[str, Any] = {}
    per_k: dict[int, list[float]] = {k: [] for k in ks}
    for i, rel in enumerate(df_eval["relevant"]):
        rel = list(rel)
        gold_scores = DE.de_scores(table, q[i].repeat(len(rel)), torch.as_tensor([rows[x] for x in rel]))
        keep = found[i] >= 0
        cand = dict(zip(names[[column[int(r)] for r in found[i][keep]]].tolist(), found_scores[i][keep].tolist()))
        cand.update(zip(rel, gold_scores.tolist()))
        for k in ks:
            r = metrics.recall_at_k(rel, cand, k) if len(rel) >= k else None
            if r is not None:
                per_k[k].append(r)
    for k in ks:
        out[f"retrieval_recall@{k}"] = float(np.mean(per_k[k])) if per_k[k] else None
    return out


# --------------------------------------------------------------------------- one configuration


def train_config(config: Mapping[str, Any], pairs: Pairs, n_rows: int, hyper: Mapping[str, Any],
                 seed: int, progress: bool = True) -> tuple[Any, pd.DataFrame, dict[str, Any]]:
    """Train the DE or CE of ``config`` (model, n, alpha) with the hyper-parameters ``hyper``
    (de_steps, ce_steps, batch_size, tau, de_lr, de_momentum, ce_lr, ce_weight_decay,
    de_row_updates, ce_row_updates, ce_optimizer, ce_table_init_std). Returns (model, loss log,
    facts, the row norms of the trained table among them)."""
    if config["model"] == "de":
        return DE.train_de(pairs, n_rows, config["n"], config["alpha"], steps=hyper["de_steps"],
                           batch_size=hyper["batch_size"], tau=hyper["tau"], lr=hyper["de_lr"],
                           momentum=hyper["de_momentum"], seed=seed, row_updates=hyper["de_row_updates"],
                           progress=progress)
    if config["model"] == "ce":
        return CE.train_ce(pairs, n_rows, config["n"], config["alpha"], steps=hyper["ce_steps"],
                           batch_size=hyper["batch_size"], lr=hyper["ce_lr"],
                           weight_decay=hyper["ce_weight_decay"], seed=seed,
                           row_updates=hyper["ce_row_updates"], optimizer=hyper["ce_optimizer"],
                           table_init_std=hyper["ce_table_init_std"], progress=progress)
    raise ValueError(f"model={config['model']!r} is not allowed; choose one of {list(MODELS)}")


def score_pairs(model_kind: str, model: Any, q: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    """The trained model's scores of the pairs (q_i, d_i)."""
    if model_kind == "de":
        return DE.de_scores(model, q, d)
    table, net = model
    return CE.ce_scores(table, net, q, d)


def run_configs(configs: Sequence[Mapping[str, Any]], pairs: Pairs, n_rows: int, df_eval: pd.DataFrame,
                rows: Mapping[str, int], hyper: Mapping[str, Any], ks: Sequence[int], seed: int,
                corpus: Sequence[str] | None = None, progress: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train and evaluate every config. Returns (one row per config: model, n, alpha, panels,
    section 5.1 metrics, DE retrieval metrics when ``corpus`` is given, final_loss, train_s,
    steps_per_s, eval_s; the concatenated loss logs with a ``config`` column)."""
    q, d, sizes = candidate_rows(df_eval, rows)
    results, logs = [], []
    for config in configs:
        model, log, facts = train_config(config, pairs, n_rows, hyper, seed, progress)
        start = time.perf_counter()
        summary, _ = evaluate(df_eval, score_pairs(config["model"], model, q, d), sizes, ks)
        if config["model"] == "de" and corpus is not None:
            summary.update(retrieval_recall(model, df_eval, rows, corpus, ks))
        key = config_key(config["model"], config["n"], config["alpha"])
        results.append({"config": key, "model": config["model"], "n": config["n"], "alpha": config["alpha"],
                        "panels": ",".join(config["panels"]), **summary,
                        "final_loss": float(log["loss"].iloc[-1]), **facts,
                        "eval_s": time.perf_counter() - start})
        logs.append(log.assign(config=key))
    return pd.DataFrame(results).set_index("config"), pd.concat(logs, ignore_index=True)


# --------------------------------------------------------------------------- Figure 3 from a sweep's points

STEM = "07_de_ce_baselines"


def point_results(params: Mapping[str, Any], pattern: str, configs: Sequence[Mapping[str, Any]],
                  root: Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Figure 3 from single-configuration runs of this notebook (the points of a sweep such as
    ``sweeps/fig3_baselines_paper.yaml``) instead of training: the finished runs whose names
    match the glob ``pattern`` and whose params match ``params`` (the data: subtree,
    min_relevant, n_eval, seed; and the training settings, so that e.g. a CE run with another
    ``ce_optimizer`` is left out); each results row whose (model, n, alpha) is one of ``configs`` gets that config's
    panels; of two runs of one config the newer wins. Returns (results, their training logs,
    the run names used); a clear error when no run matches."""
    if not pattern or "/" in pattern:
        raise ValueError(f"from_runs={pattern!r} must be a glob on {STEM} run names, e.g. 'paper-fig3-*'")
    from fnmatch import fnmatchcase

    from arrank.workbook.outputs import finished_runs

    wanted = {config_key(c["model"], c["n"], c["alpha"]): ",".join(c["panels"]) for c in configs}
    rows: dict[str, pd.Series] = {}
    logs: dict[str, pd.DataFrame] = {}
    used: dict[str, str] = {}
    for run in finished_runs(STEM, root):  # oldest first: a newer run of a config replaces it
        if not fnmatchcase(run.name, pattern):
            continue
        ran = json.loads((run / "results.json").read_text()).get("params", {})
        if ran.get("model") == "figure3" or any(ran.get(k) != v for k, v in params.items()):
            continue
        table = pd.read_csv(run / "results.csv", index_col="config")
        log = pd.read_csv(run / "training_log.csv")
        for key, row in table.iterrows():
            if key in wanted:
                rows[key], logs[key], used[key] = row.copy(), log[log["config"] == key], run.name
                rows[key]["panels"] = wanted[key]
    if not rows:
        raise ValueError(f"no finished {STEM} run named like {pattern!r} holds a Figure 3 configuration "
                         f"with these params ({dict(params)})")
    order = [k for k in wanted if k in rows]
    results = pd.DataFrame([rows[k] for k in order]).infer_objects()
    results.index.name = "config"
    return results, pd.concat([logs[k] for k in order], ignore_index=True), sorted(set(used.values()))


# --------------------------------------------------------------------------- ARR runs of notebook 05

SCORED_ON = {"training": "training queries", "held-out": "held-out queries"}
ARR_METRIC = lambda c: c in ("cvr", "ndcg", "n_queries") or c.startswith("recall@")


def arr_label(p: Mapping[str, Any]) -> str:
    """A curve label from a 05_train run's params: ARR and the paper's name of its loss variant
    (``report.loss_label``), e.g. ``ARR Fractional α=2``, ``ARR Trie β=2``, ``ARR NTP``."""
    from arrank.workbook.report import loss_label

    return f"ARR {loss_label(dict(p))}"


def arr_runs(dataset: Mapping[str, Any], n_queries: int, root: Path | None = None,
             stem: str = "05_train", pattern: str = "*") -> pd.DataFrame:
    """Finished ARR runs (``outputs/05_train/<run>/results.json``, run names matching the glob
    ``pattern``) on the same evaluation queries: their params match ``dataset`` (subtree,
    min_relevant, n_eval, seed) and they evaluated ``n_queries`` queries. One row per run: run,
    label (the variant, ``arr_label``; made distinct where two runs share it), in the paper's row
    order (``variant_order``), scheme, alpha,
    targets, beta, combined, sampling, the held-out metrics (cvr, ndcg, recall@k, n_queries) and,
    for runs that scored a sample of their training queries (notebook 05 since issue 16), the
    same under ``train_``. Empty (with a ``label`` column) if none."""
    if not pattern or "/" in pattern:
        raise ValueError(f"pattern={pattern!r} must be a glob on run names, e.g. '*' or 'table1_wordnet_quick-*'")
    from fnmatch import fnmatchcase

    from arrank.workbook.outputs import finished_runs

    rows, params = [], []
    for run in sorted((r for r in finished_runs(stem, root) if fnmatchcase(r.name, pattern)), key=lambda r: r.name):
        path = run / "results.json"
        try:
            result = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        p, m = result.get("params", {}), result.get("metrics", {})
        if any(p.get(k) != v for k, v in dataset.items()) or m.get("n_queries") != n_queries:
            continue
        rows.append({"run": path.parent.name, "label": arr_label(p),
                     **{k: p.get(k) for k in ("scheme", "alpha", "targets", "beta", "combined", "sampling")},
                     **{k: v for k, v in m.items() if ARR_METRIC(k) or (k.startswith("train_")
                                                                       and ARR_METRIC(k.removeprefix("train_")))}})
        params.append(p)
    distinct_labels(rows, params)
    order = sorted(range(len(rows)), key=lambda i: (variant_order(params[i]), rows[i]["run"]))
    return pd.DataFrame([rows[i] for i in order]) if rows else pd.DataFrame(columns=["run", "label"])


def variant_order(p: Mapping[str, Any]) -> tuple:
    """Sort key of a 05_train run in the paper's row order: zero-shot, NTP, fractional (by α),
    stepwise, then the trie variants (by β), the combined ones last."""
    scheme = {"indicator": 0, "fractional": 1, "stepwise": 2}.get(p.get("scheme"), 3)
    num = lambda v: float(v) if isinstance(v, (int, float)) else 0.0
    trie = p.get("targets") == "trie"
    return (p.get("steps") != 0, trie, bool(p.get("combined")), scheme,
            num(p.get("alpha")) if scheme == 1 else 0.0, num(p.get("beta")) if trie else 0.0)


def distinct_labels(rows: list[dict[str, Any]], params: list[Mapping[str, Any]]) -> None:
    """Make equal ``label``s distinct, in place: add the parameters in which those runs differ
    (not the run name), e.g. ``ARR NTP (steps=400)`` / ``ARR NTP (steps=1200)``; the run name
    when their parameters are the same."""
    from arrank.workbook.display import greek, number_text

    by_label: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        by_label.setdefault(row["label"], []).append(i)
    for same in (idx for idx in by_label.values() if len(idx) > 1):
        keys = sorted({k for i in same for k in params[i]} - {"run_name"})
        differ = [k for k in keys if len({json.dumps(params[i].get(k), sort_keys=True, default=str) for i in same}) > 1]
        for i in same:
            extra = ", ".join(f"{greek(k)}={number_text(params[i].get(k))}" for k in differ) or rows[i]["run"]
            rows[i]["label"] = f"{rows[i]['label']} ({extra})"


# --------------------------------------------------------------------------- Figure 3 tables and plots

CURVE_COLUMNS = ["curve", "model", "n", "alpha", "k", "recall", "scored_on"]
BASELINE_GROUP = "DE and CE: trained and scored on the same queries"
ARR_GROUPS = {"training": "ARR: scored on its training queries (dashed)",
              "held-out": "ARR: scored on held-out queries (dotted)"}


def _curve_name(row: Mapping[str, Any], vary: str) -> str:
    if vary == "alpha" or row["model"] == "ce":  # the CE's alpha is named in panel (a) too
        return f"{row['model'].upper()} n={row['n']} α={row['alpha']:g}"
    return f"{row['model'].upper()} n={row['n']}"


def recall_curves(results: pd.DataFrame, ks: Sequence[int], vary: str = "n", prefix: str = "recall@") -> pd.DataFrame:
    """Long table (curve, model, n, alpha, k, recall, scored_on) of R@k (fractions) against k for
    every DE / CE result row; they are scored on queries they trained on (the capacity setting)."""
    out = []
    for _, row in results.reset_index().iterrows():
        for k in ks:
            value = row.get(f"{prefix}{k}")
            if value is not None and not pd.isna(value):
                out.append({"curve": _curve_name(row, vary), "model": row["model"], "n": row["n"],
                            "alpha": row["alpha"], "k": k, "recall": float(value),
                            "scored_on": SCORED_ON["training"]})
    return pd.DataFrame(out, columns=CURVE_COLUMNS)


def arr_curves(arr: pd.DataFrame | None, ks: Sequence[int]) -> pd.DataFrame:
    """Long table of the ARR runs' R@k: per run its curve on its training queries
    (``train_recall@k``, when the run has it) then on the held-out queries, named
    ``<label> (training queries)`` / ``<label> (held-out queries)``."""
    out = []
    for _, r in (arr if arr is not None else pd.DataFrame()).iterrows():
        for kind, prefix in (("training", "train_recall@"), ("held-out", "recall@")):
            for k in ks:
                value = r.get(f"{prefix}{k}")
                if value is not None and not pd.isna(value):
                    out.append({"curve": f"{r['label']} ({SCORED_ON[kind]})", "model": "arr", "n": None,
                                "alpha": r.get("alpha"), "k": k, "recall": float(value), "scored_on": SCORED_ON[kind]})
    return pd.DataFrame(out, columns=CURVE_COLUMNS)


def panel_table(results: pd.DataFrame, panel: str, ks: Sequence[int], arr: pd.DataFrame | None = None) -> pd.DataFrame:
    """The curves of one Figure 3 panel ("a", "b" or "c"), in parameter order: (a) the DEs by n,
    the CE, then the ARR runs (``arr_curves``); (b), (c) by alpha. R@k as fractions."""
    chosen = results[results["panels"].str.split(",").apply(lambda p: panel in p)]
    order = ["model_rank", "n", "alpha"] if panel == "a" else ["model_rank", "alpha"]
    chosen = (chosen.assign(model_rank=chosen["model"].map({"de": 0, "ce": 1}))
              .sort_values(order, kind="stable").drop(columns="model_rank"))
    curves = recall_curves(chosen, ks, vary="n" if panel == "a" else "alpha")
    if panel == "a":
        extra = arr_curves(arr, ks)
        curves = pd.concat([df for df in (curves, extra) if len(df)], ignore_index=True) if len(extra) else curves
    return curves


def _curve_colors(curves: pd.DataFrame) -> dict[str, str]:
    """Colours: a model's baseline curves on an ordered scale of the parameter they vary (n:
    blues, alpha: viridis; both: viridis in (n, alpha) order), a lone CE dark grey, a lone DE
    blue; the ARR variants a qualitative palette, the same colour for a variant's two curves."""
    from arrank.workbook.display import ordered_colors, qualitative_colors

    colors: dict[str, str] = {}
    base = curves[curves["model"] != "arr"].drop_duplicates("curve")
    for model, part in base.groupby("model", sort=False):
        ns, alphas = part["n"].nunique(), part["alpha"].nunique()
        if len(part) == 1:
            colors[part["curve"].iloc[0]] = "#333333" if model == "ce" else "#1f77b4"
            continue
        keys = list(zip(part["n"] if ns > 1 else [0] * len(part), part["alpha"] if alphas > 1 else [0] * len(part)))
        scale = ordered_colors(keys, "Blues", 0.45, 1.0) if alphas == 1 else ordered_colors(keys)
        colors.update({c: scale[k] for c, k in zip(part["curve"], keys)})
    arr = curves[curves["model"] == "arr"]
    variants = arr["curve"].str.replace(r" \((training|held-out) queries\)$", "", regex=True)
    palette = qualitative_colors(variants)
    colors.update({c: palette[v] for c, v in zip(arr["curve"], variants)})
    return colors


def recall_figure(curves: pd.DataFrame, title: str, y_title: str = "R@k (%)"):
    """Plotly line plot of R@k (percent) against k, one line per curve in the table's order:
    DE / CE solid (one legend group: trained and scored on the same queries), ARR on its training
    queries dashed and on held-out queries dotted (a legend group each)."""
    import plotly.graph_objects as go

    from arrank.workbook.display import percent_axis, style

    colors, seen = _curve_colors(curves), set()
    fig = go.Figure()
    for name, part in curves.groupby("curve", sort=False):
        arr = (part["model"] == "arr").any()
        kind = "held-out" if part["scored_on"].iloc[0] == SCORED_ON["held-out"] else "training"
        group = ARR_GROUPS[kind] if arr else BASELINE_GROUP
        fig.add_trace(go.Scatter(x=part["k"], y=part["recall"] * 100, mode="lines+markers", name=name,
                                 legendgroup=group, legendgrouptitle_text=None if group in seen else group,
                                 line={"color": colors[name],
                                       "dash": ("dot" if kind == "held-out" else "dash") if arr else "solid"}))
        seen.add(group)
    style(fig, title)
    percent_axis(fig, "yaxis", y_title)
    fig.update_layout(xaxis={"title": "k", "dtick": 1}, legend={"font": {"size": 11}, "groupclick": "toggleitem",
                                                             "tracegroupgap": 12})
    return fig


def panel_a_note(arr: pd.DataFrame | None) -> str:
    """Figure 3 (a)'s second title line: which curves answer which question."""
    note = "DE, CE: trained and scored on the same queries (a capacity test: can the table fit the rankings?)"
    if arr is None or not len(arr):
        return note
    trained = any(c.startswith("train_recall@") for c in arr.columns) and arr.filter(like="train_recall@").notna().any().any()
    return (note + "<br>ARR: " + ("on a sample of its training queries (dashed: the same question) and " if trained else "")
            + "on held-out queries it never trained on (dotted: a harder test)")


def figure3_panels(results: pd.DataFrame, ks: Sequence[int], arr: pd.DataFrame | None, figure3: bool,
                   de_dims: Sequence[int] = (), ce_dim: int = 0, alpha: float = 0.0,
                   alpha_dim: int = 0) -> dict[str, tuple[pd.DataFrame, Any]]:
    """name -> (curve table, plotly figure) of the run: Figure 3 (a), (b), (c) when ``figure3``,
    else one ``recall_at_k`` panel with every trained config (and the ARR runs); plus
    ``retrieval_recall_at_k`` (DE full-corpus retrieval) when the results hold it. Tables hold
    fractions, figures percent."""
    from arrank.workbook.display import subtitle

    out: dict[str, tuple[pd.DataFrame, Any]] = {}
    with_arr = arr is not None and len(arr)
    if figure3:
        dims = ", ".join(map(str, sorted(de_dims)))
        titles = {"a": subtitle(f"Figure 3 (a): R@k of DEs (n = {dims}) and a CE (n = {ce_dim}), both at α = {alpha:g}"
                                + (", and ARR" if with_arr else ""), panel_a_note(arr)),
                  "b": subtitle(f"Figure 3 (b): DE, n = {alpha_dim}, for each α", BASELINE_GROUP),
                  "c": subtitle(f"Figure 3 (c): CE, n = {ce_dim}, for each α", BASELINE_GROUP)}
        for panel, title in titles.items():
            table = panel_table(results, panel, ks, arr)
            out[f"figure3{panel}"] = (table, recall_figure(table, title))
    else:
        everything = results.assign(panels="a")
        table = panel_table(everything, "a", ks, arr)
        title = "R@k of the trained model" + (" and the ARR runs" if with_arr else "")
        out["recall_at_k"] = (table, recall_figure(table, subtitle(title, panel_a_note(arr))))
    if any(c.startswith("retrieval_recall@") for c in results.columns):
        de = results[results["model"] == "de"].sort_values(["n", "alpha"], kind="stable")
        table = recall_curves(de, ks, vary="alpha", prefix="retrieval_recall@")
        out["retrieval_recall_at_k"] = (table, recall_figure(table, subtitle(
            "DE full-corpus retrieval", "R@k with every synset of the hierarchy as a candidate")))
    return out


def config_label(key: str) -> str:
    """A config key as a figure names it: ``de_n32_alpha5`` -> ``DE n=32 α=5``."""
    model, n, alpha = key.split("_", 2)
    return f"{model.upper()} n={n.removeprefix('n')} α={alpha.removeprefix('alpha')}"


def loss_figure(logs: pd.DataFrame, title: str = "Training loss"):
    """Plotly training curves (mean loss per logged interval, log scale), one line per config,
    named ``DE n=32 α=5``, in (model, n, α) order, each model's α on an ordered scale."""
    import plotly.graph_objects as go

    from arrank.workbook.display import log_axis, ordered_colors, style

    keys = list(dict.fromkeys(logs["config"]))
    parsed = {k: (k.split("_")[0], int(k.split("_")[1][1:]), float(k.split("_", 2)[2].removeprefix("alpha")))
              for k in keys}
    order = sorted(keys, key=lambda k: ({"de": 0, "ce": 1}.get(parsed[k][0], 2), parsed[k][1], parsed[k][2]))
    colors = ordered_colors([(m != "de", n, a) for m, n, a in parsed.values()])
    fig = go.Figure()
    for key in order:
        part = logs[logs["config"] == key]
        m, n, a = parsed[key]
        fig.add_scatter(x=part["step"], y=part["loss"], mode="lines", name=config_label(key),
                        line={"color": colors[(m != "de", n, a)], "dash": "solid" if m == "de" else "dash"})
    style(fig, title)
    fig.update_layout(xaxis_title="step", yaxis_title="loss")
    return log_axis(fig, logs["loss"])


# --------------------------------------------------------------------------- results.json and findings

FLAT_FIELDS = ("n_queries", "cvr", "ndcg", "final_loss", "train_s", "steps_per_s",
               "row_norm_mean", "row_norm_min", "row_norm_max")


def flat_metrics(results: pd.DataFrame) -> dict[str, Any]:
    """Flat metric names for results.json: ``<config>_<metric>`` (``de_n32_alpha5_recall@1``,
    ``ce_n32_alpha0_ndcg``, ``de_n8_alpha5_retrieval_recall@3``, ...); with a single config also
    the plain names (``recall@1``, ``ndcg``, ``cvr``, ...), as one sweep point."""
    out: dict[str, Any] = {}
    keep = lambda c: c in FLAT_FIELDS or c.startswith(("recall@", "retrieval_recall@"))
    for key, row in results.iterrows():
        for col, value in row.items():
            if keep(col) and not (col.startswith("retrieval_") and row["model"] != "de"):
                out[f"{key}_{col}"] = None if pd.isna(value) else value
    if len(results) == 1:
        out.update({c: out[f"{results.index[0]}_{c}"] for c in results.columns if f"{results.index[0]}_{c}" in out})
    return out


ON_PAR_TOL = 0.02  # "on par": R@k within 0.02 (about 1 standard error of R@1 ~ 0.9 on 300 queries)
_ROUND = 1e-9  # a difference of exactly tol counts as within it (0.92 - 0.90 > 0.02 in floats)


def _mean_small_k(row: Mapping[str, Any], ks: Sequence[int]) -> float:
    return float(np.mean([row[f"recall@{k}"] for k in ks]))


def on_par(a: Sequence[float], b: Sequence[float], tol: float = ON_PAR_TOL) -> bool:
    """Two R@k curves (same k) are on par: |a_k - b_k| <= tol at every k."""
    return all(abs(x - y) <= tol + _ROUND for x, y in zip(a, b, strict=True))


def above(a: Sequence[float], b: Sequence[float], tol: float = ON_PAR_TOL) -> bool:
    """Curve a is above curve b: at no k below it by more than tol, and above it by more than
    tol at some k. Where both are within tol of 1.000 at every k nothing can be above: that tie
    is not a failure (True)."""
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    if any(d < -tol - _ROUND for d in diffs):
        return False
    return any(d > tol + _ROUND for d in diffs) or all(min(x, y) >= 1 - tol - _ROUND for x, y in zip(a, b))


def _curve_text(name: str, row: Mapping[str, Any], ks: Sequence[int], prefix: str = "recall@") -> str:
    return f"{name} " + percent_text([float(row[f"{prefix}{k}"]) for k in ks])


def best_arr_run(arr: pd.DataFrame | None, ks: Sequence[int]) -> tuple[pd.Series | None, str]:
    """The ARR run (a row of ``arr_runs``) with the highest mean R@k over ``ks`` on its training
    queries: the one Figure 3's ARR findings compare with the DE and the CE, which are scored on
    queries they trained on. (None, why) when no run has that curve; runs of notebook 05 made
    before it scored training queries have the held-out curve only, which answers another
    question (generalisation), so they are named but not compared."""
    if arr is None or not len(arr):
        return None, "no ARR run on these evaluation queries"
    cols = [f"train_recall@{k}" for k in ks]
    scored = arr[arr.reindex(columns=cols).notna().all(axis=1)] if set(cols) <= set(arr.columns) else arr.iloc[:0]
    if scored.empty:
        held = [c for c in (f"recall@{k}" for k in ks) if c in arr.columns]
        best = arr.loc[arr[held].mean(axis=1).idxmax()] if len(held) == len(ks) else None
        return None, ("no ARR run scored on its training queries (notebook 05 runs made before it scored them: "
                      "re-run them to compare)" + (f"; best on held-out queries: {_curve_text(best['label'], best, ks)}"
                                                   if best is not None else ""))
    return scored.loc[scored[cols].mean(axis=1).idxmax()], ""


def findings(results: pd.DataFrame, de_dims: Sequence[int], ce_dim: int, alpha: float,
             alpha_dim: int, alphas: Sequence[float], ks: Sequence[int] | None = None,
             arr: pd.DataFrame | None = None, tol: float = ON_PAR_TOL) -> dict[str, Any]:
    """The findings of Figure 3 and section 5.3 ("autoregressive ranking is on par with CEs
    while being significantly more powerful than DEs"; "an increasing alpha improves Recall@k,
    particularly for small k") as checks on this run's R@k, k in ``ks`` (default: the k in 1..5
    that the results hold), "on par" and "above" with the tolerance ``tol`` (``on_par``,
    ``above``: a tie at R@k = 1.000 is never a failure):

    - ``finding_de_grows_with_n`` (panel a): at ``alpha``, the DE's mean R@k rises with every
      step of ``de_dims`` (sorted);
    - ``finding_ce_above_de`` (panel a): the CE (``ce_dim``, ``alpha``) above the strongest DE
      (n = max ``de_dims``, ``alpha``); the paper's two claims together imply it, and both are
      trained and scored on the same queries (the capacity setting);
    - ``finding_arr_on_par_with_ce`` / ``finding_arr_above_de`` (panel a): the ARR run of ``arr``
      with the highest mean R@k on its training queries (``best_arr_run``), that curve on par
      with the CE / above the strongest DE: the same capacity question the lookup tables answer
      (they are trained and scored on the same queries). The numbers give the run's held-out
      curve beside it (generalisation, which the tables cannot be asked: they have no row for a
      query they never saw). None when no ARR run scored its training queries;
    - ``finding_alpha_raises_de_small_k`` (panel b): the DE at ``alpha_dim`` above itself at the
      smallest alpha when at the largest, over the small k (1 and 2).

    A check whose runs are missing is None. Each ``finding_X`` comes with ``finding_X_numbers``,
    the curves it compared, and the DE means ``de_n<n>_mean_recall@1-<k>``.
    """
    ks = ks or [k for k in range(1, 6) if f"recall@{k}" in results.columns]
    small = [k for k in SMALL_KS if f"recall@{k}" in results.columns]
    res = results.set_index(["model", "n", "alpha"])
    get = lambda m, n, a: res.loc[(m, n, float(a))] if (m, n, float(a)) in res.index else None
    curve = lambda row, at, prefix="recall@": [float(row[f"{prefix}{k}"]) for k in at]
    out: dict[str, Any] = {"on_par_tol": tol}

    def record(name: str, holds: bool | None, numbers: str) -> None:
        out[f"finding_{name}"], out[f"finding_{name}_numbers"] = holds, numbers

    de = [get("de", n, alpha) for n in sorted(de_dims)]
    if all(r is not None for r in de) and len(de) > 1:
        means = [_mean_small_k(r, ks) for r in de]
        out.update({f"de_n{n}_mean_recall@1-{max(ks)}": m for n, m in zip(sorted(de_dims), means)})
        record("de_grows_with_n", all(b > a for a, b in zip(means, means[1:])),
               f"mean R@1..{max(ks)} (%) " + percent_text(means, sep=" / ")
               + f" (n = {' / '.join(map(str, sorted(de_dims)))}, α = {alpha:g})")
    else:
        record("de_grows_with_n", None, "runs missing")
    ce, best_de = get("ce", ce_dim, alpha), get("de", max(de_dims), alpha)
    ce_name, de_name = f"CE n={ce_dim} α={alpha:g}", f"DE n={max(de_dims)} α={alpha:g}"
    if ce is None or best_de is None:
        record("ce_above_de", None, "runs missing")
    else:
        record("ce_above_de", above(curve(ce, ks), curve(best_de, ks), tol),
               f"R@1..{max(ks)} (%): {_curve_text(ce_name, ce, ks)}; {_curve_text(de_name, best_de, ks)}")
    best_arr, missing = best_arr_run(arr, ks)
    for name, other, other_name, check in (("arr_on_par_with_ce", ce, ce_name, on_par),
                                           ("arr_above_de", best_de, de_name, above)):
        if best_arr is None or other is None:
            record(name, None, missing if best_arr is None else "runs missing")
        else:
            held_out = all(pd.notna(best_arr.get(f"recall@{k}")) for k in ks)
            record(name, check(curve(best_arr, ks, "train_recall@"), curve(other, ks), tol),
                   f"R@1..{max(ks)} (%): {_curve_text(best_arr['label'], best_arr, ks, 'train_recall@')} (its training "
                   f"queries); {_curve_text(other_name, other, ks)}"
                   + (f"; beside it, on held-out queries: {_curve_text(best_arr['label'], best_arr, ks)}" if held_out else ""))
    lo, hi = get("de", alpha_dim, min(alphas)), get("de", alpha_dim, max(alphas))
    if lo is None or hi is None or min(alphas) == max(alphas) or not small:
        record("alpha_raises_de_small_k", None, "runs missing")
    else:
        record("alpha_raises_de_small_k", above(curve(hi, small), curve(lo, small), tol),
               f"DE n={alpha_dim}, R@{','.join(map(str, small))} (%): α {min(alphas):g} "
               + percent_text(curve(lo, small)) + f" -> α {max(alphas):g} " + percent_text(curve(hi, small)))
    return out


CLAIMS = {
    "de_grows_with_n": "Figure 3 (a): the DE's recall grows with its dimension n",
    "ce_above_de": "Figure 3 (a), implied by section 5.3's two claims: the CE above the strongest DE",
    "arr_on_par_with_ce": "section 5.3: ARR is on par with the CE (ARR on its training queries, as the CE)",
    "arr_above_de": "section 5.3: ARR is significantly more powerful than the DEs (on its training queries)",
    "alpha_raises_de_small_k": "Figure 3 (b): an increasing α improves R@k, particularly for small k (the DE)",
}


def findings_rows(found: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The checks of ``findings`` as "what to look for" rows (``display.finding``): the paper's
    claim, whether it holds in this run, the numbers compared (percent)."""
    from arrank.workbook.display import finding

    return [finding(claim, found.get(f"finding_{key}"), found.get(f"finding_{key}_numbers", "not run"))
            for key, claim in CLAIMS.items() if f"finding_{key}" in found]


# --------------------------------------------------------------------------- data


def table_synsets(subtree: str | None, cache_dir: Path | None = None) -> tuple[list[str], list[str]]:
    """(the table's rows: all noun synsets, sorted; the retrieval corpus: the synsets of the
    hierarchy below ``subtree``, or all nouns). Cached under ``data/cache/lookup/`` (reading
    WordNet takes ~10 s, the cache well under one)."""
    from arrank.data import cache
    from arrank.data import wordnet as W

    folder = Path(cache_dir or paths.CACHE / "lookup") / cache.params_hash({"format": 1, "subtree": subtree})
    if cache.is_complete(folder):
        tables = cache.read_tables(folder)
        return tables["names"]["synset"].tolist(), tables["corpus"]["synset"].tolist()
    names, corpus = W.noun_synset_names(), W.noun_hierarchy(subtree).nodes
    cache.save_tables(folder, {"names": pd.DataFrame({"synset": names}), "corpus": pd.DataFrame({"synset": corpus})},
                      {"format": 1, "subtree": subtree, "n_names": len(names), "n_corpus": len(corpus)})
    return names, corpus


def lookup_data(subtree: str | None, min_relevant: int, n_eval: int, seed: int) -> dict[str, Any]:
    """The WordNet dataset of section 5.1 (``build_wordnet_dataset``, cached) in the lookup-table
    view: ``df`` (all queries), ``eval`` (the evaluation queries), ``names`` (the table's rows:
    all 82,115 noun synsets), ``rows`` (name -> row), ``pairs`` (every query's (q, d, r): the
    capacity experiment trains on all queries) and ``corpus`` (the synsets of the hierarchy: the
    candidates of full-corpus retrieval)."""
    from arrank.data import wordnet as W
    from arrank.baselines.lookup import positive_pairs, row_index

    df = W.build_wordnet_dataset(subtree=subtree, min_relevant=min_relevant, n_eval=n_eval, seed=seed)
    names, corpus = table_synsets(subtree)
    rows = row_index(names)
    return {"df": df, "eval": df[df["split"] == "eval"].reset_index(drop=True), "names": names,
            "rows": rows, "pairs": positive_pairs(df, rows), "corpus": corpus}
