"""Ctrl-C during the model calls: one line saying how many answers are kept and how to resume,
instead of a bare ``KeyboardInterrupt`` from the waiting thread's ``threading.py`` -- in a
serial run, and on the controller of an xdist run (its workers, interrupted too, have committed
their answers; the line counts what the cache holds).

Every answer is committed to the cache before it counts (:class:`defan_pytest.calls.asker.Asker`),
so what the line counts is on disk; the same command run again asks only the rest.
"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

import pytest

from defan_pytest.run import Run
from defan_pytest.run.plan import still_to_ask
from defan_pytest.safetext import inline

__all__ = ["interrupted_message", "kept_on_interrupt"]


def interrupted_message(run: Run, shared: bool = False, others: Sequence[Run] = ()) -> str:
    """What a run interrupted during its calls keeps: the answers of this run (and those the
    cache had), the prompts left, and how to resume; with ``others`` (the other models of a
    session of several), each model's."""
    if others:
        resume = ": run the same command again to resume"
        kept = [_kept(r, shared) for r in (run, *others)]
        each = "; ".join(f"{inline(r.model_name)}: {k.replace(resume, '')}" for r, k in zip((run, *others), kept))
        return f"defan-pytest: stopped by Ctrl-C during the model calls: {each}" + (resume if any(resume in k for k in kept) else "")
    return f"defan-pytest: stopped by Ctrl-C during the model calls: {_kept(run, shared)}"


def _kept(run: Run, shared: bool) -> str:
    pool = run.pool
    folder = run.cache_folder(shared)
    if pool is None:  # an xdist controller: its workers, interrupted too, committed what they have
        return _in_cache(run, folder)
    stats = pool.stats
    total, done, errors, hits = (int(getattr(stats, k, 0) or 0) for k in ("total", "done", "errors", "cache_hits"))
    new = max(0, done - errors - hits)
    if folder is None or run.settings.cache == "off":
        return f"{_n(new, 'answer')} received, none kept (--defan-cache=off): a new run asks every prompt again"
    store = run.cache
    prompts = getattr(pool, "prompts", None)
    if store is not None and prompts:
        # What the cache holds once the pool settled (the requests in flight at the stop
        # answered or dropped), not what the progress had counted when the signal came.
        try:
            kept = store.held([p.stored for p in prompts])
        except Exception:  # noqa: BLE001 - a cache that cannot be read: the counters say it
            kept = None
        if kept is not None:
            total = len(prompts)
            new = max(0, kept - hits)
            done = kept
            errors = 0
    had = f" (and {hits:,} it had)" if hits else ""
    return (f"{_n(new, 'answer')} of this run kept in the cache{had}, {max(0, total - done + errors):,} of the "
            f"{total:,} prompts still to ask: run the same command again to resume")


def _in_cache(run: Run, folder: Optional[Path]) -> str:
    """What the cache holds of the run's prompts, read from it (the workers' published
    progress may lag behind their last answers)."""
    texts = list(dict.fromkeys(r.question for r in run.rows))
    if folder is None or run.settings.cache == "off":
        return "--defan-cache=off: none of the answers is kept, a new run asks every prompt again"
    left = len(still_to_ask(run.settings, run.plan, texts, folder))
    return (f"{len(texts) - left:,} of the {len(texts):,} prompts have an answer in the cache, {left:,} still to ask: "
            "run the same command again to resume")


def _n(count: int, word: str) -> str:
    return f"{count:,} {word}" + ("" if count == 1 else "s")


@contextmanager
def kept_on_interrupt(session: pytest.Session, run: Run, printer: Optional[Any], shared: bool = False,
                      others: Sequence[Run] = ()) -> Iterator[None]:
    """Wait for the calls; on Ctrl-C, stop sending and end the session with
    :func:`interrupted_message` (``printer``: the progress line, stopped either way;
    ``others``: the other models' runs of the session, stopped and counted too)."""
    try:
        yield
    except KeyboardInterrupt as exc:
        # Ctrl-C itself, or xdist's word that a worker got it; not a stop of the run's own
        # (pytest's and xdist's Interrupted: a fatal failure, -x) with a message to keep.
        if type(exc) is not KeyboardInterrupt and "received keyboard-interrupt" not in str(exc):
            raise
        for each in (run, *others):
            if each.pool is not None:
                # Nothing new is sent (each send checks the stop first); what is in flight has a
                # few seconds to answer, then is dropped: the line counts what the cache holds then.
                halt = getattr(each.pool, "halt", None)
                if callable(halt):
                    halt("interrupted (Ctrl-C)")
                else:
                    each.pool.stop("interrupted (Ctrl-C)")
        raise session.Interrupted(interrupted_message(run, shared, others)) from None
    finally:
        if printer is not None:
            printer.stop()
