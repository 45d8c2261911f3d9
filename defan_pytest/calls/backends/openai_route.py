"""Where the lean OpenAI-protocol client sends a litellm model's request, and whether it can
send exactly what litellm would: :func:`lean_route` reads the model's parameters and the
environment as litellm does (base URL, key, organisation, Azure's deployment URL and API
version) and says why not when it cannot (another provider's API, a parameter only litellm
interprets, a reasoning model whose parameters litellm rewrites).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple
from urllib.parse import quote

from defan_pytest.calls.backends.litellm_model import credential_given, provider_of
from defan_pytest.calls.models import LitellmModel
from defan_pytest.version import __version__

__all__ = ["PROVIDERS", "Provider", "Route", "lean_route"]

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
class Provider:
    """Where litellm finds an OpenAI-compatible provider's server and key."""

    base_env: Tuple[str, ...]
    default_base: Optional[str]
    key_env: Tuple[str, ...]
    default_key: Optional[str]  # litellm's placeholder for servers that need no key


#: The providers the lean path speaks to, by litellm provider name.
PROVIDERS: Mapping[str, Provider] = {
    "openai": Provider(("OPENAI_BASE_URL", "OPENAI_API_BASE"), "https://api.openai.com/v1", ("OPENAI_API_KEY",), None),
    "custom_openai": Provider(("OPENAI_BASE_URL", "OPENAI_API_BASE"), None, ("OPENAI_API_KEY",), None),
    "hosted_vllm": Provider(("HOSTED_VLLM_API_BASE",), None, ("HOSTED_VLLM_API_KEY",), "fake-api-key"),
    "lm_studio": Provider(("LM_STUDIO_API_BASE",), None, ("LM_STUDIO_API_KEY",), "fake-api-key"),
    "llamafile": Provider(("LLAMAFILE_API_BASE",), "http://127.0.0.1:8080/v1", ("LLAMAFILE_API_KEY",), "fake-api-key"),
    "azure": Provider(("AZURE_API_BASE",), None, ("AZURE_OPENAI_API_KEY", "AZURE_API_KEY"), None),
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


def _litellms_own(name: str, params: Mapping[str, Any]) -> Optional[str]:
    """Why a request with ``params`` for model ``name`` is litellm's to send, or ``None``."""
    if _REWRITTEN_MODELS.match(name):
        return f"litellm rewrites the parameters of OpenAI reasoning models such as {name!r}"
    unknown = sorted(k for k in params if k not in _BODY_PARAMS and k not in _REQUEST_PARAMS)
    if unknown:
        return f"parameter {unknown[0]!r} is litellm's to interpret"
    if params.get("stream"):
        return "streaming is litellm's"
    for h in ("headers", "extra_headers", "extra_body"):
        if params.get(h) is not None and not isinstance(params.get(h), Mapping):
            return f"{h} is not a table"
    return None


def _azure_url(base: str, name: str, key: Any, params: Mapping[str, Any], env: Mapping[str, str],
               headers: Dict[str, str]) -> Tuple[Optional[str], str]:
    """An Azure deployment's URL (its key or Entra token put in ``headers``), or why not."""
    version = params.get("api_version") or env.get("AZURE_API_VERSION")
    token = params.get("azure_ad_token") or (params.get("extra_body") or {}).get("azure_ad_token") \
        or env.get("AZURE_AD_TOKEN")
    if not version:
        return None, "no api_version for azure (litellm's default version is litellm's to choose)"
    if not key and not token:
        return None, "azure without a key authenticates through litellm (Entra ID)"
    if key:
        headers["api-key"] = str(key)
    else:
        headers["Authorization"] = f"Bearer {token}"
    return f"{base}/openai/deployments/{quote(name, safe='')}/chat/completions?api-version={quote(str(version))}", ""


def _openai_url(provider: str, base: str, key: Any, params: Mapping[str, Any], env: Mapping[str, str],
                headers: Dict[str, str]) -> Tuple[Optional[str], str]:
    """An OpenAI-compatible server's URL (its key and organisation put in ``headers``), or why not."""
    if params.get("api_version") is not None or params.get("azure_ad_token") is not None:
        return None, "api_version and azure_ad_token are azure's"
    if key:
        headers["Authorization"] = f"Bearer {key}"
    organization = params.get("organization") or env.get("OPENAI_ORGANIZATION") or env.get("OPENAI_ORG_ID")
    if provider == "openai" and organization:
        headers["OpenAI-Organization"] = str(organization)
    return f"{base}/chat/completions", ""


def lean_route(model: LitellmModel, params: Mapping[str, Any],
               environ: Optional[Mapping[str, str]] = None) -> Tuple[Optional[Route], str]:
    """The lean path's request for ``model`` with ``params``
    (:func:`~defan_pytest.calls.backends.litellm_model.call_params`), or ``None`` and why the
    lean path cannot send it as litellm would."""
    env = os.environ if environ is None else environ
    provider = provider_of(model.model)
    spec = PROVIDERS.get(provider)
    if spec is None:
        return None, f"provider {provider or 'unknown'!r} is not called through the OpenAI protocol"
    name = model.model.split("/", 1)[1] if "/" in model.model else model.model
    why = _litellms_own(name, params)
    if why is not None:
        return None, why
    base = params.get("api_base") or params.get("base_url") or _env(spec.base_env, env) or spec.default_base
    if not base:
        return None, f"no api_base for {model.model!r} (nor {' or '.join(spec.base_env)} in the environment)"
    key = params.get("api_key") or _env(spec.key_env, env) or spec.default_key
    headers: Dict[str, str] = {"Content-Type": "application/json", "Accept": "application/json",
                               "User-Agent": f"defan-pytest/{__version__}"}
    base = str(base).rstrip("/")
    if provider == "azure":
        url, why = _azure_url(base, name, key, params, env, headers)
    else:
        url, why = _openai_url(provider, base, key, params, env, headers)
    if url is None:
        return None, why
    for h in ("headers", "extra_headers"):  # the user's headers win, as with litellm
        for k, v in (params.get(h) or {}).items():
            headers[str(k)] = str(v)
    body: Dict[str, Any] = {"model": name}
    body.update({k: v for k, v in params.items() if k in _BODY_PARAMS and v is not None})
    body.update({k: v for k, v in (params.get("extra_body") or {}).items() if k != "azure_ad_token"})
    missing = None
    if not key and provider != "azure" and not credential_given(params):
        missing = " or ".join(spec.key_env)
    return Route(url, headers, body, name, missing), ""
