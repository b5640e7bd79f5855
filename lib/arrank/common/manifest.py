"""Manifests: a folder's ``manifest.json`` lists each file's size and sha256, so damage is found
before the folder is used; a folder that fails is set aside, never deleted (docs/reliability.md)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from datetime import datetime
from pathlib import Path
from typing import Callable

from arrank.common import paths
from arrank.common.notices import notice

MANIFEST = "manifest.json"


def file_digest(path: Path) -> str:
    """sha256 of a file, hex (read in 1 MiB blocks: ``hashlib.file_digest`` needs Python 3.11)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fsync_path(path: Path) -> None:
    """Flush a file's data, or a folder's entries, to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def data_rows(path: Path, name: str | None = None) -> int:
    """The rows a data file holds: a CSV's lines below its header, another file's lines (a ``.gz``
    read through; a gzip stream cut short is a one-line ``ValueError`` naming the file, or ``name``)."""
    try:
        with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as fh:
            lines = sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 20), b""))
    except (EOFError, gzip.BadGzipFile) as err:
        raise ValueError(f"{name or path} is not a whole gzip file ({err})") from None
    return lines - (".csv" in path.suffixes)


def write_manifest(folder: Path, rows: bool = False) -> dict[str, dict[str, int | str]]:
    """Write ``manifest.json`` = {"files": {relative path: {size, sha256}}} for every file under
    ``folder`` (and ``rows``, ``data_rows``, with ``rows``); each file is flushed to disk first and the
    manifest and the folders after, so that a manifest on disk vouches for data on disk. Returns the entries."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST)
    entries = {}
    for path in files:
        fsync_path(path)
        entry = {"size": path.stat().st_size, "sha256": file_digest(path)} | ({"rows": data_rows(path)} if rows else {})
        entries[path.relative_to(folder).as_posix()] = entry
    (folder / MANIFEST).write_text(json.dumps({"files": entries}, indent=1))
    for path in [folder / MANIFEST, *sorted({p.parent for p in files} | {folder})]:
        fsync_path(path)
    return entries


def manifest_problem(folder: Path, required: bool = True, whole: bool = False) -> str | None:
    """What is wrong with ``folder`` against its manifest, in words; None when every file it lists
    is there with its size and sha256 (and, unless ``required``, when there is no manifest: a
    folder written before manifests existed); with ``whole``, every file in it must be listed too.
    A file whose manifest entry records its ``rows`` is named with the rows it holds now."""
    try:
        files = json.loads((folder / MANIFEST).read_text())["files"]
        files = {n: {**w, "size": w["size"], "sha256": w["sha256"]} for n, w in files.items()}  # each entry's shape
    except FileNotFoundError:
        return "it has no manifest.json (cut short while written, or made before manifests)" if required else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        return f"its manifest.json is unreadable ({type(err).__name__})"
    for name, want in files.items():
        path = folder / name
        try:
            size = path.stat().st_size
            same = size == want["size"] and file_digest(path) == want["sha256"]
            rows = data_rows(path, name) if not same and "rows" in want else want.get("rows")
        except OSError as err:
            return f"{name} cannot be read ({err.strerror or err})"
        except ValueError as err:  # a gzip stream cut short
            return str(err)
        if rows != want.get("rows"):
            return f"{name} holds {rows:,} rows where the manifest records {want['rows']:,}"
        if size != want["size"]:
            return f"{name} is {size:,} bytes where the manifest says {want['size']:,}"
        if not same:
            return f"{name} does not match its sha256 in the manifest (altered on disk)"
    unlisted = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) if whole else []
    extra = [name for name in unlisted if name not in files and name != MANIFEST]
    return f"{extra[0]} is not in its manifest.json ({len(extra)} files are not)" if extra else None


def set_aside(folder: Path, why: str, say: Callable[[str], None] = notice) -> Path:
    """Rename an unusable folder to ``broken-<its name>-<time>`` beside it (nothing is
    deleted) and say so in one line naming it and why; returns the new path."""
    target = paths.unused(folder.parent / f"broken-{folder.name}-{datetime.now():%Y%m%d-%H%M%S}")
    os.rename(folder, target)
    say(f"{folder} is unusable: {why}; set aside as {target.name}")
    return target
