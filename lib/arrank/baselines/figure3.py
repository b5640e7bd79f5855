"""DE and CE baselines on WordNet (paper section 5.3, Figure 3, Appendix B): trained and evaluated.
Figure 3: (a) R@k against k for DEs with n in {4, 8, 16, 32} at alpha = 5 and a CE with n = 32
(and the ARR model); (b) a DE with n = 8 for several alpha; (c) a CE with n = 32 for several
alpha. Models: ``dual_encoder``, ``cross_encoder``; pairs: ``lookup``; the panels' tables and
plots, with the ARR runs of notebook 05: ``panels``.

Evaluation is section 5.1's (``arrank.evaluation.metrics``): per evaluation query, its relevant
hypernyms and its negative are scored and ranked; CVR, nDCG and R@k. DE only: full-corpus
retrieval R@k, every synset of the hierarchy a candidate (the query itself excluded).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from arrank.baselines import cross_encoder as CE
from arrank.baselines import dual_encoder as DE
from arrank.baselines.lookup import Pairs
from arrank.common import paths
from arrank.evaluation import metrics, trec


def config_key(model: str, n: int, alpha: float) -> str:
    """Flat name of one trained configuration, e.g. ``de_n32_alpha5`` (prefix of its metrics)."""
    return f"{model}_n{n}_alpha{alpha:g}"


def figure3_configs(
    de_dims: Sequence[int], ce_dim: int, alpha: float, alpha_dim: int, alphas: Sequence[float]
) -> list[dict[str, Any]]:
    """The distinct (model, n, alpha) runs Figure 3 needs, each with the panels it appears in:
    (a) DE n in ``de_dims`` at ``alpha`` and CE ``ce_dim`` at ``alpha``; (b) DE ``alpha_dim`` for
    every alpha in ``alphas``; (c) CE ``ce_dim`` for every alpha in ``alphas``."""
    wanted = [("de", n, float(alpha), "a") for n in de_dims] + [("ce", ce_dim, float(alpha), "a")]
    wanted += [("de", alpha_dim, float(a), "b") for a in alphas] + [("ce", ce_dim, float(a), "c") for a in alphas]
    configs: dict[tuple[str, int, float], dict[str, Any]] = {}
    for model, n, a, panel in wanted:
        panels = configs.setdefault((model, n, a), {"model": model, "n": n, "alpha": a, "panels": []})["panels"]
        panels += [] if panel in panels else [panel]
    return list(configs.values())


def single_config(model: str, n: int, alpha: float) -> list[dict[str, Any]]:
    """One DE or CE run (a sweep point) as a config list."""
    return [{"model": model, "n": n, "alpha": float(alpha), "panels": []}]


def candidate_rows(df_eval: pd.DataFrame, rows: Mapping[str, int]) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    """Every (query, candidate) pair of the evaluation queries: candidates = relevant docIDs (rank
    order) then the negative. Returns (query rows, candidate rows, candidates per query)."""
    sizes = np.array([len(r) + 1 for r in df_eval["relevant"]], dtype=np.int64)
    q = np.repeat([rows[x] for x in df_eval["query"]], sizes)
    d = [rows[x] for rel, neg in zip(df_eval["relevant"], df_eval["negative"]) for x in (*rel, neg)]
    return torch.as_tensor(q, dtype=torch.int64), torch.as_tensor(d, dtype=torch.int64), sizes


def score_records(df_eval: pd.DataFrame, scores: torch.Tensor, sizes: np.ndarray) -> list[dict[str, Any]]:
    """Records for ``metrics.per_query_metrics``: relevant, negative and docID -> score."""
    parts = np.split(scores.double().numpy(), np.cumsum(sizes)[:-1])
    columns = df_eval[["query", "relevant", "negative"]].itertuples(index=False)
    return [
        {"query": q, "relevant": list(rel), "negative": neg, "scores": dict(zip((*rel, neg), part.tolist()))}
        for (q, rel, neg), part in zip(columns, parts)
    ]


def retrieval_recall(
    table: torch.Tensor, df_eval: pd.DataFrame, rows: Mapping[str, int], corpus: Sequence[str], ks: Sequence[int]
) -> dict[str, Any]:
    """Full-corpus retrieval with a DE: ``retrieval_recall@k`` = mean over the evaluation queries
    with >= k relevant docIDs of R@k (``metrics.recall_at_k``) with every synset of ``corpus``
    but the query as a candidate. Exact: the candidates passed to recall_at_k are the retrieved
    top-max(ks) (ties kept) plus the relevant docIDs, which decide every top-k, k <= max(ks)."""
    corpus_rows = torch.as_tensor([rows[c] for c in corpus], dtype=torch.int64)
    name_of = dict(zip(corpus_rows.tolist(), corpus))  # table row -> synset
    q = torch.as_tensor([rows[x] for x in df_eval["query"]], dtype=torch.int64)
    found, found_scores = DE.retrieve(table, q, corpus_rows, max(ks))
    per_k: dict[int, list[float]] = {k: [] for k in ks}
    for i, rel in enumerate(df_eval["relevant"]):
        rel = list(rel)
        gold_scores = DE.de_scores(table, q[i].repeat(len(rel)), torch.as_tensor([rows[x] for x in rel]))
        keep = found[i] >= 0
        cand = dict(zip([name_of[r] for r in found[i][keep].tolist()], found_scores[i][keep].tolist()))
        cand.update(zip(rel, gold_scores.tolist()))
        for k in ks:
            if len(rel) >= k:  # R@k is defined for queries with at least k relevant docIDs
                per_k[k].append(metrics.recall_at_k(rel, cand, k))
    return {f"retrieval_recall@{k}": float(np.mean(rs)) if rs else None for k, rs in per_k.items()}


# the arguments of train_de / train_ce that ``hyper`` holds, as ``<model>_<arg>`` but the shared ones
TRAIN_ARGS = {
    "de": ("steps", "lr", "momentum", "row_updates"),
    "ce": ("steps", "lr", "weight_decay", "row_updates", "optimizer", "table_init_std"),
}


def train_config(
    config: Mapping[str, Any], pairs: Pairs, n_rows: int, hyper: Mapping[str, Any], seed: int, progress: bool = True
) -> tuple[Any, pd.DataFrame, dict[str, Any]]:
    """Train the DE or CE of ``config`` (model, n, alpha) with the hyper-parameters ``hyper``
    (notebook 07's de_*, ce_*, batch_size and tau). Returns (model, loss log, facts, the row norms
    of the trained table among them)."""
    model, n, alpha = config["model"], config["n"], config["alpha"]
    kw = {arg: hyper[f"{model}_{arg}"] for arg in TRAIN_ARGS[model]}
    kw.update({arg: hyper[arg] for arg in (("batch_size", "tau") if model == "de" else ("batch_size",))})
    return (DE.train_de if model == "de" else CE.train_ce)(pairs, n_rows, n, alpha, seed=seed, progress=progress, **kw)


def baseline_precision(requested: str):
    """The precision notebook 07 trains and scores the DE and CE in: fp32, whatever ``requested``
    says (``auto`` | ``fp32`` | ``bf16``, validated as in notebooks 05 and 06, and recorded); bf16
    does not pay here (docs/measurements.md, "bf16 and the LM head at the supervised positions"):
    the DE's hand-written gradient mixes dtypes under autocast, and the CE ran a little faster in
    bf16 but fit far worse."""
    from arrank.training.precision import Precision, resolve_precision

    asked = resolve_precision(requested)
    why = "the DE and CE baselines train in fp32 (bf16 does not pay at these sizes: docs/measurements.md)"
    return Precision(requested, "fp32", f"{asked.reason}; {why}" if asked.used == "bf16" else why)


def run_config(
    config: Mapping[str, Any],
    pairs: Pairs,
    n_rows: int,
    df_eval: pd.DataFrame,
    rows: Mapping[str, int],
    hyper: Mapping[str, Any],
    ks: Sequence[int],
    seed: int,
    corpus: Sequence[str] | None = None,
    trec_dir: Path | None = None,
    progress: bool = True,
) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
    """Train and evaluate one config: (its row of ``run_configs``' table, its loss log with a
    ``config`` column, its per-query metrics). ``trec_dir``: also write its scores there as the TREC
    run ``<config>.trec`` and the queries' ``qrels.trec`` (``arrank.evaluation.trec``)."""
    q, d, sizes = candidate_rows(df_eval, rows)
    model, log, facts = train_config(config, pairs, n_rows, hyper, seed, progress)
    start = time.perf_counter()
    scores = DE.de_scores(model, q, d) if config["model"] == "de" else CE.ce_scores(*model, q, d)
    records = score_records(df_eval, scores, sizes)
    frame = metrics.per_query_metrics(records, ks)
    summary = metrics.summarize(frame, ks)  # section 5.1's flat metrics
    if config["model"] == "de" and corpus is not None:
        summary.update(retrieval_recall(model, df_eval, rows, corpus, ks))
    key = config_key(config["model"], config["n"], config["alpha"])
    if trec_dir is not None:  # the candidates' scores as a TREC run (and the queries' qrels), docs/findings.md
        trec.write_lines(Path(trec_dir) / f"{key}.trec", trec.run_lines(records, key))
        trec.write_lines(Path(trec_dir) / trec.QRELS_FILE, trec.qrels_lines(records))
    result = {"config": key, **{c: config[c] for c in ("model", "n", "alpha")}, "panels": ",".join(config["panels"])}
    result.update(summary, final_loss=float(log["loss"].iloc[-1]), **facts, eval_s=time.perf_counter() - start)
    return result, log.assign(config=key), per_query_rows(frame, key)


def run_configs(
    configs: Sequence[Mapping[str, Any]],
    pairs: Pairs,
    n_rows: int,
    df_eval: pd.DataFrame,
    rows: Mapping[str, int],
    hyper: Mapping[str, Any],
    ks: Sequence[int],
    seed: int,
    corpus: Sequence[str] | None = None,
    progress: bool = True,
    workers: int = 1,
    trec_dir: Path | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Train and evaluate every config (``run_config``), in the order of ``configs``: (one row per
    config: model, n, alpha, panels, section 5.1 metrics, DE retrieval metrics when ``corpus`` is
    given, final_loss, train_s, steps_per_s, eval_s; the loss logs with a ``config`` column; the
    per-query metrics, ``per_query_rows``). ``workers > 1``: that many spawned one-thread worker
    processes (docs/measurements.md); each config is seeded by ``seed`` alone. ``trec_dir``: each
    config's TREC run there (``run_config``)."""
    if trec_dir is not None:
        Path(trec_dir).mkdir(parents=True, exist_ok=True)
    args = (pairs, n_rows, df_eval, rows, hyper, ks, seed, corpus, trec_dir)
    if workers == 1 or len(configs) < 2:
        done = [run_config(c, *args, progress=progress) for c in configs]
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        from tqdm.auto import tqdm

        context = multiprocessing.get_context("spawn")
        one_thread = dict(initializer=torch.set_num_threads, initargs=(1,))  # one core per worker
        with ProcessPoolExecutor(min(workers, len(configs)), mp_context=context, **one_thread) as pool:
            futures = [pool.submit(run_config, c, *args, progress=False) for c in configs]
            done = [f.result() for f in tqdm(futures, desc=f"configs ({workers} workers)", disable=not progress)]
    results, logs, per_query = zip(*done)
    frames = [pd.concat(part, ignore_index=True) for part in (logs, per_query)]
    return pd.DataFrame(list(results)).set_index("config"), *frames


PER_QUERY_KS = range(1, 6)  # the R@k Figure 3's findings compare (k <= 5): per_query.csv stays small


def per_query_rows(frame: pd.DataFrame, key: str) -> pd.DataFrame:
    """A config's per-query metrics (``metrics.per_query_metrics``) as the rows of the run's
    ``per_query.csv``: config, query, cvr (the query's violation, 0 or 1), ndcg, r1..r5 (R@k,
    NaN where the query has fewer than k relevant docIDs), fractions."""
    short = metrics.short_columns(frame)
    kept = ["query", "cvr", "ndcg", *(f"r{k}" for k in PER_QUERY_KS if f"r{k}" in short.columns)]
    return short[kept].assign(config=key)[["config", *kept]]


STEM = "07_de_ce_baselines"


def point_results(
    params: Mapping[str, Any], pattern: str, configs: Sequence[Mapping[str, Any]], root: Path | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, list[str]]:
    """Figure 3 from single-configuration runs of this notebook (the points of a sweep such as
    ``sweeps/fig3_baselines_paper.yaml``) instead of training: the finished runs named like the
    glob ``pattern`` whose params match ``params`` (data and training settings); each results row
    whose (model, n, alpha) is one of ``configs`` gets that config's panels; of two runs of one
    config the newer wins. Returns (results, their training logs, their per-query rows
    (``per_query_rows``; runs made before per_query.csv was written give none: an empty frame
    with a ``config`` column), the run names used); a clear error when no run matches."""
    from arrank.common.outputs import damaged, means_problem, read_rows, read_table

    wanted = {config_key(c["model"], c["n"], c["alpha"]): ",".join(c["panels"]) for c in configs}
    found: dict[str, tuple[Path, pd.Series]] = {}  # config -> (the run that holds it, its results row)
    metrics = {}  # run -> its results.json's metrics, which each file of the run is checked against
    for run, ran in matching_runs(STEM, pattern, params, root):  # oldest first: a newer run of a config replaces it
        if ran["params"].get("model") != "figure3":  # one config a run: results.json's plain names are its own
            table, metrics[run] = read_table(run / "results.csv", ["config"]).set_index("config"), ran["metrics"]
            if problem := means_problem(table, metrics[run]):
                raise damaged(run / "results.csv", problem)
            found.update({key: (run, row) for key, row in table.iterrows() if key in wanted})
    if not found:
        raise ValueError(
            f"no finished {STEM} run named like {pattern!r} holds a Figure 3 configuration "
            f"with these params ({dict(params)})"
        )
    order = [k for k in wanted if k in found]
    results = pd.DataFrame([found[k][1] for k in order]).assign(panels=[wanted[k] for k in order])

    def rows_of(name: str) -> pd.DataFrame:
        """The rows of the csv ``name`` of each config's run (one config a run; none from a run without
        that file), checked: ``per_query.csv`` against its results.json (``read_rows``)."""
        per_query = lambda run: read_rows(run / name, ["config", "query"], metrics[run], by="config")
        read = per_query if name == "per_query.csv" else lambda run: read_table(run / name, ["config", "step"])
        parts = [read(found[k][0]) for k in order if (found[k][0] / name).exists()]
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["config"])

    used = sorted({found[k][0].name for k in order})
    return results.infer_objects().rename_axis("config"), rows_of("training_log.csv"), rows_of("per_query.csv"), used


def matching_runs(
    stem: str, pattern: str, params: Mapping[str, Any], root: Path | None = None
) -> list[tuple[Path, dict[str, Any]]]:
    """(run folder, its results.json) of the finished runs of ``stem`` named like the glob ``pattern``
    whose params match ``params``, oldest first; a damaged results.json is left out, and said."""
    from fnmatch import fnmatchcase

    from arrank.common.notices import notice
    from arrank.common.outputs import DamagedResultsError, finished_runs, read_results

    out = []
    for run in (r for r in finished_runs(stem, root) if fnmatchcase(r.name, pattern)):
        try:
            result = read_results(run / "results.json")
        except DamagedResultsError as err:
            notice(str(err))
            continue
        if all(result.get("params", {}).get(k) == v for k, v in params.items()):
            out.append((run, result))
    return out


ROW_NORMS = ("row_norm_mean", "row_norm_min", "row_norm_max")
FLAT_FIELDS = ("n_queries", "cvr", "ndcg", "final_loss", "train_s", "steps_per_s", *ROW_NORMS)


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


def table_synsets(subtree: str | None, cache_dir: Path | None = None) -> tuple[list[str], list[str]]:
    """(the table's rows: all noun synsets, sorted; the retrieval corpus: the synsets of the
    hierarchy below ``subtree``, or all nouns). Cached under ``data/cache/lookup/`` (reading
    WordNet takes ~10 s, the cache well under one)."""
    from arrank.data import cache
    from arrank.data import wordnet as W

    folder = Path(cache_dir or paths.CACHE / "lookup") / cache.params_hash({"format": 1, "subtree": subtree})
    tables = cache.cached_tables(folder, names=["names", "corpus"])
    if tables is not None:
        return tables["names"]["synset"].tolist(), tables["corpus"]["synset"].tolist()
    names, corpus = W.noun_synset_names(), W.noun_hierarchy(subtree).nodes
    tables = {"names": pd.DataFrame({"synset": names}), "corpus": pd.DataFrame({"synset": corpus})}
    cache.save_tables(folder, tables, {"format": 1, "subtree": subtree, "n_names": len(names), "n_corpus": len(corpus)})
    return names, corpus


def lookup_data(subtree: str | None, min_relevant: int, n_eval: int, seed: int) -> dict[str, Any]:
    """The WordNet dataset of section 5.1 (``build_wordnet_dataset``, cached) in the lookup-table
    view: ``df`` (all queries), ``eval`` (the evaluation queries), ``names`` (the table's rows:
    all 82,115 noun synsets), ``rows`` (name -> row), ``pairs`` (every query's (q, d, r): the
    capacity experiment trains on all queries) and ``corpus`` (the synsets of the hierarchy: the
    candidates of full-corpus retrieval)."""
    from arrank.baselines.lookup import positive_pairs, row_index
    from arrank.data import wordnet as W

    df = W.build_wordnet_dataset(subtree=subtree, min_relevant=min_relevant, n_eval=n_eval, seed=seed)
    names, corpus = table_synsets(subtree)
    rows = row_index(names)
    held_out = df[df["split"] == "eval"].reset_index(drop=True)
    return dict(df=df, eval=held_out, names=names, rows=rows, pairs=positive_pairs(df, rows), corpus=corpus)
