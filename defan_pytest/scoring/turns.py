"""Where a response's answer ends and what it takes back (SCORING.md clarifications 12 to 14):
a new turn the model writes itself (:func:`new_turn`), the last word of a cut answer
(:func:`without_last_token`), corrections (:func:`corrections`: ``X, no wait, Y``, ``X. Actually,
Y``, ``not X but Y``), and the options and hedges of a response (:data:`EITHER`, :data:`HEDGE`).

Every function here keeps a prefix of the text or its length (blanks are spaces), so the spans a
NER pipeline found in the cleaned response still hold.  The phrases are English: no library
lists the discourse words of corrections or chat turns.
"""
from __future__ import annotations

import re
from typing import List, Optional, Tuple

from defan_pytest.scoring.cleaning import END_TOKEN
from defan_pytest.scoring.structured import cell_value
from defan_pytest.scoring.text.tokens import folded_tokens, question_tokens
from defan_pytest.scoring.types import AnswerType, Context

__all__ = ["EITHER", "HEDGE", "blank", "blank_span", "clause_start", "corrections", "new_turn", "without_last_token"]

#: At most this many corrections of one kind are read.
MAX_READ = 100


def blank(m: "re.Match[str]") -> str:
    return " " * len(m.group())


def blank_span(text: str, s: int, e: int) -> str:
    return text[:s] + " " * (e - s) + text[e:]


def without_last_token(text: str) -> str:
    """``text`` without its last word or number (a prefix: offsets into it still hold)."""
    parts = text.rsplit(None, 1)
    return text[: len(text.rstrip()) - len(parts[-1])] if parts else ""
# "Either X or Y" (or "It was either X or Y") at the start of a response.
EITHER = re.compile(r"\s*(?:(?:it|this|that)\s+(?:was|is|would\s+be)\s+)?either\s+(?P<x>[^\n]{1,80}?)\s*,?\s+or\s+\S", re.I)
# Words that hedge or list options, written at the front of a capitalized run ("Either Linus
# Pauling or Otto Diels"): not part of a name.
HEDGE = re.compile(r"\b(?:Either|Neither|Maybe|Perhaps|Probably|Possibly|Likely)\b")
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
    begins ``Question:``, ``Q:``, ``User:``, ``### Instruction``, a chat template's end-of-turn
    token with text after it (``<|im_end|>``), or outside math a line that
    is only a question like the row's but about another year or name, with more after it), or
    ``None``.  The first line is the
    response's own start: a response that echoes the prompt (``Q: ...\nA: 386``) is read on."""
    end = END_TOKEN.search(text) if "<" in text else None
    if end is not None:
        # An end-of-turn token with text after it (cleaning dropped those at the end): the
        # model's turn ended there, and what follows is a turn it wrote itself.
        text = text[: end.start()]
    first = len(text) - len(text.lstrip())
    nl = text.find("\n", first)
    if nl < 0:
        return end.start() if end is not None else None
    m = _TURN_LINE.search(text, nl + 1)
    cut = m.start() if m is not None else (end.start() if end is not None else None)
    if not ctx.is_math and "?" in text:
        q = question_tokens(ctx.question)
        for qm in _QUESTION_LINE.finditer(text, nl + 1, cut if cut is not None else len(text)):
            if not text[qm.end():].strip():
                break  # nothing after it: a question, not a new turn
            line = qm.group()
            found = folded_tokens(line)
            toks = [f for _, _, f in found]
            # Like the row's question (half its words or more), but about something else: a
            # number or a name the row's question does not hold ("... in the 2002 FIFA World
            # Cup?" after a 1998 question).  The row's own question restated is no new turn.
            other = any(f not in q and (line[s].isdigit() or line[s].isupper()) for s, _, f in found[1:])
            if toks and other and sum(1 for t in toks if t in q) * 2 >= len(toks):
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
    r"|wait[,.!]?\s+no\b[,.!]?|sorry[,.!]?\s+i\s+mean[t]?\b[,:]?|i\s+mean[t]?[,:]|scratch\s+that\b[,.!]?|correction\s*[:,]"
    # "X? No, actually ..." / "X? No - actually ...": the question mark doubts X, the "no" retracts it.
    r"|(?<=[?!.][ \t])no[ \t]{0,3}[-–—,][ \t]{0,3}actually\b[,:]?)"
    r"|(?<=[.!?])[ \t\n]{1,3}(?P<a>actually[,:]?(?:\s+(?:it\s+(?:was|is)|i\s+think))?)",
    re.I,
)
_CORRECTION_END = re.compile(r"[^\n]{0,200}?" + r"(?=[ \t]{0,3}(?:(?<!\b[A-Z])(?<!\bMrs)(?<!\bMr)(?<!\bMs)(?<!\bDr)(?<!\bSt)(?<!\bJr)[.;!?](?:\s|$)|\n|$))")
_NOT_BUT = re.compile(r"\bnot\s+(?!only\b|just\b|merely\b|simply\b)(?P<x>[^,.;:\n]{1,60}?),?\s+but\s+(?:rather\s+|instead\s+)?(?=\S)", re.I)


def clause_start(text: str, at: int) -> int:
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


def corrections(kind: AnswerType, text: str, ctx: Context) -> Tuple[str, List[Tuple[int, str]]]:
    """``text`` with every retracted value blanked out, and the corrections as marks
    ``(position, claim)`` (clarification 13: the correction is an explicit mark)."""
    marks: List[Tuple[int, str]] = []
    lower = text.lower()
    if not any(w in lower for w in ("wait", "sorry", "mean", "actually", "scratch", "correction", " but ")):
        return text, marks
    blanks: List[Tuple[int, int]] = []
    for n, m in enumerate(_RETRACT.finditer(text)):
        if n >= MAX_READ:
            break
        start = m.start()
        if not text[clause_start(text, start): start].strip():
            continue  # nothing before it to retract ("Actually, ..." opening the response)
        y_at = m.end()
        y = _CORRECTION_END.match(text, y_at)
        claim = cell_value(kind, y.group(), ctx) if y is not None and y.group().strip() else None
        if claim is not None:
            marks.append((y_at, claim))
        if claim is not None or m.group("p"):
            blanks.append((clause_start(text, start), start))
    if " but " in lower:
        for n, m in enumerate(_NOT_BUT.finditer(text)):
            if n >= MAX_READ:
                break
            y = _CORRECTION_END.match(text, m.end())
            claim = cell_value(kind, y.group(), ctx) if y is not None and y.group().strip() else None
            if claim is not None:
                marks.append((m.end(), claim))
                blanks.append((m.start("x"), m.end("x")))
    for s, e in blanks:
        text = blank_span(text, s, e)
    return text, marks


