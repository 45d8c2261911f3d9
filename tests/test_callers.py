"""The callers: which path a model takes (``--defan-call-path``), what the lean OpenAI-protocol
path sends for each provider it speaks to, and what each path imports (nothing, for a run
answered from the cache; never litellm, for the lean path)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from defan_pytest.cache.store import ResponseCache
from defan_pytest.calls.backends import choose, make_caller
from defan_pytest.calls.backends.callables import CallableCaller
from defan_pytest.calls.backends.litellm import LitellmCaller
from defan_pytest.calls.backends.openai import OpenAICaller
from defan_pytest.calls.backends.openai_route import lean_route
from defan_pytest.calls.pool import CallPool
from defan_pytest.calls.protocol import Prompt
from defan_pytest.calls.models import CallableModel, LitellmModel
from openai_server import OpenAIServer

KEY = "sk-test-SECRET-0123456789abcdef"
ROOT = Path(__file__).resolve().parents[1]


def run(caller, prompts, **kw):
    pool = CallPool(caller, backoff=0.01, max_backoff=0.05, seed=1, **kw)
    pool.start([Prompt(p, p) for p in prompts])
    assert pool.join(60)
    out = {p: pool.result(p, timeout=1) for p in prompts}
    pool.close()
    return out


@pytest.mark.parametrize("model,params,path", [
    ("openai/gpt-4o-mini", {}, "openai"),
    ("gpt-4o-mini", {}, "openai"),  # a bare name litellm's table gives to openai
    ("openai/my-model", {"api_base": "http://127.0.0.1:9/v1"}, "openai"),
    ("hosted_vllm/meta-llama/Llama-3-8B", {"api_base": "http://127.0.0.1:9/v1"}, "openai"),
    ("lm_studio/qwen", {"api_base": "http://127.0.0.1:9/v1"}, "openai"),
    ("azure/my-deployment", {"api_base": "https://x.example.com", "api_key": KEY, "api_version": "2024-10-21"},
     "openai"),
    ("azure/my-deployment", {"api_base": "https://x.example.com", "api_key": KEY}, "litellm"),  # litellm's version
    ("anthropic/claude-3-5-haiku", {}, "litellm"),
    ("ollama/llama3", {}, "litellm"),  # ollama's own API; its OpenAI endpoint is openai/... with api_base
    ("openai/o3-mini", {}, "litellm"),  # litellm rewrites a reasoning model's parameters
    ("openai/gpt-4o-mini", {"drop_params": True}, "litellm"),  # a parameter only litellm knows
    ("openai/gpt-4o-mini", {"mock_response": "x"}, "litellm"),
])
def test_auto_takes_the_lean_path_only_where_it_sends_what_litellm_would(model, params, path, monkeypatch) -> None:
    monkeypatch.delenv("HOSTED_VLLM_API_BASE", raising=False)
    monkeypatch.delenv("AZURE_API_VERSION", raising=False)
    chosen, why = choose(LitellmModel("m", model, {"temperature": 0, **params}), "auto")
    assert chosen.name == path, why
    assert choose(LitellmModel("m", model, params), "litellm")[0].name == "litellm"


def test_a_forced_lean_path_that_cannot_work_is_an_error_and_callables_have_their_own() -> None:
    with pytest.raises(ValueError, match=r"--defan-call-path=openai: 'anthropic/claude-3-5-haiku' cannot take the "
                                         r"OpenAI-protocol path: provider 'anthropic'"):
        choose(LitellmModel("m", "anthropic/claude-3-5-haiku"), "openai")
    assert choose(CallableModel("c", lambda p: p, False), "openai")[0].name == "callable"
    assert isinstance(make_caller(CallableModel("c", lambda p: p, False), 5, path="litellm"), CallableCaller)
    with pytest.raises(ValueError, match="not one of"):
        choose(LitellmModel("m", "openai/x"), "fast")


def test_routes_read_the_environment_as_litellm_does() -> None:
    env = {"OPENAI_API_KEY": "sk-env-0000111122223333", "OPENAI_BASE_URL": "http://proxy.local/v1",
           "OPENAI_ORG_ID": "org-9"}
    route, _ = lean_route(LitellmModel("m", "openai/gpt-4o-mini"), {"temperature": 0}, env)
    assert route is not None and route.url == "http://proxy.local/v1/chat/completions"
    assert route.headers["Authorization"] == "Bearer sk-env-0000111122223333"
    assert route.headers["OpenAI-Organization"] == "org-9"
    assert route.body == {"model": "gpt-4o-mini", "temperature": 0} and route.missing_key is None
    vllm, _ = lean_route(LitellmModel("m", "hosted_vllm/llama"), {}, {"HOSTED_VLLM_API_BASE": "http://gpu:8000/v1/"})
    assert vllm is not None and vllm.url == "http://gpu:8000/v1/chat/completions"
    assert vllm.headers["Authorization"] == "Bearer fake-api-key"  # litellm's placeholder
    none, why = lean_route(LitellmModel("m", "hosted_vllm/llama"), {}, {})
    assert none is None and "no api_base" in why
    bare, _ = lean_route(LitellmModel("m", "openai/gpt-4o-mini"), {}, {})
    assert bare is not None and bare.url == "https://api.openai.com/v1/chat/completions"
    assert bare.missing_key == "OPENAI_API_KEY"


def test_azure_on_both_paths_reaches_the_deployment_with_its_key_and_version(monkeypatch) -> None:
    for name in ("AZURE_API_KEY", "AZURE_OPENAI_API_KEY", "AZURE_API_BASE", "AZURE_API_VERSION", "AZURE_AD_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with OpenAIServer(answers={"q": "Paris"}) as srv:
        model = LitellmModel("az", "azure/my-gpt", {"api_base": srv.url, "api_key": KEY, "api_version": "2024-10-21",
                                                   "temperature": 0})
        answers = []
        for path in ("litellm", "openai"):
            caller = make_caller(model, timeout=10, path=path)
            assert caller.backend.name == path
            answers.append(run(caller, ["q"])["q"])
        reqs = srv.requests
    assert [a.text for a in answers] == ["Paris", "Paris"] and all(a.prompt_tokens == 1 for a in answers)
    assert [r["path"] for r in reqs] == ["/openai/deployments/my-gpt/chat/completions"] * 2
    assert [r["query"]["api-version"] for r in reqs] == ["2024-10-21"] * 2
    assert [r["headers"]["api-key"] for r in reqs] == [KEY, KEY]
    assert reqs[0]["body"]["messages"] == reqs[1]["body"]["messages"]


def test_answers_cached_by_one_path_are_reused_by_the_other_with_their_usage(tmp_path: Path) -> None:
    with OpenAIServer(answers={"q": "Rome is the answer"}, latency=0.02) as srv:
        model = LitellmModel("t", "openai/test-model", {"api_base": srv.base_url, "api_key": KEY, "temperature": 0})
        lean = make_caller(model, timeout=5, path="openai")
        store = ResponseCache(tmp_path, lean.identity, background=True)
        first = run(lean, ["q"], store=store)["q"]
        store.close()
        general = make_caller(model, timeout=5, path="litellm")
        again = ResponseCache(tmp_path, general.identity)
        second = run(general, ["q"], store=again)["q"]
        assert srv.total == 1  # the second path asked nothing
    assert (first.via, second.via) == ("call", "cache")
    assert (second.text, second.prompt_tokens, second.completion_tokens) == ("Rome is the answer", 1, 4)
    assert second.latency == pytest.approx(first.latency)


PROBE = """
import json, sys
sys.path.insert(0, {tests!r})
from defan_pytest.calls.backends import make_caller
from defan_pytest.calls.pool import CallPool
from defan_pytest.calls.protocol import Prompt
from defan_pytest.cache.store import ResponseCache
from defan_pytest.calls.models import LitellmModel
model = LitellmModel("t", "openai/test-model", {{"api_base": {base!r}, "api_key": "sk-x", "temperature": 0}})
caller = make_caller(model, timeout=10, path={path!r})
store = ResponseCache({cache!r}, caller.identity, background=True)
pool = CallPool(caller, store=store)
pool.start([Prompt("q", "q")])
pool.join(120)
r = pool.result("q")
pool.close()
store.close()
print(json.dumps({{"text": r.text, "via": r.via,
                  "modules": sorted(m for m in ("litellm", "openai", "aiohttp", "httpx") if m in sys.modules)}}))
"""


def probe(base: str, path: str, cache: Path) -> dict:
    code = PROBE.format(tests=str(ROOT / "tests"), base=base, path=path, cache=str(cache))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_what_each_path_imports_and_a_cached_run_imports_nothing(tmp_path: Path) -> None:
    with OpenAIServer(answers={"q": "A"}) as srv:
        lean = probe(srv.base_url, "openai", tmp_path / "lean")
        general = probe(srv.base_url, "litellm", tmp_path / "general")
        warm = probe(srv.base_url, "openai", tmp_path / "lean")
    assert lean["text"] == general["text"] == warm["text"] == "A"
    assert "litellm" not in lean["modules"] and "openai" not in lean["modules"] and "aiohttp" in lean["modules"]
    assert "litellm" in general["modules"]
    assert warm["via"] == "cache" and warm["modules"] == []  # nothing to ask: no client at all


def test_the_lean_caller_refuses_a_model_it_cannot_send() -> None:
    with pytest.raises(ValueError, match="cannot take the OpenAI-protocol path"):
        OpenAICaller(LitellmModel("m", "anthropic/claude-3-5-haiku"), timeout=5)
    assert isinstance(make_caller(LitellmModel("m", "anthropic/claude-3-5-haiku"), 5), LitellmCaller)


# -- the finish reason ------------------------------------------------------------------------

FINISHES = {"cut": {"content": "The prize went to", "finish_reason": "length"}, "whole": "Rome",
            "silent": {"content": "Oslo", "finish_reason": None},
            "hostile": {"content": "Bern", "finish_reason": "\x1b[31m" + "x" * 500}}


@pytest.mark.parametrize("path", ["openai", "litellm"])
def test_both_paths_read_the_finish_reason_and_the_cache_replays_it(tmp_path: Path, path: str) -> None:
    with OpenAIServer(answers=FINISHES) as srv:
        model = LitellmModel("t", "openai/test-model", {"api_base": srv.base_url, "api_key": KEY, "temperature": 0})
        caller = make_caller(model, timeout=5, path=path)
        store = ResponseCache(tmp_path, caller.identity, background=True)
        first = run(caller, list(FINISHES), store=store)
        store.close()
        again = run(make_caller(model, timeout=5, path=path), list(FINISHES),
                    store=ResponseCache(tmp_path, caller.identity))
        assert srv.total == len(FINISHES)  # the second run asked nothing
    got = {p: (r.text, r.finish_reason) for p, r in first.items()}
    # A null and a hostile word (an escape code, 500 characters) read as unknown on the lean path,
    # never as text to print; litellm maps both to "stop" itself (its own choice, kept as it says).
    unknown = None if path == "openai" else "stop"
    assert got == {"cut": ("The prize went to", "length"), "whole": ("Rome", "stop"), "silent": ("Oslo", unknown),
                   "hostile": ("Bern", unknown)}
    assert {p: (r.via, r.text, r.finish_reason) for p, r in again.items()} == {
        p: ("cache", *v) for p, v in got.items()}


class Finished:
    """A user's own return type: an object with text and finish_reason."""

    def __init__(self, text, finish_reason):
        self.text, self.finish_reason = text, finish_reason


class HttpResponse:
    """An HTTP client's response: a ``text`` (the raw body) but no finish reason."""

    text = '{"choices": []}'


@pytest.mark.parametrize("out,expected", [
    ("Paris", ("Paris", None)),
    ({"text": "The prize went to", "finish_reason": "length"}, ("The prize went to", "length")),
    ({"text": "Paris"}, ("Paris", None)),
    ({"text": "Paris", "finish_reason": None, "prompt_tokens": 3, "completion_tokens": 1}, ("Paris", None)),
    (Finished("Oslo", "stop"), ("Oslo", "stop")),
    (Finished("Oslo", None), ("Oslo", None)),
])
def test_a_callable_returns_a_str_or_its_text_with_a_finish_reason(out, expected) -> None:
    model = CallableModel("m", lambda prompt: out, False)
    reply = run(CallableCaller(model), ["q"])["q"]
    assert (reply.text, reply.finish_reason, reply.error) == (*expected, None)


@pytest.mark.parametrize("out,message", [
    ({"answer": "Paris"}, "returned dict, not str"),
    ({"text": "Paris", "finish_reason": "cut off\n"}, "returned finish_reason 'cut off\\n'"),
    ({"text": "Paris", "finish_reason": 3}, "returned finish_reason 3"),
    ({"text": b"Paris"}, "returned bytes, not str"),
    (HttpResponse(), "returned HttpResponse, not str"),
])
def test_a_callable_returning_something_else_is_that_prompts_error(out, message) -> None:
    reply = run(CallableCaller(CallableModel("m", lambda prompt: out, False)), ["q"])["q"]
    assert reply.text is None and message in reply.error
