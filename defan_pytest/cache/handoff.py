"""Under pytest-xdist, the answers of a run's one pool handed to the workers that score them.

The controller asks every prompt through one pool (as a serial run does) and hands each
response over as it comes (:class:`HandOver`: a thread that commits them in groups); each worker
reads them in the order they came (:class:`Handed`: a thread polling by sequence number) and
waits only for the answers of the items it runs.  Nothing is claimed, so no worker ever waits
for another: a worker that dies holds nothing, and its replacement reads the same answers.  The
rows live in the run's cache file (table ``handoff``) and go with the run's other rows
(:meth:`defan_pytest.cache.coordination.Coordination.drop_run`).
"""
from __future__ import annotations

import json
import sqlite3
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from defan_pytest.cache.database import retry_locked, transaction

__all__ = ["HandOver", "Handed"]

#: Seconds between two commits of the controller, and two reads of a worker.
INTERVAL = 0.02


class HandOver:
    """The controller's side: :meth:`put` a response's JSON under its key (any thread); a
    thread commits what has queued every :data:`INTERVAL`; :meth:`close` commits the rest."""

    def __init__(self, connection: Callable[[], sqlite3.Connection], run: str) -> None:
        self.connection = connection
        self.run = run
        self._queue: List[Tuple[str, str]] = []
        self._seq = 0
        self._cond = threading.Condition()
        self._closed = False
        self.error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._loop, name="defan-handover", daemon=True)
        self._thread.start()

    def put(self, key: str, response: Dict[str, Any]) -> None:
        """Hand one response over (its fields as plain JSON)."""
        with self._cond:
            self._queue.append((key, json.dumps(response)))
            self._cond.notify()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue and self._closed:
                    return
                closing = self._closed
            if not closing:
                time.sleep(INTERVAL)  # let a group gather: one commit for many answers
            with self._cond:
                batch, self._queue = self._queue, []
            try:
                self._commit(batch)
            except BaseException as exc:  # noqa: BLE001 - kept for the run to say
                self.error = exc
                return

    def _commit(self, batch: List[Tuple[str, str]]) -> None:
        rows = []
        for key, text in batch:
            self._seq += 1
            rows.append((self.run, self._seq, key, text))
        conn = self.connection()

        def write() -> None:
            with transaction(conn):
                conn.executemany("INSERT OR REPLACE INTO handoff (run, seq, key, response) VALUES (?, ?, ?, ?)", rows)

        retry_locked(write)

    def close(self) -> None:
        """Commit what is queued and stop the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(30)


class Handed:
    """A worker's side: every response handed over so far, read by a thread every
    :data:`INTERVAL` (:meth:`get` waits for one)."""

    def __init__(self, connection: Callable[[], sqlite3.Connection], run: str,
                 fatal: Callable[[], Optional[str]] = lambda: None) -> None:
        self.connection = connection
        self.run = run
        self.fatal_source = fatal
        self.fatal: Optional[str] = None
        self.responses: Dict[str, Dict[str, Any]] = {}
        self._seq = 0
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="defan-handed", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        polls = 0
        while not self._stop.is_set():
            try:
                rows = self.connection().execute(
                    "SELECT seq, key, response FROM handoff WHERE run = ? AND seq > ? ORDER BY seq",
                    (self.run, self._seq)).fetchall()
                fatal = self.fatal_source() if polls % 10 == 0 else None
            except sqlite3.Error:
                rows, fatal = [], None
            polls += 1
            got = {}
            for seq, key, text in rows:
                self._seq = max(self._seq, int(seq))
                try:
                    value = json.loads(text)
                except ValueError:
                    continue
                if isinstance(value, dict):
                    got[str(key)] = value
            if got or fatal:
                with self._cond:
                    self.responses.update(got)
                    if fatal and self.fatal is None:
                        self.fatal = fatal
                    self._cond.notify_all()
            if not rows:
                self._stop.wait(INTERVAL)

    def get(self, key: str, timeout: Optional[float] = None) -> Optional[Dict[str, Any]]:
        """The response handed over for ``key`` (waiting for it); ``None`` when the run
        stopped first (:attr:`fatal`) or ``timeout`` passed."""
        with self._cond:
            ok = self._cond.wait_for(lambda: key in self.responses or self.fatal is not None or self._stop.is_set(),
                                     timeout)
            return self.responses.get(key) if ok else None

    def close(self) -> None:
        """Stop reading."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        self._thread.join(5)
