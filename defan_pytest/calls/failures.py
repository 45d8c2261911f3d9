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
>>> unreachable(ConnectionRefusedError(111, "Connection refused")), unreachable(RateLimited("Connection refused"))
('refused', None)
"""
from __future__ import annotations

import asyncio
import email.utils
import math
import re
import socket
import time
from datetime import timezone
from typing import Any, Iterator, Optional, Sequence, Set

from defan_pytest.calls.redaction import redact

__all__ = ["describe", "parse_retry_after", "retry_after", "status_of", "timed_out", "unreachable"]

# What the clients say when no server answered at all (aiohttp, httpx, the openai SDK, litellm,
# each wrapping the other's words): the connection refused, the host unknown, an address that
# is no http(s) URL.  Read in the message too: litellm keeps only the text of what it wraps.
_UNREACHABLE = (
    ("url", re.compile(r"NonHttpUrlClientError|InvalidUrlClientError|InvalidURL|UnsupportedProtocol"
                       r"|missing an 'http://' or 'https://' protocol|unsupported url scheme|No scheme", re.I)),
    ("dns", re.compile(r"ClientConnectorDNSError|Name or service not known|nodename nor servname|"
                       r"Temporary failure in name resolution|getaddrinfo failed|No address associated", re.I)),
    ("refused", re.compile(r"Connect call failed|Connection refused|Errno 111|Errno 61\b|WinError 10061|"
                           r"All connection attempts failed|actively refused", re.I)),
)
_URL_CLASSES = ("NonHttpUrlClientError", "InvalidUrlClientError", "InvalidURL", "UnsupportedProtocol")


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


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, what it was raised from or during, and the OS error a client kept on it
    (aiohttp's ``os_error``): at most 8 deep, each once."""
    seen: Set[int] = set()
    todo = [exc]
    while todo and len(seen) < 8:
        e = todo.pop(0)
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo.extend(x for x in (e.__cause__, e.__context__, getattr(e, "os_error", None))
                    if isinstance(x, BaseException))


def unreachable(exc: BaseException) -> Optional[str]:
    """Why no server answered a call at all, or ``None`` (one did, with a status; or the failure
    is of another kind): ``"refused"`` (nothing listens at the address), ``"dns"`` (the host
    name is unknown) or ``"url"`` (the address is no ``http://`` or ``https://`` URL)."""
    # The client's own failure, wherever a wrapper put it (litellm wraps a refused connection
    # in a "500" of its own, which no server sent).
    for e in _chain(exc):
        if type(e).__name__ in _URL_CLASSES:
            return "url"
        if isinstance(e, socket.gaierror) or type(e).__name__ == "ClientConnectorDNSError":
            return "dns"
        if isinstance(e, ConnectionRefusedError):
            return "refused"
    # Else the words, of the failures that carry no status: a server that answered (a proxy's
    # 502 saying "connection refused" upstream) is not unreachable.
    text = " ".join(f"{type(e).__name__}: {e}" for e in _chain(exc) if status_of(e) is None)[:4000]
    for kind, pattern in _UNREACHABLE:
        if pattern.search(text):
            return kind
    return None


_TIMEOUT_NAMES = ("Timeout", "TimeoutError", "ReadTimeout", "ServerTimeoutError", "APITimeoutError",
                  "ReadTimeoutError", "TimeoutException", "ConnectTimeout", "PoolTimeout")


def timed_out(exc: BaseException) -> bool:
    """Whether a call failed for want of an answer within its timeout (whichever client said so:
    asyncio, aiohttp, httpx, the openai SDK, litellm), not for an answer the server sent.

    >>> timed_out(asyncio.TimeoutError()), timed_out(ConnectionResetError()), timed_out(TimeoutError())
    (True, False, True)
    """
    for e in _chain(exc):
        if isinstance(e, (asyncio.TimeoutError, TimeoutError)) or type(e).__name__ in _TIMEOUT_NAMES:
            return status_of(e) in (None, 408)
    return False
