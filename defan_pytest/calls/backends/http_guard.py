"""The litellm path's guard on the wire: no redirect followed, no body read past the answer cap.

litellm sends through httpx clients it makes itself, many of them (the openai SDK's for OpenAI
and Azure, its own handler's for the other providers), and they follow redirects: httpx drops
``Authorization`` on the way to another host but forwards ``api-key``, ``x-api-key`` and every
custom header, and that host's answers would count as the model's.  They also read a body whole,
however long (an endless chunked one until the memory ran out).

:func:`install` wraps ``httpx.AsyncClient.send``, the one door every such request goes through,
once per process; the wrapper acts only inside :func:`guarded` (a context variable, which the
litellm caller sets around each call, and which the tasks litellm starts for a call inherit), and
is a plain pass-through elsewhere (the user's own httpx calls are untouched).  Inside, a request
is sent without following redirects: a 3xx is a
:class:`~defan_pytest.calls.protocol.RefusedRedirect` naming where it pointed, redacted; a body
is read (decompressed) up to the cap and no further: beyond it an
:class:`~defan_pytest.calls.protocol.AnswerTooLarge`.  The clients wrap what they get from the
door into their own failures; :func:`guard_failure` finds ours in the chain.
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Iterator, List, Optional

import httpx

from defan_pytest.calls.backends.litellm_model import redirect_refused
from defan_pytest.calls.protocol import AnswerTooLarge, RefusedRedirect
from defan_pytest.calls.sizes import too_large

__all__ = ["ERROR_BODY", "guard_failure", "guarded", "install"]

#: The most of an error response's body read (its message is in its first few hundred bytes).
ERROR_BODY = 64 * 1024
_LIMIT: "contextvars.ContextVar[Optional[int]]" = contextvars.ContextVar("defan_answer_limit", default=None)
_MARK = "_defan_guarded"


@contextlib.contextmanager
def guarded(limit: int) -> Iterator[None]:
    """The requests sent within (and in the tasks started within) are guarded, their bodies
    capped at ``limit`` bytes."""
    token = _LIMIT.set(int(limit))
    try:
        yield
    finally:
        _LIMIT.reset(token)


def install() -> None:
    """Wrap ``httpx.AsyncClient.send`` (once per process)."""
    original = httpx.AsyncClient.send
    if getattr(original, _MARK, False):
        return

    async def send(self: httpx.AsyncClient, request: httpx.Request, *, stream: bool = False,
                   **kwargs: Any) -> httpx.Response:
        limit = _LIMIT.get()
        if limit is None:
            return await original(self, request, stream=stream, **kwargs)
        kwargs["follow_redirects"] = False
        response = await original(self, request, stream=True, **kwargs)
        try:
            if 300 <= response.status_code < 400:
                raise redirect_refused(response.status_code, response.headers.get("location"))
            if not stream:
                await _read(response, limit)
        except BaseException:
            await response.aclose()
            raise
        return response

    setattr(send, _MARK, True)
    send.__doc__ = original.__doc__
    httpx.AsyncClient.send = send  # type: ignore[method-assign]


async def _read(response: httpx.Response, limit: int) -> None:
    """Read ``response``'s body as ``aread`` would, but no further than ``limit`` bytes: an
    answer beyond is :class:`AnswerTooLarge`, an error's body is cut (its message leads)."""
    if response.status_code >= 400:
        limit = min(limit, ERROR_BODY)
    chunks: List[bytes] = []
    n = 0
    async for chunk in response.aiter_bytes():
        n += len(chunk)
        if n > limit:
            if response.status_code < 400:
                raise too_large(limit, "more came; the rest was not read")
            chunks.append(chunk[: len(chunk) - (n - limit)])
            break
        chunks.append(chunk)
    await response.aclose()
    # What aread leaves: the body in memory, for the client's .json() and .text.
    response._content = b"".join(chunks)


def guard_failure(exc: BaseException) -> Optional[BaseException]:
    """Our failure (a refused redirect, an answer over the cap) at the root of ``exc``, however
    a client wrapped it (the openai SDK as a connection error, litellm as a server error)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, (RefusedRedirect, AnswerTooLarge)):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return None
