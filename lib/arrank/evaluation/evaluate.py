"""Evaluate a model on held-out queries as in section 5.1: score every relevant docID (and the
negative, for WordNet) by mean token log-probability (``scoring``), then CVR, nDCG and R@k
(``metrics``), beside the random-scores floor, and the decoding view of the same queries
(``decoding``). ``evaluate_training_queries`` does the same on a seeded sample of the training
queries (Figure 3's capacity question; ``train_<metric>`` in results.json). Datasets are tables in
the format of ``arrank.data.ranking`` (ESCI has no negative, so no CVR).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from arrank.common.notices import notice
from arrank.common.params import ParamError
from arrank.evaluation import decoding, metrics, scoring


def eval_queries(df: pd.DataFrame, limit: int | None = None, split: str = "eval") -> pd.DataFrame:
    """The held-out test queries (``split == "eval"``), the first ``limit`` of them when given;
    ``split="dev"``: the validation queries (``arrank.data.ranking.carve_dev``), all of them at any
    ``limit`` (``n_dev`` sizes them): notebook 05's rule at every budget point and at the end."""
    held_out = df[df["split"] == split]
    if held_out.empty:
        raise ValueError(f"the dataset has no held-out (split == {split!r}) queries")
    return held_out if limit is None or split != "eval" else held_out.iloc[:limit]


def candidates(row: Mapping[str, Any]) -> list[str]:
    """A query's candidates: its relevant docIDs in rank order, then its negative if it has one."""
    negative = row.get("negative")
    return list(row["relevant"]) + ([negative] if isinstance(negative, str) else [])


def _records(queries: pd.DataFrame, scores: list[np.ndarray]) -> list[dict[str, Any]]:
    return [
        {
            "query": row["query"],
            "relevant": list(row["relevant"]),
            "negative": row.get("negative") if isinstance(row.get("negative"), str) else None,
            "scores": dict(zip(candidates(row), map(float, s))),
        }
        for row, s in zip(queries.to_dict("records"), scores)
    ]


def training_sample(df: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """A seeded sample of ``n`` training queries (``split == "train"``; all of them when there are
    fewer), in dataset order: the same queries for the same data, ``n`` and ``seed`` (``n`` is notebook
    05's ``train_queries``, checked at its edge; pandas refuses a negative one)."""
    trained = df[df["split"] == "train"]
    if trained.empty:
        raise ValueError("the dataset has no training (split == 'train') queries")
    return trained if n >= len(trained) else trained.sample(n=n, random_state=seed).sort_index()


def score_and_evaluate(
    model,
    tokenizer,
    queries: pd.DataFrame,
    ks: tuple[int, ...] = metrics.WORDNET_KS,
    include_eos: bool = False,
    method: str = "prefix_shared",
    progress: bool = True,
    precision: str = "fp32",
    query_batch: int | None = None,
    share_opening: bool = True,
) -> tuple[dict[str, Any], pd.DataFrame, list[dict[str, Any]]]:
    """(metrics dict with the names of Tables 1-2, per-query metrics frame, per-query records with
    every candidate's score) for the model on the rows of ``queries`` (section 5.1). ``precision``:
    a resolved ``"fp32"`` or ``"bf16"`` (bf16 autocast, logits and log-probs in float32:
    ``arrank.training.precision.inference``); ``query_batch``: queries per forward pass
    (``scoring.resolve_query_batch``); ``share_opening``: the prompts' common opening run once
    (``scoring.score_queries``; False: every prompt whole, for comparison)."""
    from arrank.training.precision import inference

    items = [(row["prompt"], candidates(row)) for row in queries.to_dict("records")]
    with inference(model, precision):
        scores = scoring.score_queries(
            model, tokenizer, items, include_eos, method, progress, query_batch=query_batch, share_opening=share_opening
        )
    records, ks = _records(queries, scores), tuple(ks)
    per_query = metrics.per_query_metrics(records, ks)
    return metrics.summarize(per_query, ks), per_query, records


def evaluate_held_out(
    model, tokenizer, df: pd.DataFrame, limit: int | None = None, *args: Any, split: str = "eval", **kwargs: Any
) -> tuple[dict[str, Any], pd.DataFrame, list[dict[str, Any]]]:
    """``score_and_evaluate`` on the held-out queries of ``split`` (``eval_queries``: the test ones, or
    ``"dev"``, the validation ones; the first ``limit`` test queries when given); ``args`` and ``kwargs``: its
    arguments after ``queries`` (ks, include_eos, method, progress, precision, ...)."""
    return score_and_evaluate(model, tokenizer, eval_queries(df, limit, split), *args, **kwargs)


def evaluate_training_queries(
    model, tokenizer, df: pd.DataFrame, n: int, seed: int, *args: Any, **kwargs: Any
) -> tuple[dict[str, Any], pd.DataFrame]:
    """The metrics of ``score_and_evaluate`` on ``training_sample(df, n, seed)``, named
    ``train_<metric>`` (``train_cvr``, ``train_recall@k``, ...), and the per-query metrics frame of
    the same queries (notebook 05's ``per_query_train.csv``, used by ``results.figure3``); ``args`` and
    ``kwargs``: ``score_and_evaluate``'s after ``queries``."""
    result, per_query, _ = score_and_evaluate(model, tokenizer, training_sample(df, n, seed), *args, **kwargs)
    return {f"{TRAIN_PREFIX}{k}": v for k, v in result.items()}, per_query


TRAIN_PREFIX = "train_"


def training_metrics(m: Mapping[str, Any]) -> dict[str, Any]:
    """The ``train_<metric>`` entries of a results.json metrics dict, with the prefix removed
    (empty for a run made before training queries were scored)."""
    return {k.removeprefix(TRAIN_PREFIX): v for k, v in m.items() if k.startswith(TRAIN_PREFIX)}


def n_training_queries(requested: int | None, n_held_out: int) -> int:
    """How many training queries notebook 05 scores: ``requested`` (0: none), or as many as the
    held-out queries it scored when None (``train_queries``, checked at notebook 05's edge)."""
    return n_held_out if requested is None else requested


def random_floor(
    df: pd.DataFrame, seed: int = 0, limit: int | None = None, ks: tuple[int, ...] = metrics.WORDNET_KS
) -> dict[str, Any]:
    """The metrics of random scores on the same held-out queries (docs/design.md:
    R@k has a high floor when n_q is small, and nDCG is squeezed near 1)."""
    queries = eval_queries(df, limit)
    rng = np.random.default_rng(seed)
    scores = [rng.standard_normal(len(candidates(row))) for row in queries.to_dict("records")]
    return metrics.evaluate_queries(_records(queries, scores), ks)


def scores_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Long table of every scored candidate: ``query, docid, rank`` (gold rank, 0 for the
    negative), ``score``, ``predicted_rank`` (1 = best; ties by docID as in ``metrics``)."""
    rows = []
    for rec in records:
        order = metrics.predicted_order(list(rec["scores"]), list(rec["scores"].values()))
        position = {d: i + 1 for i, d in enumerate(order)}
        gold = {d: r + 1 for r, d in enumerate(rec["relevant"])}
        rows += [
            {"query": rec["query"], "docid": d, "rank": gold.get(d, 0), "score": s, "predicted_rank": position[d]}
            for d, s in rec["scores"].items()
        ]
    return pd.DataFrame(rows, columns=["query", "docid", "rank", "score", "predicted_rank"])


def per_rank_scores(scores: pd.DataFrame, max_rank: int = 10) -> pd.DataFrame:
    """Per gold rank (1..max_rank) and for the negative (rank 0): the mean score over the queries
    that have that rank, its standard error (std / sqrt(count)), the count, and the mean
    position the model gives that docID within its own query (``mean_predicted_rank``, 1 = top):
    the means pool different docIDs, so they need not fall with the rank even when every query
    is ranked well; the within-query position says how the model ranks."""
    kept = scores[scores["rank"] <= max_rank]
    out = kept.groupby("rank").agg(
        mean=("score", "mean"),
        sem=("score", "sem"),  # std (ddof 1) / sqrt(count)
        count=("score", "count"),
        mean_predicted_rank=("predicted_rank", "mean"),
    )
    out.index = pd.Index(["negative" if r == 0 else str(r) for r in out.index], name="rank")
    return out


def violation_examples(records: list[dict[str, Any]], n: int = 5) -> pd.DataFrame:
    """The ``n`` worst violations (section 5.1: the negative scores above some positive), the
    largest margin first: query, the negative and its score, the lowest positive and its score."""
    columns = ["query", "negative", "negative_score", "lowest_positive", "positive_rank", "positive_score", "margin"]
    rows = []
    for rec in records:
        if rec.get("negative") is None:
            continue
        neg, scores = rec["scores"][rec["negative"]], rec["scores"]
        worst = min(rec["relevant"], key=lambda d: scores[d])
        if neg > scores[worst]:
            rank = rec["relevant"].index(worst) + 1
            rows.append((rec["query"], rec["negative"], neg, worst, rank, scores[worst], neg - scores[worst]))
    frame = pd.DataFrame(rows, columns=columns)
    return frame.sort_values("margin", ascending=False).head(n).reset_index(drop=True)


def check_beam_k(queries: pd.DataFrame, k: int) -> None:
    """Refuse (``ParamError``) a beam size ``k`` (notebook 06's ``beam_k``) that no query of ``queries``
    (the scored held-out ones) can be decoded with: ``decode_held_out`` takes those with at least ``k``
    relevant docIDs. Notebook 06 checks it before scoring."""
    most = int(queries["n_relevant"].max()) if len(queries) else 0
    if most < k:
        raise ParamError(
            f"beam_k={k}: no scored held-out query has at least {k} relevant docIDs; "
            f"give -p beam_k N with N at most {most}"
        )


def decode_held_out(
    model,
    tokenizer,
    df: pd.DataFrame,
    records: list[dict[str, Any]],
    k: int,
    limit: int | None = None,
    precision: str = "fp32",
) -> tuple[dict[str, Any], pd.DataFrame]:
    """Greedy decoding and beam search (``decoding``) on the first ``limit`` held-out queries with
    at least ``k`` relevant docIDs, over the scorer's candidates, in a resolved ``precision``.

    Metrics: ``greedy_valid_rate`` (the greedy string is a candidate), ``greedy_top1_rate`` (it
    is the rank-1 docID), ``beam_recall@k_gold`` (trie-constrained beam top-k vs the gold top-k),
    ``beam_recall@k_scorer`` (vs the scorer's top-k), ``beam_invalid_rate_unconstrained`` (share
    of an unconstrained beam's k outputs that are no candidate), ``n_decoded``; and a frame with
    one row per decoded query.
    """
    from tqdm.auto import tqdm

    by_query = {r["query"]: r for r in records}
    scored = eval_queries(df)[lambda q: q["query"].isin(by_query)]
    check_beam_k(scored, k)
    rows = [r for r in scored.to_dict("records") if r["n_relevant"] >= k][:limit]
    from arrank.training.precision import inference

    out = []
    for row in tqdm(rows, desc=f"decoding (greedy, beam k={k})", unit="query"):
        cands, gold = candidates(row), list(row["relevant"])
        with inference(model, precision):
            greedy = decoding.greedy_decode(model, tokenizer, row["prompt"], cands)
            beam = [d for d, _ in decoding.beam_search(model, tokenizer, row["prompt"], cands, k)]
            free = [d for d, _ in decoding.beam_search(model, tokenizer, row["prompt"], cands, k, constrained=False)]
        scorer = by_query[row["query"]]["scores"]
        scorer_top = metrics.predicted_order(list(scorer), list(scorer.values()))[:k]
        found = [len(set(beam) & set(top)) / k for top in (gold[:k], scorer_top)]
        valid = [greedy["docid"] is not None, greedy["docid"] == gold[0]]
        out.append([row["query"], greedy["text"], *valid, beam, *found, sum(d is None for d in free) / k])
    columns = ["query", "greedy", "greedy_valid", "greedy_top1", "beam", "beam_recall_gold", "beam_recall_scorer"]
    frame = pd.DataFrame(out, columns=[*columns, "unconstrained_invalid"])
    names = {"greedy_valid": "greedy_valid_rate", "greedy_top1": "greedy_top1_rate"}
    names |= {"beam_recall_gold": f"beam_recall@{k}_gold", "beam_recall_scorer": f"beam_recall@{k}_scorer"}
    names |= {"unconstrained_invalid": "beam_invalid_rate_unconstrained"}
    return {**{names[c]: float(frame[c].mean()) for c in names}, "n_decoded": len(frame)}, frame


def metrics_table(rows: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Rows = runs, columns = CVR, nDCG, R@k (Table 1's layout), values rounded to 4 digits."""
    table = pd.DataFrame.from_dict(dict(rows), orient="index").filter(regex=r"^(cvr|ndcg|recall@.*)$")
    return table.astype(float).round(4).rename_axis("run")


def trained_scale(params: Mapping[str, Any], run_name: str) -> dict[str, Any]:
    """What a figure names of a notebook 05 run: its name, model and optimizer steps as its
    results.json recorded them (None for a run recorded before parameters were resolved: today's
    profile value need not be what it ran with)."""
    return {"run": run_name, "model_name": params.get("model_name"), "steps": params.get("steps")}


def check_data_digest(
    run_name: str, trained: Mapping[str, Any], now: Mapping[str, str], what: str = "train_run"
) -> None:
    """Refuse (``ParamError``) a notebook 05 run on one's own data whose file changed since it trained:
    its ``data_digest`` (``trained``: its results.json params) is not the file's now (``now``:
    ``outputs.data_digest``), so its held-out split, rebuilt from the file, could hold queries it
    trained on. A run that recorded no digest is read with a notice that it cannot be checked.
    ``what``: the run's role, as the message names it."""
    then = trained.get("data_digest")
    if trained.get("dataset") != "custom" or then == now.get("data_digest"):
        return
    path = trained.get("data_path")
    if then is None:
        notice(
            f"{what} {run_name!r} recorded no data_digest: whether {path} is the file it trained on cannot be checked"
        )
        return
    raise ParamError(
        f"{what} {run_name!r} trained on {path} with data_digest {then}, but the file now has "
        f"{now.get('data_digest', 'none (it is missing)')}: it changed since training, so its held-out queries "
        "need not be the ones that run never saw; restore the file as it was, or train a new 05 run on it"
    )


def model_under_test(p: Mapping[str, Any], root) -> dict[str, Any]:
    """What notebook 06 evaluates, from its parameters ``p`` and the outputs folder ``root``.

    ``train_run`` names a finished notebook 05 run (or "latest"): its saved model and its data
    parameters, so the held-out queries are the ones that run never trained on; ``"none"``: an
    untrained model on the data ``p`` describes (the baseline row). Returns ``model, tokenizer,
    df, trec_ids`` (``ranking.ranking_dataset``'s ``with_ids``), ``source`` (the run folder or
    "untrained"), ``data`` (the data parameters used), ``scale``
    (run, model_name, steps: what a figure's title names) and ``params`` (the 05 run's; untrained:
    the data, the model and steps = 0).
    """
    from arrank.common import outputs
    from arrank.data import ranking
    from arrank.training import models

    keys = ("dataset", "subtree", "min_relevant", "n_eval", "template", "seed", "profile", "data_path", "custom_docids")
    if p["train_run"] != "none":
        run = outputs.find_run("05_train", p["train_run"], root)
        trained = outputs.read_results(run / "results.json")["params"]
        before = {"dataset": "wordnet", "custom_docids": "id", "n_dev": 0}  # a run recorded before these existed
        data = {k: trained.get(k, before.get(k)) for k in (*keys, "n_dev")}
        data["seed"] = trained.get("data_seed", data["seed"])  # the seed of its data, when it had one
        check_data_digest(run.name, trained, outputs.data_digest(data))
        model, tok = models.load_model(run / "model", p["backend"])
        source, scale, params = str(run), trained_scale(trained, run.name), trained
    else:
        data = {k: p[k] for k in keys}
        source, scale = "untrained", {"run": "untrained", "model_name": p["model_name"], "steps": 0}
        params = {**data, "model_name": p["model_name"], "steps": 0}
    df, ids = ranking.ranking_dataset(**data, with_ids=True)
    if p["train_run"] == "none":
        model, tok = models.load_model(
            p["model_name"], p["backend"], df=df, tokenizer_vocab=p["tokenizer_vocab"], seed=p["seed"]
        )
    return dict(model=model, tokenizer=tok, df=df, trec_ids=ids, source=source, data=data, scale=scale, params=params)
