"""Model calls: one bounded async pool per run, retries that respect the provider.

Every call of a run goes through one :class:`CallPool`: an asyncio loop in a background
thread with at most ``concurrency`` requests in flight (and, optionally, at most ``rpm`` starts
per minute).  pytest items only wait for their prompt's answer, so a serial run keeps many
requests in flight while items are reported in order.

How one prompt reaches a model is the caller's business (:mod:`defan_pytest.calls.callers`: a user's
callable, litellm, or the lean OpenAI-protocol path); the pool does not know which, and treats
them alike.  Before the first real call the caller prepares (once, off the loop: importing its
client, checking credentials -- a missing key stops the run with one message instead of failing
every prompt); a run answered from the cache never prepares, so it imports no client at all.

Every answer brings its tokens (as the provider counted them) and its latency to the cache and
the response.  With a budget (:class:`defan_pytest.calls.usage.Budget`, ``--defan-budget``) a prompt
is sent only while the spending plus the requests in flight stays within it; the prompts not
sent are errored responses (``BudgetExceeded``), never hallucinations, and the answers received
are in the cache for a resumed run.

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
import itertools
import random
import re
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

# The callers and the shared types, re-exported: ``from defan_pytest.calls.pool import ...`` keeps
# working for everything that lived here before the callers had a module of their own.
from defan_pytest.calls.callers import (
    CallableCaller,
    DaemonThreads,
    LitellmCaller,
    OpenAICaller,
    choose_path,
    import_litellm,
    make_caller,
)
from defan_pytest.calls.protocol import (
    BadAnswer,
    Caller,
    EmptyAnswer,
    Entry,
    FatalCallError,
    Prompt,
    Reply,
    Response,
    ResponseStore,
    Waited,
    answer_text,
)
from defan_pytest.calls.redaction import known_secrets, public_identity, redact, scrub  # noqa: F401 - re-exported
from defan_pytest.calls.protocol import DEFAULT_CONCURRENCY, DEFAULT_RETRIES, DEFAULT_TIMEOUT

if TYPE_CHECKING:
    from defan_pytest.calls.usage import Budget


# --------------------------------------------------------------------------------------------
# answers
# --------------------------------------------------------------------------------------------


_SURROGATE_NOTE = "the answer held invalid code points (lone surrogates), replaced by U+FFFD"
_SECRET_NOTE = "the answer held a credential of the run, replaced by ***"


def clean_answer(text: str, secrets: Sequence[str] = ()) -> Tuple[str, Optional[str]]:
    """An answer as it enters the run, once: invalid code points replaced (the cache, the
    report and the terminal can only hold valid text) and credentials scrubbed; with a note
    saying what changed, or ``None``."""
    from defan_pytest.safetext import sanitize

    notes = []
    text, changed = sanitize(text)
    if changed:
        notes.append(_SURROGATE_NOTE)
    scrubbed = scrub(text, secrets)
    if scrubbed != text:
        notes.append(_SECRET_NOTE)
    return scrubbed, "; ".join(notes) or None


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
    ``timeout`` (:func:`default_margin`).  ``budget``: an optional
    :class:`defan_pytest.calls.usage.Budget`; the prompts it refuses are errored responses.
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
        budget: "Optional[Budget]" = None,
    ) -> None:
        self.caller = caller
        self.budget = budget
        self._budget_waiters: "List[asyncio.Future[None]]" = []
        self._maybe_cached: Optional[Set[str]] = None  # prompts the cache held when the pool started
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
        uncached = getattr(self.store, "uncached", None)
        if callable(uncached):
            # Which prompts the cache may hold, in one read: a cold run then makes no query per
            # prompt on this loop (a lookup is a tenth of a lean call's CPU).
            texts = [p.text for p in prompts]
            self._maybe_cached = set(texts) - set(uncached(texts))
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

    async def _call(self, text: str) -> Tuple[Reply, float]:
        """One request, timed by the watchdog: the reply and the seconds it took."""
        token = next(self._call_ids)
        began = time.monotonic()
        with self._inflight_lock:
            self._inflight[token] = began
        try:
            caller = self.caller
            if caller.task_per_call:
                # A task per call, like a plain gather: litellm keeps per-call state in
                # context variables, which piles up in a long-lived worker's own context
                # and made each call measurably dearer (bench/call_speed.py).
                out = await asyncio.ensure_future(caller(text))
            elif caller.enforces_timeout:
                out = await caller(text)
            else:
                out = await asyncio.wait_for(caller(text), timeout=self.timeout)
        finally:
            with self._inflight_lock:
                del self._inflight[token]
        took = time.monotonic() - began
        return (out if isinstance(out, Reply) else Reply(out)), took

    async def _one(self, prompt: Prompt) -> Optional[Response]:
        store = self.store
        if store is not None:
            if not store.claim(prompt.text):
                # Another process of the run has this prompt (from its cache or the model):
                # wait for its answer instead of asking again.
                w = await store.wait(prompt.text, stop=self._stop)
                if w.text is not None:
                    return Response(scrub(w.text, self.secrets), attempts=w.attempts, via="peer",
                                    answered_by=w.answered_by, note=w.note, prompt_tokens=w.prompt_tokens,
                                    completion_tokens=w.completion_tokens, latency=w.latency)
                if w.error is None:
                    return None  # stopped
                return Response(None, error=w.error, attempts=w.attempts, via="peer")
            hit = store.lookup_entry(prompt.text) if self._maybe_cached is None or prompt.text in self._maybe_cached \
                else None
            if hit is not None:
                store.mark_done(prompt.text)
                self.stats.cache_hits += 1
                return Response(scrub(hit.answer, self.secrets), cached=True, attempts=0, via="cache",
                                answered_by="cache", note=hit.note, prompt_tokens=hit.prompt_tokens,
                                completion_tokens=hit.completion_tokens, latency=hit.latency)
        budget = self.budget
        booked = 0.0
        if budget is not None:
            verdict, booked = await self._book(prompt.text)
            if verdict != "send":
                message = budget.message() if verdict == "refuse" else "the run stopped before it was sent"
                if store is not None:
                    store.release(prompt.text, message, 0)
                if verdict != "refuse":
                    return None
                # Not sent: the budget would be passed.  An error, never a hallucination, and
                # never cached: a resumed run with a larger budget asks it.
                return Response(None, error=message, attempts=0)
        t0 = time.monotonic()
        attempt = 0
        try:
            await self._prepare()
        except FatalCallError as exc:
            self._unbook(booked)
            return self._fatal_failure(prompt, str(exc), attempt)
        while True:
            attempt += 1
            await self._limiter.wait()
            self.stats.calls += 1
            try:
                reply, took = await self._call(prompt.text)
            except BaseException as exc:  # noqa: BLE001 - every failure is classified
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    raise
                if isinstance(exc, asyncio.CancelledError):
                    self._unbook(booked)
                    if self._stop.is_set():
                        return None
                    raise
                kind = classify(exc)
                message = describe(exc, self.secrets)
                if kind == "fatal":
                    self._unbook(booked)
                    return self._fatal_failure(
                        prompt, f"{message} -- stopping: every other call would fail the same way", attempt,
                    )
                if kind == "retry" and attempt <= self.retries and not self._stop.is_set():
                    self.stats.retries += 1
                    await asyncio.sleep(self._delay(attempt, retry_after(exc)))
                    continue
                self._unbook(booked)
                if store is not None:
                    store.release(prompt.text, message, attempt)
                return Response(None, error=message, attempts=attempt, seconds=time.monotonic() - t0)
            if budget is not None:
                budget.settle(booked, reply.prompt_tokens, reply.completion_tokens, prompt.text)
                self._budget_changed()
            text, note = clean_answer(reply.text, self.secrets)
            if store is not None:
                # Committed before it counts as done: a killed run loses at most what is in
                # flight, never answers waiting for the writer.
                await store.save(prompt.text, text, note, attempt, reply.prompt_tokens, reply.completion_tokens,
                                 took)
            return Response(text, attempts=attempt, seconds=time.monotonic() - t0, note=note,
                            prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens,
                            latency=took)

    async def _book(self, text: str) -> Tuple[str, float]:
        """The budget's verdict on sending ``text`` (``send`` with the booked cost, ``refuse``),
        waiting while only the requests in flight stand in the way; ``stopped`` if the run
        stopped meanwhile."""
        assert self.budget is not None
        while True:
            if self._stop.is_set() or self._fatal is not None:
                return "stopped", 0.0
            verdict, booked = self.budget.decide(text)
            if verdict != "wait":
                return verdict, booked
            # No await between the decision and the wait: a settlement cannot slip between.
            # (The budget waits only for this pool's own requests: their settlements wake it.)
            waiter = asyncio.get_running_loop().create_future()
            self._budget_waiters.append(waiter)
            await waiter

    def _unbook(self, booked: float) -> None:
        """A booked request failed for good, or was never sent: release its booking."""
        if self.budget is not None:
            self.budget.cancel(booked)
            self._budget_changed()

    def _budget_changed(self) -> None:
        """A booking was settled or cancelled: the prompts waiting for room look again."""
        waiters, self._budget_waiters = self._budget_waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)

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
