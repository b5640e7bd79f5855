import math

import pytest

from arrank.common import params
from arrank.common.params import ParamError


def test_integer_refuses_bool_float_and_out_of_range():
    check = params.integer(2, 7)
    assert check("k", 5) == 5
    for bad, msg in [
        (True, "must be an integer"),
        (5.0, "must be an integer"),
        (8, r"out of range.*\[2, 7\]"),
        (1, "out of range"),
    ]:
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
        params.spec_for("01_de_capacity")["profile"]("profile", "fast")


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
    ns = {
        "profile": "quick",
        "seed": 0,
        "run_name": "auto",
        "k_max_exact": None,
        "mc_queries": None,
        "k_max_bound": None,
        "site_sets": None,
    }
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


@pytest.mark.parametrize("stem", sorted(params.NOTEBOOKS))
def test_every_profile_resolves_every_parameter(stem):
    """What results.json records is complete: in every profile each parameter has a value after
    resolution (05's train_queries, None = as many as held out, is resolved by the notebook from
    the queries it evaluated and recorded so)."""
    from arrank.workbook import run

    for profile in params.profiles_of(stem):
        resolved = run.prepare(stem, {"profile": profile})[2]
        unresolved = [k for k, v in resolved.items() if v is None and (stem, k) != ("05_train", "train_queries")]
        assert not unresolved, (stem, profile, unresolved)


def test_training_hyperparameters_come_from_the_definition():
    from arrank.training import train

    quick = train.profile_hyperparameters("quick")
    assert (quick["steps"], quick["lr"], quick["optimizer"], quick["save_steps"]) == (1200, 2e-3, "adamw", 300)
    assert train.profile_hyperparameters("paper")["optimizer"] == "adafactor"
    with pytest.raises(ValueError, match=r"\['lr'\] are unresolved"):
        train.hyperparameters({**quick, "lr": None})
    p = params.resolve_profile(
        "05_train",
        {
            **{n: q.default for n, q in params.definition("05_train").items()},
            "profile": "pretrained",
            "dataset": "esci",
        },
    )
    assert (p["template"], p["steps"], p["batch_size"]) == ("esci", 80, 4)  # the template follows the dataset


def test_scheme_accepts_what_the_registry_holds():
    from arrank.training import schemes

    check = params.spec_for("05_train")["scheme"]
    assert [check("scheme", s) for s in schemes.SCHEMES] == list(schemes.SCHEMES)
    with pytest.raises(
        ParamError, match=r"scheme='linear' is not allowed; choose one of \['indicator', 'fractional', 'stepwise'\]"
    ):
        check("scheme", "linear")


def test_data_seed_is_the_seed_unless_given():
    """05's data_seed (the held-out split, negatives, prompts) follows the seed when left at None,
    so a sweep over seeds with data_seed fixed compares every seed on the same queries."""
    from arrank.workbook import run

    assert run.prepare("05_train", {"profile": "quick", "seed": 3})[2]["data_seed"] == 3
    fixed = run.prepare("05_train", {"profile": "pretrained", "seed": 3, "data_seed": 0})[2]
    assert (fixed["seed"], fixed["data_seed"]) == (3, 0)
    with pytest.raises(ParamError, match=r"data_seed=-1 is out of range"):
        run.prepare("05_train", {"profile": "quick", "data_seed": -1})


def test_over_long_values_are_refused_naming_the_parameter_and_not_echoed_whole():
    """A 10,000-character model_name is refused before any file system call (no 'File name too
    long' traceback); every refusal shows at most 80 characters of the value and its length."""
    from arrank.common.display import shown

    long = "x" * 10_000
    with pytest.raises(ParamError, match=r"model_name='x{79}\.\.\. \(10,002 characters\) is too long") as err:
        params.model_name("model_name", long)
    assert len(str(err.value)) < 400
    with pytest.raises(ParamError, match=r"is too long"):
        params.model_name("model_name", "models/" + "y" * 300 + "/model.gguf")  # a component over 255 bytes
    for check, value in ((params.RUN_NAME, "a" * 10_000), (params.text(r"[a-z]+", "letters"), "1" * 10_000)):
        with pytest.raises(ParamError) as err:
            check("p", value)
        assert "(10,002 characters)" in str(err.value) and len(str(err.value)) < 400
    assert shown("short") == "'short'" and shown(list(range(100))).endswith("(390 characters)")
