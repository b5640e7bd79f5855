import math

import pytest

from arrank.workbook import params
from arrank.workbook.params import ParamError


def test_integer_refuses_bool_float_and_out_of_range():
    check = params.integer(2, 7)
    assert check("k", 5) == 5
    for bad, msg in [(True, "must be an integer"), (5.0, "must be an integer"), (8, r"out of range.*\[2, 7\]"),
                     (1, "out of range")]:
        with pytest.raises(ParamError, match=msg):
            check("k", bad)


def test_number_refuses_nan_and_strings():
    check = params.number(0.0)
    assert check("alpha", 2) == 2.0
    for bad in (math.nan, "2", None):
        with pytest.raises(ParamError, match="alpha=.*must be a number"):
            check("alpha", bad)
    with pytest.raises(ParamError, match=">= 0.0"):
        check("alpha", -1)


def test_choice_names_allowed_values():
    with pytest.raises(ParamError, match=r"profile='fast' is not allowed; choose one of \['quick', 'paper'\]"):
        params.COMMON["profile"]("profile", "fast")


def test_run_name_refuses_paths():
    assert params.RUN_NAME("run_name", "alpha=2.seed-1") == "alpha=2.seed-1"
    for bad in ("../x", "a/b", "", ".hidden"):
        with pytest.raises(ParamError, match="run_name"):
            params.RUN_NAME("run_name", bad)


def test_run_names_that_collide_with_the_workbooks_markers_are_refused_by_the_rule():
    """Issue 27: '.' was refused with a message listing '.' as allowed; names that read as the
    runner's own failed / staging / rank folders or lock files were accepted."""
    for ok in ("x.failed", "lock", "x.locked", "rank1", "a.b-c=1", "x.ranking"):
        assert params.RUN_NAME("run_name", ok) == ok
    for bad in (".", "..", ".x", "x.failed-1", "x.partial-123", "zz.lock", "x.rank1", "x.rank1.failed-2"):
        with pytest.raises(ParamError) as err:
            params.RUN_NAME("run_name", bad)
        assert str(err.value).startswith(f"run_name={bad!r}") and "starts with a letter or digit" in str(err.value)
        assert "'.failed-', '.partial-', '.rank' + digits, a '.lock' ending" in str(err.value)


def _namespace(**over):
    ns = {"profile": "quick", "seed": 0, "run_name": "auto", "k_max_exact": None, "mc_queries": None,
          "k_max_bound": None, "site_sets": None}
    ns.update(over)
    return ns


def test_check_params_fills_profile_defaults_and_keeps_explicit_values():
    quick = params.check_params("01_de_capacity", _namespace(mc_queries=5))
    assert quick["k_max_exact"] == 6 and quick["mc_queries"] == 5
    paper = params.check_params("01_de_capacity", _namespace(profile="paper"))
    assert paper["k_max_exact"] == 7 and paper["site_sets"] == 3


def test_check_params_errors():
    with pytest.raises(ParamError, match=r"k_max_exact=8 is out of range"):
        params.check_params("01_de_capacity", _namespace(k_max_exact=8))
    ns = _namespace()
    del ns["seed"]
    with pytest.raises(ParamError, match=r"\['seed'\] are not defined"):
        params.check_params("01_de_capacity", ns)
    with pytest.raises(ParamError, match="unknown parameter"):
        params.validate("01_de_capacity", {**_namespace(), "bogus": 1})
    with pytest.raises(ParamError, match="no parameter spec for notebook '99_x'"):
        params.spec_for("99_x")
