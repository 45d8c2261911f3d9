"""Model calls: one bounded async pool per run, retries that respect the provider.

Every call of a run goes through one :class:`CallPool`: an asyncio loop in a background
thread with at most ``concurrency`` requests in flight (and, optionally, at most ``rpm`` starts
per minute).  pytest items only wait for their prompt's answer, so a serial run keeps many
requests in flight while items are reported in order.

A user's callable is awaited (async) or run in a daemon thread (sync).  A litellm model is
called with ``litellm.acompletion``; litellm is imported here, lazily, in the process that calls,
with its network fetch of a price table turned off unless the user turned it on.  Before the
first call its credentials are checked (``litellm.validate_environment``): a missing key stops
the run with one message instead of failing every prompt.

Failures: 429, 5xx, timeouts and dropped connections are retried with exponential backoff and
full jitter, honouring ``Retry-After``; what still fails becomes an errored response (never a
hallucination).  An authentication error, missing credentials or an unknown model stops the run
(:class:`FatalCallError`).  A callable that returns something other than text is an errored
response naming the type (never scored as its ``str()``, never cached).

Nothing hangs: a watchdog, checked by the thread waiting for the answers, stops the run when a
call outlives its timeout by a margin (an async callable blocking the event loop, a call that
ignores its cancellation) or when the threads of timed-out sync calls pile up; the threads of
sync calls are daemons, so a call that never returns cannot keep the process alive.

Nothing leaks: every credential the run was given -- ``api_key``, ``headers``, ``extra_headers``,
any parameter whose name looks secret (nested values too), secret-looking environment
variables -- is replaced by ``***`` in every error message and answer, and kept out of the
cache identity (:func:`known_secrets`, :func:`redact`, :func:`public_identity`).
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import os
import queue
import random
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, Set, Tuple

from defan_pytest.models import CallableModel, LitellmModel
from defan_pytest.redaction import NO_KEY, known_secrets, public_identity, redact, scrub, secret_name
from defan_pytest.settings import DEFAULT_CONCURRENCY, DEFAULT_RETRIES, DEFAULT_TIMEOUT


class Waited(Protocol):
    """What another process of the run made of a prompt it claimed
    (:class:`defan_pytest.cache.Waited`)."""

    @property
    def text(self) -> Optional[str]: ...

    @property
    def error(self) -> Optional[str]: ...

    @property
    def note(self) -> Optional[str]: ...

    @property
    def answered_by(self) -> str: ...

    @property
    def attempts(self) -> int: ...


class ResponseStore(Protocol):
    """Where a pool keeps answers (:class:`defan_pytest.cache.ResponseCache`): a cache across
    runs, and the claims by which processes of one run split the prompts between them."""

    def lookup(self, prompt: str) -> Optional[Tuple[str, Optional[str]]]:
        """The stored answer to ``prompt`` and its note, if any."""
        ...

    async def save(self, prompt: str, answer: str, note: Optional[str] = None, attempts: int = 1) -> None:
        """Store an answer (and mark the prompt done for the run); returns once committed."""
        ...

    def flush(self) -> None:
        """Return once every answer stored so far is on disk."""
        ...

    def claim(self, prompt: str) -> bool:
        """Take ``prompt`` for this process; False when another process has it."""
        ...

    def mark_done(self, prompt: str) -> None:
        """The prompt was answered (from the cache)."""
        ...

    def release(self, prompt: str, error: str, attempts: int = 1) -> None:
        """The prompt failed with ``error``: other processes waiting on it get the error."""
        ...

    async def wait(self, prompt: str, stop: Optional[threading.Event] = None) -> Waited:
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
    #: (another process of the same run had it).
    via: str = "call"
    #: Where the answer came from, whichever process fetched it: ``"model"`` or ``"cache"``.
    answered_by: str = "model"
    #: What was changed in the answer on its way in (invalid code points, a credential).
    note: Optional[str] = None


class FatalCallError(RuntimeError):
    """A failure no retry can fix (bad or missing credentials, unknown model): the run stops."""


class BadAnswer(TypeError):
    """A model returned something other than text: an errored response, never scored."""


# --------------------------------------------------------------------------------------------
# answers
# --------------------------------------------------------------------------------------------


def answer_text(out: Any, name: str) -> str:
    """A model's return value as the answer text, or :class:`BadAnswer`: ``bytes``, a dict or a
    number scored as its ``str()`` (and cached) would be a silent wrong result."""
    if isinstance(out, str):
        return str(out)  # a str subclass becomes a plain str
    if out is None:
        raise BadAnswer(f"model {name!r} returned None, not the answer text")
    raise BadAnswer(f"model {name!r} returned {type(out).__name__}, not str: return the answer text")


_SURROGATE_NOTE = "the answer held invalid code points (lone surrogates), replaced by U+FFFD"
_SECRET_NOTE = "the answer held a credential of the run, replaced by ***"


def clean_answer(text: str, secrets: Sequence[str] = ()) -> Tuple[str, Optional[str]]:
    """An answer as it enters the run, once: invalid code points replaced (the cache, the
    report and the terminal can only hold valid text) and credentials scrubbed; with a note
    saying what changed, or ``None``."""
    from defan_pytest.text import sanitize

    notes = []
    text, changed = sanitize(text)
    if changed:
        notes.append(_SURROGATE_NOTE)
    scrubbed = scrub(text, secrets)
    if scrubbed != text:
        notes.append(_SECRET_NOTE)
    return scrubbed, "; ".join(notes) or None


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
    #: The model's name in messages.
    name: str = "model"

    async def __call__(self, prompt: str) -> str:  # pragma: no cover - interface
        raise NotImplementedError

    def prepare(self) -> None:
        """Get ready for the first real call (in a thread of its own, once; a run answered
        from the cache never calls it): raise :class:`FatalCallError` when no call can work."""

    def stuck(self) -> int:
        """Calls abandoned at their timeout that are still running."""
        return 0

    def close(self) -> None:
        """Release resources."""

    async def aclose(self) -> None:
        """Release what lives on the pool's event loop (called on that loop, at its end)."""


class DaemonThreads:
    """Runs a sync callable's calls in daemon threads, reusing idle ones.

    Not a ``ThreadPoolExecutor``: Python joins its threads at exit, so one call that never
    returned kept the process alive for ever after the run had ended.  Here a call abandoned at
    its timeout keeps its thread (a daemon, which dies with the process), and a new thread takes
    the next call, so stuck calls never starve the others; :meth:`stuck` counts them.
    """

    def __init__(self, name: str = "defan-call") -> None:
        self.name = name
        self._jobs: "queue.SimpleQueue[Optional[Tuple[concurrent.futures.Future, Callable[..., Any], tuple]]]" = (
            queue.SimpleQueue()
        )
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._threads = 0
        self._abandoned: Set[concurrent.futures.Future] = set()
        self._ids = itertools.count(1)

    def submit(self, fn: Callable[..., Any], *args: Any) -> "concurrent.futures.Future[Any]":
        """Run ``fn(*args)`` in an idle thread, or a new one."""
        fut: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
        self._jobs.put((fut, fn, args))
        if not self._idle.acquire(blocking=False):
            with self._lock:
                self._threads += 1
            threading.Thread(target=self._work, name=f"{self.name}-{next(self._ids)}", daemon=True).start()
        return fut

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                with self._lock:
                    self._threads -= 1
                return
            fut, fn, args = job
            del job
            if fut.set_running_or_notify_cancel():
                try:
                    result = fn(*args)
                except BaseException as exc:  # noqa: BLE001 - handed to the waiting call
                    fut.set_exception(exc)
                else:
                    fut.set_result(result)
                    del result
            del fut, fn, args
            self._idle.release()

    def abandon(self, fut: "concurrent.futures.Future[Any]") -> None:
        """The call of ``fut`` timed out but its thread runs on: count it until it returns."""
        with self._lock:
            self._abandoned.add(fut)

        def forget(f: "concurrent.futures.Future[Any]") -> None:
            with self._lock:
                self._abandoned.discard(f)

        fut.add_done_callback(forget)

    def stuck(self) -> int:
        with self._lock:
            return len(self._abandoned)

    def close(self) -> None:
        """Let the idle threads end (a stuck one ends with the process)."""
        with self._lock:
            n = self._threads
        for _ in range(n):
            self._jobs.put(None)


class CallableCaller(Caller):
    """A user's function, awaited if async, else run in a daemon thread."""

    def __init__(self, model: CallableModel, threads: int = DEFAULT_CONCURRENCY) -> None:
        self.model = model
        self.name = model.name
        # The source digest: editing the function without changing its version= must not
        # reuse the answers of the old code.
        self.identity = {"kind": "callable", "name": model.name, "version": model.version, "source": model.source}
        self._threads = None if model.is_async else DaemonThreads(f"defan-call-{model.name}")

    async def __call__(self, prompt: str) -> str:
        if self._threads is None:
            out = await self.model.fn(prompt)
        else:
            fut = self._threads.submit(self.model.fn, prompt)
            try:
                out = await asyncio.wrap_future(fut)
            except asyncio.CancelledError:
                if not fut.done():
                    self._threads.abandon(fut)
                raise
        return answer_text(out, self.name)

    def stuck(self) -> int:
        return 0 if self._threads is None else self._threads.stuck()

    def close(self) -> None:
        if self._threads is not None:
            self._threads.close()


# Providers whose model string names any model of an OpenAI-compatible server (see NO_KEY).
_OPENAI_COMPATIBLE = ("openai", "custom_openai")


class LitellmCaller(Caller):
    """``litellm.acompletion`` with the model's parameters; litellm's own retries are off (the
    pool retries, so a request is never silently sent twice)."""

    # litellm passes ``timeout`` to the HTTP client, which raises litellm.Timeout.
    enforces_timeout = True

    def __init__(self, model: LitellmModel, timeout: float) -> None:
        self.model = model
        self.name = model.model
        self.timeout = timeout
        self._litellm: Any = None
        params = dict(model.params)
        params.setdefault("timeout", timeout)
        params["num_retries"] = 0
        params["max_retries"] = 0
        provider = model.model.split("/", 1)[0] if "/" in model.model else ""
        if (provider in _OPENAI_COMPATIBLE and (params.get("api_base") or params.get("base_url"))
                and not params.get("api_key") and not os.environ.get("OPENAI_API_KEY")):
            params["api_key"] = NO_KEY  # a local OpenAI-compatible server needs no key
        self.params = params
        self.secrets = known_secrets(params)
        self.identity = {
            "kind": "litellm",
            "model": model.model,
            "system_prompt": model.system_prompt,
            # Every parameter that shapes an answer: never a credential (public_identity), nor
            # transport-only ones.
            "params": public_identity(
                {k: v for k, v in sorted(params.items()) if k not in ("timeout", "num_retries", "max_retries")},
                self.secrets,
            ),
        }

    @property
    def litellm(self) -> Any:
        """litellm, imported at the first real call: a run answered from the cache never pays
        for the import."""
        if self._litellm is None:
            self._litellm = import_litellm()
        return self._litellm

    def prepare(self) -> None:
        problem = self.missing_credentials()
        if problem is not None:
            raise FatalCallError(problem)

    def missing_credentials(self) -> Optional[str]:
        """Why no call can authenticate (no key given and none in the environment), or None.

        Only provider keys (``*_KEY``/``*_TOKEN`` names) count: a provider that authenticates
        otherwise (Azure AD, cloud credentials) is left to the first call.
        """
        if any(secret_name(k) and v for k, v in self.params.items()):
            return None  # a credential was given (api_key, azure_ad_token, aws_secret_access_key ...)
        for h in ("headers", "extra_headers"):
            if any(secret_name(str(k)) for k in (self.params.get(h) or {})):
                return None
        provider = self.model.model.split("/", 1)[0] if "/" in self.model.model else ""
        if provider == "azure":
            return None
        try:
            env = self.litellm.validate_environment(
                model=self.model.model, api_key=self.params.get("api_key"),
                api_base=self.params.get("api_base") or self.params.get("base_url"),
            )
        except Exception:  # litellm could not tell: let the first call say
            return None
        missing = [k for k in env.get("missing_keys") or () if re.search(r"KEY|TOKEN", str(k))]
        if not missing:
            return None
        return (
            f"no credentials for {self.model.model!r}: set {' or '.join(missing)} in the environment, or pass "
            "--defan-model-arg api_key=... -- stopping before the first call"
        )

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
        return answer_text(content, self.name)


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
# A client that refuses to send without a key says so in its message; litellm wraps it as a
# 500, which would be retried on every prompt (4 times each) before the run gave up.
_MISSING_CREDENTIALS = re.compile(
    r"(?i)missing credentials|api[_ ]?key client option must be set|no api[_ ]?key (was )?(provided|found|set)"
    r"|api[_ ]?key (is )?(missing|required|not (set|found|provided))"
)


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
    if isinstance(exc, FatalCallError):
        return "fatal"
    if status in (401, 403) or any(n in name for n in _FATAL_NAMES[:2]):
        return "fatal"
    if status == 404 or "NotFound" in name:
        return "fatal"
    if _MISSING_CREDENTIALS.search(str(exc)):
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
    if isinstance(exc, asyncio.TimeoutError) and not msg:
        head = "TimeoutError"
    # Redacted before it is cut, so that a key across the cut cannot leave a readable part.
    return redact(f"{head}: {msg}" if msg else head, secrets)[:500]


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


async def _in_daemon_thread(fn: Callable[[], Any]) -> Any:
    """``fn()`` in a daemon thread of its own, awaited without blocking the loop."""
    loop = asyncio.get_running_loop()
    fut: "asyncio.Future[Any]" = loop.create_future()

    def settle(result: Any, error: Optional[BaseException]) -> None:
        if not fut.done():
            if error is None:
                fut.set_result(result)
            else:
                fut.set_exception(error)

    def target() -> None:
        try:
            result, error = fn(), None
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting call
            result, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop has closed
            pass

    threading.Thread(target=target, name="defan-prepare", daemon=True).start()
    return await fut


def default_margin(timeout: float) -> float:
    """How long past its timeout a call may run before the watchdog stops the run: enough for
    a busy machine's scheduling hiccups, short enough that a stuck run ends."""
    return max(10.0, min(120.0, 0.5 * timeout))


class CallPool:
    """Runs every prompt of a run through ``caller`` with bounded concurrency.

    ``store``: an optional :class:`ResponseStore` (the cache, and the claims that split the
    prompts between the processes of one run).  ``margin``: the watchdog's patience past
    ``timeout`` (:func:`default_margin`).
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
        margin: Optional[float] = None,
    ) -> None:
        self.caller = caller
        self.concurrency = max(1, int(concurrency))
        self.rpm = rpm
        self.retries = max(0, int(retries))
        self.timeout = timeout
        self.margin = default_margin(timeout) if margin is None else margin
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.store = store
        # The caller's own secrets too: a pool built without the run's list still scrubs them.
        self.secrets = sorted(set(secrets) | set(getattr(caller, "secrets", ()) or ()), key=len, reverse=True)
        self.on_progress = on_progress
        self.stats = Stats()
        self._rng = random.Random(seed)
        self._results: Dict[str, Response] = {}
        self._cond = threading.Condition()
        self._fatal: Optional[str] = None
        self._thread: Optional[threading.Thread] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._stop = threading.Event()
        self._prepared: "Optional[asyncio.Future[Any]]" = None
        # The watchdog's view of the loop: when it last ran, and when each call in flight began.
        self._beat = time.monotonic()
        self._inflight: Dict[int, float] = {}
        self._inflight_lock = threading.Lock()
        self._call_ids = itertools.count()
        self._abandoned = False

    # -- public API (any thread) ---------------------------------------------------------------

    def start(self, prompts: Sequence[Prompt]) -> None:
        """Start calling ``prompts`` in order in a background thread (returns at once)."""
        if self._thread is not None:
            raise RuntimeError("the pool is already running")
        unique: Dict[str, Prompt] = {}
        for p in prompts:
            unique.setdefault(p.key, p)
        self.stats.total = len(unique)
        self._beat = time.monotonic()
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
                if key not in self._results:
                    self._cond.release()  # the watchdog takes the lock to stop the run
                    try:
                        self.check()
                    finally:
                        self._cond.acquire()
            return self._results[key]

    @property
    def fatal(self) -> Optional[str]:
        """The message that stopped the run, if one did."""
        return self._fatal

    def join(self, timeout: Optional[float] = None) -> bool:
        """Wait until every prompt has its answer (or the run stopped); True when finished.

        The waiting thread is the watchdog (:meth:`check`): a pool whose loop is stuck in a
        call counts as finished once the watchdog has stopped the run.
        """
        if self._thread is None:
            return True
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._thread.is_alive() and not self._abandoned:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                break
            # In slices, so that the watchdog looks at the loop while we wait.
            self._thread.join(0.25 if remaining is None else min(0.25, remaining))
            if self._thread.is_alive():
                self.check()
        return not self._thread.is_alive() or self._abandoned

    def check(self) -> None:
        """The watchdog, run by a thread waiting for answers: stop the run when a call has
        outlived ``timeout + margin`` (its timeout could not fire: an async callable blocking
        the event loop, a call ignoring its cancellation) or when ``concurrency`` timed-out
        sync calls are still running in their threads."""
        if self._fatal is not None or self._thread is None or not self._thread.is_alive():
            return
        now = time.monotonic()
        with self._inflight_lock:
            oldest = min(self._inflight.values(), default=None)
        name = self.caller.name
        if oldest is not None and now - oldest > self.timeout + self.margin:
            took = now - oldest
            if now - self._beat > self.margin:
                why = (
                    f"model {name!r} blocked the event loop: a call has not returned for {took:.0f} s and nothing "
                    "else could run meanwhile (an async callable that never awaits: time.sleep or blocking I/O "
                    "inside async def; make it await, or register a plain def, which runs in a thread)"
                )
            else:
                why = (
                    f"model {name!r} did not return within {took:.0f} s, past --defan-timeout {self.timeout:g} s "
                    "(the call did not end when it was cancelled)"
                )
            self._abandon(f"{why} -- stopping")
            return
        stuck = self.caller.stuck()
        if stuck >= self.concurrency:
            self._stop_run(
                f"model {name!r} did not return within --defan-timeout {self.timeout:g} s on {stuck} calls that are "
                "still running in their threads -- stopping (raise --defan-timeout if it is only slow)"
            )

    def _abandon(self, message: str) -> None:
        """Stop the run and give up on the loop's thread (a daemon: it cannot keep the process
        alive); the answers already delivered are committed."""
        self._abandoned = True
        self._stop.set()
        self._stop_run(message)
        loop = self._loop
        if loop is not None:
            try:
                loop.call_soon_threadsafe(self._cancel_all)
            except RuntimeError:
                pass

    def _cancel_all(self) -> None:
        for task in asyncio.all_tasks():
            task.cancel()

    def close(self) -> None:
        """Stop sending and wait for the background thread (not for one the watchdog gave up)."""
        self._stop.set()
        if self._loop is not None and self._thread is not None and self._thread.is_alive() and not self._abandoned:
            try:
                self._loop.call_soon_threadsafe(lambda: None)
            except RuntimeError:
                pass
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

    async def _heartbeat(self) -> None:
        while True:
            self._beat = time.monotonic()
            await asyncio.sleep(0.25)

    async def _main(self, prompts: List[Prompt]) -> None:
        self._limiter = _RateLimiter(self.rpm)
        beat = asyncio.ensure_future(self._heartbeat())
        queue_: asyncio.Queue = asyncio.Queue()
        for p in prompts:
            queue_.put_nowait(p)
        workers = [asyncio.create_task(self._worker(queue_)) for _ in range(min(self.concurrency, max(1, len(prompts))))]
        try:
            await asyncio.gather(*workers)
        finally:
            beat.cancel()
            await self.caller.aclose()
            if self.store is not None:
                self.store.flush()  # every answer is on disk before the pool reports done
        if self.on_progress is not None:
            self.on_progress(self.stats)

    async def _worker(self, queue_: asyncio.Queue) -> None:
        while not self._stop.is_set() and self._fatal is None:
            try:
                prompt = queue_.get_nowait()
            except asyncio.QueueEmpty:
                return
            try:
                response = await self._one(prompt)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the cache failed (a full disk, a database gone bad)
                where = getattr(self.store, "path", "the response cache")
                self._stop_run(
                    f"the response cache ({where}) failed: {describe(exc, self.secrets)} -- stopping; every answer "
                    "committed so far is kept (a corrupt database: --defan-cache=refresh moves it aside)"
                )
                return
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
                self._fatal = redact(message, self.secrets)
            self._cond.notify_all()

    async def _prepare(self) -> None:
        """The caller's preparation, once for the pool, off the loop (importing litellm takes
        seconds of CPU, during which the loop keeps the heartbeat and the cache hits going)."""
        if self._prepared is None:
            self._prepared = asyncio.ensure_future(_in_daemon_thread(self.caller.prepare))
        await asyncio.shield(self._prepared)

    async def _call(self, text: str) -> str:
        """One request, timed by the watchdog."""
        token = next(self._call_ids)
        with self._inflight_lock:
            self._inflight[token] = time.monotonic()
        try:
            if self.caller.enforces_timeout:
                # A task per call, like a plain gather: litellm keeps per-call state in
                # context variables, which piles up in a long-lived worker's own context
                # and made each call measurably dearer (bench/call_speed.py).
                return await asyncio.ensure_future(self.caller(text))
            return await asyncio.wait_for(self.caller(text), timeout=self.timeout)
        finally:
            with self._inflight_lock:
                del self._inflight[token]

    async def _one(self, prompt: Prompt) -> Optional[Response]:
        store = self.store
        if store is not None:
            if not store.claim(prompt.text):
                # Another process of the run has this prompt (from its cache or the model):
                # wait for its answer instead of asking again.
                w = await store.wait(prompt.text, stop=self._stop)
                if w.text is not None:
                    return Response(scrub(w.text, self.secrets), attempts=w.attempts, via="peer",
                                    answered_by=w.answered_by, note=w.note)
                if w.error is None:
                    return None  # stopped
                return Response(None, error=w.error, attempts=w.attempts, via="peer")
            hit = store.lookup(prompt.text)
            if hit is not None:
                store.mark_done(prompt.text)
                self.stats.cache_hits += 1
                return Response(scrub(hit[0], self.secrets), cached=True, attempts=0, via="cache",
                                answered_by="cache", note=hit[1])
        t0 = time.monotonic()
        attempt = 0
        try:
            await self._prepare()
        except FatalCallError as exc:
            return self._fatal_failure(prompt, str(exc), attempt)
        while True:
            attempt += 1
            await self._limiter.wait()
            self.stats.calls += 1
            try:
                text = await self._call(prompt.text)
            except BaseException as exc:  # noqa: BLE001 - every failure is classified
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    raise
                if isinstance(exc, asyncio.CancelledError):
                    if self._stop.is_set():
                        return None
                    raise
                kind = classify(exc)
                message = describe(exc, self.secrets)
                if kind == "fatal":
                    return self._fatal_failure(
                        prompt, f"{message} -- stopping: every other call would fail the same way", attempt,
                    )
                if kind == "retry" and attempt <= self.retries and not self._stop.is_set():
                    self.stats.retries += 1
                    await asyncio.sleep(self._delay(attempt, retry_after(exc)))
                    continue
                if store is not None:
                    store.release(prompt.text, message, attempt)
                return Response(None, error=message, attempts=attempt, seconds=time.monotonic() - t0)
            text, note = clean_answer(text, self.secrets)
            if store is not None:
                # Committed before it counts as done: a killed run loses at most what is in
                # flight, never answers waiting for the writer.
                await store.save(prompt.text, text, note, attempt)
            return Response(text, attempts=attempt, seconds=time.monotonic() - t0, note=note)

    def _fatal_failure(self, prompt: Prompt, message: str, attempts: int) -> Optional[Response]:
        """Stop the run on a failure every call would share; the prompt has no answer."""
        self._stop_run(message)
        if self.store is not None:
            self.store.release(prompt.text, redact(message, self.secrets), attempts)
        return None

    def _delay(self, attempt: int, hint: Optional[float]) -> float:
        """Exponential backoff with full jitter; a provider's Retry-After is a floor."""
        ceiling = min(self.max_backoff, self.backoff * (2 ** (attempt - 1)))
        delay = self._rng.uniform(0, ceiling)
        if hint is not None:
            # The provider's word wins over our schedule (up to a sanity cap of 10 minutes).
            delay = max(delay, min(hint, 600.0))
        return delay
