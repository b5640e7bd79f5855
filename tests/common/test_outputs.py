"""outputs: a run's paths are never symbolic links, nor outside the outputs folder."""

import os

import pytest

from arrank.common import outputs


@pytest.mark.parametrize(
    "name, target",
    [(".checkpoints-r", "elsewhere"), (".r.lock", "elsewhere/lock"), ("r", "missing"), (".curve-r", "elsewhere")],
)
def test_a_run_path_that_is_a_link_is_refused_before_any_work(outputs_root, tmp_path, name, target):
    """A symlinked checkpoints folder, lock, curve folder, or a dangling link as the run folder:
    one line naming the link, and nothing written there."""
    (tmp_path / "elsewhere").mkdir(exist_ok=True)
    folder = outputs_root / "05_train"
    folder.mkdir()
    os.symlink(tmp_path / target, folder / name)
    with pytest.raises(outputs.LinkedOutputsError, match=rf"{name} is a symbolic link \(to .*{target}\)"):
        outputs.claim_run("05_train", "r")
    assert not list((tmp_path / "elsewhere").iterdir())
    assert not (folder / ".r.lock").exists() or (folder / ".r.lock").is_symlink()


def test_a_notebook_folder_outside_the_outputs_is_refused(outputs_root, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", outputs_root / "05_train")
    with pytest.raises(outputs.LinkedOutputsError, match=r"05_train is a symbolic link"):
        outputs.claim_run("05_train", "r")
    outputs.claim_run("06_evaluate", "r").release()  # a real folder: claimed


def test_the_runner_refuses_a_linked_run_with_one_line_and_rc_2(outputs_root, tmp_path, capsys):
    from arrank.workbook import run

    (outputs_root / "01_de_capacity").mkdir()
    os.symlink(tmp_path / "missing", outputs_root / "01_de_capacity" / "linked")
    assert run.main(["01", "-p", "run_name", "linked"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "linked is a symbolic link" in err
