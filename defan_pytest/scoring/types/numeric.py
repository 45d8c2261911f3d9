"""The ``numeric`` answer type: counts, amounts, percentages, math results.

A gold's written decimals set the tolerance (``42.85`` accepts 42.84 to 42.86); in the math
domain the claim of a worked solution is its last number.  Numbers are read in the response's
language, a currency sign or code keeps a number bare, and number words are numbers
(SCORING.md clarifications 4 to 6).  Clarification 15: a Roman numeral standing alone is a
number; a percentage answers only a question asking for a percentage, share or probability
(0.25 for 25% in a probability question) and is no candidate elsewhere outside math; the
first number of a range shares the second's scale word; stray spaces in a number
(``1, 351, 921``) are read for an integer gold.
"""
from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, FrozenSet, List, Optional, Sequence, Tuple

from defan_pytest.scoring.text.dates.text import parse_date_text
from defan_pytest.scoring.text.dates.parse import find_dates, question_years
from defan_pytest.scoring.text.memo import short_text_memo
from defan_pytest.scoring.text.numbers.words import number_words_in_text
from defan_pytest.scoring.text.numbers.parse import (
    canonical_number,
    decimals_of,
    is_percent,
    numbers_in_text,
    parse_number,
    question_numbers,
    roman_value,
    scale_of,
)
from defan_pytest.scoring.text.search import SpanIndex
from defan_pytest.scoring.types.value import Candidate, ValueAnswerType, contains_number, response_lang
from defan_pytest.scoring.types.base import Context, Entity, Extraction, Gold

# A question that asks for a percentage, a share or a probability (SCORING.md clarification
# 15): only there does a percentage answer; a probability's gold runs from 0 to 1, so there
# 25% is 0.25.
_ASKS_PERCENT = re.compile(
    r"percent|per\s*cent|%|\bshare\b|proportion|probabilit|\bchances?\b|likelihood|\bodds\b|\bfraction\b",
    re.I,
)
_ASKS_PROBABILITY = re.compile(r"probabilit|\bchances?\b|likelihood|\bodds\b", re.I)
# Two numbers of a range sharing the second one's scale word ("between 1.3 and 1.4 million").
_RANGE_JOIN = re.compile(r"\s*(?:-|–|—|to|and|or|bis|und|à|et|a|y|e|и|до|i)\s*", re.I)


@short_text_memo(maxsize=4096)
def _percent_cues(question: str) -> Tuple[bool, bool]:
    """(asks for a percentage, share or probability; asks for a probability)."""
    return bool(_ASKS_PERCENT.search(question)), bool(_ASKS_PROBABILITY.search(question))


def _percent_value(value: Decimal, ctx: Context) -> Optional[Decimal]:
    """What a percentage is worth in this row: ``None`` where the question asks for no
    percentage (outside math: it is not a candidate), a fraction of one for a probability,
    else the number as written."""
    asks, probability = _percent_cues(ctx.question)
    if probability:
        return value / 100
    if asks or ctx.is_math:
        return value
    return None


_CJK_YEAR = re.compile(r"(\d{1,4})\s*[年년]")

_ANSWER_LABELS = frozenset({"answer", "final", "result", "total", "value", "solution", "reponse", "antwort", "respuesta", "resposta", "risposta"})


def _range_scaled(
    text: str,
    first: Tuple[int, int, str, bool],
    second: Tuple[int, int, str, bool],
    value: Decimal,
    lang: str,
    integer_gold: Optional[bool],
) -> Decimal:
    """The first number of a range that shares the second's scale word (``between 1.3 and
    1.4 million`` is 1,300,000 to 1,400,000), else ``value`` as it is."""
    if not _RANGE_JOIN.fullmatch(text, first[1], second[0]):
        return value
    m = re.search(r"[^\W\d_][\w.]*$|[万萬億亿兆]$", second[2])
    if m is None or re.search(r"[^\W\d_]", first[2]):
        return value
    factor = scale_of(m.group())
    head = parse_number(second[2][: m.start()], lang, integer_gold)
    if factor is None or head is None or not value < head:
        return value
    return value * factor


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
        v = parse_number(text, ctx.lang or "", ctx.integer_gold, stray=ctx.integer_gold is True)
        if v is None and ctx.asks_year:
            m = _CJK_YEAR.fullmatch(text.strip())  # "1986年": how Chinese and Japanese write a year
            v = parse_number(m.group(1)) if m else None
        if v is None and ctx.asks_year:
            # A year written as a year ("'98") answers a year question (SCORING.md
            # clarification 17's two-digit years).
            d = parse_date_text(text, allow_year=True, ref_years=question_years(ctx.question))
            if d is not None and d[0] is not None and d[1] is None:
                return str(d[0])
        if v is None:
            r = roman_value(text)  # "MCMXCII" standing alone (clarification 15)
            return None if r is None else str(r)
        if is_percent(text):
            v = _percent_value(v, ctx)
            if v is None:
                return None  # a percentage does not answer a count (clarification 15)
        return canonical_number(v)

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
        stray = ctx.integer_gold is True
        found = numbers_in_text(text, ctx.is_math, lang, ctx.integer_gold, stray)
        for i, (s, e, num, _) in enumerate(found):
            v = parse_number(num, lang, ctx.integer_gold, stray)
            if v is None:
                continue
            if is_percent(num):
                v = _percent_value(v, ctx)
                if v is None:
                    continue  # "5.5% of the population" is no count (clarification 15)
            elif i + 1 < len(found):
                v = _range_scaled(text, found[i], found[i + 1], v, lang, ctx.integer_gold)
            if v in qnums:
                continue
            if s in date_spans:
                if re.fullmatch(r"\d{4}", num):
                    years_in_dates.append((s, canonical_number(v)))
                continue
            out.append((s, canonical_number(v)))
        if out or years_in_dates:
            # A year inside a date ("December 1992") only when nothing else is left.
            return out or years_in_dates
        if ctx.asks_year:
            # A date where a year is asked ("1969年9月25日"): its year.
            refs = question_years(ctx.question)
            return [
                (s, str(v[0])) for s, e, v in find_dates(text, ref_years=refs)
                if v[0] is not None and Decimal(v[0]) not in qnums
            ]
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
                if v is not None and is_percent(t):
                    v = _percent_value(v, ctx)
                if v is not None:
                    return Extraction(canonical_number(v), False, how="math-last")
            # No number in digits: the last number in words ("The correct quotient is
            # thirty-two": clarification 5).
            words = [n for _, _, n, ordinal in number_words_in_text(text, response_lang(text, ctx)) if not ordinal]
            if words:
                return Extraction(str(words[-1]), False, how="math-last")
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
