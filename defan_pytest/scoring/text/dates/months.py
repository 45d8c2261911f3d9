"""What dateparser's per-language data says about dates (its ~200 CLDR-derived languages),
folded for lookup and built once, lazily: month words with their inflected forms, connectives,
year and day words, weekdays, the CJK and Korean units, and the order of languages by use.
Read by :mod:`defan_pytest.scoring.text.dates.parse`, through :func:`month_number`: the month one word
names, with the response's language deciding a word that two languages read differently."""
from __future__ import annotations

import importlib
import pkgutil
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Dict, FrozenSet, List, Optional, Set

from defan_pytest.scoring.text.language import language

__all__ = ["MARKS", "WORD", "MonthData", "fold", "load", "english_month", "month_number", "strip_accents"]


def _mark_class() -> str:
    # Combining marks (Indic vowel signs and viramas, Thai, Hebrew points, ...) are part of a
    # word, but Python's ``re`` has no \p{M}: collect them once from the blocks that use them.
    out = []
    for lo, hi in ((0x0300, 0x1100), (0x1700, 0x1B80), (0xA800, 0xAB00)):
        for cp in range(lo, hi):
            if unicodedata.category(chr(cp)).startswith("M"):
                out.append(chr(cp))
    ranges: List[str] = []
    start = prev = None
    for c in out:
        if prev is not None and ord(c) == ord(prev) + 1:
            prev = c
            continue
        if start is not None and prev is not None:
            ranges.append(start if start == prev else f"{start}-{prev}")
        start = prev = c
    if start is not None and prev is not None:
        ranges.append(start if start == prev else f"{start}-{prev}")
    # Zero-width (non-)joiners sit inside words of Indic scripts ("ഒക്\u200cടോബർ").
    return "".join(ranges) + "\u200c\u200d"


MARKS = _mark_class()
#: One word of letters in any script (with its combining marks).
WORD = rf"[^\W\d_](?:[^\W\d_]|[{MARKS}])*"


@dataclass(frozen=True)
class MonthData:
    """What dateparser's language data says about dates, folded for lookup."""

    #: folded month word -> month -> languages that write it so
    months: Dict[str, Dict[int, FrozenSet[str]]]
    #: the same for full month names only (no abbreviation such as "out" of "outubro")
    full: Dict[str, Dict[int, FrozenSet[str]]]
    #: connectives ("de", "of", "del", "roku") and year words ("г", "года", "r", "年")
    connectives: FrozenSet[str]
    year_words: FrozenSet[str]
    #: day words ("d." in "1946 m. lapkričio 19 d.")
    day_words: FrozenSet[str]
    #: words written before a month's number ("tháng" in "19 tháng 11, 1946")
    month_units: FrozenSet[str]
    weekdays: FrozenSet[str]
    #: languages by use (dateparser's ``language_order``), for a word of several months
    rank: Dict[str, int]
    #: the unit patterns of the languages that write months as numbers (年/月/日, 년/월/일)
    cjk_full: "re.Pattern[str]"
    cjk_year_month: "re.Pattern[str]"
    cjk_month_day: "re.Pattern[str]"
    cjk_year: "re.Pattern[str]"
    #: any of those units (the CJK forms are tried only in text that has one)
    cjk_unit: "re.Pattern[str]"


_MONTH_KEYS = ("january", "february", "march", "april", "may", "june", "july", "august",
               "september", "october", "november", "december")
_WEEKDAY_KEYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_ROMAN = re.compile(r"^[ivxlc]+$")


def fold(word: str) -> str:
    """A word as the month data is keyed: NFC, case-folded, no final dot."""
    # lower(), not casefold(): the month words also make a case-insensitive regex, and
    # casefold() expands some letters ("ΐ" of "Μαΐου") that the regex would not.
    return unicodedata.normalize("NFC", word.lower()).rstrip(".\u0970\u05f3")


def strip_accents(word: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", word) if not unicodedata.combining(c))


def _alternation(words: Set[str]) -> str:
    return "(?:" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)) + ")"


@lru_cache(maxsize=1)
def load() -> MonthData:
    """Build the month map once from dateparser's language data (about half a second).

    Long because it is one pass over every language's table, collecting each kind of word as
    it goes; split, the passes would each walk the ~200 tables again."""
    import dateparser.data.date_translation_data as tables
    from dateparser.data.languages_info import language_order

    months: Dict[str, Dict[int, Set[str]]] = {}
    full: Dict[str, Dict[int, Set[str]]] = {}
    connectives: Set[str] = set()
    year_words: Set[str] = set()
    day_words: Set[str] = set()
    weekdays: Set[str] = set()
    cjk_y: Set[str] = set()
    month_units: Set[str] = set()
    cjk_m: Set[str] = set()
    cjk_d: Set[str] = set()
    for mod in pkgutil.iter_modules(tables.__path__):
        lang = mod.name.split("-")[0]
        info = importlib.import_module(f"{tables.__name__}.{mod.name}").info
        sources = [info] + list((info.get("locale_specific") or {}).values())
        numeric_months = False
        for src in sources:
            for number, key in enumerate(_MONTH_KEYS, 1):
                forms = {fold(f) for f in src.get(key, ())}
                for f in forms:
                    if re.match(r"^\d+\D+$", f):  # "5月", "5월": a number and a month unit
                        numeric_months = True
                        cjk_m.add(f.lstrip("0123456789"))
                        continue
                    unit = re.match(rf"^({WORD}) \d+$", f)
                    if unit:  # "tháng 11" (Vietnamese): a month word before its number
                        month_units.add(unit.group(1))
                        continue
                    # Two Latin letters ("no", "me", "ma") are words far more often than months.
                    if len(f) < (3 if f.isascii() else 2) or _ROMAN.match(f) or not re.fullmatch(WORD, f):
                        continue
                    # An abbreviation is a form that a longer form of the month begins with
                    # ("out" of "outubro", "sie" of "sierpnia"); one letter more is an
                    # inflection ("listopad", "listopada"; "maj", "maja").
                    abbreviation = any(len(g) > len(f) + 1 and g.startswith(f) for g in forms)
                    for key_form in {f, strip_accents(f)}:
                        months.setdefault(key_form, {}).setdefault(number, set()).add(lang)
                        if not abbreviation:
                            full.setdefault(key_form, {}).setdefault(number, set()).add(lang)
            for key in _WEEKDAY_KEYS:
                weekdays.update(fold(f) for f in src.get(key, ()))
            # Connectives: the words of belonging ("of", "de", "del") and the other words
            # dateparser skips inside a date, except English ones ("and", "at", "the") and
            # single letters ("y", "i", "w"): "July and 1950" is no date.
            skip = [] if lang == "en" else [w for w in src.get("skip", ()) if len(w) > 1]
            for word in skip + list(src.get("pertain", ()) or ()):
                w = fold(word)
                if re.fullmatch(WORD, w):
                    connectives.add(w)
            year_words.update(fold(w) for w in src.get("year", ()) if re.fullmatch(WORD, fold(w)))
            day_words.update(fold(w) for w in src.get("day", ()) if re.fullmatch(WORD, fold(w)))
        if numeric_months:
            cjk_y.update(fold(w) for w in info.get("year", ()) if len(w) <= 2)
            cjk_d.update(fold(w) for w in info.get("day", ()) if len(w) <= 2)
    # A word that is a connective, a year or a day word somewhere ("de", "den", "m") is no month.
    for w in connectives | year_words | day_words:
        months.pop(w, None)
        full.pop(w, None)
    y, m, d = _alternation(cjk_y), _alternation(cjk_m), _alternation(cjk_d)
    return MonthData(
        months={w: {k: frozenset(v) for k, v in by.items()} for w, by in months.items()},
        full={w: {k: frozenset(v) for k, v in by.items()} for w, by in full.items()},
        connectives=frozenset(connectives),
        year_words=frozenset(year_words | {fold(w) for w in cjk_y}),
        day_words=frozenset(day_words),
        month_units=frozenset(month_units),
        weekdays=frozenset(weekdays),
        rank={lang: i for i, lang in reversed(list(enumerate(x.split("-")[0] for x in language_order)))},
        cjk_full=re.compile(
            rf"(?<!\d)(?P<y>\d{{4}})\s?{y}\s?(?P<m>\d{{1,2}})\s?{m}\s?(?P<d>\d{{1,2}})(?:\s?{d})?(?!\d)"
        ),
        cjk_year_month=re.compile(rf"(?<!\d)(?P<y>\d{{4}})\s?{y}\s?(?P<m>\d{{1,2}})\s?{m}"),
        cjk_month_day=re.compile(rf"(?<!\d)(?P<m>\d{{1,2}})\s?{m}\s?(?P<d>\d{{1,2}})\s?{d}"),
        cjk_year=re.compile(rf"(?<!\d)(?P<y>\d{{4}})\s?{y}"),
        cjk_unit=re.compile(_alternation(cjk_y | cjk_m | cjk_d)),
    )


def _language_of(text: str) -> str:
    # The response's language decides a word that is a different month in two languages
    # ("listopad": November in Polish and Czech, October in Croatian).
    return language(text)


def month_number(
    word: str,
    text: str = "",
    full_only: bool = False,
    lang: Optional[Callable[[], str]] = None,
    english_only_in_english: bool = False,
) -> Optional[int]:
    """The month that ``word`` names in some language, or ``None``.

    An English month word is read as English (``mar``, ``may``, ``dec``).  Otherwise a full
    month name of any language counts, and an abbreviation (``out`` of ``outubro``, ``set``,
    ``sie``) only outside English text, where these are common words; ``full_only`` (dates
    without a year, where a short word next to a number is rarely a month) takes full names
    only.  A word that is a different month in different languages takes the month of
    ``text``'s language (``lang``: a function that returns it, for a caller that asks once
    per text), else the month of the most used language.  ``english_only_in_english``: in
    English text, English month words only.
    """
    data = load()
    key = fold(word)
    if key not in data.months:
        key = strip_accents(key)
    by_month = data.months.get(key)
    if by_month is None:
        return None
    for number, langs in by_month.items():
        if "en" in langs:
            return number
    language = lang() if lang is not None else (_language_of(text) if text else "")
    if (full_only or english_only_in_english) and language == "en":
        return None  # "3 out of 5": in English text a date without a year is an English one
    if full_only or language == "en":
        by_month = data.full.get(key, {})
        if not by_month:
            return None
    if len(by_month) == 1:
        return next(iter(by_month))
    if language:
        for number, langs in by_month.items():
            if language in langs:
                return number
    # Else the month of the most used language that writes it so (dateparser's own order of
    # languages by use): "listopada" is Polish before it is Croatian.
    rank = load().rank
    return min(by_month, key=lambda n: (min(rank.get(code, len(rank)) for code in by_month[n]), n))


def english_month(word: str) -> bool:
    """Whether ``word`` is an English month word (``Nov``, ``march``)."""
    by_month = load().months.get(fold(word), {})
    return any("en" in langs for langs in by_month.values())
