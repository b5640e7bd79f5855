"""`python -m arrank.workbook.run NOTEBOOK --help`: parameters, per-profile defaults, allowed values
and meanings, from the same spec and parameters cell the runner uses."""

import re

import pytest

from arrank.common import params, paths
from arrank.workbook import param_help, run

STEMS = sorted(p.stem for p in paths.NOTEBOOKS.glob("[0-9][0-9]_*.py"))


def test_comments_are_read_per_parameter_line():
    cell = 'a = 1  # the first\nb = "x # not a comment"  # the second\nc = [\n    1,  # spread\n]\nd = None\n'
    assert param_help.parameter_comments(cell) == {"a": "the first", "b": "the second", "c": "spread", "d": ""}


def test_05_help_lists_profiles_allowed_values_and_meanings(capsys):
    with pytest.raises(SystemExit) as stop:
        run.main(["05", "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert "profiles: quick, pretrained, paper" in out
    assert "  model_name = None  (quick: 'tiny' | pretrained: 'smollm2-135m' | paper: 'paper')" in out
    assert "  n_eval = None  (quick: 300 | pretrained: 100 | paper: 5000)" in out
    assert "allowed: one of 'indicator', 'fractional', 'stepwise'" in out
    assert "allowed: an integer in [0, 1024], or None (from the profile)" in out  # lora_r
    assert "unsloth-4bit" in out and "a hub id (owner/name)" in out  # model_name
    block = out.split("  scheme = 'indicator'\n")[1].split("\n  alpha = ")[0]
    assert block.splitlines()[0].strip() == "item weight lambda(r): indicator (NTP), fractional or stepwise"


@pytest.mark.parametrize("stem", STEMS)
def test_every_parameter_has_a_meaning_and_allowed_values(stem):
    text = run.parameters_help(stem)
    spec = params.spec_for(stem)
    source = run.find_notebook(stem)
    defaults = run.parameters_cell(run.read_notebook(source), source)
    blocks = re.split(r"\n  (?=\w+ = )", text)[1:]
    assert [b.split(" = ")[0] for b in blocks] == list(defaults)
    for name, block in zip(defaults, blocks):
        meaning, allowed = block.splitlines()[1:3]
        assert meaning.strip() and not meaning.strip().startswith("allowed:"), f"{stem}.{name} has no comment"
        assert allowed.strip() == f"allowed: {params.allowed_text(spec[name])}"
        assert "see the notebook" not in allowed, f"{stem}.{name}: its validator has no `allowed` text"


def test_allowed_text_says_what_the_validator_accepts():
    check = params.integer(2, 7, optional=True)
    assert params.allowed_text(check) == "an integer in [2, 7], or None (from the profile)"
    with pytest.raises(params.ParamError, match=r"allowed in \[2, 7\]"):
        check("k", 8)
    assert params.allowed_text(params.choice("a", "b")) == "one of 'a', 'b'"


@pytest.mark.parametrize("stem", sorted(params.NOTEBOOKS))
def test_each_parameters_cell_is_held_to_its_definition(stem):
    """The parameters cell of every notebook names the definition's parameters in its order,
    with the same literal defaults, and the comment on each line is the definition's meaning."""
    source = run.find_notebook(stem)
    cell = next(c for c in run.read_notebook(source).cells if "parameters" in c.metadata.get("tags", []))
    definition = params.definition(stem)
    assert list(run.parameters_cell(run.read_notebook(source), source)) == list(definition)
    assert run.parameters_cell(run.read_notebook(source), source) == {n: p.default for n, p in definition.items()}
    assert param_help.parameter_comments(cell.source) == {n: p.help for n, p in definition.items()}


def test_05_comments_agree_with_the_profile_values():
    """05's comments name the profile values of steps / lr / batch_size / grad_accum / max_length:
    they must be the ones the definition resolves."""
    checked = 0
    for name in ("steps", "lr", "batch_size", "grad_accum", "max_length", "warmup_steps", "save_steps"):
        param = params.definition("05_train")[name]
        for value, profile in re.findall(r"([0-9][0-9.e+-]*) (quick|pretrained|paper)", param.help):
            assert float(value) == param.profiles[profile], f"05 comment on {name}: {value} {profile}"
            checked += 1
    assert checked >= 17


def test_help_without_a_notebook_lists_the_notebooks(capsys):
    with pytest.raises(SystemExit):
        run.main(["--help"])
    out = capsys.readouterr().out
    assert "NOTEBOOK --help" in out and "05_train" in out and "parameters of" not in out


def test_help_for_an_unknown_notebook_is_an_error(capsys):
    with pytest.raises(SystemExit) as stop:
        run.main(["99_nope", "--help"])
    assert stop.value.code == 2 and "99_nope" in capsys.readouterr().err
