"""The litellm backend: ``litellm.acompletion``, the general path to every provider, and the one
``--defan-call-path=auto`` takes when the lean OpenAI-protocol client cannot send what litellm
would (:mod:`defan_pytest.calls.backends.openai`).

litellm is imported lazily, in the process that calls, when the pool prepares for its first real
call (seconds of CPU), with its network fetch of a price table off unless the user turned it on.
Its failures follow the openai SDK's naming with their HTTP status, and a client's refusal to
send without a key reaches us as a 500 saying so: judged by
:meth:`~defan_pytest.calls.backends.base.BaseBackend.classify`.

Each call is guarded on the wire (:mod:`defan_pytest.calls.backends.http_guard`): no redirect is
followed (a redirect stops the run, as on the lean path), no body is read past the answer cap.
"""
from __future__ import annotations

import os
import re
from typing import Any, List, Optional, Tuple

from defan_pytest.calls.backends.base import BaseBackend
from defan_pytest.calls.backends.litellm_model import (
    call_params,
    content_text,
    credential_given,
    model_identity,
    no_credentials,
    provider_of,
    reported_tokens,
)
from defan_pytest.calls.capacity import server_seconds
from defan_pytest.calls.models import LitellmModel, litellm_knows
from defan_pytest.calls.protocol import Caller, EmptyAnswer, FatalCallError, Reply, finish_reason_of
from defan_pytest.calls.redaction import known_secrets

__all__ = ["LITELLM", "LitellmBackend", "LitellmCaller", "import_litellm", "messages_of"]


def import_litellm() -> Any:
    """Import litellm for calling: no price-table fetch over the network unless the user set
    ``LITELLM_LOCAL_MODEL_COST_MAP`` themselves; no telemetry; quiet logs; its requests guarded
    on the wire (:func:`defan_pytest.calls.backends.http_guard.install`)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_LOG", "ERROR")
    import litellm  # heavy (seconds of CPU to import), so only in the process that calls

    # lazy: start-up. httpx comes with litellm: imported with it, not on every pytest start.
    from defan_pytest.calls.backends import http_guard

    http_guard.install()
    litellm.telemetry = False
    litellm.suppress_debug_info = True
    return litellm


def messages_of(model: LitellmModel, prompt: str) -> List[dict]:
    """The chat messages of one prompt: the model's system prompt, then the prompt."""
    messages = []
    if model.system_prompt:
        messages.append({"role": "system", "content": model.system_prompt})
    messages.append({"role": "user", "content": prompt})
    return messages


class LitellmBackend(BaseBackend):
    """Any litellm model string: with ``--defan-call-path=litellm``, or when the backends asked
    before it (the lean client) declined it."""

    name = "litellm"

    def knows(self, name: str) -> bool:
        return litellm_knows(name)

    def serves(self, model: Any, call_path: str, timeout: float) -> Tuple[bool, str]:
        if not isinstance(model, LitellmModel):
            return False, "not a litellm model string"
        if call_path == "litellm":
            return True, "--defan-call-path=litellm"
        if call_path == "openai":
            return False, "--defan-call-path=openai"
        return True, ""  # the general path: the reason is why the lean path declined

    def caller(self, model: Any, timeout: float) -> Caller:
        return LitellmCaller(model, timeout=timeout)


#: The litellm backend.
LITELLM = LitellmBackend()


class LitellmCaller(Caller):
    """``litellm.acompletion`` with the model's parameters; litellm's own retries are off (the
    pool retries, so a request is never silently sent twice)."""

    backend = LITELLM
    # litellm passes ``timeout`` to the HTTP client, which raises litellm.Timeout.
    enforces_timeout = True
    task_per_call = True

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
        if credential_given(self.params):
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
        return no_credentials(self.model.model, missing) if missing else None

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
        # lazy: start-up. Imported with litellm (prepare), never by a run answered from the cache.
        from defan_pytest.calls.backends import http_guard

        try:
            with http_guard.guarded(self.max_answer):
                resp = await self.litellm.acompletion(model=self.model.model,
                                                      messages=messages_of(self.model, prompt), **self.params)
        except Exception as exc:
            ours = http_guard.guard_failure(exc)
            if ours is None:
                raise
            raise ours from None  # as the lean path says it, not as a connection error to retry
        choice = resp.choices[0]
        content = choice.message.content
        if content is None:
            raise EmptyAnswer("the model returned no content")
        usage = getattr(resp, "usage", None)
        return Reply(content_text(content), reported_tokens(getattr(usage, "prompt_tokens", None)),
                     reported_tokens(getattr(usage, "completion_tokens", None)),
                     finish_reason_of(getattr(choice, "finish_reason", None)),
                     # llama.cpp's timings, where litellm keeps the field it does not know
                     server_seconds({"timings": getattr(resp, "timings", None)}))
