"""Where a litellm model's server is, and whether it is the user's own: a loopback or private
address (``127.0.0.0/8``, ``::1``, ``localhost``, RFC 1918, link-local, IPv6 unique-local, a
``.local`` or ``.localhost`` name), such as llama.cpp's ``llama-server``, Ollama or vLLM on the
same machine or the LAN.  A model on such a server costs nothing per token (unless the user
priced it, or litellm's price table knows its name: a LiteLLM proxy on ``localhost:4000``
forwarding to a paid provider), and is said so once instead of "cost unknown".

>>> [is_local_url(u) for u in ("http://127.0.0.1:8080/v1", "http://[::1]:8080", "http://gpu.local/v1",
...                            "https://10.1.2.3/v1", "https://api.openai.com/v1", "127.0.0.1:8080/v1")]
[True, True, True, True, False, True]
>>> server_host("http://user:pw@127.0.0.1:8080/v1?key=1")
'127.0.0.1:8080'
"""
from __future__ import annotations

import ipaddress
import os
import urllib.parse
from typing import Any, Mapping, Optional

from defan_pytest.calls.models import LitellmModel

__all__ = ["is_local_url", "local_server", "server_host", "server_url"]

# Where litellm looks for a provider's server when the model gives no api_base (the lean
# path's table, calls/backends/openai_route.py, reads the same variables), and the servers
# that are local by default.
_BASE_ENV = {
    "openai": ("OPENAI_BASE_URL", "OPENAI_API_BASE"), "custom_openai": ("OPENAI_BASE_URL", "OPENAI_API_BASE"),
    "hosted_vllm": ("HOSTED_VLLM_API_BASE",), "lm_studio": ("LM_STUDIO_API_BASE",),
    "llamafile": ("LLAMAFILE_API_BASE",), "ollama": ("OLLAMA_API_BASE",), "ollama_chat": ("OLLAMA_API_BASE",),
}
_DEFAULT_BASE = {"llamafile": "http://127.0.0.1:8080/v1", "ollama": "http://localhost:11434",
                 "ollama_chat": "http://localhost:11434"}
_LOCAL_SUFFIXES = (".local", ".localhost")


def _split(url: str) -> Optional[urllib.parse.SplitResult]:
    """``url`` split, read as ``http://`` when it has no scheme (``127.0.0.1:8080/v1``)."""
    text = url.strip()
    if "://" not in text:
        text = "http://" + text
    try:
        parts = urllib.parse.urlsplit(text)
        parts.port  # raises on a bad port
    except ValueError:
        return None
    return parts


def server_host(url: Any) -> Optional[str]:
    """``host:port`` of a server's URL, without user info, path or query (safe to print), or
    ``None`` when it is not a URL."""
    parts = _split(url) if isinstance(url, str) and url.strip() else None
    if parts is None or not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{host}:{parts.port}" if parts.port else host


def is_local_url(url: Any) -> bool:
    """Whether ``url`` points at a loopback or private address (see the module docstring)."""
    parts = _split(url) if isinstance(url, str) and url.strip() else None
    host = (parts.hostname or "").rstrip(".").lower() if parts is not None else ""
    if not host:
        return False
    if host == "localhost" or host.endswith(_LOCAL_SUFFIXES):
        return True
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])  # fe80::1%eth0: the zone is no part of the address
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    ip = mapped or ip
    # 0.0.0.0 and :: reach this machine itself (a server listening on every interface).
    return bool(ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_unspecified)


def server_url(model: Any, environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The server a litellm model's calls go to: its ``api_base`` (or ``base_url``), else the
    provider's variable in the environment, else the provider's local default (Ollama,
    llamafile); ``None`` for a provider's own cloud, or a model that is not a litellm one."""
    if not isinstance(model, LitellmModel):
        return None
    params = model.params or {}
    base = params.get("api_base") or params.get("base_url")
    if base:
        return str(base)
    env = os.environ if environ is None else environ
    provider = model.model.split("/", 1)[0] if "/" in model.model else ""
    for name in _BASE_ENV.get(provider, ()):
        if env.get(name):
            return str(env[name])
    return _DEFAULT_BASE.get(provider)


def local_server(model: Any, environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """``host:port`` of the model's server when it is local (:func:`is_local_url`), else ``None``."""
    url = server_url(model, environ)
    return server_host(url) if url is not None and is_local_url(url) else None
