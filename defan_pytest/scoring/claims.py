"""From a response to its claim: alignment (PMH) and claim extraction.

SCORING.md, "Per response", steps 1 to 3, for every answer type: clean the response
(:mod:`defan_pytest.scoring.cleaning`); a bare answer of the type is aligned; otherwise an
explicit mark (``The answer is ...``, ``**...**``, ``\\boxed{...}``, ``Final answer:``, a last
line that is a bare value) or a structured answer (the answering cell of a markdown table, item
of a ``Key: value`` list, key of a JSON object: :mod:`defan_pytest.scoring.structured`) gives the
claim; otherwise the type finds its first candidate in reading order
(:meth:`defan_pytest.scoring.types.AnswerType.candidates`).  Citation marks (``[2]``,
``(Source: Wikipedia)``) are never candidates.  The clarifications of SCORING.md that shape
this module: 1 (format), 2 (structured answers), 3 (citations), 4 (the response's language),
11 (lead-ins in any language), 12 (a new turn ends the answer; a repetition loop claims its
value: :mod:`defan_pytest.scoring.turns`), 13 (options, hedges and corrections: a correction is
a mark), 14 (a cut answer's last word is no candidate) and 20 (math results before a check:
:mod:`defan_pytest.scoring.math_results`).

The stages of :func:`extract`, in the order they run; the first that gives a claim ends it
(its ``how`` is the claim's :attr:`~defan_pytest.scoring.types.Extraction.how`):

====  =====================================  ==========================================  =========
 #    stage                                  what it reads                               how
====  =====================================  ==========================================  =========
 1    clean (step 1; cl. 1, 11, 23)          reasoning block, tags, quotes, emphasis,    --
                                             edge citation marks, one full stop, lead-in
 2    answer part (cl. 12, 14, 23, 24)       cut at a new turn, a sources list, a cut    --
                                             last word; an echoed question is read on
 3    empty / refusal (cl. 21)               nothing left, ``N/A``                       empty,
                                                                                         refusal
 4    one value (step 2; cl. 11, 12)         a lead-in and a bare value, the bare        lead-in,
                                             response, a repetition loop                 bare,
                                                                                         repeated
 5    masks                                  citations, math text, hedges, corrections   --
                                             (cl. 3, 13, 20): same length, spans hold
 6    the type's override (cl. 10)           ``AnswerType.override``: held online        override
 7    explicit marks (step 3; cl. 2, 13,     structures, corrections, math results,      marked
      20, 22)                                conclusions, ``answer is``, ``Answer:``,
                                             ``\\boxed``, bold, a bare last line: the last
 8    first option (cl. 13)                  ``Either X or Y`` opening the response      first-option
 9    candidates (step 3)                    ``AnswerType.candidates``: first in         candidate,
                                             reading order, the question's values out    gazetteer,
                                                                                         rule, ner
====  =====================================  ==========================================  =========

Everything here is rules.  When a name or place is left open by them, the extraction says so
(``needs_ner``) and the caller (:mod:`defan_pytest.scoring.scorer`, which batches NER with
``nlp.pipe``) extracts again with the entities a spaCy pipeline found: NER (costly per
response: bench/score_speed.py) stays off every response a regex settles.
"""
from __future__ import annotations

import dataclasses
import re
from typing import List, Optional, Sequence, Tuple

from defan_pytest.scoring import types
from defan_pytest.scoring.cleaning import ANSWER_WORD, NOT_AVAILABLE, clean, mask_citations, strip_label
from defan_pytest.scoring.keys import labelled
from defan_pytest.scoring.math_results import math_text, result_marks
from defan_pytest.scoring.reading import BLOCK_START, bare_value, mark_value, repeated_unit, repeats_question
from defan_pytest.scoring.structured import cell_value, structured_claims
from defan_pytest.scoring.text.language import language
from defan_pytest.scoring.text.search import SpanIndex
from defan_pytest.scoring.turns import EITHER, HEDGE, blank, corrections, new_turn, without_last_token
from defan_pytest.scoring.types import AnswerType, Context, Entity, Extraction

__all__ = ["MAX_MARKS_READ", "extract"]

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


def _answer_part(text: str, ctx: Context) -> Tuple[str, bool]:
    """The part of the cleaned ``text`` that holds the answer, and whether it is the whole
    response (only a whole response can be aligned).  Each cut keeps a prefix of the text, so
    the spans NER found in ``clean(response)`` still hold."""
    whole = True
    if ctx.finish_reason == "length":
        # Cut by the token limit: misaligned, and the last word or number, which may be cut,
        # is not a candidate (clarification 14).
        text = without_last_token(text)
        whole = False
    turn = new_turn(text, ctx)
    if turn is not None:
        # A new turn the model wrote itself: misaligned, nothing from it on counts (cl. 12).
        text = text[:turn].rstrip()
        whole = False
    if ("ource" in text or "eferen" in text or "itation" in text) and "\n" in text:
        sources = _SOURCES.search(text)
        if sources is not None and sources.start() > 0:
            # A sources list: more text (misaligned), nothing in it a candidate (cl. 23).
            text = text[:sources.start()].rstrip()
            whole = False
    return text, whole


# A line that opens a sources list ("Sources:", "**References**", "Citations:").
_SOURCES = re.compile(r"^[ \t#>]*(?:\*\*|__)?(?:sources?|references?|citations?)(?:\*\*|__)?[ \t]*[:：]?(?:\*\*|__)?[ \t]*$"
                      r"|^[ \t#>]*(?:\*\*|__)?(?:sources?|references?|citations?)(?:\*\*|__)?[ \t]*[:：]", re.I | re.M)


# A question that asks for a work's title: there a capitalised word before a colon may be the
# head of the title ("Sunrise: A Song of Two Humans", "Mission: Impossible").
_ASKS_TITLE = re.compile(r"\b(?:movie|film|picture|title|song|book|novel|play|album|documentary)s?\b", re.I)


def _title_head(kind: AnswerType, text: str, rest: str, ctx: Context) -> bool:
    """Is the label at the start of ``text`` the head of a name rather than a lead-in?  For a
    name or place: when the whole text is a known answer, or when the question asks for a
    title and the label is capitalised words before a capitalised value, none of them a word
    that labels an answer (``Answer``, ``Film``)."""
    if not kind.uses_gazetteer:
        return False
    if ctx.gazetteer is not None and text in ctx.gazetteer:
        return True
    if not _ASKS_TITLE.search(ctx.question):
        return False
    label = text[: len(text) - len(rest)].strip(" \t*_:：")
    return bool(label) and all(w[:1].isupper() for w in label.split()) and rest[:1].isupper() and not labelled(
        kind, text, ctx
    )


def _one_value(kind: AnswerType, text: str, ctx: Context, whole: bool) -> Optional[Extraction]:
    """The response read as one value: bare (aligned when it is the whole response), after a
    lead-in in any language (clarification 11), or repeated in a loop (misaligned, cl. 12)."""
    rest = strip_label(text, ctx.question) if (":" in text or "：" in text) else None
    if rest is not None and not _title_head(kind, text, rest, ctx):
        # "Population: 296,615", "Antwort: 386", "assistant: West Germany": the label goes
        # first, so that a name type does not read "Odpověď: West Germany" as one name.
        value = bare_value(kind, clean(rest), ctx)
        if value is not None:
            return Extraction(value, whole, how="lead-in")
    value = bare_value(kind, text if whole else clean(text), ctx)
    if value is not None:
        return Extraction(value, whole, how="bare" if whole else "bare-cut")
    unit = repeated_unit(text)
    if unit is not None:
        # "Paris Paris Paris": its value is the claim
        value = bare_value(kind, clean(unit), ctx)
        if value is not None:
            return Extraction(value, False, how="repeated")
    return None


def _extract(
    response: Optional[str],
    ctx: Context,
    entities: Optional[Sequence[Entity]],
    ner_available: bool,
) -> Extraction:
    kind = types.get(ctx.type)
    text, whole = _answer_part(clean(response), ctx)
    if not text.strip():
        return Extraction(None, False, how="empty")
    if NOT_AVAILABLE.fullmatch(text.strip(" .")):
        return Extraction(None, False, how="refusal")  # "N/A" is a refusal (clarification 21)
    ctx = _with_language(text, ctx)
    one = _one_value(kind, text, ctx, whole)
    if one is not None:
        return one
    # Every mask below keeps the text's length: the spans NER found still hold.
    raw = text
    text = mask_citations(text)
    if ctx.is_math:
        text = math_text(text)
    elif kind.uses_gazetteer and HEDGE.search(text):
        text = HEDGE.sub(blank, text)  # "Either Linus Pauling or ...": the hedge is no name
    text, fixes = corrections(kind, text, ctx)
    claim = kind.override(text, ctx)
    if claim is not None:
        return Extraction(claim, False, how="override")
    mark = _marked_claim(kind, text, ctx, raw, fixes)
    if mark is not None:
        return Extraction(mark, False, how="marked")
    if not ctx.is_math:
        m = EITHER.match(raw)
        if m is not None:
            # "Either X or Y" opening the response: its first candidate is X, whatever a NER
            # pipeline makes of "Either X" (clarification 13).
            claim = cell_value(kind, m.group("x"), ctx)
            if claim is not None:
                return Extraction(claim, False, how="first-option")
    return kind.candidates(text, ctx, entities, ner_available)


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
# What each pattern from the third on cannot match without (a substring test is far cheaper
# than a scan): the answer patterns have the words of _ANSWER_WORDS instead.
_MARK_LITERALS = ("", "", "\\boxed{", "**", "__")


# A sentence that concludes (clarification 22): "So ...", "Therefore, ...", "Thus: ...", "In
# conclusion, ...", at the start of a sentence or a line.
_CONCLUSION = re.compile(
    r"(?:^|(?<=[.!?]\s)|(?<=[.!?]\s\s))[ \t>*_]*(?:so|therefore|thus|hence|consequently|in\s+conclusion|"
    r"in\s+summary|to\s+conclude|to\s+sum\s+up|all\s+in\s+all)\b[ \t]*[,:：]?[ \t]*(?P<x>[^\n]+?)" + _MARK_END,
    re.I | re.M,
)
_CONCLUSION_WORDS = ("so ", "so,", "therefore", "thus", "hence", "consequently", "conclu", "summary", "sum up", "all in all")


def _concluded(kind: AnswerType, x: str, ctx: Context) -> Optional[str]:
    """The asked value a concluding sentence states: ``x`` read as a mark's value, else (for a
    name or place) its first candidate; ``None`` when it states none."""
    claim = mark_value(kind, x, ctx)
    if claim is not None or not kind.uses_gazetteer:
        return claim
    found = kind.candidates(x, ctx, None, False).claim
    if found is None or kind.is_emphasis(found, ctx) or repeats_question(kind, found, ctx):
        return None
    return found


_LETTER_ITEM = re.compile(r"[A-Ea-e][.)]\s")

#: At most this many marks of one kind are read, from the last one back (see _marked_claim).
MAX_MARKS_READ = 100


def _marked_claim(
    kind: AnswerType, text: str, ctx: Context, raw: str, fixes: Sequence[Tuple[int, str]] = ()
) -> Optional[str]:
    """The last explicit mark of ``text`` (masked) or ``None``; ``raw`` is the same text before
    masking (the same lines), to tell a list's last item from a last line that is a value."""
    structures = structured_claims(kind, text, ctx)
    marks: List[Tuple[int, str]] = [(s, claim) for s, _, claim in structures]
    marks.extend(fixes)
    # A bold cell or key inside a table or list is not a mark of its own: the structure already
    # chose the cell that answers ("**36**" in the asked year's row, not another).  (A binary
    # search per mark: a long response may hold many of both.)
    inside_structure = SpanIndex((s, e) for s, e, _ in structures).__contains__ if structures else None
    if ctx.is_math and ("=" in text or "≈" in text or "the " in text.lower()):
        # Nor is a result stated inside a structure whose answer key answers: the steps of
        # {"reasoning": "... = 80 ...", "answer": 3} and "Step 1: ... = 27.43\nFinal Answer: 27".
        marks.extend(
            (at, claim) for at, claim in result_marks(kind, text, ctx)
            if inside_structure is None or not inside_structure(at)
        )

    lower = text.lower()
    if not ctx.is_math and any(w in lower for w in _CONCLUSION_WORDS):
        # "So the attendance was 96,924.": a concluding statement is a mark (clarification
        # 22); read from the last one back, the first that holds the asked value counts.
        for n, m in enumerate(reversed(list(_CONCLUSION.finditer(text)))):
            if n >= MAX_MARKS_READ:
                break
            if inside_structure is not None and inside_structure(m.start()):
                continue
            claim = _concluded(kind, m.group("x"), ctx)
            if claim is not None:
                marks.append((m.start("x"), claim))
                break
    # The "answer" patterns only where a word for "answer" is written (a substring test is
    # far cheaper than their regex on a long response).
    has_answer_word = any(w in lower for w in _ANSWER_WORDS)
    for i, pat in enumerate(_MARK_PATTERNS):
        if i < 2 and not has_answer_word or i >= 2 and _MARK_LITERALS[i] not in text:
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
        BLOCK_START.match(raw_lines[-1]) is not None
        # "B. England" after "A. West Germany": a lettered list ("A. Einstein" alone is a name)
        or len(raw_lines) >= 2 and all(_LETTER_ITEM.match(ln) for ln in raw_lines[-2:])
    )
    if len(lines) >= 2 and not last_is_item:  # a list's last item is no mark (clarification 13)
        at = text.rfind(lines[-1])
        if inside_structure is None or not inside_structure(at):  # a table's or list's last row is no mark
            last = clean(lines[-1])
            label_off = strip_label(last, ctx.question) if ":" in last or "：" in last else None
            if label_off is not None and not labelled(kind, last, ctx):
                last = clean(label_off)  # "A: Argentina" after an echoed question (cl. 24)
            claim = bare_value(kind, last, ctx)
            if claim is not None and not repeats_question(kind, claim, ctx):
                marks.append((at, claim))
    if not marks:
        return None
    marks.sort(key=lambda m: m[0])
    return marks[-1][1]
