"""From a response to its claim: cleaning, alignment (PMH) and claim extraction.

SCORING.md, "Per response", steps 1 to 3, for every answer type: clean the response; a bare
answer of the type is aligned; otherwise an explicit mark (``The answer is ...``, ``**...**``,
``\\boxed{...}``, a last line that is a bare value) gives the claim; otherwise the type finds
its first candidate in reading order (:meth:`defan_pytest.types.AnswerType.candidates`).

Everything here is rules.  When a name or place is left open by them, the extraction says so
(``needs_ner``) and the caller (:mod:`defan_pytest.scoring`, which batches NER with
``nlp.pipe``) extracts again with the entities a spaCy pipeline found: NER (costly per
response: bench/score_speed.py) stays off every response a regex settles.
"""
from __future__ import annotations

import re
from typing import List, Optional, Sequence, Tuple

from defan_pytest import types
from defan_pytest.types import NONE_CLAIM, ONLINE_CLAIM, AnswerType, Context, Entity, Extraction, make_context

__all__ = ["Context", "Extraction", "clean", "extract", "make_context"]

# --------------------------------------------------------------------------------------------
# 1. cleaning
# --------------------------------------------------------------------------------------------

_THINK_BLOCK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.S | re.I)
_THINK_CLOSE = re.compile(r"</think(?:ing)?>", re.I)
_THINK_OPEN = re.compile(r"<think(?:ing)?>", re.I)
_QUOTES = [('"', '"'), ("'", "'"), ("“", "”"), ("‘", "’"), ("«", "»"), ("„", "“")]
_WRAPPERS = [("```", "```"), ("**", "**"), ("__", "__"), ("*", "*"), ("_", "_"), ("`", "`"), ("$", "$")]
_CODE_FENCE = re.compile(r"^```[a-zA-Z0-9_-]*\s*\n(.*?)\n?```$", re.S)
_BOXED_WHOLE = re.compile(r"^\$*\\boxed\{(.*)\}\$*$", re.S)
_LEAD_IN = re.compile(
    r"^(?:\*\*|__)?\s*(?:the\s+)?(?:final\s+|short\s+|correct\s+)?answer\s*(?:is)?\s*[:：]\s*(?:\*\*|__)?\s*",
    re.I,
)


_WRAP_STARTS = frozenset(a[0] for a, _ in _QUOTES + _WRAPPERS) | {"\\"}
_LEAD_IN_STARTS = frozenset("aAfFtTsScC*_")


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
        return m.group(1)
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
    code marks, one final full stop, and a lead-in of the form ``Answer:``."""
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



# --------------------------------------------------------------------------------------------
# 2-3. alignment and the claim
# --------------------------------------------------------------------------------------------


def _bare(kind: AnswerType, text: str, ctx: Context) -> Optional[str]:
    """The canonical value when ``text`` (already cleaned) is one bare value of the type."""
    t = text.strip()
    if not t or "\n" in t:
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
    value = _bare(kind, text, ctx)
    if value is not None:
        return Extraction(value, True, how="bare")
    mark = _marked_claim(kind, text, ctx)
    if mark is not None:
        return Extraction(mark, False, how="marked")
    return kind.candidates(text, ctx, entities, ner_available)


# The end of a marked answer: a sentence stop that does not close an initial ("J. J. Thomson")
# or an abbreviation ("Mrs. Miniver"), a line break, or the end.
_MARK_END = r"\s*(?:(?<!\b[A-Z])(?<!\bMrs)(?<!\bMr)(?<!\bMs)(?<!\bDr)(?<!\bSt)(?<!\bJr)[.;!?](?=\s|$)|\n|$)"
_MARK_PATTERNS = [
    re.compile(r"\b(?:the\s+)?(?:final\s+|correct\s+|short\s+)?answer\s+(?:is|was|would\s+be|should\s+be|=)\s*:?\s*(?P<x>[^\n]+?)" + _MARK_END, re.I),
    re.compile(r"\b(?:final\s+|short\s+)?answer\s*[:：]\s*(?P<x>[^\n]+?)" + _MARK_END, re.I),
    re.compile(r"\\boxed\{(?P<x>[^{}]*(?:\{[^{}]*\}[^{}]*)*)\}"),
    re.compile(r"\*\*(?P<x>[^*\n]+?)\*\*"),
    re.compile(r"(?<![\w_])__(?P<x>[^_\n]+?)__(?![\w_])"),
]


def _marked_claim(kind: AnswerType, text: str, ctx: Context) -> Optional[str]:
    marks: List[Tuple[int, str]] = []
    for pat in _MARK_PATTERNS:
        for m in pat.finditer(text):
            claim = _mark_value(kind, m.group("x"), ctx)
            if claim is not None:
                marks.append((m.start("x"), claim))
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) >= 2:
        last = clean(lines[-1])
        claim = _bare(kind, last, ctx)
        if claim is not None and not _contained(kind, claim, ctx):
            marks.append((text.rfind(lines[-1]), claim))
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
    inner = clean(x)
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
