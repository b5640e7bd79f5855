"""Run directories and what a run writes into them: ``outputs/<notebook-stem>/<run_name>/`` with
``results.json``, figures and tables (docs/design.md, "Contracts"); locks, failed runs, resumes
and file permissions: docs/reliability.md.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import io
import itertools
import json
import math
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
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from arrank.common import paths, processes
from arrank.common.display import shown
from arrank.common.manifest import file_digest
from arrank.common.notices import forget, told
from arrank.common.params import ParamError

if TYPE_CHECKING:
    import pandas as pd

RUN_DIR_ENV = "ARRANK_RUN_DIR"
RESUME_PARAMS = "params.json"  # the resolved parameters of the run that made the checkpoints
DEV = "dev"  # the validation queries' split (arrank.data.ranking.carve_dev), in a ranking table and per-query rows


class RunExistsError(FileExistsError):
    """The run directory exists already: runs are never overwritten."""


class RunInProgressError(RunExistsError):
    """Another live process holds this run name (its lock names the pid)."""


class ResumeError(ParamError):
    """Checkpoints of this run name were made with other parameters than the ones given now."""


class DamagedResultsError(ValueError):
    """A finished run's results file that cannot be read whole: named with what to do."""


def damaged(path: Path, why: str) -> DamagedResultsError:
    """The one-line error for a damaged results file: which, why, and what to do (a point scored during
    training, ``.curve-<run>/step-*.csv``: start that run over, its checkpoints would resume past it)."""
    folder, run = path.parent, path.parent.name.removeprefix(".curve-")
    todo = f"its run folder {folder}" if run == folder.name else f"{folder} and .checkpoints-{run} beside it"
    return DamagedResultsError(f"{path} is damaged ({why}): delete {todo} and run that point again")


# results.json's keys and their types, as ``write_results`` writes them (``warnings``: where notices were recorded)
RESULTS_SCHEMA = {"notebook": str, "params": dict, "metrics": dict, "timings": dict, "env": dict, "warnings": list}
KINDS = {str: "a string", dict: "a mapping", list: "a list"}


def results_problem(results: Any) -> str | None:
    """What is wrong with a parsed results.json against ``RESULTS_SCHEMA``, in words; None when nothing."""
    if not isinstance(results, dict):
        return "not a mapping"
    bad = [k for k, kind in RESULTS_SCHEMA.items() if not isinstance(({"warnings": []} | results).get(k), kind)]
    return f"its {bad[0]!r} is missing or not {KINDS[RESULTS_SCHEMA[bad[0]]]}" if bad else None


def read_results(path: Path) -> dict[str, Any]:
    """A run's ``results.json``, checked: valid JSON of ``RESULTS_SCHEMA``; else
    :class:`DamagedResultsError` naming the file."""
    try:
        results = json.loads(Path(path).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise damaged(Path(path), f"not JSON: {str(err)[:80]}") from None
    if problem := results_problem(results):
        raise damaged(Path(path), problem)
    return results


def means_problem(rows: pd.DataFrame, metrics: dict[str, Any]) -> str | None:
    """The first held-out metric ``metrics`` records (``cvr``, ``ndcg``, ``recall@k``; section 5.1) that
    is not the mean of the per-query ``rows`` (long columns ``violation``, ``recall@k``, or short
    ``cvr``, ``r<k>``), in words; None when all agree."""
    for key, value in metrics.items():
        if key not in ("cvr", "ndcg") and not key.startswith("recall@") or not isinstance(value, (int, float)):
            continue
        alias = {"cvr": "violation", "ndcg": "ndcg"}.get(key, "r" + key.removeprefix("recall@"))
        column = next((c for c in (key, alias) if c in rows.columns), None)
        mean = None if column is None else rows[column].astype(float).mean()
        if mean is not None and not math.isclose(mean, value, rel_tol=1e-9, abs_tol=1e-12):
            return f"the mean {key} of its rows is {mean:.6g} where its results.json records {value:.6g}"
    return None


def read_table(path: Path, columns: Sequence[str] = (), data: bytes | None = None) -> pd.DataFrame:
    """A CSV (or ``.parquet``) table a run wrote (``data``: its bytes, where not yet on disk), checked: it
    parses, has ``columns`` and a row, none cut short (a CSV's last line unended, an empty ``columns``
    cell); else :class:`DamagedResultsError` naming the file."""
    import pandas as pd

    csv, data = Path(path).suffix != ".parquet", Path(path).read_bytes() if data is None else data
    try:
        frame = (pd.read_csv if csv else pd.read_parquet)(io.BytesIO(data))
    except ValueError as err:  # pandas' and pyarrow's parser errors, a bad encoding
        raise damaged(Path(path), f"not a table: {str(err)[:80]}") from None
    missing = [c for c in columns if c not in frame.columns]
    if missing or frame.empty or csv and not data.endswith(b"\n") or frame[list(columns)].isna().any().any():
        why = f"no column {missing}" if missing else "no rows" if frame.empty else "a row is cut short"
        raise damaged(Path(path), why)
    return frame


def read_rows(
    path: Path, columns: Sequence[str], metrics: dict[str, Any], by: str | None = None, data: bytes | None = None
) -> pd.DataFrame:
    """A per-query CSV of a finished run (``data``: its bytes, where not yet on disk), checked whole
    against the ``metrics`` of its results.json: a table (:func:`read_table`) with ``columns``, each query
    once with ``n_queries`` rows (in each group of ``by`` where given), and the recorded means
    (``means_problem``; of the last ``by`` group, the run's end); else :class:`DamagedResultsError`
    naming the file."""
    import pandas as pd

    frame, bad = read_table(path, columns, data), functools.partial(damaged, Path(path))
    splits = {"": test_rows(frame)} | ({f"{DEV}_": frame[frame["split"].eq(DEV)]} if "split" in frame else {})
    for prefix, part in splits.items():  # a curve with validation queries: the test rows, then the validation ones
        recorded = {k.removeprefix(prefix): v for k, v in metrics.items() if k.startswith(prefix)}
        rows = recorded.get("n_queries")
        counts = part.groupby(by).size() if by else pd.Series({"all": len(part)})
        off = counts[counts != rows] if rows is not None else counts[:0]  # the groups whose rows are not the queries
        if len(off):
            where = f" at {by} {off.index[0]}" if by else ""
            what = "validation rows" if prefix else "rows"
            raise bad(f"{off.iloc[0]} {what}{where} where its run scored {rows} queries")
        twice = part[part.duplicated([by, "query"] if by else ["query"])]
        if len(twice):
            raise bad(f"query {str(twice['query'].iloc[0])[:80]!r} has two rows")
        if problem := means_problem(part[part[by] == part[by].max()] if by else part, recorded):
            raise bad(prefix + problem)
    return frame


def test_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Per-query rows' test rows: all of a run without validation queries, ``split != DEV`` of one with."""
    return frame[frame["split"].ne(DEV)] if "split" in frame else frame


class OutputsNotWritableError(PermissionError):
    """A folder the run must write to cannot be written; the message names it and the remedy."""


def resolve_run_name(run_name: str, profile: str) -> str:
    """``"auto"`` becomes ``<profile>-<YYYYmmdd-HHMMSS>``; any other name is kept."""
    return f"{profile}-{datetime.now().strftime('%Y%m%d-%H%M%S')}" if run_name == "auto" else run_name


def _notebook_dir(stem: str, root: Path | None) -> Path:
    return (root or paths.OUTPUTS) / stem


def run_path(stem: str, run_name: str, root: Path | None = None) -> Path:
    """``<outputs>/<stem>/<run_name>``."""
    return _notebook_dir(stem, root) / run_name


def finished_runs(stem: str, root: Path | None = None) -> list[Path]:
    """The finished runs of a notebook (folders with a results.json; staging and failed folders
    start with '.' or end in '.failed-<time>' and are left out), oldest first by results.json time."""
    runs = [p.parent for p in _notebook_dir(stem, root).glob("[!.]*/results.json") if ".failed-" not in p.parent.name]
    return sorted(runs, key=lambda p: ((p / "results.json").stat().st_mtime, p.name))


def find_run(stem: str, name: str, root: Path | None = None) -> Path:
    """A finished run of ``stem`` by its run name, or ``"latest"`` for the newest one; a clear
    error naming what exists when there is none."""
    runs = finished_runs(stem, root)
    if match := (runs[-1:] if name == "latest" else [p for p in runs if p.name == name]):
        return match[0]
    raise FileNotFoundError(
        f"no finished {stem} run named {name!r} under {_notebook_dir(stem, root)}; "
        f"finished runs: {[p.name for p in runs[-10:]] or 'none (run that notebook first)'}"
    )


def checkpoints_dir(stem: str, run_name: str, root: Path | None = None) -> Path:
    """``<outputs>/<stem>/.checkpoints-<run_name>``: where a run that checkpoints (05) keeps them."""
    return _notebook_dir(stem, root) / f".checkpoints-{run_name}"


def lock_path(stem: str, run_name: str, root: Path | None = None) -> Path:
    """``<outputs>/<stem>/.<run_name>.lock``: held by the one process running that name."""
    return _notebook_dir(stem, root) / f".{run_name}.lock"


def _lock_pid(path: Path) -> str:
    with contextlib.suppress(OSError):
        return path.read_text().strip() or "?"
    return "?"


def claim_lock(path: Path, busy: str) -> Any:
    """An exclusive ``filelock`` on ``path`` holding this process's pid; returns the lock. A second
    claim, even from this process, gets ``RunInProgressError(busy)``, its ``{pid}`` the holder's."""
    from filelock import FileLock, Timeout

    writable_folder(path.parent)
    lock = FileLock(path, timeout=0, mode=0o666 & ~_umask(), on_acquired=_write_pid)
    try:
        lock.acquire()
    except Timeout:
        raise RunInProgressError(busy.format(pid=_lock_pid(path))) from None
    return lock


def claim_run(stem: str, run_name: str, root: Path | None = None) -> Any:
    """Claim a run name for this process (:func:`claim_lock` on ``.<run_name>.lock``), after
    :func:`refuse_links`; a second claim gets ``RunInProgressError`` naming the holder's pid
    (docs/reliability.md)."""
    refuse_links(stem, run_name, root)
    return claim_lock(
        lock_path(stem, run_name, root),
        f"{stem} run {run_name!r} is in progress (pid {{pid}}): wait for it to finish, or pass another run_name (or auto)",
    )


def claim_name(stem: str, run_name: str, profile: str, root: Path | None = None) -> tuple[str, Any]:
    """The run name, claimed (:func:`claim_run`), and its lock; a name whose run folder exists is refused
    (``RunExistsError``). ``"auto"`` is ``<profile>-<YYYYmmdd-HHMMSS>`` (:func:`resolve_run_name`), then
    ``-2``, ``-3``, ... while another process holds that name or its run or checkpoints folder exists:
    runs started in the same second get names of their own."""
    auto, base = run_name == "auto", resolve_run_name(run_name, profile)
    for name in (base if n == 1 else f"{base}-{n}" for n in itertools.count(1)):
        try:
            lock = claim_run(stem, name, root)
        except RunInProgressError:
            if auto:
                continue
            raise
        if not run_path(stem, name, root).exists() and not (auto and checkpoints_dir(stem, name, root).exists()):
            return name, lock
        lock.release()
        if not auto:
            raise RunExistsError(
                f"run directory {run_path(stem, name, root)} exists: runs are never overwritten; pass another "
                "run_name (or auto), or delete that directory"
            )


def _write_pid(fd: int) -> None:
    """What a run's lock file holds: the pid of the process that holds it."""
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)


def failed_path(final: Path, when: float | None = None) -> Path:
    """``<run_name>.failed-<YYYYmmdd-HHMMSS>`` beside ``final`` (a suffix keeps it new)."""
    stamp = datetime.fromtimestamp(when if when is not None else time.time()).strftime("%Y%m%d-%H%M%S")
    return paths.unused(final.parent / f"{final.name}.failed-{stamp}")


def tidy_abandoned(stem: str, root: Path | None = None) -> list[Path]:
    """Rename the staging folders ``.<run_name>.partial-<pid>`` of killed runs of ``stem`` to
    ``<run_name>.failed-<time of their last write>``, each while its name is claimed, so the folder
    of a run that a live process holds is left alone; returns the new paths."""
    moved = []
    for partial in sorted(_notebook_dir(stem, root).glob(".*.partial-*")):
        name = partial.name[1:].rsplit(".partial-", 1)[0]
        with contextlib.suppress(RunInProgressError):  # a live process holds the name: its folder is its own
            lock = claim_run(stem, name, root)
            try:
                moved.append(partial.rename(failed_path(run_path(stem, name, root), partial.stat().st_mtime)))
            finally:
                lock.release()
    return moved


class LinkedOutputsError(OutputsNotWritableError):
    """A run's folder, checkpoints or lock is a symbolic link, or lies outside the outputs folder."""


def refuse_links(stem: str, run_name: str, root: Path | None = None) -> None:
    """Refuse (:class:`LinkedOutputsError`) before any work when a path a run writes is a symbolic
    link (dangling or not: its folder, ``.checkpoints-``, ``.curve-`` or its lock) or its notebook's
    folder resolves outside the outputs folder: nothing of a run is written through a link."""
    folder = _notebook_dir(stem, root)
    names = (run_name, f".checkpoints-{run_name}", f".curve-{run_name}", f".{run_name}.lock")
    for path in (folder, *(folder / n for n in names)):
        if path.is_symlink():
            raise LinkedOutputsError(
                f"{path} is a symbolic link (to {os.readlink(path)}): a run never writes through links; "
                "remove the link, or set ARRANK_OUTPUTS to the folder it points to"
            )
    inside = (root or paths.OUTPUTS).resolve()
    if folder.exists() and inside != folder.resolve() and inside not in folder.resolve().parents:
        raise LinkedOutputsError(f"{folder} resolves to {folder.resolve()}, outside the outputs folder {inside}")


def writable_folder(folder: Path) -> Path:
    """Create ``folder`` (and parents) and check that a file can be written in it (a real write, so
    root on a read-only file system is caught too); else ``OutputsNotWritableError`` and the remedy."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.NamedTemporaryFile(prefix=".write-test-", dir=folder).close()  # made and removed
    except OSError as err:
        blocked = next((p for p in [folder, *folder.parents] if p.exists()), folder)
        raise OutputsNotWritableError(
            f"cannot write to {blocked} ({err.strerror or err}), where this run writes {folder}: "
            f"make it writable (e.g. chmod u+w {blocked}) or set ARRANK_OUTPUTS to a writable folder"
        ) from None
    return folder


RESUME_FREE = ("run_name", "save_steps", "query_batch")  # may differ on a resume: they do not change what is trained


def resume_params(params: dict[str, Any]) -> dict[str, Any]:
    """The parameters that must agree for a resume: all but ``RESUME_FREE``, and the data file's
    ``data_digest`` as it reads now (``data_digest``), as JSON gives them back."""
    kept = {k: v for k, v in params.items() if k not in RESUME_FREE} | data_digest(params)
    return json.loads(json.dumps(kept, default=_jsonable))


def resume_diff(folder: Path, params: dict[str, Any]) -> dict[str, tuple[Any, Any]] | None:
    """{name: (in the checkpoints' run, given now)} for every parameter that differs (``'<parameters>'``
    when none were recorded); ``{}`` when they agree, None when ``folder`` holds no checkpoint."""
    if not (folder.is_dir() and any(folder.glob("checkpoint-*"))):
        return None
    now = resume_params(params)
    try:
        then = json.loads((folder / RESUME_PARAMS).read_text())
    except (OSError, ValueError):
        return {"<parameters>": ("not recorded", "given")}
    pairs = {k: (then.get(k, "<absent>"), now.get(k, "<absent>")) for k in sorted(set(then) | set(now))}
    return {k: (was, given) for k, (was, given) in pairs.items() if was != given}


def check_resume(folder: Path, params: dict[str, Any]) -> None:
    """Refuse (``ResumeError``) to resume checkpoints made with other parameters: the message lists
    the differing parameters and the three ways out. Passes when there is nothing to resume."""
    if not (diff := resume_diff(folder, params)):
        return
    steps = sorted(int(p.name.split("-")[-1]) for p in folder.glob("checkpoint-*") if p.name.split("-")[-1].isdigit())
    listed = ", ".join(f"{k} was {shown(a)}, now {shown(b)}" for k, (a, b) in diff.items())
    raise ResumeError(
        f"{folder} holds the checkpoint of an interrupted run (step {steps[-1] if steps else '?'}) made with "
        f"other parameters: {listed}. Resuming would mix two runs. Either run again with the parameters "
        f"it was made with, or pass another run_name (or auto), or delete {folder} to start this name afresh"
    )


def record_resume_params(folder: Path, params: dict[str, Any]) -> Path:
    """Write the run's parameters beside its checkpoints (``params.json``), for ``check_resume``."""
    folder.mkdir(parents=True, exist_ok=True)
    return write_json_atomic(folder / RESUME_PARAMS, resume_params(params))


def _umask() -> int:
    """The process umask, read without changing it where Linux shows it (threads may be writing)."""
    with contextlib.suppress(OSError, ValueError, StopIteration):
        with open("/proc/self/status") as fh:
            return int(next(ln for ln in fh if ln.startswith("Umask:")).split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def umask_permissions(path: Path) -> Path:
    """Give ``path`` (a file, or a folder and everything in it) the permissions a plain
    ``open``/``mkdir`` would have under the umask, not tempfile's 0600 / 0700."""
    mask = _umask()
    for p in [path, *path.rglob("*")] if path.is_dir() else [path]:
        os.chmod(p, (0o777 if p.is_dir() else 0o666) & ~mask)
    return path


def outputs_root(run_dir: Path) -> Path:
    """The outputs folder a run directory lies in (``<root>/<stem>/<run>``)."""
    return Path(run_dir).parent.parent


def start_run(stem: str, params: dict[str, Any]) -> Path:
    """The directory this run writes to: the runner's staging folder (``ARRANK_RUN_DIR``), else a
    new run directory made here, after :func:`claim_name`'s checks (``RunInProgressError`` while
    another process holds the name; ``RunExistsError`` if it exists; ``ParamError`` for one of
    several torchrun processes outside the runner)."""
    forget()  # this run's notices start here
    if staged := os.environ.get(RUN_DIR_ENV):
        return Path(staged)
    if processes.world_size() > 1:
        raise ParamError(
            f"{stem} is one of {processes.world_size()} processes (WORLD_SIZE) but not under the "
            "runner, which decides which process writes the run: launch "
            f"`torchrun --nproc_per_node N -m arrank.workbook.run {stem} -p run_name NAME ...`"
        )
    name, lock = claim_name(stem, params["run_name"], params["profile"])  # refused while another process holds it
    target = run_path(stem, name)
    try:
        target.mkdir()
    finally:
        lock.release()
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
    found = (shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome", "chrome"))
    return os.environ.get("BROWSER_PATH") or next((path for path in found if path), None)


@functools.cache
def _png_server() -> None:
    """Start kaleido's Chromium once per process (stopped at exit), reused by every PNG after the
    first (docs/measurements.md)."""
    import kaleido

    kaleido.start_sync_server(n=1, silence_warnings=True)
    atexit.register(kaleido.stop_sync_server, silence_warnings=True)


def save_figure(fig: Any, run_dir: Path, name: str, width: int = 900, height: int = 520) -> list[Path]:
    """Write a plotly figure as ``name.html`` (plotly.js beside it, works offline) and ``name.png``
    (kaleido and Chromium; without a Chromium, a warning says how to get one). Returns the paths."""
    html = run_dir / f"{name}.html"
    fig.write_html(html, include_plotlyjs="directory")
    if png_backend() is None:
        warnings.warn(
            f"no Chromium found, so {name}.png was not written; install it "
            "(as root: apt-get install chromium) or set BROWSER_PATH",
            stacklevel=2,
        )
        return [html]
    png = run_dir / f"{name}.png"
    _png_server()
    with warnings.catch_warnings():  # plotly hands the server its request headers, which it ignores
        warnings.filterwarnings("ignore", message="The kopts argument is ignored")
        fig.write_image(png, width=width, height=height, scale=2)
    return [html, png]


def save_table(df: Any, run_dir: Path, name: str) -> Path:
    """Write a pandas DataFrame as ``name.csv`` (index included only when it is named)."""
    path = run_dir / f"{name}.csv"
    df.to_csv(path, index=df.index.name is not None)
    return path


def env_info() -> dict[str, Any]:
    """Facts about the machine and software a run used."""
    loaded = [m for m in ("numpy", "scipy", "torch", "transformers", "plotly") if sys.modules.get(m) is not None]
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "processes": processes.world_size(),  # several: each trained batch_size items a step (docs/scale-out.md)
        "time": datetime.now().isoformat(timespec="seconds"),
        **{module: getattr(sys.modules[module], "__version__", "?") for module in loaded},
        "git_commit": _git("rev-parse", "--short", "HEAD") or None,
        "git_dirty": None if status is None else bool(status),
        "code_digest": code_digest(),
    }


def _git(*args: str) -> str | None:
    """The stripped output of a git command in the repository, None where git fails or is absent."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run(["git", "-C", str(paths.ROOT), *args], capture_output=True, text=True, timeout=5)
        return done.stdout.strip() if done.returncode == 0 else None
    return None


CODE = ("lib/arrank/**/*.py", "notebooks/*.py")


def code_digest(root: Path | None = None) -> str:
    """The first 12 hex digits of a sha256 over the workbook's code (:data:`CODE`: lib and the
    notebooks' sources, by relative path and content): the code a run used, where ``git_commit`` cannot
    say it (a copied working tree with uncommitted changes, ``git_dirty``; no git at all).
    The same files give the same digest on any machine."""
    root = root or paths.ROOT
    h = hashlib.sha256()
    for path in sorted({p for pattern in CODE for p in root.glob(pattern) if p.is_file()}):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def data_digest(params: dict[str, Any]) -> dict[str, str]:
    """``{"data_digest": the first 12 hex digits of the file's sha256}`` for a run on one's own data
    (``dataset`` custom; ``data_path`` as ``arrank.data.ranking`` reads it): what the file held, so
    that a file edited after training is seen (notebook 06's ``train_run``, a resume). ``{}`` for
    WordNet and ESCI (built from pinned sources) and for a missing file (reading it names that)."""
    path = paths.ROOT / str(params.get("data_path") or "")
    if params.get("dataset") != "custom" or not params.get("data_path") or not path.is_file():
        return {}
    return {"data_digest": file_digest(path)[:12]}


def write_text_atomic(path: Path, text: str) -> Path:
    """Write ``text`` through a temporary file and a rename, so a reader never sees half a file
    (a write that fails leaves the file as it was)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        umask_permissions(Path(tmp))
        os.replace(tmp, path)
    except BaseException:  # a full disk: the file as it was, and no temporary file left
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


@contextlib.contextmanager
def staged_folder(target: Path, replace: bool = False) -> Iterator[Path]:
    """A hidden temporary folder beside ``target`` to write into, renamed to ``target`` (with the
    umask's permissions, not tempfile's 0700) when the block ends, removed if it raises, so an
    interrupted write never looks complete. An existing ``target`` is removed first with
    ``replace``; otherwise the rename fails (``OSError``) unless ``target`` is an empty folder."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        yield tmp
        umask_permissions(tmp)
        if replace and target.exists():
            shutil.rmtree(target)
        os.rename(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_json_atomic(path: Path, payload: Any) -> Path:
    """Write JSON atomically (:func:`write_text_atomic`)."""
    return write_text_atomic(path, json.dumps(payload, indent=2, default=_jsonable) + "\n")


def _jsonable(value: Any) -> Any:
    """numpy scalars and arrays, Paths: plain JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} to results.json")


def write_results(
    run_dir: Path, notebook: str, params: dict[str, Any], metrics: dict[str, Any], timings: dict[str, float]
) -> Path:
    """Write ``results.json`` = {"notebook", "params", "metrics", "timings", "env"}, last: a run
    directory with a results.json is a finished run."""
    if bad := [k for k in metrics if not isinstance(k, str) or "/" in k]:
        raise ValueError(f"metric names must be flat strings without '/': {bad}")
    payload = {"notebook": notebook, "params": params, "metrics": metrics, "timings": timings, "env": env_info()}
    # warnings: what the run told its user (notices), for the runner and the sweep
    return write_json_atomic(run_dir / "results.json", payload | {"warnings": told()})
