"""The pool's pace: how long to wait before asking again (:class:`Backoff`: exponential, with
full jitter, a provider's ``Retry-After`` as a floor up to the backoff's maximum) and how fast
requests may start (:class:`RateLimiter`, ``--defan-rpm``).

>>> import random
>>> said = []
>>> b = Backoff(base=1.0, cap=60.0, rng=random.Random(1), notice=said.append)
>>> 0 <= b.delay(3, None) <= 4.0, b.delay(1, 30.0), b.delay(1, float("inf")), b.delay(2, 1e9), len(said)
(True, 30.0, 60.0, 60.0, 1)
"""
from __future__ import annotations

import asyncio
import random
import time
from typing import Callable, Optional

__all__ = ["Backoff", "RateLimiter"]


class Backoff:
    """Exponential backoff with full jitter: before retry ``attempt`` (1 for the first), a
    uniform wait in ``[0, min(cap, base * 2 ** (attempt - 1))]``.

    A provider's ``Retry-After`` is a floor, up to ``cap``: a server asking for more (``1e9``,
    ``inf``) would hold every prompt's retry for as long; ``notice`` is told so, once."""

    def __init__(self, base: float = 1.0, cap: float = 60.0, rng: Optional[random.Random] = None,
                 notice: Optional[Callable[[str], None]] = None) -> None:
        self.base = base
        self.cap = cap
        self.rng = rng or random.Random()
        self.notice = notice
        self._said = False

    def delay(self, attempt: int, hint: Optional[float]) -> float:
        """Seconds to wait before retrying; ``hint`` (the provider's Retry-After, seconds) is a
        floor up to the cap."""
        ceiling = min(self.cap, self.base * (2 ** (attempt - 1)))
        delay = self.rng.uniform(0, ceiling)
        if hint is None or not hint >= 0:  # nan or negative: no word from the provider
            return delay
        if hint > self.cap:
            if not self._said and self.notice is not None:
                self._said = True
                asked = f"{hint:,.0f} s" if hint < 1e15 else "forever"
                self.notice(f"the provider asked to wait {asked} before a retry (Retry-After); every retry waits at "
                            f"most {self.cap:g} s, the backoff's maximum (--defan-max-backoff)")
            hint = self.cap
        return max(delay, hint)


class RateLimiter:
    """At most ``rpm`` request starts in any sliding minute (evenly spaced); no limit without."""

    def __init__(self, rpm: Optional[float]) -> None:
        self.interval = 60.0 / rpm if rpm else 0.0
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        """Return when the next request may start."""
        if not self.interval:
            return
        async with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            await asyncio.sleep(start - now)
