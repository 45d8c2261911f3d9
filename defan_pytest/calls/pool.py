"""Model calls: one bounded async pool per run, retries that respect the provider.

Every call of a run goes through one :class:`CallPool`: an asyncio loop in a background
thread with at most ``concurrency`` requests in flight, fewer where the server queues them
(:mod:`defan_pytest.calls.pace`), and, optionally, at most ``rpm`` starts per minute.  pytest items only wait for their prompt's answer, so a serial run keeps many
requests in flight while items are reported in order.

How one prompt reaches a model is the caller's business (made by a backend of
:mod:`defan_pytest.calls.backends`: a user's callable, litellm, the lean OpenAI-protocol path, or
a plugin's); the pool does not know which, and treats them alike.  Before the first real call
the caller prepares (once, off the loop: importing its client, checking credentials -- a missing
key stops the run with one message instead of failing every prompt); a run answered from the
cache never prepares, so it imports no client at all.

Every answer brings its tokens (as the provider counted them), its latency and its finish
reason to the cache and the response.  With a budget (:class:`defan_pytest.calls.budget.Budget`,
``--defan-budget``) a prompt is sent only while the spending plus the requests in flight stays
within it; the prompts not sent are errored responses (``BudgetExceeded``), never
hallucinations, and the answers received are in the cache for a resumed run.

Failures are judged by the caller's backend (:meth:`defan_pytest.calls.protocol.Backend.classify`):
transient ones (429, 5xx, timeouts, dropped connections) are retried with exponential backoff
and full jitter, honouring ``Retry-After`` up to the backoff's maximum (a larger one is said
once, in :attr:`CallPool.notices`; :mod:`defan_pytest.calls.retry`); what still fails becomes an
errored response (never a hallucination).  A fatal one (an authentication error,
missing credentials, an unknown model, a :class:`FatalCallError`) stops the run.  A callable
that returns something other than text is an errored response naming the type (never scored
as its ``str()``, never cached).  So is an answer over ``max_answer`` bytes
(``--defan-max-answer``): a caller reading from the wire stops there, and the pool checks every
answer's text before anything keeps it, so that the memory of a run grows with its prompts,
never with what a model sends.

Nothing hangs: the watchdog (:mod:`defan_pytest.calls.watchdog`), checked by the thread waiting
for the answers, stops the run when a call outlives its timeout by a margin or when the threads
of timed-out sync calls pile up; the threads of sync calls are daemons, so a call that never
returns cannot keep the process alive.

Nothing leaks: every credential the run was given is replaced by ``***`` in every error message
and answer (:mod:`defan_pytest.calls.redaction`), and kept out of the cache identity.
"""
from __future__ import annotations

import asyncio
import random
import threading
import time
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence

from defan_pytest.calls.asker import Asker, Stats
from defan_pytest.calls.failures import describe
from defan_pytest.calls.pace import Pace
from defan_pytest.calls.protocol import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_ANSWER,
    DEFAULT_MAX_BACKOFF,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    Caller,
    FatalCallError,
    Prompt,
    Response,
    ResponseStore,
)
from defan_pytest.calls.ratelimits import RateLimits
from defan_pytest.calls.redaction import redact
from defan_pytest.calls.retry import Backoff, RateLimiter
from defan_pytest.calls.watchdog import Watchdog

if TYPE_CHECKING:
    from defan_pytest.calls.budget import Budget

__all__ = ["CallPool"]


class CallPool:
    """Runs every prompt of a run through ``caller`` with bounded concurrency.

    ``store``: an optional :class:`ResponseStore` (the cache, and the claims that split the
    prompts between the processes of one run).  ``backoff`` and ``max_backoff``: the retry
    schedule (:class:`~defan_pytest.calls.retry.Backoff`; ``seed`` seeds its jitter).
    ``margin``: the watchdog's patience past ``timeout``
    (:func:`~defan_pytest.calls.watchdog.default_margin`).  ``budget``: an optional
    :class:`defan_pytest.calls.budget.Budget`; the prompts it refuses are errored responses.
    ``max_answer``: the most bytes of one answer (set on the caller, checked on every answer).
    ``rpm`` and ``tpm``: requests and tokens a minute (a server's ``x-ratelimit`` headers are kept
    to as well: :mod:`defan_pytest.calls.ratelimits`).
    ``on_notice``: told each of :attr:`notices` once, as it arises (a warning for the user).
    ``adaptive``: lower the requests in flight where the server queues them
    (:mod:`defan_pytest.calls.pace`; ``--defan-pace``); ``processes``: how many processes of the
    run share the server (xdist workers).
    """

    def __init__(
        self,
        caller: Caller,
        concurrency: int = DEFAULT_CONCURRENCY,
        rpm: Optional[float] = None,
        tpm: Optional[float] = None,
        retries: int = DEFAULT_RETRIES,
        timeout: float = DEFAULT_TIMEOUT,
        backoff: float = 1.0,
        max_backoff: float = DEFAULT_MAX_BACKOFF,
        store: Optional[ResponseStore] = None,
        secrets: Sequence[str] = (),
        on_progress: Optional[Callable[[Stats], None]] = None,
        seed: Optional[int] = None,
        margin: Optional[float] = None,
        budget: "Optional[Budget]" = None,
        max_answer: int = DEFAULT_MAX_ANSWER,
        on_notice: Optional[Callable[[str], None]] = None,
        adaptive: bool = False,
        processes: int = 1,
        on_answer: Optional[Callable[[str, Response], None]] = None,
        on_fatal: Optional[Callable[[str], None]] = None,
    ) -> None:
        self.caller = caller
        try:
            caller.max_answer = int(max_answer)  # a caller reading from the wire stops there
        except AttributeError:  # a plugin's caller that takes no attribute: its answers are still checked
            pass
        #: What the user should know about the run that is no failure (a provider's Retry-After
        #: beyond the backoff's maximum), each once.
        self.notices: List[str] = []
        self.on_notice = on_notice
        self.budget = budget
        self.concurrency = max(1, int(concurrency))
        #: How many requests are in flight: ``concurrency`` at most, fewer where the server
        #: queues them (``adaptive``; ``processes``: the run's processes sharing the server).
        self.pace = Pace(self.concurrency, adaptive=adaptive, processes=processes)
        self.retries = max(0, int(retries))
        self.timeout = timeout
        self.watchdog = Watchdog(timeout, margin)
        self.store = store
        # The caller's own secrets too: a pool built without the run's list still scrubs them.
        self.secrets = sorted(set(secrets) | set(getattr(caller, "secrets", ()) or ()), key=len, reverse=True)
        self.on_progress = on_progress
        #: Told each response as it is delivered (the controller of an xdist run hands it over),
        #: and the failure that stopped the run, once.
        self.on_answer = on_answer
        self.on_fatal = on_fatal
        #: ``time.monotonic()`` when every prompt had its response (or the run stopped).
        self.finished: Optional[float] = None
        self.stats = Stats()
        self._results: Dict[str, Response] = {}
        self._cond = threading.Condition()
        self._fatal: Optional[str] = None
        self._thread: Optional[threading.Thread] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._stop = threading.Event()
        self._abandoned = False
        self.more: Optional[Callable[[], Sequence[Prompt]]] = None
        #: The prompts :meth:`start` (and each batch ``more`` gave) asked for, each once.
        self.prompts: List[Prompt] = []
        self.asker = Asker(
            caller, concurrency=self.concurrency, retries=self.retries, timeout=timeout,
            backoff=Backoff(backoff, max_backoff, random.Random(seed), notice=self._notice),
            limiter=RateLimiter(rpm), rates=RateLimits(rpm, tpm, cap=max_backoff), watchdog=self.watchdog, store=store, budget=budget, secrets=self.secrets,
            stats=self.stats, stop=self._stop, halt=self._stop_run, halted=lambda: self._fatal is not None,
            max_answer=int(max_answer), pace=self.pace,
        )

    # -- public API (any thread) ---------------------------------------------------------------

    def start(self, prompts: Sequence[Prompt], more: Optional[Callable[[], Sequence[Prompt]]] = None) -> None:
        """Start calling ``prompts`` in order in a background thread (returns at once).

        ``more`` (``--defan-sequential``): asked, on the pool's thread, once every prompt so far
        has its answer, for the next batch to ask; an empty one ends the run's calls."""
        if self._thread is not None:
            raise RuntimeError("the pool is already running")
        self.more = more
        self._thread = threading.Thread(target=self._run, args=(self._unique(prompts),), name="defan-pool", daemon=True)
        self.watchdog.beat()
        self._thread.start()

    def _unique(self, prompts: Sequence[Prompt]) -> List[Prompt]:
        unique: Dict[str, Prompt] = {}
        for p in prompts:
            if p.key not in self._results:
                unique.setdefault(p.key, p)
        self.stats.total += len(unique)
        found = list(unique.values())
        self.prompts.extend(found)
        return found

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
        """The watchdog, run by a thread waiting for answers (:meth:`Watchdog.alarm`): stop
        the run when a call has outlived ``timeout`` by the margin, giving up on the loop's
        thread, or when ``concurrency`` timed-out sync calls are still running in their
        threads."""
        if self._fatal is not None or self._thread is None or not self._thread.is_alive():
            return
        alarm = self.watchdog.alarm(self.caller.name, self.caller.stuck(), self.concurrency)
        if alarm is None:
            return
        if alarm.abandon:
            self._abandon(alarm.message)
        else:
            self._stop_run(alarm.message)

    def stop(self, message: str) -> None:
        """Stop the run: no new prompt is sent, calls in flight finish, ``fatal`` says why."""
        self._stop_run(message)

    def halt(self, message: str, grace: float = 5.0) -> None:
        """Stop the run (:meth:`stop`) and settle: the requests in flight get ``grace`` seconds
        to answer (they are paid for: their answers are committed), then are dropped; returns
        once nothing more will reach the store, so that what it holds can be counted."""
        self._stop.set()
        self._stop_run(message)
        if self._thread is None or self._abandoned:
            return
        self._thread.join(max(0.0, grace))
        if self._thread.is_alive() and self._loop is not None:
            try:
                self._loop.call_soon_threadsafe(self._cancel_all)
            except RuntimeError:
                pass
            self._thread.join(2.0)

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

    def _notice(self, message: str) -> None:
        message = redact(message, self.secrets)
        if message not in self.notices:
            self.notices.append(message)
            if self.on_notice is not None:
                self.on_notice(message)

    # -- stopping ------------------------------------------------------------------------------

    def _stop_run(self, message: str) -> None:
        with self._cond:
            first = self._fatal is None
            if first:
                self._fatal = redact(message, self.secrets)
            self._cond.notify_all()
        if first:
            self._told_fatal()

    def _told_fatal(self) -> None:
        if self.on_fatal is not None and self._fatal is not None:
            try:
                self.on_fatal(self._fatal)
            except Exception:  # noqa: BLE001 - telling others must not break the stop itself
                pass

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

    # -- the loop ------------------------------------------------------------------------------

    def _run(self, prompts: List[Prompt]) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            while prompts:
                loop.run_until_complete(self.asker.run(prompts, self._deliver))
                if self.more is None or self._stop.is_set() or self._fatal is not None:
                    break
                prompts = self._unique(self.more())  # between batches: keep asking?
            if self.on_progress is not None:
                self.on_progress(self.stats)
        except BaseException as exc:  # never leave waiters hanging
            with self._cond:
                first = self._fatal is None
                if first:
                    self._fatal = describe(exc, self.secrets)
                self._cond.notify_all()
            if first:
                self._told_fatal()
        finally:
            self.finished = time.monotonic()
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

    def _deliver(self, key: str, response: Response) -> None:
        with self._cond:
            self._results[key] = response
            self.stats.done += 1
            if response.error is not None:
                self.stats.errors += 1
            self._cond.notify_all()
        if self.on_answer is not None:
            self.on_answer(key, response)
        if self.on_progress is not None:
            self.on_progress(self.stats)
