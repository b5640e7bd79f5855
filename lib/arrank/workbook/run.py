"""Run a workbook notebook with papermill: ``python -m arrank.workbook.run NOTEBOOK -p name value ...``.

What it does (DESIGN.md, "Contracts" and "Known pitfalls"):
1. reads ``notebooks/<stem>.py`` (the jupytext source) and its ``parameters`` cell;
2. refuses unknown parameter names and bad values before any kernel starts (``arrank.workbook.params``);
3. refuses a run directory ``outputs/<stem>/<run_name>/`` that exists: runs are never overwritten;
4. executes the notebook with papermill in the project's Python kernel, from the repository root,
   staging everything in a hidden ``.<run_name>.partial-<pid>`` folder that is renamed to the run
   directory only when the notebook finished and wrote its ``results.json``. A failed run is kept
   as ``<run_name>.failed-<time>`` (with the executed notebook showing the error), so nothing
   half-written ever looks like a finished run.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from arrank.workbook import paths
from arrank.workbook.outputs import RUN_DIR_ENV, RunExistsError, resolve_run_name, run_path
from arrank.workbook.params import ParamError, resolve_profile, validate

KERNEL = "python3"  # the kernel of the interpreter that runs this module (the project's venv)


class RunFailedError(RuntimeError):
    """The notebook raised while executing; the message names the kept executed notebook."""


def find_notebook(name: str | Path) -> Path:
    """The ``.py`` source of a notebook given as a stem (``01_de_capacity``), a number prefix
    (``01``) or a path (``notebooks/01_de_capacity.py`` or ``.ipynb``)."""
    candidate = Path(name)
    if candidate.suffix in (".py", ".ipynb"):
        source = candidate.with_suffix(".py")
        if source.exists():
            return source.resolve()
        candidate = Path(candidate.stem)
    matches = sorted(paths.NOTEBOOKS.glob(f"{candidate.name}*.py"))
    exact = [m for m in matches if m.stem == candidate.name]
    if exact or len(matches) == 1:
        return (exact or matches)[0]
    known = sorted(p.stem for p in paths.NOTEBOOKS.glob("[0-9]*.py"))
    raise ParamError(f"notebook {str(name)!r} not found (or ambiguous); known notebooks: {known}")


def read_notebook(source: Path) -> Any:
    """The notebook (nbformat node) of a jupytext ``.py`` source, with the project's kernel."""
    import jupytext

    nb = jupytext.read(source)
    nb.metadata["kernelspec"] = {"name": KERNEL, "display_name": "Python 3", "language": "python"}
    return nb


def parameters_cell(nb: Any, source: Path) -> dict[str, Any]:
    """The names and literal default values assigned in the cell tagged ``parameters``."""
    cells = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ParamError(f"{source.name} must have exactly one cell tagged 'parameters', has {len(cells)}")
    defaults: dict[str, Any] = {}
    for node in ast.parse(cells[0].source).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)):
            raise ParamError(f"{source.name}: the parameters cell may only hold `name = literal` lines")
        try:
            defaults[node.targets[0].id] = ast.literal_eval(node.value)
        except ValueError:
            raise ParamError(f"{source.name}: parameter {node.targets[0].id} is not a plain literal") from None
    return defaults


def coerce(name: str, raw: Any, default: Any) -> Any:
    """Turn a command-line string into the type of the parameter's default value.

    Strings stay strings (``-p run_name 007`` keeps the zeros); ``None`` defaults accept ``none``
    or a number; booleans accept true/false. Non-strings (from Python callers) pass unchanged.
    """
    if not isinstance(raw, str) or isinstance(default, str):
        return raw
    low = raw.strip().lower()
    if isinstance(default, bool):
        if low in ("true", "false"):
            return low == "true"
        raise ParamError(f"{name}={raw!r} must be true or false")
    if low in ("none", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            pass
    if isinstance(default, (int, float)):
        raise ParamError(f"{name}={raw!r} must be a number (its default is {default!r})")
    return raw


def prepare(notebook: str | Path, overrides: dict[str, Any]) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    """Find the notebook, check the overrides, resolve ``run_name``.

    Returns (source, injected parameters for papermill, fully resolved parameters).
    """
    source = find_notebook(notebook)
    defaults = parameters_cell(read_notebook(source), source)
    unknown = sorted(set(overrides) - set(defaults))
    if unknown:
        raise ParamError(f"unknown parameter(s) {unknown} for {source.stem}; allowed: {sorted(defaults)}")
    injected = {k: coerce(k, v, defaults[k]) for k, v in overrides.items()}
    values = validate(source.stem, {**defaults, **injected})
    values["run_name"] = injected["run_name"] = resolve_run_name(values["run_name"], values["profile"])
    return source, injected, resolve_profile(source.stem, values)


def run_notebook(notebook: str | Path, overrides: dict[str, Any] | None = None,
                 outputs_root: Path | None = None, progress: bool = True) -> Path:
    """Execute a notebook with papermill into a new run directory and return that directory."""
    import papermill

    source, injected, resolved = prepare(notebook, dict(overrides or {}))
    final = run_path(source.stem, resolved["run_name"], outputs_root)
    if final.exists():
        raise RunExistsError(f"run directory {final} exists: runs are never overwritten; "
                             "pass -p run_name NEW (or auto), or delete that directory")
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = final.parent / f".{final.name}.partial-{os.getpid()}"
    staging.mkdir()
    with tempfile.TemporaryDirectory() as tmp:
        src_ipynb = Path(tmp) / f"{source.stem}.ipynb"
        import nbformat

        nbformat.write(read_notebook(source), src_ipynb)
        previous = os.environ.get(RUN_DIR_ENV)
        os.environ[RUN_DIR_ENV] = str(staging)
        try:
            papermill.execute_notebook(str(src_ipynb), str(staging / f"{source.stem}.ipynb"),
                                       parameters=injected, kernel_name=KERNEL, cwd=str(paths.ROOT),
                                       progress_bar=progress, report_mode=False)
            if not (staging / "results.json").exists():
                raise RunFailedError(f"{source.stem} finished without writing results.json")
        except Exception as err:
            failed = final.parent / f"{final.name}.failed-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
            staging.rename(failed)
            raise RunFailedError(f"{source.stem} failed ({type(err).__name__}: {_first_line(err)}); "
                                 f"the executed notebook is kept in {failed}") from err
        finally:
            if previous is None:
                os.environ.pop(RUN_DIR_ENV, None)
            else:
                os.environ[RUN_DIR_ENV] = previous
    staging.rename(final)
    return final


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[-1] if text else ""


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m arrank.workbook.run",
        description="Execute a workbook notebook with papermill into outputs/<stem>/<run_name>/.")
    parser.add_argument("notebook", help="stem (01_de_capacity), number (01) or path of the notebook")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                        metavar=("NAME", "VALUE"), help="set a parameter (repeatable)")
    parser.add_argument("--no-progress", action="store_true", help="no papermill progress bar")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; prints the run directory, or the error and exits 2/1."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    overrides = dict(args.parameter)
    if len(overrides) != len(args.parameter):
        print("error: a parameter is given twice", file=sys.stderr)
        return 2
    try:
        final = run_notebook(args.notebook, overrides, progress=not args.no_progress)
    except (ParamError, RunExistsError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except RunFailedError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"run written to {final}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
