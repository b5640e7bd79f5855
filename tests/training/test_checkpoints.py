"""Checkpoints as transactions and training that refuses garbage, by fault injection
on a really trained tiny model: garbled and truncated weights and optimizer state, a save cut
short, a checkpoint without its manifest, a NaN in the weights."""

import json
import struct

import pytest
import torch
from tiny_setup import tiny_model as _tiny

from arrank.common import manifest as manifest_mod
from arrank.common import notices
from arrank.training import checkpoints as ckpt
from arrank.training import train

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]  # slow: trains the tiny model

HYPER = {
    **train.profile_hyperparameters("quick"),
    "steps": 7,
    "batch_size": 8,
    "warmup_steps": 1,
    "lr": 1e-2,
    "logging_steps": 1,
    "save_steps": 2,
}
PARAMS = {"run_name": "r", "scheme": "indicator", "seed": 0}


class _Steps:
    """Callbacks: record the steps trained; optionally raise KeyboardInterrupt after step ``stop``
    or put a NaN into a weight before step ``nan_at`` (the fault injected)."""

    def __new__(cls, stop=None, nan_at=None):
        from transformers import TrainerCallback

        class Steps(TrainerCallback):
            seen: list[int] = []

            def on_step_begin(self, args, state, control, model=None, **kw):
                if nan_at is not None and state.global_step + 1 == nan_at:
                    with torch.no_grad():
                        next(model.parameters()).view(-1)[0] = float("nan")

            def on_step_end(self, args, state, control, **kw):
                self.seen.append(state.global_step)
                if state.global_step == stop:
                    raise KeyboardInterrupt(f"simulated kill after step {stop}")

        return Steps()


@pytest.fixture(scope="module")
def killed(data, tmp_path_factory):
    """A run killed after step 7 (checkpoints at 2, 4, 6; the newest two kept), as a folder to copy."""
    df, texts = data
    folder = tmp_path_factory.mktemp("killed") / "ckpt"
    assert train.resume_point(folder, PARAMS) == 0
    model, tok = _tiny(texts)
    items = train.training_items(df, tok, "indicator")
    with pytest.raises(KeyboardInterrupt):
        train.train(model, tok, items, {**HYPER, "steps": 10}, folder, callbacks=[_Steps(stop=7)], record=PARAMS)
    return folder, items, tok


def _copy(killed, tmp_path):
    import shutil

    return shutil.copytree(killed[0], tmp_path / "ckpt")


def test_checkpoints_are_committed_with_a_manifest_and_two_are_kept(killed):
    folder = killed[0]
    assert [p.name for p in ckpt.checkpoints(folder)] == ["checkpoint-4", "checkpoint-6"]
    assert all(ckpt.problem(p) is None for p in ckpt.checkpoints(folder))  # each sealed by on_save
    manifest = json.loads((folder / "checkpoint-6" / ckpt.MANIFEST).read_text())["files"]
    assert {"model.safetensors", "optimizer.pt", "scheduler.pt", "trainer_state.json"} <= set(manifest)
    weights = folder / "checkpoint-6" / "model.safetensors"
    assert manifest["model.safetensors"] == {
        "size": weights.stat().st_size,
        "sha256": manifest_mod.file_digest(weights),
    }
    assert ckpt.problem(folder / "checkpoint-6") is None


def _garble_tensor_data(path):
    """Overwrite 64 bytes of tensor data after the safetensors header, the header left intact."""
    raw = bytearray(path.read_bytes())
    start = 8 + struct.unpack("<Q", raw[:8])[0] + 100
    raw[start : start + 64] = bytes(range(64))
    path.write_bytes(bytes(raw))


def test_garbled_weights_are_set_aside_and_the_run_resumes_from_the_previous_checkpoint(killed, data, tmp_path, capsys):
    df, texts = data
    folder = _copy(killed, tmp_path)
    _garble_tensor_data(folder / "checkpoint-6" / "model.safetensors")
    assert train.resume_point(folder, PARAMS) == 4
    said = capsys.readouterr().out.splitlines()
    assert (
        said[0].startswith(f"{folder / 'checkpoint-6'} is unusable: model.safetensors does not match its sha256")
        and "set aside as broken-checkpoint-6-" in said[0]
    )
    assert said[1] == "resuming from the previous good checkpoint checkpoint-4 (step 4)"
    assert [p.name[:20] for p in folder.glob("broken-*")] == ["broken-checkpoint-6-"]  # kept, not deleted
    model, tok = _tiny(texts)
    steps = _Steps()
    log = train.train(model, tok, killed[1], {**HYPER, "steps": 6}, folder, callbacks=[steps])
    assert steps.seen == [5, 6] and list(log["step"]) == list(range(1, 7))
    assert all(torch.isfinite(p).all() for p in model.parameters())
    kept = list(folder.parent.glob(f"broken-checkpoint-6-*.{folder.name.removeprefix('.checkpoints-')}"))
    assert not folder.exists() and len(kept) == 1  # set aside, so kept beside when the run's checkpoints go
    told = notices.told()  # what results.json records as warnings and the runner prints as notes
    assert any("set aside as broken-checkpoint-6-" in m for m in told) and any(str(kept[0]) in m for m in told)


@pytest.mark.parametrize("damage", ["truncated optimizer", "truncated weights", "no manifest"])
def test_damaged_newest_and_previous_checkpoints_start_over_saying_so(killed, tmp_path, capsys, damage):
    folder = _copy(killed, tmp_path)
    for step in (4, 6):
        target = folder / f"checkpoint-{step}"
        if damage == "no manifest":
            (target / ckpt.MANIFEST).unlink()
        else:
            path = target / ("optimizer.pt" if "optimizer" in damage else "model.safetensors")
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    assert train.resume_point(folder, PARAMS) == 0
    said = capsys.readouterr().out.splitlines()
    why = (
        "has no manifest.json"
        if damage == "no manifest"
        else f"{'optimizer.pt' if 'optimizer' in damage else 'model.safetensors'} is "
    )
    assert len(said) == 3 and all(why in line for line in said[:2])
    assert said[2] == f"no good checkpoint left in {folder}: training starts over from step 0"
    assert len(list(folder.glob("broken-checkpoint-*"))) == 2 and not ckpt.checkpoints(folder)


def test_a_save_cut_short_is_set_aside(killed, tmp_path, capsys):
    """What a full disk or a kill in the middle of a save leaves: part of a checkpoint, never
    sealed (no manifest). The sealed checkpoints are untouched."""
    folder = _copy(killed, tmp_path)
    (folder / "checkpoint-8").mkdir(parents=True)
    (folder / "checkpoint-8" / "config.json").write_text("{}")
    assert train.resume_point(folder, PARAMS) == 6
    said = capsys.readouterr().out
    assert "has no manifest.json (cut short while written" in said and "set aside as broken-checkpoint-8-" in said
    assert [p.name for p in ckpt.checkpoints(folder)] == ["checkpoint-4", "checkpoint-6"]


def test_a_nan_stops_training_at_once_naming_the_step_and_the_last_good_checkpoint(data, tmp_path, capsys):
    df, texts = data
    folder = tmp_path / "ckpt"
    model, tok = _tiny(texts)
    items = train.training_items(df, tok, "indicator")
    capsys.readouterr()
    with pytest.raises(ckpt.NonFiniteTrainingError) as err:
        train.train(model, tok, items, {**HYPER, "steps": 10}, folder, callbacks=[_Steps(nan_at=6)])
    bar = capsys.readouterr().err  # the progress bar is closed where training stopped, not at the interpreter's exit
    assert bar.endswith("\n") and " 6/10 [" in bar.replace("\r", "\n").splitlines()[-1]
    message = str(err.value)
    assert message.startswith("training stopped at step 6: loss nan")
    assert f"the last good checkpoint is {folder / 'checkpoint-4'} (step 4)" in message
    # the step-6 checkpoint, which would hold the NaN weights, was never written
    assert [p.name for p in ckpt.checkpoints(folder)] == ["checkpoint-2", "checkpoint-4"]
    assert all(ckpt.problem(p) is None for p in ckpt.checkpoints(folder))


def test_steps_zero_leaves_no_checkpoints_folder(data, tmp_path):
    df, texts = data
    folder = tmp_path / ".checkpoints-zero"
    folder.mkdir()  # an earlier start's folder, without checkpoints
    assert train.resume_point(folder, PARAMS) == 0 and not (folder / "params.json").exists()
    model, tok = _tiny(texts)
    items = train.training_items(df, tok, "indicator")
    log = train.train(model, tok, items, {**HYPER, "steps": 0}, folder, record=PARAMS)
    assert log.empty and not folder.exists()


@pytest.fixture
def small_disk(tmp_path):
    """A 3 MB tmpfs (as root, where mount is allowed); skipped with the reason elsewhere."""
    import os
    import subprocess

    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(folder):
    """Write a filler file until the file system is full (ENOSPC); returns it."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as fh:  # unbuffered: closing has nothing left to flush onto the full disk
        try:
            while True:
                fh.write(bytes(64 << 10))
        except OSError:
            pass
    return filler


def test_a_full_disk_cuts_a_save_short_and_the_rerun_resumes_from_the_last_good_checkpoint(data, small_disk, capsys):
    """On a full disk a checkpoint written in place held only config.json, and every
    rerun failed ('Can't find a valid checkpoint'). Now the disk fills after the step-4
    checkpoint; the step-6 save fails and is never sealed, checkpoints 2 and 4 stay whole; once space
    is free, the rerun sets the cut-short save aside and resumes from the newest good one, step 4."""
    from transformers import TrainerCallback

    class FillAfterFirstSave(TrainerCallback):
        def on_save(self, args, state, control, **kw):
            if state.global_step == 4:
                _fill(small_disk)

    df, texts = data
    folder = small_disk / ".checkpoints-full"
    assert train.resume_point(folder, PARAMS) == 0
    model, tok = _tiny(texts)
    items = train.training_items(df, tok, "indicator")
    with pytest.raises(OSError) as err:
        train.train(model, tok, items, HYPER, folder, callbacks=[FillAfterFirstSave()], record=PARAMS)
    assert str(err.value) == (
        f"[Errno 28] no space left on the device while writing checkpoint 6 in "
        f"{folder / 'checkpoint-6'}: free space (or set ARRANK_OUTPUTS to a larger "
        "disk), then run the same command again; it resumes from checkpoint-4"
    )
    assert [p.name for p in ckpt.checkpoints(folder)] == ["checkpoint-2", "checkpoint-4", "checkpoint-6"]
    assert ckpt.problem(folder / "checkpoint-4") is None and "no manifest" in ckpt.problem(folder / "checkpoint-6")

    (small_disk / "filler").unlink()  # space is free again
    capsys.readouterr()
    assert train.resume_point(folder, PARAMS) == 4
    said = capsys.readouterr().out
    assert "has no manifest.json (cut short" in said and "set aside as broken-checkpoint-6-" in said
    model, tok = _tiny(texts)
    steps = _Steps()
    log = train.train(model, tok, items, HYPER, folder, callbacks=[steps])
    assert steps.seen == [5, 6, 7] and list(log["step"]) == list(range(1, 8)) and not folder.exists()


def _saved(folder, step, seal=True):
    """A checkpoint folder as the Trainer leaves it (one file), sealed by ``commit`` or cut short."""
    path = folder / f"checkpoint-{step}"
    path.mkdir(parents=True)
    (path / "trainer_state.json").write_text(f'{{"global_step": {step}}}')
    return ckpt.commit(path) if seal else path


def test_checkpoints_are_ordered_by_step_and_only_the_newest_two_are_kept(tmp_path):
    """Step order, not name order (checkpoint-10 after checkpoint-9); neither a file nor another name
    counts; sealing checkpoint-10 removes checkpoint-8 and keeps 9 and 10."""
    for step in (8, 9):
        _saved(tmp_path, step)
    (tmp_path / "checkpoint-11").write_text("")  # a file
    (tmp_path / "checkpoint-12.tmp").mkdir()  # not checkpoint-N
    assert [p.name for p in ckpt.checkpoints(tmp_path)] == ["checkpoint-8", "checkpoint-9"]
    _saved(tmp_path, 10)
    assert [p.name for p in ckpt.checkpoints(tmp_path)] == ["checkpoint-9", "checkpoint-10"]
    assert ckpt.usable_checkpoint(tmp_path) == tmp_path / "checkpoint-10"


def test_only_the_tidying_process_sets_a_failing_checkpoint_aside(tmp_path):
    """Processes other than process 0 (``tidy=False``) skip a cut-short save but leave it in place."""
    _saved(tmp_path, 2)
    _saved(tmp_path, 4, seal=False)
    assert ckpt.usable_checkpoint(tmp_path, tidy=False) == tmp_path / "checkpoint-2"
    assert (tmp_path / "checkpoint-4").is_dir() and not list(tmp_path.glob("broken-*"))
    assert ckpt.usable_checkpoint(tmp_path, tidy=True) == tmp_path / "checkpoint-2"
    assert not (tmp_path / "checkpoint-4").exists() and len(list(tmp_path.glob("broken-checkpoint-4-*"))) == 1


def test_a_finished_runs_set_aside_checkpoints_are_kept_beside_it_under_its_name(tmp_path):
    folder = tmp_path / ".checkpoints-myrun"
    (folder / "broken-checkpoint-4-x").mkdir(parents=True)
    _saved(folder, 6)
    ckpt.remove(folder)
    assert not folder.exists() and [p.name for p in tmp_path.iterdir()] == ["broken-checkpoint-4-x.myrun"]


@pytest.mark.parametrize(
    "loss, norm, said",
    [
        (float("inf"), 1.0, "loss inf"),
        (1.0, float("inf"), "gradient norm inf"),
        (1.0, float("nan"), "gradient norm nan"),
    ],
)
def test_an_infinite_loss_or_a_non_finite_gradient_norm_stops_training(tmp_path, loss, norm, said):
    with pytest.raises(ckpt.NonFiniteTrainingError, match=rf"^training stopped at step 3: {said} \(not a finite"):
        ckpt.refuse_non_finite(loss, norm, 3, tmp_path)
    ckpt.refuse_non_finite(2.5, None, 3, tmp_path)  # finite, no norm logged: trains on


def test_a_full_disk_is_recognised_in_safetensors_words_too():
    """safetensors reports a full disk as a SafetensorError whose text holds the OS error: it gets
    the same one-line message as an OSError (the save's handler reads ``disk_full``)."""
    import errno

    from safetensors import SafetensorError

    rust = 'Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space left on device" })'
    assert ckpt.disk_full(SafetensorError(rust)) == errno.ENOSPC
    assert ckpt.disk_full(SafetensorError("I/O error: No space left on device (os error 28)")) == errno.ENOSPC
    assert ckpt.disk_full(OSError(errno.EDQUOT, "quota")) == errno.EDQUOT
    assert ckpt.disk_full(OSError(errno.EACCES, "denied")) is None
    assert ckpt.disk_full(SafetensorError("invalid header")) is None and ckpt.disk_full(ValueError("x")) is None


# The one private Trainer method GuardedCheckpoints overrides: the step's loss and gradient norm
# reach no public hook (callbacks get neither), and the save happens inside it.
HOOKED = "_maybe_log_save_evaluate"
HOOKED_SIGNATURE = (
    "(self, tr_loss, grad_norm, model, trial, epoch, ignore_keys_for_eval, start_time, learning_rate=None)"
)


def test_the_private_trainer_method_overridden_is_as_expected():
    """The checkpoints use public hooks (``on_save``) where they can; one private Trainer method is
    overridden, because the step's loss and gradient norm reach no callback. This fails loudly
    when a transformers upgrade changes that method's signature, stops calling it from the
    training loop, or stops saving (then ``on_save``) inside it."""
    import inspect

    from transformers import Trainer

    private = [n for n in vars(ckpt.GuardedCheckpoints) if n.startswith("_") and not n.startswith("__")]
    assert private == [HOOKED]
    method = getattr(Trainer, HOOKED)
    bare = inspect.signature(method).replace(return_annotation=inspect.Signature.empty)
    bare = bare.replace(parameters=[p.replace(annotation=inspect.Parameter.empty) for p in bare.parameters.values()])
    assert str(bare) == HOOKED_SIGNATURE, f"transformers changed Trainer.{HOOKED}: {bare}"
    source = inspect.getsource(method)
    assert "self._save_checkpoint(" in source and "callback_handler.on_save(" in source
    assert source.index("self._save_checkpoint(") < source.index("callback_handler.on_save(")
    assert f"self.{HOOKED}(\n" in inspect.getsource(Trainer)  # called by the training loop
