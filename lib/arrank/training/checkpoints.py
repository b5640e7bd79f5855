"""Checkpoints of notebook 05 as transactions (docs/reliability.md, "Faults").

Written by the Trainer as ``checkpoint-N``, then sealed through its public ``on_save`` callback:
flushed, given a manifest last (:func:`commit`), so a save cut short has none; checked against
their manifests before a resume (:func:`usable_checkpoint`), a failing one (a cut-short save
among them) set aside as ``broken-checkpoint-N-<time>`` and the previous good one used.
"""

from __future__ import annotations

import errno
import math
import os
import shutil
from pathlib import Path

from arrank.common import paths
from arrank.common.manifest import MANIFEST, fsync_path, manifest_problem, set_aside, write_manifest
from arrank.common.notices import notice

KEEP = 2  # checkpoints kept: the newest, and one to fall back to when it turns out damaged
PREFIX = "checkpoint-"


def step_of(path: Path) -> int:
    """N of ``checkpoint-N``."""
    return int(Path(path).name.rsplit("-", 1)[-1])


def checkpoints(folder: Path) -> list[Path]:
    """The committed ``checkpoint-N`` folders under ``folder``, oldest first."""
    found = Path(folder).glob(f"{PREFIX}*")  # nothing where the folder does not exist
    return sorted((p for p in found if p.is_dir() and p.name[len(PREFIX) :].isdigit()), key=step_of)


def commit(folder: Path) -> Path:
    """Seal a checkpoint the Trainer wrote: its manifest last (flushed), the parent folder flushed,
    then all but the newest ``KEEP`` checkpoints removed."""
    write_manifest(folder)
    fsync_path(folder.parent)
    for old in checkpoints(folder.parent)[:-KEEP]:
        shutil.rmtree(old, ignore_errors=True)
    return folder


def problem(folder: Path) -> str | None:
    """What is wrong with a checkpoint folder against its manifest (None when it is sound; a
    checkpoint without a manifest is not)."""
    return manifest_problem(folder, required=True)


_VERIFIED: dict[tuple[str, float], bool] = {}  # (path, manifest mtime) -> verified, within one process


def usable_checkpoint(folder: Path, tidy: bool = True) -> Path | None:
    """The newest checkpoint under ``folder`` whose files match its manifest, or None (start over).
    With ``tidy`` (process 0) failing checkpoints (a save cut short: no manifest) are set aside, one
    line each, and a last line says whether the run resumes or starts over. Other processes only read."""
    broken = []
    for candidate in reversed(checkpoints(folder)):
        manifest = candidate / MANIFEST
        key = (str(candidate), manifest.stat().st_mtime if manifest.exists() else -1.0)
        why = None if _VERIFIED.get(key) else problem(candidate)  # verified once a process
        if why is None:
            _VERIFIED[key] = True
            if broken:
                notice(f"resuming from the previous good checkpoint {candidate.name} (step {step_of(candidate)})")
            return candidate
        broken.append(candidate)
        if tidy:
            set_aside(candidate, why)
    if broken:
        notice(f"no good checkpoint left in {folder}: training starts over from step 0")
    return None


def remove(folder: Path) -> None:
    """Remove a finished run's checkpoints ``folder``, keeping what was set aside in it
    (``broken-*``, never deleted: docs/reliability.md), moved beside it with the run's name."""
    folder = Path(folder)
    run = folder.name.removeprefix(".checkpoints-")
    for broken in sorted(folder.glob("broken-*")):
        kept = paths.unused(folder.parent / f"{broken.name}.{run}")
        os.rename(broken, kept)
        notice(f"{broken.name}, set aside during this run, is kept as {kept}")
    shutil.rmtree(folder, ignore_errors=True)


class NonFiniteTrainingError(FloatingPointError):
    """The loss or the gradient norm of a step is not a finite number: the run is stopped."""


def refuse_non_finite(loss: float, grad_norm: float | None, step: int, folder: Path) -> None:
    """Stop training (``NonFiniteTrainingError``, naming the step and the last good checkpoint) when
    the loss or the gradient norm is NaN or infinite, before the step's checkpoint is written."""
    bad = [
        f"{name} {value}"
        for name, value in (("loss", loss), ("gradient norm", grad_norm))
        if value is not None and not math.isfinite(value)
    ]
    if not bad:
        return
    good = checkpoints(folder)
    where = (
        f"the last good checkpoint is {good[-1]} (step {step_of(good[-1])}); the same command resumes from it"
        if good
        else "there is no checkpoint: the same command starts over"
    )
    raise NonFiniteTrainingError(
        f"training stopped at step {step}: {' and '.join(bad)} (not a finite number), so the weights can no longer "
        f"be trusted and nothing of this run is kept as finished; {where}, and will meet the same unless the "
        "cause changes (a lower lr, or max_grad_norm; give another run_name for other parameters)"
    )


def disk_full(err: BaseException) -> int | None:
    """The errno when ``err`` says the disk is full (ENOSPC, EDQUOT): an ``OSError``, or safetensors'
    ``SafetensorError``, which carries the OS error only in its text (``Os { code: 28, ... }``)."""
    if isinstance(err, OSError):
        return err.errno if err.errno in (errno.ENOSPC, errno.EDQUOT) else None
    if type(err).__name__ == "SafetensorError":
        for code in (errno.ENOSPC, errno.EDQUOT):
            if f"code: {code}," in str(err) or f"os error {code})" in str(err):
                return code
    return None


def _sealer(trainer):
    """A ``TrainerCallback`` whose ``on_save`` (public: called once the Trainer wrote
    ``checkpoint-N``) seals it: process 0 writes its manifest last, after every process wrote its
    RNG state (:func:`commit`); a save cut short leaves no manifest and is never resumed from."""
    from transformers import TrainerCallback

    class SealCheckpoints(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            trainer.accelerator.wait_for_everyone()
            if trainer.is_world_process_zero():
                commit(Path(args.output_dir) / f"{PREFIX}{state.global_step}")

    return SealCheckpoints()


class GuardedCheckpoints:
    """Trainer hooks (mixed in before ``transformers.Trainer``): every checkpoint is sealed by
    process 0 (:func:`commit`, through the public ``on_save`` callback), every step is checked by
    :func:`refuse_non_finite` before its log and save, and a full disk during a save is said in one line."""

    def __init__(self, *args, **kwargs):
        from transformers.utils.logging import disable_progress_bar

        disable_progress_bar()  # no "Writing model shards" bar per checkpoint; the training bar stays
        kwargs["callbacks"] = [_sealer(self), *(kwargs.get("callbacks") or [])]  # sealed before others see it
        super().__init__(*args, **kwargs)

    # The one private Trainer method overridden: the step's loss and gradient norm reach no public
    # hook (callbacks get neither), and the save happens inside it. Its signature is pinned by
    # tests/training/test_checkpoints.py::test_the_private_trainer_method_overridden_is_as_expected.
    def _maybe_log_save_evaluate(self, tr_loss, grad_norm, *args, **kwargs):
        norm = float(grad_norm) if grad_norm is not None else None
        root, step = Path(self.args.output_dir), self.state.global_step
        refuse_non_finite(float(tr_loss), norm, step, root)
        try:
            return super()._maybe_log_save_evaluate(tr_loss, grad_norm, *args, **kwargs)
        except Exception as err:
            if (code := disk_full(err)) is None:
                raise
            good = [p for p in checkpoints(root) if problem(p) is None]
            raise OSError(
                code,
                f"no space left on the device while writing checkpoint {step} in {root / f'{PREFIX}{step}'}: free "
                "space (or set ARRANK_OUTPUTS to a larger disk), then run the same command again; it resumes "
                + (f"from {good[-1].name}" if good else "from the start (no checkpoint was complete)"),
            ) from None
