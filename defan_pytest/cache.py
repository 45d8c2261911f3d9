"""A persistent response cache: SQLite in WAL mode, shared safely by concurrent processes.

The key is a sha256 over everything that shapes an answer -- the model identity (model string,
every call parameter, system prompt; for a user callable its name and version) and the prompt
text -- so one model's answer is never returned for another.  A user callable without a
``version`` gets a per-run nonce in its identity: its answers are shared by the processes of one
run but never reused by another run.

Every answer is committed as it arrives, so a run stopped by Ctrl-C, ``kill -9`` or a CI
timeout resumes without re-sending a completed prompt.  Errors are never stored as answers.

Under pytest-xdist the workers also coordinate through the same file: a worker *claims* a prompt
before calling it, and a worker that finds a prompt claimed waits for the answer instead of
sending it again, so each selected prompt is sent exactly once per run.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import queue
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Mapping, Optional, Tuple

SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    prompt TEXT NOT NULL,
    answer TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS progress (
    run TEXT NOT NULL,
    owner TEXT NOT NULL,
    stats TEXT NOT NULL,         -- JSON: total, done, calls, cache_hits, retries, errors
    fatal TEXT,
    PRIMARY KEY (run, owner)
);
CREATE TABLE IF NOT EXISTS claims (
    run TEXT NOT NULL,
    key TEXT NOT NULL,
    owner TEXT NOT NULL,
    status TEXT NOT NULL,        -- 'calling', 'done' or 'failed'
    error TEXT,
    PRIMARY KEY (run, key)
);
"""
DB_NAME = "responses.sqlite3"


def identity_json(identity: Mapping[str, Any]) -> str:
    """A canonical JSON text of a model identity (sorted keys, no whitespace)."""
    return json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)


class ResponseCache:
    """The cache of one model identity in ``folder``.

    ``mode``: ``"use"`` (read and write) or ``"refresh"`` (never read an old answer, overwrite).
    ``run``: the run id; claims (cross-process coordination) are scoped to it.
    ``shared``: claim prompts before calling them (several processes share the run).
    """

    def __init__(
        self,
        folder: os.PathLike | str,
        identity: Mapping[str, Any],
        mode: str = "use",
        run: str = "",
        shared: bool = False,
        owner: str = "",
        poll: float = 0.05,
        background: bool = False,
    ) -> None:
        if mode not in ("use", "refresh"):
            raise ValueError(f"cache mode {mode!r}: expected 'use' or 'refresh'")
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / DB_NAME
        self.mode = mode
        self.run = run
        self.shared = shared
        self.owner = owner or f"pid{os.getpid()}"
        self.poll = poll
        self.model = identity_json(identity)
        self._prefix = hashlib.sha256(self.model.encode()).digest()
        self._local = threading.local()
        _retry_locked(lambda: self._conn().executescript(SCHEMA))
        # background: answers are committed one by one, at once, by a writer thread, so that a
        # commit (and SQLite's periodic checkpoint fsync) never stalls the event loop calling
        # the model.  SQLite releases the GIL while it writes, so the writer runs beside it.
        self.background = background
        self._queue: "queue.Queue[Optional[Tuple[str, str]]]" = queue.Queue()
        self._writer: Optional[threading.Thread] = None
        self._writer_error: Optional[BaseException] = None

    # -- connection ------------------------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout=30000")

            def wal() -> None:
                # Switching to WAL takes an exclusive lock, and SQLite may answer "locked" at once
                # (no busy wait) while other processes open the same new file: retry.
                if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    conn.execute("PRAGMA journal_mode=WAL")

            _retry_locked(wal)
            # NORMAL in WAL mode: a commit survives the process being killed (not a power cut),
            # at a fraction of FULL's cost per answer.
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    def close(self) -> None:
        """Commit what is queued, stop the writer and close this thread's connection."""
        if self._writer is not None:
            self._queue.join()
            self._queue.put(None)
            self._writer.join(timeout=10)
            self._writer = None
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # -- answers ---------------------------------------------------------------------------------

    def key(self, prompt: str) -> str:
        """The cache key of ``prompt`` for this model identity."""
        h = hashlib.sha256(self._prefix)
        h.update(b"\0prompt\0")
        h.update(prompt.encode("utf-8"))
        return h.hexdigest()

    def get(self, prompt: str) -> Optional[str]:
        """The cached answer, or ``None`` (always ``None`` in refresh mode)."""
        if self.mode == "refresh":
            return None
        row = self._conn().execute("SELECT answer FROM answers WHERE key = ?", (self.key(prompt),)).fetchone()
        return row[0] if row else None

    def put(self, prompt: str, answer: str) -> None:
        """Store an answer (committed at once: here, or by the writer thread in background
        mode) and mark this run's claim done."""
        if self._writer_error is not None:
            raise self._writer_error
        if self.background:
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_loop, name="defan-cache-writer", daemon=True)
                self._writer.start()
            self._queue.put((prompt, answer))
            return
        self._write(prompt, answer)

    def flush(self) -> None:
        """Wait until every answer handed to :meth:`put` is committed."""
        if self._writer is not None:
            self._queue.join()
        if self._writer_error is not None:
            raise self._writer_error

    def _write_loop(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                if self._writer_error is None:
                    self._write(*item)
            except BaseException as exc:  # reported by the next put() or flush()
                self._writer_error = exc
            finally:
                self._queue.task_done()

    def _write(self, prompt: str, answer: str) -> None:
        key = self.key(prompt)
        conn = self._conn()
        with _transaction(conn):
            conn.execute(
                "INSERT OR REPLACE INTO answers (key, model, prompt, answer, created) VALUES (?, ?, ?, ?, ?)",
                (key, self.model, prompt, answer, time.time()),
            )
            if self.shared:
                conn.execute(
                    "UPDATE claims SET status = 'done', error = NULL WHERE run = ? AND key = ?",
                    (self.run, key),
                )

    def count(self) -> int:
        """Number of answers stored for this model identity."""
        row = self._conn().execute("SELECT COUNT(*) FROM answers WHERE model = ?", (self.model,)).fetchone()
        return int(row[0])

    # -- cross-process claims ------------------------------------------------------------------

    def claim(self, prompt: str) -> bool:
        """True when this process should call ``prompt``; False when another process has it."""
        if not self.shared:
            return True
        cur = self._conn().execute(
            "INSERT OR IGNORE INTO claims (run, key, owner, status) VALUES (?, ?, ?, 'calling')",
            (self.run, self.key(prompt), self.owner),
        )
        return cur.rowcount == 1

    def mark_done(self, prompt: str) -> None:
        """This process answered ``prompt`` from the cache: waiting processes may read it."""
        if self.shared:
            self._conn().execute(
                "UPDATE claims SET status = 'done' WHERE run = ? AND key = ?", (self.run, self.key(prompt))
            )

    def release(self, prompt: str, error: str) -> None:
        """The call failed for good: waiting processes get ``error`` (it is not cached)."""
        if not self.shared:
            return
        self._conn().execute(
            "UPDATE claims SET status = 'failed', error = ? WHERE run = ? AND key = ?",
            (error, self.run, self.key(prompt)),
        )

    def status(self, prompt: str) -> Tuple[Optional[str], Optional[str], Optional[str]]:
        """``(status, answer, error)`` of this run's claim on ``prompt``."""
        key = self.key(prompt)
        conn = self._conn()
        row = conn.execute("SELECT status, error FROM claims WHERE run = ? AND key = ?", (self.run, key)).fetchone()
        if row is None:
            return None, None, None
        status, error = row
        if status == "done":
            ans = conn.execute("SELECT answer FROM answers WHERE key = ?", (key,)).fetchone()
            return status, (ans[0] if ans else None), None
        return status, None, error

    async def wait(self, prompt: str, stop: Optional[threading.Event] = None) -> Tuple[Optional[str], Optional[str]]:
        """Wait for another process's answer: ``(answer, None)``, ``(None, error)``, or
        ``(None, None)`` when ``stop`` was set first."""
        while stop is None or not stop.is_set():
            status, answer, error = self.status(prompt)
            if status == "done" and answer is not None:
                return answer, None
            if status == "failed":
                return None, error or "the call failed in another worker"
            await asyncio.sleep(self.poll)
        return None, None

    # -- progress of the processes of one run ---------------------------------------------------

    def report_progress(self, stats: Mapping[str, Any], fatal: Optional[str] = None) -> None:
        """Publish this process's counters (and a run-stopping failure) for the controller."""
        self._conn().execute(
            "INSERT OR REPLACE INTO progress (run, owner, stats, fatal) VALUES (?, ?, ?, ?)",
            (self.run, self.owner, json.dumps(dict(stats)), fatal),
        )

    def run_progress(self) -> Tuple[Optional[dict], Optional[str]]:
        """Counters of every process of the run combined, and the first run-stopping failure."""
        rows = self._conn().execute("SELECT stats, fatal FROM progress WHERE run = ?", (self.run,)).fetchall()
        if not rows:
            return None, None
        stats = [json.loads(r[0]) for r in rows]
        fatal = next((r[1] for r in rows if r[1]), None)
        # Every process walks every prompt, and claims split the work: progress is the furthest
        # process; requests, cache hits (each claimed by one process), retries and errors add up.
        out = {
            "total": max(s.get("total", 0) for s in stats),
            "done": max(s.get("done", 0) for s in stats),
            "cache_hits": sum(s.get("cache_hits", 0) for s in stats),
            "calls": sum(s.get("calls", 0) for s in stats),
            "retries": sum(s.get("retries", 0) for s in stats),
            "errors": sum(s.get("errors", 0) for s in stats),
        }
        return out, fatal

    def drop_run(self) -> None:
        """Forget this run's claims and progress (the controller does this at the end)."""
        conn = self._conn()
        conn.execute("DELETE FROM claims WHERE run = ?", (self.run,))
        conn.execute("DELETE FROM progress WHERE run = ?", (self.run,))


def _retry_locked(fn: Any, seconds: float = 30.0) -> Any:
    """Run ``fn``, retrying while SQLite says the database is locked (up to ``seconds``)."""
    deadline = time.monotonic() + seconds
    delay = 0.01
    while True:
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(0.2, delay * 2)


class _transaction:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.conn.execute("COMMIT" if exc_type is None else "ROLLBACK")
