"""An xdist worker's side of the calls (:class:`Relayed`): the answers the controller's one pool
hands over (:mod:`defan_pytest.cache.handoff`), read as a pool's results, so that a worker only
scores and reports.  It asks nothing, claims nothing and waits for no other worker: a worker
killed holds nothing, and its replacement reads the same answers.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional

from defan_pytest.cache.store import ResponseCache
from defan_pytest.calls.asker import Stats
from defan_pytest.calls.protocol import FatalCallError, Response

__all__ = ["Relayed", "as_json", "response_of"]

_FIELDS = {f.name: f for f in dataclasses.fields(Response)}


def as_json(response: Response) -> Dict[str, Any]:
    """A response as the controller hands it over: its fields as plain JSON."""
    return dataclasses.asdict(response)


def response_of(data: Dict[str, Any]) -> Response:
    """A response handed over, back as one (fields of the wrong type dropped, as an answer of
    the wire's would be: only what :class:`Response` holds)."""
    kept: Dict[str, Any] = {}
    for name, value in data.items():
        if name not in _FIELDS or value is None:
            continue
        if name in ("text", "error", "via", "answered_by", "note", "finish_reason") and isinstance(value, str):
            kept[name] = value
        elif name in ("attempts", "prompt_tokens", "completion_tokens") and isinstance(value, int) and not isinstance(value, bool):
            kept[name] = value
        elif name in ("seconds", "latency") and isinstance(value, (int, float)) and not isinstance(value, bool):
            kept[name] = float(value)
        elif name == "cached" and isinstance(value, bool):
            kept[name] = value
    kept.setdefault("text", None)
    return Response(**kept)


class Relayed:
    """What an xdist worker's items read instead of a pool of their own: :meth:`result` waits
    for the answer the controller hands over (raises :class:`FatalCallError` once the run
    stopped)."""

    def __init__(self, store: ResponseCache, total: int) -> None:
        self.store = store
        self.handed = store.handed()
        self.stats = Stats(total=total)
        self.notices: list = []

    @property
    def fatal(self) -> Optional[str]:
        """The failure that stopped the run, as the controller published it."""
        return self.handed.fatal

    def result(self, key: str, timeout: Optional[float] = None) -> Response:
        """The answer to prompt ``key``, once the controller has handed it over."""
        got = self.handed.get(key, timeout)
        if got is None:
            if self.handed.fatal is not None:
                raise FatalCallError(self.handed.fatal)
            raise TimeoutError(f"no answer for {key!r} within {timeout} s")
        return response_of(got)

    def join(self, timeout: Optional[float] = None) -> bool:
        """Nothing to wait for here: each item waits for its own answer."""
        return True

    def check(self) -> None:
        """The controller's pool has the watchdog."""

    def stop(self, message: str) -> None:
        """The controller stops the calls (its Ctrl-C, its failures)."""

    def close(self) -> None:
        """Stop reading the hand-over."""
        self.handed.close()
