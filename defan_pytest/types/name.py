"""The ``name`` answer type: people, teams, films, countries, organisations.

A name matches by folded tokens (SCORING.md, names and places); a response that says no prize
was awarded claims ``none``, which only an empty gold accepts.
"""
from __future__ import annotations

import re
from typing import List, Optional

from defan_pytest.text import fold, looks_like_sentence, name_tokens, names_match
from defan_pytest.types._entity import Candidate, EntityAnswerType
from defan_pytest.types.base import NONE_CLAIM, Context, Gold

#: Named-entity labels that can be a name answer.
NAME_LABELS = frozenset({"PERSON", "ORG", "GPE", "NORP", "WORK_OF_ART", "FAC", "LOC", "EVENT", "PRODUCT"})

_NONE_STATEMENT = re.compile(
    r"\b(?:no\s+(?:[\w’'-]+\s+){0,3}?(?:prize|award|winner|laureate|recipient)s?\b|no\s+one\b"
    r"|not\s+(?:been\s+)?(?:awarded|given|presented|conferred)\b"
    r"|(?:wasn't|weren't|was\s+not|were\s+not)\s+(?:awarded|given|presented)\b"
    r"|withheld\b|nobody\b|none\b|n/a\b|no\s+award\b)",
    re.I,
)
_REFUSAL = re.compile(
    r"\b(?:i\s+(?:don't|do\s+not|cannot|can't|am\s+unable|'m\s+unable|am\s+not\s+able)|"
    r"as\s+an\s+ai|i'm\s+sorry|i\s+apologi[sz]e|unable\s+to\s+(?:find|provide|determine))",
    re.I,
)


def _bare_name(t: str, ctx: Context) -> Optional[str]:
    if len(t) > 90:
        return None
    if _NONE_STATEMENT.fullmatch(t) or (
        ctx.empty_gold and len(t.split()) <= 12 and _NONE_STATEMENT.search(t) and not _REFUSAL.search(t)
    ):
        return NONE_CLAIM
    gaz = ctx.gazetteer
    if gaz is not None and t in gaz:
        return t  # a known answer, even one that reads like a sentence ("It Happened One Night")
    if len(t.split()) > 10 or looks_like_sentence(t):
        return None
    if re.search(r"^\s*(?:[-*•]|\d+[.)])\s", t) or "(" in t:
        return None  # a list item, or a name with a comment in brackets
    # Two names where one is asked ("Pierre Curie and Marie Curie", "Curie; Becquerel").
    parts = [p for p in re.split(r"\s+(?:and|&|or)\s+|\s*[;/,]\s*", t) if p.strip()]
    real = [p for p in parts if fold(p).strip(" .") not in {"jr", "sr", "ii", "iii", "iv"}]
    if len(real) >= 2 and sum(1 for p in real if p[:1].isupper()) >= 2:
        return None
    if not name_tokens(t):
        return None
    return t



class NameType(EntityAnswerType):
    """Names, matched token by token with initials and transliterations allowed."""

    name = "name"
    ner_labels = NAME_LABELS

    def bare(self, text: str, ctx: Context) -> Optional[str]:
        return _bare_name(text, ctx)

    def statements(self, text: str) -> List[Candidate]:
        return [(m.start(), m.end(), NONE_CLAIM, "none") for m in _NONE_STATEMENT.finditer(text)]

    def correct(self, claim: str, gold: Gold) -> bool:
        return any(names_match(claim, g) for g in gold.alternatives)

    def equivalent(self, a: str, b: str) -> bool:
        return names_match(a, b) or names_match(b, a)
