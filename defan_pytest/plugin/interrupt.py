"""Ctrl-C during the model calls: one line saying how many answers are kept and how to resume,
instead of a bare ``KeyboardInterrupt`` from the waiting thread's ``threading.py``.

Every answer is committed to the cache before it counts (:class:`defan_pytest.calls.asker.Asker`),
so what the line counts is on disk; the same command run again asks only the rest.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Optional

import pytest

from defan_pytest.run import Run

__all__ = ["interrupted_message", "kept_on_interrupt"]


def interrupted_message(run: Run, shared: bool = False) -> str:
    """What a run interrupted during its calls keeps: the answers of this run (and those the
    cache had), the prompts left, and how to resume."""
    pool = run.pool
    stats = pool.stats if pool is not None else None
    total = int(getattr(stats, "total", 0) or 0)
    done = int(getattr(stats, "done", 0) or 0)
    errors = int(getattr(stats, "errors", 0) or 0)
    hits = int(getattr(stats, "cache_hits", 0) or 0)
    new = max(0, done - errors - hits)
    folder = run.cache_folder(shared)
    if folder is None or run.settings.cache == "off":
        kept = f"{_n(new, 'answer')} received, none kept (--defan-cache=off): a new run asks every prompt again"
    else:
        had = f" (and {hits:,} it had)" if hits else ""
        kept = (f"{_n(new, 'answer')} of this run kept in the cache{had}, {max(0, total - done + errors):,} of the "
                f"{total:,} prompts still to ask: run the same command again to resume")
    return f"defan-pytest: stopped by Ctrl-C during the model calls: {kept}"


def _n(count: int, word: str) -> str:
    return f"{count:,} {word}" + ("" if count == 1 else "s")


@contextmanager
def kept_on_interrupt(session: pytest.Session, run: Run, printer: Optional[Any], shared: bool = False) -> Iterator[None]:
    """Wait for the calls; on Ctrl-C, stop sending and end the session with
    :func:`interrupted_message` (``printer``: the progress line, stopped either way)."""
    try:
        yield
    except KeyboardInterrupt as exc:
        if isinstance(exc, session.Interrupted):
            raise
        if run.pool is not None:
            run.pool.stop("interrupted (Ctrl-C)")  # nothing new is sent; what is in flight is dropped
        raise session.Interrupted(interrupted_message(run, shared)) from None
    finally:
        if printer is not None:
            printer.stop()
