"""Countries by their names in every language (SCORING.md clarifications 16 and 18: a place's
other names, exonyms and local spellings match it; a national team is named by its country).

The names are the Unicode CLDR's, as Babel ships them: every locale's name of every territory
(``Deutschland``, ``Βραζιλία``, ``Holland`` (Estonian, Icelandic), ``Alankomaat``, ``Hy Lạp``).
The index is built once, on first need, from Babel's locale files of each language and script
(about 0.5 s); each file is read and dropped, so the index is all that stays in memory (Babel's
own loader keeps every locale it reads, some 150 MB for all of them).
"""
from __future__ import annotations

import pickle
import re
import unicodedata
from functools import lru_cache
from importlib import resources
from typing import Dict, FrozenSet, Optional, Set, Tuple

from defan_pytest.scoring.text.memo import short_text_memo

__all__ = ["country_codes", "english_countries", "is_country_of", "is_demonym", "official_short"]


def _key(name: str) -> str:
    """A country name folded for the index: NFKD without combining marks, case-folded, one
    space between words, ``’`` as ``'``."""
    text = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
    return " ".join(text.replace("’", "'").casefold().split())


def _is_country(code: str) -> bool:
    return len(code) == 2 and code.isalpha() and code.isupper()


def _locale_files() -> Tuple[str, ...]:
    """Babel's locale files of a language, or a language in a script (``sr_Latn``); not the
    regional variants, which repeat their language's names."""
    root = resources.files("babel") / "locale-data"
    out = []
    for entry in root.iterdir():
        name = entry.name
        if not name.endswith(".dat"):
            continue
        parts = name[:-4].split("_")
        if len(parts) == 1 or (len(parts) == 2 and len(parts[1]) == 4 and parts[1].istitle()):
            out.append(name)
    return tuple(sorted(out))


@lru_cache(maxsize=1)
def _index() -> Dict[str, FrozenSet[str]]:
    """Country name (folded) -> the ISO 3166 codes of the countries it names."""
    root = resources.files("babel") / "locale-data"
    index: Dict[str, Set[str]] = {}
    for name in _locale_files():
        with (root / name).open("rb") as f:
            data = pickle.load(f)  # Babel's own locale data, installed with it
        for code, country in data.get("territories", {}).items():
            if _is_country(code) and isinstance(country, str):
                index.setdefault(_key(country), set()).add(code)
    return {k: frozenset(v) for k, v in index.items()}


@lru_cache(maxsize=1)
def _english() -> Dict[str, str]:
    """ISO code -> the English name (CLDR's ``en``)."""
    from babel import Locale

    return {code: name for code, name in Locale("en").territories.items() if _is_country(code)}


@lru_cache(maxsize=1)
def _english_keys() -> FrozenSet[str]:
    return frozenset(_key(n) for n in _english().values())


def is_country_of(name: str) -> bool:
    """Does ``name`` end with an English country name (``Brazil``, ``West Germany``)?  Cheap:
    only the English names are read."""
    words = _key(name).split()
    keys = _english_keys()
    return any(" ".join(words[i:]) in keys for i in range(len(words)))


@short_text_memo(maxsize=4096)
def country_codes(name: str) -> FrozenSet[str]:
    """The countries ``name`` names in any language CLDR records (``Deutschland`` -> DE)."""
    if len(name) > 60:
        return frozenset()
    return _index().get(_key(name), frozenset())


def english_countries(name: str) -> Tuple[str, ...]:
    """The English names of the countries ``name`` names in any language (``Holland`` ->
    ``Netherlands``), or ``()``."""
    english = _english()
    return tuple(sorted(english[c] for c in country_codes(name) if c in english))


_DEMONYM_ENDINGS = ("ian", "an", "n", "ese", "ish", "i", "ean", "ic")


@short_text_memo(maxsize=4096)
def is_demonym(word: str) -> bool:
    """Is ``word`` an adjective of nationality made from an English country name (``Brazilian``,
    ``Italian``, ``Chinese``, ``German``, ``Israeli``)?  A single word only; a country name itself
    is none (``Oman``)."""
    k = _key(word)
    if " " in k or len(k) < 5 or k in _english_keys():
        return False
    for country in _english_keys():
        if " " in country or not k.startswith(country[:3]):
            continue
        stems = {country, country[:-1]} if country[-1] in "aeiouy" else {country}
        if any(k == stem + end for stem in stems for end in _DEMONYM_ENDINGS):
            return True
        if country.endswith("y") and k == country[:-1]:
            return True  # "German"
    return False


# The state's form before "of" in an official name (English): "Federal Republic of Germany",
# "Kingdom of the Netherlands", "Republic of Korea".  CLDR lists short names only.
_OFFICIAL = re.compile(
    r"^(?:the\s+)?(?:(?:federal|democratic|people'?s|islamic|socialist|united|federative|hellenic|"
    r"plurinational|bolivarian|oriental|arab|co-operative|cooperative)\s+)*"
    r"(?:republic|kingdom|state|commonwealth|federation|principality|grand\s+duchy|sultanate|emirate)"
    r"\s+of\s+(?:the\s+)?(?P<country>.+)$",
    re.I,
)


def official_short(name: str) -> Optional[str]:
    """The country of an official name (``Federal Republic of Germany`` -> ``Germany``), when
    what follows ``of`` is an English country name; else ``None``."""
    m = _OFFICIAL.match(" ".join(name.replace("’", "'").split()))
    if m is None:
        return None
    country = m.group("country").strip(" .")
    return country if _key(country) in _english_keys() else None
