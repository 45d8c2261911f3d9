"""Tests for the loopback OpenAI server (tests/openai_server.py), driven by urllib and litellm.

They also pin down which litellm exception each injected fault turns into, which the plugin's
retry/error handling relies on.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import http.client
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from openai_server import FaultRule, OpenAIServer, parse_fault

HERE = Path(__file__).resolve().parent


def _litellm() -> Any:
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "true"
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def _complete(srv: OpenAIServer, prompt: str, **kw: Any) -> Any:
    litellm = _litellm()
    kw.setdefault("num_retries", 0)
    kw.setdefault("timeout", 5)
    return litellm.completion(model="openai/test-model", api_base=srv.base_url,
                              api_key="sk-test", messages=[{"role": "user", "content": prompt}],
                              **kw)


def _post(url: str, body: Any, timeout: float = 5) -> tuple[int, dict[str, str], Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="POST", headers={
        "Content-Type": "application/json", "Authorization": "Bearer sk-plain"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def _get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return json.loads(resp.read())


def _chat(prompt: str, **extra: Any) -> dict[str, Any]:
    return {"model": "test-model", "messages": [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": prompt}], **extra}


# ---- rules (no network) ------------------------------------------------------------------
def test_fault_rule_matching_and_budgets() -> None:
    exact = FaultRule(fault=500, match="abc", times=2)
    assert not exact.take("xabcx")
    assert [exact.take("abc") for _ in range(3)] == [True, True, False]

    sub = FaultRule.from_any({"contains": "cap", "status": "429"})
    assert sub.fault == 429 and sub.substring and sub.times is None
    assert sub.take("the capital") and sub.take("capital") and not sub.take("nope")

    per = FaultRule(fault="drop", match="*", times=1, per_prompt=True)
    assert [per.take(p) for p in ("a", "b", "a", "b", "c")] == [True, True, False, False, True]
    per.reset()
    assert per.take("a")

    with pytest.raises(ValueError):
        FaultRule(fault="explode")
    with pytest.raises(ValueError):
        FaultRule(fault=200)


def test_parse_fault_compact_and_json() -> None:
    r = parse_fault("429x2:*")
    assert (r.fault, r.match, r.substring, r.times) == (429, "*", False, 2)
    r = parse_fault("hang:~capital of")
    assert (r.fault, r.match, r.substring, r.times) == ("hang", "capital of", True, None)
    r = parse_fault("500x1:What is 2:3?")  # only the first ':' separates
    assert (r.fault, r.match, r.times) == (500, "What is 2:3?", 1)
    assert parse_fault("empty").match == "*"
    r = parse_fault('{"fault": "hang", "contains": "x", "hang_seconds": 2}')
    assert (r.fault, r.match, r.substring, r.hang_seconds) == ("hang", "x", True, 2)


# ---- plain HTTP --------------------------------------------------------------------------
def test_answers_counts_and_log_over_urllib() -> None:
    with OpenAIServer({"Who wrote Hamlet?": "Shakespeare"}) as srv:
        assert srv.base_url == f"http://127.0.0.1:{srv.port}/v1"
        status, headers, raw = _post(srv.base_url + "/chat/completions",
                                     _chat("Who wrote Hamlet?"))
        assert status == 200 and headers["Content-Type"].startswith("application/json")
        data = json.loads(raw)
        assert data["object"] == "chat.completion" and data["id"].startswith("chatcmpl-")
        assert data["model"] == "test-model" and isinstance(data["created"], int)
        choice = data["choices"][0]
        assert choice["message"] == {"role": "assistant", "content": "Shakespeare"}
        assert choice["finish_reason"] == "stop" and choice["index"] == 0
        usage = data["usage"]
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0

        # unknown prompt -> default answer; no /v1 prefix; content given as parts
        parts = {"model": "m", "messages": [{"role": "user", "content": [
            {"type": "text", "text": "Unknown "}, {"type": "text", "text": "question"}]}]}
        _, _, raw = _post(srv.url + "/chat/completions", parts)
        assert json.loads(raw)["choices"][0]["message"]["content"] == "I don't know."

        models = _get_json(srv.base_url + "/models")
        assert models["object"] == "list" and models["data"][0]["id"] == "test-model"

        status, _, raw = _post(srv.base_url + "/chat/completions",
                               _chat("Who wrote Hamlet?", stream=True))
        assert status == 400 and json.loads(raw)["error"]["type"] == "invalid_request_error"
        status, _, raw = _post(srv.base_url + "/chat/completions", b"{not json")
        assert status == 400 and "error" in json.loads(raw)

        assert srv.counts == {"Who wrote Hamlet?": 2, "Unknown question": 1}
        assert srv.total == 3  # the unparseable body is not counted
        log = srv.requests
        assert [r["prompt"] for r in log] == ["Who wrote Hamlet?", "Unknown question",
                                              "Who wrote Hamlet?"]
        assert log[0]["headers"]["authorization"] == "Bearer sk-plain"
        assert log[0]["body"]["messages"][0]["content"] == "Be brief."
        assert log[1]["path"] == "/chat/completions"
        srv.reset()
        assert srv.counts == {} and srv.total == 0 and srv.requests == []


def test_latency_is_non_blocking_and_counts_are_thread_safe() -> None:
    with OpenAIServer(latency=0.2, log_requests=False, default_answer="x") as srv:
        url = srv.base_url + "/chat/completions"
        with concurrent.futures.ThreadPoolExecutor(40) as pool:
            results = list(pool.map(lambda i: _post(url, _chat(f"q{i % 4}"))[0], range(40)))
        assert results == [200] * 40
        assert srv.peak_in_flight > 1  # the 0.2 s waits overlap: served concurrently, not serially
        assert srv.counts == {"q0": 10, "q1": 10, "q2": 10, "q3": 10}
        assert srv.total == 40 and srv.requests == []


def test_answer_fn_and_null_default() -> None:
    def fn(prompt: str, body: dict) -> str | None:
        return None if prompt == "none" else f"{body['model']}:{prompt[::-1]}"

    with OpenAIServer({"fixed": "F"}, answer_fn=fn) as srv:
        url = srv.base_url + "/chat/completions"
        contents = [json.loads(_post(url, _chat(p))[2])["choices"][0]["message"]["content"]
                    for p in ("fixed", "abc", "none")]
        assert contents == ["F", "test-model:cba", None]


def test_faults_over_urllib() -> None:
    faults = [
        {"match": "limited", "fault": 429, "times": 1, "retry_after": 7},
        {"contains": "boom", "fault": 503},
        "drop:dropme",
        "malformed:bad json",
    ]
    with OpenAIServer(faults=faults) as srv:
        url = srv.base_url + "/chat/completions"
        status, headers, raw = _post(url, _chat("limited"))
        assert status == 429 and headers["Retry-After"] == "7"
        err = json.loads(raw)["error"]
        assert err["type"] == "rate_limit_error" and err["code"] == "rate_limit_exceeded"
        assert _post(url, _chat("limited"))[0] == 200  # budget of 1 spent

        status, _, raw = _post(url, _chat("a boom b"))
        assert status == 503 and json.loads(raw)["error"]["type"] == "server_error"

        with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
            _post(url, _chat("dropme"))

        status, _, raw = _post(url, _chat("bad json"))
        assert status == 200
        with pytest.raises(json.JSONDecodeError):
            json.loads(raw)

        assert srv.counts == {"limited": 2, "a boom b": 1, "dropme": 1, "bad json": 1}
        assert srv.fault_counts == {"429": 1, "503": 1, "drop": 1, "malformed": 1}


def test_hostile_faults_over_http_client() -> None:
    """The faults of issue 20: a redirect, a huge body, an endless one, content parts, an
    absurd Retry-After (sent as given)."""
    faults = [{"match": "redirect", "fault": "redirect", "location": "http://127.0.0.1:9/v1/chat/completions"},
              {"match": "huge", "fault": "huge", "size": 300_000},
              {"match": "endless", "fault": "endless"},
              {"match": "parts", "fault": "parts", "parts": [{"type": "text", "text": "Paris"}]},
              {"match": "wait", "fault": 429, "retry_after": "1e9"}]

    def post(prompt: str) -> http.client.HTTPResponse:
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)  # follows no redirect
        conn.request("POST", "/v1/chat/completions", json.dumps(_chat(prompt)), {"Content-Type": "application/json"})
        return conn.getresponse()

    with OpenAIServer(faults=faults) as srv:
        resp = post("redirect")
        assert resp.status == 307 and resp.getheader("Location") == "http://127.0.0.1:9/v1/chat/completions"
        resp = post("huge")
        body = resp.read()
        assert int(resp.getheader("Content-Length")) == len(body)
        assert json.loads(body)["choices"][0]["message"]["content"] == "x" * 300_000
        resp = post("endless")
        assert resp.getheader("Transfer-Encoding") == "chunked"
        assert len(resp.read(2_000_000)) == 2_000_000  # and more to come, for ever
        resp.close()
        assert json.loads(post("parts").read())["choices"][0]["message"]["content"] == [{"type": "text", "text": "Paris"}]
        assert post("wait").getheader("Retry-After") == "1e9"
        assert srv.streamed >= 300_000 + 2_000_000 - 1000
    assert srv.fault_counts == {"redirect": 1, "huge": 1, "endless": 1, "parts": 1, "429": 1}


# ---- litellm -----------------------------------------------------------------------------
def test_litellm_answers_and_authorization_header() -> None:
    with OpenAIServer({"What is the capital of France?": "Paris"}) as srv:
        resp = _complete(srv, "What is the capital of France?")
        assert resp.choices[0].message.content == "Paris"
        assert resp.choices[0].finish_reason == "stop"
        assert _complete(srv, "Unknown?").choices[0].message.content == "I don't know."
        assert srv.counts == {"What is the capital of France?": 1, "Unknown?": 1}
        (first, _) = srv.requests
        assert first["headers"]["authorization"] == "Bearer sk-test"
        assert first["body"]["model"] == "test-model"
        assert first["path"] == "/v1/chat/completions"


def test_litellm_async_concurrency() -> None:
    litellm = _litellm()
    answers = {f"q{i}": f"a{i}" for i in range(20)}

    async def run(base: str) -> list[str]:
        calls = [litellm.acompletion(model="openai/test-model", api_base=base, api_key="sk-test",
                                     messages=[{"role": "user", "content": p}], num_retries=0)
                 for p in answers]
        return [r.choices[0].message.content for r in await asyncio.gather(*calls)]

    with OpenAIServer(answers, latency=0.05) as srv:
        assert asyncio.run(run(srv.base_url)) == list(answers.values())
        assert srv.counts == dict.fromkeys(answers, 1)


def test_litellm_rate_limit_then_success() -> None:
    litellm = _litellm()
    with OpenAIServer({"p": "ok"}, faults=[FaultRule(fault=429, times=1, retry_after=3)]) as srv:
        with pytest.raises(litellm.RateLimitError) as info:
            _complete(srv, "p")
        exc = info.value
        assert exc.status_code == 429
        assert exc.response.headers["retry-after"] == "3"
        assert _complete(srv, "p").choices[0].message.content == "ok"
        assert srv.counts == {"p": 2}


@pytest.mark.parametrize(("fault", "exc_name", "status"), [
    (500, "InternalServerError", 500),
    (401, "AuthenticationError", 401),
    (404, "NotFoundError", 404),
    (503, "ServiceUnavailableError", 503),
    ("malformed", "InternalServerError", 500),  # JSON decode error surfaces as a 500
    ("drop", "InternalServerError", 500),  # "Connection error." also maps to a 500
])
def test_litellm_error_mapping(fault: int | str, exc_name: str, status: int) -> None:
    litellm = _litellm()
    with OpenAIServer(faults=[{"fault": fault, "match": "*"}]) as srv:
        with pytest.raises(getattr(litellm, exc_name)) as info:
            _complete(srv, "anything")
        assert type(info.value).__name__ == exc_name
        assert info.value.status_code == status
        if fault == 404:
            assert "The model `test-model` does not exist" in str(info.value)
        assert srv.counts == {"anything": 1}  # num_retries=0: exactly one HTTP attempt


def test_litellm_timeout_on_hang() -> None:
    litellm = _litellm()
    # The hang outlasts the test: a Timeout (not the connection the server drops after
    # hang_seconds) says litellm gave up at its own timeout.
    with OpenAIServer(faults=[{"fault": "hang", "match": "slow", "hang_seconds": 600}]) as srv:
        with pytest.raises(litellm.Timeout) as info:
            _complete(srv, "slow", timeout=0.5)
        assert info.value.status_code == 408
        assert _complete(srv, "fast").choices[0].message.content == "I don't know."
        thread = srv._thread
    # leaving the block released the hanging request: the server's thread ended (stop() waits
    # 10 s for it), it did not wait out the hang
    assert thread is not None and not thread.is_alive()


def test_litellm_empty_and_null_content() -> None:
    with OpenAIServer({"e": "never", "n": "never"},
                      faults=["empty:e", FaultRule(fault="null", match="n")]) as srv:
        assert _complete(srv, "e").choices[0].message.content == ""
        assert _complete(srv, "n").choices[0].message.content is None


# ---- CLI mode ----------------------------------------------------------------------------
def test_cli_subprocess(tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"2+2?": "4"}), encoding="utf-8")
    faults = tmp_path / "faults.json"
    faults.write_text(json.dumps([{"match": "2+2?", "fault": 500, "times": 1}]), "utf-8")
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "openai_server.py"), "--port", "0", "--answers",
         str(answers), "--faults", str(faults), "--fault", "401x1:~secret",
         "--default-answer", "dunno"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()  # type: ignore[union-attr]
        assert line.startswith("PORT="), (line, proc.stderr.read() if proc.poll() else "")
        base = f"http://127.0.0.1:{int(line.split('=')[1])}"
        url = base + "/v1/chat/completions"
        assert _post(url, _chat("2+2?"))[0] == 500
        assert json.loads(_post(url, _chat("2+2?"))[2])["choices"][0]["message"]["content"] == "4"
        status, _, raw = _post(url, _chat("my secret"))
        assert status == 401 and json.loads(raw)["error"]["code"] == "invalid_api_key"
        assert json.loads(_post(url, _chat("x"))[2])["choices"][0]["message"]["content"] == "dunno"

        stats = _get_json(base + "/_stats")
        assert stats == {"total": 4, "counts": {"2+2?": 2, "my secret": 1, "x": 1},
                         "faults": {"500": 1, "401": 1}, "refused": 0}  # refused: 429s of the rate-limit mode
        assert _get_json(base + "/_requests")[0]["headers"]["authorization"] == "Bearer sk-plain"

        # reset (optionally installing new rules) restores the budgets
        status, _, _ = _post(base + "/_reset", {"faults": ["404:*"]})
        assert status == 200
        assert _get_json(base + "/_stats") == {"total": 0, "counts": {}, "faults": {}, "refused": 0}
        assert _post(url, _chat("2+2?"))[0] == 404
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - defensive
            proc.kill()
            proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    assert proc.returncode == 0
