"""The SQLite response cache: keys, modes, claims between processes, durability."""
from __future__ import annotations

import asyncio
import hashlib
import multiprocessing
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from defan_pytest.cache.store import DB_NAME, ResponseCache, identity_json
from defan_pytest.cache.folder import check_folder, remove_dead_scratch
from defan_pytest.calls.backends.callables import CallableCaller
from defan_pytest.calls.pool import CallPool
from defan_pytest.calls.protocol import Prompt
from defan_pytest.calls.models import CallableModel

BASE = {"kind": "litellm", "model": "openai/gpt-x", "system_prompt": None, "params": {"temperature": 0}}


def test_key_covers_everything_that_shapes_an_answer(tmp_path: Path) -> None:
    a = ResponseCache(tmp_path, BASE)
    variants = [
        {**BASE, "model": "openai/gpt-y"},
        {**BASE, "system_prompt": "Answer briefly."},
        {**BASE, "params": {"temperature": 0.7}},
        {**BASE, "params": {"temperature": 0, "max_tokens": 5}},
        {"kind": "callable", "name": "my-rag", "version": "1"},
        {"kind": "callable", "name": "my-rag", "version": "2"},
    ]
    keys = {a.key("What is 2+2?")} | {ResponseCache(tmp_path, v).key("What is 2+2?") for v in variants}
    assert len(keys) == 1 + len(variants)
    assert a.key("What is 2+2?") != a.key("What is 2+3?")
    assert ResponseCache(tmp_path, dict(reversed(list(BASE.items())))).key("q") == a.key("q")  # order-free


def test_never_one_models_answer_for_another(tmp_path: Path) -> None:
    a = ResponseCache(tmp_path, BASE)
    b = ResponseCache(tmp_path, {**BASE, "model": "openai/other"})
    a.put("q", "from a")
    assert a.get("q") == "from a" and b.get("q") is None


def test_refresh_never_reads_and_overwrites(tmp_path: Path) -> None:
    ResponseCache(tmp_path, BASE).put("q", "old")
    fresh = ResponseCache(tmp_path, BASE, mode="refresh")
    assert fresh.get("q") is None
    fresh.put("q", "new")
    assert ResponseCache(tmp_path, BASE).get("q") == "new"


def test_wal_mode_and_secret_free_rows(tmp_path: Path) -> None:
    c = ResponseCache(tmp_path, BASE)
    c.put("q", "a")
    conn = sqlite3.connect(tmp_path / DB_NAME)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT model, prompt, answer FROM answers").fetchone()[1:] == ("q", "a")


def test_errors_are_not_cached(tmp_path: Path) -> None:
    async def broken(prompt: str) -> str:
        raise ValueError("boom")

    store = ResponseCache(tmp_path, BASE)
    pool = CallPool(CallableCaller(CallableModel("b", broken, True)), store=store, retries=0)
    pool.start([Prompt("1", "q")])
    pool.join(10)
    assert pool.result("1").error == "ValueError: boom"
    assert store.count() == 0


def test_claims_keep_each_prompt_to_one_process(tmp_path: Path) -> None:
    one = ResponseCache(tmp_path, BASE, run="r", shared=True, owner="gw0")
    two = ResponseCache(tmp_path, BASE, run="r", shared=True, owner="gw1")
    assert one.claim("q") and not two.claim("q")
    one.put("q", "answer")
    assert asyncio.run(two.wait("q"))[:2] == ("answer", None)
    assert one.claim("f") and not two.claim("f")
    one.release("f", "HTTP 500")
    assert asyncio.run(two.wait("f"))[:2] == (None, "HTTP 500")
    # Another live run waits for what this one answered; what failed here it may ask.
    another = ResponseCache(tmp_path, BASE, run="another", shared=True)
    assert not another.claim("q") and another.claim("f") and another.claim("z")
    one.report_progress({"total": 2, "done": 2, "calls": 2, "cache_hits": 0, "retries": 1, "errors": 1})
    two.report_progress({"total": 2, "done": 1, "calls": 0, "cache_hits": 1, "retries": 0, "errors": 0})
    stats, fatal = one.run_progress()
    assert stats == {"total": 2, "done": 2, "cache_hits": 1, "calls": 2, "retries": 1, "errors": 1} and fatal is None
    one.drop_run()
    assert one.claim("q")


def _writer(folder: str, owner: str, n: int) -> None:
    c = ResponseCache(folder, BASE, run="r", shared=True, owner=owner)
    for i in range(n):
        if c.claim(f"q{i}"):
            c.put(f"q{i}", f"{owner}:{i}")


def test_concurrent_processes_share_it_safely(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), f"p{k}", 300)) for k in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    c = ResponseCache(tmp_path, BASE)
    assert c.count() == 300
    owners = [c.get(f"q{i}").split(":")[0] for i in range(300)]
    assert all(o in ("p0", "p1", "p2") for o in owners)


def test_background_writer_commits_every_answer(tmp_path: Path) -> None:
    c = ResponseCache(tmp_path, BASE, background=True, run="r", shared=True)
    for i in range(200):
        assert c.claim(f"q{i}")
        c.put(f"q{i}", f"a{i}")
    c.flush()
    other = ResponseCache(tmp_path, BASE, run="r", shared=True)
    assert other.count() == 200 and other.status("q199") == ("done", "a199", None)
    c.close()


# --------------------------------------------------------------------------------------------
# issue 8: a cache that cannot be used is a usage error; dead runs leave nothing behind
# --------------------------------------------------------------------------------------------


def test_a_file_in_the_way_or_an_unwritable_folder_is_one_clear_problem(tmp_path: Path) -> None:
    (tmp_path / "in-the-way").write_text("not a folder")
    problem = check_folder(tmp_path / "in-the-way")
    assert problem == (f"--defan-cache: {tmp_path / 'in-the-way'} is a file, not a folder: choose another folder "
                       "with --defan-cache=FOLDER, or run without a cache with --defan-cache=off")
    # Unwritable even for root: sysfs refuses new files and folders.
    for folder in (Path("/sys/kernel/defan-cache"), Path("/sys/kernel")):
        problem = check_folder(folder)
        assert problem is not None and str(folder) in problem and "--defan-cache=off" in problem


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only files and folders")
def test_a_read_only_folder_is_one_clear_problem(tmp_path: Path) -> None:
    ResponseCache(tmp_path / "ro", BASE).put("q", "a")
    (tmp_path / "ro").chmod(0o555)
    (tmp_path / "ro" / DB_NAME).chmod(0o444)
    try:
        problem = check_folder(tmp_path / "ro")
        assert problem is not None and "read-only" in problem
    finally:
        (tmp_path / "ro").chmod(0o755)


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_corrupt_database_is_refused_then_moved_aside_by_refresh(tmp_path: Path, damage: str) -> None:
    db = tmp_path / DB_NAME
    if damage == "garbage":
        db.write_bytes(b"this is not a database" * 500)
    else:
        c = ResponseCache(tmp_path, BASE)
        for i in range(2000):
            c.put(f"q{i}", "answer " * 30)
        c.close()
        db.write_bytes(db.read_bytes()[: db.stat().st_size // 2])
    problem = check_folder(tmp_path)
    assert problem is not None and str(db) in problem and "--defan-cache=refresh" in problem
    assert "corrupt-<time>" in problem
    notes: list = []
    assert check_folder(tmp_path, refresh=True, notes=notes, clock=lambda: 0.0) is None
    aside = sorted(p.name for p in tmp_path.iterdir() if ".corrupt-" in p.name)
    assert aside and aside[0].startswith(f"{DB_NAME}.corrupt-19700101-")
    assert "moved aside as" in notes[0]
    fresh = ResponseCache(tmp_path, BASE)
    fresh.put("q", "a")
    assert fresh.get("q") == "a"


def test_a_database_of_an_earlier_version_gains_the_new_columns(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.executescript(
        "CREATE TABLE answers (key TEXT PRIMARY KEY, model TEXT NOT NULL, prompt TEXT NOT NULL, answer TEXT NOT NULL,"
        " created REAL NOT NULL);"
        "CREATE TABLE claims (run TEXT NOT NULL, key TEXT NOT NULL, owner TEXT NOT NULL, status TEXT NOT NULL,"
        " error TEXT, PRIMARY KEY (run, key));"
    )
    old = ResponseCache.__new__(ResponseCache)  # the key as an earlier version computed it
    old._prefix = hashlib.sha256(identity_json(BASE).encode()).digest()
    conn.execute("INSERT INTO answers VALUES (?, ?, 'q', 'kept', 0)", (old.key("q"), identity_json(BASE)))
    conn.commit()
    conn.close()
    assert check_folder(tmp_path) is None
    c = ResponseCache(tmp_path, BASE)
    assert c.lookup("q") == ("kept", None)  # answers of an earlier version are reused
    assert c.lookup_entry("q").finish_reason is None  # ... their finish reason unknown
    c.put("n", "new", note="a note", finish_reason="length")
    assert c.lookup("n") == ("new", "a note") and c.lookup_entry("n").finish_reason == "length"


def test_a_peer_says_whether_it_asked_the_model_or_read_the_cache(tmp_path: Path) -> None:
    one = ResponseCache(tmp_path, BASE, run="r", shared=True, owner="gw0")
    two = ResponseCache(tmp_path, BASE, run="r", shared=True, owner="gw1")
    ResponseCache(tmp_path, BASE).put("old", "from an earlier run")
    assert one.claim("old") and one.get("old") is not None
    one.mark_done("old")
    assert asyncio.run(two.wait("old"))[:5] == ("from an earlier run", None, None, "cache", 0)
    assert one.claim("new")
    one.put("new", "asked", note="n", attempts=3)
    assert asyncio.run(two.wait("new"))[:5] == ("asked", None, "n", "model", 3)
    assert one.claim("bad")
    one.release("bad", "HTTP 500", attempts=5)
    assert asyncio.run(two.wait("bad"))[:5] == (None, "HTTP 500", None, "model", 5)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_claims_of_dead_runs_are_removed_when_the_cache_opens(tmp_path: Path) -> None:
    live = ResponseCache(tmp_path, BASE, run="live", shared=True, owner="gw0")
    assert live.claim("q")
    dead = ResponseCache(tmp_path, BASE, run="dead", shared=True, owner="gw1")
    assert dead.claim("r") and dead.claim("s")
    dead.report_progress({"total": 2, "done": 0})
    conn = sqlite3.connect(tmp_path / DB_NAME)
    # the dead run's process is gone; a legacy run registered no member; a run of another host
    # is trusted for a day
    conn.execute("UPDATE members SET pid = ? WHERE run = 'dead'", (_dead_pid(),))
    conn.execute("INSERT INTO claims (run, key, owner, status) VALUES ('legacy', 'k', 'gw0-1', 'calling')")
    conn.execute("INSERT INTO members VALUES ('far', 'gw0', 'elsewhere', 1, ?)", (time.time() - 3600,))
    conn.execute("INSERT INTO claims (run, key, owner, status) VALUES ('far', 'k', 'gw0', 'calling')")
    conn.execute("INSERT INTO members VALUES ('old', 'gw0', 'elsewhere', 1, 0)")
    conn.execute("INSERT INTO claims (run, key, owner, status) VALUES ('old', 'k', 'gw0', 'calling')")
    conn.commit()
    ResponseCache(tmp_path, BASE)  # the next run opens the cache
    runs = {r[0] for r in conn.execute("SELECT run FROM claims UNION SELECT run FROM progress UNION SELECT run FROM members")}
    assert runs == {"live", "far"}
    conn.close()


def test_two_sessions_on_one_cache_ask_each_prompt_once(tmp_path: Path) -> None:
    first = ResponseCache(tmp_path, BASE, run="first", owner="main-1")
    second = ResponseCache(tmp_path, BASE, run="second", owner="main-2")
    assert first.uncached(["q", "f", "dup"]) == ["q", "f", "dup"]  # reserved for the first, in one go
    assert second.uncached(["q", "f", "new"]) == ["q", "f", "new"]
    assert first.claim("q") and not second.claim("q")  # the second waits for the first's answer ...
    first.put("q", "answer", prompt_tokens=3, completion_tokens=1)
    assert asyncio.run(second.wait("q"))[:5] == ("answer", None, None, "cache", 0)  # ... which it did not pay
    assert first.claim("f") and not second.claim("f")
    first.release("f", "InternalServerError (HTTP 500): boom")
    assert asyncio.run(second.wait("f"))[:2] == (None, None)  # given up there: the second's to ask
    assert second.claim("f") and second.claim("new")
    third = ResponseCache(tmp_path, BASE, run="third", owner="main-3")
    assert third.uncached(["new"]) == ["new"] and not third.claim("new")
    # One text, two prompts: asked once, the other waits for its answer.
    assert first.claim("dup") and not first.claim("dup")
    first.put("dup", "once")
    assert asyncio.run(first.wait("dup"))[:4] == ("once", None, None, "model")
    second.close()  # its claims go with it: "new" is free again
    assert asyncio.run(third.wait("new"))[:2] == (None, None) and third.claim("new")


def test_a_session_waiting_for_a_killed_session_asks_the_prompt_itself(tmp_path: Path) -> None:
    dead = ResponseCache(tmp_path, BASE, run="dead", owner="main-1")
    dead.uncached(["q"])
    here = ResponseCache(tmp_path, BASE, run="here", owner="main-2", poll=0.01)
    here.uncached(["q"])
    assert not here.claim("q")
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.execute("UPDATE members SET pid = ? WHERE run = 'dead'", (_dead_pid(),))  # killed with "q" claimed
    conn.commit()
    conn.close()
    assert asyncio.run(here.wait("q"))[:2] == (None, None) and here.claim("q")


def test_scratch_folders_of_dead_runs_are_removed(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    ResponseCache(runs / "alive", {}, run="alive", shared=True)
    ResponseCache(runs / "gone", {}, run="gone", shared=True)
    conn = sqlite3.connect(runs / "gone" / DB_NAME)
    conn.execute("UPDATE members SET pid = ?", (_dead_pid(),))
    conn.commit()
    conn.close()
    assert remove_dead_scratch(runs) == [runs / "gone"]
    assert sorted(p.name for p in runs.iterdir()) == ["alive"]


def test_the_finish_reason_is_stored_with_the_answer_and_a_peer_reads_it(tmp_path: Path) -> None:
    one = ResponseCache(tmp_path, BASE, run="r", shared=True, owner="gw0", background=True)
    two = ResponseCache(tmp_path, BASE, run="r", shared=True, owner="gw1")
    assert one.claim("cut")

    async def save() -> None:  # the pool's path: committed by the writer thread
        await one.save("cut", "The prize went to", None, 1, 5, 4, 0.1, "length")

    asyncio.run(save())
    assert asyncio.run(two.wait("cut")).finish_reason == "length"
    assert one.claim("plain")
    one.put("plain", "Paris")
    one.flush()
    assert asyncio.run(two.wait("plain")).finish_reason is None
    one.close()
    # another session of the same cache reads it as it was stored
    later = ResponseCache(tmp_path, BASE, run="later")
    entry = later.lookup_entry("cut")
    assert entry is not None and (entry.answer, entry.completion_tokens, entry.finish_reason) == (
        "The prize went to", 4, "length")
    later.close()
    two.close()


def test_a_run_s_own_ask_keeps_the_key_of_every_earlier_cache_and_each_repeat_has_its_own(tmp_path: Path) -> None:
    from defan_pytest.calls.protocol import Prompt

    cache = ResponseCache(tmp_path, BASE)
    asks = [Prompt("x", "What is 2+2?", repeat=i) for i in range(3)]
    assert cache.key(asks[0].stored) == cache.key("What is 2+2?")  # the key before --defan-repeat
    assert len({cache.key(a.stored) for a in asks}) == 3
    cache.put(asks[0].stored, "4")
    cache.put(asks[2].stored, "four")
    assert [cache.get(a.stored) for a in asks] == ["4", None, "four"]
    assert cache.uncached([a.stored for a in asks]) == [asks[1].stored]
    cache.close()


def test_text_that_is_not_utf8_is_a_damaged_cache_not_a_read_only_one(tmp_path: Path) -> None:
    """Issue 34 (10): invalid UTF-8 in the cache was reported as "the folder or the database is
    read-only"; it is a damaged database, which --defan-cache=refresh moves aside."""
    import sqlite3

    from defan_pytest.cache.database import DB_NAME

    assert check_folder(tmp_path) is None
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.execute("INSERT INTO answers (key, model, prompt, answer, created) VALUES (?, 'm', 'p', CAST(? AS TEXT), 0)",
                 ("k", b"\xff\xfe not utf-8"))
    conn.commit()
    conn.close()
    problem = check_folder(tmp_path) or ""
    assert "read-only" not in problem and "holds text that is not UTF-8" in problem and "--defan-cache=refresh" in problem
    notes: list = []
    assert check_folder(tmp_path, refresh=True, notes=notes) is None
    assert notes and "moved aside" in notes[0] and list(tmp_path.glob(f"{DB_NAME}.corrupt-*"))


@pytest.mark.parametrize(
    ("column", "value", "read"),
    [
        ("answer", 42, None),  # an INTEGER answer (a table made without TEXT affinity): it was scored as "42"
        ("answer", b"Paris", None),  # a BLOB
        ("answer", "x" * 5000, None),  # over --defan-max-answer: asked again, as from the wire
        ("answer", "é" * 1500, None),  # 3,000 bytes of UTF-8 in 1,500 characters: over 2,048 bytes
        ("note", "n" * 1_000_000, "n" * 2000),  # a 1 MB note reached the report whole
        ("note", 7, None),
        ("prompt_tokens", -5, None),  # came out as -150 of cost
        ("completion_tokens", 2 ** 63 - 1, None),  # came out as 2.8e20
        ("prompt_tokens", 3.5, None),
        ("latency", -1.0, None),
        ("latency", float("inf"), None),
        ("finish_reason", "s" * 10_000, None),
    ],
)
def test_values_read_back_obey_the_caps_and_types_of_answers_from_the_wire(
        tmp_path: Path, column: str, value: object, read: object) -> None:
    """Issue 34 (7): the cache file is untrusted input; what it gives back is typed and capped."""
    import sqlite3

    conn = sqlite3.connect(tmp_path / DB_NAME)
    # The table as another program may have made it: no type on the answer column, so SQLite
    # keeps an INTEGER an INTEGER.
    conn.execute("CREATE TABLE answers (key TEXT PRIMARY KEY, model TEXT NOT NULL, prompt TEXT NOT NULL, answer, "
                 "created REAL NOT NULL, note, prompt_tokens, completion_tokens, latency, finish_reason)")
    conn.commit()
    conn.close()
    store = ResponseCache(tmp_path, BASE, max_answer=2048)
    store.put("q", "Paris", note="fine", prompt_tokens=10, completion_tokens=3, latency=0.5, finish_reason="stop")
    store.flush()
    good = store.lookup_entry("q")
    assert good is not None and good.answer == "Paris" and good.prompt_tokens == 10
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.execute(f"UPDATE answers SET {column} = ?", (value,))
    conn.commit()
    conn.close()
    entry = store.lookup_entry("q")
    if column == "answer":
        assert entry is None  # not cached: the prompt is asked again
        return
    assert entry is not None and entry.answer == "Paris"
    assert getattr(entry, column) == read


def test_claims_of_a_dead_process_of_the_run_are_released_and_asked_again(tmp_path: Path) -> None:
    # Issue 34 point 2.  Before: wait() polled a claim of its own run without asking whether its
    # owner lived (an xdist worker killed with SIGKILL): the run hung.
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    one = ResponseCache(tmp_path, BASE, run="r", shared=True, owner="gw0")
    two = ResponseCache(tmp_path, BASE, run="r", shared=True, owner="gw1")
    assert one.claim("q") and one.claim("p") and not two.claim("q")
    with sqlite3.connect(tmp_path / DB_NAME) as conn:  # gw0 dies with its two claims "calling"
        conn.execute("UPDATE members SET pid = ? WHERE owner = 'gw0'", (gone.pid,))

    async def waited() -> tuple:
        return await asyncio.wait_for(two.wait("q"), timeout=30)

    assert asyncio.run(waited())[:2] == (None, None)  # nobody holds it any more: gw1's to ask
    assert two.claim("q") and two.claim("p")  # every claim of the dead process went
    one.close()
    two.close()


def test_a_live_process_keeps_its_claims(tmp_path: Path) -> None:
    one = ResponseCache(tmp_path, BASE, run="r", shared=True, owner="gw0")
    two = ResponseCache(tmp_path, BASE, run="r", shared=True, owner="gw1")
    assert one.claim("q")
    stop = threading.Event()
    threading.Timer(2.5, stop.set).start()  # long enough for two liveness checks
    assert asyncio.run(two.wait("q", stop=stop))[:2] == (None, None) and not two.claim("q")
    one.close()
    two.close()
