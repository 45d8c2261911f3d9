"""How many requests the pool keeps in flight (:class:`Pace`): from ``--defan-concurrency``
down to what the server can serve at once, and back up when it can take more.

A local server has a fixed number of slots (llama.cpp's ``-np``, vLLM's batch, Ollama's
``OLLAMA_NUM_PARALLEL``); requests beyond them wait in its queue, and the wait counts against
the client's timeout.  Sixteen requests at once against a four-slot server time out while only
queued, and each retry throws away the work done so far.  So the pace adapts, as TCP's
congestion window does (additive increase, multiplicative decrease):

* **What the server states.**  Where it says how many it serves at once (llama.cpp's
  ``GET /props``: ``total_slots``; :func:`defan_pytest.calls.capacity.stated_slots`), that is
  the ceiling, shared between the processes of the run.
* **Queueing, measured.**  Where each answer says how long the server worked on it (llama.cpp's
  ``timings``), the time it waited is its latency minus that.  Over a round of answers the
  ratio of the two sums is, by Little's law, requests in flight per request being served; when
  it exceeds :data:`QUEUED` the limit drops to the number the server was serving (its seconds
  of work per second of the round).
* **Slow start.**  Without a stated capacity the limit starts at :data:`FIRST` and doubles
  each round of answers with no sign of queueing, up to the ceiling: a burst of sixteen
  requests into a two-slot queue would time out before the first answers could tell.
* **Timeouts under load.**  A request that timed out while others were in flight (beyond the
  slots the server states, where it states them) timed out, as likely as not, in the queue: the limit halves (once for the requests sent under one limit, as
  TCP halves once per window), and the request is asked again at the lower limit without
  counting as a retry (at most :data:`REQUEUES` times a prompt; a timeout with the server to
  itself is a plain failure, retried as before).
* **Probing up.**  After :data:`HOLD` rounds with no sign of queueing the limit grows by one
  a round, up to the ceiling: a server that had other clients, or was warming up, gets used.

``--defan-pace=fixed`` keeps ``--defan-concurrency`` as it is (a provider that bills or limits by
concurrency); the summary says what the pace settled on and why (:meth:`Pace.summary`).

>>> p = Pace(16)
>>> p.state(4, "the server's 4 slots (GET /props)")
>>> p.limit
4
>>> print(p.summary())
concurrency 4 of 16: the server's 4 slots (GET /props)
"""
from __future__ import annotations

import asyncio
from collections import Counter
import time
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

__all__ = ["FIRST", "HOLD", "QUEUED", "REQUEUES", "Pace", "Ticket", "combined", "summary_of"]

#: The limit a run starts from when the server states no capacity (slow start).
FIRST = 4

#: Requests in flight per request served (latency over the server's time, summed over a round)
#: above which the server is queueing: a fifth of the time spent waiting.
QUEUED = 1.2
#: Rounds without queueing after a decrease before the limit grows again.
HOLD = 4
#: The most times one prompt is asked again after timing out under load (not a retry).
REQUEUES = 2


class Ticket(NamedTuple):
    """A request let through by :meth:`Pace.acquire`: the requests in flight with it (``load``)
    and the limit's ``epoch`` when it was sent."""

    load: int
    epoch: int


class Pace:
    """The pool's concurrency limit (see the module docstring).

    ``ceiling``: ``--defan-concurrency``; ``adaptive``: ``False`` for ``--defan-pace=fixed``;
    ``processes``: the processes of the run sharing the server (xdist workers), each of which
    takes its share of what the server states; ``clock``: monotonic seconds (a test's own)."""

    def __init__(self, ceiling: int, *, adaptive: bool = True, processes: int = 1,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.start = max(1, int(ceiling))
        self.ceiling = self.start
        self.limit = min(self.start, FIRST) if adaptive else self.start
        self.adaptive = adaptive
        self.processes = max(1, int(processes))
        self.in_flight = 0
        self.lowest = self.limit
        self._growing = adaptive  # slow start: doubling until the first sign of queueing
        self._epoch = 0  # bumped at every decrease: a timeout counts once per limit
        #: Timeouts of requests sent while others were in flight, asked again at a lower limit.
        self.requeued = 0
        self._stated: Optional[str] = None
        self._why: Optional[str] = None
        self._round: List[Tuple[float, float]] = []  # (latency, the server's time) of this round's answers
        self._clean = 0  # rounds since the last sign of queueing
        self._answers = 0  # answers of this round (with or without the server's time)
        self.clock = clock
        self._held: "Counter[int]" = Counter()  # answers received at each limit
        self._since = clock()  # when this round began
        self._waiters: "List[asyncio.Future[None]]" = []

    # -- the limit -----------------------------------------------------------------------------

    def state(self, slots: int, source: str) -> None:
        """The server says it serves ``slots`` requests at once (``source``: where it says so):
        this process's share of them becomes the ceiling."""
        if not self.adaptive or slots < 1:
            return
        share = max(1, -(-slots // self.processes))
        self._growing = False
        if share < self.ceiling:
            self.ceiling = share
            self._stated = source if self.processes == 1 else f"{source}, shared by {self.processes} processes"
            self._why = None  # what the server states is the reason, not a measure from before it said
        self._set(self.ceiling)  # the server said how many: no need to find out

    async def acquire(self) -> Ticket:
        """Wait for room under the limit; the requests in flight once this one is sent."""
        while self.in_flight >= self.limit:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        self.in_flight += 1
        return Ticket(self.in_flight, self._epoch)

    def release(self) -> None:
        """A request sent under :meth:`acquire` is over."""
        self.in_flight = max(0, self.in_flight - 1)
        self._wake()

    # -- what the answers say ------------------------------------------------------------------

    def answered(self, latency: float, server: Optional[float], ticket: Optional[Ticket] = None) -> None:
        """An answer came ``latency`` seconds after it was sent (under ``ticket``); ``server``:
        the seconds the server says it worked on it (``None``: it does not say)."""
        if not self.adaptive:
            return
        self._held[self.limit] += 1
        if ticket is not None and ticket.epoch != self._epoch:
            return  # sent under a higher limit: its wait says nothing of the present one
        if server is not None and server > 0 and latency > 0:
            self._round.append((latency, min(server, latency)))
        self._answers += 1
        if self._answers >= max(FIRST, self.limit):
            self._decide()

    def timed_out(self, ticket: Ticket) -> bool:
        """A request sent under ``ticket`` timed out; whether that followed from the server's
        queue (others were in flight): then the limit halves (once for the requests sent under
        one limit) and the request may be asked again without counting as a retry."""
        if not self.adaptive or ticket.load <= 1:
            return False
        if self._stated is not None and ticket.load <= self.ceiling:
            return False  # within the slots the server states, nothing queued: a slow answer, retried as such
        self._growing = False
        if ticket.epoch == self._epoch:
            lower = max(1, min(self.limit, ticket.load) // 2)
            if lower < self.limit:
                self._lower(lower, "requests timed out while the server was busy")
        self._clean = 0
        self.requeued += 1
        return True

    def refused(self, ticket: Ticket) -> None:
        """The server refused a request sent under ``ticket`` (429: its rate limit): the limit
        halves (once for the requests sent under one limit), whatever the queue said."""
        if not self.adaptive:
            return
        self._growing = False
        if ticket.epoch == self._epoch:
            lower = max(1, min(self.limit, ticket.load) // 2)
            if lower < self.limit:
                self._lower(lower, "the server refused requests beyond its rate limit (429)")
        self._clean = 0

    def _decide(self) -> None:
        """A round of answers is in: lower the limit to what the server serves when it queues,
        else grow it by one once it has held for :data:`HOLD` rounds."""
        waited = sum(lat for lat, _ in self._round)
        served = sum(srv for _, srv in self._round)
        now = self.clock()
        elapsed, self._since = now - self._since, now
        self._round, self._answers = [], 0
        ratio = waited / served if served > 0 else 1.0
        if ratio > QUEUED and self.limit > 1 and elapsed > 0:
            # Little's law: the server's seconds per second of the round is how many of our
            # requests it was serving at once; the rest waited in its queue.
            target = max(1, int(served / elapsed + 0.5))
            if target >= self.limit:
                return  # it served as many as were in flight: the wait was not in its queue
            self._growing = False
            self._lower(target, "the server queued the requests beyond that (latency over the server's own time)")
            return
        self._clean += 1
        if self._growing:
            self._set(self.limit * 2)
        elif self._clean >= HOLD and self.limit < self.ceiling:
            self._set(self.limit + 1)

    def _lower(self, limit: int, why: str) -> None:
        self._set(limit)
        self._epoch += 1
        self._round, self._answers, self._since = [], 0, self.clock()
        self._why = why
        self._clean = 0

    def _set(self, limit: int) -> None:
        self.limit = max(1, min(self.ceiling, limit))
        self.lowest = min(self.lowest, self.limit)
        self._wake()

    def _wake(self) -> None:
        room = self.limit - self.in_flight
        for waiter in list(self._waiters):
            if room <= 0:
                break
            if not waiter.done():
                waiter.set_result(None)
                room -= 1

    # -- what the run says ---------------------------------------------------------------------

    def snapshot(self) -> Dict[str, Any]:
        """Plain JSON for the run's progress, the report and the controller of an xdist run."""
        # Where it settled: the limit most answers came under (a probe up and back is no change).
        settled = self._held.most_common(1)[0][0] if self._held else self.limit
        # One reason for one server: where it settled at the slots the server states, those are
        # the reason, whatever measure lowered the limit before the server said (issue 36).
        why = self._stated if self._stated is not None and settled >= self.ceiling else (self._why or self._stated)
        return {"start": self.start, "limit": settled, "lowest": self.lowest, "adaptive": self.adaptive,
                "requeued": self.requeued, "why": why}

    def summary(self) -> Optional[str]:
        """One line on what the pace settled on, or ``None`` when it kept ``--defan-concurrency``."""
        return summary_of(self.snapshot())


def summary_of(pace: Optional[Mapping[str, Any]]) -> Optional[str]:
    """The line of :meth:`Pace.summary` from a :meth:`Pace.snapshot` (or the snapshots of an
    xdist run's processes combined: limits and starts summed)."""
    if not pace or not pace.get("adaptive", True):
        return None
    start, limit, requeued = int(pace.get("start", 0)), int(pace.get("limit", 0)), int(pace.get("requeued", 0))
    why = pace.get("why")
    if not why and not requeued:  # it kept --defan-concurrency (or the run ended before reaching it)
        return None
    processes = int(pace.get("processes", 1) or 1)
    line = f"concurrency {limit} of {start}" + (f" ({start // processes} in each of {processes} processes)"
                                                  if processes > 1 else "")
    if why:
        line += f": {why}"
    if requeued:
        line += (f"; {requeued} request{'s' if requeued != 1 else ''} that timed out while others were in flight "
                 "asked again at the lower concurrency (not counted as retries)")
    return line


def combined(snapshots: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """The :meth:`Pace.snapshot` of the processes of one run (xdist workers) as one: the
    requests in flight of all of them (``start``, ``limit``, ``lowest`` summed), the requests
    asked again, and the first reason given."""
    snaps = [s for s in snapshots if isinstance(s, Mapping)]
    if not snaps:
        return {}
    return {
        "start": sum(int(s.get("start", 0)) for s in snaps), "limit": sum(int(s.get("limit", 0)) for s in snaps),
        "lowest": sum(int(s.get("lowest", 0)) for s in snaps), "adaptive": all(s.get("adaptive", True) for s in snaps),
        "requeued": sum(int(s.get("requeued", 0)) for s in snaps), "why": next((s["why"] for s in snaps if s.get("why")), None),
        "processes": len(snaps),
    }
