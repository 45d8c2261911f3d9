"""What both backends of a litellm model string share (litellm itself, and the lean
OpenAI-protocol client): its provider, the parameters of every call, the cache identity, the
credential check, the answer text and the token counts of a reply, and the refusal of a
redirect.  Both paths send the same request, share one cache identity and fail the same ways.
Nothing here imports litellm.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Optional, Sequence

from defan_pytest.calls.models import LitellmModel, litellm_provider
from defan_pytest.calls.protocol import BadAnswer, RefusedRedirect
from defan_pytest.calls.redaction import NO_KEY, public_identity, redact_url, secret_name, user_info

__all__ = [
    "address_problem",
    "call_params",
    "content_text",
    "credential_given",
    "model_identity",
    "no_credentials",
    "provider_of",
    "redirect_refused",
    "reported_tokens",
]

# Providers whose model string names any model of an OpenAI-compatible server (see NO_KEY).
_OPENAI_COMPATIBLE = ("openai", "custom_openai")
# The parameters that say where the server is.
_ADDRESS_PARAMS = ("api_base", "base_url")
# Parts of a chat message's content list that hold its text.
_TEXT_PARTS = ("text", "output_text")
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


def address_problem(params: Mapping[str, Any]) -> Optional[str]:
    """Why the server's address cannot be used, before any call: user info in ``api_base``
    (``https://TOKEN@host``, ``https://user:pw@host``), which no client sends as a credential
    (every call would fail, and be retried), and which would reach every artefact."""
    for name in _ADDRESS_PARAMS:
        url = params.get(name)
        if user_info(url):
            return (
                f"{name} {redact_url(str(url).strip())!r} holds user info (a name or password before '@'), "
                "which is never sent as a credential: give the address without it, and the key as "
                "--defan-model-arg api_key=... (or in the provider's key variable)"
            )
    return None


def redirect_refused(status: int, location: Any) -> RefusedRedirect:
    """The failure of a redirect (never followed): where it pointed, redacted."""
    where = redact_url(str(location).strip())[:200] if location else "no location"
    return RefusedRedirect(
        f"the server answered HTTP {status}, a redirect to {where}: not followed, since it would take the "
        "request's credentials to another address -- give the address that answers as api_base"
    )


def content_text(content: Any) -> str:
    """The answer text of a chat completion's ``message.content``: a string, or the text
    parts of a list of content parts (``[{"type": "text", "text": ...}]``) joined; a
    :class:`~defan_pytest.calls.protocol.BadAnswer` naming the server's shape otherwise."""
    if isinstance(content, str):
        return str(content)
    if isinstance(content, list):
        texts = [p["text"] for p in content
                 if isinstance(p, Mapping) and p.get("type") in _TEXT_PARTS and isinstance(p.get("text"), str)]
        if texts or not content:
            return "".join(texts)
        kinds = sorted({str(p.get("type"))[:40] if isinstance(p, Mapping) else type(p).__name__ for p in content})
        raise BadAnswer(f"the server's message.content is a list of {len(content)} content parts without a text "
                        f"part (types: {', '.join(kinds[:5])}): no answer text")
    shape = {dict: "an object", bool: "a boolean", int: "a number", float: "a number"}.get(type(content))
    raise BadAnswer(f"the server's message.content is {shape or type(content).__name__}, not a string or a list "
                    "of text parts: no answer text")
