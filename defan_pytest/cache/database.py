"""The cache's SQLite file: its schema (answers, and the tables by which the processes of one
run coordinate), a connection as every part of the cache opens it (WAL mode, a busy timeout,
any thread), the upgrade of a database made by an earlier version, and the two ways the cache
writes: :func:`transaction` and :func:`retry_locked`.
"""
from __future__ import annotations

import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

__all__ = ["DB_NAME", "SCHEMA", "connect", "retry_locked", "transaction", "upgrade"]

#: The database's file name in the cache folder.
DB_NAME = "responses.sqlite3"

SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    prompt TEXT NOT NULL,
    answer TEXT NOT NULL,
    created REAL NOT NULL,
    note TEXT,                   -- what was changed on the way in (invalid code points)
    prompt_tokens INTEGER,       -- what the provider counted for the request that answered
    completion_tokens INTEGER,
    latency REAL,                -- seconds that request took
    finish_reason TEXT           -- why the model stopped (stop, length, ...); NULL: unknown
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
    status TEXT NOT NULL,        -- 'calling', 'done' (the model answered), 'cached' or 'failed'
    error TEXT,
    attempts INTEGER,            -- requests the owner sent for it
    PRIMARY KEY (run, key)
);
-- Another run's claim on a prompt, found by the prompt (two sessions on one cache).
CREATE INDEX IF NOT EXISTS claims_by_key ON claims (key);
CREATE TABLE IF NOT EXISTS spending (
    run TEXT NOT NULL,
    owner TEXT NOT NULL,
    spent REAL NOT NULL,         -- USD: what this process's answers cost (--defan-budget)
    inflight REAL NOT NULL,      -- USD: the estimated cost of its requests in flight
    requests INTEGER,            -- how many requests it has in flight
    largest INTEGER,             -- the largest completion (tokens) it has seen
    PRIMARY KEY (run, owner)
);
-- Under xdist: the prompts a worker's collection selected (after -k, -m, --deselect ...),
-- which the controller asks and runs itself.
CREATE TABLE IF NOT EXISTS selection (
    run TEXT NOT NULL,
    owner TEXT NOT NULL,
    ids TEXT NOT NULL,           -- JSON: the selected rows' ids, in order
    PRIMARY KEY (run, owner)
);
CREATE TABLE IF NOT EXISTS members (
    run TEXT NOT NULL,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started REAL NOT NULL,
    PRIMARY KEY (run, owner)
);
"""
# Columns added since the first release, for databases created before them.
_ADDED_COLUMNS = (("answers", "note", "TEXT"), ("claims", "attempts", "INTEGER"),
                  ("answers", "prompt_tokens", "INTEGER"), ("answers", "completion_tokens", "INTEGER"),
                  ("answers", "latency", "REAL"), ("spending", "requests", "INTEGER"),
                  ("spending", "largest", "INTEGER"), ("answers", "finish_reason", "TEXT"))


def connect(path: Path) -> sqlite3.Connection:
    """A connection in WAL mode with a busy timeout, for any thread."""
    conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout=30000")

    def wal() -> None:
        # Switching to WAL takes an exclusive lock, and SQLite may answer "locked" at once
        # (no busy wait) while other processes open the same new file: retry.
        if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            conn.execute("PRAGMA journal_mode=WAL")

    retry_locked(wal)
    # NORMAL in WAL mode: a commit survives the process being killed (not a power cut), at a
    # fraction of FULL's cost per answer.
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def upgrade(conn: sqlite3.Connection) -> None:
    """Bring a database made by an earlier version up to the current schema."""
    for table, column, kind in _ADDED_COLUMNS:
        have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
        if column not in have:
            try:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
            except sqlite3.OperationalError as exc:  # another process added it just now
                if "duplicate column" not in str(exc):
                    raise


def retry_locked(fn: Callable[[], Any], seconds: float = 30.0) -> Any:
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


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction (taking the write lock at once): committed, or rolled back when
    the block raises."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
