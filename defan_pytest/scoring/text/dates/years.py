"""Years in dates (SCORING.md clarifications 8, 16, 17): the years a question names, two-digit
years read in the century nearest to them, the Buddhist Era, and which month and day can be a
date.  Read by :mod:`defan_pytest.scoring.text.dates.parse`.
"""
from __future__ import annotations

import re
from typing import Optional, Sequence, Tuple

from defan_pytest.scoring.text.memo import short_text_memo

__all__ = ["DateValue", "expand_year", "gregorian", "question_years", "valid_day", "year_of", "year_of_num"]

#: (year, month, day), each ``None`` where the text does not say it.
DateValue = Tuple[Optional[int], Optional[int], Optional[int]]


def question_years(question: str) -> Tuple[int, ...]:
    """The four-digit years a question names (the reference for two-digit years)."""
    return _question_years(question)


@short_text_memo(maxsize=4096)
def _question_years(question: str) -> Tuple[int, ...]:
    return tuple(int(y) for y in re.findall(r"(?<!\d)(1[0-9]{3}|20[0-9]{2})(?!\d)", question))


def expand_year(two_digits: int, ref_years: Sequence[int] = ()) -> int:
    """A two-digit year read in the century nearest to the years the question names, else in
    the 1900s (SCORING.md clarification 17).

    >>> expand_year(54), expand_year(5, [2010]), expand_year(98, [2002])
    (1954, 2005, 1998)
    """
    if not ref_years:
        return 1900 + two_digits
    options = [c + two_digits for c in range(1000, 2200, 100)]
    return min(options, key=lambda y: (min(abs(y - r) for r in ref_years), y))


def valid_day(m: int, d: Optional[int]) -> bool:
    """Whether month ``m`` (and day ``d``, when given) can be a date."""
    if not 1 <= m <= 12:
        return False
    if d is None:
        return True
    if not 1 <= d <= 31:
        return False
    if m in (4, 6, 9, 11) and d > 30:
        return False
    return not (m == 2 and d > 29)


def year_of(text: str, ref_years: Sequence[int]) -> int:
    """A year as written: four digits, or an apostrophe and two (``'54``: :func:`expand_year`)."""
    if text[0] in "'’‘":
        return expand_year(int(text[1:]), ref_years)
    return int(text)


def year_of_num(text: str, ref_years: Sequence[int]) -> int:
    """A year of a numeric date: two digits expanded (:func:`expand_year`), else as written."""
    return expand_year(int(text), ref_years) if len(text) == 2 else int(text)


def gregorian(value: DateValue) -> DateValue:
    """A year of 2400 or more is of the Buddhist Era (Thai dates): minus 543 (SCORING-CHOICES)."""
    year = value[0]
    return value if year is None or year < 2400 else (year - 543, value[1], value[2])
