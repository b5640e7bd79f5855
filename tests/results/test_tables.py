"""Aggregation of a sweep's results.json files into the paper's table (arrank.workbook.report)."""

import math

import numpy as np
import pandas as pd
import pytest

from arrank.common import outputs, paths
from arrank.results import paper, table1, tables
from arrank.training import schemes
from arrank.workbook import report, sweep


def make_sweep(tmp_path, grid, fixed="{profile: quick, steps: 5}", paper="table1", name="rep"):
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"notebook: 05_train\npaper: {paper}\nfixed: {fixed}\ngrid: {grid}\n")
    return sweep.load_sweep(path)


def finish(s, point, metrics, root, floor=None, **params):
    """Write the results.json (and metrics.csv) that a finished 05_train run of the point writes."""
    run_dir = outputs.run_path(s.notebook, point.run_name, root)
    run_dir.mkdir(parents=True)
    if floor:
        table = pd.DataFrame.from_dict({"this run": metrics, "random scores": floor}, orient="index")
        table.index.name = "run"
        outputs.save_table(table, run_dir, "metrics")
    outputs.write_results(run_dir, s.notebook, {**point.resolved, **params}, metrics, {})


NTP = {"cvr": 0.50, "ndcg": 0.90, "recall@1": 0.90, "recall@2": 0.60, "recall@3": 0.55, "n_queries": 300}
FRAC = {"cvr": 0.05, "ndcg": 0.95, "recall@1": 0.70, "recall@2": 0.80, "recall@3": 0.85, "n_queries": 300}
TRIE = {"cvr": 0.25, "ndcg": 0.95, "recall@1": 0.85, "recall@2": 0.65, "recall@3": None, "n_queries": 300}
GRID = "[{scheme: [indicator]}, {scheme: [fractional], alpha: [2]}, {scheme: [stepwise]}, {targets: [trie], beta: [2]}]"


def test_three_results_make_the_expected_table(tmp_path, outputs_root):
    s = make_sweep(tmp_path, GRID)
    for point, metrics in zip([s.points[0], s.points[1], s.points[3]], [NTP, FRAC, TRIE]):
        finish(s, point, metrics, outputs_root)
    frame = report.collect(s)
    assert list(frame["state"]) == ["done", "done", "missing", "done"]
    assert list(frame["label"]) == ["NTP", "Fractional α=2", "Stepwise", "Trie β=2"]
    table = tables.results_table(frame)
    assert list(table.columns) == ["variant", "source", "runs", "cvr", "ndcg", "recall@1", "recall@2", "recall@3"]
    assert list(table["variant"]) == ["NTP", "Fractional α=2", "Trie β=2"]  # the missing point has no row
    assert table.loc[1, ["cvr", "ndcg", "recall@1", "recall@2", "recall@3"]].tolist() == [5.0, 95.0, 70.0, 80.0, 85.0]
    assert math.isnan(table.loc[2, "recall@3"]) and table["runs"].tolist() == [1, 1, 1]
    assert tables.best_variants(table) == {
        "cvr": ["Fractional α=2"],
        "ndcg": ["Fractional α=2", "Trie β=2"],
        "recall@1": ["NTP"],
        "recall@2": ["Fractional α=2"],
        "recall@3": ["Fractional α=2"],
    }
    assert tables.markdown(table).splitlines() == [
        "| variant | CVR % (↓) | nDCG (↑) | R@1 (↑) | R@2 (↑) | R@3 (↑) |",
        "|---|---|---|---|---|---|",
        "| NTP | 50.00 | 90.00 | **90.00** | 60.00 | 55.00 |",
        "| Fractional α=2 | **5.00** | **95.00** | 70.00 | **80.00** | **85.00** |",
        "| Trie β=2 | 25.00 | **95.00** | 85.00 | 65.00 | – |",
    ]
    csv, md = tables.write_tables(table, tmp_path)
    again = pd.read_csv(csv)
    assert again["variant"].tolist() == ["NTP", "Fractional α=2", "Trie β=2"] and again["cvr"].tolist() == [50, 5, 25]
    assert md.read_text() == tables.markdown(table)


def test_paper_rows_follow_their_variant_for_the_paper_profile(tmp_path, outputs_root):
    s = make_sweep(tmp_path, GRID, fixed="{profile: paper, steps: 5}")
    finish(s, s.points[0], NTP, outputs_root)
    finish(s, s.points[1], FRAC, outputs_root)
    frame = report.collect(s)
    assert report.paper_reference(s, frame) == "table1" and report.paper_reference(s, frame, "no") is None
    table = tables.results_table(frame, "table1")
    assert list(zip(table["variant"], table["source"])) == [
        ("NTP", "this run"),
        ("NTP", "paper"),
        ("Fractional α=2", "this run"),
        ("Fractional α=2", "paper"),
    ]
    assert table.loc[1, ["cvr", "ndcg", "recall@1", "recall@2", "recall@3"]].tolist() == [
        27.66,
        94.89,
        99.96,
        62.43,
        55.3,
    ]
    lines = tables.markdown(table).splitlines()
    assert lines[0].startswith("| variant | source | CVR % (↓)")
    assert lines[3] == "| NTP | paper | 27.66 | 94.89 | **99.96** | 62.43 | 55.30 |"  # best among the paper's rows
    quick = make_sweep(tmp_path, GRID, name="q")
    finish(quick, quick.points[0], NTP, outputs_root)
    quick_frame = report.collect(quick)
    assert report.paper_reference(quick, quick_frame) is None  # quick numbers are not the paper's scale
    assert report.paper_reference(quick, quick_frame, "yes") == "table1"
    none = make_sweep(tmp_path, "{seed: [0]}", paper="fig3", name="f")
    with pytest.raises(ValueError, match=r"no numbers for sweep f \(paper: fig3\)"):
        report.paper_reference(none, quick_frame, "yes")


def test_seeds_are_averaged_with_their_spread(tmp_path, outputs_root):
    s = make_sweep(tmp_path, "{scheme: [indicator, stepwise], seed: [0, 1]}")
    for point, cvr in zip(s.points, [0.4, 0.6, 0.1, 0.1]):
        finish(s, point, {"cvr": cvr, "ndcg": 0.9}, outputs_root)
    table = tables.results_table(report.collect(s))
    assert table["variant"].tolist() == ["NTP", "Stepwise"] and table["runs"].tolist() == [2, 2]
    assert table["cvr"].tolist() == [50.0, 10.0]
    assert table["cvr sd"].round(4).tolist() == [round(100 * 0.2 / math.sqrt(2), 4), 0.0]
    assert tables.markdown(table).splitlines()[2:] == [
        "| NTP | 2 | 50.00 ± 14.14 | **90.00 ± 0.00** |",
        "| Stepwise | 2 | **10.00 ± 0.00** | **90.00 ± 0.00** |",
        "",
        "± one standard deviation over the seeds of a variant; percent.",
    ]


def test_the_random_floor_row_comes_from_a_finished_run(tmp_path, outputs_root):
    s = make_sweep(tmp_path, GRID)
    finish(
        s,
        s.points[1],
        FRAC,
        outputs_root,
        floor={"cvr": 0.87, "ndcg": 0.86, "recall@1": 0.13, "recall@2": 0.27, "recall@3": 0.4},
    )
    unfinished = outputs.run_path(s.notebook, s.points[0].run_name, outputs_root)  # no results.json: not a floor
    unfinished.mkdir()
    pd.DataFrame({"run": ["random scores"], "cvr": [0.5]}).to_csv(unfinished / "metrics.csv", index=False)
    frame = report.collect(s)
    floor = report.random_floor(s, frame)
    assert floor == {"cvr": 0.87, "ndcg": 0.86, "recall@1": 0.13, "recall@2": 0.27, "recall@3": 0.4}
    table = tables.results_table(frame, floor=floor)
    assert table.iloc[-1]["variant"] == "Random scores" and table.iloc[-1]["cvr"] == 87.0
    assert tables.best_variants(table) == {}  # one row of this run: nothing to compare


def test_no_finished_point_is_a_clear_error(tmp_path, outputs_root):
    s = make_sweep(tmp_path, GRID)
    with pytest.raises(ValueError, match="no finished points in this sweep: run it first"):
        tables.results_table(report.collect(s))


def test_labels_are_the_papers_names():
    label = schemes.loss_label
    assert label({"scheme": "indicator", "targets": "onehot", "alpha": 2.0, "beta": 2.0}) == "NTP"
    assert label({"scheme": "fractional", "targets": "onehot", "alpha": 3.0}) == "Fractional α=3"
    assert label({"scheme": "fractional", "targets": "onehot", "alpha": 0.5}) == "Fractional α=0.5"
    assert label({"scheme": "stepwise", "targets": "onehot"}) == "Stepwise"
    assert label({"scheme": "indicator", "targets": "trie", "beta": 4.0, "combined": True}) == "Trie β=4"
    assert (
        label({"scheme": "fractional", "targets": "trie", "alpha": 2.0, "beta": 25.0, "combined": True})
        == "Combined α=2, β=25"
    )
    assert (
        label({"scheme": "fractional", "targets": "trie", "alpha": 2.0, "beta": 1.0, "combined": False})
        == "Fractional α=2 + trie β=1"
    )
    assert (
        tables.variant_label(
            "05_train",
            {"scheme": "indicator", "targets": "onehot", "steps": 600, "seed": 1},
            ["scheme", "steps", "seed"],
        )
        == "NTP (steps=600)"
    )
    assert tables.variant_label("07_x", {"model": "de", "n": 8}, ["model", "n"]) == "model=de, n=8"
    assert (
        tables.variant_label("07_de_ce_baselines", {"model": "ce", "n": 32, "alpha": 0.0}, ["model", "n", "alpha"])
        == "CE n=32, α=0"
    )


@pytest.mark.parametrize(
    "name, key",
    [("table1_wordnet_paper", "table1"), ("table2_esci_paper", "table2"), ("table3_combined_paper", "table3")],
)
def test_the_paper_sweeps_cover_the_papers_rows(name, key):
    try:
        s = sweep.load_sweep(paths.ROOT / "sweeps" / f"{name}.yaml")
    except sweep.SweepError as err:
        if "dataset" in str(err):
            pytest.skip("05_train has no 'dataset' parameter yet (the ESCI route of Table 2 is being added)")
        raise
    labels = [tables.variant_label(s.notebook, p.resolved, s.grid_keys) for p in s.points]
    assert labels == list(paper.PAPER[key]["rows"])


def test_the_tables_columns_best_values_intervals_and_profile():
    """The paper's column order (CVR, nDCG, then R@k by k: R@10 after R@2, as Figure 3's k run to 10);
    the best value in bold among values equal to the 2 decimals shown; a ± only for a variant with
    at least two queries (two queries with CVR 1 and 0: bootstrap means 0, ½ and 1, an interval
    [0, 1], half-width 50 points); the sweep's profile only when every finished point ran it."""
    columns = ["recall@10", "n_queries", "recall@2", "ndcg", "recall@1", "cvr", "recall@x"]
    assert tables.metric_columns(columns) == ["cvr", "ndcg", "recall@1", "recall@2", "recall@10"]
    table = pd.DataFrame({"variant": ["A", "B"], "source": "this run", "runs": 1, "ndcg": [90.001, 90.004]})
    assert tables.best_variants(table) == {"ndcg": ["A", "B"]}  # both shown as 90.00
    per_query = pd.DataFrame(
        {"point": "p", "variant": ["A", "A", "B"], "seed": 0, "query": ["q0", "q1", "q0"], "cvr": [1.0, 0.0, 1.0]}
    )
    assert tables.interval_halfwidths(per_query, ["A", "B"], ["cvr"]) == {"A": {"cvr": pytest.approx(50.0)}}
    frame = pd.DataFrame({"state": ["done", "done", "missing"], "profile": ["quick", "paper", "paper"]})
    assert tables.sweep_profile(frame) is None and tables.sweep_profile(frame.iloc[1:]) == "paper"


def test_parameter_curves_draw_one_line_per_family(tmp_path, outputs_root):
    s = make_sweep(
        tmp_path, "[{scheme: [indicator]}, {scheme: [fractional], alpha: [1, 2, 3]}, {targets: [trie], beta: [1, 2]}]"
    )
    for i, point in enumerate(s.points):
        finish(s, point, {"cvr": 0.1 * i, "ndcg": 0.9, "recall@1": 0.5}, outputs_root)
    fig = tables.parameter_curves(report.collect(s), s.notebook)
    lines = {(t.name, t.xaxis): (list(t.x), [round(y, 6) for y in t.y]) for t in fig.data}
    assert lines[("Fractional α", "x")] == ([1.0, 2.0, 3.0], [10.0, 20.0, 30.0])  # CVR % against α
    assert lines[("Trie β", "x2")] == ([1.0, 2.0], [40.0, 50.0])  # against β
    assert [a.text for a in fig.layout.annotations if a.text == "NTP"] == ["NTP"] * 4  # a reference per panel
    single = make_sweep(tmp_path, "{scheme: [indicator, stepwise]}", name="single")
    for point in single.points:
        finish(single, point, {"cvr": 0.1, "ndcg": 0.9}, outputs_root)
    assert tables.parameter_curves(report.collect(single), single.notebook) is None
    curves = tables.recall_curves(tables.results_table(report.collect(s)))
    assert [t.name for t in curves.data][:2] == ["NTP", "Fractional α=1"] and list(curves.data[0].x) == [1]
    assert curves.layout.yaxis.title.text == "R@k (%)" and list(curves.data[1].y) == [50.0]


def test_variants_keep_parameter_order_and_ordered_colours():
    variants = ["NTP", "Fractional α=3", "Fractional α=1", "Trie β=2", "Fractional α=2", "Trie β=1", "Stepwise"]
    assert tables.legend_order(variants) == [
        "NTP",
        "Fractional α=1",
        "Fractional α=2",
        "Fractional α=3",
        "Trie β=1",
        "Trie β=2",
        "Stepwise",
    ]
    assert tables.variant_family("Combined α=2, β=5") == ("Combined α=2, β", 5.0)
    colors = tables.variant_colors(variants)
    from plotly.colors import unlabel_rgb

    blue = [unlabel_rgb(colors[f"Fractional α={a}"]) for a in (1, 2, 3)]
    assert blue[0][0] > blue[1][0] > blue[2][0]  # lighter to darker on the Blues scale as α grows
    assert colors["NTP"] != colors["Stepwise"] and colors["Trie β=1"] != colors["Fractional α=1"]


def test_figure3_points_get_baseline_labels_and_curves(outputs_root):
    try:
        s = sweep.load_sweep(paths.ROOT / "sweeps" / "fig3_baselines_quick.yaml")
    except sweep.SweepError as err:
        pytest.skip(f"notebook 07_de_ce_baselines is not in this checkout yet ({err})")
    for i, point in enumerate(s.points):
        finish(s, point, {"cvr": 0.01 * i, "ndcg": 0.9, "recall@1": 0.5, "recall@10": 0.9}, outputs_root)
    frame = report.collect(s)
    assert list(frame["label"][:6]) == [
        "DE n=4, α=5",
        "DE n=8, α=5",
        "DE n=16, α=5",
        "DE n=32, α=5",
        "CE n=32, α=5",
        "DE n=8, α=0",
    ]
    fig = tables.parameter_curves(frame, s.notebook)
    lines = {(t.name, t.xaxis): list(t.x) for t in fig.data if t.yaxis in ("y", "y2")}
    assert lines[("DE n, α=5", "x")] == [4, 8, 16, 32]
    assert lines[("DE n=8, α", "x2")] == [0, 1, 2, 3, 4, 5] and lines[("CE n=32, α", "x2")] == [0, 1, 2, 3, 4, 5]


def _finding_frame(ntp_cvr: float, frac_cvr: float) -> pd.DataFrame:
    row = lambda label, scheme, alpha, targets, cvr, r: {
        "state": "done",
        "label": label,
        "scheme": scheme,
        "alpha": alpha,
        "targets": targets,
        "combined": False,
        "cvr": cvr,
        "recall@1": r[0],
        "recall@2": r[1],
        "recall@3": r[2],
        "recall@4": r[3],
        "recall@5": r[4],
    }
    return pd.DataFrame(
        [
            row("NTP", "indicator", None, "onehot", ntp_cvr, [0.90, 0.70, 0.70, 0.70, 0.70]),
            row("Fractional α=2", "fractional", 2.0, "onehot", frac_cvr, [0.89, 0.80, 0.80, 0.80, 0.80]),
            row("Trie β=2", "indicator", None, "trie", 0.5, [0.85, 0.75, 0.75, 0.75, 0.75]),
        ]
    )


def _holds(found):
    return [f.holds for f in found]


def test_table1_findings_hold_and_fail_on_the_numbers():
    found = pd.DataFrame([f.as_dict() for f in table1.table1_findings(_finding_frame(0.9, 0.3))]).set_index("claim")
    assert list(found["verdict"]) == ["holds"] * 4
    point = "; point estimates, no interval (runs without per-query data)"  # no per-query data: the point verdict
    assert found["numbers"].tolist() == [
        "CVR (%): NTP 90.0; Fractional α=2 30.0, Trie β=2 50.0" + point,
        "R@1 (%): NTP 90.0; Fractional α=2 89.0, Trie β=2 85.0" + point,
        "mean R@2..R@5 (%): fractional α=2 80.0, NTP 70.0" + point,
        "CVR (%): NTP 90.0; Trie β=2 50.0" + point,
    ]
    bad = _holds(table1.table1_findings(_finding_frame(0.9, 0.6)))  # 0.6 > 0.9 / 2
    assert list(bad) == [False, True, True, True]
    assert _holds(table1.table1_findings(_finding_frame(0.4, 0.3)))[0] is False  # trie 0.5 above NTP


def _variant(label, scheme, alpha, targets, combined, cvr, r1, steps=None):
    """One collected point of a 05_train sweep (R@2..R@5 at 0.7)."""
    return {"state": "done", "label": label, "scheme": scheme, "alpha": alpha, "targets": targets,
            "combined": combined, "steps": steps, "cvr": cvr, "recall@1": r1,
            **{f"recall@{k}": 0.7 for k in range(2, 6)}}  # fmt: skip


def test_table1_roles_pick_the_variants_each_claim_compares():
    """Section 5.2's sides: NTP is the indicator scheme on one-hot targets, not combined (a point
    that records no scheme, targets or combined ran the defaults: NTP); the fractional variants are
    on one-hot targets and not combined, fractional α=2 is α = 2 only; the trie variants are the uncombined ones on
    trie targets, whatever the scheme; a point with steps = 0 is the zero-shot row, in no other role."""
    frame = pd.DataFrame(
        [
            _variant("NTP", None, None, None, None, 0.6, 0.9),
            _variant("Fractional α=2", "fractional", 2.0, "onehot", False, 0.1, 0.9),
            _variant("Fractional α=1", "fractional", 1.0, "onehot", False, 0.1, 0.9),
            _variant("Trie β=2", "indicator", None, "trie", False, 0.1, 0.9),
            _variant("Fractional trie", "fractional", 2.0, "trie", False, 0.1, 0.9),
            _variant("Combined", "indicator", None, "onehot", True, 0.1, 0.9),
            _variant("Trie combined", "indicator", None, "trie", True, 0.1, 0.9),
            _variant("Fractional combined", "fractional", 2.0, "onehot", True, 0.1, 0.9),
            _variant("Zero-shot", "indicator", None, "onehot", False, 0.9, 0.1, steps=0),
        ]
    )
    each = lambda *labels: [(v, (v,)) for v in labels]
    others = ["Fractional α=2", "Fractional α=1", "Trie β=2", "Fractional trie", "Combined", "Trie combined"]
    others += ["Fractional combined"]
    assert table1.roles(frame) == {
        table1.NTP: [("NTP", ("NTP",))],
        table1.OTHERS: each(*others),
        table1.FRACTIONAL: each("Fractional α=2", "Fractional α=1"),
        table1.FRACTIONAL_2: [(table1.FRACTIONAL_2, ("Fractional α=2",))],
        table1.TRIE: each("Trie β=2", "Fractional trie"),
        table1.TUNED: each("NTP", *others),
        table1.ZERO_SHOT: [(table1.ZERO_SHOT, ("Zero-shot",))],
    }


@pytest.mark.parametrize(
    ("frac_cvr", "frac_r1", "cvr_holds", "r1_holds"), [(0.30, 0.90, True, True), (0.31, 0.91, False, False)]
)
def test_table1_claims_on_their_thresholds(frac_cvr, frac_r1, cvr_holds, r1_holds):
    """Section 5.2, point verdicts: "fractional variants at most half of NTP's CVR" holds at exactly
    half (NTP 0.6, the mean of its seeds 0.5 and 0.7; fractional 0.30) and fails above it (0.31);
    "NTP's R@1 is the best or within 2 points of it" holds 2 points below (0.88 vs 0.90) and fails
    3 points below (0.91)."""
    frame = pd.DataFrame(
        [
            _variant("NTP", "indicator", None, "onehot", False, 0.5, 0.88),
            _variant("NTP", "indicator", None, "onehot", False, 0.7, 0.88),
            _variant("Fractional α=2", "fractional", 2.0, "onehot", False, frac_cvr, frac_r1),
        ]
    )
    found = {f.claim: f for f in table1.table1_findings(frame)}
    assert found[table1.CVR].holds is cvr_holds and found[table1.R1].holds is r1_holds
    assert found[table1.CVR].numbers.startswith(f"CVR (%): NTP 60.0; Fractional α=2 {100 * frac_cvr:.1f}")


def test_a_zero_shot_row_is_no_loss_variant_and_is_checked_against_the_fine_tuned_ones():
    frame = _finding_frame(0.9, 0.3).assign(ndcg=[0.95, 0.97, 0.96], steps=None)
    zero = {
        "state": "done",
        "label": "Zero-shot",
        "scheme": "indicator",
        "alpha": None,
        "targets": "onehot",
        "combined": False,
        "steps": 0,
        "cvr": 0.99,
        "ndcg": 0.90,
        "recall@1": 0.95,
        "recall@2": 0.1,
        "recall@3": 0.1,
        "recall@4": 0.1,
        "recall@5": 0.1,
    }
    holds = pd.Series({f.claim: f.holds for f in table1.table1_findings(pd.concat([frame, pd.DataFrame([zero])]))})
    assert list(holds)[:4] == [True, True, True, True]  # zero-shot's CVR 0.99 and R@1 0.95 not taken as NTP's
    assert holds["every fine-tuned variant beats the zero-shot model (nDCG and mean R@1..R@5)"]
    worse = pd.concat([frame, pd.DataFrame([{**zero, "ndcg": 0.99}])])
    assert not _holds(table1.table1_findings(worse))[-1]
    assert schemes.loss_label({"steps": 0, "scheme": "fractional", "alpha": 2}) == "Zero-shot"


# --------------------------------------------------------------------------- per-query data and intervals


def finish_queries(s, point, root, violation, recall1, seed=0, n_relevant=5):
    """A finished 05_train run with its per_query.csv (notebook 05's format: one row per held-out
    query) and the results.json metrics those rows give."""
    n = len(violation)
    q = pd.DataFrame(
        {
            "query": [f"q{i}.n.01" for i in range(n)],
            "n_relevant": n_relevant,
            "n_candidates": 6,
            "violation": np.asarray(violation, dtype=bool),
            "ndcg": 0.5 + 0.5 * np.asarray(recall1, float),
            "recall@1": np.asarray(recall1, float),
            "recall@2": 0.5,
            "recall@3": np.nan,
        }
    )
    finish(
        s,
        point,
        {
            "cvr": float(q["violation"].mean()),
            "ndcg": float(q["ndcg"].mean()),
            "recall@1": float(q["recall@1"].mean()),
            "recall@2": 0.5,
            "recall@3": None,
            "n_queries": n,
        },
        root,
        seed=seed,
    )
    q.to_csv(outputs.run_path(s.notebook, point.run_name, root) / "per_query.csv", index=False)
    return q


def test_per_query_rows_of_a_sweep_and_their_csv(tmp_path, outputs_root):
    s = make_sweep(tmp_path, GRID)
    rng = np.random.default_rng(0)
    ntp = finish_queries(s, s.points[0], outputs_root, rng.random(50) < 0.5, rng.random(50) < 0.9)
    finish_queries(s, s.points[1], outputs_root, rng.random(50) < 0.05, rng.random(50) < 0.7, seed=3)
    finish(s, s.points[2], NTP, outputs_root)  # an old run: no per_query.csv, left out
    frame = report.collect(s)
    rows = report.per_query_frame(s, frame)
    assert list(rows.columns) == ["point", "variant", "seed", "query", "cvr", "ndcg", "r1", "r2", "r3"]
    assert len(rows) == 100 and rows["variant"].unique().tolist() == ["NTP", "Fractional α=2"]
    assert rows["seed"].unique().tolist() == [0, 3] and rows["point"].iloc[0] == s.points[0].run_name
    first = rows[rows["variant"] == "NTP"]
    assert first["cvr"].tolist() == ntp["violation"].astype(float).tolist()  # the query's violation as 0 / 1
    assert first["r1"].tolist() == ntp["recall@1"].tolist() and first["r3"].isna().all()
    path = tmp_path / "docs" / "data" / "per_query.csv"
    assert report.write_per_query(rows, path) == path
    back = pd.read_csv(path)
    assert back.shape == rows.shape and back["cvr"].tolist() == rows["cvr"].tolist()
    report.write_per_query(rows, path)  # the same rows again: no change, no error
    other = rows.assign(r1=1.0)
    with pytest.raises(FileExistsError, match="exists with other per-query rows: pass overwrite=True"):
        report.write_per_query(other, path)
    assert pd.read_csv(path)["r1"].tolist() == rows["r1"].tolist()  # kept
    report.write_per_query(other, path, overwrite=True)
    assert pd.read_csv(path)["r1"].eq(1.0).all()
    assert [p.name for p in path.parent.iterdir()] == ["per_query.csv"]  # no temporary file left
    with pytest.raises(ValueError, match="at least one row"):
        report.write_per_query(rows.iloc[:0], tmp_path / "empty.csv")
    assert not (tmp_path / "empty.csv").exists()
    fig = tmp_path / "fig.yaml"
    fig.write_text("notebook: 07_de_ce_baselines\nfixed: {profile: quick}\ngrid: {model: [de]}\n")
    with pytest.raises(ValueError, match="from a sweep of notebook 05_train, not '07_de_ce_baselines'"):
        report.per_query_frame(sweep.load_sweep(fig))


def test_the_table_shows_each_mean_with_its_interval_half_width(tmp_path, outputs_root):
    s = make_sweep(tmp_path, GRID)
    rng = np.random.default_rng(1)
    finish_queries(s, s.points[0], outputs_root, rng.random(200) < 0.5, rng.random(200) < 0.9)
    finish_queries(s, s.points[1], outputs_root, np.zeros(200), rng.random(200) < 0.7)
    frame = report.collect(s)
    table = tables.results_table(frame, per_query=report.per_query_frame(s, frame))
    assert [c for c in table.columns if c.endswith(" ci")] == [
        "cvr ci",
        "ndcg ci",
        "recall@1 ci",
        "recall@2 ci",
        "recall@3 ci",
    ]
    assert table["recall@3 ci"].isna().all()  # no query has R@3
    # about 1.96 standard errors of a proportion of 0.5 on 200 queries: 6.9 points
    assert 5.5 < table.loc[0, "cvr ci"] < 8.5
    assert table.loc[1, "cvr ci"] == 0 and table.loc[0, "recall@2 ci"] == 0  # no spread: no width
    lines = tables.markdown(table).splitlines()
    assert lines[2].startswith(f"| NTP | {table.loc[0, 'cvr']:.2f} ± {table.loc[0, 'cvr ci']:.2f} |")
    assert lines[-1].startswith("± half the width of the 95% confidence interval of the mean over the held-out queries")


def test_table1_findings_are_decided_by_intervals_with_per_query_data(tmp_path, outputs_root):
    s = make_sweep(tmp_path, GRID)
    rng = np.random.default_rng(2)
    ntp_r1 = rng.random(300) < 0.9
    frac_r1 = ntp_r1.copy()
    frac_r1[np.flatnonzero(~ntp_r1)[:6]] = True  # fractional 2 points above NTP at R@1: exactly NTP's tolerance
    finish_queries(s, s.points[0], outputs_root, rng.random(300) < 0.6, ntp_r1)  # NTP
    finish_queries(s, s.points[1], outputs_root, rng.random(300) < 0.05, frac_r1)  # fractional
    finish_queries(s, s.points[3], outputs_root, rng.random(300) < 0.58, rng.random(300) < 0.8)  # trie: CVR ~ NTP's
    frame = report.collect(s)
    found = {f.claim: f for f in table1.table1_findings(frame, per_query=report.per_query_frame(s, frame))}
    cvr = found["NTP has the highest CVR; fractional variants at most half of it"]
    assert cvr.verdict == "undecided"  # the fractional part holds, the trie part cannot tell 0.58 from 0.6
    assert (
        "Fractional α=2 CVR at most half NTP's: holds" in cvr.numbers
        and "Trie β=2 CVR below NTP's: undecided" in cvr.numbers
    )
    trie = found["trie variants lower CVR relative to NTP"]
    assert trie.verdict == "undecided" and "to decide: gap to the threshold" in trie.numbers
    assert "queries needed" in trie.numbers  # one run each: no seed count to give
    r1 = found["NTP's R@1 is the best or within 2 points of it"]
    assert r1.verdict == "undecided"  # NTP - trie R@1 ~ +10 holds; NTP - fractional is -2 points, the threshold
    assert "NTP − Trie β=2 R@1 above −2 points: holds" in r1.numbers
    frac = found["fractional α=2 has a higher mean R@2..R@5 than NTP"]  # both R@2 = 0.5 on every query
    assert frac.verdict == "undecided" and frac.interval == (0.0, 0.0)
    assert "300 queries, paired; 1 / 1 runs" in frac.numbers
    # without the per-query data: the point verdicts, labelled
    assert all(f.interval is None and "point estimates" in f.numbers for f in table1.table1_findings(frame))


@pytest.mark.parametrize("cut, why", [("in_row", "a row is cut short"), ("empty", "not a table")])
def test_a_metrics_csv_cut_short_is_named_damaged_not_a_floor_of_nan(tmp_path, outputs_root, cut, why):
    s = make_sweep(tmp_path, GRID)
    floor = {"cvr": 0.87, "ndcg": 0.86, "recall@1": 0.13, "recall@2": 0.27, "recall@3": None}  # R@3: none has 3
    finish(s, s.points[1], {**FRAC, "recall@3": None}, outputs_root, floor=floor)
    frame = report.collect(s)
    assert report.random_floor(s, frame)["ndcg"] == 0.86  # a metric no query has is NaN in every row: not damage
    table = outputs.run_path(s.notebook, s.points[1].run_name, outputs_root) / "metrics.csv"
    text = table.read_text()
    table.write_text(text[: text.index("0.86") + 2] if cut == "in_row" else "")
    with pytest.raises(outputs.DamagedResultsError, match=rf"metrics.csv is damaged \({why}"):
        report.random_floor(s, frame)
