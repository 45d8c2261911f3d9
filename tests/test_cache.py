"""The SQLite response cache: keys, modes, claims between processes, durability."""
from __future__ import annotations

import asyncio
import multiprocessing
import sqlite3
from pathlib import Path

from defan_pytest.cache import DB_NAME, ResponseCache
from defan_pytest.calls import CallableCaller, CallPool, Prompt
from defan_pytest.models import CallableModel

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
    assert asyncio.run(two.wait("q")) == ("answer", None)
    assert one.claim("f") and not two.claim("f")
    one.release("f", "HTTP 500")
    assert asyncio.run(two.wait("f")) == (None, "HTTP 500")
    assert ResponseCache(tmp_path, BASE, run="another", shared=True).claim("q")  # claims are per run
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
