"""The call pool against a real provider protocol: litellm calling the loopback OpenAI server,
with the faults a provider really produces; and user callables."""
from __future__ import annotations

import asyncio
import os
import threading
import time

import pytest

from defan_pytest.calls import (
    CallableCaller,
    CallPool,
    FatalCallError,
    LitellmCaller,
    Prompt,
    classify,
    describe,
    known_secrets,
    redact,
)
from defan_pytest.models import CallableModel, LitellmModel
from openai_server import OpenAIServer

KEY = "sk-test-SECRET-0123456789abcdef"


def litellm_caller(srv: OpenAIServer, timeout: float = 5.0, **params) -> LitellmCaller:
    model = LitellmModel("t", "openai/test-model", {"api_base": srv.base_url, "api_key": KEY, **params})
    return LitellmCaller(model, timeout=timeout)


def run_pool(caller, prompts, **kw) -> tuple[CallPool, dict]:
    pool = CallPool(caller, backoff=0.01, max_backoff=0.05, seed=1, secrets=[KEY], **kw)
    pool.start([Prompt(p, p) for p in prompts])
    pool.join(60)
    out = {}
    for p in prompts:
        try:
            out[p] = pool.result(p, timeout=1)
        except FatalCallError as exc:
            out[p] = exc
    pool.close()
    return pool, out


def test_litellm_answers_and_sends_each_prompt_once() -> None:
    prompts = [f"q{i}" for i in range(40)]
    with OpenAIServer(answers={p: p.upper() for p in prompts}, latency=0.02) as srv:
        pool, out = run_pool(litellm_caller(srv), prompts, concurrency=8)
        assert [out[p].text for p in prompts] == [p.upper() for p in prompts]
        assert srv.counts == {p: 1 for p in prompts}
        assert srv.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"
        assert srv.requests[0]["body"]["messages"] == [{"role": "user", "content": srv.requests[0]["prompt"]}]
    assert pool.stats.snapshot()["calls"] == 40 and pool.stats.errors == 0


def test_429_is_retried_after_retry_after() -> None:
    with OpenAIServer(answers={"a": "A"}, faults=[{"fault": 429, "match": "a", "times": 2, "retry_after": 1}]) as srv:
        pool, out = run_pool(litellm_caller(srv), ["a"], retries=3)
        assert out["a"].text == "A" and out["a"].attempts == 3
        times = [r["time"] for r in srv.requests]
    assert len(times) == 3
    # the provider asked for one second between attempts: the pool waited at least that
    assert times[1] - times[0] >= 0.95 and times[2] - times[1] >= 0.95
    assert pool.stats.retries == 2


@pytest.mark.parametrize("fault,kind", [(500, "InternalServerError"), ("malformed", "InternalServerError"),
                                        ("drop", "InternalServerError"), ("hang", "Timeout")])
def test_server_faults_are_retried_then_errored(fault, kind) -> None:
    rule = {"fault": fault, "match": "x", "hang_seconds": 3}
    with OpenAIServer(answers={"y": "Y"}, faults=[rule]) as srv:
        pool, out = run_pool(litellm_caller(srv, timeout=0.5), ["x", "y"], retries=2)
        assert out["x"].text is None and kind in out["x"].error
        assert out["x"].attempts == 3 and srv.counts["x"] == 3  # retried, then errored
        assert out["y"].text == "Y"  # one failing prompt does not stop the others
    assert pool.stats.errors == 1 and pool.stats.retries == 2


def test_empty_and_null_content() -> None:
    faults = [{"fault": "empty", "match": "e"}, {"fault": "null", "match": "n"}]
    with OpenAIServer(faults=faults) as srv:
        _, out = run_pool(litellm_caller(srv), ["e", "n"], retries=2)
        assert out["e"].text == "" and out["e"].error is None  # an empty answer is an answer
        assert out["n"].text is None and "no content" in out["n"].error
        assert srv.counts["n"] == 1  # not retried: the model did answer


@pytest.mark.parametrize("status,name", [(401, "AuthenticationError"), (404, "NotFoundError")])
def test_auth_error_or_unknown_model_stops_the_run(status, name) -> None:
    prompts = [f"q{i}" for i in range(50)]
    with OpenAIServer(faults=[{"fault": status, "match": "*"}]) as srv:
        pool, out = run_pool(litellm_caller(srv), prompts, concurrency=4, retries=3)
        assert srv.total <= 4  # the requests in flight when it failed, no more, no retries
    assert pool.fatal is not None and name in pool.fatal and "stopping" in pool.fatal
    assert all(isinstance(v, FatalCallError) or v is None for v in out.values() if not hasattr(v, "text"))
    assert KEY not in pool.fatal


def test_secrets_never_reach_error_messages() -> None:
    exc = RuntimeError(f"Incorrect API key provided: {KEY}. Authorization: Bearer {KEY}")
    text = describe(exc, [KEY])
    assert KEY not in text and "***" in text
    assert "sk-" not in redact("key=sk-abcdefghijklmnop and Bearer abc.def-ghi12345")
    os.environ["DEFAN_TEST_API_KEY"] = "hunter2-very-secret"
    try:
        assert "hunter2-very-secret" in known_secrets({"api_key": KEY})
    finally:
        del os.environ["DEFAN_TEST_API_KEY"]


def test_pool_bounds_concurrency_and_runs_sync_callables_in_threads() -> None:
    active, peak, lock = [0], [0], threading.Lock()

    def slow(prompt: str) -> str:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.02)
        with lock:
            active[0] -= 1
        return prompt[::-1]

    pool, out = run_pool(CallableCaller(CallableModel("s", slow, False)), [f"p{i}" for i in range(60)], concurrency=6)
    assert out["p12"].text == "21p" and peak[0] == 6


def test_async_callable_is_awaited_and_failures_are_errors() -> None:
    async def flaky(prompt: str) -> str:
        await asyncio.sleep(0)
        if prompt == "bad":
            raise ValueError("my RAG broke")
        return "ok"

    pool, out = run_pool(CallableCaller(CallableModel("a", flaky, True)), ["good", "bad"], retries=2)
    assert out["good"].text == "ok"
    assert out["bad"].error == "ValueError: my RAG broke" and out["bad"].attempts == 1  # not retryable


def test_rpm_spaces_request_starts() -> None:
    starts = []

    async def stamp(prompt: str) -> str:
        starts.append(time.monotonic())
        return prompt

    run_pool(CallableCaller(CallableModel("r", stamp, True)), [f"p{i}" for i in range(5)], concurrency=5, rpm=600)
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert min(gaps) >= 0.09  # 600 per minute: one start every 0.1 s


def test_classify() -> None:
    class E(Exception):
        def __init__(self, status):
            self.status_code = status

    assert [classify(E(s)) for s in (429, 500, 503, 401, 403, 404, 400)] == [
        "retry", "retry", "retry", "fatal", "fatal", "fatal", "fail"]
    assert classify(asyncio.TimeoutError()) == "retry" and classify(ConnectionResetError()) == "retry"
