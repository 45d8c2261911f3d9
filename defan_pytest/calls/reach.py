"""Whether the model's server can be reached at all, judged call by call (:class:`Reach`): what
cannot work stops the run at its first requests, with one message naming the server's URL
(redacted) and the fix, instead of every prompt being retried and failed in turn.

* Before any answer of the run: a refused connection (nothing listens at the address), a host
  name that does not resolve, an address that is no ``http(s)://`` URL, or a 404 of the endpoint
  itself (not the 404 of a model the server does not have, which already stops the run with the
  server's words) stop the run at once: every other call would fail the same way.
* After answers came: a refused connection (or a host name that does not resolve) may be the
  server restarting (a model reloading, a crash and a supervisor).  Such calls are retried as any dropped connection, with the
  backoff; once the server has refused every connection for :data:`DOWN_SECONDS` with no
  answer in between, the run stops, its answers kept in the cache for a resumed run.

Only a model string's calls are judged so (their server is known); a registered callable's
failures are its own (its application may reach many servers).
"""
from __future__ import annotations

import re
import time
from typing import Any, Callable, Optional

from defan_pytest.calls.failures import status_of, unreachable
from defan_pytest.calls.local import server_url
from defan_pytest.calls.protocol import Verdict
from defan_pytest.calls.redaction import redact_url

__all__ = ["DOWN_SECONDS", "Reach", "endpoint_of"]

#: Seconds a server that answered before may refuse every connection before the run stops.
DOWN_SECONDS = 30.0

# A 404 about the model (OpenAI, vLLM: "The model `x` does not exist"; Ollama: 'model "x" not
# found'), not about the path the request went to.
_MODEL_404 = re.compile(r"model", re.I)
_EXAMPLE = "--defan-model-arg api_base=http://127.0.0.1:8080/v1"


def endpoint_of(caller: Any) -> Optional[str]:
    """The URL a caller's requests go to, redacted (no user info, no query value), or ``None``
    for a caller whose server is not known (a registered callable)."""
    url = getattr(getattr(caller, "route", None), "url", None) or server_url(getattr(caller, "model", None))
    return redact_url(str(url).strip())[:200] if url else None


class Reach:
    """What the calls of one pool say about the server's reach (see the module docstring).

    ``caller``: the pool's caller (its URL is named in the messages); ``clock``: monotonic
    seconds (a test's own)."""

    def __init__(self, caller: Any, clock: Callable[[], float] = time.monotonic,
                 down_seconds: float = DOWN_SECONDS) -> None:
        self.url = endpoint_of(caller)
        self.clock = clock
        self.down_seconds = down_seconds
        self.answers = 0
        self._down_since: Optional[float] = None

    def answered(self) -> None:
        """A call was answered: the server is there."""
        self.answers += 1
        self._down_since = None

    def judge(self, exc: BaseException, verdict: Verdict) -> Verdict:
        """The verdict on a failed call, given its backend's (``verdict``): ``fatal`` where no
        call can work (see the module docstring), else the backend's."""
        if self.url is None:
            return verdict
        why = unreachable(exc)
        if why is None:
            return verdict
        if why == "url" or not self.answers:
            return "fatal"
        now = self.clock()
        if self._down_since is None:
            self._down_since = now
        return "fatal" if now - self._down_since >= self.down_seconds else "retry"

    def why(self, exc: BaseException) -> Optional[str]:
        """The message that stops the run on ``exc`` (judged ``fatal``) when it is about the
        server's reach, naming its URL and the fix; ``None`` for any other fatal failure."""
        if self.url is None:
            return None
        where, why = self.url, unreachable(exc)
        if why == "url":
            if re.match(r"(?i)https?://", where):
                # The scheme is there: the client refused the rest (a short host as 127.1, a port
                # out of range): say so, with what the client said.
                said = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
                return (f"the model's address {where!r} is an http URL the HTTP client cannot use "
                        f"({redact_url(said)}) -- stopping: write its host and port in full, e.g. {_EXAMPLE}")
            return (f"the model's address {where!r} is not an http:// or https:// URL -- stopping: give api_base "
                    f"with its scheme, e.g. {_EXAMPLE}")
        if why in ("refused", "dns") and self.answers:
            return (f"the model server {where} could not be reached for {self.down_seconds:g} s "
                    f"({'connection refused' if why == 'refused' else 'its host name did not resolve'}), after "
                    f"{self.answers:,} answers -- stopping; every answer received is kept in the cache: run the "
                    "same command again to resume once the server is back")
        if why == "dns":
            return (f"the host of the model server {where} is not known (DNS) -- stopping before any answer: "
                    "check the host name in api_base")
        if why == "refused":
            return (f"nothing answers at {where} (connection refused) -- stopping before any answer: start the "
                    f"model server (llama-server, ollama serve, vllm serve ...), or give its address: {_EXAMPLE}")
        if status_of(exc) == 404 and not _MODEL_404.search(str(exc)):
            return (f"the model server answered 404 Not Found for {where} -- stopping: the path is not its "
                    "chat-completions endpoint; check api_base (an OpenAI-protocol server's usually ends in "
                    f"/v1: {_EXAMPLE})")
        return None
