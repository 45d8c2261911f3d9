"""From a response to its claim: alignment (PMH) and claim extraction.

SCORING.md, "Per response", steps 1 to 3, for every answer type: clean the response
(:mod:`defan_pytest.scoring.cleaning`); a bare answer of the type is aligned; otherwise an
explicit mark (``The answer is ...``, ``**...**``, ``\\boxed{...}``, ``Final answer:``, a last
line that is a bare value) or a structured answer (the answering cell of a markdown table, item
of a ``Key: value`` list, key of a JSON object: :mod:`defan_pytest.scoring.structured`) gives the
claim; otherwise the type finds its first candidate in reading order
(:meth:`defan_pytest.scoring.types.AnswerType.candidates`).  Citation marks (``[2]``,
``(Source: Wikipedia)``) are never candidates.  The clarifications of SCORING.md that shape
this module: 1 (format), 2 (structured answers), 3 (citations), 4 (the response's language).

Everything here is rules.  When a name or place is left open by them, the extraction says so
(``needs_ner``) and the caller (:mod:`defan_pytest.scoring.scorer`, which batches NER with
``nlp.pipe``) extracts again with the entities a spaCy pipeline found: NER (costly per
response: bench/score_speed.py) stays off every response a regex settles.
"""
from __future__ import annotations

import dataclasses
import re
from decimal import Decimal
from typing import FrozenSet, List, Optional, Sequence, Tuple

from defan_pytest.scoring import types
from defan_pytest.scoring.cleaning import ANSWER_WORD, NOT_AVAILABLE, clean, mask_citations, strip_label
from defan_pytest.scoring.reading import _BLOCK_START, bare_value, mark_value, repeated_unit, repeats_question
from defan_pytest.scoring.structured import cell_value, structured_claims
from defan_pytest.scoring.text.language import language
from defan_pytest.scoring.text.numbers import parse_number, question_numbers
from defan_pytest.scoring.text.search import SpanIndex
from defan_pytest.scoring.text.tokens import folded_tokens, question_tokens
from defan_pytest.scoring.types import AnswerType, Context, Entity, Extraction

__all__ = ["MAX_MARKS_READ", "extract", "new_turn"]

# The one number whose reading depends on the response's language (clarification 4): one
# separator before exactly three digits ("391.197"), which an integer gold settles without it.
_ONE_GROUP = re.compile(r"(?<![\d.,])\d{1,3}[.,]\d{3}(?!\d|[.,]\d)")


def _with_language(text: str, ctx: Context) -> Context:
    """The context with the response's language, where a number in it needs one.  Elsewhere
    it is left for the types to ask (:func:`defan_pytest.scoring.types.value.response_lang`), which
    only number words do: most responses never pay for the language."""
    if ctx.lang is None and not ctx.integer_gold and _ONE_GROUP.search(text):
        return dataclasses.replace(ctx, lang=language(text))
    return ctx


def extract(
    response: Optional[str],
    ctx: Context,
    entities: Optional[Sequence[Entity]] = None,
    ner_available: bool = False,
) -> Extraction:
    """Steps 1 to 3 of SCORING.md for one response.

    ``entities``: spans ``(start, end, label)`` a spaCy pipeline found in the *cleaned* text
    (``clean(response)``), or ``None`` when none ran.  With ``ner_available`` and no
    ``entities``, a name or place the rules cannot settle comes back with ``needs_ner``.
    """
    ext = _extract(response, ctx, entities, ner_available)
    if ext.claim is not None and not ext.claim.isprintable():
        # A name broken across lines ("Sir Winston\n\nChurchill") is one name.
        ext = dataclasses.replace(ext, claim=" ".join(ext.claim.split()))
    return ext


def _extract(
    response: Optional[str],
    ctx: Context,
    entities: Optional[Sequence[Entity]],
    ner_available: bool,
) -> Extraction:
    kind = types.get(ctx.type)
    text = clean(response)
    if not text:
        return Extraction(None, False, how="empty")
    # Every cut below keeps a prefix of the cleaned text, and every mask keeps its length: the
    # spans NER found in clean(response) still hold.
    whole = True  # the response, as a whole, may be one bare value
    if ctx.finish_reason == "length":
        # Cut by the token limit: misaligned, and the last word or number, which may be cut,
        # is not a candidate (clarification 14).
        text = _without_last_token(text)
        whole = False
    turn = new_turn(text, ctx)
    if turn is not None:
        # A new turn the model wrote itself: misaligned, nothing from it on counts (cl. 12).
        text = text[:turn].rstrip()
        whole = False
    if not text.strip():
        return Extraction(None, False, how="empty")
    if NOT_AVAILABLE.fullmatch(text.strip(" .")):
        return Extraction(None, False, how="refusal")  # "N/A" is a refusal (clarification 21)
    ctx = _with_language(text, ctx)
    value = bare_value(kind, text if whole else clean(text), ctx)
    if value is not None:
        return Extraction(value, whole, how="bare" if whole else "bare-cut")
    rest = strip_label(text, ctx.question)
    if rest is not None:
        # "Population: 296,615", "Antwort: 386": a lead-in in any language (clarification 11).
        value = bare_value(kind, clean(rest), ctx)
        if value is not None:
            return Extraction(value, whole, how="lead-in")
    unit = repeated_unit(text)
    if unit is not None:
        # "Paris Paris Paris": misaligned, its value is the claim (clarification 12).
        value = bare_value(kind, clean(unit), ctx)
        if value is not None:
            return Extraction(value, False, how="repeated")
    raw = text
    text = mask_citations(text)
    if ctx.is_math:
        text = _math_text(text)
    elif kind.uses_gazetteer and _HEDGE.search(text):
        text = _HEDGE.sub(_blank, text)  # "Either Linus Pauling or ...": the hedge is no name
    text, corrections = _corrections(kind, text, ctx)
    override = getattr(kind, "override", None)
    if override is not None:
        claim = override(text, ctx)
        if claim is not None:
            return Extraction(claim, False, how="override")
    mark = _marked_claim(kind, text, ctx, raw, corrections)
    if mark is not None:
        return Extraction(mark, False, how="marked")
    if not ctx.is_math:
        m = _EITHER.match(raw)
        if m is not None:
            # "Either X or Y" opening the response: its first candidate is X, whatever a NER
            # pipeline makes of "Either X" (clarification 13).
            claim = cell_value(kind, m.group("x"), ctx)
            if claim is not None:
                return Extraction(claim, False, how="first-option")
    return kind.candidates(text, ctx, entities, ner_available)


def _blank(m: "re.Match[str]") -> str:
    return " " * len(m.group())


def _blank_span(text: str, s: int, e: int) -> str:
    return text[:s] + " " * (e - s) + text[e:]


def _without_last_token(text: str) -> str:
    """``text`` without its last word or number (a prefix: offsets into it still hold)."""
    parts = text.rsplit(None, 1)
    return text[: len(text.rstrip()) - len(parts[-1])] if parts else ""

# "Either X or Y" (or "It was either X or Y") at the start of a response.
_EITHER = re.compile(r"\s*(?:(?:it|this|that)\s+(?:was|is|would\s+be)\s+)?either\s+(?P<x>[^\n]{1,80}?)\s*,?\s+or\s+\S", re.I)
# Words that hedge or list options, written at the front of a capitalized run ("Either Linus
# Pauling or Otto Diels"): not part of a name.
_HEDGE = re.compile(r"\b(?:Either|Neither|Maybe|Perhaps|Probably|Possibly|Likely)\b")

# --------------------------------------------------------------------------------------------
# a new turn the model writes itself (clarification 12)
# --------------------------------------------------------------------------------------------

# A line that opens a new turn: a role or prompt label ("Question:", "Q:", "User:", "### Instruction").
_TURN_LINE = re.compile(
    r"^[ \t]*#{1,6}[ \t]*(?:\*\*|__)?(?:question|user|human|instruction|input|prompt|query)\b"
    r"|^[ \t]*(?:\*\*|__)?(?:question|q|user|human|instruction|input|prompt|query)"
    r"(?:[ \t]*\d{1,3})?(?:\*\*|__)?[ \t]*(?:[:：]|$)"
    r"|^[ \t]*<\|(?:user|im_start|start_header_id)\|>",
    re.I | re.M,
)
# A line that is only a question, and more text after it: a further question and its answer.
_QUESTION_LINE = re.compile(r"^[ \t]*(?:who|what|which|when|where|how|in\s+which|in\s+what)\b[^\n?]{8,200}\?[ \t]*$", re.I | re.M)


def new_turn(text: str, ctx: Context) -> Optional[int]:
    """Where a new turn of the model's own begins in ``text`` (a line after the first one that
    begins ``Question:``, ``Q:``, ``User:``, ``### Instruction``, or outside math a line that
    is only a question like the row's, with more after it), or ``None``.  The first line is the
    response's own start: a response that echoes the prompt (``Q: ...\nA: 386``) is read on."""
    first = len(text) - len(text.lstrip())
    nl = text.find("\n", first)
    if nl < 0:
        return None
    m = _TURN_LINE.search(text, nl + 1)
    cut = m.start() if m is not None else None
    if not ctx.is_math and "?" in text:
        q = question_tokens(ctx.question)
        for qm in _QUESTION_LINE.finditer(text, nl + 1, cut if cut is not None else len(text)):
            if not text[qm.end():].strip():
                break  # nothing after it: a question, not a new turn
            toks = [f for _, _, f in folded_tokens(qm.group())]
            if toks and sum(1 for t in toks if t in q) * 2 >= len(toks):
                cut = qm.start()
                break
    return cut


# --------------------------------------------------------------------------------------------
# corrections (clarification 13): "X, no wait, Y", "X, sorry, I mean Y", "X. Actually, Y",
# "not X but Y"
# --------------------------------------------------------------------------------------------

# A phrase that retracts what stands before it.  The strong ones retract X even when what
# follows is no value; "Actually" only when a value follows it.
_RETRACT = re.compile(
    r"(?:[ \t]{0,3}[-–—,;:][ \t]{0,3}|[ \t]{1,3}|\n)(?P<p>(?:no|nope)[,.!]?\s+(?:wait|sorry)\b[,.!]?(?:\s+(?:i\s+mean[t]?|it\s+(?:was|is))\b[,:]?)?"
    r"|wait[,.!]?\s+no\b[,.!]?|sorry[,.!]?\s+i\s+mean[t]?\b[,:]?|i\s+mean[t]?[,:]|scratch\s+that\b[,.!]?|correction\s*[:,])"
    r"|(?<=[.!?])[ \t\n]{1,3}(?P<a>actually[,:]?(?:\s+(?:it\s+(?:was|is)|i\s+think))?)",
    re.I,
)
_CORRECTION_END = re.compile(r"[^\n]{0,200}?" + r"(?=[ \t]{0,3}(?:(?<!\b[A-Z])(?<!\bMrs)(?<!\bMr)(?<!\bMs)(?<!\bDr)(?<!\bSt)(?<!\bJr)[.;!?](?:\s|$)|\n|$))")
_NOT_BUT = re.compile(r"\bnot\s+(?!only\b|just\b|merely\b|simply\b)(?P<x>[^,.;:\n]{1,60}?),?\s+but\s+(?:rather\s+|instead\s+)?(?=\S)", re.I)


def _clause_start(text: str, at: int) -> int:
    """Where the sentence ending at position ``at`` begins (after a stop and a space, or a line
    break; at most 300 characters back)."""
    lo = max(0, at - 300)
    i = at - 1
    while i >= lo and text[i] in " \t.!?":
        i -= 1  # the stop that ends this sentence ("X. Actually, Y") is not its start
    while i >= lo:
        c = text[i]
        if c == "\n" or (c in ".!?" and i + 1 < len(text) and text[i + 1].isspace()):
            return i + 1
        i -= 1
    return lo


def _corrections(kind: AnswerType, text: str, ctx: Context) -> Tuple[str, List[Tuple[int, str]]]:
    """``text`` with every retracted value blanked out, and the corrections as marks
    ``(position, claim)`` (clarification 13: the correction is an explicit mark)."""
    marks: List[Tuple[int, str]] = []
    lower = text.lower()
    if not any(w in lower for w in ("wait", "sorry", "mean", "actually", "scratch", "correction", " but ")):
        return text, marks
    blanks: List[Tuple[int, int]] = []
    for n, m in enumerate(_RETRACT.finditer(text)):
        if n >= MAX_MARKS_READ:
            break
        start = m.start()
        if not text[_clause_start(text, start): start].strip():
            continue  # nothing before it to retract ("Actually, ..." opening the response)
        y_at = m.end()
        y = _CORRECTION_END.match(text, y_at)
        claim = cell_value(kind, y.group(), ctx) if y is not None and y.group().strip() else None
        if claim is not None:
            marks.append((y_at, claim))
        if claim is not None or m.group("p"):
            blanks.append((_clause_start(text, start), start))
    if " but " in lower:
        for n, m in enumerate(_NOT_BUT.finditer(text)):
            if n >= MAX_MARKS_READ:
                break
            y = _CORRECTION_END.match(text, m.end())
            claim = cell_value(kind, y.group(), ctx) if y is not None and y.group().strip() else None
            if claim is not None:
                marks.append((m.end(), claim))
                blanks.append((m.start("x"), m.end("x")))
    for s, e in blanks:
        text = _blank_span(text, s, e)
    return text, marks


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
_RESULT_VALUE = (
    r"(?P<x>[-−]?[$€£¥₹]?\d[\d,.'/]*(?:\s*%|(?:\s+[^\W\d_][\w/^'-]*){0,4})?)"
    r"(?=[ \t]*(?:[,;.]?[)\]]|[,;](?:\s|$)|\.(?:\s|$)|\n|$|\s+(?:and|so|then|which|hence|therefore|thus)\b))"
)
_RESULT_MARKS = [
    # a line or clause ending "= 20": what the last equals sign gives
    re.compile(r"[=≈][ \t]*" + _RESULT_VALUE),
    # "The remainder is 5", "the required run rate is 5.5 runs per over"
    re.compile(
        r"\bthe\s+(?:[^\W\d_][\w'-]*\s+){0,5}?(?:is|are|was|were|equals|will\s+be|would\s+be|must\s+be"
        r"|should\s+be|comes\s+to|amounts\s+to)\s+(?:(?:approximately|about|around|roughly|exactly|only|just)\s+)?"
        + _RESULT_VALUE,
        re.I,
    ),
]


def _math_text(text: str) -> str:
    """A worked solution with its justifications and rejected roots blanked out
    (clarification 20); the length is kept."""
    if "since" in text or "because" in text or "given" in text or "as the" in text:
        text = _JUSTIFICATION.sub(_blank, text)
    if "reject" in text or "discard" in text or "valid" in text or "extraneous" in text:
        for n, m in enumerate(list(_REJECTED.finditer(text))):
            if n >= MAX_MARKS_READ:
                break
            # the clause around the word ("x = -9 (rejected)", "-9 is rejected"): 80 characters
            # each way at most
            lo = max(0, m.start() - 80)
            s = max([text.rfind(c, lo, m.start()) + 1 for c in ",.;\n"] + [text.rfind(w, lo, m.start()) + len(w) for w in (" or ", " and ")] + [lo])
            ends = [e for e in (text.find(c, m.end(), m.end() + 80) for c in ",.;\n") if e >= 0]
            e = min(ends) if ends else min(len(text), m.end() + 80)
            text = _blank_span(text, s, e)
    return text


def _result_marks(kind: AnswerType, text: str, ctx: Context) -> List[Tuple[int, str]]:
    """The statements of the result in a worked solution, in reading order, up to the first
    unlabelled check (an equation after a result that uses it to give back a number of the
    question: ``√1.5625 = 1.25, and 1.25 × 1.25 = 1.5625``)."""
    found: List[Tuple[int, int, str]] = []
    check = _CHECK.search(text, 1)
    end = check.start() if check is not None else len(text)
    for pat in _RESULT_MARKS:
        for n, m in enumerate(pat.finditer(text, 0, end)):
            if n >= 4 * MAX_MARKS_READ:
                break
            claim = mark_value(kind, m.group("x"), ctx)
            if claim is not None:
                found.append((m.start("x"), m.start(), claim))
    found.sort()
    qnums = question_numbers(ctx.question)
    out: List[Tuple[int, str]] = []
    for at, start, claim in found:
        if out and out[-1][0] == at:
            continue
        if out and _is_check(text[_clause_start_eq(text, start): start], claim, out[-1][1], out, qnums):
            break  # an unlabelled check of the result
        out.append((at, claim))
    return out


_PLAIN_NUMBER = re.compile(r"(?<![\d.])\d+(?:\.\d+)?(?![\d.]\d)")


def _is_check(lhs: str, claim: str, last: str, results: Sequence[Tuple[int, str]], qnums: FrozenSet[Decimal]) -> bool:
    """Does an equation ``lhs = claim`` check the last result ``last``?  It gives back a number
    of the question, from the last result and nothing but earlier results and the question's
    numbers (``1.25 × 1.25 = 1.5625`` after ``√1.5625 = 1.25``)."""
    v = parse_number(claim)
    if v is None or v not in qnums:
        return False
    nums = [Decimal(n) for n in _PLAIN_NUMBER.findall(lhs)]
    lastv = parse_number(last)
    known = {parse_number(c) for _, c in results} | set(qnums)
    return lastv is not None and lastv in nums and all(n in known for n in nums)


def _clause_start_eq(text: str, at: int) -> int:
    lo = max(0, at - 200)
    cut = max(text.rfind(c, lo, at) for c in (",", ";", "\n", ". "))
    return cut + 1 if cut >= 0 else lo


# The end of a marked answer: a sentence stop that does not close an initial ("J. J. Thomson")
# or an abbreviation ("Mrs. Miniver"), a line break, or the end.
_MARK_END = r"\s*(?:(?<!\b[A-Z])(?<!\bMrs)(?<!\bMr)(?<!\bMs)(?<!\bDr)(?<!\bSt)(?<!\bJr)[.;!?](?=\s|$)|\n|$)"
_ANSWER_IS = (
    r"\b(?:(?:the\s+)?(?:final\s+|correct\s+|short\s+)?answer\s+(?:is|was|would\s+be|should\s+be|=)"
    r"|(?:la\s+)?r[ée]ponse(?:\s+finale)?\s+(?:est|serait)"
    r"|(?:die\s+)?(?:richtige\s+)?antwort\s+(?:ist|lautet)"
    r"|(?:la\s+)?respuesta(?:\s+final|\s+correcta)?\s+(?:es|ser[íi]a)"
    r"|(?:a\s+)?resposta(?:\s+final|\s+correta)?\s+(?:é|seria)"
    r"|(?:la\s+)?risposta(?:\s+finale|\s+corretta)?\s+(?:è|sarebbe))"
)
_ANSWER_WORDS = ("answer", "ponse", "antwort", "respuesta", "resposta", "risposta")
_MARK_PATTERNS = [
    re.compile(_ANSWER_IS + r"\s*:?\s*(?P<x>[^\n]+?)" + _MARK_END, re.I),
    re.compile(
        r"\b(?:final\s+|short\s+)?" + ANSWER_WORD + r"(?:\s+finale?)?\s*[:：]\s*(?:\*\*|__)?\s*"
        r"(?P<x>[^\n]+?)\s*(?:\*\*|__)?" + _MARK_END,
        re.I,
    ),
    re.compile(r"\\boxed\{(?P<x>[^{}]*(?:\{[^{}]*\}[^{}]*)*)\}"),
    re.compile(r"\*\*(?P<x>[^*\n]+?)\*\*"),
    re.compile(r"(?<![\w_])__(?P<x>[^_\n]+?)__(?![\w_])"),
]


_LETTER_ITEM = re.compile(r"[A-Ea-e][.)]\s")

#: At most this many marks of one kind are read, from the last one back (see _marked_claim).
MAX_MARKS_READ = 100


def _marked_claim(
    kind: AnswerType, text: str, ctx: Context, raw: str, corrections: Sequence[Tuple[int, str]] = ()
) -> Optional[str]:
    """The last explicit mark of ``text`` (masked) or ``None``; ``raw`` is the same text before
    masking (the same lines), to tell a list's last item from a last line that is a value."""
    structures = structured_claims(kind, text, ctx)
    marks: List[Tuple[int, str]] = [(s, claim) for s, _, claim in structures]
    marks.extend(corrections)
    if ctx.is_math and ("=" in text or "≈" in text or "the " in text.lower()):
        marks.extend(_result_marks(kind, text, ctx))
    # A bold cell or key inside a table or list is not a mark of its own: the structure already
    # chose the cell that answers ("**36**" in the asked year's row, not another).  (A binary
    # search per mark: a long response may hold many of both.)
    inside_structure = SpanIndex((s, e) for s, e, _ in structures).__contains__ if structures else None

    lower = text.lower()
    # The "answer" patterns only where a word for "answer" is written (a substring test is
    # far cheaper than their regex on a long response).
    has_answer_word = any(w in lower for w in _ANSWER_WORDS)
    for i, pat in enumerate(_MARK_PATTERNS):
        if i < 2 and not has_answer_word:
            continue
        # The claim is the last mark, so each pattern's matches are read from the last one back
        # and the first that holds a value is the pattern's only candidate; at most
        # MAX_MARKS_READ of them are read (a runaway answer with 60,000 bold numbers costs a
        # scan, not 60,000 readings).
        for n, m in enumerate(reversed(list(pat.finditer(text)))):
            if n >= MAX_MARKS_READ:
                break
            if inside_structure is not None and inside_structure(m.start()):
                continue
            claim = mark_value(kind, m.group("x"), ctx)
            if claim is not None:
                marks.append((m.start("x"), claim))
                break
    lines = [ln for ln in text.splitlines() if ln.strip()]
    raw_lines = [ln.strip() for ln in raw.splitlines() if ln.strip()]
    last_is_item = bool(raw_lines) and (
        _BLOCK_START.match(raw_lines[-1]) is not None
        # "B. England" after "A. West Germany": a lettered list ("A. Einstein" alone is a name)
        or len(raw_lines) >= 2 and all(_LETTER_ITEM.match(ln) for ln in raw_lines[-2:])
    )
    if len(lines) >= 2 and not last_is_item:  # a list's last item is no mark (clarification 13)
        at = text.rfind(lines[-1])
        if inside_structure is None or not inside_structure(at):  # a table's or list's last row is no mark
            last = clean(lines[-1])
            claim = bare_value(kind, last, ctx)
            if claim is not None and not repeats_question(kind, claim, ctx):
                marks.append((at, claim))
    if not marks:
        return None
    marks.sort(key=lambda m: m[0])
    return marks[-1][1]
