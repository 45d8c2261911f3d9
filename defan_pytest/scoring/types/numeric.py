"""The ``numeric`` answer type: counts, amounts, percentages, math results.

A gold's written decimals set the tolerance (``42.85`` accepts 42.84 to 42.86); in the math
domain the claim of a worked solution is its last number.  Numbers are read in the response's
language, a currency sign or code keeps a number bare, and number words are numbers
(SCORING.md clarifications 4 to 6).
"""
from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, FrozenSet, List, Optional, Sequence, Tuple

from defan_pytest.scoring.text.dates import find_dates
from defan_pytest.scoring.text.number_words import number_words_in_text
from defan_pytest.scoring.text.numbers import (
    canonical_number,
    decimals_of,
    numbers_in_text,
    parse_number,
    question_numbers,
)
from defan_pytest.scoring.text.search import SpanIndex
from defan_pytest.scoring.types.value import Candidate, ValueAnswerType, contains_number, response_lang
from defan_pytest.scoring.types.base import Context, Entity, Extraction, Gold

_ANSWER_LABELS = frozenset({"answer", "final", "result", "total", "value", "solution", "reponse", "antwort", "respuesta", "resposta", "risposta"})


class NumericType(ValueAnswerType):
    """Numbers, compared at the precision the gold is written with."""

    name = "numeric"
    labels: FrozenSet[str] = _ANSWER_LABELS | frozenset(
        """count number population attendance amount figure people spectators crowd persons
        residents children anzahl bevolkerung poblacion populacao popolazione numero totale""".split()
    )

    def gold_value(self, alternative: str) -> Optional[Tuple[Decimal, int]]:
        v = parse_number(alternative)
        return None if v is None else (v, decimals_of(alternative))

    def integer_gold(self, gold: Gold) -> Optional[bool]:
        if not gold.values:
            return None
        return all(d == 0 and v == v.to_integral_value() for v, d in gold.values)

    def bare(self, text: str, ctx: Context) -> Optional[str]:
        # ctx.lang is set wherever the separators need it; number words read in any language.
        v = parse_number(text, ctx.lang or "", ctx.integer_gold)
        return canonical_number(v) if v is not None else None

    def contained(self, claim: str, ctx: Context) -> bool:
        return contains_number(claim, ctx)

    def typed_candidates(self, text: str, ctx: Context) -> List[Candidate]:
        qnums = question_numbers(ctx.question)
        lang = ctx.lang or "en"  # set by extract wherever the separators need the language
        # Numbers inside a written date ("9 August 2011") are not counts; a year-valued
        # question (world_org) still sees its year because bare years are kept.
        date_spans = SpanIndex([] if ctx.asks_year else [(s, e) for s, e, v in find_dates(text, years=False)])
        out = []
        years_in_dates = []
        for s, e, num, _ in numbers_in_text(text, ctx.is_math, lang, ctx.integer_gold):
            v = parse_number(num, lang, ctx.integer_gold)
            if v is None or v in qnums:
                continue
            if s in date_spans:
                if re.fullmatch(r"\d{4}", num):
                    years_in_dates.append((s, canonical_number(v)))
                continue
            out.append((s, canonical_number(v)))
        if out or years_in_dates:
            # A year inside a date ("December 1992") only when nothing else is left.
            return out or years_in_dates
        # Number words ("twenty-five") only where no number is written in digits: "one" and
        # its like are too common in prose to outrank a figure.
        return [
            (s, str(n))
            for s, e, n, ordinal in number_words_in_text(text, response_lang(text, ctx))
            if not ordinal and n != 1 and Decimal(n) not in qnums
        ]

    def candidates(
        self, text: str, ctx: Context, entities: Optional[Sequence[Entity]], ner_available: bool
    ) -> Extraction:
        if ctx.is_math:
            # SCORING.md: a worked math solution claims its last number.
            lang = ctx.lang or "en"
            for s, e, t, _ in reversed(numbers_in_text(text, True, lang, ctx.integer_gold)):
                v = parse_number(t, lang, ctx.integer_gold)
                if v is not None:
                    return Extraction(canonical_number(v), False, how="math-last")
            return Extraction(None, False, how="none")
        return super().candidates(text, ctx, entities, ner_available)

    def parse_claim(self, claim: str) -> Any:
        return parse_number(claim)

    def correct(self, claim: str, gold: Gold) -> bool:
        value = parse_number(claim)
        if value is None:
            return False
        for g, d in gold.values:
            if d == 0:
                if value == g:
                    return True
            elif abs(value - g) <= Decimal(1).scaleb(-d):
                return True
        return False
