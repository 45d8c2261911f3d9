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
from defan_pytest.scoring.text.tokens import folded_tokens, question_tokens
from defan_pytest.scoring.types import NONE_CLAIM, ONLINE_CLAIM, AnswerType, Context

__all__ = ["BLOCK_START", "bare_value", "mark_value", "repeated_unit", "repeats_question"]

# Headings, list items, table rows and JSON are structure, never one bare value (clarification 1).
# ("19. November 1946" is a German date and "26. Platz" a German rank, not list items.)  The
# letter of a multiple-choice option ("D) John C. Reilly") is a list marker (clarification 13).
BLOCK_START = re.compile(rf"^(?:[-*•+]\s|\d+[.)]\s{NOT_A_LIST}|\(?[A-Ea-e]\)\s|#{{1,6}}\s|\||[{{\[])", re.I)
# A comment in brackets after the value ("Long Beach, CA (near Los Angeles)"): two words or
# more, one of them a lower-case word that is not a particle of a title.  "Parasite (기생충)",
# "Virtual (online)" and "Birdman or (The Unexpected Virtue of Ignorance)" are not comments.
_COMMENT = re.compile(
    r"\((?=[^()]*\s)(?=[^()]*\b(?!(?:of|the|a|an|and|or|in|on|at|to|for|de|la|le|y|e|et|und)\b)[a-z])[^()\n]{3,200}\)\s*$"
)
_WORDS = re.compile(r"\S+")
# "340. koht", "85. hely", "1943. augusztus 17": a number, its ordinal dot and one lower-case
# word (and maybe a number) is an ordinal with its noun or a year-first date (clarification
# 16), not a list item, which names something.
_ORDINAL_DOT = re.compile(r"\d+\.\s+[^\W\d_][^\s\d]*(?:\s+\d{1,2}\.?)?")


def repeated_unit(text: str) -> Optional[str]:
    """The value a repetition loop repeats (``Paris Paris Paris`` -> ``Paris``; three times
    or more, one to six words each, lines or spaces between them), else ``None``
    (clarification 12).  Twice is not a loop: ``Bora Bora``, ``New York, New York``."""
    head = text.split(None, 1)
    if len(head) < 2 or text.count(head[0]) < 3:
        return None  # the common case: the first word does not come back three times
    words = text.split()
    n = len(words)
    if n < 3 or n > 600:
        return None
    for k in range(1, 7):
        if n % k or n // k < 3:
            continue
        unit = words[:k]
        if all(words[i: i + k] == unit for i in range(k, n, k)):
            return " ".join(unit).strip(" ,;")
    return None


def _restates_question(kind: AnswerType, t: str, ctx: Context) -> bool:
    """For a name or place: is every word of ``t`` either the question's or a lower-case word
    (``The runner-up of the 2014 FIFA World Cup``, ``ICCV 1987``)?  Then it names nothing."""
    if not kind.uses_gazetteer or (ctx.gazetteer is not None and t in ctx.gazetteer):
        return False
    q = question_tokens(ctx.question)
    toks = folded_tokens(t)
    return bool(toks) and all(f in q or t[s].islower() for s, _, f in toks)


#: A bare value that says there is none, in any type's row.
_NONE_WORDS = frozenset({"none", "null"})


def bare_value(kind: AnswerType, text: str, ctx: Context) -> Optional[str]:
    """The canonical value when ``text`` (already cleaned) is one bare value of the type."""
    t = text.strip()
    if not t or "\n" in t or BLOCK_START.match(t) and not (_ORDINAL_DOT.fullmatch(t) and t == t.lower()):
        return None
    if ("[" in t or "(" in t or "【" in t or "http" in t) and CITATION.search(t):
        return None  # "386 [2]": a value and its citation are more than one bare value
    if "(" in t and _COMMENT.search(t) and (ctx.gazetteer is None or t not in ctx.gazetteer):
        return None  # a value and a comment on it are more than one bare value
    if (":" in t or "：" in t) and labelled(kind, t, ctx):
        return None
    if " " in t and repeated_unit(t) is not None:
        return None  # a repetition loop is misaligned (clarification 12)
    if t.casefold() in _NONE_WORDS:
        return NONE_CLAIM  # rule 2's "None", in a row of any type (and a structure's null: 25)
    claim = kind.bare(t, ctx)
    if claim is not None and claim not in (NONE_CLAIM, ONLINE_CLAIM) and _restates_question(kind, t, ctx):
        return None
    return claim


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
    if ctx.is_math and ("=" in inner or "≈" in inner):
        # "the answer is 12 + 1 = 13": the result is what the last equals sign gives
        # (clarification 20); "2800 m * 10 m * 5 m = 100000 m^3" claims 100000, not 3.
        inner = re.split("[=≈]", inner)[-1].strip()
    unit = repeated_unit(inner)
    if unit is not None:
        inner = unit  # "The answer is Paris Paris Paris": its value
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
