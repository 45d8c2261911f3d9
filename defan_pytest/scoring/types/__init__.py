"""The answer types, as one registry read by the dataset loaders, ``defan score`` and the scorer,
and the golds read through them.

Each type is a module here with one :class:`AnswerType` implementation: ``name``, ``numeric``,
``date``, ``rank``, ``city``, built on one of the two shared flows, :class:`ValueAnswerType`
(:mod:`.value`) and :class:`EntityAnswerType` (:mod:`.entity`).  Adding a type is one module
plus one :func:`register` call: a plugin or a ``conftest.py`` can register its own, and an
installed package can name it in the ``defan_pytest`` entry-point group as ``type.<name>``
(see docs/ARCHITECTURE.md, "How to add an answer type").  :data:`REGISTRY` is the one
:class:`~defan_pytest.registry.Registry` behind :func:`register`, :func:`unregister`,
:func:`get` and :func:`names`.

>>> get("rank").bare("386th", make_context("What was Kobe University's QS rank in 2022?", "rank"))
'386'
>>> get("colour")
Traceback (most recent call last):
...
defan_pytest.scoring.types.UnknownAnswerType: unknown answer type 'colour'; allowed: name, numeric, date, rank, city
"""
from __future__ import annotations

import re
from typing import Tuple, Union

from defan_pytest.registry import Registry, UnknownEntry
from defan_pytest.scoring.text.memo import short_text_memo
from defan_pytest.scoring.text.names import strip_footnotes
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
from defan_pytest.scoring.types.entity import EntityAnswerType
from defan_pytest.scoring.types.name import NameType
from defan_pytest.scoring.types.numeric import NumericType
from defan_pytest.scoring.types.rank import RankType
from defan_pytest.scoring.types.value import ValueAnswerType

__all__ = [
    "NONE_CLAIM",
    "ONLINE_CLAIM",
    "REGISTRY",
    "AnswerType",
    "BaseAnswerType",
    "Context",
    "Entity",
    "EntityAnswerType",
    "Extraction",
    "Gold",
    "UnknownAnswerType",
    "ValueAnswerType",
    "get",
    "make_context",
    "names",
    "parse_gold",
    "register",
    "unregister",
]


class UnknownAnswerType(UnknownEntry):
    """A row or a call names an answer type that is not registered."""


_SPLIT_ALTERNATIVES = re.compile(r"\s*;\s*|\s+&\s+")
@short_text_memo(maxsize=16384)
def parse_gold(type_: str, raw: str) -> Gold:
    """Parse a raw gold string: footnotes dropped, ``None`` empty, ``;``/`` & `` split (and in
    a name gold `` and `` or a comma between full personal names, clarification 21), each
    alternative read by the type (:meth:`AnswerType.gold_value`).

    Cached per ``(type, text)``; the cache is dropped whenever a type comes or goes, so that a
    gold parsed by one type never survives under another type of the same name.

    >>> parse_gold("numeric", "1,351,921[b]").values, parse_gold("name", "None").empty
    (((Decimal('1351921'), 0),), True)
    """
    kind = get(type_)
    text, virtual = kind.gold_text(strip_footnotes(raw).strip())
    if text.casefold() == "none":
        text = ""
    alts = tuple(p for a in _SPLIT_ALTERNATIVES.split(text) if a.strip() for p in kind.gold_alternatives(a.strip()))
    empty = not alts and not virtual
    values = tuple(v for v in (kind.gold_value(a) for a in alts) if v is not None)
    return Gold(type_, raw, alts, empty, virtual, values)


def _acceptable(answer_type: object) -> Union[bool, str]:
    """Whether ``answer_type`` may be registered: an instance (not its class), a lower-case
    identifier for a name, and the :class:`AnswerType` protocol implemented."""
    if isinstance(answer_type, type):
        # A class has every attribute the protocol asks for, but its methods want an instance
        # (an entry point naming the class is called to make one).
        return f"{answer_type!r} is a class; register an instance of it"
    name = getattr(answer_type, "name", None)
    if not isinstance(name, str) or not name.isidentifier() or name != name.lower():
        return "expected a lower-case identifier such as 'colour' as its name"
    if not isinstance(answer_type, AnswerType):
        return f"{answer_type!r} does not implement the AnswerType protocol"
    return True


def _name_of(answer_type: AnswerType) -> str:
    """An answer type's name ("" when it has none that is a string: refused as such)."""
    name = getattr(answer_type, "name", None)
    return name if isinstance(name, str) else ""


#: Every answer type, built-in ones first (they cannot be removed); entry points named
#: ``type.<name>`` in the ``defan_pytest`` group are loaded the first time it is read.
REGISTRY: Registry[AnswerType] = Registry(
    "answer type",
    _acceptable,
    key=_name_of,
    on_change=parse_gold.cache_clear,
    entry_point_prefix="type",
    unknown=UnknownAnswerType,
)
for _type in (NameType(), NumericType(), DateType(), RankType(), CityType()):
    REGISTRY.register(_type)
REGISTRY.seal_built_ins()
del _type


def register(answer_type: AnswerType) -> AnswerType:
    """Add ``answer_type`` to the registry (returns it, so it can decorate an instance).

    Its ``name`` must be a new, lower-case identifier; the built-in types cannot be replaced.
    A :class:`~defan_pytest.registry.RegistryError` (a ``DefanError``) says why not.
    """
    return REGISTRY.register(answer_type)


def unregister(name: str) -> None:
    """Remove a type registered with :func:`register` (the built-in types stay)."""
    REGISTRY.unregister(name)


def get(name: str) -> AnswerType:
    """The answer type called ``name``; :class:`UnknownAnswerType` lists the valid ones."""
    return REGISTRY.get(name)


def names() -> Tuple[str, ...]:
    """The registered type names, built-in ones first, in registration order."""
    return REGISTRY.names()
