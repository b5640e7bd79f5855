import json
import math
import re
import subprocess
import sys

import pytest

from arrank.common import params, paths
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
    for bad in (math.nan, math.inf, -math.inf, "2", None):
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
    """'.' was refused with a message listing '.' as allowed; names that read as the
    runner's own failed / staging / rank folders or lock files were accepted."""
    for ok in ("x.failed", "lock", "x.locked", "rank1", "a.b-c=1", "x.ranking"):
        assert params.RUN_NAME("run_name", ok) == ok
    for bad in (".", "..", ".x", "x.failed-1", "x.partial-123", "zz.lock", "x.rank1", "x.rank1.failed-2"):
        with pytest.raises(ParamError) as err:
            params.RUN_NAME("run_name", bad)
        assert str(err.value).startswith(f"run_name={bad!r}") and "starts with a letter or digit" in str(err.value)
        assert "'.failed-', '.partial-', '.rank' + digits, a '.lock' ending" in str(err.value)


STEMS = sorted(p.stem for p in paths.NOTEBOOKS.glob("[0-9][0-9]_*.py"))


def _namespace(**over):
    """Notebook 01's parameters as its cell leaves them, with ``over`` set."""
    return {**{n: p.default for n, p in params.spec("01_de_capacity").items()}, **over}


def test_the_cell_is_the_spec_read_by_papermill():
    """Name, type, the quick profile's value and the meaning come from the parameters cell, read
    with papermill's parser; the rules and the other profiles' values from params."""
    steps = params.spec("05_train")["steps"]
    assert (steps.type, steps.default, steps.help) == ("int", 1200, "optimizer steps, 0 for none (zero-shot)")
    assert dict(steps.profiles) == {"pretrained": 80, "paper": 10_000}
    data_seed = params.spec("05_train")["data_seed"]  # an int whose cell value is None: None allowed
    assert (data_seed.type, data_seed.default, data_seed.check("data_seed", None)) == ("int", None, None)
    with pytest.raises(ParamError, match=r"steps=None must be an integer"):
        steps.check("steps", None)
    with pytest.raises(ParamError, match=r"steps=-1 is out of range: allowed in \[0, 10000000\]"):
        steps.check("steps", -1)


def test_a_cell_line_papermill_cannot_read_is_an_error():
    """papermill's parser skips a line whose comment holds '=' (and any line not `name: type =
    literal`): the spec refuses it, naming the parameter, rather than losing it."""
    assert params.parse_cell('a: int = 1  # one\nb: str = "x"  # two\n', "t") == [
        ("a", "int", 1, "one"),
        ("b", "str", "x", "two"),
    ]
    with pytest.raises(ParamError, match="papermill cannot read parameter alpha"):
        params.parse_cell("alpha: float = 2.0  # lambda(r) = 1 / r**alpha\n", "t")
    with pytest.raises(ParamError, match="is not `name: type = literal"):
        params.parse_cell("a = 1  # no type\n", "t")
    with pytest.raises(ParamError, match="parameter a is not a plain literal"):
        params.parse_cell("a: int = 1 + 1  # sum\n", "t")


def test_check_params_applies_the_profile_to_values_left_as_the_cell_has_them(capsys, monkeypatch):
    """From JupyterLab (no runner): a value the cell leaves as the file has it takes the profile's,
    and check_params prints which; a value changed in the cell is kept."""
    monkeypatch.delenv(params.PARAMS_ENV, raising=False)
    quick = params.check_params("01_de_capacity", _namespace(mc_queries=5))
    assert quick["k_max_exact"] == 6 and quick["mc_queries"] == 5 and capsys.readouterr().out == ""
    paper = params.check_params("01_de_capacity", _namespace(profile="paper", site_sets=2))
    assert (paper["k_max_exact"], paper["mc_queries"], paper["site_sets"]) == (7, 500_000, 2)
    said = capsys.readouterr().out
    assert said.startswith("profile 'paper' sets k_max_exact = 7, mc_queries = 500000") and "site_sets" not in said


def test_check_params_in_a_runner_kernel_takes_the_resolved_values(monkeypatch):
    """Under the runner the values were resolved before the kernel started: check_params returns
    them, and refuses a namespace that differs from them."""
    from arrank.workbook import run

    resolved = run.prepare("01", {"profile": "paper", "run_name": "r"})[2]
    monkeypatch.setenv(params.PARAMS_ENV, json.dumps(resolved))
    assert params.check_params("01_de_capacity", dict(resolved)) == resolved
    with pytest.raises(ParamError, match=r"\['site_sets'\] differ from what the runner resolved"):
        params.check_params("01_de_capacity", {**resolved, "site_sets": 1})
    # 07's alphas: the cell's [0, 1, ...] is not injected (it is the value that runs); the kernel
    # returns the resolved floats, as results.json records them
    source, injected, resolved = run.prepare("07", {"run_name": "r"})
    assert "alphas" not in injected and resolved["alphas"] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    monkeypatch.setenv(params.PARAMS_ENV, json.dumps(resolved))
    kernel = {**run.parameters_cell(source), **injected}
    assert json.dumps(params.check_params("07_de_ce_baselines", kernel)) == json.dumps(resolved)


def test_check_params_errors(monkeypatch):
    monkeypatch.delenv(params.PARAMS_ENV, raising=False)
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


@pytest.mark.parametrize("stem", STEMS)
def test_every_profile_resolves_every_parameter(stem):
    """What results.json records is complete: in every profile each parameter has a value after
    resolution (05's train_queries, None = as many as held out, is resolved by the notebook from
    the queries it evaluated and recorded so)."""
    from arrank.workbook import run

    for profile in params.profiles_of(stem):
        resolved = run.prepare(stem, {"profile": profile})[2]
        unresolved = [k for k, v in resolved.items() if v is None and (stem, k) != ("05_train", "train_queries")]
        assert not unresolved, (stem, profile, unresolved)


@pytest.mark.parametrize("stem", STEMS)
def test_runner_kernel_and_jupyterlab_run_the_same_values(stem, monkeypatch, capsys):
    """In every profile: the kernel under the runner (the cell, then papermill's injected values)
    and a reader in JupyterLab who only sets ``profile`` in the cell get the values the runner
    resolved, to the JSON type (results.json)."""
    from arrank.workbook import run

    for profile in params.profiles_of(stem):
        source, injected, resolved = run.prepare(stem, {"profile": profile})
        cell = run.parameters_cell(source)
        monkeypatch.setenv(params.PARAMS_ENV, json.dumps(resolved))
        assert json.dumps(params.check_params(stem, {**cell, **injected})) == json.dumps(resolved)
        monkeypatch.delenv(params.PARAMS_ENV)
        lab = params.check_params(stem, {**cell, "profile": profile})
        assert json.dumps({**lab, "run_name": resolved["run_name"]}) == json.dumps(resolved), profile


@pytest.mark.parametrize("stem", STEMS)
def test_each_fact_is_written_once(stem):
    """No parameter's name, default or meaning is written twice: the cell holds the names, the
    quick values and the meanings; params holds rules and the other profiles' values only for names
    the cell has, a profile value never repeats the cell's, and no meaning is copied into lib."""
    cell = params.spec(stem)
    assert set(params.RULES.get(stem, {})) <= set(cell), "a rule for a parameter the cell lacks"
    lib = (paths.ROOT / "lib" / "arrank" / "common" / "params.py").read_text()
    for profile, values in params.PROFILES.get(stem, {}).items():
        assert set(values) <= set(cell), (profile, sorted(set(values) - set(cell)))
        same = [n for n, v in values.items() if v == cell[n].default]
        assert not same, f"{stem} {profile}: {same} repeat the cell's values"
    for name, p in cell.items():
        assert p.help and repr(p.help) not in lib and f'"{p.help}"' not in lib, (
            f"{stem}.{name}: meaning missing or copied"
        )
        assert not re.search(r"\bNone: (the profile|from profile|\d)", p.help), (
            f"{stem}.{name}: a profile's value in words"
        )
        p.check(name, p.default)  # the cell's values are valid


def test_training_hyperparameters_come_from_the_definition():
    from arrank.training import train

    quick = train.profile_hyperparameters("quick")
    assert (quick["steps"], quick["lr"], quick["optimizer"], quick["save_steps"]) == (1200, 2e-3, "adamw", 300)
    assert train.profile_hyperparameters("paper")["optimizer"] == "adafactor"
    with pytest.raises(ValueError, match=r"\['lr'\] are unresolved"):
        train.hyperparameters({**quick, "lr": None})
    p = params.profile_values("05_train", "pretrained", {"dataset": "esci"})
    assert (p["template"], p["steps"], p["batch_size"]) == ("esci", 80, 4)  # the template follows the dataset
    explicit = params.profile_values("05_train", "pretrained", {"steps": 1200, "template": "short"})
    assert (explicit["steps"], explicit["template"]) == (1200, "wordnet_short")  # set on purpose: kept
    esci = params.profile_values("05_train", "paper", {"dataset": "esci"})  # Appendix B's ESCI, Table 2's queries
    assert (esci["max_length"], esci["batch_size"] * esci["grad_accum"], esci["n_eval"]) == (8192, 32, 310)
    wordnet = params.profile_values("05_train", "paper", {"dataset": "wordnet", "max_length": 512})
    assert (wordnet["max_length"], wordnet["batch_size"] * wordnet["grad_accum"], wordnet["n_eval"]) == (512, 64, 5000)
    assert params.profile_values("06_evaluate", "paper", {"dataset": "esci", "n_eval": 50})["n_eval"] == 50  # kept


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


def test_eval_steps_are_sorted_within_the_run_and_lr_schedule_auto_is_named_before_any_kernel():
    """The values a resume and a sweep compare are the ones that ran: 05's eval_steps sorted (a point
    beyond ``steps`` refused at once) and ``lr_schedule`` auto resolved, constant for a curve, else cosine."""
    from arrank.workbook import run

    plain = run.prepare("05_train", {"steps": 40})[2]
    curve = run.prepare("05_train", {"steps": 40, "eval_steps": "40,10,10"})[2]
    assert (plain["lr_schedule"], curve["lr_schedule"], curve["eval_steps"]) == ("cosine", "constant", [10, 40])
    assert (
        run.prepare("05_train", {"steps": 40, "eval_steps": [10], "lr_schedule": "cosine"})[2]["lr_schedule"]
        == "cosine"
    )
    with pytest.raises(ParamError, match=r"eval_steps=\[10, 50\]: 1 beyond steps=40 \(the first: 50\)"):
        run.prepare("05_train", {"steps": 40, "eval_steps": [50, 10]})


def test_list_parameters_take_the_forms_help_shows_and_at_most_max_list_values():
    """``--help`` shows ``[4, 8]`` and ``'4,8'``: both are read from the command line (a bracket
    alone is not a number); a list over ``MAX_LIST`` values, or past ``steps``, is refused in one
    short line that names it once, so what a sweep file's check accepts fits a point's command line."""
    from arrank.workbook import run

    for given in ("[4, 8]", " [8,4] ", "4,8", [4, 8]):
        assert run.prepare("05_train", {"steps": 10, "eval_steps": given})[2]["eval_steps"] == [4, 8]
    assert run.prepare("05_train", {"eval_steps": "[]"})[2]["eval_steps"] == []
    assert run.prepare("07", {"alphas": "[0.5, 2]"})[2]["alphas"] == [0.5, 2.0]
    assert "e.g. [4, 8] or '4,8'" in params.allowed_text(params.spec("05_train")["eval_steps"].check)
    with pytest.raises(ParamError, match=r"'\[4' is not a number"):
        run.prepare("05_train", {"eval_steps": "[4"})
    most = ",".join(map(str, range(1, params.MAX_LIST + 1)))
    assert len(run.prepare("05_train", {"steps": 10**7, "eval_steps": most})[2]["eval_steps"]) == params.MAX_LIST
    for value in (most + f",{params.MAX_LIST + 1}", list(range(1, 100_001))):
        with pytest.raises(ParamError, match=r"\(at most 1,000 values\).*; it holds 1(,001|00,000)$") as err:
            run.prepare("05_train", {"steps": 10**7, "eval_steps": value})
        assert len(str(err.value)) < 250
    with pytest.raises(ParamError, match=r"characters\): 990 beyond steps=10 \(the first: 11\)") as err:
        run.prepare("05_train", {"steps": 10, "eval_steps": most})
    assert len(str(err.value)) < 250


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
    for value in ("/tmp/" + "a" * 300 + ".jsonl", "b/" * 2100):  # a path component, a whole path too long
        with pytest.raises(ParamError, match=r"data_path='.*characters\) is too long \(4,096 characters, 255 bytes"):
            params.spec("05_train")["data_path"].check("data_path", value)
    modules = ",".join(f"model.layers.{i}.self_attn.q_proj" for i in range(10))  # 321 characters, no path
    assert params.spec("05_train")["lora_targets"].check("lora_targets", modules) == modules
    assert shown("short") == "'short'" and shown(list(range(100))).endswith("(390 characters)")


@pytest.mark.parametrize("dataset", ["wordnet", "esci", "custom"])
@pytest.mark.parametrize("profile", ["quick", "pretrained", "paper"])
def test_profile_template_is_the_resolved_template_and_needs_no_stage(profile, dataset):
    import arrank.training.schemes  # noqa: F401  (scheme's rule: profile_values validates every parameter)

    assert (
        params.profile_template(profile, dataset)
        == params.profile_values(
            "05_train", profile, {"dataset": dataset, "data_path": "q.jsonl"[: 7 * (dataset == "custom")]}
        )["template"]
    )


def test_data_and_template_that_do_not_go_together_are_refused_before_any_kernel():
    from arrank.workbook import run

    for given, message in (
        ({"dataset": "custom"}, r"data_path='' with dataset='custom'"),
        ({"data_path": "q.jsonl"}, r"data_path='q.jsonl' with dataset='wordnet'"),
        (
            {"dataset": "esci", "template": "wordnet_short"},
            r"template='wordnet_short' is not for dataset='esci'; choose one of \['esci_short', 'esci'\]",
        ),
    ):
        for stem in ("05_train", "06_evaluate"):
            with pytest.raises(ParamError, match=message):
                run.prepare(stem, given)
    assert run.prepare("05_train", {"dataset": "custom", "data_path": "q.jsonl"})[2]["template"] == "esci_short"


def test_profile_template_works_without_the_training_stage_imported():
    code = (
        "import sys; from arrank.data import ranking; from arrank.common import params; "
        "assert 'arrank.training.schemes' not in sys.modules; print(params.profile_template('pretrained', 'esci'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "esci"


def test_notebook_05s_profiles_prose_states_the_values_the_profiles_give():
    """05's markdown describes each profile in words; its figures must be those params resolves."""
    import arrank.training.schemes  # noqa: F401  (scheme's rule)

    prose = " ".join(
        line.removeprefix("#").strip() for line in (paths.NOTEBOOKS / "05_train.py").read_text().splitlines()
    )
    quick, pre, paper = (params.profile_values("05_train", p) for p in ("quick", "pretrained", "paper"))
    esci = params.profile_values("05_train", "paper", {"dataset": "esci"})

    def lr(x: float) -> str:
        return f"{x:.0e}".replace("e-0", "e-")

    for expected in (
        f"{quick['steps']} steps of {quick['batch_size']} items",
        f"LoRA r = {pre['lora_r']}",
        f"lr {lr(pre['lr'])}, {pre['steps']} steps of {pre['batch_size']} items, {pre['n_eval']} held-out queries",
        f"lr {lr(paper['lr'])}, {paper['warmup_steps']} warm-up steps",
        f"{paper['steps'] // 1000}k steps, global batch {paper['batch_size'] * paper['grad_accum']} "
        f"({paper['batch_size']} × {paper['grad_accum']} accumulation), max input {paper['max_length']}",
        f"global batch {esci['batch_size'] * esci['grad_accum']} ({esci['batch_size']} × {esci['grad_accum']} "
        f"accumulation), max input {esci['max_length']}, and Table 2's {esci['n_eval']} held-out queries",
    ):
        assert expected in prose, expected


def test_a_tfidf_embedder_of_no_dimension_is_refused():
    """``tfidf:0`` would embed every title on one axis: one docID for all (it ran, silently)."""
    check = params.spec("04_esci_data")["embedder"].check
    assert check("embedder", "tfidf:16") == "tfidf:16" and check("embedder", "tfidf") == "tfidf"
    for bad in ("tfidf:0", "tfidf:007", "tfidf:-1"):
        with pytest.raises(ParamError, match=rf"embedder='{bad}' must be 'tfidf', 'tfidf:<dim>' \(dim 1-99999\)"):
            check("embedder", bad)


def test_a_bool_choice_refuses_one_and_zero_and_a_value_choice_refuses_bools():
    """``1 in (False, True)`` holds in Python: a flag must still refuse 1 and 0, and a choice of
    ints refuse True, or a typo runs as a different setting."""
    flag = params.choice(False, True)
    assert flag("f", True) is True and flag("f", False) is False
    for bad in (1, 0):
        with pytest.raises(ParamError, match=rf"f={bad} is not allowed; choose one of \[False, True\]"):
            flag("f", bad)
    with pytest.raises(ParamError, match=r"k=True is not allowed; choose one of \[1, 2\]"):
        params.choice(1, 2)("k", True)


def test_a_number_is_returned_as_a_float():
    """``number`` normalises to float: results.json records 2.0 whether 2 or 2.0 was given."""
    out = params.number(0.0)("alpha", 2)
    assert out == 2.0 and type(out) is float
    assert [type(x) for x in params.number_list(0.0)("alphas", "0,2")] == [float, float]


def test_text_refuses_spaces_around_and_a_path_component_over_255_bytes():
    """A value with spaces around it is refused (a file named ' q.jsonl' is not 'q.jsonl'); a path
    component is limited in bytes, not characters: 'é' is two bytes, so 128 of them (256 bytes) are
    refused and 127 (254 bytes), or 255 ASCII characters, accepted."""
    check = params.text(what="a path", path=True)
    for bad in (" q.jsonl", "q.jsonl "):
        with pytest.raises(ParamError, match="has spaces around it"):
            check("data_path", bad)
    assert check("data_path", "d/" + "a" * 255) == "d/" + "a" * 255
    assert check("data_path", "é" * 127) == "é" * 127
    for bad in ("d/" + "a" * 256, "é" * 128):
        with pytest.raises(ParamError, match="is too long"):
            check("data_path", bad)


def test_validation_queries_must_leave_test_queries():
    """05's n_dev is taken out of n_eval: n_dev equal to n_eval leaves no test query."""
    from arrank.workbook import run

    assert run.prepare("05_train", {"n_eval": 10, "n_dev": 9})[2]["n_dev"] == 9
    with pytest.raises(ParamError, match=r"n_dev=10 leaves no test queries of n_eval=10"):
        run.prepare("05_train", {"n_eval": 10, "n_dev": 10})


def test_items_per_step_counts_every_process():
    """The global batch (Appendix B: 64 for WordNet) is batch_size x grad_accum x processes."""
    assert params.items_per_step({"batch_size": 4, "grad_accum": 8}, processes=2) == 64
    assert params.items_per_step({"batch_size": 4, "grad_accum": None}) == 4


def test_paper_profiles_hold_appendix_b_and_table_2():
    """Appendix B: generative runs use no weight decay and 50 warm-up steps on all nouns; the DE trains
    50k steps, the CE 20k. Table 2 evaluates ESCI on 310 queries (06 as 05)."""
    import arrank.training.schemes  # noqa: F401  (scheme's rule)

    paper = params.profile_values("05_train", "paper")
    assert (paper["weight_decay"], paper["warmup_steps"], paper["lr"], paper["steps"]) == (0.0, 50, 1e-5, 10_000)
    assert (paper["subtree"], paper["min_relevant"]) == ("", 1)
    assert [params.profile_value("07_de_ce_baselines", "paper", n) for n in ("de_steps", "ce_steps")] == [
        50_000,
        20_000,
    ]
    assert params.profile_value("07_de_ce_baselines", "paper", "min_relevant") == 1
    assert params.profile_values("06_evaluate", "paper", {"dataset": "esci"})["n_eval"] == 310
    assert params.profile_values("06_evaluate", "quick", {"dataset": "esci"})["n_eval"] == 300  # paper's only


def test_values_that_train_nothing_or_overflow_and_a_dataset_not_a_name_are_refused_in_one_line():
    """05's lora_dropout 1 zeroes the adapters' input (every gradient 0: a finished run that learned nothing),
    lr 0 likewise; an alpha of 1e30 overflowed 3**alpha inside the kernel (OverflowError, no value named); a
    sweep file's ``dataset: {x: 1}`` was a TypeError (unhashable) before any rule saw it."""
    from arrank.workbook import run

    for given, message in (
        ({"lora_dropout": 1.0}, r"lora_dropout=1.0 is out of range: allowed in \[0.0, 0.999\]"),
        ({"lr": 0.0}, r"lr=0.0 is out of range: allowed in \[1e-09, 10.0\]"),
        ({"alpha": 1e30}, r"alpha=1e\+30 is out of range: allowed in \[0.0, 100.0\]"),
        ({"dataset": {"x": 1}}, r"dataset=\{'x': 1\} is not allowed; choose one of \['wordnet', 'esci', 'custom'\]"),
        ({"model_name": ["tiny"]}, r"model_name=\['tiny'\] is not a string: it must be one of \['tiny'"),
    ):
        with pytest.raises(ParamError, match=message):
            run.prepare("05_train", given)
    assert run.prepare("05_train", {"alpha": 100.0, "lora_dropout": 0.999})[2]["alpha"] == 100.0
