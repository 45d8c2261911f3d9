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
from typing import List, Optional, Sequence, Tuple

from defan_pytest.scoring import types
from defan_pytest.scoring.cleaning import ANSWER_WORD, clean, mask_citations
from defan_pytest.scoring.reading import bare_value, mark_value, repeats_question
from defan_pytest.scoring.structured import structured_claims
from defan_pytest.scoring.text.language import language
from defan_pytest.scoring.text.search import SpanIndex
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
    kind = types.get(ctx.type)
    text = clean(response)
    if not text:
        return Extraction(None, False, how="empty")
    ctx = _with_language(text, ctx)
    value = bare_value(kind, text, ctx)
    if value is not None:
        return Extraction(value, True, how="bare")
    text = mask_citations(text)
    override = getattr(kind, "override", None)
    if override is not None:
        claim = override(text, ctx)
        if claim is not None:
            return Extraction(claim, False, how="override")
    mark = _marked_claim(kind, text, ctx)
    if mark is not None:
        return Extraction(mark, False, how="marked")
    return kind.candidates(text, ctx, entities, ner_available)


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


#: At most this many marks of one kind are read, from the last one back (see _marked_claim).
MAX_MARKS_READ = 100


def _marked_claim(kind: AnswerType, text: str, ctx: Context) -> Optional[str]:
    structures = structured_claims(kind, text, ctx)
    marks: List[Tuple[int, str]] = [(s, claim) for s, _, claim in structures]
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
    if len(lines) >= 2:
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
