"""What both backends of a litellm model string share (litellm itself, and the lean
OpenAI-protocol client): its provider, the parameters of every call, the cache identity, the
credential check and the token counts of a reply.  Both paths send the same request, share one
cache identity and fail the same ways.  Nothing here imports litellm.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Optional, Sequence

from defan_pytest.calls.models import LitellmModel, litellm_provider
from defan_pytest.calls.redaction import NO_KEY, public_identity, secret_name

__all__ = [
    "call_params",
    "credential_given",
    "model_identity",
    "no_credentials",
    "provider_of",
    "reported_tokens",
]

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


def credential_given(params: Mapping[str, Any]) -> bool:
    """A credential among the call parameters (api_key, azure_ad_token, a secret header)."""
    if any(secret_name(k) and v for k, v in params.items()):
        return True
    for h in ("headers", "extra_headers"):
        value = params.get(h) or {}
        if isinstance(value, Mapping) and any(secret_name(str(k)) for k in value):
            return True
    return False


def no_credentials(model_string: str, missing: Sequence[str]) -> str:
    """The message that stops a run whose calls cannot authenticate."""
    return (
        f"no credentials for {model_string!r}: set {' or '.join(missing)} in the environment, or pass "
        "--defan-model-arg api_key=... -- stopping before the first call"
    )


def reported_tokens(value: Any) -> Optional[int]:
    """A token count as a provider reported it, or ``None`` when it is not one."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
