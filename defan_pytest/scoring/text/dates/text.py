"""A whole text read as one date (:func:`parse_date_text`): what alignment asks of a date
answer, on top of the date grammar of :mod:`.dates` -- the words a written date may carry
around it (a leading weekday or preposition, a trailing year word) and the rule that the date
covers the text.
"""
from __future__ import annotations

import re
from typing import Optional, Sequence

from defan_pytest.scoring.text.dates.parse import _DIGIT, DateValue, _anchors, find_dates
from defan_pytest.scoring.text.dates.months import WORD, MonthData, fold, load

__all__ = ["parse_date_text"]

_LEAD = re.compile(rf"^({WORD})\.?,?\s+")
_TAIL = re.compile(rf"[\s\u202f]*({WORD})\.?$")


def parse_date_text(
    text: str, dayfirst: bool = False, allow_year: bool = False, ref_years: Sequence[int] = ()
) -> Optional[DateValue]:
    """The date that ``text`` is, as a whole, or ``None``.

    A leading weekday or preposition (``Tuesday,``, ``on``, ``le``, ``am``) and a trailing
    year word (``г.``, ``года``, ``r.``, ``年``) are part of a written date.
    ``allow_year``: a bare year counts (as ``(year, None, None)``).
    """
    t = text.strip().rstrip(".").strip()
    if not t or len(t) > 60 or not _DIGIT.search(t):
        return None
    if _anchors(t)[2]:
        data = load()
        for _ in range(3):  # "on Tuesday, 19 November 1946"
            lead = _LEAD.match(t)
            if not lead or not _leading_word(lead.group(1), data):
                break
            t = t[lead.end():]
        tail = _TAIL.search(t)
        if tail and re.search(r"\d\s*$", t[: tail.start()]):
            word = fold(tail.group(1))
            # A year word may be attached ("1986年"); a day word only after a space
            # ("19 d."), so that "1日" keeps its unit.
            if word in data.year_words or (word in data.day_words and tail.group().startswith((" ", "\u202f"))):
                t = t[: tail.start()]
        t = t.strip().rstrip(".").strip()
    found = find_dates(t, dayfirst=dayfirst, years=True, ref_years=ref_years)
    if len(found) != 1:
        return None
    s, e, value = found[0]
    if s != 0 or t[e:].strip(" .,") != "":
        return None
    if value[1] is None and not allow_year:
        return None
    return value


def _leading_word(word: str, data: MonthData) -> bool:
    w = fold(word)
    if w in data.months:  # "Mar 14, 1969": a month that is also a weekday elsewhere (mardi)
        return False
    # A weekday, a connective, a day word ("ngày 2 tháng 9 năm 1945"), a preposition.
    return w in data.weekdays or w in data.connectives or w in data.day_words or w in _PREPOSITIONS


# Prepositions before a date that dateparser's skip words lack ("am 19. November", "el 19 de",
# "em 19 de", "il 19"): hand-written, a few words of the five languages of clarification 4.
_PREPOSITIONS = frozenset({"on", "le", "am", "el", "em", "il", "the"})
