"""The papermill runner: parameter checks, never overwriting, staging and failure handling."""

import textwrap

import pytest

from arrank.workbook import params, run
from arrank.workbook.outputs import RunExistsError
from arrank.workbook.params import ParamError

FAKE = textwrap.dedent('''\
    # %% tags=["parameters"]
    profile = "quick"
    seed = 0
    run_name = "auto"
    fail = False

    # %%
    from arrank.workbook import outputs, params
    params.SPECS["99_fake"] = {"fail": params.choice(False, True)}  # the kernel is another process
    P = params.check_params("99_fake", globals())
    run_dir = outputs.start_run("99_fake", P)
    (run_dir / "table.csv").write_text("a\\n1\\n")
    if P["fail"]:
        raise RuntimeError("boom on purpose")
    outputs.write_results(run_dir, "99_fake", P, {"answer": 42}, {})
''')


@pytest.fixture
def fake_notebook(tmp_path, monkeypatch):
    monkeypatch.setitem(params.SPECS, "99_fake", {"fail": params.choice(False, True)})
    path = tmp_path / "99_fake.py"
    path.write_text(FAKE)
    return path


def test_unknown_parameter_is_refused_before_running(outputs_root):
    with pytest.raises(ParamError, match=r"unknown parameter\(s\) \['k_max'\] for 01_de_capacity; allowed: .*k_max_exact"):
        run.run_notebook("01_de_capacity", {"k_max": "3"}, outputs_root=outputs_root)
    assert list(outputs_root.iterdir()) == []


@pytest.mark.parametrize("name, value, message", [
    ("k_max_exact", "9", r"k_max_exact=9 is out of range: allowed in \[2, 7\]"),
    ("profile", "fast", r"profile='fast' is not allowed"),
    ("seed", "x", r"seed='x' must be a number"),
    ("run_name", "../up", r"run_name='../up' must be"),
])
def test_bad_values_are_refused(outputs_root, name, value, message):
    with pytest.raises(ParamError, match=message):
        run.run_notebook("01", {name: value}, outputs_root=outputs_root)


def test_existing_run_directory_is_never_overwritten(outputs_root):
    existing = outputs_root / "01_de_capacity" / "mine"
    existing.mkdir(parents=True)
    (existing / "results.json").write_text('{"earlier": true}')
    with pytest.raises(RunExistsError, match="never overwritten"):
        run.run_notebook("01_de_capacity", {"run_name": "mine"}, outputs_root=outputs_root)
    assert (existing / "results.json").read_text() == '{"earlier": true}'


def test_cli_reports_errors_with_exit_code_2(capsys):
    assert run.main(["01", "-p", "bogus", "1"]) == 2
    assert "unknown parameter(s) ['bogus']" in capsys.readouterr().err
    assert run.main(["nope_notebook"]) == 2
    assert "known notebooks" in capsys.readouterr().err


def test_coerce_follows_the_default_type():
    assert run.coerce("run_name", "007", "auto") == "007"
    assert run.coerce("k", "5", None) == 5 and run.coerce("k", "none", 3) is None
    assert run.coerce("a", "2.5", 1) == 2.5 and run.coerce("f", "true", False) is True
    with pytest.raises(ParamError, match="must be true or false"):
        run.coerce("f", "yes", False)


def test_successful_run_is_staged_then_renamed(fake_notebook, outputs_root):
    final = run.run_notebook(fake_notebook, {"run_name": "ok"}, outputs_root=outputs_root, progress=False)
    assert final == outputs_root / "99_fake" / "ok"
    assert sorted(p.name for p in final.iterdir()) == ["99_fake.ipynb", "results.json", "table.csv"]
    assert [p.name for p in final.parent.iterdir()] == ["ok"]  # no staging folder left


def test_failed_run_is_kept_aside_and_name_stays_free(fake_notebook, outputs_root):
    with pytest.raises(run.RunFailedError, match="boom on purpose"):
        run.run_notebook(fake_notebook, {"run_name": "bad", "fail": "true"}, outputs_root=outputs_root,
                         progress=False)
    names = [p.name for p in (outputs_root / "99_fake").iterdir()]
    assert len(names) == 1 and names[0].startswith("bad.failed-")
    assert not (outputs_root / "99_fake" / "bad").exists()
