"""What a local server states of its capacity (defan_pytest/calls/capacity.py): llama.cpp's
``/props`` slots, asked of a local server only, with no redirect followed; its ``timings``."""
from __future__ import annotations

import math
import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from defan_pytest.calls.capacity import props_url, server_seconds, stated_slots
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
