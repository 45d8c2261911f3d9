"""A hosted API's rate limits, kept (:class:`RateLimits`): requests and tokens per minute, as
the user states them (``--defan-rpm``, ``--defan-tpm``) and as the server says them.

OpenAI-protocol servers (OpenAI, Azure, Groq, Together, vLLM's and LiteLLM's proxies ...) send
with every answer ``x-ratelimit-limit-requests`` / ``-tokens`` (the limits a minute),
``x-ratelimit-remaining-requests`` / ``-tokens`` (what is left now) and
``x-ratelimit-reset-requests`` / ``-tokens`` (when it is all back: ``1s``, ``6m0s``, ``20ms``,
or seconds); a refused request (429) says ``Retry-After``.  Each limit is kept as a bucket that
refills at the limit's rate (:class:`Bucket`): a request goes out when both buckets hold what it
takes (one request; the tokens it is expected to cost, the running mean of the answers' usage),
the server's ``remaining`` figures bring the buckets down to what it says is left, and a 429
empties them until its ``Retry-After`` (or the reset) has passed.  The pool lowers its
concurrency on a 429 too (:meth:`defan_pytest.calls.pace.Pace.refused`).  Hostile values (``-5``,
``nan``, ``1e300``, words) are ignored: a limit comes from a header only when it is a finite
positive number.

>>> seconds_of("6m0s"), seconds_of("1.5s"), seconds_of("20ms"), seconds_of("2"), seconds_of("soon")
(360.0, 1.5, 0.02, 2.0, None)
>>> r = RateLimits(rpm=None, tpm=None)
>>> r.heard({"x-ratelimit-limit-requests": "600", "x-ratelimit-limit-tokens": "60000"})
>>> r.summary()
'rate limits: 600 requests and 60,000 tokens a minute (the server says so: x-ratelimit headers)'
"""
from __future__ import annotations

import asyncio
import math
import re
import time
from typing import Any, Callable, Dict, Mapping, Optional

__all__ = ["Bucket", "RateLimits", "headers_of", "picked", "rate_summary", "seconds_of"]

#: Of a limit the server states, the share this run uses: a little under it, so that the
#: requests of one instant (the server counts them as they arrive) never pass it.
MARGIN = 0.97
#: Seconds a 429 without Retry-After or a reset header holds every send back.
REFUSED_WAIT = 1.0
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_MAX_SECONDS = 24 * 3600.0


def seconds_of(value: Any) -> Optional[float]:
    """The seconds of a reset header (``6m0s``, ``1.5s``, ``20ms``, ``2``), or ``None``."""
    text = str(value).strip().lower()
    if not text or len(text) > 40:
        return None
    try:
        seconds = float(text)
    except ValueError:
        parts = _DURATION.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            return None
        seconds = sum(float(n) * _UNIT[u] for n, u in parts)
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return min(seconds, _MAX_SECONDS)


def _number(value: Any) -> Optional[float]:
    try:
        n = float(str(value).strip())
    except (TypeError, ValueError):
        return None
    return n if math.isfinite(n) and 0 <= n < 1e12 else None


def headers_of(holder: Any) -> Optional[Mapping[str, str]]:
    """The headers a failure (or a reply) carries, lower-cased, rate-limit ones and Retry-After
    only; ``None`` when it carries none."""
    headers = None
    for h in (getattr(getattr(holder, "response", None), "headers", None), getattr(holder, "headers", None),
              getattr(holder, "litellm_response_headers", None)):
        if h:
            headers = h
            break
    return picked(headers)


def picked(headers: Any) -> Optional[Mapping[str, str]]:
    """Of a response's ``headers``, the rate-limit ones and Retry-After, lower-cased (each value
    cut at 100 characters); ``None`` when there are none."""
    if not headers:
        return None
    try:
        items = list(headers.items())
    except (AttributeError, TypeError):
        return None
    out = {str(k).lower(): str(v)[:100] for k, v in items[:200]
           if str(k).lower().startswith("x-ratelimit-") or str(k).lower() == "retry-after"}
    return out or None


class Bucket:
    """One limit as this run keeps it: holds at most ``capacity``, refills at ``rate`` a second."""

    def __init__(self, capacity: float, rate: float, level: float, now: float) -> None:
        self.capacity = capacity
        self.rate = rate
        self.level = min(level, capacity)
        self.at = now

    def refill(self, now: float) -> float:
        if now > self.at:
            self.level = min(self.capacity, self.level + (now - self.at) * self.rate)
            self.at = now
        return self.level

    def wait(self, amount: float, now: float) -> float:
        """Seconds until it holds ``amount`` (at most its capacity)."""
        need = min(amount, self.capacity) - self.refill(now)
        return 0.0 if need <= 0 else need / self.rate if self.rate > 0 else REFUSED_WAIT


class RateLimits:
    """Requests and tokens a minute (see the module docstring): ``rpm`` and ``tpm`` as the user
    stated them (``None``: until the server says); ``cap``: the longest a 429 holds every send
    back (the backoff's maximum); ``clock``: monotonic seconds."""

    def __init__(self, rpm: Optional[float] = None, tpm: Optional[float] = None, cap: float = _MAX_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.cap = cap  # the longest a 429 holds the sends back (the backoff's maximum)
        now = clock()
        self.user = {"requests": rpm, "tokens": tpm}
        self.server: Dict[str, Optional[float]] = {"requests": None, "tokens": None}
        self.buckets: Dict[str, Bucket] = {}
        for kind, limit in self.user.items():
            if limit:
                # What the user states starts with a second's worth: the first minute stays
                # within it too.
                self.buckets[kind] = Bucket(limit / 60.0, limit / 60.0, limit / 60.0, now)
        self.blocked_until = 0.0
        self.refused = 0  # 429s
        self.sent = 0
        self.tokens_per_request: Optional[float] = None  # the running mean of the answers' usage
        self._said: Optional[str] = None

    @property
    def active(self) -> bool:
        return bool(self.buckets) or self.blocked_until > 0

    # -- before a send ----------------------------------------------------------------------

    async def wait(self, stop: Callable[[], bool] = lambda: False) -> None:
        """Return when a request may go out under every limit known (``stop()``: return at once)."""
        while not stop():
            now = self.clock()
            delay = max(0.0, self.blocked_until - now)
            tokens = self.tokens_per_request or 0.0
            for kind, bucket in self.buckets.items():
                delay = max(delay, bucket.wait(1.0 if kind == "requests" else tokens, now))
            if delay <= 0:
                break
            await asyncio.sleep(min(delay, 0.5))
        now = self.clock()
        self.sent += 1
        for kind, bucket in self.buckets.items():
            bucket.refill(now)
            bucket.level -= 1.0 if kind == "requests" else (self.tokens_per_request or 0.0)

    # -- what the server says ---------------------------------------------------------------

    def heard(self, headers: Optional[Mapping[str, str]], tokens: Optional[int] = None, in_flight: int = 0) -> None:
        """An answer came with ``headers`` (rate-limit ones, lower-cased) and cost ``tokens``
        (prompt and completion, as the provider counted them); ``in_flight``: the requests sent
        since, which the server's ``remaining`` does not count yet."""
        now = self.clock()
        if tokens is not None and tokens >= 0:
            guess = self.tokens_per_request
            if guess is not None and "tokens" in self.buckets:
                self.buckets["tokens"].level -= tokens - guess  # what it really cost
            self.tokens_per_request = float(tokens) if guess is None else 0.9 * guess + 0.1 * tokens
        if not headers:
            return
        for kind in ("requests", "tokens"):
            limit = _number(headers.get(f"x-ratelimit-limit-{kind}"))
            if limit is not None and limit >= 1 and limit != self.server[kind]:
                self.server[kind] = limit
                mine = self.user[kind]
                rate = min(limit, mine) if mine else limit
                old = self.buckets.get(kind)
                level = old.refill(now) if old is not None else rate * MARGIN
                self.buckets[kind] = Bucket(rate * MARGIN, rate * MARGIN / 60.0, level, now)
            remaining = _number(headers.get(f"x-ratelimit-remaining-{kind}"))
            bucket = self.buckets.get(kind)
            if remaining is not None and bucket is not None:
                # The server's word on what is left (the requests in flight were counted when
                # they arrived there).
                bucket.refill(now)
                bucket.level = min(bucket.level, remaining)

    def refused_now(self, retry_after: Optional[float], headers: Optional[Mapping[str, str]]) -> None:
        """A 429: nothing goes out until its ``Retry-After`` (or the reset the headers say) has
        passed, and the buckets start again from empty."""
        self.refused += 1
        self.heard(headers)
        now = self.clock()
        wait = retry_after if retry_after is not None and math.isfinite(retry_after) else None
        if wait is None and headers:
            resets = [seconds_of(headers[k]) for k in ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")
                      if k in headers]
            known = [r for r in resets if r is not None]
            wait = max(known) if known else None
        wait = min(self.cap, REFUSED_WAIT if wait is None else wait)
        self.blocked_until = max(self.blocked_until, now + wait)
        for bucket in self.buckets.values():
            bucket.refill(now)
            bucket.level = min(bucket.level, 0.0)
            bucket.at = max(bucket.at, now + wait)

    # -- what the run says ------------------------------------------------------------------

    def snapshot(self) -> Dict[str, Any]:
        """Plain JSON for the report: the limits kept, where they came from, the 429s."""
        return {"requests": self._limit("requests"), "tokens": self._limit("tokens"),
                "from_server": any(v is not None for v in self.server.values()), "refused": self.refused,
                "sent": self.sent}

    def _limit(self, kind: str) -> Optional[float]:
        mine, said = self.user[kind], self.server[kind]
        if mine and said:
            return min(mine, said)
        return mine or said

    def summary(self) -> Optional[str]:
        """One line on the limits the run kept and why, or ``None`` when it knew of none."""
        return rate_summary(self.snapshot())


def rate_summary(snap: Optional[Mapping[str, Any]]) -> Optional[str]:
    """The line of :meth:`RateLimits.summary` from its snapshot."""
    if not snap:
        return None
    parts = [f"{v:,.0f} {k}" for k in ("requests", "tokens") for v in (snap.get(k),) if isinstance(v, (int, float))]
    refused = int(snap.get("refused") or 0)
    if not parts and not refused:
        return None
    line = "rate limits: " + (" and ".join(parts) + " a minute" if parts else "none known")
    line += " (the server says so: x-ratelimit headers)" if snap.get("from_server") else " (--defan-rpm, --defan-tpm)"
    if refused:
        line += (f"; {refused} request{'s' if refused != 1 else ''} refused (429), each held back until the server's "
                 "Retry-After and the concurrency lowered")
    return line
