"""Run a workbook notebook with papermill: ``python -m arrank.workbook.run NOTEBOOK -p name value ...``.

The parameters are checked against the notebook's spec before any kernel starts; the notebook runs
from the repository root in a hidden staging folder that becomes ``outputs/<stem>/<run_name>/`` only
once it wrote its ``results.json``, else ``<run_name>.failed-<time>``. No overwrite, one process per
run name, a resume only with its checkpoints' parameters: docs/design.md ("Contracts"),
docs/reliability.md; several processes (torchrun, 05_train): docs/scale-out.md.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import functools
import glob
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator
from unittest import mock

from arrank.common import outputs, params, paths, processes
from arrank.common.display import shown
from arrank.common.params import ParamError
from arrank.training import schemes  # noqa: F401  (registers the values the 'scheme' parameter accepts)

KERNEL = "python3"  # the kernel of the interpreter that runs this module (the project's venv)


class RunFailedError(RuntimeError):
    """The notebook raised while executing; the message names the kept executed notebook."""


class RunInterruptedError(KeyboardInterrupt):
    """Ctrl-C, SIGTERM or SIGHUP stopped a run; the message names the kept folder and how to go on;
    ``signum`` is the signal (``exit_code``)."""

    def __init__(self, message: str = "", signum: int = signal.SIGINT):
        super().__init__(message)
        self.signum = int(signum)


STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)  # treated as Ctrl-C (SIGINT) by every command


def exit_code(err: BaseException) -> int:
    """128 + the signal that interrupted (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP)."""
    return 128 + int(getattr(err, "signum", signal.SIGINT))


def find_notebook(name: str | Path) -> Path:
    """The ``.py`` source of a notebook given as a stem (``01_de_capacity``), a number prefix
    (``01``) or a path (``notebooks/01_de_capacity.py`` or ``.ipynb``)."""
    candidate = Path(name)
    if candidate.suffix in (".py", ".ipynb"):
        if candidate.with_suffix(".py").exists():
            return candidate.with_suffix(".py").resolve()
        candidate = Path(candidate.stem)
    matches = sorted(paths.NOTEBOOKS.glob(f"{glob.escape(candidate.name)}*.py"))
    exact = [m for m in matches if m.stem == candidate.name]
    if exact or len(matches) == 1:
        return (exact or matches)[0]
    known = [p.stem for p in paths.notebooks()]
    raise ParamError(f"notebook {str(name)!r} not found (or ambiguous); known notebooks: {known}")


def read_notebook(source: Path) -> Any:
    """The notebook (nbformat node) of a jupytext ``.py`` source, with the project's kernel."""
    import jupytext

    nb = jupytext.read(source)
    nb.metadata["kernelspec"] = {"name": KERNEL, "display_name": "Python 3", "language": "python"}
    return nb


def parameters_cell(source: Path) -> dict[str, Any]:
    """The names and literal default values of the notebook's parameters cell (``params.spec``), copied:
    the spec is cached for the process, and a caller may change a list it is given."""
    return copy.deepcopy({name: p.default for name, p in params.spec(source.stem, source).items()})


def parameters_help(notebook: str | Path) -> str:
    """What ``run NOTEBOOK --help`` prints about the notebook's parameters: each as its cell
    states it (type, the quick profile's value, the comment as its meaning), the other profiles'
    values where they differ (``params.PROFILES``) and what is allowed (``params.RULES``)."""
    source = find_notebook(notebook)
    lines = [
        f"parameters of {source.stem} (set with -p NAME VALUE; profiles: {', '.join(params.profiles_of(source.stem))}; "
        f"each value is the quick profile's, the others' follow where they differ):",
        "",
    ]
    for name, p in params.spec(source.stem, source).items():
        by_profile = " | ".join(f"{profile}: {value!r}" for profile, value in p.profiles.items())
        lines += [
            f"  {name}: {p.type} = {p.default!r}" + (f"  ({by_profile})" if by_profile else ""),
            f"      {p.help}",
            f"      allowed: {params.allowed_text(p.check)}",
        ]
    return "\n".join(lines)


def coerce(name: str, raw: Any, kind: str) -> Any:
    """Turn a command-line string into the parameter's type (``kind``, its cell's annotation):
    ``str`` stays a string (``007`` keeps its zeros) and so does ``list`` (``number_list`` reads
    ``'4,8'`` and ``'4'``), ``bool`` takes true/false, others none (for a parameter whose cell
    value is None) or a number; non-strings (from Python callers and sweep files) pass unchanged."""
    if not isinstance(raw, str) or kind in ("str", "list"):
        return raw
    low = raw.strip().lower()
    if kind == "bool":
        if low in ("true", "false"):
            return low == "true"
        raise ParamError(f"{name}={shown(raw)} must be true or false")
    if low in ("none", "null"):
        return None
    for number in (int, float):
        with contextlib.suppress(ValueError):
            return number(raw)
    raise ParamError(f"{name}={shown(raw)} must be a number ({kind})")


def prepare(notebook: str | Path, overrides: dict[str, Any]) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    """Find the notebook, check the overrides; returns (source, the parameters injected into papermill,
    all resolved parameters; ``run_name`` 'auto' is named when ``run_notebook`` claims it)."""
    return prepare_parsed(find_notebook(notebook), overrides)


def prepare_parsed(source: Path, overrides: dict[str, Any]) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    """``prepare`` for a notebook found already (``source``): a sweep finds it once and checks every
    point with it (its cell read once: ``params.spec`` is cached). The values that run are resolved
    here, once (``params.resolve``); papermill injects each that is not the cell's (the executed
    notebook shows what ran) and the kernel reads them all from ``params.PARAMS_ENV``."""
    spec, defaults = params.spec(source.stem, source), parameters_cell(source)
    given = {k: coerce(k, v, spec[k].type if k in spec else "str") for k, v in overrides.items()}  # unknown: refused
    resolved = params.resolve(source.stem, {**defaults, **given}, set(given), source)
    processes.check_launch(source.stem, resolved)  # several processes: 05 only, a run name, no Unsloth
    return source, {k: v for k, v in resolved.items() if k in given or k == "run_name" or v != defaults[k]}, resolved


RUN_GLOBS = {"from_runs": ("07_de_ce_baselines", ""), "arr_runs": ("05_train", "*")}  # 07's: (runs of, needs none)


def check_inputs(stem: str, resolved: dict[str, Any], outputs_root: Path | None = None) -> None:
    """Refuse (``ParamError``) before a kernel starts what no rule on one value can see: 06's
    ``train_run`` that names no finished 05 run, 07's globs (``RUN_GLOBS``) that match no run the notebook
    can read (``baselines.figure3.matching_runs``), 08's sweep files that do not exist (``paths.given``, as
    ``sweep.load_sweep`` finds them), one's own data file that breaks its format (``custom.read_queries``,
    every line, in bounded memory)."""
    if resolved.get("dataset") == "custom" and resolved.get("data_path"):
        from arrank.data import custom

        try:
            custom.read_queries(paths.ROOT / resolved["data_path"], keep=False, n_eval=resolved.get("n_eval"))
        except custom.CustomDataError as err:
            raise ParamError(str(err)) from None
    if stem == "06_evaluate" and resolved["train_run"] != "none":
        try:
            outputs.find_run("05_train", resolved["train_run"], outputs_root)
        except FileNotFoundError as err:
            raise ParamError(str(err)) from None
    for key, (of, free) in RUN_GLOBS.items() if stem == "07_de_ce_baselines" else ():
        from arrank.baselines.figure3 import matching_runs  # the runs notebook 07 reads

        if resolved[key] != free and not matching_runs(of, resolved[key], {}, outputs_root):
            names = [r.name for r in outputs.finished_runs(of, outputs_root)][-5:]
            raise ParamError(
                f"{key}={shown(resolved[key])} matches no readable finished {of} run; finished: {names or 'none'}"
            )
    for key in ("sweep", "curve_sweeps") if stem == "08_results" else ():
        for name in filter(None, resolved[key].split(",")):
            if not paths.given(name).is_file():
                raise ParamError(f"{key}={name!r}: no such sweep file (sweeps: {paths.ROOT / 'sweeps'})")


def run_notebook(
    notebook: str | Path,
    overrides: dict[str, Any] | None = None,
    outputs_root: Path | None = None,
    progress: bool = True,
) -> Path:
    """Execute a notebook with papermill into a new run directory and return that directory.

    Before any kernel starts: the parameters are checked (and ``check_inputs``), the run name is claimed
    (``RunInProgressError``), dead runs' staging folders become ``<name>.failed-<time>``, an
    existing run directory is refused, and so are checkpoints made with other parameters
    (``ResumeError``). Ctrl-C (or SIGTERM under ``main``) keeps what was written as
    ``<run_name>.failed-<time>`` and raises ``RunInterruptedError``.
    """
    source, injected, resolved = prepare(notebook, dict(overrides or {}))
    stem, name = source.stem, resolved["run_name"]
    outputs_root = Path(outputs_root or paths.OUTPUTS).absolute()  # relative: the caller's; papermill runs in ROOT
    check_inputs(stem, resolved, outputs_root)
    final = outputs.run_path(stem, name, outputs_root)
    if not processes.is_main():  # process k > 0: its own staging folder beside process 0's, removed when done
        staging = final.parent / f".{final.name}.rank{processes.rank()}-{os.getpid()}"
        staging.mkdir(parents=True)
        _execute(source, injected, resolved, staging, final.with_name(f"{final.name}.rank{processes.rank()}"), False)
        shutil.rmtree(staging, ignore_errors=True)
        return final  # the run directory process 0 writes
    outputs.tidy_abandoned(stem, outputs_root)  # staging folders left by runs killed with -9 become failed folders
    name, lock = outputs.claim_name(stem, name, resolved["profile"], outputs_root)  # auto: a name no run has
    resolved["run_name"] = injected["run_name"] = name
    final = outputs.run_path(stem, name, outputs_root)
    try:
        outputs.check_resume(outputs.checkpoints_dir(stem, name, outputs_root), resolved)
        staging = final.parent / f".{final.name}.partial-{os.getpid()}"
        staging.mkdir()
        _execute(source, injected, resolved, staging, final, progress)
        try:
            staging.rename(final)
        except OSError as err:  # the directory appeared meanwhile, or the folder became unwritable
            failed = outputs.failed_path(final)
            staging.rename(failed)
            raise RunFailedError(
                f"{stem} finished, but its run directory {final} could not be written "
                f"({err.strerror or err}); the complete run is kept in {failed}"
            ) from None
    finally:
        lock.release()
    return final


class NotebookSaves:
    """papermill's writer of the executed notebook (paths under ``SCHEME``): each save whole, through a
    temporary file and a rename (``outputs.write_text_atomic``), so the kept notebook is whole or absent;
    a save that fails (a full disk) is recorded in ``unsaved`` (path: why, with the bytes it needed and
    the free space) and not raised, so that the kernel's own error stays the one shown."""

    SCHEME = "arrank-atomic://"
    unsaved: dict[str, str] = {}

    def write(self, buf: str, path: str) -> None:
        target = Path(path.removeprefix(self.SCHEME))
        try:
            outputs.write_text_atomic(target, buf)
            self.unsaved.pop(str(target), None)  # a later whole save stands
        except OSError as err:
            free = shutil.disk_usage(target.parent).free
            why = f"{err.strerror or err}: it needed {len(buf.encode()):,} bytes, {free:,} were free"
            self.unsaved.setdefault(str(target), why)

    def pretty_path(self, path: str) -> str:
        return path.removeprefix(self.SCHEME)


@functools.cache
def _notebook_saves() -> NotebookSaves:
    """The one ``NotebookSaves``, registered with papermill's I/O (its public extension point) once."""
    from papermill.iorw import papermill_io

    papermill_io.register(NotebookSaves.SCHEME, saves := NotebookSaves())
    return saves


def _execute(
    source: Path, injected: dict[str, Any], resolved: dict[str, Any], staging: Path, final: Path, progress: bool
) -> None:
    """papermill into ``staging``, the kernel given the ``resolved`` parameters (``params.PARAMS_ENV``)
    and its process's own stderr written to a log file, not the terminal (so an interrupted run
    ends in one line; the notebook's own output travels over the kernel's channels); on failure or
    interruption ``staging`` becomes the failed folder, with that ``kernel.log``."""
    import nbformat
    import papermill
    from jupyter_client.manager import AsyncKernelManager

    saves, executed = _notebook_saves(), staging / f"{source.stem}.ipynb"
    with tempfile.TemporaryDirectory() as tmp:
        kernel_log, src_ipynb = Path(tmp) / "kernel.log", Path(tmp) / f"{source.stem}.ipynb"
        nbformat.write(read_notebook(source), src_ipynb)  # a path: papermill records its input in the output

        class KernelLogToFile(AsyncKernelManager):
            async def start_kernel(self, **kw: Any) -> None:
                with open(kernel_log, "ab") as log:
                    await super().start_kernel(**{**kw, "stderr": log})

        env = {outputs.RUN_DIR_ENV: str(staging), "ARRANK_OUTPUTS": str(outputs.outputs_root(final))}
        env[params.PARAMS_ENV] = json.dumps(resolved)
        # the kernel's environment, os.environ as it was again afterwards; its OpenMP waits passively
        with mock.patch.dict(os.environ, processes.openmp_wait_env({**os.environ, **env})):
            try:
                papermill.execute_notebook(
                    str(src_ipynb),
                    saves.SCHEME + str(executed),
                    parameters=injected,
                    kernel_name=KERNEL,
                    cwd=str(paths.ROOT),
                    progress_bar=progress,
                    report_mode=False,
                    kernel_manager_class=KernelLogToFile,
                )
                if not (staging / "results.json").exists():
                    raise RunFailedError(f"{source.stem} finished without writing results.json")
                if str(executed) in saves.unsaved:
                    raise RunFailedError("its executed notebook could not be saved")
            except BaseException as err:
                unsaved = saves.unsaved.pop(str(executed), None)
                log_note = f"; {executed.name} there is its last whole save, or absent" if unsaved else ""
                if kernel_log.exists():
                    try:
                        shutil.copyfile(kernel_log, staging / "kernel.log")
                    except OSError as copy_err:  # a full disk must not hide the notebook's own error
                        (staging / "kernel.log").unlink(missing_ok=True)
                        log_note += f"; its kernel log could not be copied there ({copy_err.strerror or copy_err})"
                if unsaved:
                    log_note += (f"; writing {executed.name} failed ({unsaved}): free space (or set ARRANK_OUTPUTS "
                                 "to a larger disk), then run the same command again")  # fmt: skip
                failed = outputs.failed_path(final)
                staging.rename(failed)
                if isinstance(err, KeyboardInterrupt) or getattr(err, "ename", None) == "KeyboardInterrupt":
                    raise RunInterruptedError(
                        f"{source.stem} run {final.name!r} interrupted; what it wrote is kept in {failed}. "
                        "Run the same command again to go on (05_train resumes from its last checkpoint)",
                        getattr(err, "signum", signal.SIGINT),
                    ) from None
                if not isinstance(err, Exception):
                    raise
                raise RunFailedError(
                    f"{source.stem} failed: {describe_error(err)} (the executed notebook is kept in {failed}{log_note})"
                ) from err


def describe_error(err: BaseException) -> str:
    """The exception's type and its whole message; for an error inside the notebook, the
    notebook's own exception (papermill's ``ename: evalue``) rather than papermill's wrapper."""
    name, text = (err.ename, err.evalue or "") if getattr(err, "ename", None) else (type(err).__name__, str(err))
    return f"{name}: {text.strip()}" if text.strip() else name


# Loggers that report the kernel a stop signal also ended: asyncio ('Task exception was never
# retrieved' with a DeadKernelError traceback), nbclient through traitlets ('Kernel died while
# waiting for execute reply.') and papermill.
STOP_NOISE = ("asyncio", "traitlets", "papermill")


def quiet_abandoned_tasks() -> None:
    """Once a command is being stopped, what its libraries say of the kernel the signal also ended
    (``STOP_NOISE``) must not print above or below the one ``interrupted:`` line."""
    for name in STOP_NOISE:
        logging.getLogger(name).disabled = True


def interrupted(err: KeyboardInterrupt, otherwise: str) -> int:
    """Print one ``interrupted:`` block (the run's own message, else ``otherwise``); return 128 + the signal."""
    quiet_abandoned_tasks()
    print(error_lines(err if isinstance(err, RunInterruptedError) else otherwise, "interrupted: "), file=sys.stderr)
    return exit_code(err)


def error_lines(message: str, prefix: str = "error: ") -> str:
    """``prefix`` + the message, its further lines indented by two spaces: one block that a log
    reader (``arrank.workbook.sweep``) takes back whole."""
    return prefix + str(message).replace("\n", "\n  ")


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The command line; ``--help`` prints the usage, and with a notebook its parameters
    (``parameters_help``), then exits 0."""
    parser = argparse.ArgumentParser(
        prog="python -m arrank.workbook.run",
        add_help=False,
        description="Execute a workbook notebook with papermill into outputs/<stem>/<run_name>/.",
        epilog="`python -m arrank.workbook.run NOTEBOOK --help` lists the notebook's parameters with their "
        "defaults per profile, allowed values and meaning; notebooks: "
        + ", ".join([p.stem for p in paths.notebooks()]),
    )
    parser.add_argument("notebook", nargs="?", help="stem (01_de_capacity), number (01) or path of the notebook")
    parser.add_argument(
        "-p", "--parameter", nargs=2, action="append", metavar=("NAME", "VALUE"), help="set a parameter (repeatable)"
    )
    parser.add_argument("--no-progress", action="store_true", help="no papermill progress bar")
    parser.add_argument("-h", "--help", action="store_true", help="show this help (and the notebook's parameters)")
    args = parser.parse_args(argv)
    if args.help:
        print(parser.format_help())
        if args.notebook:
            try:
                print(parameters_help(args.notebook))
            except ParamError as err:
                parser.error(str(err))
        raise SystemExit(0)
    if args.notebook is None:
        parser.error("the notebook is required (a stem, a number or a path); --help lists them")
    return args


@contextlib.contextmanager
def interrupt_on_signals() -> Iterator[None]:
    """For the ``with`` block, let SIGTERM (``kill``, Slurm, a sweep stopping its points) and SIGHUP
    (a closing terminal) end a command as Ctrl-C does: a ``KeyboardInterrupt`` carrying ``signum``
    (``exit_code``); a second such signal while the first is handled is ignored. Ctrl-C (SIGINT)
    stays a plain ``KeyboardInterrupt`` but silences at once what the libraries log of the kernel it
    ends (``quiet_abandoned_tasks``). The handlers replaced are put back after the block."""

    def handler(signum: int, frame: Any) -> None:
        quiet_abandoned_tasks()  # at once: papermill's clean-up logs before ``interrupted``
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        err = KeyboardInterrupt(f"signal {signum}")
        err.signum = signum
        raise err

    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where Ctrl-C is ignored
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; prints the run directory, or the error in one block and exits 2
    (refused before running), 1 (the notebook failed) or 128 + the signal (docs/reliability.md)."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    names = [name for name, _ in args.parameter or []]
    twice = sorted({n for n in names if names.count(n) > 1})
    with interrupt_on_signals():
        try:
            if twice:
                given = "; ".join(f"{n}: " + ", ".join(shown(v) for k, v in args.parameter if k == n) for n in twice)
                raise ParamError(f"parameter(s) {twice} given more than once ({given}); give each -p NAME VALUE once")
            final = run_notebook(args.notebook, dict(args.parameter or []), progress=not args.no_progress)
        except (ParamError, outputs.RunExistsError, outputs.OutputsNotWritableError, RunFailedError) as err:
            print(error_lines(err), file=sys.stderr)
            return 1 if isinstance(err, RunFailedError) else 2  # 2: refused before running
        except KeyboardInterrupt as err:
            return interrupted(err, "while no notebook was running; run the same command again")
    if processes.is_main():
        for message in told_in(final):  # what the run told its user inside the notebook
            print(f"note: {message}")
        print(f"run written to {final}")
    else:
        print(f"process {processes.rank()} of {processes.world_size()} finished; process 0 writes the run {final}")
    return 0


def told_in(run_dir: Path) -> list[str]:
    """The messages a finished run addressed to its user (``results.json``'s ``warnings``: a
    checkpoint set aside, training started over, a fallback chosen), empty where there are none."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        return list(json.loads((Path(run_dir) / "results.json").read_text()).get("warnings") or [])
    return []


if __name__ == "__main__":
    raise SystemExit(main())
