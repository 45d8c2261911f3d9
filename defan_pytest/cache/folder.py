"""The cache folder, checked before any call: what would otherwise be an INTERNALERROR half-way
through a run (a file in the way, a folder or database SQLite cannot write, a corrupt database)
is one usage error naming the folder; ``--defan-cache=refresh`` moves a corrupt database aside.
Also the scratch folders that runs killed under ``--defan-cache=off`` left behind.  The cache
itself is :mod:`defan_pytest.cache.store`, its file :mod:`defan_pytest.cache.database`.
"""
from __future__ import annotations

import os
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any, Callable, List, Optional

from defan_pytest.cache.coordination import run_alive
from defan_pytest.cache.database import DB_NAME, SCHEMA, connect, retry_locked, upgrade

__all__ = ["check_folder", "move_aside", "remove_dead_scratch"]

_CHOOSE = "choose another folder with --defan-cache=FOLDER, or run without a cache with --defan-cache=off"


def _set_aside(where: str, path: Path, refresh: bool, notes: Optional[List[str]], clock: Callable[[], float],
               exc: Exception, problem: str, noted: str) -> Optional[str]:
    """A damaged database at ``path``: the problem to report (offering --defan-cache=refresh),
    or, under ``refresh``, moved aside (said in ``notes``) and ``None``."""
    if not refresh:
        return (f"{where}: {path} {problem}: run once with --defan-cache=refresh to move it aside as "
                f"{DB_NAME}.corrupt-<time> and start a new cache (every prompt is asked again), or {_CHOOSE}")
    try:
        moved = move_aside(path, clock())
    except OSError as move_exc:
        return f"{where}: {path} is damaged ({exc}) and could not be moved aside ({move_exc}): {_CHOOSE}"
    if notes is not None:
        notes.append(f"the response cache {path} {noted}: moved aside as {moved.name}")
    return None


def check_folder(
    folder: Path, refresh: bool = False, notes: Optional[List[str]] = None, clock: Callable[[], float] = time.time,
) -> Optional[str]:
    """Check that ``folder`` can hold the response cache; a problem to report, or ``None``.

    Everything a run would otherwise meet as an INTERNALERROR half-way (or at the first
    answer): a file where the folder should be, a folder or database SQLite cannot write, a
    database that is not one.  With ``refresh`` a corrupt database is moved aside as
    ``responses.sqlite3.corrupt-<time>`` (with its WAL files) and a new one started, which is
    the recovery the problem's message offers (and said in ``notes``).
    """
    where = f"--defan-cache: {folder}"
    if folder.exists() and not folder.is_dir():
        return f"{where} is a file, not a folder: {_CHOOSE}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"{where}: cannot create the folder ({exc.strerror or exc}): {_CHOOSE}"
    path = folder / DB_NAME
    for attempt in (1, 2):
        try:
            _probe(path)
            return None
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc):
                return None  # another process of this run has it open and is writing
            if not _undecodable(exc):
                return f"{where}: SQLite cannot write {path} ({exc}): the folder or the database is read-only; {_CHOOSE}"
            # Text that is not UTF-8: a damaged or foreign database, not a read-only one.
            problem = _set_aside(where, path, refresh and attempt == 1, notes, clock, exc,
                                 f"holds text that is not UTF-8 ({exc}): a damaged database", "held text that is not UTF-8")
            if problem is not None:
                return problem
        except sqlite3.DatabaseError as exc:  # not a database, malformed pages
            problem = _set_aside(where, path, refresh and attempt == 1, notes, clock, exc,
                                 f"is not a usable SQLite database ({exc})", f"was corrupt ({exc})")
            if problem is not None:
                return problem
        except OSError as exc:
            return f"{where}: {exc}: {_CHOOSE}"
    return None  # pragma: no cover - the loop returns


def _undecodable(exc: sqlite3.Error) -> bool:
    """Did SQLite fail to read a text as UTF-8 (``Could not decode to UTF-8 column ...``)?"""
    return "decode" in str(exc).lower()


def _probe(path: Path) -> None:
    """Open the database as a run will, read every table's schema and one row of each, and
    take (then release) the write lock: raises what SQLite raises."""
    conn = connect(path)
    try:
        retry_locked(lambda: conn.executescript(SCHEMA))
        retry_locked(lambda: upgrade(conn))
        for table in ("answers", "claims", "progress", "members"):
            conn.execute(f"SELECT * FROM {table} LIMIT 1").fetchall()
        # The first pages of the answers' index and rows: corruption there shows at once.
        conn.execute("SELECT key, answer FROM answers ORDER BY key LIMIT 1").fetchall()
        conn.execute("SELECT COUNT(*) FROM answers").fetchone()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
    finally:
        conn.close()


def move_aside(path: Path, when: float) -> Path:
    """Rename a corrupt database (and its ``-wal`` and ``-shm`` files) out of the way; returns
    the new name of the database."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(when))
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    os.replace(path, target)
    for suffix in ("-wal", "-shm"):
        extra = path.with_name(path.name + suffix)
        if extra.exists():
            os.replace(extra, target.with_name(target.name + suffix))
    return target


def remove_dead_scratch(runs_folder: Path, keep: str = "") -> List[Path]:
    """Remove the per-run scratch folders (``--defan-cache=off`` under xdist) of runs whose
    processes are gone; returns what was removed.  A folder that names no process (made by an
    earlier version, or being set up right now) is removed only once it is an hour old."""
    removed: List[Path] = []
    if not runs_folder.is_dir():
        return removed
    now = time.time()
    for sub in runs_folder.iterdir():
        db = sub / DB_NAME
        if sub.name == keep or not db.is_file():
            continue
        members: List[Any] = []
        try:
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
            try:
                members = conn.execute("SELECT host, pid, started FROM members").fetchall()
            finally:
                conn.close()
        except sqlite3.Error:
            pass
        if members:
            alive = run_alive(members, now)
        else:
            try:
                alive = now - db.stat().st_mtime < 3600
            except OSError:
                continue
        if not alive:
            shutil.rmtree(sub, ignore_errors=True)
            removed.append(sub)
    return removed
