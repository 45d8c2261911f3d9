"""The lean OpenAI-protocol backend, for providers that speak OpenAI's chat-completions protocol
(``openai/...`` and bare OpenAI model names, any ``api_base``, ``custom_openai``, ``hosted_vllm``
(vLLM), ``lm_studio``, ``llamafile``, ``azure`` with a key and an API version): one keep-alive
``aiohttp`` session per pool, a JSON body, a JSON answer -- about 0.2 ms of client CPU per call
where litellm spends 4 ms and the openai SDK 1.7 ms (``bench/call_speed.py``).  It never imports
litellm, and takes a model only where it sends exactly what litellm would
(:func:`~defan_pytest.calls.backends.openai_route.lean_route`).

Its failures are its own classes, named as the openai SDK and litellm name theirs (so that both
paths of a model are reported and grouped alike), each with its verdict.

A hostile server gets nothing it should not: a redirect is never followed (it would take the
request's ``api-key``, ``x-api-key`` or custom auth header to another host, whose answers would
count as the model's) but stops the run naming where it pointed, redacted; a body is read up to
the answer cap (``--defan-max-answer``) and no further, so an endless one ends there.
"""
from __future__ import annotations

import asyncio
import json
from typing import Any, Dict, Optional, Tuple, Type

from defan_pytest.calls.backends.base import BaseBackend, says_credentials_missing, verdict_of_status
from defan_pytest.calls.backends.litellm_model import (
    call_params,
    content_text,
    model_identity,
    no_credentials,
    redirect_refused,
    reported_tokens,
)
from defan_pytest.calls.backends.openai_route import lean_route
from defan_pytest.calls.capacity import server_seconds
from defan_pytest.calls.ratelimits import picked
from defan_pytest.calls.models import LitellmModel
from defan_pytest.calls.protocol import Caller, EmptyAnswer, FatalCallError, Reply, Verdict, finish_reason_of
from defan_pytest.calls.redaction import known_secrets
from defan_pytest.calls.sizes import too_large

__all__ = [
    "APIConnectionError",
    "AuthenticationError",
    "BadRequestError",
    "InternalServerError",
    "NotFoundError",
    "OPENAI",
    "OpenAIBackend",
    "OpenAICaller",
    "PermissionDeniedError",
    "ProviderError",
    "RateLimitError",
    "Timeout",
    "status_error",
]


class ProviderError(Exception):
    """A failed request of the lean path; ``status_code`` and the response's ``headers`` (for
    ``Retry-After``), where :func:`defan_pytest.calls.failures.retry_after` reads them."""

    def __init__(self, message: str, status_code: Optional[int] = None, headers: Any = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.headers = headers


# Named as the openai SDK and litellm name them, so that both paths are reported and grouped
# (``error_kind``) alike.
class BadRequestError(ProviderError):
    pass


class AuthenticationError(ProviderError):
    pass


class PermissionDeniedError(ProviderError):
    pass


class NotFoundError(ProviderError):
    pass


class RateLimitError(ProviderError):
    pass


class InternalServerError(ProviderError):
    pass


class APIConnectionError(ProviderError):
    pass


class Timeout(ProviderError):
    pass


#: The most of an error response's body read (its message is in the first few hundred bytes).
ERROR_BODY = 64 * 1024

_BY_STATUS = {400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError, 404: NotFoundError,
              429: RateLimitError}
_VERDICTS: Dict[Type[ProviderError], Verdict] = {
    BadRequestError: "fail",
    AuthenticationError: "fatal", PermissionDeniedError: "fatal", NotFoundError: "fatal",  # every call would
    RateLimitError: "retry", InternalServerError: "retry", APIConnectionError: "retry", Timeout: "retry",
}


def status_error(status: int, raw: bytes, headers: Any) -> ProviderError:
    """The failure of an HTTP error response: the class of its status, the server's message."""
    message = ""
    try:
        data = json.loads(raw)
        err = data.get("error") if isinstance(data, dict) else None
        if isinstance(err, dict):
            message = str(err.get("message") or "")
        elif isinstance(err, str):
            message = err
        elif isinstance(data, dict) and data.get("message"):
            message = str(data["message"])
    except ValueError:
        pass
    if not message:
        message = raw[:300].decode("utf-8", "replace").strip() or f"HTTP {status}"
    cls = _BY_STATUS.get(status) or (InternalServerError if status >= 500 else ProviderError)
    return cls(message, status_code=status, headers=headers)


async def read_capped(resp: Any, limit: int, strict: bool = True) -> bytes:
    """The body of an aiohttp response, read up to ``limit`` bytes (decompressed) and no
    further: beyond it :class:`~defan_pytest.calls.protocol.AnswerTooLarge` (``strict``), or the
    first ``limit`` bytes (an error's body, whose message is at its start)."""
    length = resp.content_length
    if length is not None and length > limit and strict:
        raise too_large(limit, f"the server announced {length:,} bytes")
    if length is not None and length <= limit and resp.headers.get("Content-Encoding", "identity") == "identity":
        return bytes(await resp.read())  # exactly the announced bytes, in one read
    chunks, n = [], 0
    while n <= limit:
        chunk = await resp.content.read(limit + 1 - n)
        if not chunk:
            break
        chunks.append(chunk)
        n += len(chunk)
    if n > limit:
        if strict:
            raise too_large(limit, "more came; the rest was not read")
        return b"".join(chunks)[:limit]
    return b"".join(chunks)


class OpenAIBackend(BaseBackend):
    """Models whose request the lean client sends as litellm would, unless
    ``--defan-call-path=litellm``."""

    name = "openai"

    def serves(self, model: Any, call_path: str, timeout: float) -> Tuple[bool, str]:
        if not isinstance(model, LitellmModel):
            return False, "not a litellm model string"
        if call_path == "litellm":
            return False, "--defan-call-path=litellm"
        route, why = lean_route(model, call_params(model, timeout))
        if route is not None:
            return True, "OpenAI protocol"
        if call_path == "openai":
            raise ValueError(f"--defan-call-path=openai: {model.model!r} cannot take the OpenAI-protocol path: {why}")
        return False, why

    def caller(self, model: Any, timeout: float) -> Caller:
        return OpenAICaller(model, timeout=timeout)

    def classify(self, exc: BaseException) -> Verdict:
        """A failed request by its class (a server that refuses for want of a key, whatever
        its status, is fatal); anything else the caller raised (an empty or non-text answer)
        is the prompt's error, but a connection Python itself reports dropped is retried."""
        if isinstance(exc, ProviderError):
            if says_credentials_missing(exc):
                return "fatal"
            return _VERDICTS.get(type(exc)) or verdict_of_status(exc.status_code) or "fail"
        if isinstance(exc, (asyncio.TimeoutError, TimeoutError, ConnectionError)):
            return "retry"
        return "fail"


#: The lean OpenAI-protocol backend.
OPENAI = OpenAIBackend()


class OpenAICaller(Caller):
    """The lean path: one OpenAI chat-completions request per call over a keep-alive
    ``aiohttp`` session (made on the pool's loop at the first call, closed at its end)."""

    backend = OPENAI
    enforces_timeout = True  # aiohttp's total timeout

    def __init__(self, model: LitellmModel, timeout: float) -> None:
        self.model = model
        self.name = model.model
        self.params = call_params(model, timeout)
        self.secrets = known_secrets(self.params)
        self.identity = model_identity(model, self.params, self.secrets)
        route, why = lean_route(model, self.params)
        if route is None:
            raise ValueError(f"{model.model!r} cannot take the OpenAI-protocol path: {why}")
        self.route = route
        self.timeout = float(self.params.get("timeout") or timeout)
        self._session: Any = None
        self._aiohttp: Any = None
        self._proxy: Tuple[Any, Any] = (None, None)
        self._system = [{"role": "system", "content": model.system_prompt}] if model.system_prompt else []

    def prepare(self) -> None:
        if self.route.missing_key:
            raise FatalCallError(no_credentials(self.model.model, [self.route.missing_key]))
        import aiohttp  # off the loop, once: a run answered from the cache never imports it

        self._aiohttp = aiohttp

    def _open(self) -> Any:
        aiohttp = self._aiohttp
        if aiohttp is None:
            import aiohttp

            self._aiohttp = aiohttp
        # Keep-alive connections, one per call slot in flight.  The proxy from the environment
        # (HTTPS_PROXY, NO_PROXY), as litellm's own transport honours it -- looked up once
        # here: aiohttp's trust_env looks it up (and ~/.netrc) in a thread at every request,
        # two thread hops that cost more CPU than the request itself.
        from aiohttp.helpers import get_env_proxy_for_url
        from yarl import URL

        try:
            self._proxy = get_env_proxy_for_url(URL(self.route.url))
        except LookupError:
            self._proxy = (None, None)
        # No limit of the connector's own: the pool bounds the requests in flight (a lower
        # limit here would be a hidden second one).
        connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
        self._session = aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=self.timeout), trust_env=False,
            headers=dict(self.route.headers), json_serialize=json.dumps,
        )
        return self._session

    async def __call__(self, prompt: str) -> Reply:
        session = self._session or self._open()
        body = dict(self.route.body)
        body["messages"] = [*self._system, {"role": "user", "content": prompt}]
        aiohttp = self._aiohttp
        try:
            proxy, proxy_auth = self._proxy
            # Never a redirect: aiohttp would send the request's api-key, x-api-key and custom
            # headers (all but Authorization) to wherever it points.
            async with session.post(self.route.url, data=json.dumps(body).encode("utf-8"), proxy=proxy,
                                    proxy_auth=proxy_auth, allow_redirects=False) as resp:
                status = resp.status
                headers = resp.headers
                if 300 <= status < 400:
                    raise redirect_refused(status, headers.get("Location"))
                raw = await read_capped(resp, ERROR_BODY if status >= 400 else self.max_answer, strict=status < 400)
        except asyncio.TimeoutError:
            raise Timeout(f"no answer within {self.timeout:g} s") from None
        except aiohttp.ClientError as exc:
            raise APIConnectionError(f"{type(exc).__name__}: {exc}") from None
        if status >= 400:
            raise status_error(status, raw, headers)
        try:
            data = json.loads(raw)
            choice = data["choices"][0]
            content = choice["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise InternalServerError(f"malformed response from the server: {raw[:200]!r}", headers=headers) from None
        if content is None:
            raise EmptyAnswer("the model returned no content")
        usage = data.get("usage") if isinstance(data, dict) else None
        usage = usage if isinstance(usage, dict) else {}
        return Reply(content_text(content), reported_tokens(usage.get("prompt_tokens")),
                     reported_tokens(usage.get("completion_tokens")),
                     finish_reason_of(choice.get("finish_reason") if isinstance(choice, dict) else None),
                     server_seconds(data), picked(headers))

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            try:
                await session.close()
            except Exception:  # a failure to close must not hide the run's results
                pass
