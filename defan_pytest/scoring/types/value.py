"""The shared flow of the value types (numeric, rank, date): typed candidates in reading
order, a value inside a short marked phrase, and a lone value with a unit or label."""
from __future__ import annotations

import re
from decimal import Decimal
from typing import List, Optional, Sequence, Tuple

from defan_pytest.scoring.text.numbers.parse import canonical_number, parse_number, question_numbers
from defan_pytest.scoring.text.language import language
from defan_pytest.scoring.types.base import BaseAnswerType, Context, Entity, Extraction

#: A candidate claim: ``(position in the text, canonical claim)``.
Candidate = Tuple[int, str]

_UNIT_LABEL = re.compile(
    r"^\s*(?P<n>[-−]?(?:[$€£¥₹]|Rs\.?\s?)?\d[\d,.' \u00a0\u202f\u2009]*?"
    r"(?:\s*(?:thousand|million|billion))?)\s+(?P<u>[^\W\d_][\w-]*(?:\s+[^\W\d_][\w-]*){0,2})\s*$",
    re.I,
)


def response_lang(text: str, ctx: Context) -> str:
    """The response's language: the one :func:`defan_pytest.scoring.claims.extract` found, or (for a
    piece scored on its own, such as a table cell) the piece's."""
    return ctx.lang if ctx.lang is not None else language(text)


class ValueAnswerType(BaseAnswerType):
    """A type whose claims are typed values found by patterns (no gazetteer, no NER)."""

    def typed_candidates(self, text: str, ctx: Context) -> List[Candidate]:
        """Candidates of the type not contained in the question, in reading order."""
        raise NotImplementedError

    def unit_value(self, value: Decimal) -> str:
        """The canonical claim of a lone number followed by a unit (``3 days``)."""
        return canonical_number(value)

    def phrase_value(self, text: str, ctx: Context) -> Optional[str]:
        if len(text.split()) > 6:
            return None
        found = self.typed_candidates(text, ctx)
        return found[0][1] if found else None

    def candidates(
        self, text: str, ctx: Context, entities: Optional[Sequence[Entity]], ner_available: bool
    ) -> Extraction:
        found = self.typed_candidates(text, ctx)
        if found:
            return Extraction(found[0][1], False, how="candidate")
        m = _UNIT_LABEL.match(text)
        if m:  # "3 days", "240 students": only the value with a unit or label
            v = parse_number(m.group("n"), ctx.lang or "", ctx.integer_gold)
            if v is not None:
                return Extraction(self.unit_value(v), False, how="unit")
        return Extraction(None, False, how="none")


def contains_number(claim: str, ctx: Context) -> bool:
    """Is the claim, read as a number, one the question contains?"""
    v = parse_number(claim)
    return v is not None and v in question_numbers(ctx.question)
