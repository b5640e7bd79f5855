"""Run directories and what a run writes into them (DESIGN.md, "Outputs").

A run writes to ``outputs/<notebook-stem>/<run_name>/``: the executed notebook (written by the
runner), ``results.json`` = {"notebook", "params", "metrics", "timings", "env"}, figures as ``.html``
(plotly) and ``.png``, tables as ``.csv``. A run never overwrites another run's directory.

When the runner (``arrank.workbook.run``) executes a notebook it stages the run in a hidden folder and
passes it through the ``ARRANK_RUN_DIR`` environment variable; run interactively (JupyterLab),
``start_run`` creates the run directory itself and refuses one that exists.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

from arrank.workbook import paths

RUN_DIR_ENV = "ARRANK_RUN_DIR"


class RunExistsError(FileExistsError):
    """The run directory exists already: runs are never overwritten."""


def resolve_run_name(run_name: str, profile: str) -> str:
    """``"auto"`` becomes ``<profile>-<YYYYmmdd-HHMMSS>``; any other name is kept."""
    if run_name == "auto":
        return f"{profile}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    return run_name


def run_path(stem: str, run_name: str, root: Path | None = None) -> Path:
    """``<outputs>/<stem>/<run_name>``."""
    return (root or paths.OUTPUTS) / stem / run_name


def finished_runs(stem: str, root: Path | None = None) -> list[Path]:
    """The finished runs of a notebook (folders with a results.json; staging and failed folders
    start with '.' or end in '.failed-<time>' and are left out), oldest first by results.json time."""
    folder = (root or paths.OUTPUTS) / stem
    runs = [p.parent for p in folder.glob("*/results.json")
            if not p.parent.name.startswith(".") and ".failed-" not in p.parent.name]
    return sorted(runs, key=lambda p: ((p / "results.json").stat().st_mtime, p.name))


def find_run(stem: str, name: str, root: Path | None = None) -> Path:
    """A finished run of ``stem`` by its run name, or ``"latest"`` for the newest one; a clear
    error naming what exists when there is none."""
    runs = finished_runs(stem, root)
    if name == "latest" and runs:
        return runs[-1]
    match = [p for p in runs if p.name == name]
    if match:
        return match[0]
    known = [p.name for p in runs[-10:]]
    raise FileNotFoundError(f"no finished {stem} run named {name!r} under {(root or paths.OUTPUTS) / stem}; "
                            f"finished runs: {known or 'none (run that notebook first)'}")


def outputs_root(run_dir: Path) -> Path:
    """The outputs folder a run directory lies in (``<root>/<stem>/<run>``)."""
    return Path(run_dir).parent.parent


def start_run(stem: str, params: dict[str, Any]) -> Path:
    """The directory this run writes to.

    Under the runner it is the staging folder the runner made (``ARRANK_RUN_DIR``). Otherwise the
    run directory is created here, and an existing one is an error (``RunExistsError``), so an
    interactive re-run with the same ``run_name`` never overwrites an earlier run.
    """
    staged = os.environ.get(RUN_DIR_ENV)
    if staged:
        return Path(staged)
    target = run_path(stem, resolve_run_name(params["run_name"], params["profile"]))
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        target.mkdir()
    except FileExistsError:
        raise RunExistsError(
            f"run directory {target} exists; set run_name to a new name (or 'auto'), "
            "or delete that directory to run again") from None
    return target


@contextlib.contextmanager
def timed(timings: dict[str, float], label: str) -> Iterator[None]:
    """Add the wall time of the ``with`` block, in seconds, to ``timings[label]``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        timings[label] = round(timings.get(label, 0.0) + time.perf_counter() - start, 4)


def png_backend() -> str | None:
    """Path of the Chromium/Chrome that kaleido uses to write PNG files, or None."""
    found = os.environ.get("BROWSER_PATH")
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = found or shutil.which(name)
    return found


def save_figure(fig: Any, run_dir: Path, name: str, width: int = 900, height: int = 520) -> list[Path]:
    """Write a plotly figure as ``name.html`` (interactive; plotly.js beside it, works offline)
    and ``name.png`` (static, via kaleido and Chromium). Returns the paths written.

    Without a Chromium on the machine the PNG is skipped with a warning saying how to get one.
    """
    html = run_dir / f"{name}.html"
    fig.write_html(html, include_plotlyjs="directory")
    written = [html]
    if png_backend() is None:
        warnings.warn(f"no Chromium found, so {name}.png was not written; install it "
                      "(as root: apt-get install chromium) or set BROWSER_PATH", stacklevel=2)
        return written
    png = run_dir / f"{name}.png"
    fig.write_image(png, width=width, height=height, scale=2)
    return written + [png]


def save_table(df: Any, run_dir: Path, name: str) -> Path:
    """Write a pandas DataFrame as ``name.csv`` (index included only when it is named)."""
    path = run_dir / f"{name}.csv"
    df.to_csv(path, index=df.index.name is not None)
    return path


def env_info() -> dict[str, Any]:
    """Facts about the machine and software a run used."""
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "time": datetime.now().isoformat(timespec="seconds"),
    }
    for module in ("numpy", "scipy", "torch", "transformers", "plotly"):
        mod = sys.modules.get(module)
        if mod is not None:
            info[module] = getattr(mod, "__version__", "?")
    try:
        info["git_commit"] = subprocess.run(
            ["git", "-C", str(paths.ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=5).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        info["git_commit"] = None
    return info


def write_json_atomic(path: Path, payload: Any) -> Path:
    """Write JSON through a temporary file and a rename, so a reader never sees half a file."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w") as fh:
        json.dump(payload, fh, indent=2, sort_keys=False, default=_jsonable)
        fh.write("\n")
    os.replace(tmp, path)
    return path


def _jsonable(value: Any) -> Any:
    """numpy scalars and arrays, Paths: plain JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} to results.json")


def write_results(run_dir: Path, notebook: str, params: dict[str, Any], metrics: dict[str, Any],
                  timings: dict[str, float]) -> Path:
    """Write ``results.json`` = {"notebook", "params", "metrics", "timings", "env"}.

    It is written last by a notebook: a run directory with a results.json is a finished run.
    """
    bad = [k for k in metrics if not isinstance(k, str) or "/" in k]
    if bad:
        raise ValueError(f"metric names must be flat strings without '/': {bad}")
    payload = {"notebook": notebook, "params": params, "metrics": metrics,
               "timings": timings, "env": env_info()}
    return write_json_atomic(run_dir / "results.json", payload)
