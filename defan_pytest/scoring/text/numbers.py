"""Numbers: reading one written number, finding numbers in text, and canonical forms.

Shared by the numeric and rank answer types (a rank is a number too) and by the math rule.

Separators follow SCORING.md (clarification 4): in German, French, Spanish, Portuguese and
Italian a dot or a space groups thousands and a comma marks decimals; in English the reverse;
a space (or a thin space, or an apostrophe) only ever groups thousands; several equal
separators each followed by three digits group thousands in any language; one separator
followed by exactly three digits groups thousands when the gold is an integer; and a separator
that cannot group thousands (``53,51``, ``42.5``) marks decimals in any language.  Everything
that reads a number takes the response's language (``lang``, from
:func:`defan_pytest.scoring.text.language.language`) and whether the gold is an integer (``integer_gold``).

Currency signs, codes and abbreviations around a number (``₹21.60``, ``Rs. 642.86``,
``USD 5``, ``5 €``) are part of the number (clarification 6); number words up to the hundreds
of thousands, cardinal and ordinal, are numbers (clarification 5,
:mod:`defan_pytest.scoring.text.number_words`).

>>> parse_number("1.54 million"), canonical_number(parse_number("1,351,921"))
(Decimal('1540000.00'), '1351921')
>>> parse_number("53,51", lang="de"), parse_number("326.121", integer_gold=True)
(Decimal('53.51'), Decimal('326121'))
>>> parse_number("Rs. 642.86"), parse_number("twenty-five"), parse_number("vingt-six")
(Decimal('642.86'), Decimal('25'), Decimal('26'))
"""
from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import FrozenSet, List, Optional, Tuple

from defan_pytest.scoring.text.number_words import words_value

#: Languages whose numbers group thousands with a dot or a space and mark decimals with a comma.
DECIMAL_COMMA_LANGS = frozenset({"de", "fr", "es", "pt", "it"})

_SCALES = {
    "thousand": Decimal(1000), "thousands": Decimal(1000), "tausend": Decimal(1000),
    "mille": Decimal(1000), "mila": Decimal(1000), "mil": Decimal(1000),
    "million": Decimal(10) ** 6, "millions": Decimal(10) ** 6, "mn": Decimal(10) ** 6,
    "millionen": Decimal(10) ** 6, "mio": Decimal(10) ** 6, "millón": Decimal(10) ** 6,
    "millon": Decimal(10) ** 6, "millones": Decimal(10) ** 6, "milhão": Decimal(10) ** 6,
    "milhao": Decimal(10) ** 6, "milhões": Decimal(10) ** 6, "milhoes": Decimal(10) ** 6,
    "milione": Decimal(10) ** 6, "milioni": Decimal(10) ** 6,
    "billion": Decimal(10) ** 9, "billions": Decimal(10) ** 9, "bn": Decimal(10) ** 9,
    "milliard": Decimal(10) ** 9, "milliards": Decimal(10) ** 9, "milliarde": Decimal(10) ** 9,
    "milliarden": Decimal(10) ** 9, "mrd": Decimal(10) ** 9, "miliardo": Decimal(10) ** 9,
    "miliardi": Decimal(10) ** 9, "bilhão": Decimal(10) ** 9, "bilhao": Decimal(10) ** 9,
    "bilhões": Decimal(10) ** 9, "bilhoes": Decimal(10) ** 9,
    "trillion": Decimal(10) ** 12,
}
# Scale words as a regex (longest first, so "millions" is not read as "million" + "s").  Left
# out on purpose: the Spanish "billón" and Portuguese "bilião", a million millions (long scale),
# which an English reader would take for 10^9.
_SCALE_RE = "|".join(re.escape(w) for w in sorted(_SCALES, key=len, reverse=True))
_PERCENT_RE = r"%|percent|per\s+cent|pour\s+cent|prozent|por\s+ciento|por\s+cento|per\s+cento"
_VULGAR = {
    "½": Decimal("0.5"), "⅓": Decimal(1) / Decimal(3), "⅔": Decimal(2) / Decimal(3),
    "¼": Decimal("0.25"), "¾": Decimal("0.75"), "⅕": Decimal("0.2"), "⅛": Decimal("0.125"),
}

# Currency (clarification 6): a sign, or a code or abbreviation, before or after the number.
_CUR_SIGN = r"[$€£¥₹₩₽₺₦₱฿₫₪₴₵¢]"
_CUR_CODE = (
    r"(?-i:(?:US|USD|A|AU|AUD|C|CA|CAD|NZ|HK|S|R|MX)\$|Rs\.?|INR|USD|EUR|GBP|AUD|CAD|JPY|CNY|RMB|"
    r"CHF|NZD|HKD|SGD|BRL|MXN|ZAR|SEK|NOK|DKK|KRW|RUB|PKR|BDT|LKR|NPR|AED|SAR|QAR|Rp|Tk)"
)
_CUR_BEFORE = rf"(?:{_CUR_SIGN}|{_CUR_CODE}(?![A-Za-z]))"
_CUR_AFTER = rf"(?:{_CUR_SIGN}|(?<![A-Za-z]){_CUR_CODE}(?![\w$]))"

# The digits of one number: grouped (one kind of separator between groups of three, and
# maybe a decimal part after another separator), a single separator, or plain digits.
_SPACE = "[ \u00a0\u202f\u2009]"


def _body(name: str) -> str:
    return (
        rf"\d{{1,3}}(?P<{name}>[,.'’]|{_SPACE})\d{{3}}(?:(?P={name})\d{{3}})*(?:[.,]\d+)?(?!\d)"
        r"|\d+[.,]\d+|\d+"
    )


_NUM_CORE = re.compile(
    rf"^\s*(?:{_CUR_BEFORE}\s?)?([-+−]?)\s*(?:{_CUR_BEFORE}\s?)?({_body('g')}|[.,]\d+)"
    rf"(?:\s*/\s*(\d+))?\s*(?:({_PERCENT_RE})|({_SCALE_RE})\.?)?\s*(?:{_CUR_AFTER})?\s*$",
    re.IGNORECASE,
)
_SEP = re.compile(r"[.,'’ \u00a0\u202f\u2009]")


def _grouped(groups: List[str]) -> bool:
    """Do these digit groups read as thousands (``1``, ``351``, ``921``)?"""
    return 1 <= len(groups[0]) <= 3 and all(len(g) == 3 for g in groups[1:])


def read_digits(digits: str, lang: str = "", integer_gold: Optional[bool] = None) -> Optional[Decimal]:
    """The value of a run of digits and separators, read in the response's language.

    >>> read_digits("8.159.808"), read_digits("1,5", lang="fr"), read_digits("1,500")
    (Decimal('8159808'), Decimal('1.5'), Decimal('1500'))
    >>> read_digits("391.197"), read_digits("391.197", lang="de"), read_digits("391.197", integer_gold=True)
    (Decimal('391.197'), Decimal('391197'), Decimal('391197'))
    """
    seps = _SEP.findall(digits)
    try:
        if not seps:
            return Decimal(digits)
        groups = _SEP.split(digits)
        if any(not g for g in groups[1:]) or (not groups[0] and len(groups) != 2):
            return None
        kinds = ["." if s == "." else "," if s == "," else " " for s in seps]  # "'" groups like a space
        comma_decimal = lang in DECIMAL_COMMA_LANGS
        if all(k == kinds[0] for k in kinds):
            sep = kinds[0]
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
        if len(set(kinds[:-1])) == 1 and kinds[-1] != kinds[0] and kinds[-1] in ".," and _grouped(groups[:-1]):
            return Decimal("".join(groups[:-1]) + "." + groups[-1])
        return None
    except InvalidOperation:
        return None


def parse_number(text: str, lang: str = "", integer_gold: Optional[bool] = None) -> Optional[Decimal]:
    """The value of one written number (``1,351,921``, ``-3``, ``1.54 million``, ``3/4``,
    ``₹21.60``, ``twenty-five``), its separators read as :func:`read_digits` reads them."""
    t = text.strip()
    if t in _VULGAR:
        return _VULGAR[t]
    m = _NUM_CORE.match(t)
    if not m:
        w = words_value(t, lang)
        return None if w is None else Decimal(w[0])
    sign, digits, _sep, denom, _percent, scale = m.groups()
    value = read_digits(digits, lang, integer_gold)
    if value is None:
        return None
    try:
        if denom is not None:
            # Decimal, not int: reads any number of digits (int() refuses past 4300).
            if Decimal(denom) == 0:
                return None
            value = value / Decimal(denom)
    except InvalidOperation:
        return None
    if scale:
        value = value * _SCALES[scale.lower()]
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


_NUMBER_IN_TEXT = re.compile(
    rf"(?<![\w.,/])(?<![A-Za-z]-)(?P<sign>(?<!\d)[-−](?=[\d$€£¥₹]))?(?:{_CUR_BEFORE}\s?)?"
    rf"(?P<num>{_body('s')})"
    r"(?:\s*/\s*(?P<den>\d+)(?![\d/]))?"
    rf"(?P<scale>\s*(?i:{_PERCENT_RE}|(?:{_SCALE_RE})\.?)(?!\w))?"  # German capitalizes "Millionen"
    r"(?![\w]|[.,]\d)"
)


def numbers_in_text(
    text: str, fractions: bool, lang: str = "en", integer_gold: Optional[bool] = None
) -> List[Tuple[int, int, str, bool]]:
    """Numbers written in ``text``: ``(start, end, text_of_number, is_fraction)``.

    Only numbers that read in ``lang`` are kept (``5,6`` in English is not one number); read
    each one's text back with :func:`parse_number` and the same ``lang`` and ``integer_gold``.
    In running text an unknown language reads as English.
    """
    lang = lang or "en"
    out = []
    for m in _NUMBER_IN_TEXT.finditer(text):
        num = m.group("num")
        if not num.isdigit() and read_digits(num, lang, integer_gold) is None:
            continue
        s, e = m.span()
        frac = m.group("den") is not None
        if frac and not fractions:
            # "3/4" outside math is two numbers, not a fraction (and never a date here).
            num = (m.group("sign") or "") + m.group("num")
            out.append((s, m.end("num"), num, False))
            out.append((m.start("den"), m.end("den"), m.group("den"), False))
            continue
        out.append((s, e, m.group(), frac))
    return out


@lru_cache(maxsize=4096)
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
