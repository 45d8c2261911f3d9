"""One short piece of a cleaned response read as a value of an answer type: a bare answer
(SCORING.md step 2), the value a mark or a structured answer's cell holds (step 3), and
whether a claim only repeats the question.

Shared by :mod:`defan_pytest.scoring.claims` (the whole response, its marks and last line) and
:mod:`defan_pytest.scoring.structured` (table cells, list items, JSON values).
"""
from __future__ import annotations

import re
from typing import Optional

from defan_pytest.scoring.cleaning import CITATION, NOT_A_LIST, clean, latex_plain
from defan_pytest.scoring.keys import labelled
from defan_pytest.scoring.types import NONE_CLAIM, ONLINE_CLAIM, AnswerType, Context

__all__ = ["bare_value", "mark_value", "repeats_question"]

# Headings, list items, table rows and JSON are structure, never one bare value (clarification 1).
# ("19. November 1946" is a German date and "26. Platz" a German rank, not list items.)
_BLOCK_START = re.compile(rf"^(?:[-*•+]\s|\d+[.)]\s{NOT_A_LIST}|#{{1,6}}\s|\||[{{\[])", re.I)


def bare_value(kind: AnswerType, text: str, ctx: Context) -> Optional[str]:
    """The canonical value when ``text`` (already cleaned) is one bare value of the type."""
    t = text.strip()
    if not t or "\n" in t or _BLOCK_START.match(t):
        return None
    if ("[" in t or "(" in t or "【" in t or "http" in t) and CITATION.search(t):
        return None  # "386 [2]": a value and its citation are more than one bare value
    if (":" in t or "：" in t) and labelled(kind, t, ctx):
        return None
    return kind.bare(t, ctx)


def repeats_question(kind: AnswerType, claim: str, ctx: Context) -> bool:
    """Is this canonical claim something the question itself contains?"""
    if ctx.is_math or claim in (NONE_CLAIM, ONLINE_CLAIM):
        return False
    return kind.contained(claim, ctx)


def mark_value(kind: AnswerType, x: str, ctx: Context) -> Optional[str]:
    """The claim a mark (``**x**``, ``The answer is x``, ``\\boxed{x}``) or a cell holds: ``x``
    as a bare value, else the value inside it as a short phrase; ``None`` for emphasis, a label
    or a value the question already contains."""
    inner = clean(latex_plain(x))
    if inner.endswith(":") or inner.endswith("："):
        return None  # "**Laureate:**" labels a value; it is not one
    claim = bare_value(kind, inner, ctx)
    if claim is None:
        # "The answer is 1,351,921 people": the value inside a short marked phrase.
        claim = kind.phrase_value(inner, ctx)
    if claim is None:
        return None
    if kind.is_emphasis(claim, ctx):
        return None  # "**Nobel Prize**" is emphasis, not an answer
    if repeats_question(kind, claim, ctx):
        return None
    return claim
