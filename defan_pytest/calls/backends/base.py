"""What the model backends share: :class:`BaseBackend` (the defaults a backend inherits) and
the rules by which a failure that is not a backend's own type is judged.

A failure is judged by what it says about itself: its HTTP status, its class name as the
common Python clients name their failures, and a client's refusal to send without a key.

>>> class RateLimitError(Exception):
...     status_code = 429
>>> judge(RateLimitError(), CLIENT_FATAL_NAMES, CLIENT_RETRY_NAMES)
'retry'
>>> judge(ValueError("my RAG broke"), CLIENT_FATAL_NAMES, CLIENT_RETRY_NAMES)
'fail'
"""
from __future__ import annotations

import asyncio
import re
from typing import Any, Optional, Sequence, Tuple

from defan_pytest.calls.failures import status_of
from defan_pytest.calls.protocol import Caller, Verdict

__all__ = [
    "BaseBackend",
    "CLIENT_FATAL_NAMES",
    "CLIENT_RETRY_NAMES",
    "judge",
    "says_credentials_missing",
    "verdict_of_status",
]

#: Class names (parts of them) of failures no retry can fix: the openai SDK's names, which
#: litellm, the anthropic SDK and the lean OpenAI-protocol client copy.
CLIENT_FATAL_NAMES: Tuple[str, ...] = ("Authentication", "PermissionDenied", "NotFound")
#: Class names (parts of them) of transient failures: the openai SDK's (and litellm's) timeouts,
#: rate limits, outages and dropped connections, then aiohttp's and httpx's connection errors.
CLIENT_RETRY_NAMES: Tuple[str, ...] = (
    "Timeout", "RateLimit", "APIConnection", "ServiceUnavailable", "InternalServer",
    "ServerDisconnected", "ClientConnector", "ClientOSError", "RemoteProtocol", "ReadError", "ConnectError",
    "Connection",
)
# A client that refuses to send without a key says so in its message; litellm wraps it as a
# 500, which would be retried on every prompt (4 times each) before the run gave up.
_MISSING_CREDENTIALS = re.compile(
    r"(?i)missing credentials|api[_ ]?key client option must be set|no api[_ ]?key (was )?(provided|found|set)"
    r"|api[_ ]?key (is )?(missing|required|not (set|found|provided))"
)


def says_credentials_missing(exc: BaseException) -> bool:
    """Whether a failure's message says a key is missing (whatever its status)."""
    return bool(_MISSING_CREDENTIALS.search(str(exc)))


def verdict_of_status(status: Optional[int]) -> Optional[Verdict]:
    """What an HTTP status means: 401, 403 and 404 are fatal (a bad key, a model that is not
    there), 408, 409, 425, 429 and 5xx transient; ``None`` for any other (or no) status."""
    if status in (401, 403, 404):
        return "fatal"
    if status in (408, 409, 425, 429) or (status is not None and status >= 500):
        return "retry"
    return None


def judge(exc: BaseException, fatal_names: Sequence[str], retry_names: Sequence[str]) -> Verdict:
    """A failure judged by what it says: a fatal status or class name, then a message about a
    missing key, are fatal; Python's timeouts and connection errors, a transient status or
    class name are retried; anything else is this prompt's error."""
    name = type(exc).__name__
    by_status = verdict_of_status(status_of(exc))
    if by_status == "fatal" or any(n in name for n in fatal_names):
        return "fatal"
    if says_credentials_missing(exc):
        return "fatal"
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError, ConnectionError)):
        return "retry"
    if by_status == "retry" or any(n in name for n in retry_names):
        return "retry"
    return "fail"


class BaseBackend:
    """The defaults of a :class:`~defan_pytest.calls.protocol.Backend`: it knows no model name
    of its own (``--defan-model`` must then be a ``[models.<name>]`` table whose ``model`` it
    serves) and judges failures by what they say (:func:`judge` with the common clients'
    names).  A backend sets :attr:`name` and writes :meth:`serves` and :meth:`caller`."""

    name: str = ""

    def knows(self, name: str) -> bool:
        return False

    def serves(self, model: Any, call_path: str, timeout: float) -> Tuple[bool, str]:  # pragma: no cover
        raise NotImplementedError

    def caller(self, model: Any, timeout: float) -> Caller:  # pragma: no cover - interface
        raise NotImplementedError

    def classify(self, exc: BaseException) -> Verdict:
        return judge(exc, CLIENT_FATAL_NAMES, CLIENT_RETRY_NAMES)

    def __repr__(self) -> str:
        return f"<model backend {self.name!r}>"
