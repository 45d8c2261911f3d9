"""A loopback OpenAI chat-completions server for tests and benchmarks (helper, not a test).

It speaks just enough of the OpenAI HTTP protocol for ``litellm`` (``model="openai/<name>"``,
``api_base=srv.base_url``) and the ``openai`` SDK to treat it as a real provider:

* ``POST /v1/chat/completions`` (also ``/chat/completions``, and Azure OpenAI's
  ``/openai/deployments/{deployment}/chat/completions?api-version=...``): answers the *last user message*
  from an ``answers`` mapping (prompt text -> answer text), else from ``answer_fn(prompt, body)``,
  else with ``default_answer``. ``"stream": true`` is rejected with a 400 error JSON.  Every
  completion has a ``usage`` block (prompt and completion tokens: whitespace-separated words)
  and the finish reason ``"stop"``, unless the answer is a mapping
  ``{"content": "...", "finish_reason": "length"}`` (``None``: the field sent as null, a
  provider that gives none), in ``answers`` or returned by ``answer_fn``.
* ``GET /v1/models`` (also ``/models``): lists ``models``.
* Every chat request is counted per prompt (faulted ones too), optionally logged with its
  headers and body, delayed by ``latency`` seconds (``asyncio.sleep``), and may be turned into
  a fault by the first matching :class:`FaultRule`.
* A server of fixed capacity, as llama.cpp's ``llama-server -np N`` is: with ``slots=N`` at
  most N requests are served at once (each for ``latency`` seconds), the others wait in a
  queue; ``timings=True`` adds llama.cpp's ``timings`` block to every completion (the time the
  request was served, without its wait: ``prompt_ms`` + ``predicted_ms``); ``props=True`` serves
  ``GET /props`` with ``{"total_slots": N}``, as llama.cpp does.

Two ways to run it:

* in-process: ``with OpenAIServer(answers={...}) as srv: ... srv.base_url ... srv.counts``
  (aiohttp on its own event loop in a daemon thread);
* as a separate process (no GIL sharing with the client, best throughput)::

      python tests/openai_server.py --port 0 --answers answers.json --latency 0.05 \\
          --fault '429x2:*' --fault '{"match": "capital", "substring": true, "fault": "hang"}'

  prints ``PORT=<n>`` as the first stdout line, then serves until killed (SIGTERM/SIGINT).
  Extra endpoints: ``GET /_stats`` (total, per-prompt counts, faults injected),
  ``GET /_requests`` (the request log), ``POST /_reset`` (clear counts, log and rule budgets;
  an optional JSON body ``{"faults": [...], "answers": {...}}`` replaces those as well).

Fault rules (a :class:`FaultRule` or an equivalent dict; the first applicable rule wins)::

    {"fault": 429,            # 429 | 500 | 401 | 404 | any other 4xx/5xx status
                              # | "hang" | "malformed" | "empty" | "null" | "drop"
                              # | "redirect" | "huge" | "endless" | "parts"
     "match": "*",            # "*" = any prompt; otherwise the exact prompt text ...
     "substring": false,      # ... or, when true, a substring of the prompt
     "times": 2,              # fault only the first K matching requests; null/absent = always
     "per_prompt": false,     # true: the K budget is counted separately for each prompt
     "retry_after": 1,        # 429 only: Retry-After header value in seconds, or a text sent as
                              # it is ("1e9", "inf", "nan", an HTTP-date; null: no header)
     "location": None,        # "redirect" only: the Location of the 307 (another server's URL)
     "size": 50000000,        # "huge" only: the answer's length in bytes (Content-Length sent)
     "parts": None,           # "parts" only: message.content as this list of content parts
     "hang_seconds": 30.0,    # "hang" only: hold the request this long, then drop the connection
     "message": null}         # override the error message

``{"contains": "abc", ...}`` is shorthand for ``{"match": "abc", "substring": true, ...}`` and
``"status": 500`` is an alias of ``"fault": 500``. Compact CLI form of ``--fault``:
``FAULT[xK]:MATCH`` where a MATCH starting with ``~`` is a substring, e.g. ``429x1:*``,
``hang:~capital``, ``500x3:What is 2+2?``.

Fault meanings: 429 -> rate_limit_error JSON + ``Retry-After``; 500 -> server_error JSON;
401 -> invalid_api_key JSON; 404 -> model_not_found JSON ("The model `x` does not exist");
``hang`` -> no response until ``hang_seconds`` pass (or the server stops), then the connection
is closed; ``malformed`` -> 200 with a truncated JSON body; ``empty`` -> 200 with content "";
``null`` -> 200 with content null; ``drop`` -> connection closed without any response;
``redirect`` -> 307 to ``location``; ``huge`` -> 200 whose answer is ``size`` bytes of ``x``,
written in 64 KiB pieces after a Content-Length (never held whole); ``endless`` -> 200 with a
chunked body that never ends (until the client goes away or the server stops); ``parts`` ->
200 whose ``message.content`` is the list ``parts``.  :attr:`OpenAIServer.streamed` counts the
bytes the ``huge`` and ``endless`` faults wrote.
"""
from __future__ import annotations

import argparse
import asyncio
import inspect
import itertools
import json
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from types import TracebackType
from typing import Any

from aiohttp import web

__all__ = ["FaultRule", "OpenAIServer", "nondeterministic", "parse_fault", "pattern_of", "main"]

_NAMED_FAULTS = frozenset({"hang", "malformed", "empty", "null", "drop", "redirect", "huge", "endless", "parts"})
_PIECE = b"x" * 65536
_JSON_HEADERS = {"Content-Type": "application/json"}
_MALFORMED_BODY = (
    b'{"id": "chatcmpl-malformed", "object": "chat.completion", "created": 0, '
    b'"model": "x", "choices": [{"index": 0, "message": {"role": "assistant", "content": "trunc'
)


@dataclass
class FaultRule:
    """What to do with requests whose prompt matches (see the module docstring)."""

    fault: int | str
    match: str = "*"
    substring: bool = False
    times: int | None = None
    per_prompt: bool = False
    retry_after: float | str | None = 1
    hang_seconds: float = 30.0
    message: str | None = None
    location: str | None = None
    size: int = 50_000_000
    parts: list | None = None
    # bookkeeping: how many requests this rule has faulted (overall / per prompt)
    used: int = field(default=0, compare=False)
    used_by_prompt: Counter = field(default_factory=Counter, compare=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.fault, str) and self.fault.strip().isdigit():
            self.fault = int(self.fault)
        if isinstance(self.fault, str):
            self.fault = self.fault.strip().lower()
            if self.fault not in _NAMED_FAULTS:
                raise ValueError(f"unknown fault {self.fault!r}")
        elif not (isinstance(self.fault, int) and 400 <= self.fault <= 599):
            raise ValueError(f"fault status must be 4xx/5xx, got {self.fault!r}")
        if self.times is not None and self.times < 0:
            raise ValueError("times must be >= 0 or None")

    @classmethod
    def from_any(cls, spec: FaultRule | Mapping[str, Any] | str) -> FaultRule:
        if isinstance(spec, FaultRule):
            return spec
        if isinstance(spec, str):
            return parse_fault(spec)
        d = dict(spec)
        if "status" in d:
            d["fault"] = d.pop("status")
        if "contains" in d:
            d["match"] = d.pop("contains")
            d["substring"] = True
        d.pop("used", None)
        d.pop("used_by_prompt", None)
        return cls(**d)

    def matches(self, prompt: str) -> bool:
        if self.match == "*":
            return True
        return self.match in prompt if self.substring else self.match == prompt

    def take(self, prompt: str) -> bool:
        """True (and one unit of budget spent) if this rule faults this request."""
        if not self.matches(prompt):
            return False
        if self.times is not None:
            used = self.used_by_prompt[prompt] if self.per_prompt else self.used
            if used >= self.times:
                return False
        self.used += 1
        self.used_by_prompt[prompt] += 1
        return True

    def reset(self) -> None:
        self.used = 0
        self.used_by_prompt.clear()

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("used_by_prompt")
        return d


def parse_fault(spec: str) -> FaultRule:
    """Parse a ``--fault`` value: a JSON object, or ``FAULT[xK]:MATCH`` (``~MATCH`` = substring)."""
    spec = spec.strip()
    if spec.startswith("{"):
        return FaultRule.from_any(json.loads(spec))
    head, sep, match = spec.partition(":")
    if not sep:
        match = "*"
    fault, _, times = head.partition("x")
    substring = match.startswith("~")
    if substring:
        match = match[1:]
    return FaultRule(
        fault=fault, match=match, substring=substring, times=int(times) if times else None
    )


# ---- deterministic and non-deterministic answers ---------------------------------------------
# ``answers`` alone is the deterministic server: the same text for every request of a prompt.
# ``answer_fn=nondeterministic(answers, seed=...)`` is a server like a batched local one at
# temperature 0 (llama.cpp's llama-server gave the same answer to 47 of 111 prompts in two runs
# at different concurrency): each prompt has, by a generator seeded with ``seed`` and the prompt,
# one of three patterns (:func:`pattern_of`), applied to the n-th request of that prompt:
#
# * ``stable``: always its answer;
# * ``reworded``: every second request says it in other words (``The answer is: 3.``), the
#   same claim (only its text differs);
# * ``flipping``: every second request gives another answer (``3`` -> ``4``; ``I don't know.``
#   for an answer that is not a number) -- a verdict flip.
#
# The pattern depends on the request's rank among that prompt's requests only, so the answers a
# prompt gets (as a multiset) are the same whatever the concurrency or the client processes.
PATTERNS = ("stable", "reworded", "flipping")


def pattern_of(prompt: str, seed: int = 0) -> str:
    """The pattern ``nondeterministic(..., seed)`` gives ``prompt``: one of :data:`PATTERNS`."""
    import hashlib

    digest = hashlib.sha256(f"{seed}\0{prompt}".encode()).digest()
    return PATTERNS[digest[0] % len(PATTERNS)]


def nondeterministic(answers: Mapping[str, str], seed: int = 0) -> Callable[[str, dict], str | None]:
    """An ``answer_fn`` whose answers vary between the requests of one prompt (see above);
    prompts not in ``answers`` get ``None`` (the server's default answer)."""
    seen: Counter = Counter()
    lock = threading.Lock()

    def answer(prompt: str, body: dict) -> str | None:
        if prompt not in answers:
            return None
        with lock:
            n = seen[prompt]
            seen[prompt] += 1
        gold, kind = answers[prompt], pattern_of(prompt, seed)
        if n % 2 == 0 or kind == "stable":
            return gold
        if kind == "reworded":
            return f"The answer is: {gold}."
        return str(int(gold) + 1) if gold.strip().isdigit() else "I don't know."

    return answer


def _error(status: int, message: str, type_: str, code: str | None,
           headers: Mapping[str, str] | None = None) -> web.Response:
    body = {"error": {"message": message, "type": type_, "param": None, "code": code}}
    return web.Response(status=status, body=json.dumps(body).encode(),
                        headers={**_JSON_HEADERS, **(headers or {})})


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # [{"type": "text", "text": ...}, ...]
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _last_user_prompt(messages: Any) -> str:
    if isinstance(messages, list):
        for m in reversed(messages):
            if isinstance(m, dict) and m.get("role") == "user":
                return _text_of(m.get("content"))
    return ""


def _answer_and_finish(answer: Any) -> tuple[Any, Any]:
    """An answer as ``(content, finish_reason)``: a mapping gives both (``finish_reason``
    absent: ``"stop"``), anything else is the content, finished with ``"stop"``."""
    if isinstance(answer, Mapping):
        return answer.get("content"), answer.get("finish_reason", "stop")
    return answer, "stop"


def _ntokens(text: str) -> int:
    return len(text.split())


class _Core:
    """The aiohttp application and all state; used by both the thread and the CLI modes."""

    def __init__(self, answers: Mapping[str, str] | None, default_answer: str | None,
                 answer_fn: Callable[[str, dict], Any] | None, latency: float,
                 faults: Iterable[FaultRule | Mapping[str, Any] | str] | None,
                 log_requests: bool, models: Iterable[str], admin_routes: bool,
                 slots: int | None = None, timings: bool = False, props: bool | str = False,
                 rpm: float | None = None, tpm: float | None = None, window: float = 60.0) -> None:
        self.slots = slots
        #: A hosted API's rate limits (requests and tokens a minute), enforced as token buckets
        #: that hold ``window`` seconds' worth and refill at the limit's rate: a request beyond
        #: either is refused (429, Retry-After); every answer says the limits, what remains and
        #: when it is all back (x-ratelimit-* headers, as OpenAI sends them).
        self.rpm, self.tpm, self.window = rpm, tpm, float(window)
        self._buckets: dict[str, list[float]] = {}  # kind -> [level, at]
        self.refused = 0  # requests refused for the rate (429)
        self.admitted: list[tuple[float, int]] = []  # (time.monotonic(), tokens) of each request let through
        #: ``True``: ``/props`` as llama.cpp serves it; ``"slow"``: one byte a second, for ever;
        #: ``"deep"``: 300,000 nested ``[`` (hostile servers, issue 34 points 4 and 6).
        self.props_mode = props
        self.props_closed = 0  # slow /props connections that ended (the client gave up)
        self.timings = timings
        self._slot_sem: asyncio.Semaphore | None = None  # made on the serving loop
        self.answers: dict[str, str] = dict(answers or {})
        self.default_answer = default_answer
        self.answer_fn = answer_fn
        self.latency = float(latency)
        self.faults: list[FaultRule] = [FaultRule.from_any(f) for f in faults or ()]
        self.log_requests = log_requests
        self.models = list(models)
        self.lock = threading.Lock()
        #: Notified whenever a chat request arrives (``total`` grows), so a test waits on it.
        self.arrived = threading.Condition(self.lock)
        self.counts: Counter[str] = Counter()
        self.fault_counts: Counter[str] = Counter()
        self.total = 0
        self.streamed = 0  # bytes written by the "huge" and "endless" faults
        self.in_flight = 0  # chat requests being handled now ...
        self.peak_in_flight = 0  # ... and the most at once
        self.requests: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self.stopping: asyncio.Event | None = None  # created on the serving loop
        self.app = web.Application(client_max_size=64 * 1024 * 1024)
        r = self.app.router
        for prefix in ("/v1", ""):
            r.add_post(prefix + "/chat/completions", self.chat)
            r.add_get(prefix + "/models", self.list_models)
        r.add_post("/openai/deployments/{deployment}/chat/completions", self.chat)
        if props:
            r.add_get("/props", self.props_route)
        if admin_routes:
            r.add_get("/_stats", self.stats_route)
            r.add_get("/_requests", self.requests_route)
            r.add_post("/_reset", self.reset_route)

    # ---- state -------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {"total": self.total, "counts": dict(self.counts),
                    "faults": dict(self.fault_counts), "refused": self.refused}

    def reset(self) -> None:
        with self.lock:
            self.counts.clear()
            self.fault_counts.clear()
            self.total = 0
            self.streamed = 0
            self.peak_in_flight = self.in_flight
            self.requests.clear()
            for rule in self.faults:
                rule.reset()

    def set_faults(self, faults: Iterable[FaultRule | Mapping[str, Any] | str]) -> None:
        rules = [FaultRule.from_any(f) for f in faults]
        with self.lock:
            self.faults = rules

    # ---- routes ------------------------------------------------------------------------
    async def chat(self, request: web.Request) -> web.StreamResponse:
        with self.lock:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            return await self._chat(request)
        finally:
            with self.lock:
                self.in_flight -= 1

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("body is not a JSON object")
        except ValueError as exc:
            return _error(400, f"Invalid JSON body: {exc}", "invalid_request_error", None)
        prompt = _last_user_prompt(body.get("messages"))
        if self.rpm or self.tpm:
            refused = self._rate_check(body, prompt)
            if refused is not None:
                return refused
        with self.lock:
            self.total += 1
            self.arrived.notify_all()
            self.counts[prompt] += 1
            if self.log_requests:
                self.requests.append({
                    "time": time.time(), "method": request.method, "path": request.path,
                    "query": dict(request.query),
                    "headers": {k.lower(): v for k, v in request.headers.items()},
                    "body": body, "prompt": prompt,
                })
            rule = next((f for f in self.faults if f.take(prompt)), None)
            if rule is not None:
                self.fault_counts[str(rule.fault)] += 1
        served = await self._serve_slot()
        if body.get("stream"):
            return _error(400, "Streaming is not supported by this test server.",
                          "invalid_request_error", "stream_not_supported")
        if not isinstance(body.get("messages"), list):
            return _error(400, "'messages' is a required property", "invalid_request_error",
                          None)
        model = str(body.get("model", "") or request.match_info.get("deployment", ""))
        content: str | None
        finish: str | None = "stop"
        if rule is not None:
            resp = await self._fault(request, rule, model)
            if resp is not None:
                return resp
            content = None if rule.fault == "null" else ""
        else:
            content, finish = _answer_and_finish(await self._answer(prompt, body))
        return self._completion(body, model, content, finish, served)

    def _limit_of(self, kind: str) -> float | None:
        return self.rpm if kind == "requests" else self.tpm

    def _level(self, kind: str, now: float) -> float:
        limit = self._limit_of(kind)
        assert limit
        capacity = limit * self.window / 60.0
        level, at = self._buckets.setdefault(kind, [capacity, now])
        level = min(capacity, level + (now - at) * limit / 60.0)
        self._buckets[kind] = [level, now]
        return level

    def rate_headers(self) -> dict[str, str]:
        now = time.monotonic()
        out = {}
        for kind in ("requests", "tokens"):
            limit = self._limit_of(kind)
            if not limit:
                continue
            level = self._level(kind, now)
            capacity = limit * self.window / 60.0
            out[f"x-ratelimit-limit-{kind}"] = str(int(limit))
            out[f"x-ratelimit-remaining-{kind}"] = str(max(0, int(level)))
            out[f"x-ratelimit-reset-{kind}"] = f"{max(0.0, capacity - level) * 60.0 / limit:.3f}s"
        return out

    def _rate_check(self, body: dict, prompt: str) -> web.Response | None:
        """Take one request and its tokens from the buckets, or refuse it (429)."""
        messages = body.get("messages") if isinstance(body.get("messages"), list) else []
        tokens = sum(_ntokens(_text_of(m.get("content"))) for m in messages if isinstance(m, dict))
        answer = self.answers.get(prompt, self.default_answer)
        tokens += _ntokens(answer if isinstance(answer, str) else "")
        now = time.monotonic()
        with self.lock:
            need = {"requests": 1.0, "tokens": float(tokens)}
            short = 0.0
            for kind in ("requests", "tokens"):
                limit = self._limit_of(kind)
                if limit:
                    level = self._level(kind, now)
                    if level < need[kind]:
                        short = max(short, (need[kind] - level) * 60.0 / limit)
            if short > 0:
                self.refused += 1
                headers = {**self.rate_headers(), "Retry-After": f"{short:.3f}"}
                return _error(429, "Rate limit reached (test server).", "rate_limit_error", "rate_limit_exceeded",
                              headers)
            for kind in ("requests", "tokens"):
                if self._limit_of(kind):
                    self._buckets[kind][0] -= need[kind]
            self.admitted.append((now, tokens))
        return None

    async def _serve_slot(self) -> float:
        """Hold the request for ``latency`` seconds (in one of ``slots`` slots, waiting for one
        when all are busy); the seconds it was served, its wait excluded."""
        if self.slots is None:
            if self.latency > 0:
                await asyncio.sleep(self.latency)
            return self.latency
        if self._slot_sem is None:
            self._slot_sem = asyncio.Semaphore(self.slots)
        async with self._slot_sem:
            began = time.monotonic()
            if self.latency > 0:
                await asyncio.sleep(self.latency)
            return time.monotonic() - began

    async def _answer(self, prompt: str, body: dict) -> Any:
        if prompt in self.answers:
            return self.answers[prompt]
        if self.answer_fn is not None:
            out = self.answer_fn(prompt, body)
            if inspect.isawaitable(out):
                out = await out
            return out
        return self.default_answer

    def _completion(self, body: dict, model: str, content: str | None, finish: str | None = "stop",
                    served: float = 0.0) -> web.Response:
        prompt_tokens = sum(_ntokens(_text_of(m.get("content")))
                            for m in body["messages"] if isinstance(m, dict))
        completion_tokens = _ntokens(content or "")
        data = self._envelope(model, content, prompt_tokens, completion_tokens, finish)
        if self.timings:  # llama.cpp's block: the time served, split as prefill and generation
            data["timings"] = {"prompt_n": prompt_tokens, "prompt_ms": served * 100.0,
                               "predicted_n": completion_tokens, "predicted_ms": served * 900.0}
        headers = {**_JSON_HEADERS, **self.rate_headers()} if (self.rpm or self.tpm) else _JSON_HEADERS
        return web.Response(body=json.dumps(data).encode(), headers=headers)

    def _envelope(self, model: str, content: Any, prompt_tokens: int, completion_tokens: int,
                  finish: Any = "stop") -> dict:
        return {
            "id": f"chatcmpl-{next(self._ids):012d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": None,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "logprobs": None,
                "finish_reason": finish,
            }],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }

    async def _fault(self, request: web.Request, rule: FaultRule,
                     model: str) -> web.StreamResponse | None:
        f = rule.fault
        if f == 429:
            headers = {}
            if isinstance(rule.retry_after, str):
                headers["Retry-After"] = rule.retry_after  # sent as given, however absurd
            elif rule.retry_after is not None:
                ra = rule.retry_after
                headers["Retry-After"] = str(int(ra)) if float(ra).is_integer() else str(ra)
            return _error(429, rule.message or "Rate limit reached for requests (test server).",
                          "rate_limit_error", "rate_limit_exceeded", headers)
        if f == 500:
            return _error(500, rule.message or "The server had an error while processing your "
                          "request. Sorry about that!", "server_error", None)
        if f == 401:
            return _error(401, rule.message or "Incorrect API key provided. You can find your "
                          "API key at https://platform.openai.com/account/api-keys.",
                          "invalid_request_error", "invalid_api_key")
        if f == 404:
            return _error(404, rule.message or f"The model `{model}` does not exist",
                          "invalid_request_error", "model_not_found")
        if isinstance(f, int):
            type_ = "server_error" if f >= 500 else "invalid_request_error"
            return _error(f, rule.message or f"Injected HTTP {f} (test server).", type_, None)
        if f == "malformed":
            return web.Response(body=_MALFORMED_BODY, headers=_JSON_HEADERS)
        if f == "redirect":
            return web.Response(status=307, headers={"Location": rule.location or "/elsewhere"})
        if f in ("huge", "endless"):
            return await self._big(request, model, None if f == "endless" else rule.size)
        if f == "parts":
            parts = rule.parts if rule.parts is not None else [{"type": "text", "text": "Paris"}]
            return web.Response(body=json.dumps(self._envelope(model, parts, 1, 1)).encode(), headers=_JSON_HEADERS)
        if f == "hang":
            assert self.stopping is not None
            try:
                await asyncio.wait_for(self.stopping.wait(), rule.hang_seconds)
            except asyncio.TimeoutError:
                pass
            return self._drop(request)
        if f == "drop":
            return self._drop(request)
        return None  # "empty" / "null": a normal completion with "" / null content

    async def _big(self, request: web.Request, model: str, size: int | None) -> web.StreamResponse:
        """A completion whose answer is ``size`` bytes of ``x`` (announced), or never ends
        (``None``: chunked), written piece by piece: the server never holds it whole."""
        head, tail = json.dumps(self._envelope(model, "@", 1, 1)).encode().split(b"@")
        resp = web.StreamResponse(headers=_JSON_HEADERS)
        if size is None:
            resp.enable_chunked_encoding()
        else:
            resp.content_length = len(head) + size + len(tail)
        try:
            await resp.prepare(request)
            await resp.write(head)
            left = size
            while left is None or left > 0:
                piece = _PIECE if left is None or left >= len(_PIECE) else _PIECE[:left]
                await resp.write(piece)
                with self.lock:
                    self.streamed += len(piece)
                if left is not None:
                    left -= len(piece)
                if self.stopping is not None and self.stopping.is_set():
                    return resp
            await resp.write(tail)
            await resp.write_eof()
        except (ConnectionError, RuntimeError):  # the client went away (as it should)
            pass
        return resp

    @staticmethod
    def _drop(request: web.Request) -> web.Response:
        """Close the connection without a response (aiohttp then skips writing the reply)."""
        transport = request.transport
        if transport is not None:
            transport.abort()
        return web.Response(status=204)

    async def list_models(self, request: web.Request) -> web.Response:
        data = {"object": "list", "data": [
            {"id": m, "object": "model", "created": 0, "owned_by": "openai-test-server"}
            for m in self.models]}
        return web.json_response(data)

    async def props_route(self, request: web.Request) -> web.StreamResponse:
        if self.props_mode == "deep":
            return web.Response(body=b"[" * 300_000, content_type="application/json")
        if self.props_mode == "slow":
            resp = web.StreamResponse(headers={"Content-Type": "application/json"})
            await resp.prepare(request)
            try:
                while True:
                    await resp.write(b" ")
                    await asyncio.sleep(1.0)
            except (ConnectionError, asyncio.CancelledError):
                with self.lock:
                    self.props_closed += 1
                raise
        return web.json_response({"total_slots": self.slots or 1, "default_generation_settings": {"n_ctx": 4096}})

    async def stats_route(self, request: web.Request) -> web.Response:
        return web.json_response(self.stats())

    async def requests_route(self, request: web.Request) -> web.Response:
        with self.lock:
            log = list(self.requests)
        return web.json_response(log)

    async def reset_route(self, request: web.Request) -> web.Response:
        raw = await request.read()
        spec = json.loads(raw) if raw.strip() else {}
        if "faults" in spec:
            self.set_faults(spec["faults"])
        if "answers" in spec:
            self.answers = dict(spec["answers"])
        self.reset()
        return web.json_response({"ok": True, "faults": [f.to_dict() for f in self.faults]})

    # ---- serving -----------------------------------------------------------------------
    async def start(self, host: str, port: int) -> tuple[web.AppRunner, int]:
        self.stopping = asyncio.Event()
        runner = web.AppRunner(self.app, access_log=None, handle_signals=False,
                               shutdown_timeout=0.5)
        await runner.setup()
        site = web.TCPSite(runner, host, port, backlog=1024, reuse_address=True)
        await site.start()
        bound = runner.addresses[0][1]
        return runner, bound

    async def stop(self, runner: web.AppRunner) -> None:
        if self.stopping is not None:
            self.stopping.set()  # release hanging requests
        await runner.cleanup()


class OpenAIServer:
    """In-process OpenAI-compatible server on ``127.0.0.1`` in a background thread.

    Args:
        answers: prompt text (last user message) -> answer text, or ``{"content": ..., "finish_reason": ...}``.
        default_answer: content for prompts not in ``answers`` (when no ``answer_fn``).
        answer_fn: ``answer_fn(prompt, body) -> str | None`` (may be async) for prompts not
            in ``answers``; runs on the server's event loop thread.
        latency: seconds added to every chat request (non-blocking sleep).
        faults: list of :class:`FaultRule`, dicts, or ``--fault`` strings.
        log_requests: keep ``{"method", "path", "headers", "body", "prompt", "time"}`` for
            each chat request in :attr:`requests`, header names lower-cased (turn off for
            benchmarks).
        models: ids listed by ``GET /v1/models``.
        slots, timings, props: a server of fixed capacity (see the module docstring).
        host, port: bind address; port 0 lets the OS choose.
    """

    def __init__(self, answers: Mapping[str, str] | None = None, *,
                 default_answer: str | None = "I don't know.",
                 answer_fn: Callable[[str, dict], Any] | None = None,
                 latency: float = 0.0,
                 faults: Iterable[FaultRule | Mapping[str, Any] | str] | None = None,
                 log_requests: bool = True,
                 models: Iterable[str] = ("test-model",),
                 slots: int | None = None, timings: bool = False, props: bool | str = False,
                 rpm: float | None = None, tpm: float | None = None, window: float = 60.0,
                 host: str = "127.0.0.1", port: int = 0) -> None:
        self._core = _Core(answers, default_answer, answer_fn, latency, faults, log_requests,
                           models, admin_routes=True, slots=slots, timings=timings, props=props,
                           rpm=rpm, tpm=tpm, window=window)
        self.host = host
        self._want_port = port
        self.port: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle ---------------------------------------------------------------------
    def start(self) -> OpenAIServer:
        if self._thread is not None:
            raise RuntimeError("server already started")
        ready = threading.Event()
        error: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                self._runner, self.port = loop.run_until_complete(
                    self._core.start(self.host, self._want_port))
            except BaseException as exc:  # noqa: BLE001 - reported to the starting thread
                error.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(self._core.stop(self._runner))
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        self._thread = threading.Thread(target=run, name="openai-test-server", daemon=True)
        self._thread.start()
        ready.wait()
        if error:
            self._thread.join()
            self._thread = None
            raise error[0]
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._thread = None

    close = stop

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # ---- access ------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no ``/v1``)."""
        if self.port is None:
            raise RuntimeError("server not started")
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: pass as ``api_base`` / ``base_url``."""
        return self.url + "/v1"

    @property
    def counts(self) -> dict[str, int]:
        """Snapshot: prompt -> number of chat requests received (faulted ones included)."""
        with self._core.lock:
            return dict(self._core.counts)

    @property
    def total(self) -> int:
        with self._core.lock:
            return self._core.total

    def wait_for_total(self, n: int, timeout: float) -> bool:
        """Wait until ``n`` chat requests have arrived in all (faulted ones included); False if
        ``timeout`` seconds pass first."""
        with self._core.arrived:
            return self._core.arrived.wait_for(lambda: self._core.total >= n, timeout)

    @property
    def streamed(self) -> int:
        """Bytes the ``huge`` and ``endless`` faults wrote (since the start or :meth:`reset`)."""
        with self._core.lock:
            return self._core.streamed

    @property
    def peak_in_flight(self) -> int:
        """The most chat requests handled at the same time (since the start or :meth:`reset`)."""
        with self._core.lock:
            return self._core.peak_in_flight

    @property
    def fault_counts(self) -> dict[str, int]:
        """Snapshot: fault name/status -> number of requests it was applied to."""
        with self._core.lock:
            return dict(self._core.fault_counts)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Snapshot of the request log (empty when ``log_requests=False``)."""
        with self._core.lock:
            return list(self._core.requests)

    @property
    def answers(self) -> dict[str, str]:
        return self._core.answers

    @answers.setter
    def answers(self, value: Mapping[str, str]) -> None:
        self._core.answers = dict(value)

    @property
    def latency(self) -> float:
        return self._core.latency

    @latency.setter
    def latency(self, value: float) -> None:
        self._core.latency = float(value)

    @property
    def faults(self) -> list[FaultRule]:
        return self._core.faults

    def set_faults(self, faults: Iterable[FaultRule | Mapping[str, Any] | str]) -> None:
        """Replace the fault rules (fresh budgets)."""
        self._core.set_faults(faults)

    def stats(self) -> dict[str, Any]:
        return self._core.stats()

    def reset(self) -> None:
        """Clear counts, the request log and every rule's used budget."""
        self._core.reset()


# ---- CLI ---------------------------------------------------------------------------------
def _load_json(path: str | None) -> Any:
    if not path:
        return None
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


async def _serve(args: argparse.Namespace) -> None:
    faults: list[Any] = list(_load_json(args.faults) or [])
    faults += [parse_fault(s) for s in args.fault]
    answers = _load_json(args.answers)
    vary = nondeterministic(answers or {}, args.nondeterministic) if args.nondeterministic is not None else None
    core = _Core(None if vary else answers, args.default_answer, vary, args.latency, faults,
                 not args.no_log_requests, args.model or ["test-model"], admin_routes=True,
                 slots=args.slots, timings=args.timings, props=args.props,
                 rpm=args.rpm, tpm=args.tpm, window=args.window)
    runner, port = await core.start(args.host, args.port)
    print(f"PORT={port}", flush=True)
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, done.set)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - non-POSIX
            pass
    try:
        await done.wait()
    finally:
        await core.stop(runner)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Loopback OpenAI chat-completions test server.")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 = let the OS choose")
    p.add_argument("--answers", help="JSON file: {prompt: answer}")
    p.add_argument("--default-answer", default="I don't know.")
    p.add_argument("--nondeterministic", type=int, metavar="SEED",
                   help="vary the --answers between requests by a fixed pattern of this seed (pattern_of)")
    p.add_argument("--latency", type=float, default=0.0, help="seconds added per request")
    p.add_argument("--faults", help="JSON file: list of fault rule objects")
    p.add_argument("--fault", action="append", default=[],
                   help="fault rule: JSON object or FAULT[xK]:MATCH (~MATCH = substring)")
    p.add_argument("--model", action="append", help="model id for GET /v1/models")
    p.add_argument("--slots", type=int, default=None, help="serve at most N requests at once; queue the rest")
    p.add_argument("--timings", action="store_true", help="add llama.cpp's timings block (time served)")
    p.add_argument("--props", action="store_true", help="serve GET /props with total_slots, as llama.cpp")
    p.add_argument("--rpm", type=float, default=None, help="enforce requests a minute (429 beyond, x-ratelimit headers)")
    p.add_argument("--tpm", type=float, default=None, help="enforce tokens a minute (429 beyond, x-ratelimit headers)")
    p.add_argument("--window", type=float, default=60.0,
                   help="seconds' worth of the limits a burst may take (the buckets' size)")
    p.add_argument("--no-log-requests", action="store_true",
                   help="do not keep request headers/bodies (for benchmarks)")
    args = p.parse_args(argv)
    asyncio.run(_serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
