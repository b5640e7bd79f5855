"""Table 1's central finding against the training budget (arrank.results.curve) and the curve rows
of a sweep (arrank.workbook.report.curve_frame)."""

import numpy as np
import pandas as pd
import pytest

from arrank.common import outputs, params
from arrank.results import curve
from arrank.workbook import report, sweep

N_QUERIES, ITEMS_PER_STEP, PAIRS = 40, 64, 1000
FRAC, NTP = "Fractional α=2", "NTP"


def make_curve(shifts: dict[int, float | None], seed: int = 0) -> pd.DataFrame:
    """``curve_frame``'s rows of NTP and fractional α=2, 2 seeds each, 40 queries, at each step of
    ``shifts``: R@2..R@5 of fractional = NTP's + shift + noise (None: exactly NTP's values); CVR 1
    for NTP and 0 for fractional; R@1 0.9 for both."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.3, 0.6, N_QUERIES)
    rows = []
    for step, shift in shifts.items():
        for s in (0, 1):
            ntp = base + rng.normal(0, 0.05, N_QUERIES)
            frac = ntp.copy() if shift is None else base + shift + rng.normal(0, 0.05, N_QUERIES)
            for variant, values, cvr in ((NTP, ntp, 1.0), (FRAC, frac, 0.0)):
                part = pd.DataFrame(
                    {
                        "point": f"{variant}-seed={s}",
                        "variant": variant,
                        "seed": s,
                        "step": step,
                        "items": step * ITEMS_PER_STEP,
                        "epochs": step * ITEMS_PER_STEP / PAIRS,
                        "query": [f"q{i}.n.01" for i in range(N_QUERIES)],
                        "cvr": cvr,
                        "ndcg": values,
                        "r1": 0.9,
                        **{f"r{k}": values for k in range(2, 6)},
                    }
                )
                rows.append(part)
    return pd.concat(rows, ignore_index=True)


@pytest.fixture(scope="module")
def better_worse_equal():
    rows = make_curve({100: 0.2, 200: -0.2, 300: None})
    return rows, curve.curve_findings(rows, n_resamples=999)


def test_each_budget_gets_the_verdict_of_its_difference(better_worse_equal):
    _, found = better_worse_equal
    assert list(found.columns) == curve.FINDING_COLUMNS
    central = found[found["claim"] == curve.CENTRAL.claim].set_index("step")
    assert central["verdict"].to_dict() == {100: "holds", 200: "fails", 300: "undecided"}
    for step, true in ((100, 0.2), (200, -0.2), (300, 0.0)):
        assert central.loc[step, "ci_low"] < true < central.loc[step, "ci_high"]
    assert central.loc[300, "estimate"] == 0  # identical values: the width is the seeds' spread alone
    assert central.loc[300, "ci_high"] > 0.005
    assert central.loc[100, "items"] == 6400 and central.loc[100, "epochs"] == pytest.approx(6.4)
    assert central.loc[100, "a"] == FRAC and central.loc[100, "b"] == NTP
    assert "40 queries, paired; 2 / 2 runs, seed variation in the interval" in central.loc[100, "numbers"]
    # the other claims keep Table 1's thresholds: CVR 0 - ½ · 1 < 0 holds; R@1 0.9 - 0.9 > -2 points holds
    cvr = found[found["claim"] == curve.COMPARISONS[2].claim]
    assert cvr["estimate"].eq(-0.5).all() and cvr["verdict"].eq("holds").all()
    r1 = found[found["claim"] == curve.COMPARISONS[1].claim]
    assert r1["estimate"].abs().max() < 1e-12 and r1["verdict"].eq("holds").all()


def test_the_claims_of_a_budget_are_one_holm_family(better_worse_equal):
    rows, found = better_worse_equal
    assert found.groupby("step")["family_size"].unique().to_dict() == {100: [3], 200: [3], 300: [3]}
    assert ((found["p_value"] < 0.05) == (found["verdict"] != "undecided")).all()
    for _, budget in found.groupby("step"):  # Holm by hand: sorted p times m - i + 1, running maximum
        p = np.sort(budget["p_value"].to_numpy())
        want = np.minimum(np.maximum.accumulate(p * np.arange(3, 0, -1)), 1)
        assert np.sort(budget["p_holm"].to_numpy()) == pytest.approx(want)
    # one claim's budgets as the family instead: three budgets a claim
    by_claim = curve.curve_findings(rows, n_resamples=999, family=("claim", curve.SETTING))
    assert by_claim.groupby("claim")["family_size"].unique().map(list).to_dict() == {
        c.claim: [3] for c in curve.COMPARISONS
    }
    assert (by_claim["p_value"] == found["p_value"]).all()  # the family changes the adjustment only
    md = curve.budget_markdown(found)
    assert "| p | Holm (claims of the budget) |" in md and "holds (p < 0.001)" in md
    changed = found.assign(holm_verdict="undecided", p_holm=0.07)
    assert "| holds | < 0.001 | holds → **undecided** (p 0.070) |" in curve.budget_markdown(changed)


def turning(found, claims=curve.COMPARISONS) -> list[str]:
    """Where each claim's verdict turned, as ``budget_verdicts`` says it (each finding's numbers, up to "; there")."""
    return [f.numbers.split("; there ")[0] for f in curve.budget_verdicts(found, claims)]


def test_the_turning_point_in_words(better_worse_equal):
    _, found = better_worse_equal
    assert turning(found) == [
        "does not turn to holds by the largest budget, step 300 (19,200 items, 19.2 epochs): undecided there; "
        "it held at step 100 (6,400 items, 6.4 epochs)",
        "holds at every budget measured, from step 100 (6,400 items, 6.4 epochs) to step 300 (19,200 items, 19.2 epochs)",
        "holds at every budget measured, from step 100 (6,400 items, 6.4 epochs) to step 300 (19,200 items, 19.2 epochs)",
    ]
    turns = curve.curve_findings(
        make_curve({100: None, 200: -0.2, 300: 0.2, 400: 0.25}), (curve.CENTRAL,), n_resamples=999
    )
    assert turning(turns) == [
        "turns to holds at step 300 (19,200 items, 19.2 epochs) (at step 200 (12,800 items, 12.8 epochs): fails) "
        "and holds at every larger budget, to step 400 (25,600 items, 25.6 epochs)"
    ]
    last = curve.budget_verdicts(turns)
    assert len(last) == 1 and last[0].verdict == "holds" and last[0].interval[0] > 0
    assert (
        last[0].numbers.startswith("turns to holds at step 300")
        and "there mean R@2..R@5 (%): Fractional α=2 " in last[0].numbers
    )
    assert curve.budget_verdicts(turns[turns["step"] < 0]) == []  # no budget at which both were scored


def test_a_budget_one_variant_lacks_is_left_out():
    rows = make_curve({100: 0.2, 200: 0.2})
    rows = rows[~((rows["variant"] == NTP) & (rows["step"] == 200))]
    found = curve.curve_findings(rows, (curve.CENTRAL,), n_resamples=999)
    assert found["step"].tolist() == [100]


def test_each_variants_means_with_their_intervals(better_worse_equal):
    rows, _ = better_worse_equal
    m = curve.curve_metrics(rows, n_resamples=999)
    assert list(m.columns) == curve.METRIC_COLUMNS and len(m) == 2 * 3 * 7
    assert m["variant"].unique().tolist() == [NTP, FRAC] and m["step"].unique().tolist() == [100, 200, 300]
    one = m.set_index(["variant", "step", "metric"])
    assert tuple(one.loc[(NTP, 100, "cvr"), ["mean", "ci_low", "ci_high"]]) == (1.0, 1.0, 1.0)
    r2 = one.loc[(FRAC, 100, "r2")]
    expected = rows[(rows["variant"] == FRAC) & (rows["step"] == 100)]["r2"].mean()
    assert r2["mean"] == pytest.approx(expected) and r2["ci_low"] < expected < r2["ci_high"]
    assert (r2["runs"], r2["queries"]) == (2, 40)
    shown = curve.metrics_table(m)
    assert list(shown.columns) == ["variant", "step", "items", "epochs", "CVR (%)", "nDCG (%)"] + [
        f"R@{k} (%)" for k in range(1, 6)
    ]
    assert shown.loc[0, "CVR (%)"] == "100.0 ± 0.0" and shown.loc[0, "R@1 (%)"] == "90.0 ± 0.0"


def test_the_figure_draws_the_band_and_zero(better_worse_equal):
    _, found = better_worse_equal
    fig = curve.curve_figure(found, title="t")
    band, line = fig.data
    central = found[found["claim"] == curve.CENTRAL.claim]
    assert band.fill == "toself" and list(band.x) == [6400, 12800, 19200, 19200, 12800, 6400]
    assert list(band.y) == pytest.approx(list(central["ci_high"] * 100) + list(central["ci_low"][::-1] * 100))
    assert list(line.y) == pytest.approx(list(central["estimate"] * 100))
    assert [(s.y0, s.y1) for s in fig.layout.shapes] == [(0, 0)]
    assert fig.layout.xaxis.type == "log" and "points" in fig.layout.yaxis.title.text
    assert list(line.marker.color) == [curve.VERDICT_COLORS[v] for v in ("holds", "fails", "undecided")]
    md = curve.budget_markdown(found)
    assert "| 100 | 6,400 | 6.4 |" in md and md.count("| holds |") == 1 + 3 + 3


def test_curve_rows_of_a_sweep_carry_the_variant_without_the_budget(tmp_path, outputs_root):
    path = tmp_path / "curve.yaml"
    path.write_text(
        "notebook: 05_train\nfixed: {profile: quick, alpha: 2}\ngrid: {scheme: [indicator, fractional], steps: [5, 10]}\n"
    )
    s = sweep.load_sweep(path)
    rows = make_curve({2: 0.1, 5: 0.1})
    for point, variant in ((s.points[1], NTP), (s.points[3], FRAC), (s.points[2], None)):
        run_dir = outputs.run_path(s.notebook, point.run_name, outputs_root)
        run_dir.mkdir(parents=True)
        outputs.write_results(run_dir, s.notebook, {**point.resolved, "seed": 7}, {"n_queries": 40}, {})
        if variant:  # the fractional step-5 run is an ordinary one: no curve
            mine = rows[(rows["variant"] == variant) & (rows["seed"] == 0)].drop(columns=["point", "variant", "seed"])
            mine.to_csv(run_dir / "curve_per_query.csv", index=False)
    frame = report.collect(s)
    assert frame.loc[1, "label"] == "NTP (steps=10)"
    got = report.curve_frame(s, frame)
    assert report.CURVE_COLUMNS == ["point", "variant", "setting", "seed", "step", "items", "epochs", "split",
                                    "query", "cvr", "ndcg", "r1", "r2", "r3", "r4", "r5"]  # fmt: skip
    assert list(got.columns) == [c for c in report.CURVE_COLUMNS if c != "split"]  # runs without validation queries
    assert got["variant"].unique().tolist() == [NTP, FRAC] and got["seed"].eq(7).all()
    per_step = s.points[1].resolved["batch_size"] * (s.points[1].resolved.get("grad_accum") or 1)
    assert got["setting"].unique().tolist() == [f"{per_step:,} items a step, 40 held-out queries"]
    assert got["point"].unique().tolist() == [s.points[1].run_name, s.points[3].run_name] and len(got) == 2 * 2 * 40
    mine = rows[(rows["variant"] == FRAC) & (rows["seed"] == 0)]
    assert got.loc[got["variant"] == FRAC, "r3"].tolist() == pytest.approx(mine["r3"].tolist())
    assert report.curves([s, s]).equals(got)  # a sweep named twice counts once
    empty = report.curve_frame(s, frame[frame["run_name"] == s.points[2].run_name])
    assert empty.empty and list(empty.columns) == report.CURVE_COLUMNS


def test_a_learning_rate_other_than_the_profiles_is_named_in_the_setting_not_the_variant(tmp_path, outputs_root):
    """A sweep over ``lr``: one variant, a setting per rate (the profile's rate unnamed), never pooled."""
    path = tmp_path / "rates.yaml"
    path.write_text("notebook: 05_train\nfixed: {profile: quick, steps: 10}\ngrid: {lr: [0.002, 0.0005]}\n")
    s = sweep.load_sweep(path)
    rows = make_curve({2: 0.1})
    for point in s.points:
        run_dir = outputs.run_path(s.notebook, point.run_name, outputs_root)
        run_dir.mkdir(parents=True)
        outputs.write_results(run_dir, s.notebook, point.resolved, {"n_queries": 40}, {})
        mine = rows[(rows["variant"] == NTP) & (rows["seed"] == 0)].drop(columns=["point", "variant", "seed"])
        mine.to_csv(run_dir / "curve_per_query.csv", index=False)
    got = report.curve_frame(s, report.collect(s))
    per_step = s.points[0].resolved["batch_size"]
    assert got["variant"].unique().tolist() == [NTP] and got.groupby("setting", sort=False).size().tolist() == [40, 40]
    assert got["setting"].unique().tolist() == [f"{per_step:,} items a step, 40 held-out queries{suffix}"
                                                for suffix in ("", f"{curve.LR_TEXT}0.0005")]  # fmt: skip


def test_the_committed_curve_settings_name_a_rate_exactly_where_it_is_not_the_profiles():
    """A setting names a rate other than its profile's: in the committed curve data (docs/data) each
    run's stored setting names its rate exactly where it ran at another than its profile's, so a
    profile's lr edited (which would relabel committed runs) fails here first."""
    import json

    from arrank.common import paths
    from arrank.common.display import number_text

    data, checked = paths.ROOT / "docs/data", 0
    for per_query, runs in (("quick_protocol_per_query.csv.gz", "quick_protocol_runs/*.json"),
                            ("pretrained_gpu_curve_per_query.csv.gz", "gpu/curve*/*.results.json")):  # fmt: skip
        stored = pd.read_csv(data / per_query, usecols=["point", "setting"]).groupby("point")["setting"].first()
        for ran in (json.loads(f.read_text())["params"] for f in data.glob(runs)):
            other = ran["lr"] != params.profile_value("05_train", ran["profile"], "lr")
            assert stored[ran["run_name"]].endswith(f"{curve.LR_TEXT}{number_text(ran['lr'])}") == other, ran
            checked += 1
    assert checked >= 24 + 23


def test_a_run_on_several_processes_counts_the_items_of_them_all(tmp_path, outputs_root, monkeypatch):
    """N processes of ``batch_size`` B train steps of N x B items (docs/scale-out.md): results.json
    records the processes (``WORLD_SIZE``) and the curve's setting counts them."""
    assert params.items_per_step({"batch_size": 32, "grad_accum": 2}, processes=2) == 128
    path = tmp_path / "ddp.yaml"
    path.write_text("notebook: 05_train\nfixed: {profile: quick, batch_size: 32, grad_accum: 2}\ngrid: {seed: [0]}\n")
    s = sweep.load_sweep(path)
    run_dir = outputs.run_path(s.notebook, s.points[0].run_name, outputs_root)
    run_dir.mkdir(parents=True)
    monkeypatch.setenv("WORLD_SIZE", "2")
    outputs.write_results(run_dir, s.notebook, s.points[0].resolved, {"n_queries": 40}, {})
    monkeypatch.delenv("WORLD_SIZE")
    rows = make_curve({2: 0.1})
    rows[(rows["variant"] == NTP) & (rows["seed"] == 0)].drop(columns=["point", "variant", "seed"]).to_csv(
        run_dir / "curve_per_query.csv", index=False
    )
    got = report.curve_frame(s, report.collect(s))
    assert got["setting"].unique().tolist() == ["128 items a step, 40 held-out queries"]


def test_a_stopped_run_gives_the_budgets_it_scored(tmp_path, outputs_root):
    """A run stopped mid-training keeps its scored budgets in ``.curve-<run>/`` (its batch and data
    make the items and epochs); one stopped after its results.json, in ``<run>.failed-<time>/``,
    gives its whole ``curve_per_query.csv``; a point cut short is refused by name."""
    from arrank.common.outputs import DamagedResultsError
    from arrank.data.ranking import ranking_dataset
    from arrank.evaluation import budgets

    path = tmp_path / "stopped.yaml"
    path.write_text(
        "notebook: 05_train\nfixed: {profile: quick, subtree: canine.n.02, min_relevant: 1, n_eval: 8, "
        "steps: 4, eval_steps: [2, 4], alpha: 2, batch_size: 8}\ngrid: {scheme: [indicator, fractional]}\n"
    )
    s = sweep.load_sweep(path)
    ntp, frac = (outputs.run_path(s.notebook, p.run_name, outputs_root) for p in s.points)
    per_query = pd.DataFrame(
        {"query": [f"q{i}" for i in range(8)], "violation": [True] * 2 + [False] * 6, "ndcg": 0.5, "recall@1": 0.25}
    )
    curve_dir = ntp.parent / f".curve-{ntp.name}"
    curve_dir.mkdir(parents=True)
    per_query.to_csv(budgets.point_path(curve_dir, 2), index=False)
    failed = frac.parent / f"{frac.name}.failed-20261126-061327"
    failed.mkdir()
    outputs.write_results(failed, s.notebook, {**s.points[1].resolved, "seed": 3}, {"n_queries": 8}, {})
    budgets.curve_table(curve_dir, [2], 4, per_query, 8, 100).to_csv(failed / "curve_per_query.csv", index=False)
    frame = report.collect(s)
    assert frame["state"].tolist() != ["done", "done"]
    got = report.curve_frame(s, frame)
    pairs = budgets.training_pairs(ranking_dataset("wordnet", "quick", 0, 8, None, "canine.n.02", 1))
    first = got[got["point"] == s.points[0].run_name]
    assert first["step"].unique().tolist() == [2] and first["variant"].unique().tolist() == ["NTP"]
    assert first["items"].eq(16).all() and first["epochs"].tolist() == pytest.approx([16 / pairs] * 8)
    assert first["cvr"].sum() == 2 and first["setting"].iloc[0] == "8 items a step, 8 held-out queries"
    second = got[got["point"] == s.points[1].run_name]
    assert second["step"].tolist() == [2] * 8 + [4] * 8 and second["seed"].eq(3).all()
    assert second["epochs"].tolist() == pytest.approx([0.16] * 8 + [0.32] * 8)
    per_query.assign(ndcg=0.75).to_csv(budgets.point_path(curve_dir, 3), index=False)  # each point its own rows
    first = report.curve_frame(s, frame).query(f"point == '{s.points[0].run_name}'")
    assert first.groupby("step")["ndcg"].mean().to_dict() == {2: 0.5, 3: 0.75}
    per_query.head(7).to_csv(budgets.point_path(curve_dir, 2), index=False)
    with pytest.raises(DamagedResultsError, match="step-0000002.csv"):
        report.curve_frame(s, frame)


def test_a_stopped_runs_points_are_held_to_its_validation_queries_too(tmp_path, outputs_root):
    """With ``n_dev`` a point holds each validation query of the point's data once: one short is refused by name."""
    from arrank.common.outputs import DamagedResultsError
    from arrank.evaluation import budgets

    path = tmp_path / "dev.yaml"
    path.write_text(
        "notebook: 05_train\nfixed: {profile: quick, subtree: canine.n.02, min_relevant: 1, n_eval: 8, n_dev: 3, "
        "steps: 4, eval_steps: [2, 4], batch_size: 8}\ngrid: {scheme: [indicator]}\n"
    )
    s = sweep.load_sweep(path)
    run = outputs.run_path(s.notebook, s.points[0].run_name, outputs_root)
    (curve_dir := run.parent / f".curve-{run.name}").mkdir(parents=True)
    rows = lambda n, split: pd.DataFrame(
        {"query": [f"{split}{i}" for i in range(n)], "violation": False, "ndcg": 0.5, "split": split}
    )
    whole = pd.concat([rows(5, "test"), rows(3, outputs.DEV)], ignore_index=True)  # n_eval 8: 5 test, 3 validation
    whole.to_csv(budgets.point_path(curve_dir, 2), index=False)
    assert report.curve_frame(s).groupby("split")["query"].nunique().to_dict() == {"dev": 3, "test": 5}
    whole.head(7).to_csv(budgets.point_path(curve_dir, 2), index=False)
    with pytest.raises(
        DamagedResultsError, match=r"step-0000002.csv is damaged \(2 validation rows where its run scored 3"
    ):
        report.curve_frame(s)


def test_a_stopped_run_on_ones_own_data_is_read_only_from_the_file_it_trained_on(tmp_path, outputs_root, capsys):
    """A stopped run's budgets on one's own data rebuild its queries from the file: the data_digest its
    checkpoints recorded is checked as notebook 06 checks a train_run's (an edited file refused in one
    line; no checkpoints: read, with a notice that it cannot be checked)."""
    import json
    import shutil

    from arrank.common import paths
    from arrank.common.params import ParamError
    from arrank.evaluation import budgets

    data = tmp_path / "mine.jsonl"
    shutil.copy(paths.ROOT / "data/fixtures/custom/recipes.jsonl", data)
    path = tmp_path / "own.yaml"
    path.write_text(
        f"notebook: 05_train\nfixed: {{profile: quick, dataset: custom, data_path: '{data}', n_eval: 8, steps: 4, "
        "eval_steps: [2, 4], batch_size: 8}\ngrid: {scheme: [indicator]}\n"
    )
    s = sweep.load_sweep(path)
    run = outputs.run_path(s.notebook, s.points[0].run_name, outputs_root)
    curve_dir = run.parent / f".curve-{run.name}"
    curve_dir.mkdir(parents=True)
    per_query = pd.DataFrame({"query": [f"q{i}" for i in range(8)], "violation": False, "ndcg": 0.5})
    per_query.to_csv(budgets.point_path(curve_dir, 2), index=False)
    got = report.curve_frame(s)
    assert got["step"].tolist() == [2] * 8 and "cannot be checked" in capsys.readouterr().out
    checkpoints = run.parent / f".checkpoints-{run.name}"
    outputs.record_resume_params(checkpoints, s.points[0].resolved)  # what a run records as it starts
    assert json.loads((checkpoints / "params.json").read_text())["data_digest"]
    assert report.curve_frame(s)["step"].tolist() == [2] * 8 and "cannot be checked" not in capsys.readouterr().out
    data.write_text(data.read_text() + data.read_text().splitlines()[0].replace("apple-desserts", "new") + "\n")
    with pytest.raises(ParamError, match=rf"^stopped run '{run.name}' trained on .*mine.jsonl with data_digest "):
        report.curve_frame(s)


GPU, CPU = "64 items a step, 40 held-out queries", "4 items a step, 40 held-out queries"


@pytest.fixture(scope="module")
def two_settings():
    """Two settings scored at the same steps with opposite differences: fractional above NTP in one,
    below in the other (pooled, they would cancel to undecided)."""
    gpu = make_curve({100: 0.2, 200: 0.2}).assign(setting=GPU)
    cpu = make_curve({100: -0.2, 200: -0.2}, seed=1).assign(setting=CPU)
    cpu["point"] = "cpu-" + cpu["point"]
    rows = pd.concat([gpu, cpu], ignore_index=True)
    return rows, curve.curve_findings(rows, (curve.CENTRAL,), n_resamples=999)


def test_settings_are_never_pooled(two_settings):
    rows, found = two_settings
    assert list(found.columns) == ["claim", "setting", *curve.FINDING_COLUMNS[1:]]
    assert found.groupby("step").size().to_dict() == {100: 2, 200: 2}  # two verdict rows per budget
    by = found.set_index(["setting", "step"])
    for step in (100, 200):
        assert by.loc[(GPU, step), "verdict"] == "holds" and by.loc[(GPU, step), "ci_low"] > 0
        assert by.loc[(CPU, step), "verdict"] == "fails" and by.loc[(CPU, step), "ci_high"] < 0
        assert "40 queries, paired; 2 / 2 runs" in by.loc[(GPU, step), "numbers"]
    assert turning(found, (curve.CENTRAL,)) == [
        "holds at every budget measured, from step 100 (6,400 items, 6.4 epochs) to step 200 (12,800 items, 12.8 epochs)",
        "does not turn to holds by the largest budget, step 200 (12,800 items, 12.8 epochs): fails there",
    ]
    last = curve.budget_verdicts(found)
    assert [(f.claim, f.verdict) for f in last] == [
        (f"{curve.CENTRAL.claim} ({GPU})", "holds"),
        (f"{curve.CENTRAL.claim} ({CPU})", "fails"),
    ]
    md = curve.budget_markdown(found)
    assert "| setting | step |" in md and f"| {GPU} | 100 | 6,400 |" in md and f"| {CPU} | 200 | 12,800 |" in md
    m = curve.curve_metrics(rows[rows["step"] == 100], n_resamples=99)
    assert list(m.columns) == ["variant", "setting", *curve.METRIC_COLUMNS[1:]] and len(m) == 2 * 2 * 7
    pairs = m[["variant", "setting"]].drop_duplicates().values.tolist()
    assert pairs == [[NTP, GPU], [NTP, CPU], [FRAC, GPU], [FRAC, CPU]]
    assert list(curve.metrics_table(m).columns[:3]) == ["variant", "setting", "step"]


def test_one_setting_gives_the_findings_as_before(better_worse_equal):
    rows, found = better_worse_equal
    named = curve.curve_findings(rows.assign(setting=GPU), n_resamples=999)
    assert list(named.columns) == ["claim", "setting", *curve.FINDING_COLUMNS[1:]] and named["setting"].eq(GPU).all()
    pd.testing.assert_frame_equal(named.drop(columns="setting"), found)
    assert turning(named) == turning(found)
    assert curve.budget_verdicts(named) == curve.budget_verdicts(found)
    assert curve.budget_markdown(named).replace(f"; {GPU})", ")") == curve.budget_markdown(found)


def test_the_figure_draws_one_band_per_setting(two_settings):
    _, found = two_settings
    fig = curve.curve_figure(found, title="t")
    bands = [t for t in fig.data if t.fill == "toself"]
    lines = [t for t in fig.data if t.fill != "toself"]
    assert len(bands) == len(lines) == 2 and [t.name for t in lines] == [GPU, CPU]
    colors = {t.line.color for t in lines}
    assert len(colors) == 2 and not colors & set(curve.VERDICT_COLORS.values())
    assert [list(t.x) for t in bands] == [[6400, 12800, 12800, 6400]] * 2
    assert list(lines[1].y) == pytest.approx(list(found.loc[found["setting"] == CPU, "estimate"] * 100))
    assert list(lines[1].marker.color) == [curve.VERDICT_COLORS["fails"]] * 2
    assert [t.marker.line.color for t in lines] == [t.line.color for t in lines]  # ringed in their setting's colour
    assert list(lines[0].text) == ["6.4", "13"] and list(lines[1].text) == ["", ""]  # once a budget
    assert [(sh.y0, sh.y1) for sh in fig.layout.shapes] == [(0, 0)] and fig.layout.xaxis.type == "log"


def test_a_budgets_epochs_and_the_claims_means_are_the_runs_means():
    """An epoch counts the training queries' pairs, which a seed's split can change: a budget's epochs are
    the mean over the runs (seed 0: 6.4, seed 1: 9.6 at step 100, so 8.0). ``a_mean`` / ``b_mean`` are the
    claim's own sides: CVR is 0 for fractional (a) and 1 for NTP (b), R@1 0.9 for both (``make_curve``)."""
    rows = make_curve({100: 0.2})
    rows.loc[rows["seed"] == 1, "epochs"] *= 1.5
    found = curve.curve_findings(rows, n_resamples=99).set_index("claim")
    assert found["epochs"].tolist() == pytest.approx([8.0] * 3) and found["items"].eq(6400).all()
    cvr, r1 = found.loc[curve.COMPARISONS[2].claim], found.loc[curve.COMPARISONS[1].claim]
    assert (cvr["a"], cvr["a_mean"], cvr["b"], cvr["b_mean"]) == (FRAC, 0.0, NTP, 1.0)
    assert (r1["a"], r1["b"]) == (NTP, FRAC) and (r1["a_mean"], r1["b_mean"]) == pytest.approx((0.9, 0.9))
    m = curve.curve_metrics(rows, n_resamples=99)
    assert m["epochs"].tolist() == pytest.approx([8.0] * len(m))


def test_each_setting_and_budget_is_its_own_holm_family(two_settings):
    """FAMILY: the claims of one budget of one setting; with one claim decided, each family is that claim."""
    _, found = two_settings
    assert found["family_size"].eq(1).all() and (found["p_holm"] == found["p_value"]).all()


def test_a_metrics_interval_stays_within_0_and_1_and_shows_its_half_width():
    """Two runs of R@1 1.0 and 0.9: the seeds' spread carries the interval past 1, cut at 1 (a fraction).
    The table shows mean ± half the interval's width in points: [40%, 60%] around 50% is ± 10.0."""
    rows = make_curve({100: 0.2})
    rows.loc[(rows["variant"] == NTP) & (rows["seed"] == 0), "r1"] = 1.0
    m = curve.curve_metrics(rows, n_resamples=99).set_index(["variant", "metric"])
    r1 = m.loc[(NTP, "r1")]
    assert r1["mean"] == pytest.approx(0.95) and r1["ci_high"] == 1.0 and 0 <= r1["ci_low"] < 0.95
    by_hand = pd.DataFrame(
        [
            [NTP, 100, 6400, 6.4, 2, 40, metric, 0.5, lo, hi]
            for metric, lo, hi in (("r2", 0.4, 0.6), ("r3", np.nan, np.nan))
        ],
        columns=curve.METRIC_COLUMNS,
    )
    shown = curve.metrics_table(by_hand)
    assert (shown.loc[0, "R@2 (%)"], shown.loc[0, "R@3 (%)"]) == ("50.0 ± 10.0", "50.0")


def test_a_claims_threshold_is_drawn_and_said_in_points(better_worse_equal):
    """Table 1's R@1 check: NTP − fractional α=2 above −2 points (``table1.NEAR``); CVR's: below 0."""
    _, found = better_worse_equal
    r1, cvr = curve.COMPARISONS[1], curve.COMPARISONS[2]
    fig = curve.curve_figure(found, claim=r1)
    assert [(s.y0, s.y1) for s in fig.layout.shapes] == [(0, 0), (-2, -2)]
    assert "claimed: difference > -2 points)" in curve.budget_markdown(found, (r1,))
    assert "claimed: difference < 0 points)" in curve.budget_markdown(found, (cvr,))
