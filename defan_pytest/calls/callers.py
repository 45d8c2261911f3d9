"""The callers: how one prompt reaches a model.

* :class:`CallableCaller`: a user's registered function, awaited (async) or run in a daemon
  thread (sync, :class:`DaemonThreads`).
* :class:`LitellmCaller`: ``litellm.acompletion``, the general path to every provider.  litellm
  is imported lazily, in the process that calls, at its first real call (seconds of CPU), with
  its network fetch of a price table off unless the user turned it on.
* :class:`OpenAICaller`: the lean path for providers that speak the OpenAI chat-completions
  protocol (``openai/...`` and bare OpenAI model names, any ``api_base``, ``custom_openai``,
  ``hosted_vllm`` (vLLM), ``lm_studio``, ``llamafile``, ``azure`` with a key and an API
  version): one keep-alive ``aiohttp`` session per pool, a JSON body, a JSON answer -- about
  0.2 ms of client CPU per call where litellm spends 4 ms and the openai SDK 1.7 ms
  (``bench/call_speed.py``).  It never imports litellm.

:func:`choose_path` decides (``--defan-call-path``: ``auto``, ``litellm`` or ``openai``) and
says why; :func:`make_caller` builds the caller.  Both paths of a litellm model send the same
request, share one cache identity and fail the same ways (the pool classifies failures by
status and class name: see :func:`defan_pytest.calls.pool.classify`).
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import json
import os
import queue
import re
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Set, Tuple

from defan_pytest.calls.protocol import Caller, EmptyAnswer, FatalCallError, Reply, answer_text
from defan_pytest.calls.models import CallableModel, LitellmModel, litellm_provider
from defan_pytest.calls.redaction import NO_KEY, known_secrets, public_identity, secret_name
from defan_pytest.calls.protocol import CALL_PATHS, DEFAULT_CONCURRENCY

__all__ = [
    "CALL_PATHS",
    "CallableCaller",
    "DaemonThreads",
    "LitellmCaller",
    "OpenAICaller",
    "choose_path",
    "import_litellm",
    "make_caller",
]

def import_litellm() -> Any:
    """Import litellm for calling: no price-table fetch over the network unless the user set
    ``LITELLM_LOCAL_MODEL_COST_MAP`` themselves; no telemetry; quiet logs."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_LOG", "ERROR")
    import litellm  # heavy (seconds of CPU to import), so only in the process that calls

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    return litellm


# --------------------------------------------------------------------------------------------
# a user's callable
# --------------------------------------------------------------------------------------------


class DaemonThreads:
    """Runs a sync callable's calls in daemon threads, reusing idle ones.

    Not a ``ThreadPoolExecutor``: Python joins its threads at exit, so one call that never
    returned kept the process alive for ever after the run had ended.  Here a call abandoned at
    its timeout keeps its thread (a daemon, which dies with the process), and a new thread takes
    the next call, so stuck calls never starve the others; :meth:`stuck` counts them.
    """

    def __init__(self, name: str = "defan-call") -> None:
        self.name = name
        self._jobs: "queue.SimpleQueue[Optional[Tuple[concurrent.futures.Future, Callable[..., Any], tuple]]]" = (
            queue.SimpleQueue()
        )
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._threads = 0
        self._abandoned: Set[concurrent.futures.Future] = set()
        self._ids = itertools.count(1)

    def submit(self, fn: Callable[..., Any], *args: Any) -> "concurrent.futures.Future[Any]":
        """Run ``fn(*args)`` in an idle thread, or a new one."""
        fut: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
        self._jobs.put((fut, fn, args))
        if not self._idle.acquire(blocking=False):
            with self._lock:
                self._threads += 1
            threading.Thread(target=self._work, name=f"{self.name}-{next(self._ids)}", daemon=True).start()
        return fut

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                with self._lock:
                    self._threads -= 1
                return
            fut, fn, args = job
            del job
            if fut.set_running_or_notify_cancel():
                try:
                    result = fn(*args)
                except BaseException as exc:  # noqa: BLE001 - handed to the waiting call
                    fut.set_exception(exc)
                else:
                    fut.set_result(result)
                    del result
            del fut, fn, args
            self._idle.release()

    def abandon(self, fut: "concurrent.futures.Future[Any]") -> None:
        """The call of ``fut`` timed out but its thread runs on: count it until it returns."""
        with self._lock:
            self._abandoned.add(fut)

        def forget(f: "concurrent.futures.Future[Any]") -> None:
            with self._lock:
                self._abandoned.discard(f)

        fut.add_done_callback(forget)

    def stuck(self) -> int:
        with self._lock:
            return len(self._abandoned)

    def close(self) -> None:
        """Let the idle threads end (a stuck one ends with the process)."""
        with self._lock:
            n = self._threads
        for _ in range(n):
            self._jobs.put(None)


class CallableCaller(Caller):
    """A user's function, awaited if async, else run in a daemon thread."""

    path = "callable"

    def __init__(self, model: CallableModel, threads: int = DEFAULT_CONCURRENCY) -> None:
        self.model = model
        self.name = model.name
        # The source digest: editing the function without changing its version= must not
        # reuse the answers of the old code.
        self.identity = {"kind": "callable", "name": model.name, "version": model.version, "source": model.source}
        self._threads = None if model.is_async else DaemonThreads(f"defan-call-{model.name}")

    async def __call__(self, prompt: str) -> str:
        if self._threads is None:
            out = await self.model.fn(prompt)
        else:
            fut = self._threads.submit(self.model.fn, prompt)
            try:
                out = await asyncio.wrap_future(fut)
            except asyncio.CancelledError:
                if not fut.done():
                    self._threads.abandon(fut)
                raise
        return answer_text(out, self.name)

    def stuck(self) -> int:
        return 0 if self._threads is None else self._threads.stuck()

    def close(self) -> None:
        if self._threads is not None:
            self._threads.close()


# --------------------------------------------------------------------------------------------
# a litellm model: what both paths share
# --------------------------------------------------------------------------------------------

# Providers whose model string names any model of an OpenAI-compatible server (see NO_KEY).
_OPENAI_COMPATIBLE = ("openai", "custom_openai")
# Parameters of the transport, not of the answer: never in the cache identity.
_TRANSPORT_ONLY = ("timeout", "num_retries", "max_retries")


def provider_of(model_string: str) -> str:
    """The litellm provider of a model string: its prefix, or, for a bare name, the provider
    litellm's bundled price table gives it (``gpt-4o-mini`` -> ``openai``); ``""`` if unknown."""
    if "/" in model_string:
        return model_string.split("/", 1)[0]
    return litellm_provider(model_string) or ""


def call_params(model: LitellmModel, timeout: float) -> Dict[str, Any]:
    """The keyword arguments of every call of ``model``: the model's parameters, the timeout,
    no retries of the client's own (the pool retries, so a request is never silently sent
    twice), and a placeholder key for a local OpenAI-compatible server that needs none."""
    params = dict(model.params)
    params.setdefault("timeout", timeout)
    params["num_retries"] = 0
    params["max_retries"] = 0
    if (provider_of(model.model) in _OPENAI_COMPATIBLE and (params.get("api_base") or params.get("base_url"))
            and not params.get("api_key") and not os.environ.get("OPENAI_API_KEY")):
        params["api_key"] = NO_KEY  # a local OpenAI-compatible server needs no key
    return params


def model_identity(model: LitellmModel, params: Mapping[str, Any], secrets: Any) -> Dict[str, Any]:
    """The cache identity of a litellm model, the same whichever path calls it."""
    return {
        "kind": "litellm",
        "model": model.model,
        "system_prompt": model.system_prompt,
        # Every parameter that shapes an answer: never a credential (public_identity), nor
        # transport-only ones.
        "params": public_identity(
            {k: v for k, v in sorted(params.items()) if k not in _TRANSPORT_ONLY}, secrets,
        ),
    }


def messages_of(model: LitellmModel, prompt: str) -> list:
    """The chat messages of one prompt: the model's system prompt, then the prompt."""
    messages = []
    if model.system_prompt:
        messages.append({"role": "system", "content": model.system_prompt})
    messages.append({"role": "user", "content": prompt})
    return messages


def _credential_given(params: Mapping[str, Any]) -> bool:
    """A credential among the call parameters (api_key, azure_ad_token, a secret header)."""
    if any(secret_name(k) and v for k, v in params.items()):
        return True
    for h in ("headers", "extra_headers"):
        value = params.get(h) or {}
        if isinstance(value, Mapping) and any(secret_name(str(k)) for k in value):
            return True
    return False


def _no_credentials(model_string: str, missing: Any) -> str:
    return (
        f"no credentials for {model_string!r}: set {' or '.join(missing)} in the environment, or pass "
        "--defan-model-arg api_key=... -- stopping before the first call"
    )


class LitellmCaller(Caller):
    """``litellm.acompletion`` with the model's parameters; litellm's own retries are off (the
    pool retries, so a request is never silently sent twice)."""

    # litellm passes ``timeout`` to the HTTP client, which raises litellm.Timeout.
    enforces_timeout = True
    task_per_call = True
    path = "litellm"

    def __init__(self, model: LitellmModel, timeout: float) -> None:
        self.model = model
        self.name = model.model
        self.timeout = timeout
        self._litellm: Any = None
        self.params = call_params(model, timeout)
        self.secrets = known_secrets(self.params)
        self.identity = model_identity(model, self.params, self.secrets)

    @property
    def litellm(self) -> Any:
        """litellm, imported at the first real call: a run answered from the cache never pays
        for the import."""
        if self._litellm is None:
            self._litellm = import_litellm()
        return self._litellm

    def prepare(self) -> None:
        # The import here, in the preparing thread, not at the first call on the loop: seconds
        # of CPU that would stall every call in flight (and count in the first one's latency).
        self.litellm
        problem = self.missing_credentials()
        if problem is not None:
            raise FatalCallError(problem)

    def missing_credentials(self) -> Optional[str]:
        """Why no call can authenticate (no key given and none in the environment), or None.

        Only provider keys (``*_KEY``/``*_TOKEN`` names) count: a provider that authenticates
        otherwise (Azure AD, cloud credentials) is left to the first call.
        """
        if _credential_given(self.params):
            return None  # a credential was given (api_key, azure_ad_token, aws_secret_access_key ...)
        if provider_of(self.model.model) == "azure":
            return None
        try:
            env = self.litellm.validate_environment(
                model=self.model.model, api_key=self.params.get("api_key"),
                api_base=self.params.get("api_base") or self.params.get("base_url"),
            )
        except Exception:  # litellm could not tell: let the first call say
            return None
        missing = [k for k in env.get("missing_keys") or () if re.search(r"KEY|TOKEN", str(k))]
        return _no_credentials(self.model.model, missing) if missing else None

    async def aclose(self) -> None:
        if self._litellm is None:
            return
        # litellm caches its HTTP clients per process; ours belong to this pool's loop, which
        # closes next, so close them here rather than leave litellm a dead loop's clients.
        close = getattr(self.litellm, "close_litellm_async_clients", None)
        if close is not None:
            try:
                await close()
            except Exception:  # a failure to close must not hide the run's results
                pass
        cache = getattr(self.litellm, "in_memory_llm_clients_cache", None)
        if cache is not None and hasattr(cache, "flush_cache"):
            cache.flush_cache()

    async def __call__(self, prompt: str) -> Reply:
        resp = await self.litellm.acompletion(model=self.model.model, messages=messages_of(self.model, prompt),
                                              **self.params)
        content = resp.choices[0].message.content
        if content is None:
            raise EmptyAnswer("the model returned no content")
        usage = getattr(resp, "usage", None)
        return Reply(answer_text(content, self.name), _tokens(getattr(usage, "prompt_tokens", None)),
                     _tokens(getattr(usage, "completion_tokens", None)))


def _tokens(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


# --------------------------------------------------------------------------------------------
# the lean OpenAI-protocol path
# --------------------------------------------------------------------------------------------

# Body parameters the lean path sends as they are (OpenAI chat completions, as litellm sends
# them for these providers); anything else is litellm's business (``auto`` then takes litellm).
_BODY_PARAMS = frozenset({
    "temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "presence_penalty",
    "frequency_penalty", "seed", "logit_bias", "response_format", "user", "n", "logprobs", "top_logprobs",
})
# Parameters of the request itself.
_REQUEST_PARAMS = frozenset({
    "api_base", "base_url", "api_key", "api_version", "organization", "headers", "extra_headers", "extra_body",
    "timeout", "num_retries", "max_retries", "azure_ad_token",
})
# Models litellm rewrites parameters for (max_tokens -> max_completion_tokens, no temperature):
# the OpenAI reasoning models.  They take the general path.
_REWRITTEN_MODELS = re.compile(r"^(o\d|gpt-5|codex)", re.I)


@dataclass(frozen=True)
class _Provider:
    """Where litellm finds an OpenAI-compatible provider's server and key."""

    base_env: Tuple[str, ...]
    default_base: Optional[str]
    key_env: Tuple[str, ...]
    default_key: Optional[str]  # litellm's placeholder for servers that need no key


_PROVIDERS: Mapping[str, _Provider] = {
    "openai": _Provider(("OPENAI_BASE_URL", "OPENAI_API_BASE"), "https://api.openai.com/v1", ("OPENAI_API_KEY",), None),
    "custom_openai": _Provider(("OPENAI_BASE_URL", "OPENAI_API_BASE"), None, ("OPENAI_API_KEY",), None),
    "hosted_vllm": _Provider(("HOSTED_VLLM_API_BASE",), None, ("HOSTED_VLLM_API_KEY",), "fake-api-key"),
    "lm_studio": _Provider(("LM_STUDIO_API_BASE",), None, ("LM_STUDIO_API_KEY",), "fake-api-key"),
    "llamafile": _Provider(("LLAMAFILE_API_BASE",), "http://127.0.0.1:8080/v1", ("LLAMAFILE_API_KEY",), "fake-api-key"),
    "azure": _Provider(("AZURE_API_BASE",), None, ("AZURE_OPENAI_API_KEY", "AZURE_API_KEY"), None),
}


@dataclass(frozen=True)
class Route:
    """One lean request, prepared once: where it goes, its headers and the body's fixed part."""

    url: str
    headers: Mapping[str, str]
    body: Mapping[str, Any]
    model: str  # the name the server is asked for
    missing_key: Optional[str] = None  # the environment variable that would hold the missing key


def _env(names: Tuple[str, ...], environ: Mapping[str, str]) -> Optional[str]:
    for name in names:
        if environ.get(name):
            return environ[name]
    return None


def lean_route(model: LitellmModel, params: Mapping[str, Any],
               environ: Optional[Mapping[str, str]] = None) -> Tuple[Optional[Route], str]:
    """The lean path's request for ``model`` with ``params`` (:func:`call_params`), or ``None``
    and why the lean path cannot send it as litellm would."""
    env = os.environ if environ is None else environ
    provider = provider_of(model.model)
    spec = _PROVIDERS.get(provider)
    if spec is None:
        return None, f"provider {provider or 'unknown'!r} is not called through the OpenAI protocol"
    name = model.model.split("/", 1)[1] if "/" in model.model else model.model
    if _REWRITTEN_MODELS.match(name):
        return None, f"litellm rewrites the parameters of OpenAI reasoning models such as {name!r}"
    unknown = sorted(k for k in params if k not in _BODY_PARAMS and k not in _REQUEST_PARAMS)
    if unknown:
        return None, f"parameter {unknown[0]!r} is litellm's to interpret"
    if params.get("stream"):
        return None, "streaming is litellm's"
    for h in ("headers", "extra_headers", "extra_body"):
        if params.get(h) is not None and not isinstance(params.get(h), Mapping):
            return None, f"{h} is not a table"
    base = params.get("api_base") or params.get("base_url") or _env(spec.base_env, env) or spec.default_base
    if not base:
        return None, f"no api_base for {model.model!r} (nor {' or '.join(spec.base_env)} in the environment)"
    key = params.get("api_key") or _env(spec.key_env, env) or spec.default_key
    headers: Dict[str, str] = {"Content-Type": "application/json", "Accept": "application/json"}
    from defan_pytest.version import __version__

    headers["User-Agent"] = f"defan-pytest/{__version__}"
    base = str(base).rstrip("/")
    if provider == "azure":
        version = params.get("api_version") or env.get("AZURE_API_VERSION")
        token = params.get("azure_ad_token") or (params.get("extra_body") or {}).get("azure_ad_token") \
            or env.get("AZURE_AD_TOKEN")
        if not version:
            return None, "no api_version for azure (litellm's default version is litellm's to choose)"
        if not key and not token:
            return None, "azure without a key authenticates through litellm (Entra ID)"
        from urllib.parse import quote

        url = f"{base}/openai/deployments/{quote(name, safe='')}/chat/completions?api-version={quote(str(version))}"
        if key:
            headers["api-key"] = str(key)
        else:
            headers["Authorization"] = f"Bearer {token}"
    else:
        if params.get("api_version") is not None or params.get("azure_ad_token") is not None:
            return None, "api_version and azure_ad_token are azure's"
        url = f"{base}/chat/completions"
        if key:
            headers["Authorization"] = f"Bearer {key}"
        organization = params.get("organization") or env.get("OPENAI_ORGANIZATION") or env.get("OPENAI_ORG_ID")
        if provider == "openai" and organization:
            headers["OpenAI-Organization"] = str(organization)
    for h in ("headers", "extra_headers"):  # the user's headers win, as with litellm
        for k, v in (params.get(h) or {}).items():
            headers[str(k)] = str(v)
    body: Dict[str, Any] = {"model": name}
    body.update({k: v for k, v in params.items() if k in _BODY_PARAMS and v is not None})
    extra = {k: v for k, v in (params.get("extra_body") or {}).items() if k != "azure_ad_token"}
    body.update(extra)
    missing = None
    if not key and provider != "azure" and not _credential_given(params):
        missing = " or ".join(spec.key_env)
    return Route(url, headers, body, name, missing), ""


def choose_path(model: Any, requested: str = "auto", timeout: float = 60.0) -> Tuple[str, str]:
    """Which path calls ``model`` and why: ``("callable", ...)`` for a registered callable,
    ``("openai", ...)`` for the lean path, ``("litellm", why not lean)``.  Raises ``ValueError``
    when ``requested`` is ``openai`` and the lean path cannot send what litellm would."""
    if requested not in CALL_PATHS:
        raise ValueError(f"{requested!r} is not one of: {', '.join(CALL_PATHS)}")
    if isinstance(model, CallableModel):
        return "callable", "a registered callable"
    if requested == "litellm":
        return "litellm", "--defan-call-path=litellm"
    route, why = lean_route(model, call_params(model, timeout))
    if route is not None:
        return "openai", "OpenAI protocol"
    if requested == "openai":
        raise ValueError(f"--defan-call-path=openai: {model.model!r} cannot take the OpenAI-protocol path: {why}")
    return "litellm", why


class ProviderError(Exception):
    """A failed request of the lean path; ``status_code`` and the response's ``headers`` (for
    ``Retry-After``) as the pool's classification reads them."""

    def __init__(self, message: str, status_code: Optional[int] = None, headers: Any = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.headers = headers


# Named as the openai SDK and litellm name them, so that both paths are classified, grouped
# (``error_kind``) and reported alike.
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


_BY_STATUS = {400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError, 404: NotFoundError,
              429: RateLimitError}


def _status_error(status: int, raw: bytes, headers: Any) -> ProviderError:
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


class OpenAICaller(Caller):
    """The lean path: one OpenAI chat-completions request per call over a keep-alive
    ``aiohttp`` session (made on the pool's loop at the first call, closed at its end)."""

    enforces_timeout = True  # aiohttp's total timeout
    path = "openai"

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
            raise FatalCallError(_no_credentials(self.model.model, [self.route.missing_key]))
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
            async with session.post(self.route.url, data=json.dumps(body).encode("utf-8"), proxy=proxy,
                                    proxy_auth=proxy_auth) as resp:
                raw = await resp.read()
                status = resp.status
                headers = resp.headers
        except asyncio.TimeoutError:
            raise Timeout(f"no answer within {self.timeout:g} s") from None
        except aiohttp.ClientError as exc:
            raise APIConnectionError(f"{type(exc).__name__}: {exc}") from None
        if status >= 400:
            raise _status_error(status, raw, headers)
        try:
            data = json.loads(raw)
            content = data["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise InternalServerError(f"malformed response from the server: {raw[:200]!r}", headers=headers) from None
        if content is None:
            raise EmptyAnswer("the model returned no content")
        usage = data.get("usage") if isinstance(data, dict) else None
        usage = usage if isinstance(usage, dict) else {}
        return Reply(answer_text(content, self.name), _tokens(usage.get("prompt_tokens")),
                     _tokens(usage.get("completion_tokens")))

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            try:
                await session.close()
            except Exception:  # a failure to close must not hide the run's results
                pass


def make_caller(model: Any, timeout: float, threads: int = DEFAULT_CONCURRENCY, path: str = "auto") -> Caller:
    """The caller for a resolved model (``path``: ``--defan-call-path``)."""
    if isinstance(model, CallableModel):
        return CallableCaller(model, threads=threads)
    chosen, _why = choose_path(model, path, timeout)
    if chosen == "openai":
        return OpenAICaller(model, timeout=timeout)
    return LitellmCaller(model, timeout=timeout)
