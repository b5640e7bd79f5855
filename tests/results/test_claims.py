"""The paper's claims as data (arrank.results.claims): a claim's sides resolved on a table's roles,
its point verdict, its finding from per-query data, and a new claim as one more line of a table's tuple."""

import numpy as np
import pandas as pd
import pytest

from arrank.results import statistics as S
from arrank.results import table1
from arrank.results.claims import POINT_ESTIMATE, Claim, decide_claim, evaluate, point_holds, resolve

ROLES = {"NTP": [("NTP", ("NTP",))], "each other": [("A", ("A",)), ("B", ("B1", "B2"))], "none": []}


def test_sides_resolve_on_roles_one_comparison_per_member():
    below = Claim("cvr", "words", "{a} below {b}, {quantity}", "each other", "NTP", ("cvr",), side="<")
    above = Claim("cvr", "words", "{a} − {b} above −{points:g} points, {quantity}", "each other", "NTP",
                  ("r1", "r2", "r9"), threshold=-0.02)  # fmt: skip
    parts = resolve([below, above], ROLES, ["cvr", "r1", "r2"])
    # the same two sides: variant by variant; a pooled role is broadcast; metrics cut to the columns at hand
    assert [(c.name, c.a, c.b, c.metrics) for c in parts] == [
        ("A below NTP, CVR", ("A",), ("NTP",), ("cvr",)),
        ("A − NTP above −2 points, mean R@1..R@2", ("A",), ("NTP",), ("r1", "r2")),
        ("B below NTP, CVR", ("B1", "B2"), ("NTP",), ("cvr",)),
        ("B − NTP above −2 points, mean R@1..R@2", ("B1", "B2"), ("NTP",), ("r1", "r2")),
    ]
    pairwise = {"big": [("n=8", ("d8",)), ("n=16", ("d16",))], "small": [("n=4", ("d4",)), ("n=8", ("d8",))]}
    steps = resolve([Claim("k", "w", "{a} − {b}", "big", "small", ("r1",))], pairwise, ["r1"])
    assert [(c.a, c.b) for c in steps] == [(("d8",), ("d4",)), (("d16",), ("d8",))]  # member by member
    assert resolve([Claim("k", "w", "{a}", "none", "NTP", ("cvr",))], ROLES, ["cvr"]) == []  # an empty role
    assert resolve([Claim("k", "w", "{a}", "NTP", "A", ("r5",))], ROLES, ["cvr"]) == []  # no metric at hand
    assert resolve([Claim("k", "w", "{a}", "X", "Y", ("cvr",))], ROLES, ["cvr"])[0].a == ("X",)  # a plain label
    assert Claim("k", "w", "", "a", "b", ("r2", "r3", "r4", "r5")).quantity(["r2"]) == "mean R@2"
    uneven = {"two": [("x", ("x",)), ("y", ("y",))], "three": [("p", ("p",)), ("q", ("q",)), ("r", ("r",))]}
    with pytest.raises(ValueError, match="the sides of '{a}' are 2 and 3 variants: one, or as many"):
        resolve([Claim("k", "w", "{a}", "two", "three", ("r1",))], uneven, ["r1"])
    with pytest.raises(ValueError, match=r"side='>=' of the claim 'n' is not allowed: one of \['>', '<'\]"):
        Claim("k", "w", "n", "a", "b", ("r1",), side=">=")


def test_the_point_verdict_and_inclusive_claims():
    means = {("A",): 0.30, ("NTP",): 0.60}
    value = lambda labels, metrics: means[labels]
    half = Claim("k", "w", "", ("A",), ("NTP",), ("cvr",), side="<", weight=0.5)
    assert not point_holds(half, value)  # 0.30 - 0.30 is not below 0
    assert point_holds(Claim(**{**half.__dict__, "inclusive": True}), value)  # "at most half": on it holds
    within = Claim("k", "w", "", ("A",), ("NTP",), ("r1",), threshold=-0.02, inclusive=True)
    means.update({("A",): 0.88, ("NTP",): 0.90})  # 0.88 - 0.90 = -0.020000000000000018 in floats: on the threshold
    assert point_holds(within, value) and not point_holds(Claim(**{**within.__dict__, "inclusive": False}), value)
    found = decide_claim([half], None, "CVR (%): A 30.0", value)
    assert found.verdict == "fails" and found.numbers == f"CVR (%): A 30.0; {POINT_ESTIMATE}"
    assert decide_claim([half], None, "x") is None  # no per-query data and no means: left out
    assert decide_claim([], None, "x", value) is None


def _rows(rates: dict[str, float], n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.concat(
        pd.DataFrame({"point": v, "variant": v, "seed": 0, "query": [f"q{i}" for i in range(n)],
                      "cvr": (rng.random(n) < p).astype(float)})
        for v, p in rates.items()
    )  # fmt: skip


def test_one_comparison_is_its_finding_several_are_its_parts():
    data = _rows({"A": 0.1, "B": 0.15, "NTP": 0.6})
    one = Claim("cvr", "A's CVR is below NTP's", "{a} below NTP", ("A",), ("NTP",), ("cvr",), side="<")
    f = evaluate(one, data)
    assert f.verdict == "holds" and f.claim == "A's CVR is below NTP's" and f.interval[1] < 0
    assert f.means == pytest.approx((data[data.variant == "A"].cvr.mean(), data[data.variant == "NTP"].cvr.mean()))
    assert f.estimate == pytest.approx(f.means[0] - f.means[1]) and 0 < f.p_value < 0.05
    single = decide_claim([one], data, "CVR (%): NTP 60.0; A 10.0")
    assert single.numbers.startswith("CVR (%): NTP 60.0; A 10.0; 300 queries, paired") and single.interval == f.interval
    parts = resolve([Claim("cvr", "words", "{a} below NTP", "each other", "NTP", ("cvr",), side="<")],
                    {"each other": [("A", ("A",)), ("B", ("B",))], "NTP": [("NTP", ("NTP",))]}, ["cvr"])  # fmt: skip
    both = decide_claim(parts, data, "numbers")
    assert both.verdict == "holds" and [name for name, _ in both.parts] == ["A below NTP", "B below NTP"]
    assert both.p_value == S.compound_p_value([p for _, p in both.parts])


def test_a_claim_is_one_more_line_of_a_tables_tuple():
    frame = pd.DataFrame(
        [{"state": "done", "label": label, "scheme": scheme, "alpha": alpha, "targets": "onehot", "combined": False,
          "cvr": cvr, "recall@1": r1} for label, scheme, alpha, cvr, r1 in
         (("NTP", "indicator", None, 0.6, 0.9), ("Fractional α=2", "fractional", 2.0, 0.1, 0.8))]
    )  # fmt: skip
    extra = Claim("r1_drop", "fractional α=2 loses at most 15 points of R@1", "fractional α=2 − NTP, {quantity}",
                  table1.FRACTIONAL_2, table1.NTP, ("r1",), threshold=-0.15, inclusive=True)  # fmt: skip
    found = table1.table1_findings(frame, claims=(*table1.COMPARISONS, extra))
    assert [f.claim for f in found][-1] == "fractional α=2 loses at most 15 points of R@1" and found[-1].holds
    assert found[-1].numbers.startswith("R@1 (%): fractional α=2 80.0, NTP 90.0")
    plain = Claim(
        "cvr_plain", "fractional α=2's CVR is below NTP's", "", "Fractional α=2", table1.NTP, ("cvr",), side="<"
    )
    assert table1.table1_findings(frame, claims=(plain,))[0].numbers.startswith(
        "CVR (%): Fractional α=2 10.0, NTP 60.0"
    )
    per_query = _rows({"NTP": 0.6, "Fractional α=2": 0.1}).assign(r1=1.0)
    decided = table1.table1_findings(frame, per_query, claims=(extra,))
    assert decided[0].estimate == 0.0 and decided[0].verdict == "holds" and decided[0].family_size == 1


def _fixed(column: str, values: dict[str, list[float]]) -> pd.DataFrame:
    """Per-query rows of one run per variant: ``values[variant][i]`` is query ``q<i>``'s ``column``."""
    return pd.concat(
        pd.DataFrame({"point": v, "variant": v, "seed": 0, "query": [f"q{i}" for i in range(len(x))], column: x})
        for v, x in values.items()
    )


def test_a_weighted_claim_on_per_query_data_compares_a_with_weight_times_b():
    """Section 5.2's "fractional variants at most half of NTP's CVR" on per-query data is the mean of
    a_q - 0.5 * b_q: A's CVR 0.3, NTP's 0.6 give 0.3 - 0.5 * 0.6 = 0 (unweighted it would be -0.3),
    an interval about 0, undecided; no budget "to decide" it is offered (that search assumes weight 1)."""
    data = _fixed("cvr", {"A": [1.0] * 3 + [0.0] * 7, "NTP": [1.0] * 6 + [0.0] * 4})
    half = Claim("cvr", "half", "{a}", ("A",), ("NTP",), ("cvr",), side="<", weight=0.5, inclusive=True)
    found = evaluate(half, data)
    assert found.estimate == pytest.approx(0.0, abs=1e-12) and found.means == pytest.approx((0.3, 0.6))
    assert found.interval[0] < 0 < found.interval[1] and found.verdict == "undecided"
    assert "to decide" not in decide_claim([half], data, "CVR (%): NTP 60.0; A 30.0", to_decide=True).numbers


def test_the_p_value_is_that_of_the_claims_threshold():
    """A claim "within 50 points" (threshold -0.5) when A - NTP is -0.5 on average (A's R@1 1 on half the
    queries, NTP's 1 on all): the interval is centred on the threshold, so its p-value is large
    (undecided), though it lies well clear of 0 (a p-value against 0 would be tiny)."""
    data = _fixed("r1", {"A": [1.0] * 5 + [0.0] * 5, "NTP": [1.0] * 10})
    within = Claim("r1", "within", "{a}", ("A",), ("NTP",), ("r1",), threshold=-0.5, inclusive=True)
    found = evaluate(within, data)
    assert found.estimate == pytest.approx(-0.5) and found.interval[1] < 0
    assert found.verdict == "undecided" and found.p_value > 0.5
