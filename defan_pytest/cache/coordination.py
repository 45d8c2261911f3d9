"""The processes of one run sharing a cache file (pytest-xdist workers and their controller):
who calls which prompt (*claims*: a worker claims a prompt before calling it, and a worker that
finds it claimed waits for the answer, so each prompt is sent once per run), how far each got
(*progress*, for the controller's progress line), what each spent (*spending*, so that together
they keep to one ``--defan-budget``), and who they are (*members*).  Claims and progress of runs
whose processes are all gone (a run killed before its controller could drop them) are removed
when the next cache opens (:meth:`Coordination.drop_dead_runs`).

Runs respect each other's claims too (two sessions started at once on one cache): a prompt
another live run is asking, or has answered, is not claimed (:meth:`Coordination.claim`,
:meth:`Coordination.reserve`) but waited for, and taken over if that run gives it up or dies
(:meth:`Coordination.holder`, :meth:`Coordination.run_is_alive`).
"""
from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, NamedTuple, Optional, Set, Tuple, TypeVar

from defan_pytest.cache.database import transaction

__all__ = ["Coordination", "FOREIGN_RUN_LIFETIME", "HOST", "Holder", "SpendingLedger", "pid_alive", "run_alive"]

#: A run seen from another host is presumed dead this long after it started (its processes
#: cannot be asked).
FOREIGN_RUN_LIFETIME = 24 * 3600.0
#: This host's name, as members record it.
HOST = socket.gethostname()
_RUN_TABLES = ("claims", "progress", "spending", "members", "selection")
# A claim for this run, unless another run holds the prompt: is asking it, or had the model
# answer it (the answer is in the cache).  One statement: SQLite takes the write lock before it
# reads, so two runs cannot both find the prompt free.
_CLAIM = (
    "INSERT OR IGNORE INTO claims (run, key, owner, status) SELECT ?, ?, ?, 'calling' WHERE NOT EXISTS "
    "(SELECT 1 FROM claims WHERE key = ? AND run != ? AND status IN ('calling', 'done'))"
)
#: What the spending figures of the other processes are: spent, in flight (USD), requests in
#: flight and the largest completion seen.
Spending = Tuple[float, float, int, Optional[int]]
T = TypeVar("T")


class Holder(NamedTuple):
    """Another run's claim on a prompt: the run, its status, its error and attempts."""

    run: str
    status: str
    error: Optional[str]
    attempts: int


def pid_alive(pid: int, registered: Optional[float] = None) -> bool:
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


def run_alive(members: Iterable[Tuple[str, Any, Any]], now: float) -> bool:
    """Whether a run whose members are ``(host, pid, started)`` is alive: one of them is a
    process of this host that still exists, or one of another host (a shared folder) that
    started less than :data:`FOREIGN_RUN_LIFETIME` ago."""
    return any(
        pid_alive(int(pid), float(started)) if host == HOST else now - float(started) < FOREIGN_RUN_LIFETIME
        for host, pid, started in members
    )


class Coordination:
    """The rows of run ``run`` that process ``owner`` reads and writes, through
    ``connection()`` (this thread's connection to the cache file).  Prompts are named by their
    cache key."""

    def __init__(self, connection: Callable[[], sqlite3.Connection], run: str, owner: str) -> None:
        self.connection = connection
        self.run = run
        self.owner = owner

    def join(self) -> None:
        """Register this process as a member of the run (before any claim, so that a claim is
        never seen without its member)."""
        self.connection().execute(
            "INSERT OR REPLACE INTO members (run, owner, host, pid, started) VALUES (?, ?, ?, ?, ?)",
            (self.run, self.owner, HOST, os.getpid(), time.time()),
        )

    # -- claims ------------------------------------------------------------------------------

    def claim(self, key: str) -> bool:
        """Take the prompt for this process; False when another process of the run has it, or
        another live run is asking it or has answered it."""
        cur = self.connection().execute(_CLAIM, (self.run, key, self.owner, key, self.run))
        return cur.rowcount == 1

    def reserve(self, keys: Iterable[str]) -> Set[str]:
        """Claim every prompt of ``keys`` no other run holds, in one transaction (a session of
        its own, at its start: one commit, not one a prompt); returns those this process holds."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return set()
        conn = self.connection()
        with transaction(conn):
            conn.executemany(_CLAIM, [(self.run, k, self.owner, k, self.run) for k in wanted])
            mine = {r[0] for r in conn.execute("SELECT key FROM claims WHERE run = ? AND owner = ?",
                                               (self.run, self.owner))}
        return mine & set(wanted)

    def holder(self, key: str) -> Optional[Holder]:
        """Another run's claim that keeps ``key`` from this run, if one does."""
        row = self.connection().execute(
            "SELECT run, status, error, attempts FROM claims WHERE key = ? AND run != ? AND status IN "
            "('calling', 'done') LIMIT 1", (key, self.run),
        ).fetchone()
        return None if row is None else Holder(str(row[0]), str(row[1]), row[2], int(row[3] or 0))

    def run_is_alive(self, run: str) -> bool:
        """Whether run ``run`` still has a live process (:func:`run_alive`; a run registers its
        members before its first claim, so claims without a member are a dead run's, as
        :meth:`drop_dead_runs` has it)."""
        members = self.connection().execute("SELECT host, pid, started FROM members WHERE run = ?", (run,)).fetchall()
        return run_alive(members, time.time())

    def drop_runs(self, runs: Iterable[str]) -> None:
        """Forget the claims, progress, spending and members of ``runs`` (runs found dead)."""
        conn = self.connection()
        with transaction(conn):
            for run in runs:
                for table in _RUN_TABLES:
                    conn.execute(f"DELETE FROM {table} WHERE run = ?", (run,))

    def release_if_dead(self, key: str) -> bool:
        """When the process of this run that holds ``key`` (still asking it) is gone -- an xdist
        worker killed, say -- drop every claim it was still asking, so that the survivors (or
        its replacement) ask them again; True when it did."""
        conn = self.connection()
        row = conn.execute("SELECT owner FROM claims WHERE run = ? AND key = ? AND status = 'calling'",
                           (self.run, key)).fetchone()
        if row is None or row[0] == self.owner:
            return False
        member = conn.execute("SELECT host, pid, started FROM members WHERE run = ? AND owner = ?",
                              (self.run, row[0])).fetchone()
        if member is not None and run_alive([member], time.time()):
            return False
        with transaction(conn):
            conn.execute("DELETE FROM claims WHERE run = ? AND owner = ? AND status = 'calling'", (self.run, row[0]))
        return True

    def mark_cached(self, key: str) -> None:
        """The prompt was answered from the cache."""
        self.connection().execute(
            "UPDATE claims SET status = 'cached', attempts = 0 WHERE run = ? AND key = ?", (self.run, key),
        )

    def mark_answered(self, conn: sqlite3.Connection, answered: Iterable[Tuple[str, int]]) -> None:
        """The prompts ``(key, attempts)`` were answered by the model: on ``conn``, inside the
        transaction that stores their answers."""
        conn.executemany(
            "UPDATE claims SET status = 'done', error = NULL, attempts = ? WHERE run = ? AND key = ?",
            [(attempts, self.run, key) for key, attempts in answered],
        )

    def mark_failed(self, key: str, error: str, attempts: int) -> None:
        """The call failed for good with ``error``."""
        self.connection().execute(
            "UPDATE claims SET status = 'failed', error = ?, attempts = ? WHERE run = ? AND key = ?",
            (error, attempts, self.run, key),
        )

    def claim_of(self, key: str) -> Optional[Tuple[str, Optional[str], int]]:
        """``(status, error, attempts)`` of the run's claim on a prompt, or ``None``."""
        row = self.connection().execute(
            "SELECT status, error, attempts FROM claims WHERE run = ? AND key = ?", (self.run, key)
        ).fetchone()
        if row is None:
            return None
        status, error, attempts = row
        return str(status), error, int(attempts or 0)

    # -- selection (xdist: the controller runs the prompts) -----------------------------------

    def publish_selection(self, ids: List[str]) -> None:
        """The prompts this worker's collection selected (the controller asks and runs them)."""
        self.connection().execute("INSERT OR REPLACE INTO selection (run, owner, ids) VALUES (?, ?, ?)",
                                  (self.run, self.owner, json.dumps(list(ids))))

    def selection(self) -> Optional[List[str]]:
        """The prompts a worker of the run selected, or ``None`` while none has said."""
        row = self.connection().execute("SELECT ids FROM selection WHERE run = ? LIMIT 1", (self.run,)).fetchone()
        if row is None:
            return None
        try:
            ids = json.loads(row[0])
        except ValueError:
            return None
        return [str(i) for i in ids] if isinstance(ids, list) else None

    # -- progress ----------------------------------------------------------------------------

    def report_progress(self, stats: Mapping[str, Any], fatal: Optional[str] = None) -> None:
        """Publish this process's counters (and a run-stopping failure) for the controller."""
        self.connection().execute(
            "INSERT OR REPLACE INTO progress (run, owner, stats, fatal) VALUES (?, ?, ?, ?)",
            (self.run, self.owner, json.dumps(dict(stats)), fatal),
        )

    def run_progress(self) -> Tuple[Optional[dict], Optional[str]]:
        """Counters of every process of the run combined, and the first run-stopping failure."""
        rows = self.connection().execute("SELECT stats, fatal FROM progress WHERE run = ?", (self.run,)).fetchall()
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
        paces = [s["pace"] for s in stats if isinstance(s.get("pace"), dict)]
        if paces:  # each process's pace of its requests (calls.pace.combined joins them)
            out["paces"] = paces
        return out, fatal

    # -- spending (--defan-budget) -----------------------------------------------------------

    def publish_spending(self, spent: float, inflight: float, requests: int = 0,
                         largest: Optional[int] = None) -> None:
        """This process's spending, the estimated cost and number of its requests in flight and
        the largest completion it saw."""
        self.connection().execute(
            "INSERT OR REPLACE INTO spending (run, owner, spent, inflight, requests, largest) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (self.run, self.owner, spent, inflight, requests, largest),
        )

    def others_spending(self) -> Spending:
        """What the other processes of the run spent and have in flight (USD, requests), and the
        largest completion any of them saw."""
        row = self.connection().execute(
            "SELECT COALESCE(SUM(spent), 0), COALESCE(SUM(inflight), 0), COALESCE(SUM(requests), 0), MAX(largest) "
            "FROM spending WHERE run = ? AND owner != ?",
            (self.run, self.owner),
        ).fetchone()
        return float(row[0]), float(row[1]), int(row[2]), (int(row[3]) if row[3] is not None else None)

    def exchange_spending(self, decide: Callable[[Spending], Tuple[T, bool]], mine: Callable[[], Spending]) -> T:
        """In one transaction: the other processes' spending, ``decide`` on it (``(result,
        changed)``), and this process's figures (``mine()``) published when they changed -- so
        that two processes never book the same room."""
        conn = self.connection()
        with transaction(conn):
            result, changed = decide(self.others_spending())
            if changed:
                self.publish_spending(*mine())
        return result

    # -- the end of runs ---------------------------------------------------------------------

    def drop_run(self) -> None:
        """Forget this run's claims, progress, spending and members (the controller does this
        at the end)."""
        conn = self.connection()
        with transaction(conn):
            for table in _RUN_TABLES:
                conn.execute(f"DELETE FROM {table} WHERE run = ?", (self.run,))

    def drop_dead_runs(self) -> List[str]:
        """Remove the rows of every other run none of whose processes is alive
        (:func:`run_alive`: a run killed before its controller dropped them); returns their
        ids.  Claims of a run with no member at all are left by a version that did not
        register members: that run is dead too."""
        conn = self.connection()
        runs = {r[0] for r in conn.execute("SELECT DISTINCT run FROM claims UNION SELECT DISTINCT run FROM progress")}
        members: Dict[str, List[Tuple[str, Any, Any]]] = {}
        for run, host, pid, started in conn.execute("SELECT run, host, pid, started FROM members"):
            members.setdefault(run, []).append((host, pid, started))
        now = time.time()
        dead = [run for run in (runs | set(members)) - {self.run} if not run_alive(members.get(run, ()), now)]
        if dead:
            with transaction(conn):
                for run in dead:
                    for table in _RUN_TABLES:
                        conn.execute(f"DELETE FROM {table} WHERE run = ?", (run,))
        return dead


class SpendingLedger:
    """The spending account the processes of one run share (``--defan-budget``), as
    :class:`defan_pytest.calls.budget.Budget` uses it (its ``Ledger``)."""

    def __init__(self, coordination: Coordination) -> None:
        self.coordination = coordination

    def exchange(self, decide: Callable[[Spending], Tuple[T, bool]], mine: Callable[[], Spending]) -> T:
        """:meth:`Coordination.exchange_spending`."""
        return self.coordination.exchange_spending(decide, mine)

    def publish(self, spent: float, inflight: float, requests: int, largest: Optional[int]) -> None:
        """:meth:`Coordination.publish_spending`."""
        self.coordination.publish_spending(spent, inflight, requests, largest)

    def others(self) -> Spending:
        """:meth:`Coordination.others_spending`."""
        return self.coordination.others_spending()
