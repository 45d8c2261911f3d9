"""What every reader checks, public or a user's own: the answer types a row may carry, a
value-typed gold that holds a value of its type, and the 15-row paraphrase blocks.

The answer types come from the scorer's registry (:mod:`defan_pytest.scoring.types`), asked
each time a file is read: the registry may grow after this module is imported.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from defan_pytest.dataset.domains import GROUP_SIZE
from defan_pytest.scoring import types

__all__ = ["answer_types", "check_blocks", "gold_problem", "type_table"]


def answer_types() -> tuple[str, ...]:
    """The answer types a row may carry: the names in the answer-type registry
    (:mod:`defan_pytest.scoring.types`), ``("name", "numeric", "date", "rank", "city")`` and any a
    plugin registered.

    Every reader and validator asks this function, each time it reads a file, and never keeps
    the answer across files: the registry may grow after this module is imported.
    """
    return types.names()


def type_table() -> dict[str, str]:
    """Normalised type name -> the canonical ``str`` object, built from :func:`answer_types`.

    Readers build it once per file: handing every row of a type the same ``str`` object keeps
    70k rows from holding 70k copies, and a dict lookup is the cheapest per-row check.
    """
    return {t: t for t in answer_types()}


def _reads_gold_values(type_: str) -> bool:
    """Does the answer type compare golds as typed values (numeric, date, rank, a plugin's own
    value type)?  Told by the type overriding ``gold_value``; a name-like type (``name``,
    ``city``) keeps the default and matches the gold's text, which needs no parsing."""
    try:
        kind = types.get(type_)
    except types.UnknownAnswerType:
        return False  # a name the reader accepts but the registry lacks: nothing to parse with
    return isinstance(kind, types.BaseAnswerType) and type(kind).gold_value is not types.BaseAnswerType.gold_value


def gold_problem(type_: str, raw: str) -> str | None:
    """Why the raw gold ``raw`` cannot be compared under ``type_``, or ``None`` when it can.

    A value type's gold must hold at least one value the type reads (``1,351,921`` for
    ``numeric``, ``601-650`` for ``rank``): a gold that holds none (``abc``, ``N/A``) could
    never be matched, and every response to it would count as a hallucination.  An empty gold
    (``""``, ``None``: nothing was awarded) and the ``online`` flag of ``city`` are fine.

    >>> gold_problem("numeric", "42.85") is None, gold_problem("name", "Marie Curie") is None
    (True, True)
    >>> gold_problem("numeric", "N/A")
    "answer 'N/A' holds no numeric value (a numeric gold is compared as one; fix the answer or the type)"
    """
    if not _reads_gold_values(type_):
        return None
    gold = types.parse_gold(type_, raw)  # cached per (type, text)
    if gold.empty or gold.virtual or gold.values:
        return None
    return f"answer {raw!r} holds no {type_} value (a {type_} gold is compared as one; fix the answer or the type)"


def check_blocks(
    rows: Sequence[tuple[str, str] | None],
    locate: Callable[[int], tuple[str, str]],
    label: str = "",
) -> list[str]:
    """Validate 15-row paraphrase blocks: a whole number of blocks, one answer and type each.

    ``rows`` are ``(answer, type)`` in position order, ``None`` for a row that already has a
    problem (it keeps its position but is not compared). ``locate(i)`` gives row ``i``'s
    location prefix (``"file:12"``) and short reference (``"line 12"``); it is only called to
    build messages, so the happy path formats no strings.
    """
    problems: list[str] = []
    where = f" of {label}" if label else ""
    for start in range(0, len(rows), GROUP_SIZE):
        window = enumerate(rows[start : start + GROUP_SIZE], start)
        block = [(i, r) for i, r in window if r is not None]
        if not block:
            continue
        i0, (answer0, type0) = block[0]
        for i, (answer, type_) in block[1:]:
            for what, value, first in (("answer", answer, answer0), ("type", type_, type0)):
                if value != first:
                    problems.append(
                        f"{locate(i)[0]}: {what} {value!r} differs from {first!r} at "
                        f"{locate(i0)[1]}, the first row of its {GROUP_SIZE}-row paraphrase "
                        f"block{where}"
                    )
    rest = len(rows) % GROUP_SIZE
    if rest:
        first_of_last = len(rows) - rest
        problems.append(
            f"{locate(first_of_last)[0]}: {len(rows)} rows{where} is not a multiple of "
            f"{GROUP_SIZE}: the last paraphrase block, starting here, has only {rest} rows"
        )
    return problems
