"""Step 1 of SCORING.md, cleaning a response, and the marks that are never candidates.

:func:`clean` drops a reasoning block, surrounding white space, quotes, markdown emphasis or code
marks (clarification 1), one final full stop and a lead-in such as ``Answer:``;
:func:`latex_plain` reads a short LaTeX answer as plain text; :func:`mask_citations` blanks out
citation marks (clarification 3) and the numbers of a numbered list.
"""
from __future__ import annotations

import re
from typing import Optional

from defan_pytest.scoring.text.dates import MONTH_NAME

__all__ = ["ANSWER_WORD", "CITATION", "NOT_A_LIST", "clean", "latex_plain", "mask_citations"]

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
ANSWER_WORD = r"(?:answer|réponse|reponse|antwort|respuesta|resposta|risposta)"
_LEAD_IN = re.compile(
    r"^(?:\*\*|__)?\s*(?:the\s+|la\s+|die\s+|a\s+)?(?:final\s+|short\s+|correct\s+)?" + ANSWER_WORD
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


# The number of a numbered list item ("1. 386"), not a German date or place ("19. November",
# "26. Platz").
NOT_A_LIST = rf"(?!\s*(?:{MONTH_NAME}|platz|rang|stelle)\b)"
_LIST_NUMBER = re.compile(rf"^[ \t]*\d{{1,3}}[.)](?=[ \t]+{NOT_A_LIST}\S)", re.M | re.I)

# Citation marks (clarification 3): footnote numbers, bracketed sources, a "Sources:" line,
# links.  They are blanked out (same length, so spans found in the cleaned text still hold)
# before marks and candidates are read; they still make a response more than a bare value.
CITATION = re.compile(
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
        text = CITATION.sub(_blank, text)
    if "." in text or ")" in text:
        text = _LIST_NUMBER.sub(_blank, text)
    return text
