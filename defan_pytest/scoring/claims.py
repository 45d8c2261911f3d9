"""From a response to its claim: cleaning, alignment (PMH) and claim extraction.

SCORING.md, "Per response", steps 1 to 3, for every answer type: clean the response; a bare
answer of the type is aligned; otherwise an explicit mark (``The answer is ...``, ``**...**``,
``\\boxed{...}``, ``Final answer:``, a last line that is a bare value) or a structured answer
(the answering cell of a markdown table, item of a ``Key: value`` list, key of a JSON object)
gives the claim; otherwise the type finds its first candidate in reading order
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

from defan_pytest.scoring import structured, types
from defan_pytest.scoring.text.dates import MONTH_NAME
from defan_pytest.scoring.text.language import language
from defan_pytest.scoring.text.search import SpanIndex
from defan_pytest.scoring.types import (
    NONE_CLAIM,
    ONLINE_CLAIM,
    AnswerType,
    Context,
    Entity,
    Extraction,
    make_context,
)

__all__ = ["Context", "Extraction", "clean", "extract", "make_context", "mask_citations"]

# --------------------------------------------------------------------------------------------
# 1. cleaning
# --------------------------------------------------------------------------------------------

_THINK_BLOCK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.S | re.I)
_THINK_CLOSE = re.compile(r"</think(?:ing)?>", re.I)
_THINK_OPEN = re.compile(r"<think(?:ing)?>", re.I)
_QUOTES = [('"', '"'), ("'", "'"), ("“", "”"), ("‘", "’"), ("«", "»"), ("„", "“")]
_WRAPPERS = [("```", "```"), ("**", "**"), ("__", "__"), ("*", "*"), ("_", "_"), ("`", "`"), ("$", "$")]
_CODE_FENCE = re.compile(r"^```[a-zA-Z0-9_-]*\s*\n(.*?)\n?```$", re.S)
# A fence line anywhere ("Here it is:\n```json\n{...}\n```"): code marks, removed (clarification 1).
_FENCE_LINE = re.compile(r"^[ \t]*```[\w+.-]*[ \t]*(?:\n|$)", re.M)
_BOXED_WHOLE = re.compile(r"^\$*\\boxed\{(.*)\}\$*$", re.S)
# "Answer:" in English and in the five languages of clarification 4, bold or not.
_ANSWER_WORD = r"(?:answer|réponse|reponse|antwort|respuesta|resposta|risposta)"
_LEAD_IN = re.compile(
    r"^(?:\*\*|__)?\s*(?:the\s+|la\s+|die\s+|a\s+)?(?:final\s+|short\s+|correct\s+)?" + _ANSWER_WORD
    + r"(?:\s+finale?)?\s*(?:is)?\s*[:：]\s*(?:\*\*|__)?\s*",
    re.I,
)


# LaTeX inside a \boxed{} answer: text and font commands keep their words ("\boxed{30
# \text{ September } 1947}" is a date), a fraction is a fraction, spacing commands are spaces.
_LATEX_TEXT = re.compile(r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mathit|mbox|operatorname)\s*\{([^{}]*)\}")
_LATEX_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_LATEX_SPACE = re.compile(r"\\(?:[,;:! ]|q?quad\b)")
_LATEX_DEGREE = re.compile(r"\^\s*\{?\s*\\circ\s*\}?")
_LATEX_ESCAPE = re.compile(r"\\([%$&#_])")


def latex_plain(text: str) -> str:
    """The plain text of a short LaTeX answer (``30 \\text{ September } 1947`` ->
    ``30 September 1947``, ``\\frac{3}{4}`` -> ``3/4``, ``1{,}746`` -> ``1,746``); text without
    a backslash or a brace is returned as is."""
    if "\\" not in text:
        return text.replace("{,}", ",") if "{,}" in text else text
    t = _LATEX_TEXT.sub(r"\1", text)
    t = _LATEX_FRAC.sub(r"\1/\2", t)
    t = _LATEX_DEGREE.sub("°", t)
    t = _LATEX_ESCAPE.sub(r"\1", _LATEX_SPACE.sub(" ", t)).replace("{,}", ",")  # 1{,}746
    return " ".join(t.split())


_WRAP_STARTS = frozenset(a[0] for a, _ in _QUOTES + _WRAPPERS) | {"\\"}
_LEAD_IN_STARTS = frozenset("aAfFtTsScCrRlLdD*_")


def _unwrap_once(t: str) -> str:
    first = t[:1]
    if first not in _WRAP_STARTS:
        # Fast path for the common bare answer: only a lead-in ("Answer:") can be removed.
        if first in _LEAD_IN_STARTS:
            m = _LEAD_IN.match(t)
            if m and m.end() < len(t):
                return t[m.end():]
        return t
    m = _CODE_FENCE.match(t)
    if m:
        return m.group(1)
    m = _BOXED_WHOLE.match(t)
    if m:
        return latex_plain(m.group(1))
    for a, b in _QUOTES + _WRAPPERS:
        if len(t) > len(a) + len(b) and t.startswith(a) and t.endswith(b):
            inner = t[len(a): len(t) - len(b)]
            # "*x* and *y*" is not one wrapped value: the opener must not reappear inside.
            if a not in inner and (b == a or b not in inner):
                return inner
    m = _LEAD_IN.match(t)
    if m and m.end() < len(t):
        return t[m.end():]
    return t


def clean(text: Optional[str]) -> str:
    """Step 1: drop a reasoning block, surrounding white space, quotes, markdown emphasis or
    code marks (code fences anywhere), one final full stop, and a lead-in of the form
    ``Answer:``."""
    if not text:
        return ""
    t = _THINK_BLOCK.sub(" ", text)
    close = None
    for close in _THINK_CLOSE.finditer(t):
        pass
    if close is not None:  # the opening tag was in the prompt template: keep what follows
        t = t[close.end():]
    opened = _THINK_OPEN.search(t)
    if opened:  # reasoning that never closed: no answer was given after it
        t = t[: opened.start()]
    if "```" in t:
        t = _FENCE_LINE.sub("", t)
    stop_removed = False
    while True:
        before = t
        t = t.strip()
        t = _unwrap_once(t)
        if not stop_removed and t.endswith(".") and not t.endswith(".."):
            t = t[:-1]
            stop_removed = True
        if t == before:
            return t


# Citation marks (clarification 3): footnote numbers, bracketed sources, a "Sources:" line,
# links.  They are blanked out (same length, so spans found in the cleaned text still hold)
# before marks and candidates are read; they still make a response more than a bare value.
_CITATION = re.compile(
    r"\[\^?\d{1,3}(?:\s*[,–-]\s*\d{1,3})*\]"
    r"|【[^】\n]{0,60}】"
    r"|\[(?:citation\s+needed|sources?|ref(?:erence)?s?)\b[^\]\n]{0,80}\]"
    r"|\((?:sources?|via|refs?|references?|cf\.?|citation)\s*[:：]?\s[^()\n]{0,100}\)"
    r"|^[ \t]*(?:\*\*|__)?(?:sources?|references?|citations?)(?:\*\*|__)?\s*[:：].*$"
    r"|https?://[^\s)\]]+",
    re.I | re.M,
)


def _blank(m: "re.Match[str]") -> str:
    return " " * len(m.group())


def mask_citations(text: str) -> str:
    """``text`` with its citation marks, and the numbers of a numbered list, blanked out
    (replaced by spaces of the same length): neither is a candidate."""
    if "[" in text or "(" in text or "【" in text or ":" in text:
        text = _CITATION.sub(_blank, text)
    if "." in text or ")" in text:
        text = _LIST_NUMBER.sub(_blank, text)
    return text


# --------------------------------------------------------------------------------------------
# 2-3. alignment and the claim
# --------------------------------------------------------------------------------------------

# The number of a numbered list item ("1. 386"), not a German date or place ("19. November",
# "26. Platz").
_NOT_A_LIST = rf"(?!\s*(?:{MONTH_NAME}|platz|rang|stelle)\b)"
_LIST_NUMBER = re.compile(rf"^[ \t]*\d{{1,3}}[.)](?=[ \t]+{_NOT_A_LIST}\S)", re.M | re.I)
# Headings, list items, table rows and JSON are structure, never one bare value (clarification 1).
# ("19. November 1946" is a German date and "26. Platz" a German rank, not list items.)
_BLOCK_START = re.compile(rf"^(?:[-*•+]\s|\d+[.)]\s{_NOT_A_LIST}|#{{1,6}}\s|\||[{{\[])", re.I)
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



def _bare(kind: AnswerType, text: str, ctx: Context) -> Optional[str]:
    """The canonical value when ``text`` (already cleaned) is one bare value of the type."""
    t = text.strip()
    if not t or "\n" in t or _BLOCK_START.match(t):
        return None
    if ("[" in t or "(" in t or "【" in t or "http" in t) and _CITATION.search(t):
        return None  # "386 [2]": a value and its citation are more than one bare value
    if (":" in t or "：" in t) and structured.labelled(kind, t, ctx):
        return None
    return kind.bare(t, ctx)


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
    value = _bare(kind, text, ctx)
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
        r"\b(?:final\s+|short\s+)?" + _ANSWER_WORD + r"(?:\s+finale?)?\s*[:：]\s*(?:\*\*|__)?\s*"
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
    structures = structured.structured_claims(kind, text, ctx)
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
            claim = _mark_value(kind, m.group("x"), ctx)
            if claim is not None:
                marks.append((m.start("x"), claim))
                break
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) >= 2:
        at = text.rfind(lines[-1])
        if inside_structure is None or not inside_structure(at):  # a table's or list's last row is no mark
            last = clean(lines[-1])
            claim = _bare(kind, last, ctx)
            if claim is not None and not _contained(kind, claim, ctx):
                marks.append((at, claim))
    if not marks:
        return None
    marks.sort(key=lambda m: m[0])
    return marks[-1][1]


def _contained(kind: AnswerType, claim: str, ctx: Context) -> bool:
    """Is this canonical claim something the question itself contains?"""
    if ctx.is_math or claim in (NONE_CLAIM, ONLINE_CLAIM):
        return False
    return kind.contained(claim, ctx)


def _mark_value(kind: AnswerType, x: str, ctx: Context) -> Optional[str]:
    inner = clean(latex_plain(x))
    if inner.endswith(":") or inner.endswith("："):
        return None  # "**Laureate:**" labels a value; it is not one
    claim = _bare(kind, inner, ctx)
    if claim is None:
        # "The answer is 1,351,921 people": the value inside a short marked phrase.
        claim = kind.phrase_value(inner, ctx)
    if claim is None:
        return None
    if kind.is_emphasis(claim, ctx):
        return None  # "**Nobel Prize**" is emphasis, not an answer
    if _contained(kind, claim, ctx):
        return None
    return claim
