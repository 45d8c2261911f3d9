"""What a local server states of its capacity (defan_pytest/calls/capacity.py): llama.cpp's
``/props`` slots, asked of a local server only, with no redirect followed; its ``timings``."""
from __future__ import annotations

import math
import socket
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from defan_pytest.cache.store import ResponseCache
from defan_pytest.calls import asker
from defan_pytest.calls.backends import make_caller
from defan_pytest.calls.capacity import props_url, server_seconds, stated_slots
from defan_pytest.calls.models import LitellmModel
from defan_pytest.calls.pool import CallPool
from defan_pytest.calls.protocol import Prompt
from openai_server import OpenAIServer


def test_the_slots_of_a_llama_server() -> None:
    with OpenAIServer(slots=3, props=True) as srv:
        assert stated_slots(srv.base_url) == 3
        assert stated_slots(f"http://user:secret@127.0.0.1:{srv.port}/v1") == 3
        assert srv.total == 0  # the probe is no chat request


def test_a_server_that_states_nothing() -> None:
    with OpenAIServer() as srv:  # no /props: a 404
        assert stated_slots(srv.base_url) is None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert stated_slots(f"http://127.0.0.1:{port}/v1", timeout=0.5) is None  # refused


@pytest.mark.parametrize("url", ["https://api.openai.com/v1", "http://8.8.8.8/v1", "", "not a url", None])
def test_only_a_local_server_is_asked(url: object) -> None:
    assert stated_slots(url) is None  # type: ignore[arg-type]


def test_urls() -> None:
    assert props_url("127.0.0.1:8080/v1") == "http://127.0.0.1:8080/props"
    assert props_url("http://a:b@localhost:8080/v1/") == "http://localhost:8080/props"
    assert props_url("ftp://localhost/v1") is None


def test_the_servers_time() -> None:
    assert server_seconds({"timings": {"prompt_ms": 250.0, "predicted_ms": 750}}) == 1.0
    for bad in ({"timings": {"prompt_ms": -1}}, {"timings": {"prompt_ms": float("nan")}}, {"timings": {"prompt_ms": True}},
                {"timings": "x"}, {"timings": {}}, {}, None, "x"):
        assert server_seconds(bad) is None


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["prompt_ms", "predicted_ms", "other"]),
                       st.one_of(st.floats(allow_nan=True), st.integers(), st.text(), st.none(), st.booleans())))
def test_any_timings_give_a_finite_time_or_none(timings: dict) -> None:
    out = server_seconds({"timings": timings})
    assert out is None or (math.isfinite(out) and out > 0)


# -- issue 34 points 4 and 6: a slow or hostile /props is the probe's, never the run's ------------

def test_one_deadline_for_the_whole_probe() -> None:
    # A server sending one byte a second: a socket timeout per read never fires; the probe's
    # own deadline ends it (and closes its socket).
    with OpenAIServer(props="slow") as srv:
        began = time.monotonic()
        assert stated_slots(srv.base_url, timeout=1.0) is None
        assert time.monotonic() - began < 20  # a bound against a hang, not a measure of speed
        for _ in range(100):
            if srv._core.props_closed:
                break
            time.sleep(0.05)
        assert srv._core.props_closed == 1


def test_a_deeply_nested_props_states_nothing() -> None:
    with OpenAIServer(props="deep") as srv:
        assert stated_slots(srv.base_url) is None


def lean_pool(srv: OpenAIServer, **kw: object) -> CallPool:
    model = LitellmModel("t", "openai/test-model", {"api_base": srv.base_url})
    caller = make_caller(model, timeout=5.0, path="openai")
    return CallPool(caller, concurrency=8, adaptive=True, backoff=0.01, max_backoff=0.05, seed=1, **kw)  # type: ignore[arg-type]


def test_the_probe_runs_beside_the_first_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: every call waited for the probe (45 s for a server trickling /props).  Now the
    # calls go out at the slow start's pace while the probe, given 60 s here, is still reading.
    monkeypatch.setattr(asker, "stated_slots", lambda url: stated_slots(url, timeout=60.0))
    with OpenAIServer(answers={"q1": "a"}, props="slow") as srv:
        pool = lean_pool(srv)
        prompts = [f"q{i}" for i in range(12)]
        pool.start([Prompt(p, p) for p in prompts])
        assert pool.join(30)
        assert srv._core.props_closed == 0  # the probe still reads when every answer is in
        assert pool.fatal is None and all(pool.result(p).error is None for p in prompts)
        pool.close()


@pytest.mark.parametrize("cache", [True, False])
def test_a_bad_props_is_never_blamed_on_the_cache(tmp_path: Path, cache: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: RecursionError in the preparation, reported as "the response cache ... failed ...
    # --defan-cache=refresh moves it aside", even without a cache.
    with OpenAIServer(answers={"q1": "a"}, props="deep") as srv:
        store = ResponseCache(tmp_path, {"m": 1}) if cache else None
        pool = lean_pool(srv, store=store)
        pool.start([Prompt(f"q{i}", f"q{i}") for i in range(6)])
        assert pool.join(30)
        assert pool.fatal is None, pool.fatal
        assert pool.result("q1").text == "a"
        pool.close()
        if store is not None:
            assert store.count() == 6
            store.close()
