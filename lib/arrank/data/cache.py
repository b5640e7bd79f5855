"""Cached datasets under data/cache: a folder per parameter set, named by a short hash.

A folder holds one ``<table>.parquet`` per table, a ``manifest.json`` (``arrank.common.manifest``)
and a ``params.json``, written in a hidden temporary folder renamed into place, so nothing
half-written sits under the hash's name. A folder that fails to load is derived data: set aside as
``broken-<hash>-<time>`` with one line, and built again."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Iterable, Mapping

import pandas as pd

from arrank.common.manifest import manifest_problem, set_aside, write_manifest
from arrank.common.outputs import staged_folder, write_json_atomic


def params_hash(params: Mapping[str, Any]) -> str:
    """Short hash (12 hex digits) of JSON-able parameters: the cache folder's name."""
    text = json.dumps(dict(params), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def save_tables(target: Path, tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> Path:
    """Write each table as ``<name>.parquet`` plus ``params.json`` through a temporary folder renamed
    into place (``outputs.staged_folder``); if another process finished ``target`` first, its copy is kept."""
    try:
        with staged_folder(target) as tmp:
            for name, df in tables.items():
                df.to_parquet(tmp / f"{name}.parquet", index=False)
            write_manifest(tmp)
            write_json_atomic(tmp / "params.json", dict(meta))
    except OSError:
        if not (target / "params.json").is_file():
            raise
    return target


def cached_tables(
    target: Path, list_columns: Iterable[str] = (), names: Iterable[str] = ()
) -> dict[str, pd.DataFrame] | None:
    """The tables saved by :func:`save_tables` in ``target`` (cells of ``list_columns`` as Python
    lists), or None: no folder, or one that
    fails to load (no params.json, a file against its manifest, an unreadable file, one of ``names``
    missing), which is then set aside with one line so that the caller builds it again."""
    if not target.exists():
        return None
    if not target.is_dir():
        why = "it is a file, not a cache folder"
    elif (target / "params.json").is_file():  # written last, inside the renamed folder
        why = manifest_problem(target, required=False)
    else:
        why = "it has no params.json (cut short)"
    if why is None:
        try:
            tables = {path.stem: pd.read_parquet(path) for path in sorted(target.glob("*.parquet"))}
            for df in tables.values():
                for col in set(list_columns) & set(df.columns):
                    df[col] = [list(v) for v in df[col]]
            if not (missing := sorted(set(names) - set(tables))):
                return tables
            why = f"its table(s) {missing} are missing"
        except Exception as err:  # pyarrow raises ArrowInvalid, OSError, ... on a damaged file
            why = f"it cannot be read ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})"
    set_aside(target, f"{why}; it is derived data and is built again now")
    return None
