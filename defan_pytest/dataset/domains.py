"""The DefAn domain registry, the :class:`Row` every reader produces, and the answer types.

This is the leaf of the ``dataset`` package: every other submodule imports from here, and this
module imports none of them at import time (``Domain.sha256`` looks the pinned digests up in
:mod:`defan_pytest.dataset.fetch` when asked).
"""
from __future__ import annotations

import os
import types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Union

from defan_pytest.errors import DefanError, format_problems

__all__ = [
    "GROUP_SIZE",
    "DOMAINS",
    "DatasetError",
    "Domain",
    "Row",
    "StrPath",
    "answer_types",
    "get_domain",
    "parse_domains",
]

StrPath = Union[str, "os.PathLike[str]"]

#: Rows per paraphrase group in the paraphrased public files (one question asked 15 ways).
GROUP_SIZE = 15


def answer_types() -> tuple[str, ...]:
    """The answer types a row may carry: the names in the answer-type registry
    (:mod:`defan_pytest.scoring.types`), ``("name", "numeric", "date", "rank", "city")`` and any a
    plugin registered.

    Every reader and validator asks this function, each time it reads a file, and never keeps
    the answer across files: the registry may grow after this module is imported.
    """
    from defan_pytest.scoring import types  # the scorer's registry; imported late, only when data is read

    return types.names()


def __getattr__(name: str) -> object:
    # ``ANSWER_TYPES`` is computed on each access rather than bound at import time, so it always
    # agrees with answer_types() (PEP 562 module attribute).
    if name == "ANSWER_TYPES":
        return answer_types()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    from defan_pytest.scoring import types

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
    from defan_pytest.scoring import types

    gold = types.parse_gold(type_, raw)  # cached per (type, text)
    if gold.empty or gold.virtual or gold.values:
        return None
    return f"answer {raw!r} holds no {type_} value (a {type_} gold is compared as one; fix the answer or the type)"


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


class DatasetError(DefanError):
    """The data could not be found, downloaded, verified or parsed.

    ``problems`` holds every individual problem (``"file:line: what"``); the message is the
    problem itself when there is one, else the list printed by
    :func:`defan_pytest.errors.format_problems` under the file's name.
    """


def _raise_problems(path: StrPath, problems: Sequence[str]) -> None:
    """Raise one DatasetError listing ``problems`` (a no-op when there are none)."""
    if not problems:
        return
    if len(problems) == 1:
        raise DatasetError(problems[0], problems)
    raise DatasetError(format_problems(problems, os.fspath(path)), problems)


# --------------------------------------------------------------------------------------------
# Domains
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Domain:
    """One public DefAn domain: its id, its file number (1..8), a title, and whether its file
    holds paraphrase groups of :data:`GROUP_SIZE` rows (all but ``math``)."""

    id: str
    file_index: int
    title: str
    paraphrased: bool

    @property
    def filename(self) -> str:
        """The public file's name, e.g. ``QA_domain_3_public.csv``."""
        return f"QA_domain_{self.file_index}_public.csv"

    @property
    def sha256(self) -> str:
        """The pinned sha256 of the public file."""
        # Imported here: fetch imports this module, and the digests belong with the download.
        from defan_pytest.dataset import fetch

        return fetch.PUBLIC_SHA256[self.filename]


#: Domain id -> :class:`Domain`, in file order 1..8 (read-only).
DOMAINS: Mapping[str, Domain] = types.MappingProxyType(
    {
        d.id: d
        for d in (
            Domain("sports", 1, "FIFA World Cup finals", True),
            Domain("census", 2, "Australian census", True),
            Domain("nobel", 3, "Nobel Prizes", True),
            Domain("entertainment", 4, "Oscars", True),
            Domain("world_org", 5, "UN and OIC membership", True),
            Domain("qs_ranking", 6, "QS World University Rankings", True),
            Domain("conference_venue", 7, "Conference venues", True),
            Domain("math", 8, "Math word problems (AQuA-style)", False),
        )
    }
)


def get_domain(name: str | Domain) -> Domain:
    """Return the public domain called ``name`` (case and surrounding space ignored).

    Raises :class:`DatasetError` listing the valid ids when there is no such domain.
    """
    if isinstance(name, Domain):
        return name
    key = name.strip().lower()
    try:
        return DOMAINS[key]
    except KeyError:
        raise DatasetError(
            f"unknown DefAn domain {name!r}; valid domains: {', '.join(DOMAINS)}"
        ) from None


def _split_names(values: str | Domain | Iterable[str | Domain] | None) -> list[str | Domain]:
    """Flatten repeatable and comma-separated values into single names (blanks skipped)."""
    if values is None:
        return []
    if isinstance(values, (str, Domain)):
        values = [values]
    names: list[str | Domain] = []
    for value in values:
        if isinstance(value, Domain):
            names.append(value)
            continue
        names.extend(part.strip() for part in value.split(",") if part.strip())
    return names


def parse_domains(values: str | Domain | Iterable[str | Domain] | None) -> tuple[Domain, ...]:
    """Parse domain selections such as ``["sports,nobel", "math"]``.

    Accepts one string, or an iterable of strings (a repeatable command-line option), each of
    which may hold comma-separated names. Returns the selected domains once each, in registry
    (file) order. ``None`` or no names at all selects every domain. An unknown name raises
    :class:`DatasetError` listing the valid ids.
    """
    names = _split_names(values)
    if not names:
        return tuple(DOMAINS.values())
    unknown = [
        n for n in names if not isinstance(n, Domain) and n.strip().lower() not in DOMAINS
    ]
    if unknown:
        shown = ", ".join(repr(str(n)) for n in unknown)
        raise DatasetError(f"unknown DefAn domain {shown}; valid domains: {', '.join(DOMAINS)}")
    wanted = {get_domain(n).id for n in names}
    return tuple(d for d in DOMAINS.values() if d.id in wanted)


# --------------------------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Row:
    """One question of the benchmark.

    ``group`` is the 0-based paraphrase group within the domain and ``para`` the 0-based
    paraphrase index within the group. ``answer`` is the raw gold string exactly as in the file
    (gold parsing happens in ``equivalence``). ``source`` is the file path and ``line`` the
    1-based physical line where the row starts in it.
    """

    domain: str
    group: int
    para: int
    question: str
    answer: str
    type: str
    source: str
    line: int

    @property
    def id(self) -> str:
        """Stable id, e.g. ``nobel-q0042-p03``."""
        return f"{self.domain}-q{self.group:04d}-p{self.para:02d}"

    @property
    def group_key(self) -> str:
        """Id of the paraphrase group, unique across domains, e.g. ``nobel-q0042``."""
        return f"{self.domain}-q{self.group:04d}"
