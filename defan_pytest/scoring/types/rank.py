"""The ``rank`` answer type: a position (``334th``, ``#334``, ``=47``) or a band (``601-650``).

Ordinals and rank words of German, French, Spanish, Portuguese and Italian are read as in
English (``26e``, ``26.``, ``26º``, ``Platz 26``, ``puesto 26``, ``326º posto``), and so are
ordinal words (``fourth``, ``vingt-sixième``): SCORING.md clarifications 4 and 5.  Clarification
15: a rank with a place word in more languages (``7-е место``, ``12. sırada``, ``第5位``,
``第一名``) is a bare rank, and so is a Roman numeral alone (``XLI``); a percentile (``top 5%``)
is no rank, and an ordinal inside a date (``June 8th, 2021``) is a day.
"""
from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, FrozenSet, List, Optional, Tuple, Union

from defan_pytest.scoring.text.numbers.words import number_words_in_text, words_value
from defan_pytest.scoring.text.dates.parse import find_dates
import unicodedata

from defan_pytest.scoring.text.rank_words import ORDINAL_PREFIXES, RANK_NOUNS, RANK_WORDS
from defan_pytest.scoring.text.numbers.parse import (
    ascii_digits,
    canonical_number,
    cjk_value,
    is_percent,
    numbers_in_text,
    parse_number,
    question_numbers,
    roman_value,
)
from defan_pytest.scoring.text.memo import short_text_memo
from defan_pytest.scoring.text.search import SpanIndex
from defan_pytest.scoring.types.value import Candidate, ValueAnswerType, contains_number, response_lang
from defan_pytest.scoring.types.base import Context, Gold

RankValue = Union[int, Tuple[int, int]]

# Ordinal suffixes: English, French (e, er, re, ème), the masculine/feminine ordinal indicators
# (º, ª, and the degree sign models type for them); the German dot is handled apart.
# Russian writes its ordinals with a hyphen and an ending ("7-е", "7-й", "7-м").
_ORD_SUFFIX = r"(?:st|nd|rd|th|e|er|re|ère|ème|eme|è|\.?[º°ª]|-(?:е|й|я|го|му|м|ом|ое|ый|ой|ая))"  # Spanish "2.º"
_NUMERO = r"(?:#|no\.?|nr\.?|n\.?\s?[º°]\.?|número|numero)"
_RANK_ONE = re.compile(
    rf"^\s*(?:{_NUMERO}\s*|(?:joint|tied|t-)\s*|(?:{RANK_NOUNS})\s*(?:{_NUMERO}\s*)?)?=?\s*(\d+)"
    rf"(?:{_ORD_SUFFIX}(?!\w)|\.(?=\s*(?:(?:{RANK_NOUNS})\b|$)))?\s*=?\s*(?:(?:{RANK_NOUNS})\b)?\s*$",
    re.I,
)
# Chinese, Japanese and Korean place forms: "第5位", "第一名", "266位", "5위".
_CJK_DIGITS = "0-9〇零一二三四五六七八九十百千两兩"
_RANK_CJK = re.compile(rf"^\s*(?:第\s*([{_CJK_DIGITS}]+)\s*[位名]?|([{_CJK_DIGITS}]+)\s*[位名위])\s*$")
_RANK_CJK_IN_TEXT = re.compile(rf"第\s*(?P<a>[{_CJK_DIGITS}]+)\s*[位名]?|(?P<b>[0-9]+)\s*[位名위](?![\w%])")
_RANK_BAND = re.compile(r"^\s*=?(\d+)\s*(?:-|–|—|to)\s*(\d+)\s*$", re.I)
# One number with an ordinal ending of any language (clarification 16: "85:e", "120ή",
# "85वां", "95-те місце", "al 207-lea") or a place word before it ("locul 87", "Hạng 85",
# "อันดับที่ 85", "المرتبة ٨٥"): read by shape in :func:`_shaped_rank`, not by a table of endings.
_RANK_SHAPED = re.compile(
    rf"^\s*(?P<pre>(?:{RANK_NOUNS})\s*)?(?P<op>(?:{ORDINAL_PREFIXES})\s*)?(?P<n>\d+)"
    r"(?P<suf>\.|[:\-]?[^\s\d!?,;.()\[\]{}\"'=#%&*+/<>|:\-]{1,5})?"
    r"(?:\s+(?P<post>[^\W\d_][^\s\d]{0,24}))?\s*$",
    re.I,
)
_RANK_NOUN_ONLY = re.compile(rf"(?:{RANK_NOUNS})", re.I)
_RANK_WORD_ONLY = re.compile(rf"^\s*(?:(?:{RANK_NOUNS})\s+)?(?P<w>.+?)(?:\s+(?:{RANK_NOUNS}))?\s*$", re.I)


# Python refuses to read an int of more digits than this (sys.get_int_max_str_digits()); no rank
# has that many, and a response that writes one must not stop the run.
_MAX_DIGITS = 4300


def _whole(digits: str) -> Optional[int]:
    return int(digits) if len(digits) <= _MAX_DIGITS else None


@short_text_memo(maxsize=16384)
def parse_rank(text: str) -> Optional[RankValue]:
    """A rank (``334``, ``334th``, ``#334``, ``=47``, ``47=``, ``26e``, ``Platz 26``,
    ``326º posto``, ``fourth``) or a band (``601-650``)."""
    text = ascii_digits(text)
    m = _RANK_ONE.match(text)
    if m:
        return _whole(m.group(1))
    m = _RANK_CJK.match(text)
    if m:
        v = cjk_value(m.group(1) or m.group(2))
        return int(v) if v is not None and v >= 1 and v == v.to_integral_value() and v < 10**6 else None
    shaped = _shaped_rank(text)
    if shaped is not None:
        return shaped
    r = roman_value(text)  # "XLI" standing alone (clarification 15)
    if r is not None:
        return r
    m = _RANK_BAND.match(text)
    if m:
        lo, hi = _whole(m.group(1)), _whole(m.group(2))
        if lo is not None and hi is not None and lo < hi:
            return (lo, hi)
        return None
    if any(c.isdigit() for c in text) or len(text) > 60:
        return None
    m = _RANK_WORD_ONLY.match(text)
    w = words_value(m.group("w")) if m else None  # "fourth", "Platz sechsundzwanzig"
    return w[0] if w is not None and w[0] >= 1 else None


def _is_ending(suffix: str, noun: bool) -> bool:
    """Is this the ending an ordinal takes after its digits?  Letters (and their combining
    marks) of a non-Latin script (``120ή``, ``95-те``), ``:`` and one or two letters (Swedish
    ``85:e``), Romanian ``-lea``, and before a place word the ordinal dot (``340. koht``) or a
    hyphen and Latin letters (``135-oji vieta``); never Latin letters glued to the digits
    (``85km``) nor a lone hyphenated unit (``85-km``)."""
    if suffix == ".":
        return noun
    joiner = suffix[:1] if suffix[:1] in ":-" else ""
    letters = suffix[len(joiner):]
    if not letters or not all(unicodedata.category(c)[0] in "LM" for c in letters):
        return False
    if not letters.isascii():
        return True
    # Latin endings: Swedish ":e", ":a"; Romanian "-lea", "-a" ("al 207-lea", "a 5-a").
    if joiner == ":":
        return len(letters) <= 2
    return joiner == "-" and (noun or letters.lower() in ("lea", "a"))


def _shaped_rank(text: str) -> Optional[int]:
    """A rank written as one number with an ordinal ending, an ordinal word before it, or a
    place word (``85:e``, ``120ή``, ``95-те місце``, ``al 207-lea``, ``locul 87``,
    ``อันดับที่ 85``, ``340. koht``); a word that is no place word (``about 85``,
    ``85 people``) is none.  After an ordinal ending, one lower-case word (or a word of a
    script without case) is the place word of any language: ``vieta``, ``koht``, ``θέση``."""
    m = _RANK_SHAPED.match(text)
    if m is None or not (m.group("pre") or m.group("op") or m.group("suf") or m.group("post")):
        return None
    suffix, post, op = m.group("suf"), m.group("post"), (m.group("op") or "").strip().lower()
    noun = post is not None and (_RANK_NOUN_ONLY.fullmatch(post) is not None or post == post.lower())
    ending = suffix is not None and _is_ending(suffix, noun)
    if suffix is not None and not ending:
        return None
    if op in ("al", "a") and not ending:
        return None  # the Romanian article only with its ending ("al 207-lea")
    if post is not None and not (_RANK_NOUN_ONLY.fullmatch(post) or ending and noun):
        return None
    return _whole(m.group("n"))


def canonical_rank(value: RankValue) -> str:
    """``386`` or ``601-650``."""
    if isinstance(value, tuple):
        return f"{value[0]}-{value[1]}"
    return str(value)


def _first_letters(alternation: str) -> str:
    """The first letter of each word of a ``|``-separated alternation of words."""
    out, depth, start = set(), 0, True
    for c in alternation:
        if start and c.isalpha():
            out.add(c)
        elif start:
            raise ValueError(f"a word that does not start with a letter: {alternation!r}")
        start = c == "|" and depth == 0
        depth += (c == "(") - (c == ")")
    return "".join(sorted(out))


_RANK_MARKED = re.compile(
    # First, the characters a marked rank can start with (a digit, "#", "=", a rank word's
    # first letter): most positions of a text fail this one test, not the six branches.
    rf"(?=[\d#=n{_first_letters(RANK_WORDS)}])"
    rf"(?:(?P<ord>\b\d+){_ORD_SUFFIX}(?!\w)"
    rf"|(?P<dot>\b\d+)\.\s*(?:{RANK_WORDS})\b"
    r"|#\s*(?P<hash>\d+)\b"
    r"|(?<![\w=])=\s*(?P<eq1>\d+)\b"
    r"|\b(?P<eq2>\d+)=(?!\d)"
    rf"|\b(?:{RANK_WORDS}|number|no\.)\s*"
    rf"(?:of|at|as|is|was|in|de|en|el|al|auf|am|der|au|na|no|n[º°]|nr\.?|número|numero)?\s*"
    r"(?:#|no\.?\s*)?=?\s*(?P<kw>\d+)\b(?!\s*[-–—]\s*\d|[.,]\d))",
    re.I,
)
_RANK_BAND_IN_TEXT = re.compile(r"(?<![\w.,])=?(\d{1,4})\s*[-–—]\s*(\d{1,4})(?![\w.,]|[-–—]\d)")
# A word of rank just before or after an ordinal word: "ranked fourth", "fourth place".
_RANK_WORD_BEFORE = re.compile(rf"(?:{RANK_WORDS}|came|finished|stood|sits|sat)\s+(?:at\s+|in\s+|as\s+|the\s+|au\s+|en\s+el\s+|al\s+|auf\s+dem\s+|na\s+)?$", re.I)
_RANK_WORD_AFTER = re.compile(rf"^(?:\s+|-)(?:{RANK_WORDS})\b", re.I)


class RankType(ValueAnswerType):
    """QS-style positions and bands; a year is never a position."""

    name = "rank"
    labels: FrozenSet[str] = frozenset(
        """answer final result rank ranking position place qs rang platz puesto posto posicion
        posicao posizione lugar classement clasificacion classifica""".split()
    )

    def gold_value(self, alternative: str) -> Optional[RankValue]:
        return parse_rank(alternative)

    def integer_gold(self, gold: Gold) -> Optional[bool]:
        return True  # positions are whole numbers: "1.200" is the 1,200th place

    def bare(self, text: str, ctx: Context) -> Optional[str]:
        r = parse_rank(text)
        return canonical_rank(r) if r is not None else None

    def contained(self, claim: str, ctx: Context) -> bool:
        return contains_number(claim, ctx)

    def unit_value(self, value: Decimal) -> str:
        # A whole value is its canonical rank (str(int)); canonical_number writes it the same
        # way, and any length of it.
        return canonical_number(value)

    def parse_claim(self, claim: str) -> Any:
        return parse_rank(claim)

    def typed_candidates(self, text: str, ctx: Context) -> List[Candidate]:
        qnums = question_numbers(ctx.question)
        strong: List[Tuple[int, str]] = []
        taken: List[Tuple[int, int]] = []
        for m in _RANK_BAND_IN_TEXT.finditer(text):
            lo, hi = int(m.group(1)), int(m.group(2))
            if lo < hi and lo not in qnums and hi not in qnums and hi < 1900:
                strong.append((m.start(), canonical_rank((lo, hi))))
                taken.append(m.span())
        bands = SpanIndex(taken)
        # A day of the month is no rank ("June 8th, 2021"): ranks inside a written date are left out.
        dates: Optional[SpanIndex] = None  # found at the first ordinal, most texts hold none
        if not text.isascii():
            text = ascii_digits(text)
            for m in _RANK_CJK_IN_TEXT.finditer(text):
                v = cjk_value(m.group("a") or m.group("b"))
                if v is not None and v >= 1 and v == v.to_integral_value() and v < 10**6 and v not in qnums:
                    strong.append((m.start(), str(int(v))))
                    taken.append(m.span())
        for m in _RANK_MARKED.finditer(text):
            # Marked ranks never start inside one another (finditer), so only bands can hold one.
            if m.start() in bands:
                continue
            if m.group("ord") is not None:
                if dates is None:
                    dates = SpanIndex([(a, b) for a, b, _ in find_dates(text, years=False)])
                if m.start() in dates:
                    continue
            n = next(g for g in ("ord", "dot", "hash", "eq1", "eq2", "kw") if m.group(g) is not None)
            val = _whole(m.group(n))
            if val is None or val in qnums:
                continue
            strong.append((m.start(), str(val)))
            taken.append(m.span())
        if not strong:
            # Ordinal words stated as ranks: "ranked fourth", "the twenty-sixth place".
            for s, e, word_value, ordinal in number_words_in_text(text, response_lang(text, ctx)):
                if not ordinal or word_value < 1 or word_value in qnums:
                    continue
                if _RANK_WORD_BEFORE.search(text, max(0, s - 30), s) or _RANK_WORD_AFTER.match(text[e: e + 30]):
                    strong.append((s, str(word_value)))
        if strong:
            return sorted(strong)
        out = []
        spans = SpanIndex(taken)
        lang = ctx.lang or "en"
        for s, e, num, _ in numbers_in_text(text, False, lang, True):
            if s in spans or is_percent(num):
                continue  # "top 5%" is a percentile, not a rank (clarification 15)
            v = parse_number(num, lang, True)
            if v is None or v in qnums or v != v.to_integral_value() or v < 1:
                continue
            if 1900 <= v <= 2100 and re.fullmatch(r"\d{4}", num):
                continue  # a year, not a QS position
            out.append((s, canonical_number(v)))  # whole here: str(int(v)), at any length
        return out
