"""What a failed call says about itself, whichever backend made it: its HTTP status, the wait a
provider asked for (``Retry-After``) and a one-line description without a secret.  What the
failure *means* (retry, stop the run, or an errored answer) is its backend's verdict
(:meth:`defan_pytest.calls.protocol.Backend.classify`).

>>> class RateLimited(Exception):
...     status_code = 429
...     headers = {"retry-after": "2"}
>>> status_of(RateLimited()), retry_after(RateLimited()), describe(RateLimited("slow down"))
(429, 2.0, 'RateLimited (HTTP 429): slow down')
>>> [parse_retry_after(v) for v in ("1e9", "-3", "nan", "soon", "Wed, 21 Oct 2015 07:28:00 GMT")]
[1000000000.0, 0.0, None, None, 0.0]
"""
from __future__ import annotations

import asyncio
import email.utils
import math
import time
from datetime import timezone
from typing import Any, Optional, Sequence

from defan_pytest.calls.redaction import redact

__all__ = ["describe", "parse_retry_after", "retry_after", "status_of"]


def status_of(exc: BaseException) -> Optional[int]:
    """The HTTP status a failure carries (``status_code``, ``status`` or ``code``), if any."""
    for attr in ("status_code", "status", "code"):
        v = getattr(exc, attr, None)
        if isinstance(v, int) and 100 <= v < 600:
            return v
    return None


def retry_after(exc: BaseException) -> Optional[float]:
    """Seconds the provider asked us to wait (``Retry-After``), if it said so: read off the
    failure's response, the failure itself, or the headers litellm keeps on it."""
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
    return None if value is None else parse_retry_after(value)


def parse_retry_after(value: Any, now: Optional[float] = None) -> Optional[float]:
    """The seconds a ``Retry-After`` value asks for, read as a hostile server may write it: a
    number of seconds (a negative one is 0; ``inf`` and huge ones are kept, for the backoff to
    cap and say), or an HTTP-date (the seconds until it, 0 if past); ``None`` for anything else
    (``nan``, words, a date that cannot be).  ``now``: the current ``time.time()``."""
    text = str(value).strip()
    if len(text) > 1000:  # no server means anything by that
        return None
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        seconds = when.timestamp() - (time.time() if now is None else now)
    if math.isnan(seconds):
        return None
    return max(0.0, seconds)


def describe(exc: BaseException, secrets: Sequence[str] = ()) -> str:
    """A one-line, secret-free description of a failure."""
    status = status_of(exc)
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    head = type(exc).__name__ + (f" (HTTP {status})" if status else "")
    if isinstance(exc, asyncio.TimeoutError) and not msg:
        head = "TimeoutError"
    # Redacted before it is cut, so that a key across the cut cannot leave a readable part.
    return redact(f"{head}: {msg}" if msg else head, secrets)[:500]
