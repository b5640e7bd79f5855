"""What the workbook tells its user from inside a run: a checkpoint set aside, training started
over, a fallback chosen for the user (packing, precision). :func:`notice` prints the line, as
before, and keeps it, so that ``results.json`` records it (``warnings``) and the runner and the
sweep print it again on the terminal, where a sweep's user looks (docs/reliability.md)."""

from __future__ import annotations

_TOLD: dict[str, None] = {}  # the messages in the order first told, each once


def notice(message: str) -> None:
    """Print ``message`` and keep it for this run's ``results.json``."""
    print(message, flush=True)
    _TOLD.setdefault(message)


def forget() -> None:
    """Start a new run's record (``outputs.start_run``): a kernel that runs several notebooks, or
    one notebook twice, records each run's own messages."""
    _TOLD.clear()


def told() -> list[str]:
    """The messages of this process so far, in order, each once."""
    return list(_TOLD)
