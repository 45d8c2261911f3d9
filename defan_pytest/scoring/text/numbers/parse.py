"""Numbers: reading one written number, finding numbers in text, and canonical forms.

Shared by the numeric and rank answer types (a rank is a number too) and by the math rule.

Separators follow SCORING.md (clarifications 4 and 16): the response's language writes its
decimals with a comma or a point as CLDR records it (Babel, :func:`decimal_comma`); a space
(or a thin space, or an apostrophe) only ever groups thousands; several equal separators each
followed by three digits group thousands in any language; Indian grouping (``13,51,921``) is
read in any language; one separator followed by exactly three digits groups thousands when the
gold is an integer; and a separator that cannot group thousands (``53,51``, ``42.5``) marks
decimals in any language.  Everything that reads a number takes the response's language
(``lang``, from :func:`defan_pytest.scoring.text.language.language`) and whether the gold is
an integer (``integer_gold``).

Also numbers (clarifications 5, 6, 15, 16): the digits of every Unicode script
(:func:`ascii_digits`), currency signs and codes around a number, scale words and
abbreviations from CLDR's compact formats (``1.54 million``, ``12k``, ``25,4 Millionen``,
``439 ribu``, ``8万``: :func:`scale_words`), scientific notation (``1.2e6``, ``1.2 × 10^6``),
vulgar and mixed fractions (``½``, ``3 ½``), Chinese and Japanese numerals
(:func:`cjk_value`), Roman numerals (:func:`roman_value`, for a response that is only one) and
number words (:mod:`defan_pytest.scoring.text.numbers.words`).

>>> parse_number("1.54 million"), canonical_number(parse_number("1,351,921"))
(Decimal('1540000.00'), '1351921')
>>> parse_number("53,51", lang="de"), parse_number("326.121", integer_gold=True)
(Decimal('53.51'), Decimal('326121'))
>>> parse_number("Rs. 642.86"), parse_number("twenty-five"), parse_number("vingt-six")
(Decimal('642.86'), Decimal('25'), Decimal('26'))
>>> parse_number("12k"), parse_number("1.37e6"), parse_number("3 ½"), parse_number("१२")
(Decimal('12000'), Decimal('1.37E+6'), Decimal('3.5'), Decimal('12'))
"""
from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import FrozenSet, List, Optional, Pattern, Tuple

from defan_pytest.scoring.text.memo import short_text_memo
from defan_pytest.scoring.text.numbers.words import words_value
from defan_pytest.scoring.text.numbers.locales import decimal_comma, scale_of, scale_patterns, scale_words  # re-exported
from defan_pytest.scoring.text.numbers.numerals import (  # re-exported: callers read numbers from here
    CJK_NUMBER,
    CJK_NUM_CHARS,
    CJK_UNIT_CHARS,
    ascii_digits,
    cjk_value,
    roman_value,
    to_roman,
)

#: CJK ideographs: a scale word of that script needs no space ("8万").
_CJK_SCRIPT = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff]")

__all__ = [
    "CJK_NUMBER", "ascii_digits", "canonical_number", "cjk_value", "decimal_comma", "decimals_of",
    "is_percent", "numbers_in_text", "parse_number", "question_numbers", "read_digits", "roman_value",
    "scale_of", "scale_words", "to_roman",
]


_PERCENT_RE = (
    r"%|％|percent|per\s+cent|pour\s+cent|prozent|por\s+ciento|por\s+cento|per\s+cento|procent|"
    r"процент(?:ов|а)?"
)
_PERCENT = re.compile(_PERCENT_RE, re.I)
# Vulgar fractions (½, ¾, ⅐, ...): unicodedata gives each one's value.
_VULGAR_CH = "[\u00bc-\u00be\u2150-\u215e]"
_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
# Scientific notation: "1.37e6", "1.2E+06", "9.69 × 10^4", "1.2x10**6", "1.2·10⁶".
_EXPONENT = (
    r"[eE][+]?-?\d{1,3}(?![\w.])"
    r"|\s?[×x*·]\s?10\s?(?:\^|\*\*)\s?[-+−]?\d{1,3}(?!\d)"
    r"|\s?[×x*·]\s?10[⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]{1,3}"
)


def _exponent_value(text: str) -> int:
    t = text.translate(_SUPERSCRIPT).replace("−", "-")
    m = re.search(r"(?:[eE]|\^|\*\*|10)\s*([-+]?\d{1,3})\s*$", t)
    return int(m.group(1)) if m else 0


# Currency (clarification 6): a sign, or a code or abbreviation, before or after the number.
_CUR_SIGN = r"[$€£¥₹₩₽₺₦₱฿₫₪₴₵¢]"
_CUR_CODE = (
    r"(?-i:(?:US|USD|A|AU|AUD|C|CA|CAD|NZ|HK|S|R|MX)\$|Rs\.?|INR|USD|EUR|GBP|AUD|CAD|JPY|CNY|RMB|"
    r"CHF|NZD|HKD|SGD|BRL|MXN|ZAR|SEK|NOK|DKK|KRW|RUB|PKR|BDT|LKR|NPR|AED|SAR|QAR|Rp|Tk)"
)
_CUR_BEFORE = rf"(?:{_CUR_SIGN}|{_CUR_CODE}(?![A-Za-z]))"
_CUR_AFTER = rf"(?:{_CUR_SIGN}|(?<![A-Za-z]){_CUR_CODE}(?![\w$]))"

# The digits of one number: Indian (lakh) grouping ("13,51,921", CLDR's #,##,##0 of hi and
# en_IN), grouped (one kind of separator between groups of three, and maybe a decimal part
# after another separator), a single separator, or plain digits.  With ``stray``, a comma and
# one space also group ("1, 351, 921": small models write it).
_SPACE = "[ \u00a0\u202f\u2009]"
# A word character that is not a CJK ideograph or kana: "約2万" and "15,029人" hold numbers.
_W = r"[^\W\u2e80-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]"


def _body(name: str, stray: bool = False) -> str:
    sep = r"[,.'’]|, |" + _SPACE if stray else r"[,.'’]|" + _SPACE
    return (
        r"\d{1,2}(?:,\d{2})+,\d{3}(?!\d)(?:\.\d+)?|"
        rf"\d{{1,3}}(?P<{name}>{sep})\d{{3}}(?:(?P={name})\d{{3}})*(?:[.,]\d+)?(?!\d)"
        r"|\d+[.,]\d+|\d+"
    )


@lru_cache(maxsize=2)
def _core_re(stray: bool) -> Pattern[str]:
    words, attached = scale_patterns()
    return re.compile(
        rf"^\s*(?:{_CUR_BEFORE}\s?)?([-+−]?)\s*(?:{_CUR_BEFORE}\s?)?({_body('g', stray)}|[.,]\d+)"
        rf"(?:\s*/\s*(\d+)|\s?({_VULGAR_CH}))?(?P<exp>{_EXPONENT})?"
        rf"(?:\s*({_PERCENT_RE})|\s*(?P<scale>(?i:{words})\.?)(?!{_W})|(?P<abbr>(?-i:{attached}))(?!{_W}))?"
        rf"\s*(?:{_CUR_AFTER})?\s*$",
        re.IGNORECASE,
    )


_SEP = re.compile(r"[.,'’ \u00a0\u202f\u2009]")


def _grouped(groups: List[str]) -> bool:
    """Do these digit groups read as thousands (``1``, ``351``, ``921``)?"""
    return 1 <= len(groups[0]) <= 3 and all(len(g) == 3 for g in groups[1:])


def _lakh(groups: List[str]) -> bool:
    """Indian grouping (CLDR ``#,##,##0`` of ``hi``, ``en_IN``): ``13``, ``51``, ``921``."""
    return len(groups) >= 3 and 1 <= len(groups[0]) <= 2 and all(len(g) == 2 for g in groups[1:-1]) and len(groups[-1]) == 3


def read_digits(digits: str, lang: str = "", integer_gold: Optional[bool] = None) -> Optional[Decimal]:
    """The value of a run of digits and separators, read in the response's language.

    >>> read_digits("8.159.808"), read_digits("1,5", lang="fr"), read_digits("1,500")
    (Decimal('8159808'), Decimal('1.5'), Decimal('1500'))
    >>> read_digits("391.197"), read_digits("391.197", lang="de"), read_digits("391.197", integer_gold=True)
    (Decimal('391.197'), Decimal('391197'), Decimal('391197'))
    >>> read_digits("13,51,921"), read_digits("١٬٣٥١٬٩٢١")
    (Decimal('1351921'), Decimal('1351921'))
    """
    digits = ascii_digits(digits)
    seps = _SEP.findall(digits)
    try:
        if not seps:
            return Decimal(digits)
        groups = _SEP.split(digits)
        if any(not g for g in groups[1:]) or (not groups[0] and len(groups) != 2):
            return None
        kinds = ["." if s == "." else "," if s == "," else " " for s in seps]  # "'" groups like a space
        comma_decimal = decimal_comma(lang)
        if all(k == kinds[0] for k in kinds):
            sep = kinds[0]
            if sep == "," and _lakh(groups):
                return Decimal("".join(groups))
            if sep == " " or len(kinds) >= 2:
                # Spaces and apostrophes only group; two equal dots or commas cannot be decimals.
                return Decimal("".join(groups)) if _grouped(groups) else None
            head, tail = groups
            if head and _grouped(groups) and head[0] != "0":
                # One separator and exactly three digits: thousands for an integer gold (in any
                # language), otherwise as the language writes it.
                if integer_gold or (sep == ",") != comma_decimal:
                    return Decimal(head + tail)
                return Decimal((head or "0") + "." + tail)
            # A comma before other than three digits can only be a decimal comma ("53,51"),
            # whatever the language; a dot the same.
            return Decimal((head or "0") + "." + tail)
        # Mixed: a consistent run of one separator, then another one before the decimals
        # ("1.351.921,5", "1,351,921.5", "1 351 921,5").
        if len(set(kinds[:-1])) == 1 and kinds[-1] != kinds[0] and kinds[-1] in ".," and (
            _grouped(groups[:-1]) or (kinds[0] == "," and _lakh(groups[:-1]))
        ):
            return Decimal("".join(groups[:-1]) + "." + groups[-1])
        return None
    except InvalidOperation:
        return None


def is_percent(text: str) -> bool:
    """Is this written number a percentage (``25%``, ``25 percent``, ``25 Prozent``)?"""
    return _PERCENT.search(text) is not None


@short_text_memo(maxsize=16384)
def parse_number(
    text: str, lang: str = "", integer_gold: Optional[bool] = None, stray: bool = False
) -> Optional[Decimal]:
    """The value of one written number (``1,351,921``, ``-3``, ``1.54 million``, ``3/4``,
    ``₹21.60``, ``twenty-five``, ``12k``, ``1.2e6``, ``1.2 × 10^6``, ``3 ½``, ``١٢``,
    ``三百二十一``), its separators read as :func:`read_digits` reads them.  A percentage reads
    as written (``25%`` is 25; the numeric type decides what a percentage is worth).  With
    ``stray``, a comma and one space group thousands (``1, 351, 921``)."""
    t = ascii_digits(text.strip())
    if len(t) == 1 and re.fullmatch(_VULGAR_CH, t):
        return Decimal(str(unicodedata.numeric(t)))
    m = _core_re(stray).match(t)
    if not m:
        if _CJK_SCRIPT.search(t) and CJK_NUMBER.fullmatch(t):
            return cjk_value(t)
        w = words_value(t, lang)
        return None if w is None else Decimal(w[0])
    sign, digits = m.group(1), m.group(2)
    denom, vulgar, exp = m.group(4), m.group(5), m.group("exp")
    scale = m.group("scale") or m.group("abbr")
    if stray:
        digits = digits.replace(", ", ",")
    value = read_digits(digits, lang, integer_gold)
    if value is None:
        return None
    try:
        if denom is not None:
            # Decimal, not int: reads any number of digits (int() refuses past 4300).
            if Decimal(denom) == 0:
                return None
            value = value / Decimal(denom)
        if vulgar is not None:
            value = value + Decimal(str(unicodedata.numeric(vulgar)))
        if exp:
            value = value.scaleb(_exponent_value(exp))
    except InvalidOperation:
        return None
    if scale:
        factor = scale_of(scale)
        if factor is None:
            return None
        value = value * factor
    if sign in ("-", "−"):
        value = -value
    return value


def decimals_of(text: str) -> int:
    """Number of decimals a written gold number carries (``42.85`` -> 2, ``1,351,921`` -> 0)."""
    m = re.search(r"\.(\d+)", text)
    return len(m.group(1)) if m else 0


def canonical_number(value: Decimal) -> str:
    """A canonical string for a number: no exponent, no trailing zeros (``1350000``).

    Any number a response can write has one, however long: past Python's 4300-digit limit on
    ``str(int)`` and past the decimal context's 28 digits the digits are written out as they are.
    """
    try:
        if value == value.to_integral_value():
            return str(int(value))
        # A repeating fraction (2/3) is cut at 12 places: far below any gold's precision.
        return format(value.quantize(Decimal("1e-12")).normalize(), "f")
    except (ValueError, InvalidOperation):
        # Too many digits for the above (a model answering with a 5,000-digit number).
        text = format(value, "f")
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return "0" if text in ("", "-0") else text


@lru_cache(maxsize=2)
def _text_re(stray: bool) -> Pattern[str]:
    words, attached = scale_patterns()
    return re.compile(
        # First, the characters a number can start with (a digit, a sign, a currency sign or
        # code, a vulgar fraction): most positions of a text fail this one test, not the
        # lookbehinds after it (half the time of a scan).
        rf"(?=[\d\-−{_CUR_SIGN[1:-1]}A-Z\u00bc-\u00be\u2150-\u215e])(?:"
        rf"(?<!{_W})(?<![.,/])(?<![A-Za-z]-)(?P<sign>(?<!\d)[-−](?=[\d$€£¥₹]))?(?:{_CUR_BEFORE}\s?)?"
        rf"(?P<num>{_body('s', stray)})"
        r"(?:\s*/\s*(?P<den>\d+)(?![\d/]))?"
        rf"(?P<vf>\s?{_VULGAR_CH})?"
        rf"(?P<exp>{_EXPONENT})?"
        # Scale words capitalized or not (German "Millionen"); abbreviations attached and as
        # CLDR writes them ("12K", "1.2M").
        rf"(?P<scale>\s*(?i:{_PERCENT_RE}|(?:{words})\.?)(?!{_W})|(?-i:{attached})(?!{_W}))?"
        rf"(?!{_W}|[.,]\d)"
        rf"|(?<!{_W})(?P<vonly>{_VULGAR_CH}))"
    )


def numbers_in_text(
    text: str, fractions: bool, lang: str = "en", integer_gold: Optional[bool] = None, stray: bool = False
) -> List[Tuple[int, int, str, bool]]:
    """Numbers written in ``text``: ``(start, end, text_of_number, is_fraction)``.

    Only numbers that read in ``lang`` are kept (``5,6`` in English is not one number); read
    each one's text back with :func:`parse_number` and the same ``lang``, ``integer_gold`` and
    ``stray``.  In running text an unknown language reads as English.  Digits of any script
    count (offsets are those of ``text``); Chinese and Japanese numerals count where they hold a
    unit or a digit (``2万8千``, ``三百``; not a lone ``一``, which is also a word).
    """
    return list(_numbers_in(text, fractions, lang, integer_gold, stray))


@short_text_memo(maxsize=8192)
def _numbers_in(
    text: str, fractions: bool, lang: str, integer_gold: Optional[bool], stray: bool
) -> Tuple[Tuple[int, int, str, bool], ...]:
    """:func:`numbers_in_text`, memoized (a bare number or a closing line comes back in many rows)."""
    lang = lang or "en"
    text = ascii_digits(text)
    out: List[Tuple[int, int, str, bool]] = []
    cjk: List[Tuple[int, int]] = []
    if not text.isascii() and _CJK_SCRIPT.search(text):
        for m in CJK_NUMBER.finditer(text):
            t = m.group()
            if len(t) >= 2 and (any(c.isdigit() for c in t) or any(c in CJK_UNIT_CHARS for c in t)):
                if not any(c.isdigit() for c in t) or any(c in CJK_NUM_CHARS for c in t):
                    if cjk_value(t) is not None:
                        cjk.append(m.span())
                        out.append((m.start(), m.end(), t, False))
    for m in _text_re(stray).finditer(text):
        s, e = m.span()
        if cjk and any(a <= s < b for a, b in cjk):
            continue
        if m.group("vonly") is not None:
            out.append((s, e, m.group(), fractions))
            continue
        num = m.group("num")
        if stray:
            num = num.replace(", ", ",")
        if not num.isdigit() and read_digits(num, lang, integer_gold) is None:
            continue
        frac = m.group("den") is not None or m.group("vf") is not None
        if m.group("den") is not None and not fractions:
            # "3/4" outside math is two numbers, not a fraction (and never a date here).
            num = (m.group("sign") or "") + m.group("num")
            out.append((s, m.end("num"), num, False))
            out.append((m.start("den"), m.end("den"), m.group("den"), False))
            continue
        out.append((s, e, m.group(), frac))
    if cjk:
        out.sort()
    return tuple(out)


@short_text_memo(maxsize=4096)
def question_numbers(question: str) -> FrozenSet[Decimal]:
    """The numbers a question contains (a claim equal to one only repeats the question)."""
    vals: set[Optional[Decimal]] = set()
    for _, _, t, _ in numbers_in_text(question, fractions=False):
        v = parse_number(t, "en")
        if v is not None:
            vals.add(v)
    # "0-4 age group": both ends of a range the question names are the question's numbers.
    for m in re.finditer(r"(\d+)\s*[-–—]\s*(\d+)", question):
        vals.add(parse_number(m.group(1)))
        vals.add(parse_number(m.group(2)))
    return frozenset(v for v in vals if v is not None)
