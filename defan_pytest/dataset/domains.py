"""The DefAn domain registry with the pinned public files, the :class:`Row` every reader
produces, and :class:`DatasetError`.

This is the leaf of the ``dataset`` package: every other submodule imports from here, and this
module imports none of them.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Union

from defan_pytest.errors import DefanError, format_problems

__all__ = [
    "GROUP_SIZE",
    "DOMAINS",
    "PUBLIC_COMMIT",
    "PUBLIC_SHA256",
    "DatasetError",
    "Domain",
    "Row",
    "StrPath",
    "get_domain",
    "parse_domains",
    "raise_problems",
    "split_names",
]

StrPath = Union[str, "os.PathLike[str]"]

#: Rows per paraphrase group in the paraphrased public files (one question asked 15 ways).
GROUP_SIZE = 15

#: Upstream commit of github.com/ashikiut/DefAn whose ``DefAn-public/`` folder is the public
#: split. Pinned so every user scores against byte-identical questions and golds.
PUBLIC_COMMIT = "3fcefd0ee77435f214eff79860f5f4c48f184960"

#: sha256 of each public file at :data:`PUBLIC_COMMIT` (from ``defan-public/SOURCE.md``).
PUBLIC_SHA256: Mapping[str, str] = MappingProxyType(
    {
        "QA_domain_1_public.csv": "992a3e1f5061c4ada8663b9a7f95ceb61ade6166d2fc4699c525828d825a0d10",
        "QA_domain_2_public.csv": "8f922d2aabb32c7dcd9954be54ded710ba22348133ab5e9371ebe1142bf73243",
        "QA_domain_3_public.csv": "c8fb6f346de998070983a8ed17e9eeb255fdf4941615f14d73eb6e843960939d",
        "QA_domain_4_public.csv": "1f41941183ea4f689ebaf27d2a237312a299548908b3bd1fa9f4066be6906231",
        "QA_domain_5_public.csv": "963e7fdf1415dce70f0d6290b83714579b5afe92ca7744244af5cf2fbf5b7e70",
        "QA_domain_6_public.csv": "9cd8a218912bb357f04cbdf2a84088647e461346eceff4fd51290b9896b64ecf",
        "QA_domain_7_public.csv": "ac63800c4ab19d2edc1dcc08bd12f8fbf96982e91008ec6438030c301d1c0016",
        "QA_domain_8_public.csv": "9f899e95bbbc81d38417a63c3814b4bc11efa4e4c3e0836e81e76a398a766717",
    }
)


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


class DatasetError(DefanError):
    """The data could not be found, downloaded, verified or parsed.

    ``problems`` holds every individual problem (``"file:line: what"``); the message is the
    problem itself when there is one, else the list printed by
    :func:`defan_pytest.errors.format_problems` under the file's name.
    """


def raise_problems(path: StrPath, problems: Sequence[str]) -> None:
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
        """The pinned sha256 of the public file (read from :data:`PUBLIC_SHA256` when asked)."""
        return PUBLIC_SHA256[self.filename]


#: Domain id -> :class:`Domain`, in file order 1..8 (read-only).
DOMAINS: Mapping[str, Domain] = MappingProxyType(
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


def split_names(values: str | Domain | Iterable[str | Domain] | None) -> list[str | Domain]:
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
    names = split_names(values)
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
    (gold parsing happens in :func:`defan_pytest.scoring.types.parse_gold`). ``source`` is the
    file path and ``line`` the 1-based physical line where the row starts in it.
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
