"""`python -m arrank.workbook.run NOTEBOOK --help`: parameters, per-profile defaults, allowed values
and meanings, from the same spec and parameters cell the runner uses."""

import re

import pytest

from arrank.common import params, paths
from arrank.workbook import run

STEMS = sorted(p.stem for p in paths.NOTEBOOKS.glob("[0-9][0-9]_*.py"))


def test_05_help_lists_profiles_allowed_values_and_meanings(capsys):
    with pytest.raises(SystemExit) as stop:
        run.main(["05", "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert "profiles: quick, pretrained, paper" in out
    assert "  model_name: str = 'tiny'  (pretrained: 'smollm2-135m' | paper: 'paper')" in out
    assert "  n_eval: int = 300  (pretrained: 100 | paper: 5000 | paper, esci: 310)" in out  # Table 2's 310 on ESCI
    assert "  template: str = 'short'  (pretrained: 'full' | paper: 'full')" in out
    assert "  data_seed: int = None\n" in out and "None: the seed" in out
    assert "allowed: one of 'indicator', 'fractional', 'stepwise'" in out
    assert "allowed: an integer in [0, 1024]\n" in out  # lora_r
    assert "unsloth-4bit" in out and "a hub id (owner/name)" in out  # model_name
    block = out.split("  scheme: str = 'indicator'\n")[1].split("\n  alpha: ")[0]
    assert block.splitlines()[0].strip() == "item weight lambda(r): indicator (NTP), fractional or stepwise"


@pytest.mark.parametrize("stem", STEMS)
def test_every_parameter_has_a_meaning_and_allowed_values(stem):
    text = run.parameters_help(stem)
    spec = params.spec_for(stem)
    source = run.find_notebook(stem)
    defaults = run.parameters_cell(source)
    blocks = re.split(r"\n  (?=\w+: [\w\[\]]+ = )", text)[1:]
    assert [b.split(":")[0] for b in blocks] == list(defaults)
    for name, block in zip(defaults, blocks):
        meaning, allowed = block.splitlines()[1:3]
        assert meaning.strip() and not meaning.strip().startswith("allowed:"), f"{stem}.{name} has no comment"
        assert allowed.strip() == f"allowed: {params.allowed_text(spec[name])}"
        assert "see the notebook" not in allowed, f"{stem}.{name}: its validator has no `allowed` text"


def test_help_shows_every_profile_value_that_differs():
    """Each value another profile gives appears on its parameter's line: what a run of that
    profile takes is readable from --help alone."""
    for stem in STEMS:
        text = run.parameters_help(stem)
        for name, p in params.spec(stem).items():
            line = next(li for li in text.splitlines() if li.startswith(f"  {name}: "))
            for profile, value in p.profiles.items():
                assert f"{profile}: {value!r}" in line, (stem, name, profile)


def test_allowed_text_says_what_the_validator_accepts():
    check = params.integer(2, 7, optional=True)
    assert params.allowed_text(check) == "an integer in [2, 7], or None"
    with pytest.raises(params.ParamError, match=r"allowed in \[2, 7\]"):
        check("k", 8)
    assert params.allowed_text(params.choice("a", "b")) == "one of 'a', 'b'"


def test_help_without_a_notebook_lists_the_notebooks(capsys):
    with pytest.raises(SystemExit):
        run.main(["--help"])
    out = capsys.readouterr().out
    assert "NOTEBOOK --help" in out and "05_train" in out and "parameters of" not in out


def test_help_for_an_unknown_notebook_is_an_error(capsys):
    with pytest.raises(SystemExit) as stop:
        run.main(["99_nope", "--help"])
    assert stop.value.code == 2 and "99_nope" in capsys.readouterr().err
