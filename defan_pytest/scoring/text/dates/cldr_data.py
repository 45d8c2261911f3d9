"""What Babel's CLDR data says about written dates, per locale: the full, long and medium date
patterns with a month name, and the format-context month names (wide and abbreviated), the
weekday and era names they may carry.  Read by :mod:`.cldr_dates`.

Built per script, lazily: every locale of one script (its own script or, as Babel's likely
subtags say, its language's) is read the first time a text in that script needs it.  The
locale files are read as they are stored, with Babel's inheritance (a territory variant such
as ``es_MX`` keeps the months of ``es`` unless it says otherwise) resolved here: Babel's own
loader copies every part of a locale (numbers, time zones, ...), which costs about five times
as much for the few keys read here.
"""
from __future__ import annotations

import gc
import pickle
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Dict, List, Optional, Tuple

__all__ = ["Variant", "Template", "script_of_char", "variants_of_script"]

#: A pattern's parts: ("y",), ("d",), ("M", width), ("E", width), ("G", width), ("lit", text).
Template = Tuple[Tuple[str, str], ...]

_PART = re.compile(r"'((?:[^']|'')*)'|(([a-zA-Z])\3*)|([^a-zA-Z']+)")
_NUMERIC = re.compile(r"\d")
_MONTH_WIDTH = {3: "abbreviated", 4: "wide"}


@dataclass(frozen=True)
class Variant:
    """One written form of a full date in one or more locales (locales that write it alike
    share it): the pattern's parts and the names its fields take."""

    template: Template
    #: month number -> its names (format context; of the pattern's width)
    months: Tuple[Tuple[int, Tuple[str, ...]], ...]
    weekdays: Tuple[str, ...]
    eras: Tuple[str, ...]
    #: the locales (their language codes) that write dates so
    languages: Tuple[str, ...]


def parse_pattern(pattern: str) -> Optional[Template]:
    """A CLDR date pattern as its parts, or ``None`` when it is not a full date with a month
    name (a numeric month, no day or no year, a field read here by no one)."""
    parts: List[Tuple[str, str]] = []
    for m in _PART.finditer(pattern):
        quoted, field, _, other = m.groups()
        if field is None:
            text = quoted.replace("''", "'") if quoted is not None else other.replace("''", "'")
            if parts and parts[-1][0] == "lit":
                parts[-1] = ("lit", parts[-1][1] + text)
            else:
                parts.append(("lit", text))
            continue
        letter, n = field[0], len(field)
        if letter == "y" and n in (1, 4):
            parts.append(("y", ""))
        elif letter == "d" and n <= 2:
            parts.append(("d", ""))
        elif letter == "M" and n in _MONTH_WIDTH:
            parts.append(("M", _MONTH_WIDTH[n]))
        elif letter in "Ec":
            parts.append(("E", "abbreviated" if n <= 3 else "wide"))
        elif letter == "G":
            parts.append(("G", ""))
        else:
            return None
    kinds = [k for k, _ in parts]
    if kinds.count("y") != 1 or kinds.count("d") != 1 or kinds.count("M") != 1:
        return None
    return tuple(parts)


# The Unicode script of a letter (the first word of its name) as CLDR's script code.
_SCRIPTS = {
    "LATIN": "Latn", "CYRILLIC": "Cyrl", "ARABIC": "Arab", "DEVANAGARI": "Deva", "ETHIOPIC": "Ethi",
    "ADLAM": "Adlm", "BENGALI": "Beng", "TAMIL": "Taml", "TIBETAN": "Tibt", "MYANMAR": "Mymr",
    "TIFINAGH": "Tfng", "TELUGU": "Telu", "CANADIAN": "Cans", "ORIYA": "Orya", "GREEK": "Grek",
    "NKO": "Nkoo", "HEBREW": "Hebr", "HANIFI": "Rohg", "OL": "Olck", "GURMUKHI": "Guru",
    "CHAKMA": "Cakm", "SYRIAC": "Syrc", "VAI": "Vaii", "MONGOLIAN": "Mong", "SUNUWAR": "Sunu",
    "KANNADA": "Knda", "SHAVIAN": "Shaw", "DESERET": "Dsrt", "LAO": "Laoo", "OSAGE": "Osge",
    "YI": "Yiii", "GUJARATI": "Gujr", "CHEROKEE": "Cher", "GEORGIAN": "Geor", "THAI": "Thai",
    "MEETEI": "Mtei", "ARMENIAN": "Armn", "MALAYALAM": "Mlym", "KHMER": "Khmr", "TAI": "Tavt",
    "SINHALA": "Sinh", "THAANA": "Thaa", "COPTIC": "Copt", "NYIAKENG": "Hmnp",
}


def script_of_char(char: str) -> Optional[str]:
    """CLDR's code of the script a letter is written in (``Latn``, ``Cyrl``), or ``None``."""
    name = unicodedata.name(char, "")
    return _SCRIPTS.get(name.split(" ", 1)[0]) if name else None


@lru_cache(maxsize=1)
def _locales_by_script() -> Dict[str, Tuple[str, ...]]:
    from babel.core import get_global, parse_locale
    from babel.localedata import locale_identifiers

    likely = get_global("likely_subtags")
    groups: Dict[str, List[str]] = {}
    for ident in sorted(locale_identifiers()):
        lang, _, script, _ = parse_locale(ident)[:4]
        if script is None:
            full = likely.get(lang) or likely.get(ident)
            script = parse_locale(full)[2] if full else None
        if script is not None:
            groups.setdefault(script, []).append(ident)
    return {k: tuple(v) for k, v in groups.items()}


_RAW: Dict[str, Dict[str, Any]] = {}


def _raw(name: str) -> Dict[str, Any]:
    """A locale file as stored (its own data, without what it inherits)."""
    if name not in _RAW:
        from babel.localedata import resolve_locale_filename

        with open(resolve_locale_filename(name), "rb") as f:
            data = pickle.load(f)
        _RAW[name] = {k: data[k] for k in ("months", "date_formats", "days", "eras") if k in data}
    return _RAW[name]


def _parent(name: str) -> Optional[str]:
    """Babel's parent of a locale (its ``localedata.load``): an exception, else the name less
    its last part; a script other than the language's likely one inherits from root."""
    from babel.core import get_global

    if name == "root":
        return None
    parent: Optional[str] = get_global("parent_exceptions").get(name)
    if parent:
        return parent
    parts = name.split("_")
    if len(parts) == 1:
        return "root"
    if len(parts) == 2 and len(parts[1]) == 4:  # sr_Latn: a script
        likely = get_global("likely_subtags").get(parts[0], "")
        if f"_{parts[1]}" not in likely:
            return "root"
    return "_".join(parts[:-1])


@lru_cache(maxsize=None)
def _chain(name: str) -> Tuple[str, ...]:
    """The locale and its ancestors, root first."""
    parent = _parent(name)
    return (*(_chain(parent) if parent is not None else ()), name)


def _value(name: str, path: Tuple[str, ...]) -> Dict[Any, Any]:
    """The merged dict at ``path`` (``("months", "format", "wide")``) for a locale: its
    ancestors' entries overridden by its own, an alias (``Alias``) followed."""
    merged: Dict[Any, Any] = {}
    for loc in _chain(name):
        node: Any = _raw(loc)
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
            if node is None:
                break
            if hasattr(node, "keys") and not isinstance(node, dict):  # babel.localedata.Alias
                node = _value(name, tuple(node.keys))
        if isinstance(node, dict):
            merged.update(node)
    return merged


@lru_cache(maxsize=None)
def variants_of_script(script: str) -> Tuple[Variant, ...]:
    """Every written form of a full date with a month name in the locales of ``script``."""
    enabled = gc.isenabled()
    gc.disable()  # the locale files make many objects that live on: no cyclic collection
    try:
        return _variants(script)
    finally:
        if enabled:
            gc.enable()


def _variants(script: str) -> Tuple[Variant, ...]:
    found: Dict[tuple, List[str]] = {}
    done: Dict[str, List[tuple]] = {}
    for ident in _locales_by_script().get(script, ()):
        parent = _parent(ident)
        # A locale that says nothing of its own here (most territory variants) writes as its
        # parent does.
        keys = done[parent] if not _raw(ident) and parent in done else _locale_variants(ident)
        done[ident] = keys
        for key in keys:
            found.setdefault(key, []).append(ident.split("_")[0])
    return tuple(
        Variant(t, m, w, e, tuple(dict.fromkeys(langs))) for (t, m, w, e), langs in found.items()
    )


def _locale_variants(ident: str) -> List[tuple]:
    """One locale's written forms of a full date: (template, months, weekdays, eras)."""
    out: List[tuple] = []
    formats = _value(ident, ("date_formats",))
    days = [_value(ident, ("days", c, w)) for c in ("format", "stand-alone") for w in ("wide", "abbreviated")]
    eras = _value(ident, ("eras", "abbreviated")), _value(ident, ("eras", "wide"))
    weekdays = tuple(sorted({str(v) for d in days for v in d.values()}))
    era_names = tuple(sorted({str(d[1]) for d in eras if 1 in d}))
    for width in ("full", "long", "medium"):
        pattern = formats.get(width)
        template = parse_pattern(getattr(pattern, "pattern", str(pattern))) if pattern else None
        if template is None:
            continue
        mwidth = next(w for k, w in template if k == "M")
        names = _value(ident, ("months", "format", mwidth))
        # Months as numbers ("8월") or CLDR's placeholders ("M08") are no month names.
        months = tuple(
            (n, (str(names[n]),)) for n in range(1, 13) if n in names and not _NUMERIC.search(str(names[n]))
        )
        if months:
            out.append((template, months, weekdays, era_names))
    return out
