"""Dates in text, in any language and script (SCORING.md clarifications 4, 8, 16 and 17).

A cheap regular expression finds the *shape* of a date: a day number, a word of letters in any
script and a year (``19 November 1946``, ``12 апреля 1961``, ``November 19, 1946``,
``1946. november 19.``), the CJK and Korean units (``1949年10月1日``, ``1991년 9월 18일``),
numeric forms (``11/19/1946``, ``19.11.1946``) and ISO dates and timestamps
(``2014-07-13T00:00:00Z``).  Which word is a month is read from dateparser's per-language data
(its ~200 CLDR-derived languages, with their inflected forms: ``апреля``, ``maja``,
``września``), loaded once, lazily, and only when a word next to a number has to be read.  Text
without a digit costs one scan for a digit.

The date forms and their reader are one grammar (each form's pattern and the reading of its
parts); what the language data says, and the month one word names, live in :mod:`.month_data`,
the years (two-digit years, the Buddhist Era, valid days) in :mod:`.years`, and a whole text read
as one date (alignment's question) in :mod:`.date_text`.

Values are ``(year, month, day)`` with ``None`` for the parts a date leaves out: a year
``(1946, None, None)``, a month and year ``(1946, 11, None)``, a day and month
``(None, 11, 19)`` (partial dates: clarification 17).
"""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from defan_pytest.scoring.text.dates.cldr import cldr_dates
from defan_pytest.scoring.text.language import language
from defan_pytest.scoring.text.memo import short_text_memo
from defan_pytest.scoring.text.dates.months import MARKS, WORD, english_month, fold, load, month_number
from defan_pytest.scoring.text.search import DisjointSpans
from defan_pytest.scoring.text.dates.years import (
    DateValue, expand_year, gregorian, question_years, valid_day, year_of, year_of_num,
)

# The ordinal marks of a day number: English, French (1er), the ordinal indicators (1º), German
# and most of central and northern Europe (19.).  Hand-written: no library lists the suffixes
# written after a day's digits.
_ORD = r"(?:st|nd|rd|th|er|re|e|\.?[º°ª]|\.)?"
_YEAR = r"(?P<y>\d{4}|['’‘]\d{2})(?![\d'’])"
_DAY = rf"(?<![\d.,/:])(?P<d>\d{{1,2}}){_ORD}"
# The elided connective of Catalan, Occitan, Aragonese ("12 d’abril de 1961").
_ELIDED = r"(?:[dD]['’])?"
# The mark after an abbreviated month: a dot, the Devanagari abbreviation sign (नव॰), the
# Hebrew geresh (בנוב׳).
_ABBR = r"[.\u0970\u05f3]?"
_SP = r"(?:\s*[,/-]\s*|\s+|\.\s*)"  # between the parts: a space, a comma, a dash, a dot

#: A month word followed by its year, for other modules' patterns ("19. November 1946" is a
#: date, not item 19 of a list).  Any word: which words are months is dateparser's to say, and
#: it is not loaded to read a list.
MONTH_NAME = rf"{WORD}\.?,?\s+(?:\d{{4}}|['’]\d{{2}})(?![\d'’])"

# Each pattern: (regex, kind).  Kinds with a month word check it against the month data.
_FULL_PATTERNS: List[Tuple["re.Pattern[str]", str]] = [
    # 1946-11-19, 1946/11/19, 2014-07-13T00:00:00Z, 1946. 11. 19. (Korean medium form)
    (re.compile(
        r"(?<![\d/.-])(?P<y>\d{4})(?P<s>[-/.])\s?(?P<m>\d{1,2})(?P=s)\s?(?P<d>\d{1,2})"
        r"(?:T\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?(?![\w:]))?"
        r"(?![\d/]|-\d|\.\d)"
    ), "ymd"),
    # 11/19/1946, 19.11.1946, 19-11-1946, 19. 11. 1946, 11/1/00 (the order is the caller's)
    (re.compile(
        r"(?<![\d/.:-])(?P<a>\d{1,2})[\u200e\u200f]?(?P<s>[/.-])\s?(?P<b>\d{1,2})[\u200e\u200f]?(?P=s)\s?"
        r"(?P<y>\d{4}|(?<=/)\d{2}|(?<=/\s)\d{2})(?![\d/]|-\d|\.\d)"
    ), "num"),
]
_YEAR_ONLY = re.compile(r"(?<![\d,.])(1[0-9]{3}|20[0-9]{2})(?!\d|,\d)(?:\s*s\b)?")
_SHORT_YEAR = re.compile(r"(?<![\w'’])['’](\d{2})(?![\d\w'’])")




@lru_cache(maxsize=1)
def _word_patterns() -> List[Tuple["re.Pattern[str]", str]]:
    """The date forms with a month word, in the order they are read (full dates, then partial
    ones).  Any word of letters stands where a month, a connective or a year word goes: the
    reader checks it against the month data (a trie of the month words of every language
    would cost more to compile than the whole data does to load)."""
    month = rf"(?P<w>{WORD})(?![^\W\d_]|[{MARKS}])"
    conn = WORD
    year_word = WORD
    c1 = rf"(?:(?P<c1>{conn})\s+)?"
    c2 = rf"(?:(?P<c2>{conn})\s+)?"
    start = rf"(?<![^\W\d_{MARKS}])"
    forms = [
        # 19 November 1946, 19th of November, 1946, 19. November 1946, 19 de noviembre de
        # 1946, 12 апреля 1961, 19-Nov-1946, 12 d’abril de 1961
        (rf"{_DAY}{_SP}{c1}{_ELIDED}{month}{_ABBR}{_SP}{c2}{_YEAR}", "dmy"),
        # November 19, 1946; Nov. 19th 1946; Dec. 28th, '45
        (rf"{start}{month}{_ABBR}{_SP}{_DAY},?{_SP}{_YEAR}", "mdy"),
        # 1946. november 19. (Hungarian), 1946 m. lapkričio 19 d. (Lithuanian), 1946 നവംബർ 19
        (rf"(?<![\d.,/:])(?P<y>\d{{4}})(?P<yd>\.)?\s+(?:(?P<c1>{year_word})\.?\s+)?{month}{_ABBR}\s+"
         rf"(?P<d>\d{{1,2}})(?![\d,.]\d)", "ymd-word"),
        # 1946 ж. 19 қараша (Kazakh)
        (rf"(?<![\d.,/:])(?P<y>\d{{4}})\.?\s+(?P<c1>{year_word})\.?\s+(?P<d>\d{{1,2}})\.?\s+{month}", "ydm-word"),
        # 19 tháng 11, 1946; ngày 19 tháng 11 năm 1946 (Vietnamese: a unit before the month)
        (rf"{_DAY}\s+(?P<u>{WORD})\s+(?P<m>\d{{1,2}}),?\s+(?:(?P<c2>{WORD})\s+)?{_YEAR}", "dum"),
        # Partial dates, read where no full date covers the text: November 1946,
        # noviembre de 1946; 3 January; January 3rd
        (rf"{start}{month}{_ABBR},?\s+{c2}{_YEAR}", "my"),
        (rf"{_DAY}{_SP}{c1}{month}", "dm"),
        (rf"{start}{month}{_SP}(?P<d>\d{{1,2}})(?:st|nd|rd|th)?(?![\d.,:/]?\s?\d)", "md"),
    ]
    return [(re.compile(pattern, re.I), kind) for pattern, kind in forms]


#: For the forms that begin with the month word: the digits they end with.  A trie of
#: thousands of month words tried at every letter of a long text is slow; these forms are
#: found from their numbers instead, and the word before is read backwards.
_TAILS = {
    "mdy": re.compile(rf"{_DAY},?{_SP}{_YEAR}"),
    "my": re.compile(_YEAR),
    "md": re.compile(r"(?<![\d.,/:])\d{1,2}(?:st|nd|rd|th)?(?![\d.,:/]?\s?\d)"),
}
_SEPARATORS = frozenset(" \t\n,.-/\u202f\u00a0\u0970\u05f3")


def _word_start(text: str, pos: int) -> int:
    """Where the word ends that ends before ``pos`` and a few separators; -1 if none."""
    i = pos
    floor = max(0, pos - 4)
    while i > floor and text[i - 1] in _SEPARATORS:
        i -= 1
    j = i
    floor = max(0, i - 40)
    while j > floor and (text[j - 1].isalpha() or unicodedata.category(text[j - 1]).startswith("M")):
        j -= 1
    return j if j < i else -1


_Reader = Callable[["re.Match[str]"], Optional[DateValue]]


def _scan(
    regex: "re.Pattern[str]",
    text: str,
    read: _Reader,
    taken: DisjointSpans,
    starts: Sequence[int],
    tail: "Optional[re.Pattern[str]]" = None,
) -> Iterator[Tuple[int, int, DateValue]]:
    """Every match that ``read`` accepts and no fuller date covers.  Every form begins with a
    number, so the regex is only tried, anchored, where a number starts (``starts``): the cost
    is one anchored match per number, whatever lies between.  With ``tail``, the form begins
    with a word: ``tail`` (the numbers it ends with) is tried at each start, and the form at
    the word (and a connective, "noviembre de 1946") just before it."""
    for s in starts:
        if taken.overlaps(s, s + 1):
            continue
        if tail is None:
            m = regex.match(text, s)
            if m is None or taken.overlaps(m.start(), m.end()):
                continue
            value = read(m)
            if value is not None:
                yield m.start(), m.end(), value
            continue
        t = tail.match(text, s)
        if t is None:
            continue
        w = _word_start(text, s)
        for _ in range(2):  # the word before, then the word before a connective
            if w < 0:
                break
            m = regex.match(text, w)
            if m is not None and m.end() >= t.end() and not taken.overlaps(m.start(), m.end()):
                value = read(m)
                if value is not None:
                    yield m.start(), m.end(), value
                    break
            w = _word_start(text, w)


def _anchors(text: str) -> Tuple[List[int], List[int], bool]:
    """Where numbers start (and an apostrophe before two digits, ``'54``); the same for the
    numbers that touch a letter (only they can belong to a date with a month word or a unit);
    and whether there is any such number (only then is the month data needed)."""
    starts: List[int] = []
    near_words: List[int] = []
    for m in _DIGITS.finditer(text):
        s, e = m.span()
        at = [s - 1, s] if s > 0 and text[s - 1] in "'’‘" else [s]
        starts.extend(at)
        if _LETTER_BEFORE.search(text, max(0, s - 5), s) or _LETTER_AFTER.match(text, e, e + 4):
            near_words.extend(at)
    return starts, near_words, bool(near_words)


_DIGITS = re.compile(r"\d+")
_LETTER_BEFORE = re.compile(rf"(?:[^\W\d_]|[{MARKS}])[\s.,/'’‘-]*$")
_LETTER_AFTER = re.compile(r"[\s.,/-]{0,3}[^\W\d_]")


class _Reading:
    """The readers of one text's matches: the row's day-first rule, the question's years, the
    text for the language of an ambiguous month word."""

    def __init__(self, text: str, dayfirst: bool, ref_years: Sequence[int]) -> None:
        self.text = text
        self.dayfirst = dayfirst
        self.ref_years = ref_years
        self._lang: Optional[str] = None
        self._months: Dict[Tuple[str, bool, bool], Optional[int]] = {}  # a word read once

    def lang(self) -> str:
        """The text's language, asked once per text (it reads the first 4000 characters)."""
        if self._lang is None:
            self._lang = language(self.text)
        return self._lang

    def _connectives_ok(self, m: "re.Match[str]", kind: str) -> bool:
        data = load()
        for name in ("c1", "c2"):
            c = m.groupdict().get(name)
            if c is None:
                continue
            c = fold(c)
            if kind in ("ymd-word", "ydm-word"):  # "1946 m. lapkričio 19 d.": a year word
                if c not in data.year_words:
                    return False
            elif c not in data.connectives:
                return False
        return True

    def _month(self, m: "re.Match[str]", kind: str) -> Optional[int]:
        # In English text a month word of another language counts only in a full date written
        # day-month-year or month-day-year ("born 12 maart 1981"); other forms ("Sit 1950":
        # Bena for June) would read English prose as dates.
        strict = kind not in ("dmy", "mdy")
        if not self._connectives_ok(m, kind):
            return None
        key = (m.group("w"), kind in ("dm", "md"), strict)
        if key not in self._months:
            self._months[key] = month_number(key[0], self.text, key[1], self.lang, strict)
        return self._months[key]

    def read(self, kind: str, m: "re.Match[str]") -> Optional[DateValue]:
        g = m.groupdict()
        if kind == "num":
            a, b = int(g["a"]), int(g["b"])
            y = year_of_num(g["y"], self.ref_years)
            # Month first, as the dataset writes dates, unless the question asks for day
            # first or the first number cannot be a month.
            if a > 12 or (self.dayfirst and b <= 12):
                d, mo = a, b
            else:
                mo, d = a, b
            return (y, mo, d) if valid_day(mo, d) else None
        if kind in ("ymd", "cjk"):
            y, mo, d = int(g["y"]), int(g["m"]), int(g["d"])
            return (y, mo, d) if valid_day(mo, d) else None
        if kind == "cjk-ym":
            y, mo = int(g["y"]), int(g["m"])
            return (y, mo, None) if valid_day(mo, None) else None
        if kind == "cjk-md":
            mo, d = int(g["m"]), int(g["d"])
            return (None, mo, d) if valid_day(mo, d) else None
        if kind == "cjk-y":
            return (int(g["y"]), None, None)
        if kind == "dum":
            data = load()
            if fold(g["u"]) not in data.month_units or (g["c2"] is not None and fold(g["c2"]) not in data.year_words):
                return None
            y, mo, d = year_of(g["y"], self.ref_years), int(g["m"]), int(g["d"])
            return (y, mo, d) if valid_day(mo, d) else None
        partial = kind in ("dm", "md")
        if kind == "ymd-word":
            # Year first with a plain year and an English month ("in 1990 May 3 people") is
            # English prose, not a date: the languages that write so mark the year
            # ("1946. november 19.", "1946 m. lapkričio 19 d.") or use their own month word.
            if kind == "ymd-word" and g.get("c1") is None and g.get("yd") is None and english_month(g["w"]):
                return None
        month = self._month(m, kind)
        if month is None:
            return None
        if kind == "my":
            return (year_of(g["y"], self.ref_years), month, None)
        d = int(g["d"])
        if partial:
            return (None, month, d) if valid_day(month, d) else None
        y = year_of(g["y"], self.ref_years)
        return (y, month, d) if valid_day(month, d) else None


_DIGIT = re.compile(r"\d")


def find_dates(
    text: str, dayfirst: bool = False, years: bool = True, ref_years: Sequence[int] = ()
) -> List[Tuple[int, int, DateValue]]:
    """Every date written in ``text``, in reading order, as ``(start, end, value)``.

    Full dates are read first, then partial ones (a month and year, a day and month) where no
    full date covers the text, then (with ``years``) bare years where nothing covers them.
    ``ref_years``: the years the question names, for two-digit years (``'54``).
    """
    return list(_dates_in(text, dayfirst, years, tuple(ref_years)))


@short_text_memo(maxsize=8192)
def _dates_in(text: str, dayfirst: bool, years: bool, ref_years: Tuple[int, ...]) -> Tuple[Tuple[int, int, DateValue], ...]:
    """:func:`find_dates`, memoized (a bare date or a closing line comes back in many rows)."""
    if not _DIGIT.search(text):
        return ()
    reading = _Reading(text, dayfirst, ref_years)
    found: List[Tuple[int, int, DateValue]] = []
    taken = DisjointSpans()  # what a fuller date already covers (a binary search, not a scan)

    starts, near_words, words = _anchors(text)

    def add(regex: "re.Pattern[str]", kind: str, where: Sequence[int] = near_words) -> None:
        tail = _TAILS.get(kind)
        for s, e, value in _scan(regex, text, lambda m: reading.read(kind, m), taken, where, tail):
            found.append((s, e, value))
            taken.add(s, e)

    for regex, kind in _FULL_PATTERNS:  # numeric forms: no month data needed
        add(regex, kind, starts)
    # The month data is loaded only when a word or a unit sits next to a number.
    if words:
        data = load()
        words_forms = _word_patterns()
        cjk = data.cjk_unit.search(text) is not None
        if cjk:
            add(data.cjk_full, "cjk")
        for regex, kind in words_forms[:5]:
            add(regex, kind)
        if not found:  # no full date: CLDR's patterns ("1960ko abuztuaren 20a")
            for s, e, value in cldr_dates(text, reading.lang):
                if not taken.overlaps(s, e):
                    found.append((s, e, value))
                    taken.add(s, e)
        if cjk:
            add(data.cjk_year_month, "cjk-ym")
        add(*words_forms[5])
        if cjk:
            add(data.cjk_month_day, "cjk-md")
        for regex, kind in words_forms[6:]:
            add(regex, kind)
        if years and cjk:
            add(data.cjk_year, "cjk-y")
    if years:
        for s in starts:
            m = _YEAR_ONLY.match(text, s) or _SHORT_YEAR.match(text, s)
            if m is None:
                continue
            b, e = m.span()
            if not taken.overlaps(b, e):
                y = int(m.group(1))
                found.append((b, e, (y if m.re is _YEAR_ONLY else expand_year(y, ref_years), None, None)))
                taken.add(b, e)
    found.sort(key=lambda t: t[0])
    if not text.isascii() and _THAI.search(text):
        found = [(s, e, gregorian(v)) for s, e, v in found]
    return tuple(found)


# Thai writes years in the Buddhist Era (CLDR's calendar preference for Thailand: buddhist,
# then gregorian; 1 BE is 543 BCE): in a text in Thai script a year of 2400 BE (1857) or more
# is read as that year minus 543 ("17 สิงหาคม 2486" is 17 August 1943).
_THAI = re.compile("[\u0e01-\u0e5b]")


def preload() -> None:
    """Build the month data now (a server warming up, a benchmark excluding start-up)."""
    load()


__all__ = [
    "DateValue", "MONTH_NAME", "expand_year", "find_dates", "fold", "month_number", "preload", "question_years",
]
