"""The ``date`` answer type: a full date, a month, or a year when the question asks for one.

Golds are written month first (``MM/DD/YYYY``); a response is read day first only when the
question asks for ``dd/mm``.  Canonical claims are ISO (``1946-11-19``, ``1946-11``, ``1946``).
"""
from __future__ import annotations

import re
from typing import Any, List, Optional

from defan_pytest.dates import DateValue, find_dates, parse_date_text
from defan_pytest.types._value import Candidate, ValueAnswerType
from defan_pytest.types.base import Context


def canonical_date(value: DateValue) -> str:
    """``1946-11-19``, ``1946-11`` or ``1946``."""
    y, m, d = value
    if m is None:
        return f"{y:04d}"
    if d is None:
        return f"{y:04d}-{m:02d}"
    return f"{y:04d}-{m:02d}-{d:02d}"


_ISO_DATE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")


def parse_canonical_date(text: str) -> Optional[DateValue]:
    m = _ISO_DATE.match(text.strip())
    if not m:
        return None
    y, mo, d = m.groups()
    return (int(y), int(mo) if mo else None, int(d) if d else None)



class DateType(ValueAnswerType):
    """Dates at the precision the gold gives."""

    name = "date"

    def gold_value(self, alternative: str) -> Optional[DateValue]:
        # The dataset writes dates month first (MM/DD/YYYY), whatever the question asks.
        return parse_date_text(alternative, dayfirst=False, allow_year=True)

    def bare(self, text: str, ctx: Context) -> Optional[str]:
        d = parse_date_text(text, dayfirst=ctx.dayfirst, allow_year=ctx.asks_year)
        return canonical_date(d) if d is not None else None

    def parse_claim(self, claim: str) -> Any:
        return parse_canonical_date(claim)

    def typed_candidates(self, text: str, ctx: Context) -> List[Candidate]:
        qdates = {v for _, _, v in find_dates(ctx.question, dayfirst=ctx.dayfirst)}
        return [
            (s, canonical_date(v))
            for s, e, v in find_dates(text, dayfirst=ctx.dayfirst)
            if v not in qdates
        ]
