"""Dates in text: regular expressions for the common written forms, dateparser for the rest.

Regexes settle nearly every date a chat model writes (``11/19/1946``, ``19 November 1946``,
``November 19, 1946``, ``1946-11-19``, and in French, German, Spanish, Portuguese and Italian
``19 novembre 1946``, ``19. November 1946``, ``19 de noviembre de 1946``, ``1º de
novembro de 1946``); dateparser (slow to import and to call) is only asked about a short whole
response that no regex read, so it never sits on the hot path.
"""
from __future__ import annotations

import re
from typing import List, Optional, Tuple

from defan_pytest.scoring.text.search import DisjointSpans, word_alternation

DateValue = Tuple[int, Optional[int], Optional[int]]

_MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4,
    "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11, "nov": 11,
    "december": 12, "dec": 12,
}
# SCORING.md clarification 4: month names of French, German, Spanish, Portuguese and Italian
# are read as in English (accented and plain spellings).
_FOREIGN_MONTHS = {
    1: "janvier janv januar jänner janner enero janeiro gennaio",
    2: "février fevrier févr fevr februar febrero fevereiro febbraio",
    3: "mars märz marz maerz marzo março",
    4: "avril avr abril aprile",
    5: "mai mayo maio maggio",
    6: "juin juni junio junho giugno",
    7: "juillet juil juli julio julho luglio",
    8: "août aout agosto",
    9: "septembre septiembre setiembre setembro settembre",
    10: "octobre oktober okt octubre outubro ottobre",
    11: "novembre noviembre novembro",
    12: "décembre decembre déc dezember dez diciembre dezembro dicembre",
}
for _m, _names in _FOREIGN_MONTHS.items():
    for _n in _names.split():
        _MONTHS.setdefault(_n, _m)
del _m, _n, _names
# One trie-shaped alternation (a regex over a hundred names stays fast on long text); its
# optional tails are greedy, so "septembre" is not read as "sept" + "embre".
_MONTH = "(" + word_alternation(_MONTHS) + r")\.?"
# Ordinal marks after a day: English, French (1er), the ordinal indicators (1º), German (19.).
#: A month name (any of the six languages, case-insensitive), for other modules' patterns.
MONTH_NAME = _MONTH
_ORD = r"(?:st|nd|rd|th|er|re|\.?[º°ª]|\.)?"
_YEAR = r"(\d{4})"
_OF = r"(?:of\s+|de\s+|del\s+)?"

# Each pattern: (regex, kind) with named groups y, m (number or month name), d.
_PATTERNS = [
    # 1946-11-19, 1946/11/19
    (re.compile(r"(?<![\d/.-])(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})(?![\d/-])"), "ymd"),
    # 11/19/1946, 19.11.1946, 19-11-1946 (order decided by the caller's day-first rule)
    (re.compile(r"(?<![\d/.-])(?P<a>\d{1,2})[/.-](?P<b>\d{1,2})[/.-](?P<y>\d{4})(?![\d/-])"), "num"),
    # 19 November 1946, 19th of November, 1946, 19. November 1946, 19 de noviembre de 1946
    (re.compile(rf"\b(?P<d>\d{{1,2}}){_ORD}\s+{_OF}{_MONTH.replace('(', '(?P<mn>', 1)},?\s+{_OF}{_YEAR.replace('(', '(?P<y>', 1)}\b", re.I), "dmy"),
    # November 19, 1946; Nov. 19th 1946
    (re.compile(rf"\b{_MONTH.replace('(', '(?P<mn>', 1)}\s+(?P<d>\d{{1,2}}){_ORD},?\s+{_YEAR.replace('(', '(?P<y>', 1)}\b", re.I), "mdy"),
    # November 1946, noviembre de 1946
    (re.compile(rf"\b{_MONTH.replace('(', '(?P<mn>', 1)},?\s+{_OF}{_YEAR.replace('(', '(?P<y>', 1)}\b", re.I), "my"),
]
_YEAR_ONLY = re.compile(r"(?<![\d,.])(1[0-9]{3}|20[0-9]{2})(?!\d|,\d)(?:\s*s\b)?")


def _valid(y: int, m: int, d: int) -> bool:
    if not (1 <= m <= 12 and 1 <= d <= 31):
        return False
    if m in (4, 6, 9, 11) and d > 30:
        return False
    if m == 2 and d > 29:
        return False
    return True


def _value(match: re.Match, kind: str, dayfirst: bool) -> Optional[DateValue]:
    g = match.groupdict()
    y = int(g["y"])
    if kind == "num":
        a, b = int(g["a"]), int(g["b"])
        # Month first, as the dataset writes dates, unless the question asks for day first
        # or the first number cannot be a month.
        if a > 12 or (dayfirst and b <= 12):
            d, m = a, b
        else:
            m, d = a, b
        return (y, m, d) if _valid(y, m, d) else None
    if kind == "ymd":
        m, d = int(g["m"]), int(g["d"])
        return (y, m, d) if _valid(y, m, d) else None
    m = _MONTHS[g["mn"].lower().rstrip(".")]  # re.I matched it: lower() finds it
    if kind == "my":
        return (y, m, None)
    d = int(g["d"])
    return (y, m, d) if _valid(y, m, d) else None


def find_dates(text: str, dayfirst: bool = False, years: bool = True) -> List[Tuple[int, int, DateValue]]:
    """Every date written in ``text``, in reading order, as ``(start, end, value)``.

    Full dates and month-years come first in coverage; a bare year is a candidate only where
    no fuller date already covers it.
    """
    found: List[Tuple[int, int, DateValue]] = []
    taken = DisjointSpans()  # what a fuller date already covers (a binary search, not a scan)
    for regex, kind in _PATTERNS:
        for m in regex.finditer(text):
            s, e = m.span()
            if taken.overlaps(s, e):
                continue
            value = _value(m, kind, dayfirst)
            if value is not None:
                found.append((s, e, value))
                taken.add(s, e)
    if years:
        for m in _YEAR_ONLY.finditer(text):
            s, e = m.span()
            if taken.overlaps(s, e):
                continue
            found.append((s, e, (int(m.group(1)), None, None)))
    found.sort(key=lambda t: t[0])
    return found


_WEEKDAY = re.compile(
    r"^(?:on\s+)?(?:mon|tues|wednes|thurs|fri|satur|sun)day,?\s+", re.I
)
# "on 19 November 1946" and its French, German, Spanish, Portuguese and Italian forms.
_PREPOSITION = re.compile(r"^(?:on|le|am|el|em|il|the)\s+(?=\d)", re.I)


def parse_date_text(text: str, dayfirst: bool = False, allow_year: bool = False) -> Optional[DateValue]:
    """The date that ``text`` is, as a whole, or ``None``.

    ``allow_year``: a bare year counts (as ``(year, None, None)``).
    """
    t = _PREPOSITION.sub("", _WEEKDAY.sub("", text.strip()).strip()).rstrip(".").strip()
    if not t or len(t) > 40:
        return None
    if allow_year and re.fullmatch(r"\d{4}", t):
        return (int(t), None, None)
    for regex, kind in _PATTERNS:
        m = regex.fullmatch(t)
        if m:
            return _value(m, kind, dayfirst)
    return _dateparser_parse(t, dayfirst)


def _dateparser_parse(text: str, dayfirst: bool) -> Optional[DateValue]:
    # Only a short string with a digit and a letter or separator can be a date we did not read.
    if not re.search(r"\d", text) or len(text.split()) > 6:
        return None
    try:
        import dateparser  # imported here: slow to import, and rarely needed
    except ImportError:  # pragma: no cover - dateparser is a dependency
        return None
    settings = {
        "DATE_ORDER": "DMY" if dayfirst else "MDY",
        "REQUIRE_PARTS": ["day", "month", "year"],
        "STRICT_PARSING": True,
        "PREFER_LOCALE_DATE_ORDER": False,
    }
    try:
        parsed = dateparser.parse(text, languages=["en"], settings=settings)
    except Exception:  # dateparser raises assorted errors on odd input
        return None
    if parsed is None:
        return None
    return (parsed.year, parsed.month, parsed.day)
