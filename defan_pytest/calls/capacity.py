"""What a local server says of its own capacity: how many requests it serves at once
(:func:`stated_slots`), and how long it worked on one answer (:func:`server_seconds`).

* llama.cpp's ``llama-server`` answers ``GET /props`` with ``total_slots`` (its ``-np``), and
  adds a ``timings`` block to every completion (``prompt_ms`` and ``predicted_ms``: the time the
  request was served, its wait in the queue excluded).
* vLLM, Ollama and LM Studio state neither through the OpenAI protocol; for them the pace
  learns from timeouts only (:mod:`defan_pytest.calls.pace`).

Only a loopback or private server is asked (:func:`defan_pytest.calls.local.is_local_url`), with
no credential and no redirect followed, and within one deadline for the whole probe
(:data:`PROBE_TIMEOUT`: connecting, the headers and the body together, however slowly a server
sends them): a hosted provider is never probed.  Whatever a server sends (a slow trickle, a
body nested a million deep, garbage) is the probe's failure, never the run's: ``None``.

>>> server_seconds({"timings": {"prompt_ms": 120.0, "predicted_ms": 880.0}})
1.0
>>> server_seconds({"timings": {"predicted_ms": "fast"}}) is None, server_seconds([]) is None
(True, True)
>>> props_url("http://127.0.0.1:8080/v1"), props_url("http://gpu.local/llama/v1/")
('http://127.0.0.1:8080/props', 'http://gpu.local/llama/props')
"""
from __future__ import annotations

import json
import math
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Optional

from defan_pytest.calls.local import is_local_url

__all__ = ["PROBE_TIMEOUT", "props_url", "server_seconds", "stated_slots"]

#: Seconds the capacity probe may take, all of it (it runs once, beside the first calls).
PROBE_TIMEOUT = 2.0
_MAX_BODY = 1 << 20  # /props carries the chat template: a few KB, never more than this


def server_seconds(data: Any) -> Optional[float]:
    """The seconds the server says it worked on a completion (llama.cpp's ``timings``), or
    ``None`` when it does not say (or says nonsense)."""
    timings = data.get("timings") if isinstance(data, dict) else None
    if not isinstance(timings, dict):
        return None
    total = 0.0
    for key in ("prompt_ms", "predicted_ms"):
        value = timings.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            return None
        total += float(value)
    return total / 1000.0 if total > 0 else None


def props_url(api_base: str) -> Optional[str]:
    """Where llama.cpp serves its properties for an ``api_base`` (the path's ``/v1`` dropped)."""
    text = api_base.strip() if "://" in api_base else "http://" + api_base.strip()
    try:
        parts = urllib.parse.urlsplit(text)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[:-3]
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], path + "/props", "", ""))


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:  # never followed
        return None


def stated_slots(api_base: Optional[str], timeout: float = PROBE_TIMEOUT) -> Optional[int]:
    """How many requests the local server at ``api_base`` serves at once, as it states it
    (llama.cpp's ``total_slots``), or ``None`` (not local, not llama.cpp, not reachable, not
    answered within ``timeout`` seconds in all, or anything else went wrong)."""
    if not api_base or not is_local_url(api_base):
        return None
    url = props_url(api_base)
    if url is None:
        return None
    found: list = []
    opened: list = []

    def probe() -> None:
        try:
            found.append(_ask(url, timeout, opened))
        except BaseException:  # noqa: BLE001 - a probe's failure is the probe's: no slots stated
            found.append(None)

    # One deadline for the whole probe: a socket timeout bounds each read, not a server that
    # sends a byte a second; the probe runs in a daemon thread given up (its socket closed) at
    # the deadline.
    thread = threading.Thread(target=probe, name="defan-props", daemon=True)
    thread.start()
    thread.join(max(0.0, timeout))
    if thread.is_alive():
        for resp in opened:
            try:
                resp.close()
            except Exception:  # noqa: BLE001 - closing a socket given up on
                pass
        return None
    return found[0] if found else None


def _ask(url: str, timeout: float, opened: list) -> Optional[int]:
    """``GET /props`` and its ``total_slots`` (the probe's thread; ``opened``: the response, for
    the caller to close at the deadline)."""
    deadline = time.monotonic() + timeout
    opener = urllib.request.build_opener(_NoRedirect, urllib.request.ProxyHandler({}))
    try:
        with opener.open(urllib.request.Request(url, headers={"Accept": "application/json"}), timeout=timeout) as resp:
            opened.append(resp)
            body = b""
            while len(body) <= _MAX_BODY and time.monotonic() < deadline:
                chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(65536)
                if not chunk:
                    break
                body += chunk
            else:
                return None  # too large, or too slow
    except (OSError, ValueError, urllib.error.URLError):
        return None
    try:
        slots = json.loads(body).get("total_slots")
    except (ValueError, AttributeError, RecursionError, TypeError):
        return None
    if isinstance(slots, bool) or not isinstance(slots, int) or not 1 <= slots <= 4096:
        return None
    return slots
