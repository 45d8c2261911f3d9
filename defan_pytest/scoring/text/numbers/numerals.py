"""Numerals of other systems than ASCII digits (SCORING.md clarifications 15 and 16): the
digits of every Unicode script, Roman numerals, and Chinese and Japanese numerals.  The values
come from the Unicode database (``unicodedata.decimal``, ``unicodedata.numeric``); only the way
Roman and CJK numerals compose is written here.

>>> ascii_digits("١٬٣٥١٬٩٢١"), roman_value("XLI"), cjk_value("十六万七千一百二十七")
('1,351,921', 41, Decimal('167127'))
"""
from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Dict, Optional

__all__ = ["CJK_NUMBER", "CJK_NUM_CHARS", "CJK_UNIT_CHARS", "ascii_digits", "cjk_value", "roman_value", "to_roman"]

# --- Digits of any script -------------------------------------------------------------------


class _DigitMap(Dict[int, int]):
    """``str.translate`` table, filled as it is used: every Unicode decimal digit (Arabic-Indic
    ``٣``, Devanagari ``३``, full-width ``３``, ...) becomes its ASCII digit, and the Arabic
    thousands and decimal marks (``٬`` ``٫``) a comma and a dot.  One character for one
    character, so offsets in the text stay valid."""

    _MARKS = {0x066C: ord(","), 0x066B: ord("."), 0xFF0C: ord(","), 0xFF0E: ord(".")}

    def __missing__(self, cp: int) -> int:
        value = unicodedata.decimal(chr(cp), None)
        out = ord(str(value)) if value is not None else self._MARKS.get(cp, cp)
        self[cp] = out
        return out


_DIGIT_MAP = _DigitMap()


def ascii_digits(text: str) -> str:
    """``text`` with the digits of every script as ASCII digits (same length).

    >>> ascii_digits("١٬٣٥١٬٩٢١"), ascii_digits("१३,५१,९२१")
    ('1,351,921', '13,51,921')
    """
    if text.isascii() or _FOREIGN_DIGIT.search(text) is None:
        return text  # (what most non-ASCII text is: the table would give back every character)
    return text.translate(_DIGIT_MAP)


# A digit other than 0-9 (the digits ``unicodedata.decimal`` reads are those ``\d`` matches), or
# one of the marks the table reads as a comma or a dot.
_FOREIGN_DIGIT = re.compile("[^\\D0-9]|[" + "".join(map(chr, _DigitMap._MARKS)) + "]")


# --- Numerals of other systems ----------------------------------------------------------------

_ROMAN = re.compile(r"M{0,4}(CM|CD|D?C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})")
_ROMAN_VALUES = {"M": 1000, "D": 500, "C": 100, "L": 50, "X": 10, "V": 5, "I": 1}


def roman_value(text: str) -> Optional[int]:
    """The value of a Roman numeral written in capitals in its standard form (``XLI`` 41,
    ``MCMXCII`` 1992), else ``None`` (``IIII``, ``xli``, ``MIM``).

    >>> roman_value("MCMXCII"), roman_value("XLI"), roman_value("IC")
    (1992, 41, None)
    """
    t = text.strip()
    if not t or len(t) > 20 or not _ROMAN.fullmatch(t):
        return None
    total = 0
    for a, b in zip(t, t[1:] + " "):
        v = _ROMAN_VALUES[a]
        total += -v if b != " " and _ROMAN_VALUES[b] > v else v
    return total


def to_roman(n: int) -> str:
    """``n`` (1 to 4999) as a Roman numeral (the inverse of :func:`roman_value`)."""
    out = []
    for v, s in ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"),
                 (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")):
        while n >= v:
            out.append(s)
            n -= v
    return "".join(out)


# Chinese and Japanese numerals: unicodedata gives every character's value (一 1, 十 10, 万
# 10^4, 億 10^8); the composer only knows that a value under ten is a digit, 10 to 1000 a unit
# of a section and 10^4 and up a unit of sections.  两/兩 (a spoken "two") have no Unicode
# value.
_CJK_EXTRA = {"两": 2, "兩": 2, "〇": 0, "零": 0}
CJK_NUM_CHARS = "〇零一二三四五六七八九十百千万萬億亿兆两兩壱弐参拾"
CJK_UNIT_CHARS = "十百千万萬億亿兆拾"
CJK_NUMBER = re.compile(rf"(?:[0-9.]*[{CJK_NUM_CHARS}])+[0-9]*|[0-9]+(?=[{CJK_UNIT_CHARS}])")


@lru_cache(maxsize=64)
def _cjk_char(c: str) -> Optional[Decimal]:
    if c in _CJK_EXTRA:
        return Decimal(_CJK_EXTRA[c])
    v = unicodedata.numeric(c, None)
    return None if v is None else Decimal(int(v))


def cjk_value(text: str) -> Optional[Decimal]:
    """The value of a Chinese or Japanese numeral, with or without ASCII digits (``三百二十一``
    321, ``十六万七千一百二十七`` 167127, ``8万`` 80000, ``2万8千`` 28000, ``一九九二`` 1992).
    A digit after a unit counts units (``二百四`` is 204, as Japanese reads it).

    >>> cjk_value("十六万七千一百二十七"), cjk_value("2万8千"), cjk_value("二百四")
    (Decimal('167127'), Decimal('28000'), Decimal('204'))
    """
    t = ascii_digits(text.strip())
    if not t or len(t) > 60:
        return None
    total = section = Decimal(0)
    number: Optional[Decimal] = None
    i = 0
    try:
        while i < len(t):
            c = t[i]
            if c.isdigit() or (c == "." and number is not None):
                j = i
                while j < len(t) and (t[j].isdigit() or t[j] == "."):
                    j += 1
                if number is not None:
                    return None  # "2万8千" is fine, but two runs of digits in a row are not
                number = Decimal(t[i:j])
                i = j
                continue
            v = _cjk_char(c)
            if v is None:
                return None
            if v < 10:
                number = v if number is None else number * 10 + v  # 一九九二: digit by digit
            elif v < 10000:
                section += (number if number is not None else Decimal(1)) * v
                number = None
            else:
                section += number if number is not None else Decimal(0)
                if section == 0:
                    section = Decimal(1)
                total += section * v
                section = Decimal(0)
                number = None
            i += 1
    except InvalidOperation:
        return None
    return total + section + (number if number is not None else Decimal(0))
