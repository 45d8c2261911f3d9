"""From a response to its claim: cleaning, alignment (PMH) and claim extraction.

SCORING.md, "Per response", steps 1 to 3, for every answer type: clean the response; a bare
answer of the type is aligned; otherwise an explicit mark (``The answer is ...``, ``**...**``,
``\\boxed{...}``, ``Final answer:``, a last line that is a bare value) or a structured answer
(the answering cell of a markdown table, item of a ``Key: value`` list, key of a JSON object)
gives the claim; otherwise the type finds its first candidate in reading order
(:meth:`defan_pytest.types.AnswerType.candidates`).  Citation marks (``[2]``,
``(Source: Wikipedia)``) are never candidates.  The clarifications of SCORING.md that shape
this module: 1 (format), 2 (structured answers), 3 (citations), 4 (the response's language).

Everything here is rules.  When a name or place is left open by them, the extraction says so
(``needs_ner``) and the caller (:mod:`defan_pytest.scoring`, which batches NER with
``nlp.pipe``) extracts again with the entities a spaCy pipeline found: NER (costly per
response: bench/score_speed.py) stays off every response a regex settles.
"""
from __future__ import annotations

import dataclasses
import json
import re
from functools import lru_cache
from typing import Any, Dict, FrozenSet, Iterator, List, Optional, Sequence, Tuple

from defan_pytest import types
from defan_pytest.dates import MONTH_NAME
from defan_pytest.text import SpanIndex, folded_tokens, is_generic, language, question_tokens
from defan_pytest.types import NONE_CLAIM, ONLINE_CLAIM, AnswerType, Context, Entity, Extraction, make_context

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
# One "Key: value" line (a table row and a bold key allowed for).
_KV_LINE = re.compile(
    r"^[ \t]*(?:[-*•+][ \t]+|\d+[.)][ \t]+)?(?:\*\*|__)?(?P<k>[^\n:*_|{}\[\]]{1,60}?)(?:\*\*|__)?[ \t]*[:：]"
    r"(?:\*\*|__)?[ \t]*(?P<v>[^\n]*?\S)(?:\*\*|__)?[ \t]*$",
    re.M,
)
# Keys that say "this is the answer", for any type (the only ones a math response's list has).
_ANSWER_KEYS = frozenset(
    "answer final result response reponse antwort respuesta resposta risposta solution the short correct".split()
)
# The one number whose reading depends on the response's language (clarification 4): one
# separator before exactly three digits ("391.197"), which an integer gold settles without it.
_ONE_GROUP = re.compile(r"(?<![\d.,])\d{1,3}[.,]\d{3}(?!\d|[.,]\d)")


def _with_language(text: str, ctx: Context) -> Context:
    """The context with the response's language, where a number in it needs one.  Elsewhere
    it is left for the types to ask (:func:`defan_pytest.types._value.response_lang`), which
    only number words do: most responses never pay for the language."""
    if ctx.lang is None and not ctx.integer_gold and _ONE_GROUP.search(text):
        return dataclasses.replace(ctx, lang=language(text))
    return ctx


# Words of a key that say nothing about what it holds ("Runner-up", "Date of birth").
_KEY_STOP = frozenset("the a an of in on at to for by and or up per de du des la le les el il der die das s".split())
# Words that make a "key" a sentence ("The answer is", "I think it was"), not a label.
_KEY_SENTENCE = frozenset(
    """is was were are am be been being has have had did does do i im it its this that these
    there which who whom whose what when why how believe think would could should might may can
    cannot please let me my we you your est ist sind wurde fue foi fu""".split()
)
# What a key and a question can both say in other words: a "Runner-up" column answers "Which
# nation came second?" and "Who lost the final?"; "Winner" answers "Who won?".
_KEY_CONCEPTS = (
    """runner runnerup runners second lost lose loses loser losers losing finalist finalists beaten
    defeated zweiter zweite finaliste subcampeon vice""",
    """winner winners won win wins winning champion champions victor victors victorious triumphed
    lifted crowned clinched sieger gewinner gagnant vainqueur ganador campeon vencedor campeao
    vincitore""",
    "stadium venue ground arena stade stadion estadio stadio",
    "attendance spectators crowd attended audience",
    "born birth birthday birthdate dob",
    "admission admitted joined join joining membership member entry",
    "population residents inhabitants counted",
    "city venue location host hosted held town",
)
_CONCEPT_OF: Dict[str, FrozenSet[int]] = {}
for _i, _group in enumerate(_KEY_CONCEPTS):
    for _w in _group.split():
        _CONCEPT_OF[_w] = _CONCEPT_OF.get(_w, frozenset()) | {_i}
del _i, _group, _w


@lru_cache(maxsize=4096)
def _question_concepts(question: str) -> FrozenSet[int]:
    out: set = set()
    for t in question_tokens(question):
        out |= _CONCEPT_OF.get(t, frozenset())
    return frozenset(out)


#: How well a key says it holds the answer; lower sorts first (see :func:`_key_rank`).
KeyRank = Tuple[int, int, int, int]


def _key_rank(kind: AnswerType, key: str, ctx: Context) -> Optional[KeyRank]:
    """How well a table header, list key or JSON key says it holds the answer (lower is
    better), or ``None`` when it says nothing of the kind:

    * ``Answer``, ``Final answer``, ``Result`` (in the six languages) first;
    * then a key whose every word is the question's, or says what the question asks in other
      words (``Runner-up`` for "Which nation came second?", ``Median weekly household
      income``, ``2022``): more such words first, and one made only of the benchmark's own
      words (``Final`` for a question about a final) after one that is not;
    * then a word of the type (``Laureate``, ``Winner``, ``Rank``, ``City``).

    A math response's keys count only as ``Answer`` (its lists are steps:
    ``Total age before: 40x``)."""
    toks = [t[2] for t in folded_tokens(key)]
    if not toks or len(toks) > 5:
        return None  # a key is a short label, not "The answer is The Lord of the Rings"
    q = question_tokens(ctx.question)
    words = [t for t in toks if t not in _KEY_STOP] or toks
    if all(t in _ANSWER_KEYS for t in toks) and any(t != "the" for t in toks):
        # "Final" alone labels the answer, unless the question is about a final ("Final: West
        # Germany 1-0 Argentina" for "Where was the 1990 final played?").
        if not (all(t == "final" for t in words) and "final" in q):
            return (0, 0, 0, 0)
    if ctx.is_math or any(t in _KEY_SENTENCE for t in toks):
        return None
    labels: FrozenSet[str] = getattr(kind, "labels", frozenset())
    labelled = any(t in labels for t in toks)
    concepts = _question_concepts(ctx.question)
    asked = [t for t in words if t in q or (_CONCEPT_OF.get(t, frozenset()) & concepts)]
    if len(asked) == len(words):
        return (1, -len(asked), int(is_generic(asked)), int(not labelled))
    if labelled:
        return (2, 0, 0, 0)
    return None


def _labelled(kind: AnswerType, t: str, ctx: Context) -> bool:
    """Is ``t`` one labelled line, ``Winner: Argentina``?  Then it is a structured answer, not a
    bare value (a label around a value, as a unit word is)."""
    m = _KV_LINE.match(t)
    return m is not None and _key_rank(kind, m.group("k"), ctx) is not None


def _bare(kind: AnswerType, text: str, ctx: Context) -> Optional[str]:
    """The canonical value when ``text`` (already cleaned) is one bare value of the type."""
    t = text.strip()
    if not t or "\n" in t or _BLOCK_START.match(t):
        return None
    if ("[" in t or "(" in t or "【" in t or "http" in t) and _CITATION.search(t):
        return None  # "386 [2]": a value and its citation are more than one bare value
    if (":" in t or "：" in t) and _labelled(kind, t, ctx):
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
    structures = _structured(kind, text, ctx)
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


# --------------------------------------------------------------------------------------------
# structured answers (clarification 2): the cell, item or key that answers
# --------------------------------------------------------------------------------------------

#: A structure's claim: ``(start, end, claim)`` of the table, list or JSON it was read from.
Structured = Tuple[int, int, str]

_TABLE_SEP = re.compile(r"^[ \t]*\|?[ \t]*:?-{2,}:?[ \t]*(?:\|[ \t]*:?-{2,}:?[ \t]*)*\|?[ \t]*$", re.M)
_JSON_START = re.compile(r"^[ \t]*[{\[]", re.M)
_MAX_JSON = 100_000  # a larger "object" is not an answer; never parse megabytes


def _structured(kind: AnswerType, text: str, ctx: Context) -> List[Structured]:
    """Claims of the tables, ``Key: value`` lists and JSON objects in ``text``."""
    out: List[Structured] = []
    if "|" in text and "-" in text:
        for start, end, header, rows in _tables(text):
            claim = _table_claim(kind, header, rows, ctx)
            if claim is not None:
                out.append((start, end, claim))
    if "{" in text or "[" in text:
        found = _json_structure(text)
        if found is not None:
            start, end, obj = found
            claim = _json_claim(kind, obj, ctx)
            if claim is not None:
                out.append((start, end, claim))
    if ":" in text or "：" in text:
        read = SpanIndex((s, e) for s, e, _ in out) if out else None
        for start, end, items in _kv_blocks(text):
            if read is not None and start in read:
                continue  # inside a table or JSON object already read
            claim = _kv_claim(kind, items, ctx)
            if claim is not None:
                out.append((start, end, claim))
    return out


def _cell_value(kind: AnswerType, cell: str, ctx: Context) -> Optional[str]:
    """The claim a table cell, list item or JSON value holds (its value, as a mark's)."""
    claim = _mark_value(kind, cell, ctx)
    if claim is not None or not kind.uses_gazetteer:
        return claim
    inner = clean(cell)
    if not inner or len(inner.split()) > 8:
        return None
    # "Wilhelm Röntgen (Germany)": the first name in the cell, as in running text.
    found = kind.candidates(inner, ctx, None, False).claim
    if found is None or found in (NONE_CLAIM, ONLINE_CLAIM) or kind.is_emphasis(found, ctx) or _contained(kind, found, ctx):
        return found if found in (NONE_CLAIM, ONLINE_CLAIM) else None
    return found


def _kv_claim(kind: AnswerType, items: Sequence[Tuple[str, str]], ctx: Context) -> Optional[str]:
    """The value of the key that answers: ``Answer`` first, then a key that says what the
    question asks, then a word of the type (:func:`_key_rank`); the first such key whose value
    is a value of the type."""
    tiers = []
    for i, (key, _) in enumerate(items):
        tier = _key_rank(kind, key, ctx)
        if tier is not None:
            tiers.append((tier, i))
    for _, i in sorted(tiers):
        claim = _cell_value(kind, items[i][1], ctx)
        if claim is not None:
            return claim
    return None


def _kv_blocks(text: str) -> Iterator[Tuple[int, int, List[Tuple[str, str]]]]:
    """Runs of ``Key: value`` lines (blank lines allowed between them)."""
    items: List[Tuple[str, str]] = []
    start = end = 0
    for m in _KV_LINE.finditer(text):
        if items and text[end: m.start()].strip():
            yield start, end, items
            items = []
        if not items:
            start = m.start()
        items.append((m.group("k"), m.group("v")))
        end = m.end()
    if items:
        yield start, end, items


def _cells(line: str) -> List[str]:
    t = line.strip()
    if t.startswith("|"):
        t = t[1:]
    if t.endswith("|"):
        t = t[:-1]
    return [c.strip() for c in t.split("|")]


def _tables(text: str) -> Iterator[Tuple[int, int, List[str], List[List[str]]]]:
    """Markdown tables: ``(start, end, header cells, rows of cells)``, found by their
    ``|---|---|`` separator line (linear: each line is read once)."""
    for m in _TABLE_SEP.finditer(text):
        if "|" not in m.group():
            continue  # a horizontal rule, not a table
        head_start = text.rfind("\n", 0, max(0, m.start() - 1)) + 1
        header_line = text[head_start: max(head_start, m.start() - 1)]
        if "|" not in header_line:
            continue
        rows: List[List[str]] = []
        pos, end = m.end() + 1, m.end()
        while pos < len(text):
            nl = text.find("\n", pos)
            line_end = len(text) if nl < 0 else nl
            line = text[pos:line_end]
            if "|" not in line:
                break
            rows.append(_cells(line))
            end, pos = line_end, line_end + 1
        if rows:
            yield head_start, end, _cells(header_line), rows


def _in_question(cell: str, q: FrozenSet[str]) -> bool:
    toks = [t[2] for t in folded_tokens(cell)]
    return bool(toks) and all(t in q for t in toks)


def _table_claim(kind: AnswerType, header: List[str], rows: List[List[str]], ctx: Context) -> Optional[str]:
    """The cell that answers: in the row that matches the question (most cells made of the
    question's words: its year, its subject), else the first row; in the column whose header
    names the answer best (:func:`_key_rank`: ``Runner-up`` for "Which nation came second?",
    ``Laureate``, ``Rank``, the asked year), else the first cell with a value
    of the type.  A two-column table of keys and values is read as a ``Key: value`` list."""
    q = question_tokens(ctx.question)
    best, best_score = 0, 0
    for i, row in enumerate(rows):
        score = sum(1 for c in row if _in_question(c, q))
        if score > best_score:
            best, best_score = i, score
    row = rows[best]
    keys = {j for j, c in enumerate(row) if _in_question(c, q)} if best_score else set()
    tiered = []
    for j in range(len(row)):
        tier = _key_rank(kind, header[j], ctx) if j < len(header) else None
        if tier is not None and j not in keys:
            tiered.append((tier, j))
    for _, j in sorted(tiered):
        claim = _cell_value(kind, row[j], ctx)
        if claim is not None:
            return claim
    if len(header) == 2:
        claim = _kv_claim(kind, [(r[0], r[1]) for r in rows if len(r) >= 2], ctx)
        if claim is not None:
            return claim
    if ctx.is_math:
        return None
    for j, cell in enumerate(row):
        if j not in keys:
            claim = _cell_value(kind, cell, ctx)
            if claim is not None:
                return claim
    return None


def _json_structure(text: str) -> Optional[Tuple[int, int, Any]]:
    """The JSON object or array the response holds (from a line starting with ``{`` or ``[``
    to the last closing brace), or ``None``."""
    m = _JSON_START.search(text)
    if m is None:
        return None
    start = m.start()
    end = max(text.rfind("}"), text.rfind("]")) + 1
    if end <= start or end - start > _MAX_JSON:
        return None
    try:
        return start, end, json.loads(text[start:end])
    except ValueError:
        return None


def _json_scalar(v: Any) -> Optional[str]:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (str, int, float)):
        return str(v)
    return None


def _json_items(obj: Any, prefix: str = "") -> List[Tuple[str, str]]:
    """A JSON object flattened to ``(key path, value)`` pairs (``{"1901": {"physics": X}}``
    gives ``("1901 physics", X)``)."""
    items: List[Tuple[str, str]] = []
    for k, v in obj.items():
        key = f"{prefix} {k}".strip()
        if isinstance(v, dict):
            items.extend(_json_items(v, key))
        else:
            scalar = _json_scalar(v)
            if scalar is not None:
                items.append((key, scalar))
    return items


def _json_claim(kind: AnswerType, obj: Any, ctx: Context) -> Optional[str]:
    if isinstance(obj, dict):
        items = _json_items(obj)
        claim = _kv_claim(kind, items, ctx)
        if claim is None:
            # The key alone ({"results": {"answer": X}} has the path "results answer").
            claim = _kv_claim(kind, [(k.split()[-1], v) for k, v in items if k.split()], ctx)
        return claim
    if isinstance(obj, list) and obj and all(isinstance(x, dict) for x in obj):
        header = list(dict.fromkeys(k for x in obj for k in x))
        rows = [[_json_scalar(x.get(h)) or "" for h in header] for x in obj]
        return _table_claim(kind, header, rows, ctx)
    return None
