"""Numbers: reading one written number, finding numbers in text, and canonical forms.

Shared by the numeric and rank answer types (a rank is a number too) and by the math rule.

>>> parse_number("1.54 million"), canonical_number(parse_number("1,351,921"))
(Decimal('1540000.00'), '1351921')
"""
from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import FrozenSet, List, Optional, Tuple

_SCALES = {
    "thousand": Decimal(1000), "million": Decimal(10) ** 6, "mn": Decimal(10) ** 6,
    "billion": Decimal(10) ** 9, "bn": Decimal(10) ** 9, "trillion": Decimal(10) ** 12,
}
_VULGAR = {
    "½": Decimal("0.5"), "⅓": Decimal(1) / Decimal(3), "⅔": Decimal(2) / Decimal(3),
    "¼": Decimal("0.25"), "¾": Decimal("0.75"), "⅕": Decimal("0.2"), "⅛": Decimal("0.125"),
}
_NUM_CORE = re.compile(
    r"^\s*[$€£¥]?\s*([-+−]?)\s*[$€£¥]?\s*(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{1,3}(?:[ \u00a0\u202f\u2009]\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?:\s*/\s*(\d+))?\s*(%|percent|thousand|million|billion|trillion|mn|bn)?\s*$",
    re.IGNORECASE,
)


def parse_number(text: str) -> Optional[Decimal]:
    """The value of one written number (``1,351,921``, ``-3``, ``1.54 million``, ``3/4``)."""
    t = text.strip()
    if t in _VULGAR:
        return _VULGAR[t]
    m = _NUM_CORE.match(t)
    if not m:
        return None
    sign, digits, denom, scale = m.groups()
    try:
        value = Decimal(re.sub(r"[,\s\u00a0\u202f\u2009]", "", digits))
        if denom is not None:
            if int(denom) == 0:
                return None
            value = value / Decimal(denom)
    except InvalidOperation:
        return None
    if scale and scale.lower() in _SCALES:
        value = value * _SCALES[scale.lower()]
    if sign in ("-", "−"):
        value = -value
    return value


def decimals_of(text: str) -> int:
    """Number of decimals a written gold number carries (``42.85`` -> 2, ``1,351,921`` -> 0)."""
    m = re.search(r"\.(\d+)", text)
    return len(m.group(1)) if m else 0


def canonical_number(value: Decimal) -> str:
    """A canonical string for a number: no exponent, no trailing zeros (``1350000``)."""
    if value == value.to_integral_value():
        return str(int(value))
    # A repeating fraction (2/3) is cut at 12 places: far below any gold's precision.
    return format(value.quantize(Decimal("1e-12")).normalize(), "f")


_NUMBER_IN_TEXT = re.compile(
    r"(?<![\w.,/])(?<![A-Za-z]-)(?P<sign>(?<!\d)[-−](?=\d))?[$€£¥]?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{1,3}(?:[ \u00a0\u202f\u2009]\d{3})+(?![\d,])(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?:\s*/\s*(?P<den>\d+)(?![\d/]))?"
    r"(?P<scale>\s*(?:%|percent\b|thousand\b|million\b|billion\b|trillion\b|mn\b|bn\b))?"
    r"(?![\w]|[.,]\d)"
)


def numbers_in_text(text: str, fractions: bool) -> List[Tuple[int, int, str, bool]]:
    """Numbers written in ``text``: ``(start, end, text_of_number, is_fraction)``."""
    out = []
    for m in _NUMBER_IN_TEXT.finditer(text):
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
        v = parse_number(t)
        if v is not None:
            vals.add(v)
    # "0-4 age group": both ends of a range the question names are the question's numbers.
    for m in re.finditer(r"(\d+)\s*[-–—]\s*(\d+)", question):
        vals.add(parse_number(m.group(1)))
        vals.add(parse_number(m.group(2)))
    return frozenset(v for v in vals if v is not None)

