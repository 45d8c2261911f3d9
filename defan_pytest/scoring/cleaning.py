"""Step 1 of SCORING.md, cleaning a response, and the marks that are never candidates.

:func:`clean` drops a reasoning block, HTML tags, emoji and decorative symbols (clarification
11), surrounding white space, quotes, markdown emphasis or code marks (clarification 1), one
final full stop and a lead-in such as ``Answer:``; :func:`strip_label` removes a lead-in of one
to three words in any language (``Antwort:``, ``**Location:**``, clarification 11);
:func:`latex_plain` reads a short LaTeX answer as plain text; :func:`mask_citations` blanks out
citation marks (clarification 3), knowledge-cutoff statements, ``N/A`` and the markers of a
numbered or lettered list.
"""
from __future__ import annotations

import re
import unicodedata
from typing import Optional

from defan_pytest.scoring.text.dates.parse import MONTH_NAME
from defan_pytest.scoring.text.memo import short_text_memo
from defan_pytest.scoring.text.rank_words import RANK_NOUNS

__all__ = ["ANSWER_WORD", "CITATION", "END_TOKEN", "KNOWLEDGE_CUTOFF", "NOT_AVAILABLE", "NOT_A_LIST", "clean", "latex_plain", "mask_citations", "strip_label", "strip_symbols"]

# The end-of-turn tokens of chat templates, left in the output by a server that does not strip
# them (ChatML ``<|im_end|>``, Llama 3 ``<|eot_id|>``, Phi ``<|end|>``, GPT ``<|endoftext|>``,
# Gemma ``<end_of_turn>``; ``</s>`` at the end only, elsewhere it closes a struck-through
# ``<s>``): at the end of a response, formatting (clarification 11); with text after them, the
# start of a new turn (clarification 12, :mod:`defan_pytest.scoring.turns`).
END_TOKEN = re.compile(r"<\|(?:im_end|eot_id|eom_id|end|endoftext|end_of_text|eos)\|>|<end_of_turn>|<eos>", re.I)
_TRAILING_END = re.compile(rf"(?:\s*(?:{END_TOKEN.pattern}|</s>))+\s*$", re.I)
_THINK_BLOCK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.S | re.I)
_THINK_CLOSE = re.compile(r"</think(?:ing)?>", re.I)
_THINK_OPEN = re.compile(r"<think(?:ing)?>", re.I)
# HTML tags are formatting marks (clarification 11): a line break or paragraph tag becomes a
# line break, any other tag nothing.  Only the tags of text formatting, with attributes written
# as attributes (``name="..."``): ``a<b and c>d`` in a worked solution is no tag.
_HTML_TAG = re.compile(
    r"</?(b|i|u|s|em|strong|br|p|div|span|li|ul|ol|sup|sub|h[1-6]|tr|td|th|table|thead|tbody|a"
    r"|font|code|pre|small|big|mark|hr|strike|del|ins|center|blockquote|answer)"
    r"(?:\s+[\w-]{1,20}=(?:\"[^\"<>\n]{0,100}\"|'[^'<>\n]{0,100}'|[\w#.%-]{1,50})){0,10}\s*/?>",
    re.I,
)
_HTML_BREAKS = frozenset("br p div li tr h1 h2 h3 h4 h5 h6".split())
_HTML_ENTITIES = {"&nbsp;": " ", "&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#39;": "'"}
_HTML_ENTITY = re.compile("|".join(map(re.escape, _HTML_ENTITIES)))
# Where emoji and decorative symbols live: the pictographic planes, dingbats, miscellaneous
# symbols and arrows, and the joiners and selectors that build emoji sequences.  Which of these
# characters are symbols is read from the Unicode data (category So, "Symbol, other"); a math
# sign (Sm: "√", "→", "≥") and a letter-like unit are kept, and so is "°" (an ordinal, "26°").
_SYMBOL_RANGE = re.compile(
    "[\u2190-\u2bff\u3297\u3299\U0001f000-\U0001faff\ufe0e\ufe0f\u200d\u20e3"
    "\U000e0020-\U000e007f]+"
)
_ALWAYS_DROPPED = frozenset("\ufe0e\ufe0f\u200d\u20e3")


def _symbols_out(m: "re.Match[str]") -> str:
    kept = [
        c for c in m.group()
        if c not in _ALWAYS_DROPPED and not ("\U000e0020" <= c <= "\U000e007f")
        and unicodedata.category(c) not in ("So", "Sk")
    ]
    return "".join(kept) if kept else " "


def strip_symbols(text: str) -> str:
    """``text`` without HTML tags, emoji and decorative symbols (clarification 11): the
    formatting marks of an answer, like markdown emphasis (``<b>Brazil</b><br>`` -> ``Brazil``,
    ``Argentina 🇦🇷⚽`` -> ``Argentina``)."""
    if "<" in text:
        text = _HTML_TAG.sub(lambda m: "\n" if m.group(1).lower() in _HTML_BREAKS else "", text)
    if "&" in text:
        text = _HTML_ENTITY.sub(lambda m: _HTML_ENTITIES[m.group()], text)
    if not text.isascii():
        text = _SYMBOL_RANGE.sub(_symbols_out, text)
    return text


_QUOTES = [('"', '"'), ("'", "'"), ("“", "”"), ("‘", "’"), ("«", "»"), ("„", "“")]
_WRAPPERS = [("```", "```"), ("**", "**"), ("__", "__"), ("*", "*"), ("_", "_"), ("`", "`"), ("$", "$")]
_CODE_FENCE = re.compile(r"^```[a-zA-Z0-9_-]*\s*\n(.*?)\n?```$", re.S)
# A fence line anywhere ("Here it is:\n```json\n{...}\n```"): code marks, removed (clarification 1).
_FENCE_LINE = re.compile(r"^[ \t]*```[\w+.-]*[ \t]*(?:\n|$)", re.M)
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


# One pair of tags around the whole response ("<answer>Argentina</answer>", "<final>1969</final>"):
# a wrapper (clarification 23); several tagged fields are structured output (2).
_TAG_PAIR = re.compile(r"<([A-Za-z][\w-]{0,30})>([^<>]*)</\1>", re.S)
# Citation marks right after or before a value ("03/02/1919 [1]", "Kyoto [source 2]", "^[3]",
# "【4†source】"): formatting, removed in cleaning so that a bare value stays bare (cl. 23).
_CITE_MARK = r"(?:\^?\[\^?\d{1,3}(?:\s*[,–-]\s*\d{1,3})*\]|\[(?:sources?|ref(?:erence)?s?|citation)\b[^\]\n]{0,40}\]|【[^】\n]{0,60}】)"
_EDGE_CITATIONS = re.compile(rf"^(?:{_CITE_MARK}[ \t]*)+(?=\S)|(?<=\S)(?:[ \t]*{_CITE_MARK})+$", re.I)


def _edge_citations_out(t: str) -> str:
    if t.endswith(("]", "】")) or t.startswith(("[", "^[", "【")):
        return _EDGE_CITATIONS.sub("", t)
    return t


_WRAP_STARTS = frozenset(a[0] for a, _ in _QUOTES + _WRAPPERS) | {"\\", "<"}
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
    if first == "<":
        m = _TAG_PAIR.fullmatch(t)
        return m.group(2) if m else t
    # A whole-response "\boxed{X}" is not unwrapped: it is an explicit mark (step 3), not one
    # of the wrappers cleaning removes, so the response is not a bare value.
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


# A lead-in of one to three words and a colon at the very start, in any language (clarification
# 11): ``A:``, ``Antwort:``, ``Réponse :``, ``**Location:**``, ``85 and over:`` (a label that
# starts with a number has two or three words, the last a word: ``2022: 61`` is a row of a
# list).  The colon is followed by a space: ``410:e`` (a Swedish ordinal) and ``10:30`` are
# written forms, not labels.
_LABEL = re.compile(
    r"^(?:\*\*|__)?[ \t]?(?P<label>[^\W\d_][\w'’.-]{0,30}(?:[ \t][\w'’.-]{1,30}){0,2}?"
    r"|\d[\w'’.-]{0,30}(?:[ \t][\w'’.-]{1,30})?[ \t][^\W\d_][\w'’.-]{0,30})[ \t]?(?:\*\*|__)?"
    r"[ \t]?[:：](?:\*\*|__)?(?:[ \t]|(?=\n))"
)
_LABEL_PARTICLES = frozenset("of de du des la le von van der den di da del y e and the".split())


def strip_label(text: str, question: str = "") -> Optional[str]:
    """What follows a lead-in label at the very start of ``text`` (``Population: 296,615`` ->
    ``296,615``), or ``None`` when there is none.  A label that is a name the question names
    (``University of Jyvaskyla: 320``, ``Universität Hamburg: 205th``) is the subject of a
    structured answer, not a lead-in: two or more words, all capitalized but for particles, or
    words the question writes capitalized."""
    m = _LABEL.match(text)
    if m is None or m.end() >= len(text):
        return None
    words = m.group("label").split()
    content = [w for w in words if w.lower() not in _LABEL_PARTICLES]
    if len(words) >= 2 and content and all(w[:1].isupper() for w in content) and not any(
        re.fullmatch(ANSWER_WORD, w, re.I) for w in content
    ):
        return None  # "Kobe University: 386", "Universität Hamburg: 205th"
    if question and all(w[:1].isupper() and re.search(rf"(?<!^)\b{re.escape(w)}\b", question) for w in content):
        return None  # "Hamburg: 205th" where the question names Hamburg
    return text[m.end():].strip()


@short_text_memo(maxsize=8192)
def clean(text: Optional[str]) -> str:
    """Step 1: drop a reasoning block (one never closed holds no answer: clarification 11),
    the chat template's end-of-turn tokens at the end, HTML tags, emoji and decorative symbols, surrounding white space, quotes, markdown emphasis
    or code marks (code fences anywhere), one final full stop, and a lead-in of the form
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
    if "<" in t and _TRAILING_END.search(t):
        t = _TRAILING_END.sub("", t)
    t = strip_symbols(t)
    if "```" in t:
        t = _FENCE_LINE.sub("", t)
    stop_removed = False
    while True:
        before = t
        t = _edge_citations_out(t.strip())
        t = _unwrap_once(t)
        if not stop_removed and t.endswith(".") and not t.endswith(".."):
            t = t[:-1]
            stop_removed = True
        if t == before:
            return t


# The number of a numbered list item ("1. 386"), not a German date or a place in a ranking
# ("19. November 1946", "26. Platz", "186. sırada").
NOT_A_LIST = rf"(?!\s*(?:{MONTH_NAME}|{RANK_NOUNS})\b)"
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


# A knowledge-cutoff statement ("As of my last update in October 2023", "my knowledge cutoff
# is September 2021", "(knowledge cutoff: 2023)") dates the model, not the answer: like a
# citation, none of it is a candidate of any type.
_CUTOFF_DATE = rf"(?:(?:early|mid|late)[\s-]+)?(?:[^\W\d_]{{3,12}}\.?\s+)?(?:\d{{1,2}}(?:st|nd|rd|th)?,?\s+)?\d{{4}}"
KNOWLEDGE_CUTOFF = re.compile(
    r"(?:\b(?:as\s+of|according\s+to|based\s+on|since|after|until)\s+)?"
    r"(?:\bmy\s+(?:(?:last|latest|most\s+recent|final)\s+)?(?:(?:knowledge|training)\s+)?(?:data\s+)?"
    r"(?:update|cut-?off|training(?:\s+data)?|knowledge|information)"
    r"|\b(?:knowledge|training(?:\s+data)?)\s+cut-?off)(?:\s+date)?"
    r"(?:\s*[:(]\s*|\s+(?:is|was|in|of|on|from|up\s+to|until|through|(?:only\s+)?(?:goes|extends)\s+(?:up\s+)?to)\s+)"
    rf"{_CUTOFF_DATE}\)?",
    re.I,
)
# "N/A" is a refusal (clarification 21), not a statement that there was none.
NOT_AVAILABLE = re.compile(r"(?<![\w/])n/a(?![\w/])", re.I)
# The letter of a multiple-choice option ("A) West Germany", "(B) England"; "B. England" only
# in a list of two or more such lines, since "A. Einstein" is an initial): a list marker, not
# part of the claim (clarification 13).
_LETTER_MARKER = re.compile(r"^[ \t]*(?:\([A-Ea-e]\)|[A-Ea-e]\))(?=[ \t]+\S)", re.M)
_LETTER_DOT = re.compile(r"^[ \t]*[A-E]\.(?=[ \t]+\S)", re.M)


def _blank(m: "re.Match[str]") -> str:
    return " " * len(m.group())


def mask_citations(text: str) -> str:
    """``text`` with its citation marks, knowledge-cutoff statements, ``N/A``, and the numbers
    and letters of a numbered or lettered list blanked out (replaced by spaces of the same
    length): none of them is a candidate."""
    if "[" in text or "(" in text or "【" in text or ":" in text:
        text = CITATION.sub(_blank, text)
    lower = text.lower()
    if "my " in lower or "cut" in lower:
        text = KNOWLEDGE_CUTOFF.sub(_blank, text)
    if "/" in text:
        text = NOT_AVAILABLE.sub(_blank, text)
    if "." in text or ")" in text:
        text = _LIST_NUMBER.sub(_blank, text)
    if ")" in text:
        text = _LETTER_MARKER.sub(_blank, text)
    if "." in text and len(_LETTER_DOT.findall(text)) >= 2:
        text = _LETTER_DOT.sub(_blank, text)
    return text
