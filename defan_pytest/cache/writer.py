"""The cache's writer thread: answers committed in groups, so that a commit (and SQLite's
periodic checkpoint fsync) never stalls the event loop calling the model.  SQLite releases the
GIL while it writes, so the writer runs beside the loop.  Each answer handed over by
:meth:`defan_pytest.cache.store.ResponseCache.save` wakes its waiting call once committed.
"""
from __future__ import annotations

import asyncio
import queue
import threading
from typing import Callable, List, Optional, Tuple

__all__ = ["Pending", "Writer"]

#: The most answers one transaction commits.
BATCH = 512


class Pending:
    """An answer on its way to the writer thread, and whom to wake once it is committed."""

    __slots__ = ("prompt", "answer", "note", "attempts", "loop", "done", "usage", "finish_reason")

    def __init__(
        self, prompt: str, answer: str, note: Optional[str], attempts: int,
        loop: Optional[asyncio.AbstractEventLoop] = None, done: "Optional[asyncio.Future[None]]" = None,
        usage: Tuple[Optional[int], Optional[int], Optional[float]] = (None, None, None),
        finish_reason: Optional[str] = None,
    ) -> None:
        self.prompt = prompt
        self.answer = answer
        self.note = note
        self.attempts = attempts
        self.loop = loop
        self.done = done
        self.usage = usage  # prompt tokens, completion tokens, latency
        self.finish_reason = finish_reason  # why the model stopped (None: unknown)

    def settle(self, error: Optional[BaseException]) -> None:
        """Wake the call waiting in :meth:`defan_pytest.cache.store.ResponseCache.save` (from the
        writer thread)."""
        if self.loop is None or self.done is None:
            return
        fut = self.done

        def resolve() -> None:
            if fut.done():  # the call was cancelled meanwhile (the run stopped)
                return
            if error is None:
                fut.set_result(None)
            else:
                fut.set_exception(error)

        try:
            self.loop.call_soon_threadsafe(resolve)
        except RuntimeError:  # its loop has closed: nobody waits any more
            pass


class Writer:
    """Commits the :class:`Pending` answers handed to :meth:`put` with ``write(items)`` (one
    transaction), in a daemon thread started at the first answer."""

    def __init__(self, write: Callable[[List[Pending]], None]) -> None:
        self._write = write
        self._queue: "queue.Queue[Optional[Pending]]" = queue.Queue()
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()
        #: What a commit raised that no waiting call was told (answers handed over by ``put``).
        self.error: Optional[BaseException] = None

    def put(self, item: Pending) -> None:
        """Queue an answer for the next commit."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="defan-cache-writer", daemon=True)
                self._thread.start()
        self._queue.put(item)

    def join(self) -> None:
        """Return once every answer queued so far is committed (or failed)."""
        if self._thread is not None:
            self._queue.join()

    def raise_error(self) -> None:
        """Raise what a commit of answers nobody waited for raised, if one did."""
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        """Commit what is queued and stop the thread."""
        if self._thread is not None:
            self._queue.join()
            self._queue.put(None)
            self._thread.join(timeout=10)
            self._thread = None

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            batch: List[Optional[Pending]] = [first]
            # Group commit: everything that queued up while the last commit ran goes in one
            # transaction (one commit per batch, not per answer, when answers arrive fast).
            while len(batch) < BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            items = [b for b in batch if b is not None]
            error: Optional[BaseException] = None
            try:
                if items:
                    self._write(items)
            except BaseException as exc:  # reported to each waiting call, and by raise_error()
                error = exc
                if not any(i.done is not None for i in items):
                    self.error = exc
            for item in items:
                item.settle(error)
            for _ in batch:
                self._queue.task_done()
            if len(items) < len(batch):
                return
