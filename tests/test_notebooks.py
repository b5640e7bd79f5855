"""Smoke run of every notebook through the papermill runner, in a tiny configuration.

Each run really executes the notebook (real LPs, real WordNet, a real tiny model) and the test
checks values that would be wrong if the notebook or lib were wrong, plus the outputs contract.
"""

import json
import math

import pytest

from arrank.common import outputs, paths
from arrank.workbook import run

pytestmark = pytest.mark.slow  # trains a model or runs notebooks / kernels / sweeps

TINY = {
    "01_de_capacity": {"k_max_exact": 4, "mc_queries": 3000, "k_max_bound": 100},
    "02_rank_condition": {"v_max": 4, "n_targets": 3, "tokenizer_vocab": 500},
    "03_wordnet_data": {"subtree": "canine.n.02", "min_relevant": 1, "n_eval": 20, "tokenizer_vocab": 300},
    "04_esci_data": {"step": 5, "depth": 30, "n_components": 16, "tokenizer_vocab": 300},
    "05_train": {
        "subtree": "canine.n.02",
        "min_relevant": 1,
        "n_eval": 13,
        "n_dev": 3,  # validation queries: 10 test queries remain
        "seed": 1,
        "data_seed": 0,  # not the seed: 06 must rebuild the held-out queries from data_seed (same metrics below)
        "steps": 10,
        "save_steps": 4,
        "batch_size": 16,
        "tokenizer_vocab": 400,
        "scheme": "fractional",
        "targets": "trie",
        "combined": True,
    },
    "06_evaluate": {"train_run": "latest", "decode_queries": 3, "beam_k": 2, "query_batch": 4},
    "07_de_ce_baselines": {
        "subtree": "canine.n.02",
        "min_relevant": 1,
        "n_eval": 10,
        "de_steps": 30,
        "ce_steps": 30,
        "batch_size": 64,
        "de_dims": "2,4",
        "ce_dim": 4,
        "de_alpha_dim": 2,
        "alphas": [0, 5],
        "k_max": 3,
    },
    "08_results": {"sweep": "sweeps/table1_wordnet_quick.yaml", "paper_rows": "yes"},
}


def _run(stem, outputs_root):
    final = run.run_notebook(stem, {**TINY[stem], "run_name": "smoke"}, outputs_root=outputs_root, progress=False)
    results = json.loads((final / "results.json").read_text())
    assert results["notebook"] == stem and results["params"]["run_name"] == "smoke"
    assert (final / f"{stem}.ipynb").exists()
    return final, results["metrics"]


def _look_for(final, stem):
    """The text the notebook ends with: its "What to look for" cell's Markdown output (only the
    exercises, Markdown cells, may follow it)."""
    from arrank.workbook.book.executed import is_look_for_heading, look_for_markdown

    nb = json.loads((final / f"{stem}.ipynb").read_text())
    heading = next(i for i, c in enumerate(nb["cells"]) if is_look_for_heading(c))
    assert nb["cells"][heading + 1]["cell_type"] == "code"
    assert all(c["cell_type"] == "markdown" for c in nb["cells"][heading + 2 :]), (
        "the notebook must end with a 'What to look for' cell, then its exercises"
    )
    return look_for_markdown(nb)


def _has_figure(final, name):
    from arrank.common.outputs import png_backend

    assert (final / f"{name}.html").stat().st_size > 1000
    if png_backend():
        assert (final / f"{name}.png").stat().st_size > 5000


def test_every_notebook_has_a_tiny_configuration():
    from arrank.workbook.whole import notebooks

    assert sorted(p.stem for p in notebooks()) == sorted(TINY)


def test_01_de_capacity(outputs_root):
    final, m = _run("01_de_capacity", outputs_root)
    assert m["exact_equals_closed_form"] == 1.0 and m["max_exact_over_closed_form"] == 1.0
    assert m["max_monte_carlo_over_exact"] <= 1.0
    assert m["exact_min_dimension_k100"] == 99 and m["paper_bound_k100"] == pytest.approx(39.4925, abs=1e-3)
    assert m["inner_product_all_orderings_at_n_k_minus_1"] and m["inner_product_fewer_below_k_minus_1"]
    assert m["inner_product_matches_observed_formula"]
    text = _look_for(final, "01_de_capacity")
    assert (
        text.count("holds here") == 4
        and "k = 100: the paper's bound 39.5; the exact smallest n from the closed form is 99" in text
    )
    for name in ("exact_vs_closed_form", "monte_carlo", "dimension_bound", "inner_product"):
        _has_figure(final, name)
    assert (final / "exact_vs_closed_form.csv").read_text().startswith("k,n,site_set,exact,closed_form")


def test_02_rank_condition(outputs_root):
    final, m = _run("02_rank_condition", outputs_root)
    assert m["rank_rule_holds"] is True
    assert m["counterexample_rank_e_prime"] == 3 and m["counterexample_orderings"] == 8
    assert m["counterexample_order_realisable"] is False
    assert m["full_rank_max_distribution_error"] < 1e-9 and m["sequence_max_error"] < 1e-9
    assert m["counterexample_adversarial_error"] > 0.1
    assert m["tiny_wordnet_rank_e_prime"] == 129 < m["tiny_wordnet_v_docids"]  # n + 1 = 129
    # SmolLM2-135M-Instruct (n = 576): its WordNet docID tokens far outnumber n + 1, its numeric ones do not
    assert m["smollm2_135m_wordnet_n"] == 576 and m["smollm2_135m_wordnet_rank_e_prime"] == 577
    assert m["smollm2_135m_wordnet_v_docids"] > 5000
    assert m["smollm2_135m_numeric_rank_e_prime"] == m["smollm2_135m_numeric_v_docids"] == 12  # 0-9 , EOS
    for name in ("token_orderings", "distribution_fit", "sequence_fit"):
        _has_figure(final, name)
    text = _look_for(final, "02_rank_condition")
    assert text.count("holds here") == 6 and "|V_docids| = 12, rank 12" in text  # tiny and SmolLM2 remarks too


def test_03_wordnet_data(outputs_root):
    final, m = _run("03_wordnet_data", outputs_root)
    assert m["deer_matches_paper"] is True and m["eval_queries_in_training"] == 0
    assert m["n_eval_queries"] == 20 and m["n_train_queries"] == m["n_queries"] - 20
    assert m["n_items_top1"] == m["n_queries"] and m["n_items_per_docid"] > m["n_queries"]
    for name in ("relevant_count_distribution", "depth_distribution", "docid_token_lengths"):
        _has_figure(final, name)
    assert (final / "prompts_sample.csv").exists()
    text = _look_for(final, "03_wordnet_data")
    assert text.count("holds here") == 2 and "the paper's scale" in text and "cannot be checked here" in text


def test_04_esci_data(outputs_root):
    final, m = _run("04_esci_data", outputs_root)
    assert m["n_queries"] == 30 and m["us_titles_not_english"] >= 1  # the fixture's Spanish titles
    assert m["mean_titles_per_query"] == 7.0  # ranks 1, 5, 10, ..., 30 of the fixture's titles
    assert 1 <= m["docid_n_distinct"] <= m["n_titles"]
    for name in ("titles_per_query", "docid_collisions", "token_lengths"):
        _has_figure(final, name)
    text = _look_for(final, "04_esci_data")
    assert "mean 7.0 titles per query, at most 7" in text and "the committed fixture" in text


def test_05_train_then_06_evaluates_it(outputs_root):
    final, m = _run("05_train", outputs_root)
    assert m["n_queries"] == 10 and 0.0 <= m["cvr"] <= 1.0 and 0.0 < m["ndcg"] <= 1.0
    assert m["n_queries@1"] == 10 and m["n_items"] > 10  # every rank of every training query
    assert m["packing"] == "per_query" and m["n_sequences"] < m["n_items"]  # packed by default (auto)
    assert m["resumed_from_step"] == 0  # a fresh run (tests/training/test_train.py: kill and resume)
    assert m["prefix_shared_tokens"] == 0  # the quick short template shares fewer than MIN_SHARED opening tokens
    recorded = json.loads((final / "results.json").read_text())["params"]
    assert recorded["save_steps"] == 4 and "data_digest" not in recorded  # WordNet: built from pinned sources
    assert m["precision_used"] in ("fp32", "bf16") and m["precision_reason"].startswith("auto: ")
    # a seeded sample of as many training queries as held out, scored the same way (Figure 3 (a))
    assert m["train_n_queries"] == 10 and 0.0 <= m["train_cvr"] <= 1.0 and 0.0 < m["train_ndcg"] <= 1.0
    assert 0.0 <= m["train_recall@1"] <= 1.0 and m["train_n_queries@1"] == 10
    metrics_rows = __import__("pandas").read_csv(final / "metrics.csv")["run"].tolist()
    assert metrics_rows == [
        "held-out queries",
        "random scores",
        "validation queries (3)",
        "training queries (10 sampled)",
    ]
    # the validation queries at the run's one budget, beside the test ones, each row naming its split
    curve = __import__("pandas").read_csv(final / "curve_per_query.csv")
    assert curve.groupby("split").size().to_dict() == {"dev": 3, "test": 10} and m["dev_n_queries"] == 3
    assert abs(curve.loc[curve["split"] == "dev", "ndcg"].mean() - m["dev_ndcg"]) < 1e-12
    # the per-query metrics behind the findings' intervals: held-out (08) and training queries (07)
    held, train = (__import__("pandas").read_csv(final / f"{name}.csv") for name in ("per_query", "per_query_train"))
    assert len(held) == 10 and len(train) == 10 and set(held["query"]).isdisjoint(train["query"])
    assert not set(curve.loc[curve["split"] == "dev", "query"]) & (set(held["query"]) | set(train["query"]))
    assert abs(train["violation"].mean() - m["train_cvr"]) < 1e-12
    _rescores_to(final, held)  # run.trec and qrels.trec of the held-out scores
    assert abs(train["recall@1"].mean() - m["train_recall@1"]) < 1e-12
    mask = __import__("os").umask(0)
    __import__("os").umask(mask)  # results and model readable as the umask says, not tempfile's 0600/0700
    assert (final / "results.json").stat().st_mode & 0o777 == 0o666 & ~mask
    assert (final / "model").stat().st_mode & 0o777 == 0o777 & ~mask
    assert (final / "model" / "config.json").exists() and (final / "model" / "tokenizer.json").exists()
    assert (final / "training_log.csv").read_text().startswith("step,loss,learning_rate")
    _has_figure(final, "training_curves")
    assert not any(p.name.startswith(".checkpoints") for p in final.parent.iterdir())
    assert "Writing model shards" not in (final / "05_train.ipynb").read_text()  # saving the model: no chatter
    text = _look_for(final, "05_train")
    assert text.startswith(
        f"- This run, Combined α=2, β=2, in percent on 10 held-out queries: CVR {100 * m['cvr']:.1f}"
    )
    assert "Table 3: WordNet, combined loss" in text and "On 10 of its training queries" in text

    # 06 on that run: same held-out queries and scores, so the same metrics; decoding on top
    final06, m06 = _run("06_evaluate", outputs_root)
    assert m06["source"] == str(final) and m06["dataset"] == "wordnet"
    assert m06["precision_used"] == m["precision_used"]  # auto picks the same on the same machine
    assert {k: m06[k] for k in m if k.startswith(("cvr", "ndcg", "recall@"))} == {
        k: m[k] for k in m if k.startswith(("cvr", "ndcg", "recall@"))
    }
    assert m06["n_decoded"] == 3 and 0.0 <= m06["greedy_valid_rate"] <= 1.0
    assert 0.0 <= m06["beam_recall@2_gold"] <= 1.0 and 0.0 <= m06["beam_invalid_rate_unconstrained"] <= 1.0
    scores = __import__("pandas").read_parquet(final06 / "per_query_scores.parquet")
    _rescores_to(final06, __import__("pandas").read_csv(final06 / "per_query_metrics.csv"))
    assert scores["query"].nunique() == 10 and set(scores["rank"]) >= {0, 1}
    # the beam's recall against the gold top 2 (rank) and the scorer's (predicted_rank), from the saved beams
    beams = __import__("pandas").read_csv(final06 / "decoding.csv")
    for column, against in (("rank", "gold"), ("predicted_rank", "scorer")):
        top = scores[scores[column].between(1, 2)].groupby("query")["docid"].agg(set)
        found = [
            len(set(__import__("ast").literal_eval(b)) & top[q]) / 2 for q, b in zip(beams["query"], beams["beam"])
        ]
        assert m06[f"beam_recall@2_{against}"] == pytest.approx(sum(found) / len(found))
    for name in ("per_rank_scores", "recall_at_k"):
        _has_figure(final06, name)
    text = _look_for(final06, "06_evaluate")
    assert "has the highest mean score" in text and "Decoding 3 held-out queries" in text
    # 05 scored one query at a time (auto on a CPU), 06 four to a pass (TINY): the same metrics, above
    assert json.loads((final / "results.json").read_text())["params"]["query_batch"] == 1
    r06 = json.loads((final06 / "results.json").read_text())
    assert r06["params"]["query_batch"] == 4 and r06["env"]["code_digest"] == outputs.code_digest()
    # results.json records every resolved value: re-running from them reproduces the run
    recorded = json.loads((final / "results.json").read_text())["params"]
    again = run.run_notebook(
        "05_train", {**recorded, "run_name": "smoke-again"}, outputs_root=outputs_root, progress=False
    )
    m2 = json.loads((again / "results.json").read_text())["metrics"]
    assert {k: m2[k] for k in m if k.startswith(("cvr", "ndcg", "recall@", "train_"))} == {
        k: m[k] for k in m if k.startswith(("cvr", "ndcg", "recall@", "train_"))
    }
    assert abs(m2["final_loss"] - m["final_loss"]) <= 1e-6 * abs(m["final_loss"])
    assert m["sequences_trained"] == m2["sequences_trained"] > 0 and 0 < m["queries_trained"] <= 10 * 16


def _rescores_to(run_dir, per_query, run_file: str = "run.trec", qid_of=None) -> None:
    """The run's TREC files, scored by ir_measures (trec_eval's nDCG), give its per-query nDCG within
    the integer gains' rounding (1 / (GAIN_SCALE · log 2) relative: arrank.evaluation.trec), and within 1e-6 with the gains at
    10**7 (``trec.rescaled_qrels``, scored by trectools), on every query whose scores do not tie
    (trec_eval orders tied scores by docno descending, the workbook by docID ascending:
    docs/findings.md); at least half of them. ``qid_of``: a query's TREC id (default ``trec.token``)."""
    import ir_measures

    from arrank.evaluation import trec

    lines = [ln.split() for ln in (run_dir / run_file).read_text().splitlines()]
    scores: dict[str, list[str]] = {}
    for qid, _, _, _, score, _ in lines:
        scores.setdefault(qid, []).append(score)
    untied = {q for q, s in scores.items() if len(set(s)) == len(s)}
    read = (
        ir_measures.read_trec_qrels(str(run_dir / "qrels.trec")),
        ir_measures.read_trec_run(str(run_dir / run_file)),
    )
    got = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.nDCG], *read)}
    want = {(qid_of or trec.token)(q): v for q, v in zip(per_query["query"], per_query["ndcg"])}
    assert set(got) == set(want) == set(scores) and len(got) == len(per_query) and 2 * len(untied) >= len(want)
    compared = [q for q in want if q in untied]
    assert [got[q] for q in compared] == pytest.approx(
        [want[q] for q in compared], rel=1 / (trec.GAIN_SCALE * math.log(2))
    )
    fine = [q.split() for q in trec.rescaled_qrels(run_dir / "qrels.trec", 10**7)]
    qrels = [ir_measures.Qrel(qid, docno, int(rel)) for qid, _, docno, rel in fine]
    run = ir_measures.read_trec_run(str(run_dir / run_file))
    got = {m.query_id: m.value for m in ir_measures.trectools.iter_calc([ir_measures.nDCG], qrels, run)}
    assert [got[q] for q in compared] == pytest.approx([want[q] for q in compared], rel=1e-6)


def test_05_zero_shot_row_of_a_real_pretrained_llm(outputs_root):
    """The pretrained profile (SmolLM2-135M-Instruct + LoRA, Appendix D.1 prompt) at steps = 0: the
    zero-shot row, through the same route the 7B model takes."""
    final = run.run_notebook(
        "05_train",
        {
            "profile": "pretrained",
            "steps": 0,
            "subtree": "even-toed_ungulate.n.01",
            "min_relevant": 3,
            "n_eval": 4,
            "eval_queries": 3,
            "run_name": "zs",
        },
        outputs_root=outputs_root,
        progress=False,
    )
    r = json.loads((final / "results.json").read_text())
    # results.json records every resolved value: Appendix D.1's template, the profile's LoRA and recipe
    assert r["params"]["model_name"] == "smollm2-135m" and r["params"]["template"] == "wordnet"
    assert (r["params"]["lora_r"], r["params"]["lr"], r["params"]["batch_size"], r["params"]["max_length"]) == (
        16,
        5e-4,
        4,
        384,
    )
    assert [k for k, v in r["params"].items() if v is None] == []
    m = r["metrics"]
    assert m["n_queries"] == 3 and m["final_loss"] is None and 0.0 <= m["cvr"] <= 1.0
    assert (final / "model" / "adapter_config.json").exists()  # LoRA r = 16 adapters, still zero


def test_05_trains_and_evaluates_on_ones_own_data(outputs_root):
    """dataset custom: the JSON Lines example (data/fixtures/custom/recipes.jsonl, docs/own-data.md)
    trains the tiny model and is scored by the unchanged notebook, TREC files included; notebook 06
    evaluates that run on the same held-out queries."""
    data = {"dataset": "custom", "data_path": "data/fixtures/custom/recipes.jsonl", "custom_docids": "semantic"}
    tiny = {k: v for k, v in TINY["05_train"].items() if k not in ("subtree", "min_relevant", "n_dev")}
    final = run.run_notebook(
        "05_train", {**tiny, **data, "n_eval": 8, "steps": 6, "run_name": "own"}, outputs_root=outputs_root,
        progress=False,
    )  # fmt: skip
    r = json.loads((final / "results.json").read_text())
    assert {k: r["params"][k] for k in data} == data and r["params"]["template"] == "esci_short"
    digest = __import__("hashlib").sha256((paths.ROOT / data["data_path"]).read_bytes()).hexdigest()[:12]
    assert r["params"]["data_digest"] == digest  # the file's content, which 06 and a resume check
    m = r["metrics"]
    assert m["n_queries"] == 8 and 0.0 <= m["cvr"] <= 1.0 and 0.0 < m["ndcg"] <= 1.0 and m["n_queries@3"] == 8
    held = __import__("pandas").read_csv(final / "per_query.csv")
    assert held["query"].str.contains(": ").all()  # "apple-desserts: apple desserts"
    _rescores_to(final, held, qid_of=lambda q: q.split(": ")[0])  # TREC files: the file's query_id and document id
    docnos = {ln.split()[2] for ln in (final / "run.trec").read_text().splitlines()}
    assert docnos and all(d.startswith("r") and d[1:].isdigit() for d in docnos)  # "r001", not semantic docIDs
    final06 = run.run_notebook(
        "06_evaluate", {**TINY["06_evaluate"], "train_run": "own", "run_name": "own"}, outputs_root=outputs_root,
        progress=False,
    )  # fmt: skip
    m06 = json.loads((final06 / "results.json").read_text())["metrics"]
    assert m06["dataset"] == "custom" and m06["ndcg"] == pytest.approx(m["ndcg"], rel=1e-6)


def test_06_evaluates_an_untrained_esci_model(outputs_root):
    final = run.run_notebook(
        "06_evaluate",
        {
            "train_run": "none",
            "dataset": "esci",
            "tokenizer_vocab": 400,
            "decode_queries": 2,
            "beam_k": 2,
            "run_name": "untrained",
        },
        outputs_root=outputs_root,
        progress=False,
    )
    m = json.loads((final / "results.json").read_text())["metrics"]
    assert m["source"] == "untrained" and m["n_queries"] == 7  # the fixture's 7 test queries
    assert "cvr" not in m and m["n_queries@10"] == 7 and m["recall@25"] is None  # ESCI: no negative


def test_08_results(outputs_root, monkeypatch):
    """08 on five finished points of the quick Table 1 sweep: results.json files written here as
    05_train writes them (the kernel reads the same outputs folder), the paper's rows beside."""
    import pandas as pd

    from arrank.common import outputs
    from arrank.workbook import sweep

    monkeypatch.setenv("ARRANK_OUTPUTS", str(outputs_root))
    s = sweep.load_sweep(TINY["08_results"]["sweep"])
    fake = {
        0: (0.50, 0.90, 0.90, 0.60),
        1: (0.00, 0.95, 0.60, 0.70),  # each value a whole number of the 20 queries: the rows' means are the record
        2: (0.05, 0.96, 0.70, 0.80),
        7: (0.30, 0.92, 0.85, 0.65),
        8: (0.40, 0.91, 0.88, 0.62),
    }  # NTP, alpha 1, 2, beta 1, 2
    for i, (cvr, ndcg, r1, r2) in fake.items():
        run_dir = outputs.run_path(s.notebook, s.points[i].run_name, outputs_root)
        run_dir.mkdir(parents=True)
        outputs.write_results(
            run_dir, s.notebook, s.points[i].resolved, {"cvr": cvr, "ndcg": ndcg, "recall@1": r1, "recall@2": r2}, {}
        )
        if i != 8:  # the per-query rows 05 writes (20 queries, the same means); beta 2 is an older run without
            ones = lambda p: [1.0] * round(20 * p) + [0.0] * (20 - round(20 * p))
            pd.DataFrame(
                {
                    "query": [f"q{j}" for j in range(20)],
                    "n_relevant": 5,
                    "n_candidates": 6,
                    "violation": [v == 1.0 for v in ones(cvr)],
                    "ndcg": ndcg,
                    "recall@1": ones(r1),
                    "recall@2": ones(r2),
                }
            ).to_csv(run_dir / "per_query.csv", index=False)
    final, m = _run("08_results", outputs_root)
    assert (m["points"], m["finished"], m["missing"], m["variants"], m["paper_rows"]) == (12, 5, 7, 5, True)
    assert m["best_cvr"] == "Fractional α=1" and m["best_recall@1"] == "NTP" and m["best_recall@2"] == "Fractional α=2"
    table = pd.read_csv(final / "results_table.csv")
    assert table["variant"].tolist()[:4] == ["NTP", "NTP", "Fractional α=1", "Fractional α=1"]
    assert table["source"].tolist()[:2] == ["this run", "paper"] and table["cvr"].tolist()[:3] == [50.0, 27.66, 0.0]
    md = (final / "results_table.md").read_text()
    assert (
        "| Fractional α=2 | this run | 5.00 ± " in md
        and "| Trie β=2 | this run | 40.00 | 91.00 | 88.00 | 62.00 |" in md
    )
    assert "± half the width of the 95% confidence interval" in md and table["cvr ci"].notna().sum() == 4
    rows = pd.read_csv(final / "per_query.csv")  # the sweep's per-query rows, the format of docs/data
    assert list(rows.columns) == ["point", "variant", "seed", "query", "cvr", "ndcg", "r1", "r2"] and len(rows) == 80
    for name in ("recall_curves", "parameter_curves"):
        _has_figure(final, name)
    text = _look_for(final, "08_results")
    # decided by intervals where every variant has per-query rows; with the trie β=2 run among them, by point
    assert "NTP has the highest CVR; fractional variants at most half of it: holds here (CVR (%): NTP 50.0" in text
    assert "point estimates, no interval (runs without per-query data)" in text
    # 20 queries, R@2 80 vs 60: 4 queries better, none worse: +20.0 points, BCa interval above 0
    assert (
        "fractional α=2 has a higher mean R@2..R@5 than NTP: holds here (mean R@2 (%): fractional α=2 80.0, "
        "NTP 60.0; 20 queries, paired; 1 / 1 runs, one run each: seed variation not estimated; +20.0 points, "
        "95% CI [+5.0, +45.0])"
    ) in text


def test_07_de_ce_baselines(outputs_root, monkeypatch):
    # an ARR run of notebook 05 on the same evaluation queries, as 05 writes its results.json (one
    # made before 05 scored training queries would lack the train_ keys): panel (a) draws both curves
    from arrank.common import outputs

    monkeypatch.setenv("ARRANK_OUTPUTS", str(outputs_root))  # the kernel reads the same outputs folder
    arr_dir = outputs.run_path("05_train", "arr-frac", outputs_root)
    arr_dir.mkdir(parents=True)
    data = {k: TINY["07_de_ce_baselines"][k] for k in ("subtree", "min_relevant", "n_eval")}
    outputs.write_results(
        arr_dir,
        "05_train",
        {
            **data,
            "seed": 0,
            "scheme": "fractional",
            "alpha": 2.0,
            "targets": "onehot",
            "beta": 2.0,
            "combined": False,
            "steps": 10,
        },
        {
            "n_queries": 10,
            **{f"recall@{k}": 0.5 for k in (1, 2, 3)},
            **{f"train_recall@{k}": 1.0 for k in (1, 2, 3)},
            "train_n_queries": 10,
        },
        {},
    )
    final, m = _run("07_de_ce_baselines", outputs_root)
    # de n2/n4 at alpha 5, ce n4 at alpha 5, de n2 at alpha 0, ce n4 at alpha 0: five runs
    assert m["n_eval_queries"] == 10 and m["n_table_rows"] == 82115 and m["n_pairs"] > 10
    assert m["precision_used"] == "fp32" and "the DE and CE baselines train in fp32" in m["precision_reason"]
    for key in ("de_n2_alpha5", "de_n4_alpha5", "de_n2_alpha0", "ce_n4_alpha5", "ce_n4_alpha0"):
        assert m[f"{key}_n_queries"] == 10 and 0.0 <= m[f"{key}_recall@1"] <= 1.0 and 0.0 < m[f"{key}_ndcg"] <= 1.0
    assert 0.0 <= m["de_n4_alpha5_retrieval_recall@1"] <= 1.0 and "ce_n4_alpha5_retrieval_recall@1" not in m
    # decided by intervals over this run's per-query rows (per_query.csv): holds, fails or undecided
    assert m["finding_de_grows_with_n_verdict"] in ("holds", "fails", "undecided")
    assert m["finding_alpha_raises_de_small_k_verdict"] in ("holds", "fails", "undecided")
    assert m["finding_ce_above_de_ci_low"] <= m["finding_ce_above_de_estimate"] <= m["finding_ce_above_de_ci_high"]
    per_query = __import__("pandas").read_csv(final / "per_query.csv")
    assert per_query.groupby("config").size().to_dict() == {
        k: 10 for k in ("de_n2_alpha5", "de_n4_alpha5", "de_n2_alpha0", "ce_n4_alpha5", "ce_n4_alpha0")
    }
    assert list(per_query.columns) == ["config", "query", "cvr", "ndcg", "r1", "r2", "r3"]  # k_max 3
    for config, rows in per_query.groupby("config"):  # each config's TREC run re-scores to its nDCG
        _rescores_to(final / "trec", rows, f"{config}.trec")
    # the ARR findings compare its training-query curve, the held-out one beside it
    assert m["n_arr_runs"] == 1 and m["finding_arr_above_de"] in (
        True,
        False,
    )  # no per_query_train.csv: the point check
    assert "finding_arr_above_de_verdict" not in m
    assert m["finding_arr_above_de_numbers"].startswith(
        "R@1..3 (%): ARR Fractional α=2 100.0 100.0 100.0 (its training"
    )
    assert m["finding_arr_above_de_numbers"].endswith("on held-out queries: ARR Fractional α=2 50.0 50.0 50.0")
    for name in ("figure3a", "figure3b", "figure3c", "retrieval_recall_at_k", "training_loss"):
        _has_figure(final, name)
    assert (final / "figure3b.csv").read_text().startswith("curve,model,n,alpha,k,recall,scored_on")
    panel_a = __import__("pandas").read_csv(final / "figure3a.csv")
    assert panel_a.drop_duplicates("curve")["curve"].tolist()[-2:] == [
        "ARR Fractional α=2 (training queries)",
        "ARR Fractional α=2 (held-out queries)",
    ]
    assert len((final / "results.csv").read_text().splitlines()) == 1 + 5
    text = _look_for(final, "07_de_ce_baselines")
    assert "section 5.3: ARR is significantly more powerful than the DEs (on its training queries): " in text
    assert sum(line.startswith("- ") for line in text.splitlines()) == 5
