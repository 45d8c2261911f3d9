"""Math results (SCORING.md clarification 20): a statement of the result (``The remainder is
5``, ``x = 4``, a line ending ``= 20``) is an explicit mark, and the last one before any check
of the result (``Check: 4 × 9 = 36``, or an unlabelled one) wins; a rejected root or a number
named to justify the result (``since the other root, -9, is negative``) is not.

:func:`math_text` blanks out justifications and rejected roots (keeping the length);
:func:`result_marks` lists the result statements as marks ``(position, claim)``.  The words of
checks and justifications are English: no library lists them.
"""
from __future__ import annotations

import re
from decimal import Decimal
from typing import FrozenSet, List, Sequence, Tuple

from defan_pytest.scoring.reading import bare_value, mark_value
from defan_pytest.scoring.text.numbers.parse import parse_number, question_numbers
from defan_pytest.scoring.turns import blank, blank_span
from defan_pytest.scoring.types import AnswerType, Context

__all__ = ["math_text", "result_marks"]

#: At most this many result statements of one pattern are read.
MAX_READ = 400

# --------------------------------------------------------------------------------------------
# math results (clarification 20)
# --------------------------------------------------------------------------------------------

# A check of the result ("Check: 4 × 9 = 36", "Verification: ..."): it and what follows are
# not the result.
_CHECK = re.compile(
    r"(?:^|(?<=[.!?]))[ \t]*(?:\*\*|__)?(?:check(?:ing)?|verif(?:y|ication|ying)|let'?s\s+(?:check|verify)"
    r"|to\s+(?:check|verify)|sanity\s+check|proof)\b",
    re.I | re.M,
)
# A number named to justify the result ("since the other root, -9, is negative", "because 42
# is a multiple of 7"), or a rejected root ("x = -9 (rejected)"): not results.
_JUSTIFICATION = re.compile(r"\b(?:since|because|given\s+that|as\s+the\s+other)\b[^.;\n]{0,300}", re.I)
_REJECTED = re.compile(r"\b(?:reject(?:ed|s)?|discard(?:ed|s)?|extraneous|invalid|not\s+valid)\b", re.I)
# A number, optionally with a few unit words ("100000 m^3", "2340 man-hours", "5.5 runs per over").
# A unit word is a letter and what follows it up to a space or a stop, combining marks
# included ("है" is a Devanagari letter and a vowel sign); a danda or an ideographic full stop
# ends a clause as a full stop does.
_RESULT_VALUE = (
    r"(?P<x>[-−]?[$€£¥₹]?\d[\d,.'/]*(?:\s*%|(?:\s+[^\W\d_][^\s,;.)\]।॥。]*){0,4})?)"
    r"(?=[ \t]*(?:[,;.]?[)\]]|[,;](?:\s|$)|\.(?:\s|$)|[।॥。]|\n|$|\s+(?:and|so|then|which|hence|therefore|thus)\b))"
)
_THE_SUBJECT_IS = (
    # (the subject may name a number: "the least integer greater than -0.5 is 0")
    r"\bthe\s+(?:(?:[^\W\d_][\w'-]*|[-−]?\d[\d,.]*)\s+){0,5}?(?:is|are|was|were|equals|will\s+be|would\s+be"
    r"|must\s+be|should\s+be|comes\s+to|amounts\s+to)\s+"
)
# "The correct quotient is thirty-two.": a result in number words (clarification 5), taken
# only when the words are one number of the type, ending their clause.
_RESULT_IN_WORDS = re.compile(
    _THE_SUBJECT_IS + r"(?P<x>[^\W\d_][\w'-]*(?:[ \t]+[^\W\d_][\w'-]*){0,6}?)(?=[ \t]*(?:[,;.!।。](?:\s|$)|\n|$))",
    re.I,
)
_RESULT_MARKS = [
    # a line or clause ending "= 20": what the last equals sign gives
    re.compile(r"[=≈][ \t]*" + _RESULT_VALUE),
    # "The remainder is 5", "the required run rate is 5.5 runs per over"
    re.compile(
        _THE_SUBJECT_IS + r"(?:(?:approximately|about|around|roughly|exactly|only|just)\s+)?" + _RESULT_VALUE,
        re.I,
    ),
]


def math_text(text: str) -> str:
    """A worked solution with its justifications and rejected roots blanked out
    (clarification 20); the length is kept."""
    if "since" in text or "because" in text or "given" in text or "as the" in text:
        text = _JUSTIFICATION.sub(blank, text)
    if "reject" in text or "discard" in text or "valid" in text or "extraneous" in text:
        for n, m in enumerate(list(_REJECTED.finditer(text))):
            if n >= MAX_READ:
                break
            # the clause around the word ("x = -9 (rejected)", "-9 is rejected"): 80 characters
            # each way at most
            lo = max(0, m.start() - 80)
            s = max([text.rfind(c, lo, m.start()) + 1 for c in ",.;\n"] + [text.rfind(w, lo, m.start()) + len(w) for w in (" or ", " and ")] + [lo])
            ends = [e for e in (text.find(c, m.end(), m.end() + 80) for c in ",.;\n") if e >= 0]
            e = min(ends) if ends else min(len(text), m.end() + 80)
            text = blank_span(text, s, e)
    return text


def result_marks(kind: AnswerType, text: str, ctx: Context) -> List[Tuple[int, str]]:
    """The statements of the result in a worked solution, in reading order, up to the first
    unlabelled check (an equation after a result that uses it to give back a number of the
    question: ``√1.5625 = 1.25, and 1.25 × 1.25 = 1.5625``)."""
    found: List[Tuple[int, int, str]] = []
    check = _CHECK.search(text, 1)
    end = check.start() if check is not None else len(text)
    for pat in _RESULT_MARKS:
        for n, m in enumerate(pat.finditer(text, 0, end)):
            if n >= MAX_READ:
                break
            claim = mark_value(kind, m.group("x"), ctx)
            if claim is not None:
                found.append((m.start("x"), m.start(), claim))
    if "the " in text.lower():
        for n, m in enumerate(_RESULT_IN_WORDS.finditer(text, 0, end)):
            if n >= MAX_READ:
                break
            claim = bare_value(kind, m.group("x"), ctx)
            if claim is not None:
                found.append((m.start("x"), m.start(), claim))
    found.sort()
    out: List[Tuple[int, str]] = []
    for at, start, claim in found:
        if out and out[-1][0] == at:
            continue
        if out and _is_check(text[_clause_start_eq(text, start): start], claim, out[-1][1], out, question_numbers(ctx.question)):
            break  # an unlabelled check of the result
        out.append((at, claim))
    return out


_PLAIN_NUMBER = re.compile(r"(?<![\d.])\d+(?:\.\d+)?(?![\d.]\d)")


def _is_check(lhs: str, claim: str, last: str, results: Sequence[Tuple[int, str]], qnums: FrozenSet[Decimal]) -> bool:
    """Does an equation ``lhs = claim`` check the last result ``last``?  It gives back a number
    of the question, from the last result and nothing but earlier results and the question's
    numbers (``1.25 × 1.25 = 1.5625`` after ``√1.5625 = 1.25``), or from the last result after
    a label of its own (``Tarkistus: (31 + 33 + 35)/3 = 33`` after ``x = 31``)."""
    v = parse_number(claim)
    if v is None or v not in qnums:
        return False
    nums = [Decimal(n) for n in _PLAIN_NUMBER.findall(lhs)]
    lastv = parse_number(last)
    if lastv is None or lastv not in nums:
        return False
    if _LABELLED.match(lhs):
        # A labelled equation ("Tarkistus: (31 + 33 + 35)/3 = 33", a check in any language):
        # the last result and a number of the question are enough.
        return True
    known = {parse_number(c) for _, c in results} | set(qnums)
    return all(n in known for n in nums)


# A clause that opens with a one-word label and a colon (any language).
_LABELLED = re.compile(r"\s*(?:\*\*|__)?[^\W\d_][\w'-]*(?:\*\*|__)?\s*[:：]\s")


def _clause_start_eq(text: str, at: int) -> int:
    lo = max(0, at - 200)
    cut = max(text.rfind(c, lo, at) for c in (",", ";", "\n", ". "))
    return cut + 1 if cut >= 0 else lo


# The end of a marked answer: a sentence stop that does not close an initial ("J. J. Thomson")
# or an abbreviation ("Mrs. Miniver"), a line break, or the end.