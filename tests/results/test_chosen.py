"""Each method at its budget chosen on the validation queries (``arrank.results.chosen``)."""

import numpy as np
import pandas as pd
import pytest

from arrank.results import chosen, curve

CONSTANT, COSINE = (f"64 items a step, 30 held-out queries{curve.SCHEDULE_TEXT[k]}" for k in ("constant", "cosine"))


def frame(dev: dict, test: dict, seeds=(0, 1, 2), n_dev=20, n_test=30, noise=0.05) -> pd.DataFrame:
    """Curve rows of NTP and fractional α=2: per variant a {(setting, step): value} of the validation and
    the test queries' R@2..R@5 (and R@1, CVR), each query and seed off it by seeded noise."""
    rng = np.random.default_rng(0)
    rows = []
    for variant in (curve.NTP, curve.FRACTIONAL):
        for seed in seeds:
            for (setting, step), d in dev[variant].items():
                point = f"{variant}-{seed}-{setting[-8:]}" + (f"-{step}" if setting == COSINE else "")
                for split, base, n in (("dev", d, n_dev), ("test", test[variant][(setting, step)], n_test)):
                    v = base + noise * rng.standard_normal(n)
                    rows += [
                        dict(point=point, variant=variant, setting=setting, seed=seed, step=step, items=64 * step,
                             epochs=step / 10, split=split, query=f"{split}{q}", cvr=1 - x, ndcg=x, r1=x,
                             **{f"r{k}": x for k in (2, 3, 4, 5)})
                        for q, x in enumerate(v)
                    ]  # fmt: skip
    return pd.DataFrame(rows)


def by_hand(rows: pd.DataFrame, variant: str, metric: str = "r2") -> float:
    """The test mean at each seed's best validation budget, averaged over the seeds (plain pandas)."""
    rows = rows[rows["variant"] == variant]
    dev = rows[rows["split"] == "dev"].groupby(["seed", "setting", "step"])[metric].mean()
    best = dev.groupby(level="seed").idxmax()
    test = rows[rows["split"] == "test"].groupby(["seed", "setting", "step"])[metric].mean()
    return float(np.mean([test[best[s]] for s in best.index]))


BUDGETS = [(CONSTANT, 10), (CONSTANT, 20), (COSINE, 10), (COSINE, 20)]


def test_each_method_is_read_at_its_validation_best_budget():
    # NTP is best on validation at constant step 10, fractional at cosine step 20; the test values differ
    dev = {
        curve.NTP: dict(zip(BUDGETS, [0.80, 0.70, 0.75, 0.72])),
        curve.FRACTIONAL: dict(zip(BUDGETS, [0.6, 0.7, 0.72, 0.85])),
    }
    test = {
        curve.NTP: dict(zip(BUDGETS, [0.78, 0.90, 0.90, 0.90])),
        curve.FRACTIONAL: dict(zip(BUDGETS, [0.5, 0.5, 0.5, 0.83])),
    }
    rows = frame(dev, test)
    found = chosen.chosen_finding(rows, curve.CENTRAL, n_resamples=999)
    expected = by_hand(rows, curve.FRACTIONAL) - by_hand(rows, curve.NTP)
    assert found.estimate == pytest.approx(expected, rel=1e-9)
    assert found.estimate == pytest.approx(0.83 - 0.78, abs=0.03)  # not the test-best budget of NTP (0.90)
    assert found.means == pytest.approx((by_hand(rows, curve.FRACTIONAL), by_hand(rows, curve.NTP)), rel=1e-9)
    assert found.interval[0] < found.estimate < found.interval[1] and found.verdict == "holds"
    assert "30 test queries" in found.numbers and "20 validation queries" in found.numbers
    picks = chosen.choices(rows)
    assert set(zip(picks["variant"], picks["setting"], picks["step"])) == {
        (curve.FRACTIONAL, COSINE, 20),
        (curve.NTP, CONSTANT, 10),
    }
    assert len(picks) == 6 and picks["data_setting"].eq("64 items a step, 30 held-out queries").all()
    assert chosen.choices_text(picks) == (
        f"{curve.FRACTIONAL}: step 20 cosine (3 of 3 seeds; the largest budget offered); "
        f"{curve.NTP}: step 10 constant (3 of 3 seeds)"
    )


def test_a_learning_rate_other_than_the_profiles_is_one_more_candidate():
    # runs at lr 0.001 beside the profile's rate: one data setting, the rate chosen with the budget
    faster = f"{COSINE}{curve.LR_TEXT}0.001"
    assert curve.data_setting(faster) == curve.data_setting(COSINE) == "64 items a step, 30 held-out queries"
    assert [curve.choice_text(s) for s in (faster, CONSTANT, "4 items a step, 9 held-out queries")] == [
        "cosine, lr 0.001", "constant", ""
    ]  # fmt: skip
    budgets = [(COSINE, 10), (faster, 10)]
    dev = {curve.NTP: dict(zip(budgets, [0.7, 0.8])), curve.FRACTIONAL: dict(zip(budgets, [0.8, 0.7]))}
    picks = chosen.choices(frame(dev, dev))
    assert chosen.choices_text(picks) == (
        f"{curve.FRACTIONAL}: step 10 cosine (3 of 3 seeds; the largest budget offered); "
        f"{curve.NTP}: step 10 cosine, lr 0.001 (3 of 3 seeds; the largest budget offered)"
    )


def test_choices_choose_on_the_queries_the_finding_shares():
    # NTP's step 10 is best on validation queries dev0-9, step 20 on all 20; a fractional run that lacks
    # dev10-19 leaves dev0-9 shared, where chosen_finding chooses: the table names the same budget
    same = {v: dict(zip(BUDGETS[:2], [0.7, 0.7])) for v in (curve.NTP, curve.FRACTIONAL)}
    rows = frame(same, same, noise=0.0)
    ntp_dev = (rows["variant"] == curve.NTP) & (rows["split"] == "dev")
    first = rows["query"].isin([f"dev{q}" for q in range(10)])
    recall = [f"r{k}" for k in (2, 3, 4, 5)]
    for step, (a, b) in ((10, (0.8, 0.5)), (20, (0.7, 0.9))):
        at = ntp_dev & (rows["step"] == step)
        rows.loc[at & first, recall], rows.loc[at & ~first, recall] = a, b
    partial = (rows["variant"] == curve.FRACTIONAL) & (rows["seed"] == 0) & (rows["split"] == "dev") & ~first
    picks = chosen.choices(rows[~partial])
    assert picks.loc[picks["variant"] == curve.NTP, "step"].tolist() == [10, 10, 10]
    assert chosen.choices(rows).loc[lambda p: p["variant"] == curve.NTP, "step"].tolist() == [20, 20, 20]


def test_the_interval_includes_a_choice_that_flips_inside_resamples():
    # NTP's two budgets are all but tied on validation and far apart on test: which one a resample picks
    # moves its estimate, so re-making the choice widens the interval
    dev = {curve.NTP: dict(zip(BUDGETS[:2], [0.700, 0.701])), curve.FRACTIONAL: dict(zip(BUDGETS[:2], [0.8, 0.6]))}
    test = {curve.NTP: dict(zip(BUDGETS[:2], [0.60, 0.90])), curve.FRACTIONAL: dict(zip(BUDGETS[:2], [0.8, 0.6]))}
    rows = frame(dev, test, seeds=(0,), noise=0.02)  # one seed: the fixed choice's interval holds the queries alone
    again = chosen.chosen_finding(rows, curve.CENTRAL, n_resamples=999)
    fixed = chosen.chosen_finding(rows, curve.CENTRAL, n_resamples=999, rechoose=False)
    assert again.estimate == fixed.estimate
    width = lambda f: f.interval[1] - f.interval[0]
    assert width(again) > 3 * width(fixed)


def test_runs_without_validation_give_no_chosen_finding():
    rows = frame({v: {BUDGETS[0]: 0.5} for v in (curve.NTP, curve.FRACTIONAL)},
                 {v: {BUDGETS[0]: 0.5} for v in (curve.NTP, curve.FRACTIONAL)})  # fmt: skip
    assert chosen.chosen_findings(rows.drop(columns="split")) == []
    assert chosen.chosen_findings(rows[rows["split"] == "test"]) == []
    assert len(curve.test_rows(rows)) == len(rows[rows["split"] == "test"])  # the per-budget claims read test rows


def test_the_claims_at_the_chosen_budgets_are_one_holm_family():
    dev = {v: dict(zip(BUDGETS, [0.7, 0.8, 0.6, 0.65])) for v in (curve.NTP, curve.FRACTIONAL)}
    test = {curve.NTP: dict(zip(BUDGETS, [0.7] * 4)), curve.FRACTIONAL: dict(zip(BUDGETS, [0.75] * 4))}
    found = chosen.chosen_findings(frame(dev, test), n_resamples=199)
    assert [f.claim for _, f in found] == [c.claim for c in curve.COMPARISONS]
    assert {f.family_size for _, f in found} == {3} and all(f.p_holm >= f.p_value for _, f in found)


RECALL = [f"r{k}" for k in (2, 3, 4, 5)]


def test_a_weighted_claim_is_decided_at_both_chosen_budgets():
    """The CVR claim a - ½ b (side <) at the validation-best budgets: fractional at step 20 (test R 0.9,
    CVR 0.1), NTP at step 10 (test R 0.6, CVR 0.4): -0.1 = 0.1 - ½ · 0.4. Without spread (every query and
    seed alike) each resample gives the same -0.1, so the interval is that point and the claim holds."""
    dev = {curve.NTP: dict(zip(BUDGETS[:2], [0.8, 0.6])), curve.FRACTIONAL: dict(zip(BUDGETS[:2], [0.6, 0.8]))}
    test = {curve.NTP: dict(zip(BUDGETS[:2], [0.6, 0.9])), curve.FRACTIONAL: dict(zip(BUDGETS[:2], [0.5, 0.9]))}
    found = chosen.chosen_finding(frame(dev, test, noise=0.0), curve.COMPARISONS[2], n_resamples=199)
    assert found.estimate == pytest.approx(-0.1, abs=1e-12) and found.means == pytest.approx((0.1, 0.4), abs=1e-12)
    assert found.interval == pytest.approx((-0.1, -0.1), abs=1e-12) and found.verdict == "holds"


def test_the_budget_is_chosen_by_validation_recall_2_to_5_not_1():
    """``CHOICE`` is the central claim's R@2..R@5: step 10 has the better R@1 (0.9 vs 0.1) but the worse
    mean R@2..R@5 (0.5 vs 0.6) on validation, so step 20 is chosen, with validation mean 0.6 (60.0 %)."""
    same = {v: dict(zip(BUDGETS[:2], [0.5, 0.5])) for v in (curve.NTP, curve.FRACTIONAL)}
    rows = frame(same, same, noise=0.0)
    for step, r1, rest in ((10, 0.9, 0.5), (20, 0.1, 0.6)):
        at = (rows["split"] == "dev") & (rows["step"] == step)
        rows.loc[at, "r1"], rows.loc[at, RECALL] = r1, rest
    picks = chosen.choices(rows)
    assert picks["step"].tolist() == [20] * 6 and picks["dev_mean"].tolist() == pytest.approx([0.6] * 6)
    assert chosen.choices_table(picks)["validation mean R@2..R@5 (%)"].tolist() == [60.0] * 6


def test_the_interval_resamples_the_seeds():
    """NTP's three seeds score 0.5, 0.6, 0.7 on every test query, fractional 0.8: the estimate is
    0.8 - 0.6 = 0.2. A resample of three seeds that draws one seed thrice (probability 1/27 = 3.7% > 2.5%
    for each extreme) gives 0.1 or 0.3, so the 95% percentile interval is [0.1, 0.3]."""
    one = {v: {BUDGETS[0]: 0.7} for v in (curve.NTP, curve.FRACTIONAL)}
    rows = frame(one, one, noise=0.0)
    test = rows["split"] == "test"
    rows.loc[test & (rows["variant"] == curve.FRACTIONAL), RECALL] = 0.8
    for seed, value in enumerate((0.5, 0.6, 0.7)):
        rows.loc[test & (rows["variant"] == curve.NTP) & (rows["seed"] == seed), RECALL] = value
    found = chosen.chosen_finding(rows, curve.CENTRAL, n_resamples=999)
    assert found.estimate == pytest.approx(0.2, abs=1e-12)
    assert found.interval == pytest.approx((0.1, 0.3), abs=1e-12)


def test_a_query_without_the_metric_is_left_out():
    """A test query with no R@2..R@5 (fewer than 2 relevant docIDs) is no query of the claim: fractional
    0.8 and NTP 0.7 on the other 29 give 0.1, not 29/30 of it."""
    one = {curve.NTP: {BUDGETS[0]: 0.7}, curve.FRACTIONAL: {BUDGETS[0]: 0.8}}
    rows = frame(one, one, noise=0.0)
    rows.loc[rows["query"] == "test0", RECALL] = np.nan
    found = chosen.chosen_finding(rows, curve.CENTRAL, n_resamples=99)
    assert found.estimate == pytest.approx(0.1, abs=1e-12) and found.means == pytest.approx((0.8, 0.7), abs=1e-12)
    with pytest.raises(ValueError, match="fewer than 2 queries"):
        chosen.chosen_finding(frame(one, one, n_test=1), curve.CENTRAL, n_resamples=99)


def test_candidates_are_the_budgets_every_seed_has():
    """NTP's seed 1 lacks step 20 (the better one on validation): the candidates are the budgets all of
    NTP's seeds have, so every seed of NTP is read at step 10."""
    dev = {v: dict(zip(BUDGETS[:2], [0.6, 0.8])) for v in (curve.NTP, curve.FRACTIONAL)}
    rows = frame(dev, dev, noise=0.0)
    rows = rows[~((rows["variant"] == curve.NTP) & (rows["seed"] == 1) & (rows["step"] == 20))]
    picks = chosen.choices(rows)
    assert picks.loc[picks["variant"] == curve.NTP, "step"].tolist() == [10, 10, 10]
    assert picks.loc[picks["variant"] == curve.FRACTIONAL, "step"].tolist() == [20, 20, 20]
