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

Under pytest-xdist the processes of a run also coordinate through the same file -- claims,
progress, spending, members (:mod:`defan_pytest.cache.coordination`) -- so that each selected
prompt is sent exactly once per run.  So do runs started at once on one cache: a session of its
own (a run id, not shared) reserves the prompts it will ask when it starts
(:meth:`ResponseCache.uncached`), waits for those another run is asking, and asks one itself
when that run gives it up or dies.  The file itself (schema, connections) is
:mod:`defan_pytest.cache.database`'s; checking the folder before a run is
:mod:`defan_pytest.cache.folder`'s.
"""
from __future__ import annotations

import asyncio
import hashlib
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterable, List, Mapping, NamedTuple, Optional, Set, Tuple

from defan_pytest.cache.coordination import Coordination, SpendingLedger
from defan_pytest.cache.database import DB_NAME, SCHEMA, connect, retry_locked, transaction, upgrade
from defan_pytest.cache.keys import identity_json, key_of, uncached, uncached_in
from defan_pytest.cache.writer import Pending, Writer

__all__ = ["DB_NAME", "Entry", "ResponseCache", "Waited", "identity_json", "uncached", "uncached_in"]


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
    finish_reason: Optional[str] = None  # why the model stopped, as stored with the answer


class Entry(NamedTuple):
    """A stored answer with what it cost: tokens and latency (``None`` for answers stored by a
    version that did not keep them, and for a callable's answers, whose tokens nobody counted),
    and its finish reason (``None``: unknown, as for every answer stored before it was kept:
    an old entry replays as unknown, no migration)."""

    answer: str
    note: Optional[str] = None
    prompt_tokens: Optional[int] = None
    completion_tokens: Optional[int] = None
    latency: Optional[float] = None
    finish_reason: Optional[str] = None


#: The most characters of a stored note, a finish reason, tokens and seconds read back: a
#: stored value is read as untrusted as an answer from the wire (the file may have been edited,
#: restored from elsewhere or damaged); out of bounds, a token count or a latency is unknown.
_MAX_NOTE = 2000
_MAX_FINISH = 64
_MAX_TOKENS = 1 << 31
_MAX_LATENCY = 7 * 86400.0
#: The cap of an answer read back when none is given (the calls' default, 1 MiB).
DEFAULT_MAX_ANSWER = 1 << 20


def _read_back(row: Optional[Tuple[Any, ...]], max_answer: int) -> Optional[Entry]:
    """A stored row ``(answer, note, prompt_tokens, completion_tokens, latency,
    finish_reason)`` as an :class:`Entry` with the types and caps of an answer from the wire:
    ``None`` (not cached: asked again) when the answer is no text or is over ``max_answer``
    bytes of UTF-8; a note or finish reason that is no text, or too long, is cut or dropped;
    a token count that is no whole number in 0..2^31, or a latency out of 0..a week, is
    unknown."""
    if row is None or len(row) != 6:
        return None
    answer, note, prompt_tokens, completion_tokens, latency, finish = row
    if not isinstance(answer, str) or len(answer) > max_answer:
        return None
    if 4 * len(answer) > max_answer and len(answer.encode("utf-8", "surrogatepass")) > max_answer:
        return None

    def count(v: Any) -> Optional[int]:
        return v if type(v) is int and 0 <= v <= _MAX_TOKENS else None

    seconds = latency if type(latency) in (int, float) and 0 <= latency <= _MAX_LATENCY else None
    return Entry(
        answer,
        note[:_MAX_NOTE] if isinstance(note, str) else None,
        count(prompt_tokens),
        count(completion_tokens),
        float(seconds) if seconds is not None else None,
        finish if isinstance(finish, str) and len(finish) <= _MAX_FINISH else None,
    )


class ResponseCache:
    """The cache of one model identity in ``folder``.

    ``mode``: ``"use"`` (read and write) or ``"refresh"`` (never read an old answer, overwrite).
    ``run``: the run id; claims (cross-process coordination) are scoped to it.
    ``shared``: claim prompts before calling them (several processes share the run); a run id
    without ``shared`` is a session of its own, which claims what it asks against other runs
    on the same cache (:attr:`own_session`).
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
        max_answer: int = DEFAULT_MAX_ANSWER,
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
        self.max_answer = max_answer  # (--defan-max-answer: the cap of an answer read back too)
        self.model = identity_json(identity)
        self._prefix = hashlib.sha256(self.model.encode()).digest()
        self._local = threading.local()
        #: The rows this process shares with the other processes of the run.
        self.coordination = Coordination(self._conn, run, self.owner)
        #: A session of its own: it claims the prompts it asks against other runs.
        self.own_session = bool(run) and not shared
        self.opened = time.time()
        self._held: Set[str] = set()  # keys this session claimed ...
        self._taken: Set[str] = set()  # ... and those handed to a caller (one asks, duplicates wait)
        self._reserved: Optional[Set[str]] = None  # keys without an answer when it started
        conn = self._conn()
        retry_locked(lambda: conn.executescript(SCHEMA))
        retry_locked(lambda: upgrade(conn))
        if shared or self.own_session:
            self.coordination.join()
        retry_locked(self.coordination.drop_dead_runs)
        # background: answers are committed by a writer thread, in groups
        # (defan_pytest.cache.writer), so that a commit never stalls the event loop.
        self.background = background
        self._writer = Writer(self._write)

    # -- connection ------------------------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path)
            self._local.conn = conn
        return conn

    def close(self) -> None:
        """Commit what is queued, stop the writer, forget the claims of a session of its own
        (another session waiting for one asks it) and close this thread's connection."""
        self._writer.close()
        if self.own_session:
            try:
                retry_locked(self.coordination.drop_run)
            except sqlite3.Error:
                pass  # left for the next run to drop: this process will be gone by then
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # -- answers ---------------------------------------------------------------------------------

    def key(self, prompt: str) -> str:
        """The cache key of ``prompt`` for this model identity."""
        return key_of(self._prefix, prompt)

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
            "SELECT answer, note, prompt_tokens, completion_tokens, latency, finish_reason FROM answers WHERE key = ?",
            (self.key(prompt),),
        ).fetchone()
        return _read_back(row, self.max_answer)

    def uncached(self, prompts: Iterable[str]) -> List[str]:
        """The prompts without a cached answer (all of them in refresh mode): one read of the
        keys' index for many prompts, not a query each (the estimate before a big run).  A
        session of its own also claims them here, in one transaction, but for those another
        run holds (:meth:`claim` says which to wait for)."""
        todo = list(prompts) if self.mode == "refresh" else uncached(self._conn(), self._prefix, prompts)
        if self.own_session:
            self._reserved = {self.key(p) for p in todo}
            self._held |= retry_locked(lambda: self.coordination.reserve(self._reserved or ()))
        return todo

    def held(self, prompts: Iterable[str]) -> int:
        """How many of ``prompts`` have an answer in the cache (in any mode; nothing claimed)."""
        wanted = list(dict.fromkeys(prompts))
        return len(wanted) - len(uncached(self._conn(), self._prefix, wanted))

    def put(self, prompt: str, answer: str, note: Optional[str] = None, attempts: int = 1,
            prompt_tokens: Optional[int] = None, completion_tokens: Optional[int] = None,
            latency: Optional[float] = None, finish_reason: Optional[str] = None) -> None:
        """Store an answer (committed here, or queued for the writer thread in background mode:
        :meth:`flush` waits for it) and mark this run's claim done."""
        self._writer.raise_error()
        item = Pending(prompt, answer, note, attempts, usage=(prompt_tokens, completion_tokens, latency),
                       finish_reason=finish_reason)
        if self.background:
            self._writer.put(item)
            return
        self._write([item])

    async def save(self, prompt: str, answer: str, note: Optional[str] = None, attempts: int = 1,
                   prompt_tokens: Optional[int] = None, completion_tokens: Optional[int] = None,
                   latency: Optional[float] = None, finish_reason: Optional[str] = None) -> None:
        """Store an answer and return once it is committed (raises what the commit raised).

        The pool awaits this before it counts the answer as done, so answers never wait in a
        queue a kill would lose: at most one per call slot is between the model and the disk.
        In background mode the event loop is not blocked meanwhile -- the writer thread commits
        whatever has queued up in one transaction and wakes each waiting call.
        """
        usage = (prompt_tokens, completion_tokens, latency)
        if not self.background:
            self._write([Pending(prompt, answer, note, attempts, usage=usage, finish_reason=finish_reason)])
            return
        loop = asyncio.get_running_loop()
        done: "asyncio.Future[None]" = loop.create_future()
        self._writer.put(Pending(prompt, answer, note, attempts, loop, done, usage, finish_reason))
        await done

    def flush(self) -> None:
        """Wait until every answer handed to :meth:`put` or :meth:`save` is committed."""
        self._writer.join()
        self._writer.raise_error()

    def _write(self, items: List[Pending]) -> None:
        conn = self._conn()
        now = time.time()
        rows = [(self.key(i.prompt), self.model, i.prompt, i.answer, now, i.note, *i.usage, i.finish_reason)
                for i in items]
        with transaction(conn):
            conn.executemany(
                "INSERT OR REPLACE INTO answers (key, model, prompt, answer, created, note, prompt_tokens, "
                "completion_tokens, latency, finish_reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            if self.shared or self.own_session:
                self.coordination.mark_answered(conn, [(row[0], i.attempts) for i, row in zip(items, rows)])

    def count(self) -> int:
        """Number of answers stored for this model identity."""
        row = self._conn().execute("SELECT COUNT(*) FROM answers WHERE model = ?", (self.model,)).fetchone()
        return int(row[0])

    # -- the processes of one run (defan_pytest.cache.coordination) --------------------------

    def claim(self, prompt: str) -> bool:
        """True when this process should call ``prompt`` (or read it from the cache); False
        when another process has it: one of the run, or of another run on the cache (then
        :meth:`wait`)."""
        if self.shared:
            return self.coordination.claim(self.key(prompt))
        if not self.own_session or self._reserved == set():
            return True  # nothing to claim (everything was answered in the cache)
        key = self.key(prompt)
        if key in self._held:
            if key in self._taken:
                return False  # a prompt of the same text is being asked: wait for its answer
            self._taken.add(key)
            return True
        if self._reserved is not None and key not in self._reserved:
            return True  # answered in the cache when the session started: nothing to claim
        if not self.coordination.claim(key):
            return False
        self._held.add(key)
        self._taken.add(key)
        return True

    def _claimed(self, prompt: str) -> Optional[str]:
        """The key of ``prompt`` when this process claimed it (``None``: no claim to update)."""
        if not self.shared and not self._held:
            return None
        key = self.key(prompt)
        return key if self.shared or key in self._held else None

    def mark_done(self, prompt: str) -> None:
        """This process answered ``prompt`` from the cache: waiting processes may read it."""
        key = self._claimed(prompt)
        if key is not None:
            self.coordination.mark_cached(key)

    def release(self, prompt: str, error: str, attempts: int = 1) -> None:
        """The call failed for good: waiting processes get ``error`` (it is not cached); a
        waiting session of another run asks it itself."""
        key = self._claimed(prompt)
        if key is not None:
            self.coordination.mark_failed(key, error, attempts)

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
        claim = self.coordination.claim_of(key)
        if claim is None:
            return None
        status, error, attempts = claim
        if status in ("done", "cached"):
            ans = self._conn().execute(
                "SELECT answer, note, prompt_tokens, completion_tokens, latency, finish_reason FROM answers "
                "WHERE key = ?", (key,)
            ).fetchone()
            by = "cache" if status == "cached" else "model"
            if ans is None:
                return status, Waited(None, None, None, by, attempts)
            got = _read_back(ans, self.max_answer)
            if got is None:  # no text, or over the cap: not an answer to pass on
                return "failed", Waited(None, "the stored answer is not usable (not text, or over --defan-max-answer)",
                                        None, by, attempts)
            return status, Waited(got.answer, None, got.note, by, attempts, *got[2:])
        return status, Waited(None, error, None, "model", attempts)

    async def wait(self, prompt: str, stop: Optional[threading.Event] = None) -> Waited:
        """Wait for another process's answer: a :class:`Waited` with its answer or its error;
        neither when ``stop`` was set first, or when another run that held the prompt gave it
        up (it failed there, its session ended or died), or the process of this run that held
        it died: then it is this process's to claim."""
        alive_checked = time.monotonic()
        while stop is None or not stop.is_set():
            state = self._claim_state(prompt)
            if state is not None:
                status, waited = state
                if status in ("done", "cached") and waited.text is not None:
                    return waited
                if status == "failed":
                    return waited._replace(error=waited.error or "the call failed in another worker")
                if status == "calling" and time.monotonic() - alive_checked > 1.0:
                    # A process of this run holds it: one killed (an xdist worker's SIGKILL)
                    # never answers, so its claims go and this process asks the prompt itself.
                    alive_checked = time.monotonic()
                    if retry_locked(lambda: self.coordination.release_if_dead(self.key(prompt))):
                        return Waited(None, None)
            else:
                check = time.monotonic() - alive_checked > 1.0
                alive_checked = time.monotonic() if check else alive_checked
                found = self._from_other_run(self.key(prompt), check)
                if found is not None:
                    return found
            await asyncio.sleep(self.poll)
        return Waited(None, None)

    def _from_other_run(self, key: str, check_alive: bool) -> Optional[Waited]:
        """What became of a prompt another run holds: its answer (from the cache, to this
        run), ``Waited(None, None)`` when nobody holds it any more, ``None`` while it is asked."""
        holder = self.coordination.holder(key)
        if holder is not None and holder.status == "calling":
            if check_alive and not self.coordination.run_is_alive(holder.run):
                retry_locked(lambda: self.coordination.drop_runs([holder.run]))  # killed: its claims go
            return None
        # Nobody holds it: its answer, unless older than this run in refresh mode.
        since = self.opened if self.mode == "refresh" and holder is None else 0.0
        row = self._conn().execute(
            "SELECT answer, note, prompt_tokens, completion_tokens, latency, finish_reason FROM answers "
            "WHERE key = ? AND created >= ?",
            (key, since),
        ).fetchone()
        got = _read_back(row, self.max_answer)
        if got is not None:
            return Waited(got.answer, None, got.note, "cache", 0, *got[2:])
        return None if holder is not None else Waited(None, None)

    def report_progress(self, stats: Mapping[str, Any], fatal: Optional[str] = None) -> None:
        """:meth:`Coordination.report_progress`: this process's counters for the controller."""
        self.coordination.report_progress(stats, fatal)

    def run_progress(self) -> Tuple[Optional[dict], Optional[str]]:
        """:meth:`Coordination.run_progress`: the counters of every process of the run; nothing
        when the run's shared folder is gone (a scratch folder the controller already dropped:
        what is read here is what the run says of itself, never a reason to fail it)."""
        try:
            return self.coordination.run_progress()
        except (sqlite3.Error, OSError):
            return None, None

    def publish_selection(self, ids: List[str]) -> None:
        """:meth:`Coordination.publish_selection` (an xdist worker's selected prompts)."""
        retry_locked(lambda: self.coordination.publish_selection(ids))

    def selection(self) -> Optional[List[str]]:
        """:meth:`Coordination.selection`: what a worker of the run selected, if one said."""
        return self.coordination.selection()

    def spending_ledger(self) -> SpendingLedger:
        """The spending account this process shares with the others of the run
        (``--defan-budget``; :class:`~defan_pytest.cache.coordination.SpendingLedger`)."""
        return SpendingLedger(self.coordination)

    def drop_run(self) -> None:
        """:meth:`Coordination.drop_run`: forget this run's rows (the controller, at the end)."""
        self.coordination.drop_run()
