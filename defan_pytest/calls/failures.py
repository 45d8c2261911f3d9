"""What a failed call says about itself, whichever backend made it: its HTTP status, the wait a
provider asked for (``Retry-After``) and a one-line description without a secret.  What the
failure *means* (retry, stop the run, or an errored answer) is its backend's verdict
(:meth:`defan_pytest.calls.protocol.Backend.classify`).

>>> class RateLimited(Exception):
...     status_code = 429
...     headers = {"retry-after": "2"}
>>> status_of(RateLimited()), retry_after(RateLimited()), describe(RateLimited("slow down"))
(429, 2.0, 'RateLimited (HTTP 429): slow down')
"""
from __future__ import annotations

import asyncio
from typing import Optional, Sequence

from defan_pytest.calls.redaction import redact

__all__ = ["describe", "retry_after", "status_of"]


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
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def describe(exc: BaseException, secrets: Sequence[str] = ()) -> str:
    """A one-line, secret-free description of a failure."""
    status = status_of(exc)
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    head = type(exc).__name__ + (f" (HTTP {status})" if status else "")
    if isinstance(exc, asyncio.TimeoutError) and not msg:
        head = "TimeoutError"
    # Redacted before it is cut, so that a key across the cut cannot leave a readable part.
    return redact(f"{head}: {msg}" if msg else head, secrets)[:500]
