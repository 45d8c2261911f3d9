"""``[models."<name>"]`` tables whose name looks like a typo of a model's name.

A table applies only to the model of its exact name, so a misspelt one would be silently
ignored, and its limits with it: :func:`model_table_typos` makes that an error with "did you
mean ...?".
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from defan_pytest.gates.thresholds.text import dotted

__all__ = ["TYPO_EDITS", "model_table_typos"]

#: How many edits apart a ``[models."<name>"]`` table and a model's name may be to count as a
#: typo (see :func:`model_table_typos`).
TYPO_EDITS = 2


def _near(a: str, b: str) -> bool:
    """Within :data:`TYPO_EDITS` edits of each other (ignoring case), and by fewer than half the
    shorter name's length (``ab``/``ba`` are two names, ``my-rag``/``my-rga`` one)."""
    # Imported here: rapidfuzz is only needed once a run has model tables to check.
    from rapidfuzz.distance import OSA  # letters inserted, deleted, replaced or swapped

    d = OSA.distance(a.casefold(), b.casefold())
    return d <= TYPO_EDITS and 2 * d < min(len(a), len(b))


def model_table_typos(
    model: str,
    tables: Mapping[str, Mapping[str, Any]],
    sources: Mapping[str, str],
    registered: Iterable[str],
    is_model_string: Callable[[str], bool],
) -> list[str]:
    """Problems for ``[models."<name>"]`` tables whose name looks like a typo of a model's.

    The rule, when the run's ``model`` is a registered callable or a table: a table is reported
    when its name is within two edits (letters inserted, deleted, replaced or swapped, ignoring
    case) of ``model`` or of a registered model's name, and it names no model of its own - it is
    not ``model``, not registered, has no ``model`` key and is not a litellm model string
    (``is_model_string``). ``tables`` maps each table's name to its parameters, ``sources`` to
    the file it is in.
    """
    names = set(registered)
    if model not in names and model not in tables:
        return []  # a bare litellm string: any table may describe another model
    targets = sorted({model, *names})
    problems: list[str] = []
    for name, params in tables.items():
        if name == model or name in names or "model" in params or is_model_string(name):
            continue
        close = [t for t in targets if _near(name, t)]
        if close:
            problems.append(
                f"{sources.get(name, 'thresholds.toml')}: {dotted(('models', name))}: no model of "
                f"that name is registered; did you mean {close[0]!r}? (a table applies only to the "
                "model of its exact name, so its limits are ignored)"
            )
    return problems
