"""Asking the model, on the call pool's event loop (:class:`Asker`): every prompt of the run
through the store (another process's answer, the cache's), the budget, the caller and the
retries the backend's verdict allows, each answer cleaned (:func:`clean_answer`) and committed
before it counts.  The threads, the waiting and the watchdog are the pool's
(:class:`defan_pytest.calls.pool.CallPool`).
"""
from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

from defan_pytest.calls.bookings import Bookings
from defan_pytest.calls.budget import STOPPED_ERROR, charged_note
from defan_pytest.calls.capacity import stated_slots
from defan_pytest.calls.failures import describe, retry_after, timed_out
from defan_pytest.calls.local import server_url
from defan_pytest.calls.pace import REQUEUES, Pace, Ticket
from defan_pytest.calls.protocol import (
    DEFAULT_MAX_ANSWER,
    AnswerTooLarge,
    Caller,
    FatalCallError,
    Prompt,
    Reply,
    Response,
    ResponseStore,
    Verdict,
)
from defan_pytest.calls.ratelimits import RateLimits, headers_of
from defan_pytest.calls.reach import Reach
from defan_pytest.calls.redaction import redact, scrub
from defan_pytest.calls.retry import Backoff, RateLimiter
from defan_pytest.calls.sizes import check_answer
from defan_pytest.calls.watchdog import Watchdog
from defan_pytest.safetext import sanitize

if TYPE_CHECKING:
    from defan_pytest.calls.budget import Budget

__all__ = ["Asker", "Stats", "clean_answer"]

_SURROGATE_NOTE = "the answer held invalid code points (lone surrogates), replaced by U+FFFD"
_SECRET_NOTE = "the answer held a credential of the run, replaced by ***"


def clean_answer(text: str, secrets: Sequence[str] = ()) -> Tuple[str, Optional[str]]:
    """An answer as it enters the run, once: invalid code points replaced (the cache, the
    report and the terminal can only hold valid text) and credentials scrubbed; with a note
    saying what changed, or ``None``."""
    notes = []
    text, changed = sanitize(text)
    if changed:
        notes.append(_SURROGATE_NOTE)
    scrubbed = scrub(text, secrets)
    if scrubbed != text:
        notes.append(_SECRET_NOTE)
    return scrubbed, "; ".join(notes) or None


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
    pace: Optional[Pace] = None
    rates: Optional[RateLimits] = None

    def snapshot(self) -> Dict[str, Any]:
        out = {k: getattr(self, k) for k in ("total", "done", "calls", "cache_hits", "retries", "errors")}
        if self.pace is not None:
            out["pace"] = self.pace.snapshot()
            if self.rates is not None and self.rates.active:
                out["pace"]["rates"] = self.rates.snapshot()
        return out


class Asker(Bookings):
    """Asks ``caller`` every prompt of a run, on the pool's loop, ``concurrency`` at a time.

    ``stats``: the run's counters (this side counts the requests, cache hits and retries, the
    pool the answers);
    ``stop``: set when no new prompt may be sent; ``halt(message)``: stop the run;
    ``halted()``: whether the run was stopped; ``max_answer``: the most bytes of one answer's
    text (a larger one is an errored response); ``pace``: how many requests are in flight
    (:class:`~defan_pytest.calls.pace.Pace`; ``concurrency`` fixed without one).  The rest is the
    pool's configuration (:class:`defan_pytest.calls.pool.CallPool`).
    """

    def __init__(
        self, caller: Caller, *, concurrency: int, retries: int, timeout: float, backoff: Backoff,
        limiter: RateLimiter, watchdog: Watchdog, store: Optional[ResponseStore], budget: "Optional[Budget]",
        secrets: Sequence[str], stats: "Stats", stop: threading.Event, halt: Callable[[str], None],
        halted: Callable[[], bool], max_answer: int = DEFAULT_MAX_ANSWER, pace: Optional[Pace] = None,
        rates: Optional[RateLimits] = None,
    ) -> None:
        self.caller = caller
        self.pace = pace or Pace(concurrency, adaptive=False)
        stats.pace = self.pace
        self.max_answer = max_answer
        self.concurrency = concurrency
        self.retries = retries
        self.timeout = timeout
        self.backoff = backoff
        self.limiter = limiter
        #: Requests and tokens a minute, the user's and the server's (x-ratelimit headers, 429s).
        self.rates = rates or RateLimits()
        stats.rates = self.rates
        self.watchdog = watchdog
        self.store = store
        self.budget = budget
        self.secrets = secrets
        self.stats = stats
        self.stop = stop
        self.halt = halt
        self.halted = halted
        self._maybe_cached: Optional[Set[str]] = None  # prompts the cache held when the pool started
        self._prepared: "Optional[asyncio.Future[Any]]" = None
        self._probing: "Optional[asyncio.Future[None]]" = None  # the capacity probe (_probe)
        self._budget_waiters: "List[asyncio.Future[None]]" = []
        self.reach = Reach(caller)  # a server that cannot be reached stops the run at once

    def verdict(self, exc: BaseException) -> Verdict:
        """What a failed call means: a :class:`FatalCallError` stops the run whoever raised it;
        an answer over the size cap is that prompt's error (the model would say it again); any
        other failure is the caller's backend's to judge."""
        if isinstance(exc, FatalCallError):
            return "fatal"
        if isinstance(exc, AnswerTooLarge):
            return "fail"
        return self.reach.judge(exc, self.caller.backend.classify(exc))

    async def run(self, prompts: List[Prompt], deliver: Callable[[str, Response], None]) -> None:
        """Ask every prompt, handing each response to ``deliver(key, response)``."""
        uncached = getattr(self.store, "uncached", None)
        if callable(uncached):
            # Which prompts the cache may hold, in one read: a cold run then makes no query per
            # prompt on this loop (a lookup is a tenth of a lean call's CPU).
            texts = [p.stored for p in prompts]
            self._maybe_cached = set(texts) - set(uncached(texts))
        beat = asyncio.ensure_future(self.watchdog.heartbeat())
        queue_: asyncio.Queue = asyncio.Queue()
        for p in prompts:
            queue_.put_nowait(p)
        workers = [asyncio.create_task(self._worker(queue_, deliver)) for _ in range(min(self.concurrency, max(1, len(prompts))))]
        try:
            await asyncio.gather(*workers)
        finally:
            beat.cancel()
            if self._probing is not None and not self._probing.done():
                self._probing.cancel()  # its thread is a daemon, bounded by its own deadline
            await self.caller.aclose()
            if self.store is not None:
                self.store.flush()  # every answer is on disk before the pool reports done

    async def _worker(self, queue_: asyncio.Queue, deliver: Callable[[str, Response], None]) -> None:
        while not self.stop.is_set() and not self.halted():
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
                self.halt(
                    f"the response cache ({where}) failed: {describe(exc, self.secrets)} -- stopping; every answer "
                    "committed so far is kept (a corrupt database: --defan-cache=refresh moves it aside)"
                )
                return
            if response is not None:
                deliver(prompt.key, response)

    # -- one prompt ----------------------------------------------------------------------------

    async def _one(self, prompt: Prompt) -> Optional[Response]:
        """One prompt's response: another process's answer, the cache's, or the model's
        (``None``: the run stopped first, or a fatal failure stopped it)."""
        store = self.store
        ticket: Optional[Ticket] = None
        if store is not None:
            shared = bool(getattr(store, "shared", False))
            if shared:
                # The processes of one run: a stored answer needs no claim, and a claim is taken
                # only once a request can go out (a turn under the pace), so that a process
                # holds no more prompts than it has requests in flight.
                hit = self._from_cache(store, prompt)
                if hit is not None:
                    return hit
                ticket = await self.pace.acquire()
            while not store.claim(prompt.stored):
                # Another process has this prompt (a worker of the run, or another session on
                # the cache): wait for its answer instead of asking again -- or, when another
                # session gave it up or the process that held it died, claim it again and ask
                # it here.
                if ticket is not None:
                    self.pace.release()
                    ticket = None
                peer = await self._from_peer(store, prompt)
                if peer is not None or self.stop.is_set() or self.halted():
                    return peer
                if shared:
                    ticket = await self.pace.acquire()
            if not shared:
                hit = self._from_cache(store, prompt)
                if hit is not None:
                    return hit
        return await self._send(prompt, ticket)

    async def _send(self, prompt: Prompt, ticket: "Optional[Ticket]") -> Optional[Response]:
        """A prompt no store answered: booked, prepared for, then asked (``ticket``: a turn
        under the pace already taken, handed to the first attempt or given back here)."""
        booked: Optional[float] = 0.0
        if self.budget is not None:
            try:
                verdict, booked = await self._book(prompt.text)
            except BaseException:
                if ticket is not None:
                    self.pace.release()
                raise
            if verdict != "send":
                if ticket is not None:
                    self.pace.release()
                return self._unsent(prompt, verdict)
        t0 = time.monotonic()
        try:
            await self._prepare()
        except BaseException as exc:
            self._unbook(booked)
            if ticket is not None:
                self.pace.release()
            if isinstance(exc, FatalCallError):
                return self._fatal_failure(prompt, str(exc), 0)
            if not isinstance(exc, Exception):
                raise
            # The caller's preparation, not the cache: said as such.
            return self._fatal_failure(
                prompt, f"preparing the calls to {self.caller.name} failed: {describe(exc, self.secrets)}", 0)
        return await self._ask(prompt, booked, t0, ticket)

    async def _from_peer(self, store: ResponseStore, prompt: Prompt) -> Optional[Response]:
        """The answer (or the error) of the process that claimed ``prompt``."""
        w = await store.wait(prompt.stored, stop=self.stop)
        if w.text is not None:
            return Response(scrub(w.text, self.secrets), attempts=w.attempts, via="peer",
                            answered_by=w.answered_by, note=w.note, prompt_tokens=w.prompt_tokens,
                            completion_tokens=w.completion_tokens, latency=w.latency,
                            finish_reason=w.finish_reason)
        if w.error is None:
            return None  # stopped
        return Response(None, error=w.error, attempts=w.attempts, via="peer")

    def _from_cache(self, store: ResponseStore, prompt: Prompt) -> Optional[Response]:
        """The stored answer to ``prompt``, or ``None``."""
        maybe = self._maybe_cached is None or prompt.stored in self._maybe_cached
        hit = store.lookup_entry(prompt.stored) if maybe else None
        if hit is None:
            return None
        store.mark_done(prompt.stored)
        self.stats.cache_hits += 1
        return Response(scrub(hit.answer, self.secrets), cached=True, attempts=0, via="cache",
                        answered_by="cache", note=hit.note, prompt_tokens=hit.prompt_tokens,
                        completion_tokens=hit.completion_tokens, latency=hit.latency,
                        finish_reason=hit.finish_reason)

    def _unsent(self, prompt: Prompt, verdict: str) -> Optional[Response]:
        """A prompt the budget did not let through: refused (an errored response, never a
        hallucination, and never cached: a resumed run with a larger budget asks it), or
        stopped before its turn (``None``)."""
        assert self.budget is not None
        message = self.budget.message() if verdict == "refuse" else STOPPED_ERROR
        if self.store is not None:
            self.store.release(prompt.stored, message, 0)
        if verdict != "refuse":
            return None
        return Response(None, error=message, attempts=0)

    async def _ask(self, prompt: Prompt, booked: Optional[float], t0: float,
                   first: "Optional[Ticket]" = None) -> Optional[Response]:
        """Ask the model, retrying what the backend judges transient (``booked``: the budget's
        booking for this prompt, settled or released here; an attempt the provider may have
        billed is charged, and the next one booked anew)."""
        attempt, charged, requeues = 0, 0, 0
        notes: List[str] = []
        while True:
            attempt += 1
            if first is not None:
                ticket, first = first, None  # the turn the claim was taken under
            else:
                ticket = await self.pace.acquire()
            await self.limiter.wait()
            await self.rates.wait(stop=lambda: self.stop.is_set() or self.halted())
            if self.stop.is_set() or self.halted():
                # The run stopped (Ctrl-C, the budget, a fatal failure) while this prompt waited
                # for its turn: checked right before each send, so nothing goes out after a stop.
                self.pace.release()
                self._unbook(booked)
                if self.store is not None:
                    self.store.release(prompt.stored, STOPPED_ERROR, attempt - 1)
                return None
            self.stats.calls += 1
            try:
                reply, took = await self._call(prompt.text)
            except BaseException as exc:  # noqa: BLE001 - every failure is classified
                self.pace.release()
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    raise
                if isinstance(exc, asyncio.CancelledError):
                    self._unbook(booked)
                    if self.stop.is_set():
                        return None
                    raise
                kind = self.verdict(exc)
                message = describe(exc, self.secrets)
                limited = kind == "retry" and getattr(exc, "status_code", None) == 429
                if limited:
                    # The server's rate limit: nothing goes out until its Retry-After (up to the
                    # backoff's maximum, said once) or its reset has passed, and fewer requests
                    # are in flight from now on.
                    hint = retry_after(exc)
                    self.rates.refused_now(self.backoff.delay(attempt, hint) if hint is not None else None,
                                           headers_of(exc))
                    self.pace.refused(ticket)
                settled = self._charge(booked, exc)
                charged += int(booked is not None and settled is None)
                booked = settled
                if kind == "fatal":
                    self._unbook(booked)
                    return self._fatal_failure(
                        prompt, self.reach.why(exc) or f"{message} -- stopping: every other call would fail the same way",
                        attempt,
                    )
                if (kind == "retry" and requeues < REQUEUES and not self.stop.is_set() and timed_out(exc)
                        and self.pace.timed_out(ticket)):
                    # It timed out in the server's queue, as likely as not: asked again at the
                    # lower limit, with no backoff and not counted as an attempt.
                    requeues += 1
                    attempt -= 1
                    again, booked = await self._rebook(prompt.text, booked, notes)
                    if again:
                        continue
                elif kind == "retry" and attempt <= self.retries and not self.stop.is_set():
                    self.stats.retries += 1
                    if not limited:  # a 429's wait is the rate limits' (every send waits it)
                        await asyncio.sleep(self.backoff.delay(attempt, retry_after(exc)))
                    again, booked = await self._rebook(prompt.text, booked, notes)
                    if again:
                        continue
                self._unbook(booked)
                if charged:  # said in the error, where the usage summary finds it
                    notes.insert(0, charged_note(charged))
                message += f" ({'; '.join(notes)})" if notes else ""
                if self.store is not None:
                    self.store.release(prompt.stored, message, attempt)
                return Response(None, error=message, attempts=attempt, seconds=time.monotonic() - t0)
            self.pace.release()
            self.pace.answered(took, reply.server_seconds, ticket)
            used = (reply.prompt_tokens or 0) + (reply.completion_tokens or 0)
            self.rates.heard(reply.limits, used if reply.prompt_tokens is not None or reply.completion_tokens is not None
                             else None, in_flight=self.pace.in_flight)
            if reply.server_seconds is not None:
                took = min(took, reply.server_seconds)  # the latency reported: the server's time, where it says
            return await self._answered(prompt, reply, took, attempt, booked, t0)

    async def _answered(self, prompt: Prompt, reply: Reply, took: float, attempt: int, booked: Optional[float],
                        t0: float) -> Response:
        """The model's answer: paid for, cleaned, committed to the store, then returned."""
        self.reach.answered()
        if self.budget is not None and booked is not None:
            self.budget.settle(booked, reply.prompt_tokens, reply.completion_tokens, prompt.text)
            self._budget_changed()
        text, note = clean_answer(reply.text, self.secrets)
        if self.store is not None:
            # Committed before it counts as done: a killed run loses at most what is in
            # flight, never answers waiting for the writer.
            await self.store.save(prompt.stored, text, note, attempt, reply.prompt_tokens, reply.completion_tokens,
                                  took, reply.finish_reason)
        return Response(text, attempts=attempt, seconds=time.monotonic() - t0, note=note,
                        prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens,
                        latency=took, finish_reason=reply.finish_reason)

    async def _prepare(self) -> None:
        """The caller's preparation, once for the pool, off the loop (importing litellm takes
        seconds of CPU, during which the loop keeps the heartbeat and the cache hits going).
        The capacity probe starts beside it and never holds a call back (:meth:`_probe`)."""
        if self._prepared is None:
            self._prepared = asyncio.ensure_future(_in_daemon_thread(self.caller.prepare))
            if self.pace.adaptive:
                self._probing = asyncio.ensure_future(self._probe())
        await asyncio.shield(self._prepared)

    async def _probe(self) -> None:
        """What the server states of its capacity (a local server only:
        :func:`~defan_pytest.calls.capacity.stated_slots`, one deadline for the whole probe),
        asked beside the first calls, which go out at the slow start's pace meanwhile; whatever
        goes wrong in it is the probe's (no slots stated), never the run's nor the cache's."""
        try:
            url = server_url(getattr(self.caller, "model", None))
            slots = await _in_daemon_thread(lambda: stated_slots(url)) if isinstance(url, str) else None
        except Exception:  # noqa: BLE001 - the probe's own failure: the pace learns from the answers
            return
        if slots is not None:
            self.pace.state(slots, f"the server's {slots} slot{'s' if slots != 1 else ''} (GET /props)")

    async def _call(self, text: str) -> Tuple[Reply, float]:
        """One request, timed by the watchdog: the reply and the seconds it took."""
        with self.watchdog.watching() as began:
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
        took = time.monotonic() - began
        reply = out if isinstance(out, Reply) else Reply(out)
        if isinstance(reply.text, str):  # before anything keeps it: a callable's 5 MB answer ends here
            check_answer(reply.text, self.max_answer)
        return reply, took

    def _fatal_failure(self, prompt: Prompt, message: str, attempts: int) -> Optional[Response]:
        """Stop the run on a failure every call would share; the prompt has no answer."""
        self.halt(message)
        if self.store is not None:
            self.store.release(prompt.stored, redact(message, self.secrets), attempts)
        return None
