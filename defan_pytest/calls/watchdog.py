"""Nothing hangs: the pool's watchdog.  The event loop beats (:meth:`Watchdog.heartbeat`) and
every call in flight is timed (:meth:`Watchdog.watching`); the thread waiting for the answers
asks :meth:`Watchdog.alarm`, which stops the run when a call outlives its timeout by a margin
(an async callable blocking the event loop, a call that ignores its cancellation) or when the
threads of timed-out sync calls pile up.

>>> default_margin(60.0), default_margin(1.0), default_margin(600.0)
(30.0, 10.0, 120.0)
"""
from __future__ import annotations

import asyncio
import itertools
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Dict, Iterator, Optional

__all__ = ["Alarm", "Watchdog", "default_margin"]


def default_margin(timeout: float) -> float:
    """How long past its timeout a call may run before the watchdog stops the run: enough for
    a busy machine's scheduling hiccups, short enough that a stuck run ends."""
    return max(10.0, min(120.0, 0.5 * timeout))


@dataclass(frozen=True)
class Alarm:
    """Why the run must stop; ``abandon``: the loop's thread cannot be trusted to end (a call
    that never returns to it), so the pool gives up on it."""

    message: str
    abandon: bool


class Watchdog:
    """The loop's heartbeat and the start of every call in flight, for :meth:`alarm`.

    ``timeout``: seconds a call may take (``--defan-timeout``); ``margin``: the patience past
    it (:func:`default_margin`).
    """

    def __init__(self, timeout: float, margin: Optional[float] = None) -> None:
        self.timeout = timeout
        self.margin = default_margin(timeout) if margin is None else margin
        self.last_beat = time.monotonic()
        self._inflight: Dict[int, float] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count()

    def beat(self) -> None:
        """The loop ran just now."""
        self.last_beat = time.monotonic()

    async def heartbeat(self) -> None:
        """Beat while the loop runs (a task of the pool's loop, cancelled at its end)."""
        while True:
            self.beat()
            await asyncio.sleep(0.25)

    @contextmanager
    def watching(self) -> Iterator[float]:
        """Time one call in flight; yields when it began."""
        token = next(self._ids)
        began = time.monotonic()
        with self._lock:
            self._inflight[token] = began
        try:
            yield began
        finally:
            with self._lock:
                del self._inflight[token]

    def alarm(self, name: str, stuck: int, concurrency: int) -> Optional[Alarm]:
        """Why the run of model ``name`` must stop now, or ``None``: a call in flight past
        ``timeout + margin``, or ``stuck`` timed-out sync calls still running in their threads
        filling all ``concurrency`` slots."""
        now = time.monotonic()
        with self._lock:
            oldest = min(self._inflight.values(), default=None)
        if oldest is not None and now - oldest > self.timeout + self.margin:
            took = now - oldest
            if now - self.last_beat > self.margin:
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
            return Alarm(f"{why} -- stopping", abandon=True)
        if stuck >= concurrency:
            return Alarm(
                f"model {name!r} did not return within --defan-timeout {self.timeout:g} s on {stuck} calls that are "
                "still running in their threads -- stopping (raise --defan-timeout if it is only slow)",
                abandon=False,
            )
        return None
