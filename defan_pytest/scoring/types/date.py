"""The ``date`` answer type: a full date, a month, or a year when the question asks for one.

Golds are written month first (``MM/DD/YYYY``); a response is read day first only when the
question asks for ``dd/mm`` (and even then month first when day first is impossible).
Canonical claims are ISO (``1946-11-19``, ``1946-11``, ``1946``, and ``--11-19`` for a day and
month without a year).  In a response with several dates, full dates come before partial ones
(SCORING.md clarifications 8 and 17); a two-digit year is read in the century nearest to the
years the question names, else in the 1900s (clarification 17).
"""
from __future__ import annotations

import re
from typing import Any, FrozenSet, List, Optional

from defan_pytest.scoring.text.dates.text import parse_date_text
from defan_pytest.scoring.text.dates.parse import DateValue, find_dates, question_years
from defan_pytest.scoring.types.value import Candidate, ValueAnswerType
from defan_pytest.scoring.types.base import Context, Gold


def canonical_date(value: DateValue) -> str:
    """``1946-11-19``, ``1946-11``, ``1946`` or ``--11-19`` (ISO 8601's day and month)."""
    y, m, d = value
    if y is None:
        return f"--{m:02d}-{d:02d}"
    if m is None:
        return f"{y:04d}"
    if d is None:
        return f"{y:04d}-{m:02d}"
    return f"{y:04d}-{m:02d}-{d:02d}"


_ISO_DATE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")
_ISO_DAY_MONTH = re.compile(r"^--(\d{2})-(\d{2})$")


def parse_canonical_date(text: str) -> Optional[DateValue]:
    """The value of a canonical claim (see :func:`canonical_date`), or ``None``."""
    m = _ISO_DATE.match(text.strip())
    if not m:
        dm = _ISO_DAY_MONTH.match(text.strip())
        return (None, int(dm.group(1)), int(dm.group(2))) if dm else None
    y, mo, d = m.groups()
    return (int(y), int(mo) if mo else None, int(d) if d else None)



class DateType(ValueAnswerType):
    """Dates at the precision the gold gives."""

    name = "date"
    labels: FrozenSet[str] = frozenset(
        """answer final result date admission admitted joined joining membership member born
        birth birthday dob datum fecha data naissance nacimiento nascimento nascita geboren
        adhesion beitritt ingreso adesao""".split()
    )

    def gold_value(self, alternative: str) -> Optional[DateValue]:
        # The dataset writes dates month first (MM/DD/YYYY), whatever the question asks.
        value = parse_date_text(alternative, dayfirst=False, allow_year=True)
        return value if value is not None and value[0] is not None else None

    def bare(self, text: str, ctx: Context) -> Optional[str]:
        d = parse_date_text(
            text, dayfirst=ctx.dayfirst, allow_year=ctx.asks_year, ref_years=question_years(ctx.question)
        )
        if d is None or d[0] is None:
            # A day and month without a year is a partial date: never one bare date.
            return None
        if d[1] is not None and d[2] is None and not (ctx.asks_month or ctx.asks_year):
            # "April 1957" for a question that asks for a date: a partial date, misaligned like
            # a bare year (its value is still the claim, as a marked or found candidate).
            return None
        return canonical_date(d)

    def parse_claim(self, claim: str) -> Any:
        return parse_canonical_date(claim)

    def typed_candidates(self, text: str, ctx: Context) -> List[Candidate]:
        refs = question_years(ctx.question)
        qdates = {v for _, _, v in find_dates(ctx.question, dayfirst=ctx.dayfirst)}
        found = [(s, v) for s, e, v in find_dates(text, dayfirst=ctx.dayfirst, ref_years=refs) if v not in qdates]
        # Full dates first, then partial ones (a month and year, a year), each in reading
        # order: "admitted in 1946, on 19 November" claims the full date, as a stated rank
        # outranks other numbers.
        full = [(s, canonical_date(v)) for s, v in found if v[0] is not None and v[2] is not None]
        partial = [(s, canonical_date(v)) for s, v in found if v[0] is None or v[2] is None]
        return full + partial

    def correct(self, claim: str, gold: Gold) -> bool:
        # "A year-only gold by the year": a claim at least as precise as the gold matches
        # when it agrees at the gold's precision; a claim less precise never does.
        value = parse_canonical_date(claim)
        if value is None or value[0] is None:  # a day and month never match (clarification 17)
            return False
        for g in gold.values:
            if g[1] is None:
                if value[0] == g[0]:
                    return True
            elif g[2] is None:
                if value[:2] == g[:2]:
                    return True
            elif value == g:
                return True
        return False
