"""The call pool against a real provider protocol: both paths to a litellm model (litellm itself,
and the lean OpenAI-protocol client) calling the loopback OpenAI server, with the faults a
provider really produces; and user callables.  Every test of a model call runs on both paths."""
from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from defan_pytest.cache.store import DB_NAME, ResponseCache
from defan_pytest.calls.backends import make_caller
from defan_pytest.calls.backends.callables import CallableCaller
from defan_pytest.calls.backends.litellm import LITELLM, LitellmCaller
from defan_pytest.calls.backends.openai import OpenAICaller
from defan_pytest.calls.failures import describe
from defan_pytest.calls.pool import CallPool
from defan_pytest.calls.protocol import FatalCallError, Prompt
from defan_pytest.calls.models import CallableModel, LitellmModel
from defan_pytest.calls.redaction import known_secrets, redact
from openai_server import OpenAIServer

KEY = "sk-test-SECRET-0123456789abcdef"


#: The two paths to a litellm model: litellm itself, and the lean OpenAI-protocol client.
PATHS = ["litellm", "openai"]


@pytest.fixture(params=PATHS)
def path(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def model_caller(srv: OpenAIServer, path: str, timeout: float = 5.0, **params):
    model = LitellmModel("t", "openai/test-model", {"api_base": srv.base_url, "api_key": KEY, **params})
    caller = make_caller(model, timeout=timeout, path=path)
    assert caller.backend.name == path and isinstance(caller, {"litellm": LitellmCaller, "openai": OpenAICaller}[path])
    return caller


def run_pool(caller, prompts, **kw) -> tuple[CallPool, dict]:
    pool = CallPool(caller, **{"backoff": 0.01, "max_backoff": 0.05, "seed": 1, "secrets": [KEY], **kw})
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


def test_a_model_answers_and_each_prompt_is_sent_once(path: str) -> None:
    prompts = [f"q{i}" for i in range(40)]
    with OpenAIServer(answers={p: f"{p.upper()} is it" for p in prompts}, latency=0.02) as srv:
        pool, out = run_pool(model_caller(srv, path), prompts, concurrency=8)
        assert [out[p].text for p in prompts] == [f"{p.upper()} is it" for p in prompts]
        assert srv.counts == {p: 1 for p in prompts}
        assert srv.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"
        assert srv.requests[0]["body"]["messages"] == [{"role": "user", "content": srv.requests[0]["prompt"]}]
    assert pool.stats.snapshot()["calls"] == 40 and pool.stats.errors == 0
    # the tokens the server counted (words, for this server) and each request's latency
    assert {(out[p].prompt_tokens, out[p].completion_tokens) for p in prompts} == {(1, 3)}
    assert all(out[p].latency >= 0.02 for p in prompts)  # the server's latency included


def test_both_paths_send_the_same_request() -> None:
    with OpenAIServer(answers={"a": "A"}) as srv:
        params = {"api_base": srv.base_url, "api_key": KEY, "temperature": 0, "max_tokens": 16, "seed": 7,
                  "stop": ["\n"], "headers": {"X-Tenant": "t1"}}
        model = LitellmModel("t", "openai/test-model", params, system_prompt="Be brief.")
        for path in PATHS:
            _, out = run_pool(make_caller(model, timeout=5, path=path), ["a"])
            assert out["a"].text == "A" and (out["a"].prompt_tokens, out["a"].completion_tokens) == (3, 1)
        bodies = [r["body"] for r in srv.requests]
        headers = [r["headers"] for r in srv.requests]
    assert bodies[0] == bodies[1] == {
        "model": "test-model", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "a"}],
        "temperature": 0, "max_tokens": 16, "seed": 7, "stop": ["\n"],
    }
    assert [h["x-tenant"] for h in headers] == ["t1", "t1"]
    assert [h["authorization"] for h in headers] == [f"Bearer {KEY}"] * 2


def test_429_is_retried_after_retry_after(path: str) -> None:
    with OpenAIServer(answers={"a": "A"}, faults=[{"fault": 429, "match": "a", "times": 2, "retry_after": 1}]) as srv:
        pool, out = run_pool(model_caller(srv, path), ["a"], retries=3, max_backoff=5)
        assert out["a"].text == "A" and out["a"].attempts == 3
        times = [r["time"] for r in srv.requests]
    assert len(times) == 3
    # the provider asked for one second between attempts: the pool waited at least that
    assert times[1] - times[0] >= 0.95 and times[2] - times[1] >= 0.95
    assert pool.stats.retries == 2


# The error's kind on each path (litellm reports a dropped connection as a server error).
FAULT_KINDS = {500: ("InternalServerError", "InternalServerError"),
               "malformed": ("InternalServerError", "InternalServerError"),
               "drop": ("InternalServerError", "APIConnectionError"), "hang": ("Timeout", "Timeout")}


@pytest.mark.parametrize("fault", list(FAULT_KINDS))
def test_server_faults_are_retried_then_errored(fault, path: str) -> None:
    kind = FAULT_KINDS[fault][PATHS.index(path)]
    # The hang outlasts any timeout (the server's exit ends it); only a hang needs a short
    # timeout, and "y" must be answered within it even on a busy machine.
    rule = {"fault": fault, "match": "x", "hang_seconds": 600}
    with OpenAIServer(answers={"y": "Y"}, faults=[rule]) as srv:
        pool, out = run_pool(model_caller(srv, path, timeout=1 if fault == "hang" else 30), ["x", "y"], retries=2)
        assert out["x"].text is None and kind in out["x"].error
        assert out["x"].attempts == 3 and srv.counts["x"] == 3  # retried, then errored
        assert out["y"].text == "Y"  # one failing prompt does not stop the others
    assert pool.stats.errors == 1 and pool.stats.retries == 2


def test_empty_and_null_content(path: str) -> None:
    faults = [{"fault": "empty", "match": "e"}, {"fault": "null", "match": "n"}]
    with OpenAIServer(faults=faults) as srv:
        _, out = run_pool(model_caller(srv, path), ["e", "n"], retries=2)
        assert out["e"].text == "" and out["e"].error is None  # an empty answer is an answer
        assert out["n"].text is None and "no content" in out["n"].error
        assert srv.counts["n"] == 1  # not retried: the model did answer


@pytest.mark.parametrize("status,name", [(401, "AuthenticationError"), (404, "NotFoundError")])
def test_auth_error_or_unknown_model_stops_the_run(status, name, path: str) -> None:
    prompts = [f"q{i}" for i in range(50)]
    with OpenAIServer(faults=[{"fault": status, "match": "*"}]) as srv:
        pool, out = run_pool(model_caller(srv, path), prompts, concurrency=4, retries=3)
        assert srv.total <= 4  # the requests in flight when it failed, no more, no retries
    assert pool.fatal is not None and name in pool.fatal and "stopping" in pool.fatal
    assert all(isinstance(v, FatalCallError) or v is None for v in out.values() if not hasattr(v, "text"))
    assert KEY not in pool.fatal


def test_a_key_the_provider_quotes_back_is_redacted(path: str) -> None:
    faults = [{"fault": 500, "match": "x", "message": f"upstream rejected key {KEY}"}]
    with OpenAIServer(answers={"y": f"the key is {KEY}"}, faults=faults) as srv:
        _, out = run_pool(model_caller(srv, path), ["x", "y"], retries=0)
    assert KEY not in out["x"].error and "***" in out["x"].error
    assert out["y"].text == "the key is ***" and "credential" in out["y"].note


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
    full = threading.Event()  # as many calls in flight as the pool allows

    def slow(prompt: str) -> str:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
            if active[0] == 6:
                full.set()
        full.wait(30)  # the first calls stay in flight until the pool has started six
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

    before = time.monotonic()
    run_pool(CallableCaller(CallableModel("r", stamp, True)), [f"p{i}" for i in range(5)], concurrency=5, rpm=600)
    # 600 per minute: the k-th start no sooner than k x 0.1 s after the pool started (a lower
    # bound, which a busy machine only makes truer; the gap between two starts is not: a start
    # that is late on its slot leaves a short gap to the next one).
    assert len(starts) == 5
    assert all(start >= before + k * 0.1 - 0.001 for k, start in enumerate(sorted(starts)))


def test_classify() -> None:
    class E(Exception):
        def __init__(self, status):
            self.status_code = status

    assert [LITELLM.classify(E(s)) for s in (429, 500, 503, 401, 403, 404, 400)] == [
        "retry", "retry", "retry", "fatal", "fatal", "fatal", "fail"]
    assert LITELLM.classify(asyncio.TimeoutError()) == "retry" and LITELLM.classify(ConnectionResetError()) == "retry"


# --------------------------------------------------------------------------------------------
# issue 8: nothing lost, nothing leaked, nothing hangs
# --------------------------------------------------------------------------------------------


def test_secrets_are_known_by_value_in_every_argument_and_the_environment() -> None:
    params = {
        "api_key": "sk-apikey-0000aaaa1111",
        "headers": {"Authorization": "Bearer hdr-1111bbbb2222", "Content-Type": "application/json",
                    "X-Request-Tag": "opaque7777tag8888value"},
        "extra_headers": {"X-Trace-Token": "xtr-2222cccc3333"},
        "extra_body": {"vertex": {"client_secret": "nested-3333dddd4444"}},
        "api_base": "https://user:pw-4444eeee5555@llm.example.com/v1?api-key=q-5555ffff6666",
        "max_tokens": 16, "temperature": 0,
    }
    env = {"AZURE_OPENAI_KEY": "az-6666gggg7777", "ACME_SERVICE_TOKEN": "tok-7777hhhh8888",
           "MY_RAG_SECRET_KEY": "rag-8888iiii9999", "PWD": "/work/main", "HF_HUB_DISABLE_TOKEN": "1",
           "GITHUB_PAT": "ghp-9999jjjj0000", "DATABASE_URL": "postgres://app:db-0000kkkk1111@db/x"}
    found = set(known_secrets(params, environ=env))
    expected = {"sk-apikey-0000aaaa1111", "Bearer hdr-1111bbbb2222", "hdr-1111bbbb2222", "xtr-2222cccc3333",
                "opaque7777tag8888value", "nested-3333dddd4444", "pw-4444eeee5555", "q-5555ffff6666",
                "az-6666gggg7777", "tok-7777hhhh8888", "rag-8888iiii9999", "ghp-9999jjjj0000", "db-0000kkkk1111"}
    assert found == expected
    text = "failed: " + " | ".join(sorted(expected)) + " application/json /work/main"
    clean = redact(text, sorted(found, key=len, reverse=True))
    assert all(s not in clean for s in expected)
    assert "application/json" in clean and "/work/main" in clean  # settings and paths are not secrets


@pytest.mark.parametrize("cls", [LitellmCaller, OpenAICaller])
def test_the_cache_identity_holds_no_credential_and_a_new_key_reuses_the_cache(cls) -> None:
    def identity(key: str, caller=cls) -> dict:
        params = {"api_base": "http://127.0.0.1:1/v1", "api_key": key, "temperature": 0,
                  "headers": {"Authorization": f"Bearer {key}", "OpenAI-Organization": "org-1"},
                  "extra_headers": {"x-api-key": key}}
        return caller(LitellmModel("t", "openai/m", params), timeout=5).identity

    one, two = identity("sk-first-key-000000000000"), identity("sk-second-key-11111111111")
    assert one == two
    # both paths share one identity: answers cached by one are reused by the other
    assert identity("sk-first-key-000000000000", LitellmCaller) == identity("sk-first-key-000000000000", OpenAICaller)
    text = json.dumps(one)
    assert "sk-first" not in text and "Bearer" not in text and "org-1" not in text  # header values: digests
    assert set(one["params"]["headers"]) == {"OpenAI-Organization"}
    assert "extra_headers" not in one["params"]  # only a credential in it
    other_org = cls(LitellmModel("t", "openai/m", {"headers": {"OpenAI-Organization": "org-2"}}), 5)
    same_org = cls(LitellmModel("t", "openai/m", {"headers": {"OpenAI-Organization": "org-1"}}), 5)
    assert other_org.identity != same_org.identity  # a header that is no credential still counts


def test_a_credential_in_a_callables_exception_or_answer_is_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_SEARCH_ADMIN_KEY", "search-admin-0123456789")

    async def leaky(prompt: str) -> str:
        if prompt == "raise":
            raise RuntimeError("index refused key search-admin-0123456789")
        return "the key is search-admin-0123456789"

    pool, out = run_pool(CallableCaller(CallableModel("leaky", leaky, True)), ["raise", "answer"], retries=0)
    pool.secrets = known_secrets()
    pool, out = run_pool_with(pool, ["raise", "answer"])
    assert out["raise"].error == "RuntimeError: index refused key ***"
    assert out["answer"].text == "the key is ***" and "credential" in out["answer"].note


def run_pool_with(pool: CallPool, prompts: list) -> tuple[CallPool, dict]:
    """Run ``prompts`` through a fresh pool configured as ``pool`` (its secrets included)."""
    fresh = CallPool(pool.caller, backoff=0.01, max_backoff=0.05, seed=1, secrets=pool.secrets, retries=0)
    fresh.start([Prompt(p, p) for p in prompts])
    fresh.join(30)
    out = {p: fresh.result(p, timeout=1) for p in prompts}
    fresh.close()
    return fresh, out


@pytest.mark.parametrize("value,kind", [(b"Paris", "bytes"), ({"answer": "Paris"}, "dict"), (42, "int")])
def test_a_non_string_answer_is_an_error_naming_its_type_and_never_cached(tmp_path: Path, value: object,
                                                                          kind: str) -> None:
    def odd(prompt: str) -> object:
        return value

    store = ResponseCache(tmp_path, {"kind": "callable", "name": "odd"}, background=True)
    pool = CallPool(CallableCaller(CallableModel("odd", odd, False)), store=store, retries=2)
    pool.start([Prompt("1", "q")])
    pool.join(10)
    r = pool.result("1")
    pool.close()
    store.close()
    assert r.text is None and r.error == f"BadAnswer: model 'odd' returned {kind}, not str: return the answer text"
    assert r.attempts == 1  # not retried: the model answered, wrongly typed
    assert store.count() == 0


def test_invalid_code_points_are_replaced_once_where_they_enter_and_noted(tmp_path: Path) -> None:
    async def broken_unicode(prompt: str) -> str:
        return "Par\ud800is"

    caller = CallableCaller(CallableModel("u", broken_unicode, True, version="1"))
    store = ResponseCache(tmp_path, caller.identity, background=True)
    pool, out = run_pool(caller, ["q"], store=store)
    store.close()
    assert out["q"].text == "Par\ufffdis" and "lone surrogates" in out["q"].note
    again = ResponseCache(tmp_path, caller.identity)
    assert again.lookup("q") == ("Par\ufffdis", out["q"].note)  # the note is kept with the answer
    pool, out = run_pool(caller, ["q"], store=again)
    assert out["q"].via == "cache" and out["q"].note == again.lookup("q")[1]


def test_missing_credentials_stop_the_run_before_the_first_call(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    caller = make_caller(LitellmModel("t", "openai/test-model", {}), timeout=5, path=path)
    pool, out = run_pool(caller, [f"q{i}" for i in range(20)], concurrency=4, retries=4)
    assert pool.fatal is not None and "no credentials for 'openai/test-model'" in pool.fatal
    assert "OPENAI_API_KEY" in pool.fatal and pool.stats.calls == 0 and pool.stats.retries == 0  # no request
    # the provider's own message, had a call gone out, is fatal too (litellm reports it as a 500)
    msg = "litellm.InternalServerError: OpenAIException - Missing credentials. Please pass an `api_key`"
    err = type("InternalServerError", (Exception,), {"status_code": 500})(msg)
    assert LITELLM.classify(err) == "fatal"


def test_a_local_openai_server_needs_no_key(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with OpenAIServer(answers={"a": "A"}) as srv:
        caller = make_caller(LitellmModel("t", "openai/test-model", {"api_base": srv.base_url}), timeout=5, path=path)
        pool, out = run_pool(caller, ["a"])
        assert out["a"].text == "A" and pool.fatal is None
        assert srv.requests[0]["headers"]["authorization"] == "Bearer sk-no-key-required"


def test_a_sync_callable_that_never_returns_times_out_in_a_daemon_thread() -> None:
    release = threading.Event()

    def stuck(prompt: str) -> str:
        if prompt == "hang":
            release.wait()
        return "ok"

    try:
        pool, out = run_pool(CallableCaller(CallableModel("stuck", stuck, False)), ["hang", "fine"],
                             timeout=1.0, retries=0)
        assert out["hang"].error.startswith("TimeoutError") and out["fine"].text == "ok"
        hung = [t for t in threading.enumerate() if t.name.startswith("defan-call-stuck") and t.is_alive()]
        assert hung and all(t.daemon for t in hung)  # cannot keep the interpreter from exiting
    finally:
        release.set()


def test_a_process_whose_sync_callable_never_returns_still_exits(tmp_path: Path) -> None:
    script = tmp_path / "hang.py"
    script.write_text(
        "import threading\n"
        "from defan_pytest.calls.backends.callables import CallableCaller\n"
        "from defan_pytest.calls.pool import CallPool\n"
        "from defan_pytest.calls.protocol import Prompt\n"
        "from defan_pytest.calls.models import CallableModel\n"
        "def never(prompt):\n"
        "    threading.Event().wait()\n"
        "pool = CallPool(CallableCaller(CallableModel('never', never, False)), timeout=0.2, retries=0)\n"
        "pool.start([Prompt('1', 'q')])\n"
        "pool.join(10)\n"
        "print(pool.result('1').error)\n"
        "pool.close()\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("TimeoutError"), done.stderr


def test_an_async_callable_blocking_the_loop_is_stopped_by_the_watchdog() -> None:
    release = threading.Event()

    async def blocking(prompt: str) -> str:
        release.wait()  # a blocking call inside async def: the loop cannot run its timer
        return "late"

    try:
        pool = CallPool(CallableCaller(CallableModel("blocker", blocking, True)), timeout=0.3, margin=0.7, retries=0)
        pool.start([Prompt(f"p{i}", f"q{i}") for i in range(15)])
        assert pool.join(60)  # the call never returns: only the watchdog ends the run
        assert pool.fatal is not None and "model 'blocker' blocked the event loop" in pool.fatal
        with pytest.raises(FatalCallError):
            pool.result("p3", timeout=1)
        pool.close()
    finally:
        release.set()


def test_an_async_callable_ignoring_its_cancellation_is_stopped_by_the_watchdog() -> None:
    async def stubborn(prompt: str) -> str:
        for _ in range(100):
            try:
                await asyncio.sleep(0.1)
            except asyncio.CancelledError:
                pass  # swallows the timeout's cancellation
        return "late"

    pool = CallPool(CallableCaller(CallableModel("stubborn", stubborn, True)), timeout=0.2, margin=0.5, retries=0)
    pool.start([Prompt("p", "q")])
    assert pool.join(60)
    assert pool.fatal is not None and "model 'stubborn' did not return within" in pool.fatal
    pool.close()


def test_timed_out_sync_calls_piling_up_stop_the_run() -> None:
    release = threading.Event()

    def stuck(prompt: str) -> str:
        release.wait()
        return "late"

    try:
        pool = CallPool(CallableCaller(CallableModel("pile", stuck, False)), concurrency=2, timeout=0.2, retries=3,
                        backoff=0.01, max_backoff=0.02)
        pool.start([Prompt(f"p{i}", f"q{i}") for i in range(10)])
        assert pool.join(60)
        assert pool.fatal is not None and "still running in their threads" in pool.fatal
        pool.close()
    finally:
        release.set()


def test_an_answer_is_committed_before_it_counts_as_done(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write = ResponseCache._write

    def slow_write(self: ResponseCache, *args: Any, **kwargs: Any) -> Any:  # a busy machine: the writer lags behind the calls
        time.sleep(0.05)
        return write(self, *args, **kwargs)

    monkeypatch.setattr(ResponseCache, "_write", slow_write)

    async def fast(prompt: str) -> str:
        return prompt.upper()

    store = ResponseCache(tmp_path, {"kind": "callable", "name": "fast"}, background=True)
    seen = sqlite3.connect(tmp_path / DB_NAME, check_same_thread=False)
    behind = []

    def on_progress(stats: Any) -> None:
        committed = seen.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
        if committed < stats.done:
            behind.append((stats.done, committed))

    pool = CallPool(CallableCaller(CallableModel("fast", fast, True)), concurrency=4, store=store,
                    on_progress=on_progress)
    pool.start([Prompt(str(i), f"q{i}") for i in range(40)])
    assert pool.join(30) and pool.stats.done == 40
    pool.close()
    store.close()
    assert behind == []  # never an answer counted done that a kill would lose


def test_callable_identity_covers_its_source_code() -> None:
    def make(body: str) -> Any:
        ns: dict = {}
        exec(f"def rag(prompt):\n    return {body}\n", ns)  # no source file: the code object counts
        return ns["rag"]

    def identity(fn: Any) -> dict:
        return CallableCaller(CallableModel("rag", fn, False, version="1")).identity

    assert identity(make("'a'")) == identity(make("'a'"))
    assert identity(make("'a'")) != identity(make("'b'"))

    def here(prompt: str) -> str:
        return "x"

    model = CallableModel("rag", here, False, version="1")
    assert model.source == hashlib.sha256(inspect.getsource(here).encode()).hexdigest()
    assert model.describe() == f"rag version 1, source {model.source[:8]}"


# --------------------------------------------------------------------------------------------
# issue 20: hostile servers -- credentials stay home, memory stays bounded
# --------------------------------------------------------------------------------------------

XKEY = "xak-Q1w2E3r4T5y6U7i8"  # a credential in a header aiohttp and httpx forward on a redirect


def test_a_redirect_to_another_host_is_never_followed(path: str) -> None:
    with OpenAIServer(answers={"a": "from elsewhere"}) as elsewhere:
        target = f"{elsewhere.base_url}/chat/completions?sig=SIGsecret77"
        with OpenAIServer(faults=[{"fault": "redirect", "location": target}]) as srv:
            caller = model_caller(srv, path, extra_headers={"x-api-key": XKEY})
            pool, out = run_pool(caller, ["a", "b"], retries=2)
            assert srv.total <= 2  # not retried: every call would be redirected
        assert elsewhere.total == 0  # nothing reached the other host: no key, no answer from it
    assert pool.fatal is not None and "RefusedRedirect" in pool.fatal and "HTTP 307" in pool.fatal
    assert f"127.0.0.1:{elsewhere.port}/v1/chat/completions?sig=***" in pool.fatal  # where it pointed, redacted
    assert "SIGsecret77" not in pool.fatal and XKEY not in pool.fatal
    assert all(isinstance(v, FatalCallError) for v in out.values())


def test_an_answer_over_the_cap_is_an_error_and_the_read_stops_there(path: str) -> None:
    cap = 256 * 1024
    faults = [{"fault": "huge", "match": "huge", "size": 4 * cap}, {"fault": "endless", "match": "endless"}]
    with OpenAIServer(answers={"fits": "x" * (cap - 1024)}, faults=faults) as srv:
        pool, out = run_pool(model_caller(srv, path, timeout=30), ["huge", "endless", "fits"], concurrency=2,
                             retries=2, max_answer=cap)
        assert srv.counts == {"huge": 1, "endless": 1, "fits": 1}  # not retried: the model would say it again
        streamed = srv.streamed
    for p in ("huge", "endless"):
        assert out[p].text is None and "AnswerTooLarge" in out[p].error and "larger than 256 KiB" in out[p].error
    assert out["fits"].text == "x" * (cap - 1024)
    # The endless body ended soon after the cap (what the sockets' buffers held), not at the timeout.
    assert streamed < 4 * cap + 64 * 1024 * 1024


def test_a_callables_answer_over_the_cap_is_an_error_and_never_cached(tmp_path: Path) -> None:
    cap = 64 * 1024

    def wordy(prompt: str) -> str:
        return {"ascii": "x" * (cap + 1), "wide": "é" * (cap // 2 + 1), "ok": "é" * (cap // 2)}[prompt]

    caller = CallableCaller(CallableModel("wordy", wordy, False, version="1"))
    store = ResponseCache(tmp_path, caller.identity, background=True)
    pool, out = run_pool(caller, ["ascii", "wide", "ok"], store=store, max_answer=cap, retries=2)
    assert store.count() == 1
    store.close()
    assert "65,537 characters" in out["ascii"].error and "65,538 bytes of text" in out["wide"].error  # UTF-8 bytes
    assert out["ascii"].attempts == out["wide"].attempts == 1
    assert out["ok"].text == "é" * (cap // 2)


@pytest.mark.parametrize("value", ["1e9", "inf", "nan", "-5", "Fri, 31 Dec 9999 23:59:59 GMT", "soon",
                                   "9" * 400])
def test_an_absurd_retry_after_waits_at_most_the_backoff_maximum_and_is_said_once(value: str, path: str) -> None:
    prompts = ["a", "b", "c"]
    rule = {"fault": 429, "match": "*", "times": 1, "per_prompt": True, "retry_after": value}
    with OpenAIServer(faults=[rule]) as srv:
        pool = CallPool(model_caller(srv, path), backoff=0.01, max_backoff=0.2, seed=1, retries=2, concurrency=3)
        pool.start([Prompt(p, p) for p in prompts])
        assert pool.join(60)  # (the old code slept 600 s per retry)
        out = {p: pool.result(p, timeout=1) for p in prompts}
        pool.close()
        assert srv.counts == {p: 2 for p in prompts}
    assert all(r.text == "I don't know." for r in out.values())
    if value in ("nan", "-5", "soon"):  # no word, or none to heed: the backoff's own schedule, nothing said
        assert pool.notices == []
        return
    asked = {"1e9": "1,000,000,000 s", "inf": "forever", "9" * 400: "forever"}.get(value, "")
    assert len(pool.notices) == 1 and pool.notices[0].startswith(f"the provider asked to wait {asked}")
    assert pool.notices[0].endswith("before a retry (Retry-After); every retry waits at most 0.2 s, the backoff's maximum (--defan-max-backoff)")


def test_retry_after_is_read_as_a_hostile_server_writes_it() -> None:
    from defan_pytest.calls.failures import parse_retry_after

    now = 1_700_000_000.0
    assert parse_retry_after("7", now) == 7.0 and parse_retry_after(" 2.5 ", now) == 2.5
    assert parse_retry_after("-5", now) == 0.0 and parse_retry_after("nan", now) is None
    assert parse_retry_after("inf", now) == float("inf") and parse_retry_after("1e999", now) == float("inf")
    assert parse_retry_after("Tue, 14 Nov 2023 22:13:30 GMT", now) == 10.0  # an HTTP-date: seconds until it
    assert parse_retry_after("Mon, 01 Jan 1990 00:00:00 GMT", now) == 0.0  # past
    for junk in ("soon", "", "Mon, 99 Foo 2023", "\x00" * 1000, "1" * 10000 + "x"):
        assert parse_retry_after(junk, now) is None


def test_content_parts_from_a_server_are_read_for_their_text() -> None:
    faults = [{"fault": "parts", "match": "text", "parts": [{"type": "text", "text": "Par"}, {"type": "text", "text": "is"}]},
              {"fault": "parts", "match": "image", "parts": [{"type": "image_url", "image_url": {"url": "x"}}]}]
    with OpenAIServer(faults=faults) as srv:
        _, out = run_pool(model_caller(srv, "openai"), ["text", "image"])
    assert out["text"].text == "Paris"
    assert out["image"].error == ("BadAnswer: the server's message.content is a list of 1 content parts without a "
                                  "text part (types: image_url): no answer text")


def test_urls_are_redacted_whole_in_texts_identities_and_secrets() -> None:
    from defan_pytest.calls.redaction import public_identity, redact_url

    hook = "https://tok3nUser@hooks.example/run?code=QCODE4242&sig=SIGsecret77#frag"
    params = {"api_base": "http://127.0.0.1:9/v1", "extra_body": {"callback": hook, "note": f"see {hook}."}}
    identity = json.dumps(public_identity(params, known_secrets(params)))
    for secret in ("tok3nUser", "QCODE4242", "SIGsecret77", "frag"):
        assert secret not in identity and secret not in redact(f"failed at {hook}")
    assert "https://***@hooks.example/run?code=***&sig=***#***" in identity
    assert "http://127.0.0.1:9/v1" in identity  # a URL without secret parts is kept as it is (the cache key too)
    assert "tok3nUser" in known_secrets(params)  # found by value wherever else it is quoted
    assert redact_url("http://[::1") == "http://***"  # not even parseable: nothing of it is kept


@pytest.mark.parametrize("base", ["http://tok3nUser@127.0.0.1:9/v1", "http://me:pw@127.0.0.1:9/v1"])
def test_an_api_base_with_user_info_is_refused_before_any_call(base: str, path: str) -> None:
    model = LitellmModel("t", "openai/test-model", {"api_base": base})
    with pytest.raises(ValueError, match="holds user info") as err:
        make_caller(model, timeout=5, path=path)
    assert "tok3nUser" not in str(err.value) and ":pw@" not in str(err.value) and "***@127.0.0.1:9" in str(err.value)


# -- issue 34 point 5: a stop is checked right before each send -----------------------------------

@pytest.mark.parametrize("how", ["stop", "halt"])
def test_nothing_is_sent_after_a_stop(tmp_path: Path, how: str) -> None:
    # Four requests in flight (the slow start's limit), twelve more prompts waiting for a turn.
    # Before: each waiting prompt was sent once a turn came, after the stop (0.26, 0.64, 1.03 s).
    sent, lock, gate, four = [], threading.Lock(), threading.Event(), threading.Event()

    def slow(prompt: str) -> str:
        with lock:
            sent.append(prompt)
            if len(sent) == 4:
                four.set()
        gate.wait(30)
        return prompt.upper()

    store = ResponseCache(tmp_path, {"m": "slow"}, background=True)
    pool = CallPool(CallableCaller(CallableModel("s", slow, False)), concurrency=16, adaptive=True, store=store)
    pool.start([Prompt(f"p{i}", f"p{i}") for i in range(16)])
    assert four.wait(30)
    if how == "stop":
        pool.stop("interrupted (Ctrl-C)")
        gate.set()
        assert pool.join(30)
    else:  # what Ctrl-C does: stop, give the requests in flight a moment, then count the cache
        threading.Timer(0.2, gate.set).start()
        pool.halt("interrupted (Ctrl-C)", grace=10)
    assert len(sent) == 4 and pool.stats.calls == 4
    # What the cache holds once the pool settled: the four answered in flight.
    assert store.held([f"p{i}" for i in range(16)]) == 4
    pool.close()
    store.close()
