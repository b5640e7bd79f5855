"""Checkpoints of notebook 05 as transactions (docs/reliability.md, "Faults").

Staged in ``.partial-checkpoint-N``, flushed, given a manifest last and renamed ``checkpoint-N``
(:func:`commit`); checked against their manifests before a resume (:func:`usable_checkpoint`),
a failing one set aside as ``broken-checkpoint-N-<time>`` and the previous good one used.
"""

from __future__ import annotations

import errno
import math
import os
import shutil
from pathlib import Path
from typing import Callable

from arrank.common import paths
from arrank.common.manifest import MANIFEST, fsync_path, manifest_problem, set_aside, write_manifest
from arrank.common.notices import notice

KEEP = 2  # checkpoints kept: the newest, and one to fall back to when it turns out damaged
PREFIX = "checkpoint-"
STAGING = ".partial-checkpoint-"


def step_of(path: Path) -> int:
    """N of ``checkpoint-N``."""
    return int(Path(path).name.rsplit("-", 1)[-1])


def checkpoints(folder: Path) -> list[Path]:
    """The committed ``checkpoint-N`` folders under ``folder``, oldest first."""
    if not Path(folder).is_dir():
        return []
    found = [p for p in Path(folder).glob(f"{PREFIX}*") if p.is_dir() and p.name[len(PREFIX) :].isdigit()]
    return sorted(found, key=step_of)


def commit(staging: Path, final: Path, keep: int = KEEP) -> Path:
    """Make a staged checkpoint real: manifest, rename ``staging`` to ``final``, flush the parent
    folder, then remove all but the newest ``keep`` checkpoints."""
    write_manifest(staging)
    os.rename(staging, final)
    fsync_path(final.parent)
    for old in checkpoints(final.parent)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def problem(folder: Path) -> str | None:
    """What is wrong with a checkpoint folder against its manifest (None when it is sound; a
    checkpoint without a manifest is not)."""
    return manifest_problem(folder, required=True)


_VERIFIED: dict[tuple[str, float], bool] = {}  # (path, manifest mtime) -> verified, within one process


def usable_checkpoint(folder: Path, say: Callable[[str], None] = notice, tidy: bool = True) -> Path | None:
    """The newest checkpoint under ``folder`` whose files match its manifest, or None (start over).
    With ``tidy`` (process 0) cut-short saves and failing checkpoints are set aside, one line each,
    and a last line says whether the run resumes or starts over. Other processes only read."""
    folder = Path(folder)
    if tidy and folder.is_dir():
        for partial in sorted(folder.glob(f"{STAGING}*")):
            set_aside(partial, "its save was cut short (no manifest written)", say, f"checkpoint-{step_of(partial)}")
    found = checkpoints(folder)
    broken = []
    for candidate in reversed(found):
        manifest = candidate / MANIFEST
        key = (str(candidate), manifest.stat().st_mtime if manifest.exists() else -1.0)
        if _VERIFIED.get(key):
            return candidate
        why = problem(candidate)
        if why is None:
            _VERIFIED[key] = True
            if broken:
                say(f"resuming from the previous good checkpoint {candidate.name} (step {step_of(candidate)})")
            return candidate
        broken.append(candidate)
        if tidy:
            set_aside(candidate, why, say, candidate.name)
    if broken:
        say(f"no good checkpoint left in {folder}: training starts over from step 0")
    return None


def remove(folder: Path, say: Callable[[str], None] = notice) -> None:
    """Remove a finished run's checkpoints ``folder``, keeping what was set aside in it
    (``broken-*``, never deleted: docs/reliability.md), moved beside it with the run's name."""
    folder = Path(folder)
    run = folder.name.removeprefix(".checkpoints-")
    for broken in sorted(folder.glob("broken-*")) if folder.is_dir() else []:
        kept = paths.unused(folder.parent / f"{broken.name}.{run}")
        os.rename(broken, kept)
        say(f"{broken.name}, set aside during this run, is kept as {kept}")
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


class GuardedCheckpoints:
    """Trainer hooks (mixed in before ``transformers.Trainer``): every checkpoint is staged and
    committed by process 0 (:func:`commit`), and every step is checked by :func:`refuse_non_finite`."""

    _staging: str | None = None

    def _get_output_dir(self, trial):
        return self._staging or super()._get_output_dir(trial)

    def _save_checkpoint(self, model, trial) -> None:
        from arrank.training.models import quiet_saves

        quiet_saves()
        root, step = Path(self.args.output_dir), self.state.global_step
        staging = root / f"{STAGING}{step}"
        self._staging = str(staging)
        try:
            super()._save_checkpoint(model, trial)
        except Exception as err:
            code = disk_full(err)
            if code is None:
                raise
            good = checkpoints(root)
            raise OSError(
                code,
                f"no space left on the device while writing checkpoint {step} in {staging}: free "
                "space (or set ARRANK_OUTPUTS to a larger disk), then run the same command again; it resumes "
                + (f"from {good[-1].name}" if good else "from the start (no checkpoint was complete)"),
            ) from None
        finally:
            self._staging = None
        self.accelerator.wait_for_everyone()  # every process wrote its RNG state into the staging folder
        if self.is_world_process_zero():
            commit(staging / f"{PREFIX}{step}", root / f"{PREFIX}{step}")
            shutil.rmtree(staging, ignore_errors=True)

    def _maybe_log_save_evaluate(self, tr_loss, grad_norm, *args, **kwargs):
        norm = float(grad_norm) if grad_norm is not None else None
        refuse_non_finite(float(tr_loss), norm, self.state.global_step, Path(self.args.output_dir))
        return super()._maybe_log_save_evaluate(tr_loss, grad_norm, *args, **kwargs)
