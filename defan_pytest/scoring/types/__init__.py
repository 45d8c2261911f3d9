"""The answer types, as one registry read by the dataset loaders, ``defan score`` and the scorer.

Each type is a module here with one :class:`AnswerType` implementation: ``name``, ``numeric``,
``date``, ``rank``, ``city``.  Adding a type is one module plus one :func:`register` call (a
plugin or a ``conftest.py`` can register its own; see docs/ARCHITECTURE.md, "How to add an
answer type").

>>> get("rank").bare("386th", make_context("What was Kobe University's QS rank in 2022?", "rank"))
'386'
>>> get("colour")
Traceback (most recent call last):
...
defan_pytest.scoring.types.UnknownAnswerType: unknown answer type 'colour'; allowed: name, numeric, date, rank, city
"""
from __future__ import annotations

from typing import Dict, Tuple

from defan_pytest.errors import DefanError
from defan_pytest.scoring.types.base import (
    NONE_CLAIM,
    ONLINE_CLAIM,
    AnswerType,
    BaseAnswerType,
    Context,
    Entity,
    Extraction,
    Gold,
    make_context,
)
from defan_pytest.scoring.types.city import CityType
from defan_pytest.scoring.types.date import DateType
from defan_pytest.scoring.types.name import NameType
from defan_pytest.scoring.types.numeric import NumericType
from defan_pytest.scoring.types.rank import RankType

__all__ = [
    "NONE_CLAIM",
    "ONLINE_CLAIM",
    "AnswerType",
    "BaseAnswerType",
    "Context",
    "Entity",
    "Extraction",
    "Gold",
    "UnknownAnswerType",
    "get",
    "make_context",
    "names",
    "register",
    "unregister",
]


class UnknownAnswerType(DefanError):
    """A row or a call names an answer type that is not registered."""


_REGISTRY: Dict[str, AnswerType] = {}
_BUILT_IN: Tuple[str, ...] = ()


def register(answer_type: AnswerType) -> AnswerType:
    """Add ``answer_type`` to the registry (returns it, so it can decorate an instance).

    Its ``name`` must be a new, non-empty lower-case identifier; the built-in types cannot be
    replaced.
    """
    name = getattr(answer_type, "name", None)
    if not isinstance(name, str) or not name.isidentifier() or name != name.lower():
        raise DefanError(f"answer type name {name!r}: expected a lower-case identifier such as 'colour'")
    if not isinstance(answer_type, AnswerType):
        raise DefanError(f"answer type {name!r}: {answer_type!r} does not implement the AnswerType protocol")
    if name in _REGISTRY:
        raise DefanError(f"answer type {name!r} is already registered")
    _REGISTRY[name] = answer_type
    _forget_parsed()
    return answer_type


def unregister(name: str) -> None:
    """Remove a type registered with :func:`register` (the built-in types stay)."""
    if name in _BUILT_IN:
        raise DefanError(f"answer type {name!r} is built in and cannot be removed")
    if _REGISTRY.pop(name, None) is not None:
        _forget_parsed()


def get(name: str) -> AnswerType:
    """The answer type called ``name``; :class:`UnknownAnswerType` lists the valid ones."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownAnswerType(f"unknown answer type {name!r}; allowed: {', '.join(_REGISTRY)}") from None


def names() -> Tuple[str, ...]:
    """The registered type names, built-in ones first, in registration order."""
    return tuple(_REGISTRY)


def _forget_parsed() -> None:
    # Golds are parsed once per (type, text) and cached; a type that comes or goes must not
    # leave golds parsed by another type of the same name behind.
    from defan_pytest.scoring.equivalence import parse_gold

    parse_gold.cache_clear()


for _type in (NameType(), NumericType(), DateType(), RankType(), CityType()):
    _REGISTRY[_type.name] = _type
_BUILT_IN = tuple(_REGISTRY)
del _type
