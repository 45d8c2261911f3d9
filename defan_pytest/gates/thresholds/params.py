"""The model call parameters a ``[models.<name>]`` table may carry: their names and kinds.

They are only type-checked here (:func:`param_problem`); the model registry
(:mod:`defan_pytest.calls.models`) gives them meaning.
"""
from __future__ import annotations

import types
from collections.abc import Iterable, Mapping
from typing import Any

from defan_pytest.gates.thresholds.keys import is_number
from defan_pytest.gates.thresholds.text import got

__all__ = ["MAX_NESTING", "MODEL_PARAM_KEYS", "param_problem"]

#: How deeply a model's ``litellm`` table may nest (tables and arrays).
MAX_NESTING = 32

# How each model parameter is checked: its accepted kind, also the wording of the message.
_STRING = "string"
_NUMBER = "number"
_INTEGER = "integer"
_TABLE = "table"
_MODEL_PARAM_KINDS: Mapping[str, str] = types.MappingProxyType(
    {
        "model": _STRING,
        "api_base": _STRING,
        "temperature": _NUMBER,
        "max_tokens": _INTEGER,
        "system_prompt": _STRING,
        "timeout": _NUMBER,
        "litellm": _TABLE,
        # A string, not a number: TOML would read ``version = 1.10`` as the float 1.1.
        "version": _STRING,
        # USD per million prompt / completion tokens (usage, --defan-budget); never sent.
        "price_in": _NUMBER,
        "price_out": _NUMBER,
        # This model's own pool: requests in flight and per minute (over the options); never sent.
        "concurrency": _INTEGER,
        "rpm": _NUMBER,
    }
)

#: Model call parameters a ``[models.<name>]`` table may carry, in the order messages list them.
MODEL_PARAM_KEYS: tuple[str, ...] = tuple(_MODEL_PARAM_KINDS)


def param_problem(key: str, value: Any) -> str | None:
    """What is wrong with ``value`` for the model parameter ``key`` (one of
    :data:`MODEL_PARAM_KEYS`), or ``None`` when it is acceptable."""
    kind = _MODEL_PARAM_KINDS[key]
    ok = {
        _STRING: isinstance(value, str),
        _NUMBER: is_number(value),
        _INTEGER: isinstance(value, int) and not isinstance(value, bool),
        _TABLE: isinstance(value, Mapping),
    }[kind]
    if not ok:
        article = "an" if kind == _INTEGER else "a"
        return f"expected {article} {kind}, {got(value)}"
    if kind == _TABLE and _depth(value) > MAX_NESTING:
        # Dotted table headers nest without limit in TOML; copying or hashing such a table
        # (the model's identity in the cache) would overflow the stack.
        return f"nested more than {MAX_NESTING} levels deep"
    return None


def _depth(value: Any) -> int:
    """How deeply tables and arrays nest in ``value`` (0 for a scalar), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, Mapping):
            children: Iterable[Any] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level + 1)
        if deepest > MAX_NESTING:
            break
        stack.extend((child, level + 1) for child in children)
    return deepest
