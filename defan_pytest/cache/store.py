"""A persistent response cache: SQLite in WAL mode, shared safely by concurrent processes.

The key is a sha256 over everything that shapes an answer -- the model identity (model string,
every call parameter but credentials, system prompt; for a user callable its name, version and
a digest of its source) and the prompt text -- so one model's answer is never returned for
another.  A user callable without a ``version`` gets a per-run nonce in its identity: its
answers are shared by the processes of one run but never reused by another run.  Credentials
are never part of the identity (:func:`defan_pytest.calls.redaction.public_identity`): a new API key
reuses the answers of the old one, and no key is ever written here.

Every answer is committed before the pool counts it as done (:meth:`ResponseCache.save`), so a
run stopped by Ctrl-C, ``kill -9`` or a CI timeout resumes without re-sending a completed
prompt: at most the requests in flight at the kill are sent again.  Errors are never stored as
answers.  Each answer keeps what it cost -- the tokens the provider counted and the request's
latency -- so that a cached answer is reported with its usage (and counted as cached); a
database of an earlier version gains those columns when opened, its answers' usage unknown.

Under pytest-xdist the workers also coordinate through the same file: a worker *claims* a prompt
before calling it, and a worker that finds a prompt claimed waits for the answer instead of
sending it again, so each selected prompt is sent exactly once per run.  Under ``--defan-budget`` they also
share their spending (``spending``), so that together they keep to the one budget.  Every process that
claims registers itself (``members``); claims and progress of runs whose processes are all gone
(a run killed before its controller could drop them) are removed when the next cache opens.

:func:`check_folder` validates a cache folder before a run makes any call, so that a file in
the way, a read-only folder or a corrupt database is one usage error naming the path and the
way out (``--defan-cache=refresh`` moves a corrupt database aside and starts a new one).
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import queue
import socket
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterable, List, Mapping, NamedTuple, Optional, Tuple

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
    latency REAL                 -- seconds that request took
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
CREATE TABLE IF NOT EXISTS spending (
    run TEXT NOT NULL,
    owner TEXT NOT NULL,
    spent REAL NOT NULL,         -- USD: what this process's answers cost (--defan-budget)
    inflight REAL NOT NULL,      -- USD: the estimated cost of its requests in flight
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
                  ("answers", "latency", "REAL"))
DB_NAME = "responses.sqlite3"
#: A run seen from another host is presumed dead this long after it started (its processes
#: cannot be asked).
FOREIGN_RUN_LIFETIME = 24 * 3600.0
_HOST = socket.gethostname()


class CacheError(Exception):
    """The cache folder cannot be used; the message names the path and what to do."""


class Waited(NamedTuple):
    """What another process of the run made of a prompt it claimed."""

    text: Optional[str]  # its answer, or None
    error: Optional[str]  # why it failed, when it did
    note: Optional[str] = None  # what was changed in the answer on the way in
    answered_by: str = "model"  # "model", or "cache" when it read a stored answer
    attempts: int = 0  # requests it sent
    prompt_tokens: Optional[int] = None  # the answer's usage, as stored with it
    completion_tokens: Optional[int] = None
    latency: Optional[float] = None


class Entry(NamedTuple):
    """A stored answer with what it cost: tokens and latency (``None`` for answers stored by a
    version that did not keep them, and for a callable's answers, whose tokens nobody counted)."""

    answer: str
    note: Optional[str] = None
    prompt_tokens: Optional[int] = None
    completion_tokens: Optional[int] = None
    latency: Optional[float] = None


def identity_json(identity: Mapping[str, Any]) -> str:
    """A canonical JSON text of a model identity (sorted keys, no whitespace)."""
    return json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)


def _pid_alive(pid: int, registered: Optional[float] = None) -> bool:
    """Whether process ``pid`` of this host still runs (and, when ``registered`` says when it
    registered, is the same process, not a later one given the same pid)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # it exists (another user's), or we cannot tell: keep its rows
    try:
        # Linux: a killed process whose parent died too may stay a zombie for ever where no
        # init reaps orphans (containers); and a pid is reused once its process is gone.
        stat = Path(f"/proc/{pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] in ("Z", "X"):
            return False
        if registered is not None:
            ticks = os.sysconf("SC_CLK_TCK")
            boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                        if line.startswith("btime "))
            if boot + int(fields[19]) / ticks > registered + 2.0:
                return False  # started after the member registered: another process
    except (OSError, ValueError, IndexError, StopIteration):
        pass
    return True


class ResponseCache:
    """The cache of one model identity in ``folder``.

    ``mode``: ``"use"`` (read and write) or ``"refresh"`` (never read an old answer, overwrite).
    ``run``: the run id; claims (cross-process coordination) are scoped to it.
    ``shared``: claim prompts before calling them (several processes share the run).
    ``background``: answers are committed by a writer thread (see :meth:`save`).
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
        conn = self._conn()
        _retry_locked(lambda: conn.executescript(SCHEMA))
        _retry_locked(lambda: _add_columns(conn))
        if shared:
            # Registered before any claim, so that a claim is never seen without its member.
            conn.execute(
                "INSERT OR REPLACE INTO members (run, owner, host, pid, started) VALUES (?, ?, ?, ?, ?)",
                (self.run, self.owner, _HOST, os.getpid(), time.time()),
            )
        _retry_locked(lambda: self.drop_dead_runs())
        # background: answers are committed by a writer thread, in groups, so that a commit (and
        # SQLite's periodic checkpoint fsync) never stalls the event loop calling the model.
        # SQLite releases the GIL while it writes, so the writer runs beside the loop.
        self.background = background
        self._queue: "queue.Queue[Optional[_Pending]]" = queue.Queue()
        self._writer: Optional[threading.Thread] = None
        self._writer_lock = threading.Lock()
        self._writer_error: Optional[BaseException] = None

    # -- connection ------------------------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = _connect(self.path)
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
        return _key_of(self._prefix, prompt)

    def get(self, prompt: str) -> Optional[str]:
        """The cached answer, or ``None`` (always ``None`` in refresh mode)."""
        hit = self.lookup(prompt)
        return hit[0] if hit is not None else None

    def lookup(self, prompt: str) -> Optional[Tuple[str, Optional[str]]]:
        """``(answer, note)`` of the cached answer, or ``None`` (always in refresh mode)."""
        entry = self.lookup_entry(prompt)
        return (entry.answer, entry.note) if entry is not None else None

    def lookup_entry(self, prompt: str) -> Optional[Entry]:
        """The cached answer with its note, tokens and latency, or ``None`` (always in refresh
        mode)."""
        if self.mode == "refresh":
            return None
        row = self._conn().execute(
            "SELECT answer, note, prompt_tokens, completion_tokens, latency FROM answers WHERE key = ?",
            (self.key(prompt),),
        ).fetchone()
        return Entry(*row) if row else None

    def uncached(self, prompts: Iterable[str]) -> List[str]:
        """The prompts without a cached answer (all of them in refresh mode): one read of the
        keys' index for many prompts, not a query each (the estimate before a big run)."""
        if self.mode == "refresh":
            return list(prompts)
        return uncached(self._conn(), self._prefix, prompts)

    def put(self, prompt: str, answer: str, note: Optional[str] = None, attempts: int = 1,
            prompt_tokens: Optional[int] = None, completion_tokens: Optional[int] = None,
            latency: Optional[float] = None) -> None:
        """Store an answer (committed here, or queued for the writer thread in background mode:
        :meth:`flush` waits for it) and mark this run's claim done."""
        if self._writer_error is not None:
            raise self._writer_error
        item = _Pending(prompt, answer, note, attempts, usage=(prompt_tokens, completion_tokens, latency))
        if self.background:
            self._start_writer()
            self._queue.put(item)
            return
        self._write([item])

    async def save(self, prompt: str, answer: str, note: Optional[str] = None, attempts: int = 1,
                   prompt_tokens: Optional[int] = None, completion_tokens: Optional[int] = None,
                   latency: Optional[float] = None) -> None:
        """Store an answer and return once it is committed (raises what the commit raised).

        The pool awaits this before it counts the answer as done, so answers never wait in a
        queue a kill would lose: at most one per call slot is between the model and the disk.
        In background mode the event loop is not blocked meanwhile -- the writer thread commits
        whatever has queued up in one transaction and wakes each waiting call.
        """
        usage = (prompt_tokens, completion_tokens, latency)
        if not self.background:
            self._write([_Pending(prompt, answer, note, attempts, usage=usage)])
            return
        loop = asyncio.get_running_loop()
        done: "asyncio.Future[None]" = loop.create_future()
        self._start_writer()
        self._queue.put(_Pending(prompt, answer, note, attempts, loop, done, usage))
        await done

    def flush(self) -> None:
        """Wait until every answer handed to :meth:`put` or :meth:`save` is committed."""
        if self._writer is not None:
            self._queue.join()
        if self._writer_error is not None:
            raise self._writer_error

    def _start_writer(self) -> None:
        with self._writer_lock:
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_loop, name="defan-cache-writer", daemon=True)
                self._writer.start()

    def _write_loop(self) -> None:
        while True:
            first = self._queue.get()
            batch: List[Optional[_Pending]] = [first]
            # Group commit: everything that queued up while the last commit ran goes in one
            # transaction (one commit per batch, not per answer, when answers arrive fast).
            while len(batch) < 512:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            items = [b for b in batch if b is not None]
            error: Optional[BaseException] = None
            try:
                if items:
                    self._write(items)
            except BaseException as exc:  # reported to each waiting call, and by put()/flush()
                error = exc
                if not any(i.done is not None for i in items):
                    self._writer_error = exc
            for item in items:
                item.settle(error)
            for _ in batch:
                self._queue.task_done()
            if len(items) < len(batch):
                return

    def _write(self, items: List["_Pending"]) -> None:
        conn = self._conn()
        now = time.time()
        rows = [(self.key(i.prompt), self.model, i.prompt, i.answer, now, i.note, *i.usage) for i in items]
        with _transaction(conn):
            conn.executemany(
                "INSERT OR REPLACE INTO answers (key, model, prompt, answer, created, note, prompt_tokens, "
                "completion_tokens, latency) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            if self.shared:
                conn.executemany(
                    "UPDATE claims SET status = 'done', error = NULL, attempts = ? WHERE run = ? AND key = ?",
                    [(i.attempts, self.run, row[0]) for i, row in zip(items, rows)],
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
                "UPDATE claims SET status = 'cached', attempts = 0 WHERE run = ? AND key = ?",
                (self.run, self.key(prompt)),
            )

    def release(self, prompt: str, error: str, attempts: int = 1) -> None:
        """The call failed for good: waiting processes get ``error`` (it is not cached)."""
        if not self.shared:
            return
        self._conn().execute(
            "UPDATE claims SET status = 'failed', error = ?, attempts = ? WHERE run = ? AND key = ?",
            (error, attempts, self.run, self.key(prompt)),
        )

    def status(self, prompt: str) -> Tuple[Optional[str], Optional[str], Optional[str]]:
        """``(status, answer, error)`` of this run's claim on ``prompt`` (status ``'done'``
        whether the owner asked the model or read the cache)."""
        w = self._claim_state(prompt)
        if w is None:
            return None, None, None
        status, waited = w
        if status in ("done", "cached"):
            return "done", waited.text, None
        return status, None, waited.error

    def _claim_state(self, prompt: str) -> Optional[Tuple[str, Waited]]:
        key = self.key(prompt)
        conn = self._conn()
        row = conn.execute(
            "SELECT status, error, attempts FROM claims WHERE run = ? AND key = ?", (self.run, key)
        ).fetchone()
        if row is None:
            return None
        status, error, attempts = row
        if status in ("done", "cached"):
            ans = conn.execute(
                "SELECT answer, note, prompt_tokens, completion_tokens, latency FROM answers WHERE key = ?", (key,)
            ).fetchone()
            by = "cache" if status == "cached" else "model"
            if ans is None:
                return status, Waited(None, None, None, by, int(attempts or 0))
            return status, Waited(ans[0], None, ans[1], by, int(attempts or 0), ans[2], ans[3], ans[4])
        return status, Waited(None, error, None, "model", int(attempts or 0))

    async def wait(self, prompt: str, stop: Optional[threading.Event] = None) -> Waited:
        """Wait for another process's answer: a :class:`Waited` with its answer or its error,
        or neither when ``stop`` was set first."""
        while stop is None or not stop.is_set():
            state = self._claim_state(prompt)
            if state is not None:
                status, waited = state
                if status in ("done", "cached") and waited.text is not None:
                    return waited
                if status == "failed":
                    return waited._replace(error=waited.error or "the call failed in another worker")
            await asyncio.sleep(self.poll)
        return Waited(None, None)

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

    # -- the spending of the processes of one run (--defan-budget under xdist) -----------------

    def publish_spending(self, spent: float, inflight: float) -> None:
        """This process's spending and the estimated cost of its requests in flight."""
        self._conn().execute(
            "INSERT OR REPLACE INTO spending (run, owner, spent, inflight) VALUES (?, ?, ?, ?)",
            (self.run, self.owner, spent, inflight),
        )

    def others_spending(self) -> Tuple[float, float]:
        """What the other processes of the run spent and have in flight (USD)."""
        row = self._conn().execute(
            "SELECT COALESCE(SUM(spent), 0), COALESCE(SUM(inflight), 0) FROM spending WHERE run = ? AND owner != ?",
            (self.run, self.owner),
        ).fetchone()
        return float(row[0]), float(row[1])

    def drop_run(self) -> None:
        """Forget this run's claims, progress and members (the controller does this at the end)."""
        conn = self._conn()
        with _transaction(conn):
            for table in ("claims", "progress", "spending", "members"):
                conn.execute(f"DELETE FROM {table} WHERE run = ?", (self.run,))

    def drop_dead_runs(self) -> List[str]:
        """Remove the claims, progress and members of every other run none of whose processes
        is alive (a run killed before its controller dropped them); returns their ids.

        A run is alive while one of its members is: a process of this host that still exists,
        or one of another host (a shared folder) that started less than a day ago.  Claims of
        a run with no member at all are left by a version that did not register members.
        """
        conn = self._conn()
        runs = {r[0] for r in conn.execute("SELECT DISTINCT run FROM claims UNION SELECT DISTINCT run FROM progress")}
        members: dict = {}
        for run, host, pid, started in conn.execute("SELECT run, host, pid, started FROM members"):
            members.setdefault(run, []).append((host, pid, started))
        now = time.time()
        dead = []
        for run in (runs | set(members)) - {self.run}:
            alive = any(
                _pid_alive(int(pid), float(started)) if host == _HOST else now - float(started) < FOREIGN_RUN_LIFETIME
                for host, pid, started in members.get(run, ())
            )
            if not alive:
                dead.append(run)
        if dead:
            with _transaction(conn):
                for run in dead:
                    for table in ("claims", "progress", "spending", "members"):
                        conn.execute(f"DELETE FROM {table} WHERE run = ?", (run,))
        return dead


class _Pending:
    """An answer on its way to the writer thread, and whom to wake once it is committed."""

    __slots__ = ("prompt", "answer", "note", "attempts", "loop", "done", "usage")

    def __init__(
        self, prompt: str, answer: str, note: Optional[str], attempts: int,
        loop: Optional[asyncio.AbstractEventLoop] = None, done: "Optional[asyncio.Future[None]]" = None,
        usage: Tuple[Optional[int], Optional[int], Optional[float]] = (None, None, None),
    ) -> None:
        self.prompt = prompt
        self.answer = answer
        self.note = note
        self.attempts = attempts
        self.loop = loop
        self.done = done
        self.usage = usage  # prompt tokens, completion tokens, latency

    def settle(self, error: Optional[BaseException]) -> None:
        """Wake the call waiting in :meth:`ResponseCache.save` (from the writer thread)."""
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


def _key_of(prefix: bytes, prompt: str) -> str:
    h = hashlib.sha256(prefix)
    h.update(b"\0prompt\0")
    h.update(prompt.encode("utf-8"))
    return h.hexdigest()


def uncached(conn: sqlite3.Connection, prefix: bytes, prompts: Iterable[str]) -> List[str]:
    """The prompts without an answer under the identity whose digest is ``prefix``."""
    keyed = [(p, _key_of(prefix, p)) for p in prompts]
    if len(keyed) <= 500:
        return [p for p, key in keyed if conn.execute("SELECT 1 FROM answers WHERE key = ?", (key,)).fetchone() is None]
    # Many prompts: one pass over the primary key's index (it covers the query), not a query each.
    wanted = {key for _, key in keyed}
    found = {key for (key,) in conn.execute("SELECT key FROM answers") if key in wanted}
    return [p for p, key in keyed if key not in found]


def uncached_in(folder: Path, identity: Mapping[str, Any], prompts: Iterable[str]) -> List[str]:
    """:func:`uncached` for the cache in ``folder``, read only (every prompt when there is no
    cache, or it cannot be read)."""
    prompts = list(prompts)
    path = Path(folder) / DB_NAME
    if not path.is_file():
        return prompts
    prefix = hashlib.sha256(identity_json(identity).encode()).digest()
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return prompts
    try:
        return uncached(conn, prefix, prompts)
    except sqlite3.Error:
        return prompts
    finally:
        conn.close()


def _connect(path: Path) -> sqlite3.Connection:
    """A connection in WAL mode with a busy timeout, for any thread."""
    conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout=30000")

    def wal() -> None:
        # Switching to WAL takes an exclusive lock, and SQLite may answer "locked" at once
        # (no busy wait) while other processes open the same new file: retry.
        if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            conn.execute("PRAGMA journal_mode=WAL")

    _retry_locked(wal)
    # NORMAL in WAL mode: a commit survives the process being killed (not a power cut), at a
    # fraction of FULL's cost per answer.
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def _add_columns(conn: sqlite3.Connection) -> None:
    """Bring a database made by an earlier version up to the current schema."""
    for table, column, kind in _ADDED_COLUMNS:
        have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
        if column not in have:
            try:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
            except sqlite3.OperationalError as exc:  # another process added it just now
                if "duplicate column" not in str(exc):
                    raise




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
