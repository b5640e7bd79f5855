"""Figure 3's findings decided by intervals of per-query differences (arrank.results.figure3)."""

import json

import numpy as np
import pandas as pd
import pytest

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


def arr_run(rng, label: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """An ARR run at 0.95 on its training queries: its row (R@1..3) and its per-query rows."""
    arr = pd.DataFrame([{"run": "arr-run", "label": label, **{f"train_recall@{k}": 0.95 for k in (1, 2, 3)}}])
    return arr, config_rows("x", rng, 0.95).drop(columns="config").assign(query=lambda d: "t" + d["query"])


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
    arr, arr_rows = arr_run(rng, "ARR best")
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
    text = frame.to_csv(index=False)
    (run / "per_query_train.csv").write_text(text)
    trained = {"train_n_queries": 2, "train_cvr": 0.5, "train_ndcg": frame["ndcg"].mean(), "train_recall@1": 1.0}
    outputs.write_results(run, "05_train", {}, {"n_queries": 9, "ndcg": 0.1, **trained}, {})
    back = panels.arr_per_query("arr")
    assert list(back.columns) == ["query", "cvr", "ndcg", "r1", "r2", "r3"] and back["cvr"].tolist() == [1.0, 0.0]
    assert panels.arr_per_query("missing") is None and panels.arr_per_query(None) is None
    # cut short, a query twice, a value edited: named, never an interval over the wrong rows
    for damage, why in [
        (text[:-5], "a row is cut short"),
        (text + text.splitlines()[-1] + "\n", "3 rows where"),
        (text.replace(",1.0,", ",0.0,", 1), "the mean recall@1 of its rows is 0.5 where its results.json records 1"),
    ]:
        (run / "per_query_train.csv").write_text(damage)
        with pytest.raises(outputs.DamagedResultsError, match=rf"per_query_train.csv is damaged \(({why})"):
            panels.arr_per_query("arr")


def test_roles_compare_each_step_of_the_de_dimensions_and_the_alpha_ends():
    """Figure 3 (a): recall grows with n, so each DE is paired with the next smaller one (8-16, 16-32);
    Figure 3 (b): the largest α against the smallest."""
    sides = F3.roles([32, 8, 16], 32, 5.0, 8, [5.0, 0.0, 1.0])
    assert sides[F3.LARGER_DE] == [("DE n=16", ("de_n16_alpha5",)), ("DE n=32", ("de_n32_alpha5",))]
    assert sides[F3.SMALLER_DE] == [("n=8", ("de_n8_alpha5",)), ("n=16", ("de_n16_alpha5",))]
    assert sides[F3.LARGEST_ALPHA] == [("α 5", ("de_n8_alpha5",))]
    assert sides[F3.SMALLEST_ALPHA] == [("α 0", ("de_n8_alpha0",))]
    assert (
        sides[F3.STRONGEST_DE] == [("DE", ("de_n32_alpha5",))]
        and F3.roles([8], 8, 5.0, 8, [5.0])[F3.LARGEST_ALPHA] == []
    )


def test_equal_de_means_do_not_grow_with_n():
    """Figure 3 (a): "grows" is strict; two DEs with the same curve show no growth."""
    rows = [{"config": f"de_n{n}_alpha5", "model": "de", "n": n, "alpha": 5.0, "recall@1": 0.5} for n in (8, 16)]
    f = F3.findings(pd.DataFrame(rows).set_index("config"), [8, 16], 16, 5.0, 8, [5.0])
    assert f["finding_de_grows_with_n"] is False and f["de_n8_mean_recall@1-1"] == f["de_n16_mean_recall@1-1"]


def test_interval_verdicts_follow_the_tolerance_and_the_direction_of_alpha():
    """Section 5.3 with per-query rows: ARR 0.95 vs the CE 0.81 (a 14-point gap, CI about ±6 points on
    200 queries) is on par within ±50 points, not within the default ±2; Figure 3 (b): the DE at the
    largest α (rate 0.95) above the DE at the smallest (rate 0.3) holds, by some 65 points."""
    rng = np.random.default_rng(1)
    per_query = pd.concat(
        [
            config_rows("de_n32_alpha5", rng, 0.95),
            config_rows("ce_n32_alpha5", rng, 0.81),
            config_rows("de_n32_alpha0", rng, 0.3),
        ]
    )
    results = results_of(per_query)
    arr, arr_rows = arr_run(rng, "ARR")
    args = (results, [32], 32, 5.0, 32, [0.0, 5.0])
    wide = F3.findings(*args, arr=arr, tol=0.5, per_query=per_query, arr_per_query=arr_rows)
    narrow = F3.findings(*args, arr=arr, per_query=per_query, arr_per_query=arr_rows)
    assert wide["finding_arr_on_par_with_ce_verdict"] == "holds"
    assert narrow["finding_arr_on_par_with_ce_verdict"] == "fails"
    assert wide["finding_alpha_raises_de_small_k_verdict"] == "holds"
    assert 0.5 < wide["finding_alpha_raises_de_small_k_estimate"] < 0.8
