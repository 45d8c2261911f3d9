"""What the call pool (:mod:`defan_pytest.calls.pool`), the model backends
(:mod:`defan_pytest.calls.backends`) and the cache share: a prompt, a response, a caller's reply,
the :class:`Caller` and :class:`Backend` interfaces, the verdict on a failure and the failures
every layer knows.  Plain Python, nothing of the package imported but the base layer's finish
reason (:mod:`defan_pytest.records.finish`): the pool and the backends import this module,
neither the other.
"""
from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Dict, Literal, Mapping, NamedTuple, Optional, Protocol, Tuple, Union

from defan_pytest.records.finish import finish_reason_of, is_finish_reason

#: Seconds one model call may take.
DEFAULT_TIMEOUT = 60.0
#: The longest wait before a retry (``--defan-max-backoff``): a larger ``Retry-After`` is capped.
DEFAULT_MAX_BACKOFF = 60.0
#: Requests in flight at once.
DEFAULT_CONCURRENCY = 16
#: Retries of a call after 429, 5xx, a timeout or a dropped connection.
DEFAULT_RETRIES = 4
#: The most bytes of one answer (``--defan-max-answer``): of a response read from the wire, of
#: the text a callable returns.  DefAn asks for one fact; the scorer reads a megabyte whole.
DEFAULT_MAX_ANSWER = 1 << 20

#: How calls reach a litellm model (``--defan-call-path``): ``auto`` takes the lean
#: OpenAI-protocol client where the provider speaks that protocol, litellm elsewhere
#: (:func:`defan_pytest.calls.backends.choose`).
CALL_PATHS: Tuple[str, ...] = ("auto", "litellm", "openai")

__all__ = [
    "AnswerTooLarge",
    "BadAnswer",
    "Backend",
    "Caller",
    "EmptyAnswer",
    "FatalCallError",
    "Prompt",
    "RefusedRedirect",
    "Reply",
    "Response",
    "Verdict",
    "answer_reply",
    "answer_text",
    "finish_reason_of",
]

#: What a failed call means (:meth:`Backend.classify`): ``"retry"`` (a transient failure: ask
#: again after a backoff), ``"fatal"`` (every call would fail the same way: stop the run) or
#: ``"fail"`` (this prompt's answer is an error).
Verdict = Literal["retry", "fatal", "fail"]


@dataclass(frozen=True)
class Prompt:
    """One prompt of the run: ``key`` identifies it (the row id), ``text`` is sent; ``repeat``
    is which ask of the same prompt it is (``--defan-repeat``: 0 is the run's own, 1.. the
    extra ones)."""

    key: str
    text: str
    repeat: int = 0

    @property
    def stored(self) -> str:
        """What the response store keys this ask by: the text for the run's own ask (the key
        every cache had before repeats), the text and the repeat's index for an extra one, so
        that each repeat is an answer of its own, cached and shared by the workers like any."""
        return self.text if self.repeat == 0 else f"{self.text}\0repeat\0{self.repeat}"


@dataclass(frozen=True)
class Response:
    """What came back for one prompt: ``text``, or ``error`` when the call failed for good."""

    text: Optional[str]
    error: Optional[str] = None
    cached: bool = False
    attempts: int = 1
    seconds: float = 0.0
    #: ``"call"`` (this process asked the model), ``"cache"`` (a stored answer) or ``"peer"``
    #: (another process of the same run had it).
    via: str = "call"
    #: Where the answer came from, whichever process fetched it: ``"model"`` or ``"cache"``.
    answered_by: str = "model"
    #: What was changed in the answer on its way in (invalid code points, a credential).
    note: Optional[str] = None
    #: Tokens the provider counted for the request that answered (``None``: not reported, as
    #: for a registered callable), kept with a cached answer.
    prompt_tokens: Optional[int] = None
    completion_tokens: Optional[int] = None
    #: Seconds the request that answered took (the last attempt; kept with a cached answer).
    latency: Optional[float] = None
    #: Why the model stopped, as the provider said it (``stop``, ``length``: cut by the token
    #: limit, ``content_filter``, ...), ``None`` when unknown (a callable that returned a bare
    #: str, an answer cached by a version that did not keep it); kept with a cached answer.
    finish_reason: Optional[str] = None


class Reply(NamedTuple):
    """A caller's answer with the tokens the provider counted and its finish reason (``None``
    when it did not say); ``server_seconds``: how long the server says it worked on the answer,
    its queue excluded (llama.cpp's ``timings``; ``None`` when it does not say)."""

    text: str
    prompt_tokens: Optional[int] = None
    completion_tokens: Optional[int] = None
    finish_reason: Optional[str] = None
    server_seconds: Optional[float] = None
    #: The server's rate-limit headers (``x-ratelimit-*``, lower-cased), when it sent any.
    limits: Optional[Mapping[str, str]] = None


class FatalCallError(RuntimeError):
    """A failure no retry can fix (bad or missing credentials, unknown model): the run stops."""


class RefusedRedirect(FatalCallError):
    """A server answered with a redirect (3xx): never followed, since a client that follows
    takes the request's credentials (``api-key``, ``x-api-key``, custom headers) to wherever it
    points, and counts that host's answers as the model's.  Every call would get it: the run
    stops."""


class AnswerTooLarge(RuntimeError):
    """An answer over the size cap (``--defan-max-answer``): stopped where the cap was reached,
    never kept; an errored response, not retried (the model would say it again)."""


class BadAnswer(TypeError):
    """A model returned something other than text: an errored response, never scored."""


class EmptyAnswer(RuntimeError):
    """A 200 response without content."""


def answer_text(out: Any, name: str) -> str:
    """A model's return value as the answer text, or :class:`BadAnswer`: ``bytes``, a dict or a
    number scored as its ``str()`` (and cached) would be a silent wrong result."""
    if isinstance(out, str):
        return str(out)  # a str subclass becomes a plain str
    if out is None:
        raise BadAnswer(f"model {name!r} returned None, not the answer text")
    raise BadAnswer(f"model {name!r} returned {type(out).__name__}, not str: return the answer text")


def answer_reply(out: Any, name: str) -> Reply:
    """A registered callable's return value as a :class:`Reply`: a ``str`` (the answer, its
    finish reason unknown), or a mapping with ``text`` (and optionally ``finish_reason``), or
    an object with both attributes ``text`` and ``finish_reason``
    (``"stop"``, ``"length"``, ... or ``None``; ``prompt_tokens`` and ``completion_tokens``
    read too when present), such as ``{"text": "...", "finish_reason": "length"}``.  Anything
    else is :class:`BadAnswer`."""
    if isinstance(out, str) or out is None:
        return Reply(answer_text(out, name))
    if isinstance(out, Mapping):
        if "text" not in out:
            return Reply(answer_text(out, name))  # "returned dict, not str", as any other type
        get = out.get
    elif hasattr(out, "text") and hasattr(out, "finish_reason"):
        # Both attributes, not ``text`` alone: an HTTP client's response object has a ``text``
        # (the raw body), which must stay an error, not become the answer.
        def get(key: str, default: Any = None) -> Any:
            return getattr(out, key, default)
    else:
        return Reply(answer_text(out, name))
    reason = get("finish_reason")
    if reason is not None and not is_finish_reason(reason):
        raise BadAnswer(f"model {name!r} returned finish_reason {_short(reason)}: "
                        "expected a short word such as 'stop' or 'length', or None")
    return Reply(answer_text(get("text"), name), _tokens(get("prompt_tokens")), _tokens(get("completion_tokens")),
                 finish_reason_of(reason))


def _short(value: Any) -> str:
    """``repr`` of a value, cut to 60 characters (for a message)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _tokens(value: Any) -> Optional[int]:
    """A token count a callable gave: a non-negative int, else unknown."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class Caller:
    """Sends one prompt and returns the answer text, or a :class:`Reply` with its token counts
    and finish reason (raises on failure).  Made by its :attr:`backend` (:meth:`Backend.caller`)."""

    #: The backend that made this caller, and judges its failures (:meth:`Backend.classify`).
    backend: "Backend"
    #: Parameters that make up the cache key (besides the prompt).
    identity: Dict[str, Any] = {}
    #: True when the caller applies the per-call timeout itself (the pool then adds no timer).
    enforces_timeout: bool = False
    #: True when each call must run in a task of its own (litellm keeps per-call state in
    #: context variables, which pile up in a long-lived worker's context).
    task_per_call: bool = False
    #: The model's name in messages.
    name: str = "model"
    #: The most bytes of one answer the caller reads (``--defan-max-answer``; the pool sets it):
    #: a caller that reads from the wire stops there, so that an endless body cannot exhaust
    #: the memory.
    max_answer: int = DEFAULT_MAX_ANSWER

    async def __call__(self, prompt: str) -> Union[str, Reply]:  # pragma: no cover - interface
        raise NotImplementedError

    def prepare(self) -> None:
        """Get ready for the first real call (in a thread of its own, once; a run answered
        from the cache never calls it): raise :class:`FatalCallError` when no call can work."""

    def stuck(self) -> int:
        """Calls abandoned at their timeout that are still running."""
        return 0

    def close(self) -> None:
        """Release resources."""

    async def aclose(self) -> None:
        """Release what lives on the pool's event loop (called on that loop, at its end)."""


class Backend(Protocol):
    """A way of calling models: a user's callable, litellm, the lean OpenAI-protocol client, or
    one a plugin adds (:data:`defan_pytest.calls.backends.BACKENDS`).

    ``model`` is what :func:`defan_pytest.calls.models.resolve` made of ``--defan-model`` (a
    :class:`~defan_pytest.calls.models.CallableModel` or a
    :class:`~defan_pytest.calls.models.LitellmModel`); ``call_path`` is ``--defan-call-path``
    (one of :data:`CALL_PATHS`).
    """

    #: The backend's name: its registry key, and the run's ``call_path`` in reports.
    name: str

    def knows(self, name: str) -> bool:
        """Whether ``--defan-model=name`` (neither a registered callable nor a configured
        table) names a model this backend can call."""
        ...

    def serves(self, model: Any, call_path: str, timeout: float) -> Tuple[bool, str]:
        """``(True, why)`` when this backend calls ``model``, ``(False, why not)`` otherwise.
        An empty ``why`` with ``True``: no reason of its own (a general path), the reason is
        why the backends asked before it declined.  Raises ``ValueError`` when ``call_path``
        demands this backend and it cannot call ``model``."""
        ...

    def caller(self, model: Any, timeout: float) -> Caller:
        """The :class:`Caller` of ``model`` (``timeout``: seconds a call may take)."""
        ...

    def classify(self, exc: BaseException) -> Verdict:
        """What a failure of one of this backend's calls means (:data:`Verdict`)."""
        ...


class Waited(Protocol):
    """What another process of the run made of a prompt it claimed
    (:class:`defan_pytest.cache.store.Waited`)."""

    @property
    def text(self) -> Optional[str]: ...

    @property
    def error(self) -> Optional[str]: ...

    @property
    def note(self) -> Optional[str]: ...

    @property
    def answered_by(self) -> str: ...

    @property
    def attempts(self) -> int: ...

    @property
    def prompt_tokens(self) -> Optional[int]: ...

    @property
    def completion_tokens(self) -> Optional[int]: ...

    @property
    def latency(self) -> Optional[float]: ...

    @property
    def finish_reason(self) -> Optional[str]: ...


class Entry(Protocol):
    """A stored answer (:class:`defan_pytest.cache.store.Entry`)."""

    @property
    def answer(self) -> str: ...

    @property
    def note(self) -> Optional[str]: ...

    @property
    def prompt_tokens(self) -> Optional[int]: ...

    @property
    def completion_tokens(self) -> Optional[int]: ...

    @property
    def latency(self) -> Optional[float]: ...

    @property
    def finish_reason(self) -> Optional[str]: ...


class ResponseStore(Protocol):
    """Where a pool keeps answers (:class:`defan_pytest.cache.store.ResponseCache`): a cache across
    runs, and the claims by which processes of one run split the prompts between them."""

    def lookup_entry(self, prompt: str) -> Optional[Entry]:
        """The stored answer to ``prompt`` with its note and usage, if any."""
        ...

    async def save(self, prompt: str, answer: str, note: Optional[str] = None, attempts: int = 1,
                   prompt_tokens: Optional[int] = None, completion_tokens: Optional[int] = None,
                   latency: Optional[float] = None, finish_reason: Optional[str] = None) -> None:
        """Store an answer with its usage and finish reason (and mark the prompt done for the run); returns once
        committed."""
        ...

    def flush(self) -> None:
        """Return once every answer stored so far is on disk."""
        ...

    def claim(self, prompt: str) -> bool:
        """Take ``prompt`` for this process; False when another process has it."""
        ...

    def mark_done(self, prompt: str) -> None:
        """The prompt was answered (from the cache)."""
        ...

    def release(self, prompt: str, error: str, attempts: int = 1) -> None:
        """The prompt failed with ``error``: other processes waiting on it get the error."""
        ...

    async def wait(self, prompt: str, stop: Optional[threading.Event] = None) -> Waited:
        """Wait for the process that claimed ``prompt``: its answer, or its error."""
        ...
