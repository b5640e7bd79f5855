"""Figure 3's findings decided by intervals of per-query differences (arrank.results.figure3)."""

import json

import numpy as np
import pandas as pd

from arrank.baselines import figure3 as BL
from arrank.baselines import panels
from arrank.common import outputs
from arrank.common.findings import findings_markdown
from arrank.evaluation import metrics
from arrank.results import figure3 as F3

QUERIES = [f"q{i}.n.01" for i in range(200)]


def config_rows(key: str, rng, p: float) -> pd.DataFrame:
    """One config's per-query rows (``per_query_rows``' format) with R@1..3 drawn at rate ``p``."""
    draws = {f"r{k}": (rng.random(len(QUERIES)) < p).astype(float) for k in (1, 2, 3)}
    return pd.DataFrame({"config": key, "query": QUERIES, "cvr": 0.0, "ndcg": 0.9, **draws})


def results_of(per_query: pd.DataFrame) -> pd.DataFrame:
    """The results rows (means) of the configs in ``per_query``."""
    rows = []
    for key, part in per_query.groupby("config", sort=False):
        model, n, alpha = key.split("_")
        rows.append(
            {
                "config": key,
                "model": model,
                "n": int(n[1:]),
                "alpha": float(alpha[5:]),
                "panels": "a",
                **{f"recall@{k}": part[f"r{k}"].mean() for k in (1, 2, 3)},
            }
        )
    return pd.DataFrame(rows).set_index("config")


def test_figure3_findings_with_per_query_data_get_intervals_and_three_verdicts():
    rng = np.random.default_rng(0)
    per_query = pd.concat(
        [
            config_rows("de_n16_alpha5", rng, 0.5),
            config_rows("de_n32_alpha5", rng, 0.8),
            config_rows("ce_n32_alpha5", rng, 0.81),
            config_rows("de_n8_alpha0", rng, 0.6),
            config_rows("de_n8_alpha5", rng, 0.6),
        ]
    )
    results = results_of(per_query)
    arr = pd.DataFrame([{"run": "arr-run", "label": "ARR best", **{f"train_recall@{k}": 0.95 for k in (1, 2, 3)}}])
    arr_rows = config_rows("x", rng, 0.95).drop(columns="config").assign(query=lambda d: "t" + d["query"])
    f = F3.findings(results, [16, 32], 32, 5.0, 8, [0.0, 5.0], arr=arr, per_query=per_query, arr_per_query=arr_rows)
    assert f["finding_de_grows_with_n_verdict"] == "holds" and f["finding_de_grows_with_n"] is True  # 0.5 -> 0.8
    assert f["finding_ce_above_de_verdict"] == "undecided" and f["finding_ce_above_de"] is None  # 0.81 vs 0.8
    lo, hi = f["finding_ce_above_de_ci_low"], f["finding_ce_above_de_ci_high"]
    assert lo < 0 < hi and "200 queries, paired" in f["finding_ce_above_de_numbers"]
    assert f["finding_arr_above_de_verdict"] == "holds"  # 0.95 vs 0.8, on other queries
    assert "200 / 200 queries, unpaired" in f["finding_arr_above_de_numbers"]
    assert f["finding_arr_on_par_with_ce_verdict"] == "fails"  # 14 points above: beyond +2 points
    assert f["finding_alpha_raises_de_small_k_verdict"] == "undecided"  # the same rate at both α
    rows = F3.findings_rows(json.loads(json.dumps(f)))  # as results.json keeps them
    assert [r.verdict for r in rows] == ["holds", "undecided", "fails", "holds", "undecided"]
    assert rows[1].interval == (lo, hi) and rows[1].threshold == 0.0 and rows[1].side == ">"
    # the five checks are Figure 3's family: each p agrees with its verdict, each is Holm-adjusted over five
    assert all((r.p_value < 0.05) == (r.verdict != "undecided") for r in rows)
    assert [r.family_size for r in rows] == [5] * 5 and all(r.p_holm >= r.p_value for r in rows)
    text = findings_markdown(rows)
    assert "the CE above the strongest DE: **undecided** here" in text and "95% CI [" in text
    decided = {}  # the same findings with their parts: on par is decided by two bounds
    F3.findings(results, [16, 32], 32, 5.0, 8, [0.0, 5.0], arr=arr, per_query=per_query, arr_per_query=arr_rows,
                decided=decided)  # fmt: skip
    with_parts = F3.findings_rows(f, decided)
    assert [(r.verdict, r.p_value, r.p_holm) for r in with_parts] == [(r.verdict, r.p_value, r.p_holm) for r in rows]
    assert [len(r.parts) for r in with_parts] == [0, 0, 2, 0, 0] and with_parts[1].interval == (lo, hi)
    # without per-query data: the point checks, labelled as such where they have a verdict
    point = F3.findings_rows(F3.findings(results, [16, 32], 32, 5.0, 8, [0.0, 5.0]))
    assert all(r.interval is None for r in point)
    assert all("point estimates" in r.numbers for r in point if r.verdict in ("holds", "fails"))
    assert [r.numbers for r in point if r.verdict == "unchecked"] == ["no ARR run on these evaluation queries"] * 2


def test_per_query_rows_of_a_config_and_of_an_arr_run(outputs_root):
    records = [
        {"query": "a", "relevant": ["x", "y"], "negative": "z", "scores": {"x": 2.0, "y": 0.0, "z": 1.0}},
        {"query": "b", "relevant": ["x", "y"], "negative": "z", "scores": {"x": 2.0, "y": 1.5, "z": 1.0}},
    ]
    frame = metrics.per_query_metrics(records, [1, 2, 3])
    rows = BL.per_query_rows(frame, "de_n8_alpha5")
    assert list(rows.columns) == ["config", "query", "cvr", "ndcg", "r1", "r2", "r3"]
    assert rows["cvr"].tolist() == [1.0, 0.0] and rows["r1"].tolist() == [1.0, 1.0] and rows["r3"].isna().all()
    run = outputs.run_path("05_train", "arr", outputs_root)
    run.mkdir(parents=True)
    frame.to_csv(run / "per_query_train.csv", index=False)
    back = panels.arr_per_query("arr")
    assert list(back.columns) == ["query", "cvr", "ndcg", "r1", "r2", "r3"] and back["cvr"].tolist() == [1.0, 0.0]
    assert panels.arr_per_query("missing") is None and panels.arr_per_query(None) is None
