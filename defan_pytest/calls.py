"""Model calls: one bounded async pool per run, retries that respect the provider.

Every call of a run goes through one :class:`CallPool`: an asyncio loop in a background
thread with at most ``concurrency`` requests in flight (and, optionally, at most ``rpm`` starts
per minute).  pytest items only wait for their prompt's answer, so a serial run keeps many
requests in flight while items are reported in order.

A user's callable is awaited (async) or run in a thread pool (sync).  A litellm model is called
with ``litellm.acompletion``; litellm is imported here, lazily, in the process that calls, with
its network fetch of a price table turned off unless the user turned it on.

Failures: 429, 5xx, timeouts and dropped connections are retried with exponential backoff and
full jitter, honouring ``Retry-After``; what still fails becomes an errored response (never a
hallucination).  An authentication error or an unknown model stops the run (:class:`FatalCallError`).
"""
from __future__ import annotations

import asyncio
import os
import random
import re
import threading
import time
import types
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Protocol, Sequence, Tuple

from defan_pytest.models import CallableModel, LitellmModel
from defan_pytest.settings import DEFAULT_CONCURRENCY, DEFAULT_RETRIES, DEFAULT_TIMEOUT


class ResponseStore(Protocol):
    """Where a pool keeps answers (:class:`defan_pytest.cache.ResponseCache`): a cache across
    runs, and the claims by which processes of one run split the prompts between them."""

    def get(self, prompt: str) -> Optional[str]:
        """The stored answer to ``prompt``, if any."""
        ...

    def put(self, prompt: str, answer: str) -> None:
        """Store an answer (and mark the prompt done for the run)."""
        ...

    def flush(self) -> None:
        """Return once every answer put so far is on disk."""
        ...

    def claim(self, prompt: str) -> bool:
        """Take ``prompt`` for this process; False when another process has it."""
        ...

    def mark_done(self, prompt: str) -> None:
        """The prompt was answered (from the cache)."""
        ...

    def release(self, prompt: str, error: str) -> None:
        """The prompt failed with ``error``: other processes waiting on it get the error."""
        ...

    async def wait(self, prompt: str, stop: Optional[threading.Event] = None) -> Tuple[Optional[str], Optional[str]]:
        """Wait for the process that claimed ``prompt``: its answer, or its error."""
        ...


@dataclass(frozen=True)
class Prompt:
    """One prompt of the run: ``key`` identifies it (the row id), ``text`` is sent."""

    key: str
    text: str


@dataclass(frozen=True)
class Response:
    """What came back for one prompt: ``text``, or ``error`` when the call failed for good."""

    text: Optional[str]
    error: Optional[str] = None
    cached: bool = False
    attempts: int = 1
    seconds: float = 0.0
    #: ``"call"`` (this process asked the model), ``"cache"`` (a stored answer) or ``"peer"``
    #: (another process of the same run asked the model).
    via: str = "call"


class FatalCallError(RuntimeError):
    """A failure no retry can fix (bad credentials, unknown model): the run stops."""


# --------------------------------------------------------------------------------------------
# secrets
# --------------------------------------------------------------------------------------------

_SECRET_PATTERNS = [
    re.compile(r"\b(?:sk|pk|rk|xai|gsk|hf)-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._\-]{8,}"),
    re.compile(r"(?i)((?:api[_-]?key|authorization|x-api-key)['\"]?\s*[:=]\s*['\"]?)[^\s'\",}]{6,}"),
]


def known_secrets(params: Mapping[str, Any] = types.MappingProxyType({})) -> List[str]:
    """Secret values to scrub: API keys in call parameters and in ``*_API_KEY``-like env vars."""
    found = set()
    for k, v in dict(params).items():
        if isinstance(v, str) and re.search(r"(?i)key|token|secret|password|auth", k) and len(v) >= 6:
            found.add(v)
    for k, v in os.environ.items():
        if re.search(r"(?i)(api_?key|_token|_secret|password)$", k) and len(v) >= 6:
            found.add(v)
    return sorted(found, key=len, reverse=True)


def redact(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` with every known secret and anything shaped like a key replaced by ``***``."""
    for s in secrets:
        if s:
            text = text.replace(s, "***")
    for pat in _SECRET_PATTERNS:
        text = pat.sub(lambda m: (m.group(1) if m.groups() else "") + "***", text)
    return text


# --------------------------------------------------------------------------------------------
# callers
# --------------------------------------------------------------------------------------------


def import_litellm() -> Any:
    """Import litellm for calling: no price-table fetch over the network unless the user set
    ``LITELLM_LOCAL_MODEL_COST_MAP`` themselves; no telemetry; quiet logs."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_LOG", "ERROR")
    import litellm  # heavy (seconds of CPU to import), so only in the process that calls

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    return litellm


class Caller:
    """Sends one prompt and returns the answer text (raises on failure)."""

    #: Parameters that make up the cache key (besides the prompt).
    identity: Dict[str, Any] = {}
    #: True when the caller applies the per-call timeout itself (the pool then adds no timer).
    enforces_timeout: bool = False

    async def __call__(self, prompt: str) -> str:  # pragma: no cover - interface
        raise NotImplementedError

    def close(self) -> None:
        """Release resources."""

    async def aclose(self) -> None:
        """Release what lives on the pool's event loop (called on that loop, at its end)."""


class CallableCaller(Caller):
    """A user's function, awaited if async, else run in a thread pool of ``threads`` threads."""

    def __init__(self, model: CallableModel, threads: int = DEFAULT_CONCURRENCY) -> None:
        self.model = model
        self.identity = {"kind": "callable", "name": model.name, "version": model.version}
        self._executor = None if model.is_async else ThreadPoolExecutor(max_workers=threads, thread_name_prefix="defan-call")

    async def __call__(self, prompt: str) -> str:
        if self.model.is_async:
            out = await self.model.fn(prompt)
        else:
            loop = asyncio.get_running_loop()
            out = await loop.run_in_executor(self._executor, self.model.fn, prompt)
        if out is None:
            raise ValueError(f"model {self.model.name!r} returned None")
        return str(out)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)


class LitellmCaller(Caller):
    """``litellm.acompletion`` with the model's parameters; litellm's own retries are off (the
    pool retries, so a request is never silently sent twice)."""

    # litellm passes ``timeout`` to the HTTP client, which raises litellm.Timeout.
    enforces_timeout = True

    def __init__(self, model: LitellmModel, timeout: float) -> None:
        self.model = model
        self.timeout = timeout
        self._litellm: Any = None
        params = dict(model.params)
        params.setdefault("timeout", timeout)
        params["num_retries"] = 0
        params["max_retries"] = 0
        self.params = params
        self.identity = {
            "kind": "litellm",
            "model": model.model,
            "system_prompt": model.system_prompt,
            # Every parameter that shapes an answer; never the key itself, nor transport-only ones.
            "params": {k: v for k, v in sorted(params.items())
                       if k not in ("api_key", "timeout", "num_retries", "max_retries", "extra_headers")},
        }

    @property
    def litellm(self) -> Any:
        """litellm, imported at the first real call: a run answered from the cache never pays
        for the import."""
        if self._litellm is None:
            self._litellm = import_litellm()
        return self._litellm

    async def aclose(self) -> None:
        if self._litellm is None:
            return
        # litellm caches its HTTP clients per process; ours belong to this pool's loop, which
        # closes next, so close them here rather than leave litellm a dead loop's clients.
        close = getattr(self.litellm, "close_litellm_async_clients", None)
        if close is not None:
            try:
                await close()
            except Exception:  # a failure to close must not hide the run's results
                pass
        cache = getattr(self.litellm, "in_memory_llm_clients_cache", None)
        if cache is not None and hasattr(cache, "flush_cache"):
            cache.flush_cache()

    async def __call__(self, prompt: str) -> str:
        messages = []
        if self.model.system_prompt:
            messages.append({"role": "system", "content": self.model.system_prompt})
        messages.append({"role": "user", "content": prompt})
        resp = await self.litellm.acompletion(model=self.model.model, messages=messages, **self.params)
        content = resp.choices[0].message.content
        if content is None:
            raise EmptyAnswer("the model returned no content")
        return str(content)


class EmptyAnswer(RuntimeError):
    """A 200 response without content."""


def make_caller(model: Any, timeout: float, threads: int = DEFAULT_CONCURRENCY) -> Caller:
    """The caller for a resolved model."""
    if isinstance(model, CallableModel):
        return CallableCaller(model, threads=threads)
    return LitellmCaller(model, timeout=timeout)


# --------------------------------------------------------------------------------------------
# failure classification
# --------------------------------------------------------------------------------------------

_RETRYABLE_NAMES = ("Timeout", "RateLimit", "APIConnection", "ServiceUnavailable", "InternalServer",
                    "ServerDisconnected", "ClientConnector", "ClientOSError", "RemoteProtocol",
                    "ReadError", "ConnectError", "Connection")
_FATAL_NAMES = ("Authentication", "PermissionDenied", "NotFound")


def _status(exc: BaseException) -> Optional[int]:
    for attr in ("status_code", "status", "code"):
        v = getattr(exc, attr, None)
        if isinstance(v, int) and 100 <= v < 600:
            return v
    return None


def retry_after(exc: BaseException) -> Optional[float]:
    """Seconds the provider asked us to wait (``Retry-After``), if it said so."""
    headers = None
    for holder in (getattr(exc, "response", None), exc):
        h = getattr(holder, "headers", None) if holder is not None else None
        if h:
            headers = h
            break
    if headers is None:
        headers = getattr(exc, "litellm_response_headers", None)
    if not headers:
        return None
    try:
        value = headers.get("retry-after") or headers.get("Retry-After")
    except AttributeError:
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def classify(exc: BaseException) -> str:
    """``"retry"``, ``"fatal"`` (stop the run) or ``"fail"`` (an errored response)."""
    name = type(exc).__name__
    status = _status(exc)
    if status in (401, 403) or any(n in name for n in _FATAL_NAMES[:2]):
        return "fatal"
    if status == 404 or "NotFound" in name:
        return "fatal"
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError, ConnectionError)):
        return "retry"
    if status in (408, 409, 425, 429) or (status is not None and status >= 500):
        return "retry"
    if any(n in name for n in _RETRYABLE_NAMES):
        return "retry"
    return "fail"


def describe(exc: BaseException, secrets: Sequence[str] = ()) -> str:
    """A one-line, secret-free description of a failure."""
    status = _status(exc)
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    head = type(exc).__name__ + (f" (HTTP {status})" if status else "")
    return redact(f"{head}: {msg}"[:500] if msg else head, secrets)


# --------------------------------------------------------------------------------------------
# the pool
# --------------------------------------------------------------------------------------------


@dataclass
class Stats:
    """Counters the progress line and the closing note read."""

    total: int = 0
    done: int = 0
    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    errors: int = 0
    started: float = field(default_factory=time.monotonic)

    def snapshot(self) -> Dict[str, Any]:
        return {k: getattr(self, k) for k in ("total", "done", "calls", "cache_hits", "retries", "errors")}


class _RateLimiter:
    """At most ``rpm`` request starts in any sliding minute (evenly spaced)."""

    def __init__(self, rpm: Optional[float]) -> None:
        self.interval = 60.0 / rpm if rpm else 0.0
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        if not self.interval:
            return
        async with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            await asyncio.sleep(start - now)


class CallPool:
    """Runs every prompt of a run through ``caller`` with bounded concurrency.

    ``store``: an optional :class:`ResponseStore` (the cache, and the claims that split the
    prompts between the processes of one run).
    """

    def __init__(
        self,
        caller: Caller,
        concurrency: int = DEFAULT_CONCURRENCY,
        rpm: Optional[float] = None,
        retries: int = DEFAULT_RETRIES,
        timeout: float = DEFAULT_TIMEOUT,
        backoff: float = 1.0,
        max_backoff: float = 60.0,
        store: Optional[ResponseStore] = None,
        secrets: Sequence[str] = (),
        on_progress: Optional[Callable[[Stats], None]] = None,
        seed: Optional[int] = None,
    ) -> None:
        self.caller = caller
        self.concurrency = max(1, int(concurrency))
        self.rpm = rpm
        self.retries = max(0, int(retries))
        self.timeout = timeout
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.store = store
        self.secrets = list(secrets)
        self.on_progress = on_progress
        self.stats = Stats()
        self._rng = random.Random(seed)
        self._results: Dict[str, Response] = {}
        self._cond = threading.Condition()
        self._fatal: Optional[str] = None
        self._thread: Optional[threading.Thread] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._stop = threading.Event()

    # -- public API (any thread) ---------------------------------------------------------------

    def start(self, prompts: Sequence[Prompt]) -> None:
        """Start calling ``prompts`` in order in a background thread (returns at once)."""
        if self._thread is not None:
            raise RuntimeError("the pool is already running")
        unique: Dict[str, Prompt] = {}
        for p in prompts:
            unique.setdefault(p.key, p)
        self.stats.total = len(unique)
        self._thread = threading.Thread(target=self._run, args=(list(unique.values()),), name="defan-pool", daemon=True)
        self._thread.start()

    def result(self, key: str, timeout: Optional[float] = None) -> Response:
        """Wait for the answer to prompt ``key``; raises :class:`FatalCallError` if the run stopped."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while key not in self._results:
                if self._fatal is not None:
                    raise FatalCallError(self._fatal)
                if self._thread is None or not self._thread.is_alive():
                    if key in self._results:
                        break
                    raise RuntimeError(f"prompt {key!r} was never sent (the pool has stopped)")
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise TimeoutError(f"no answer for {key!r} within {timeout} s")
                self._cond.wait(timeout=0.5 if remaining is None else min(0.5, remaining))
            return self._results[key]

    @property
    def fatal(self) -> Optional[str]:
        """The message that stopped the run, if one did."""
        return self._fatal

    def join(self, timeout: Optional[float] = None) -> bool:
        """Wait until every prompt has its answer (or the run stopped); True when finished."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def close(self) -> None:
        """Stop sending and wait for the background thread."""
        self._stop.set()
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(lambda: None)
            self._thread.join(timeout=5)
        self.caller.close()

    # -- the loop ------------------------------------------------------------------------------

    def _run(self, prompts: List[Prompt]) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main(prompts))
        except BaseException as exc:  # never leave waiters hanging
            with self._cond:
                if self._fatal is None:
                    self._fatal = describe(exc, self.secrets)
                self._cond.notify_all()
        finally:
            try:
                # As asyncio.run does: cancel what is left (litellm starts a logging worker
                # task on the loop it is first used from) before the loop closes.
                pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
                for t in pending:
                    t.cancel()
                if pending:
                    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()
            with self._cond:
                self._cond.notify_all()

    async def _main(self, prompts: List[Prompt]) -> None:
        self._limiter = _RateLimiter(self.rpm)
        queue: asyncio.Queue = asyncio.Queue()
        for p in prompts:
            queue.put_nowait(p)
        workers = [asyncio.create_task(self._worker(queue)) for _ in range(min(self.concurrency, max(1, len(prompts))))]
        try:
            await asyncio.gather(*workers)
        finally:
            await self.caller.aclose()
            if self.store is not None:
                self.store.flush()  # every answer is on disk before the pool reports done
        if self.on_progress is not None:
            self.on_progress(self.stats)

    async def _worker(self, queue: asyncio.Queue) -> None:
        while not self._stop.is_set() and self._fatal is None:
            try:
                prompt = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            response = await self._one(prompt)
            if response is not None:
                self._deliver(prompt.key, response)

    def _deliver(self, key: str, response: Response) -> None:
        with self._cond:
            self._results[key] = response
            self.stats.done += 1
            if response.error is not None:
                self.stats.errors += 1
            self._cond.notify_all()
        if self.on_progress is not None:
            self.on_progress(self.stats)

    def stop(self, message: str) -> None:
        """Stop the run: no new prompt is sent, calls in flight finish, ``fatal`` says why."""
        self._stop_run(message)

    def _stop_run(self, message: str) -> None:
        with self._cond:
            if self._fatal is None:
                self._fatal = message
            self._cond.notify_all()

    async def _one(self, prompt: Prompt) -> Optional[Response]:
        store = self.store
        if store is not None:
            if not store.claim(prompt.text):
                # Another process of the run has this prompt (from its cache or the model):
                # wait for its answer instead of asking again.
                text, error = await store.wait(prompt.text, stop=self._stop)
                if text is not None:
                    return Response(text, attempts=0, via="peer")
                if error is None:
                    return None  # stopped
                return Response(None, error=error, attempts=0, via="peer")
            hit = store.get(prompt.text)
            if hit is not None:
                store.mark_done(prompt.text)
                self.stats.cache_hits += 1
                return Response(hit, cached=True, attempts=0, via="cache")
        t0 = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            await self._limiter.wait()
            self.stats.calls += 1
            try:
                if self.caller.enforces_timeout:
                    # A task per call, like a plain gather: litellm keeps per-call state in
                    # context variables, which piles up in a long-lived worker's own context
                    # and made each call measurably dearer (bench/call_speed.py).
                    text = await asyncio.ensure_future(self.caller(prompt.text))
                else:
                    text = await asyncio.wait_for(self.caller(prompt.text), timeout=self.timeout)
            except FatalCallError:
                raise
            except BaseException as exc:  # noqa: BLE001 - every failure is classified
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    raise
                if isinstance(exc, asyncio.CancelledError) and self._stop.is_set():
                    return None
                kind = classify(exc)
                message = describe(exc, self.secrets)
                if kind == "fatal":
                    self._stop_run(f"{message} -- stopping: every other call would fail the same way")
                    if store is not None:
                        store.release(prompt.text, message)
                    return None
                if kind == "retry" and attempt <= self.retries and not self._stop.is_set():
                    self.stats.retries += 1
                    await asyncio.sleep(self._delay(attempt, retry_after(exc)))
                    continue
                if store is not None:
                    store.release(prompt.text, message)
                return Response(None, error=message, attempts=attempt, seconds=time.monotonic() - t0)
            if store is not None:
                store.put(prompt.text, text)  # committed as it arrives: a killed run resumes
            return Response(text, attempts=attempt, seconds=time.monotonic() - t0)

    def _delay(self, attempt: int, hint: Optional[float]) -> float:
        """Exponential backoff with full jitter; a provider's Retry-After is a floor."""
        ceiling = min(self.max_backoff, self.backoff * (2 ** (attempt - 1)))
        delay = self._rng.uniform(0, ceiling)
        if hint is not None:
            # The provider's word wins over our schedule (up to a sanity cap of 10 minutes).
            delay = max(delay, min(hint, 600.0))
        return delay
