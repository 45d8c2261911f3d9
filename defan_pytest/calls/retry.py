"""The pool's pace: how long to wait before asking again (:class:`Backoff`: exponential, with
full jitter, a provider's ``Retry-After`` as a floor) and how fast requests may start
(:class:`RateLimiter`, ``--defan-rpm``).

>>> import random
>>> b = Backoff(base=1.0, cap=60.0, rng=random.Random(1))
>>> 0 <= b.delay(3, None) <= 4.0, b.delay(1, 30.0)
(True, 30.0)
"""
from __future__ import annotations

import asyncio
import random
import time
from typing import Optional

__all__ = ["Backoff", "RateLimiter"]

#: The longest a provider's ``Retry-After`` is honoured (seconds): a sanity cap.
MAX_RETRY_AFTER = 600.0


class Backoff:
    """Exponential backoff with full jitter: before retry ``attempt`` (1 for the first), a
    uniform wait in ``[0, min(cap, base * 2 ** (attempt - 1))]``."""

    def __init__(self, base: float = 1.0, cap: float = 60.0, rng: Optional[random.Random] = None) -> None:
        self.base = base
        self.cap = cap
        self.rng = rng or random.Random()

    def delay(self, attempt: int, hint: Optional[float]) -> float:
        """Seconds to wait before retrying; ``hint`` (the provider's Retry-After) is a floor."""
        ceiling = min(self.cap, self.base * (2 ** (attempt - 1)))
        delay = self.rng.uniform(0, ceiling)
        if hint is not None:
            # The provider's word wins over our schedule (up to a sanity cap of 10 minutes).
            delay = max(delay, min(hint, MAX_RETRY_AFTER))
        return delay


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
