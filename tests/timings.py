"""What two runs of the same prompts may differ in: how long the calls took.

The calls' latencies (each row's ``latency``, each scope's ``latency_p95`` figure and its change
in the regression gate) are timings, not results: tests that compare two runs' figures, rows or
reports (serial and ``-n 2``, shards merged and the whole run, two call paths) compare them
:func:`untimed`.
"""
from __future__ import annotations

from typing import Any

#: The keys that hold a timing, wherever they are in a report.
TIMING_KEYS = frozenset({"latency", "latency_p95", "latency_p95_ci"})


def untimed(value: Any) -> Any:
    """``value`` (a report, its figures, rows, or anything of them) without its timings."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, (list, tuple)):
        return type(value)(untimed(v) for v in value)
    return value
