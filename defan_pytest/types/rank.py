"""The ``rank`` answer type: a position (``334th``, ``#334``, ``=47``) or a band (``601-650``)."""
from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, List, Optional, Tuple, Union

from defan_pytest.numbers import canonical_number, numbers_in_text, parse_number, question_numbers
from defan_pytest.text import SpanIndex
from defan_pytest.types._value import Candidate, ValueAnswerType, contains_number
from defan_pytest.types.base import Context

RankValue = Union[int, Tuple[int, int]]

_RANK_ONE = re.compile(r"^\s*(?:#|no\.?\s*|(?:joint|tied|t-)\s*)?=?\s*(\d+)\s*(?:st|nd|rd|th)?\s*=?\s*$", re.I)
_RANK_BAND = re.compile(r"^\s*=?(\d+)\s*(?:-|–|—|to)\s*(\d+)\s*$", re.I)


def parse_rank(text: str) -> Optional[RankValue]:
    """A rank (``334``, ``334th``, ``#334``, ``=47``, ``47=``) or a band (``601-650``)."""
    m = _RANK_ONE.match(text)
    if m:
        return int(m.group(1))
    m = _RANK_BAND.match(text)
    if m:
        lo, hi = int(m.group(1)), int(m.group(2))
        if lo < hi:
            return (lo, hi)
    return None


def canonical_rank(value: RankValue) -> str:
    """``386`` or ``601-650``."""
    if isinstance(value, tuple):
        return f"{value[0]}-{value[1]}"
    return str(value)


_RANK_MARKED = re.compile(
    r"(?:(?P<ord>\b\d+)(?:st|nd|rd|th)\b"
    r"|#\s*(?P<hash>\d+)\b"
    r"|(?<![\w=])=\s*(?P<eq1>\d+)\b"
    r"|\b(?P<eq2>\d+)=(?!\d)"
    r"|\b(?:ranked|ranking|rank|position(?:ed)?|placed|place|spot|number|no\.)\s*"
    r"(?:of|at|as|is|was|in)?\s*(?:#|no\.?\s*)?=?\s*(?P<kw>\d+)\b(?!\s*[-–—]\s*\d))",
    re.I,
)
_RANK_BAND_IN_TEXT = re.compile(r"(?<![\w.,])=?(\d{1,4})\s*[-–—]\s*(\d{1,4})(?![\w.,]|[-–—]\d)")


class RankType(ValueAnswerType):
    """QS-style positions and bands; a year is never a position."""

    name = "rank"

    def gold_value(self, alternative: str) -> Optional[RankValue]:
        return parse_rank(alternative)

    def bare(self, text: str, ctx: Context) -> Optional[str]:
        r = parse_rank(text)
        return canonical_rank(r) if r is not None else None

    def contained(self, claim: str, ctx: Context) -> bool:
        return contains_number(claim, ctx)

    def unit_value(self, value: Decimal) -> str:
        return canonical_rank(int(value)) if value == value.to_integral_value() else canonical_number(value)

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
        for m in _RANK_MARKED.finditer(text):
            # Marked ranks never start inside one another (finditer), so only bands can hold one.
            if m.start() in bands:
                continue
            n = next(g for g in ("ord", "hash", "eq1", "eq2", "kw") if m.group(g) is not None)
            val = int(m.group(n))
            if val in qnums:
                continue
            strong.append((m.start(), str(val)))
            taken.append(m.span())
        if strong:
            return sorted(strong)
        out = []
        spans = SpanIndex(taken)
        for s, e, num, _ in numbers_in_text(text, fractions=False):
            if s in spans:
                continue
            v = parse_number(num)
            if v is None or v in qnums or v != v.to_integral_value() or v < 1:
                continue
            if 1900 <= v <= 2100 and re.fullmatch(r"\d{4}", num):
                continue  # a year, not a QS position
            out.append((s, str(int(v))))
        return out
