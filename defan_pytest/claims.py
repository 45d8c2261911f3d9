"""From a response to its claim: cleaning, alignment (PMH) and claim extraction.

SCORING.md, "Per response", steps 1 to 3.  Everything here is rules: regular expressions,
the domain's own answer list (a gazetteer) and, only where the rules leave a name or place
open, the named entities a spaCy pipeline found (passed in by :mod:`defan_pytest.scoring`,
which batches NER with ``nlp.pipe``).

The result of :func:`extract` is an :class:`Extraction`; when it needs NER to finish a
name or place it says so (``needs_ner``) and the caller runs NER and calls again with the
entities.  That keeps NER (about 3 ms a response) off every response a regex settles.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, List, Optional, Sequence, Tuple

from defan_pytest.dates import find_dates, parse_date_text
from defan_pytest.equivalence import (
    NONE_CLAIM,
    ONLINE_CLAIM,
    canonical_date,
    canonical_number,
    canonical_rank,
    fold,
    name_tokens,
    parse_number,
    parse_rank,
)

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
# shared token helpers
# --------------------------------------------------------------------------------------------

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


_NON_ALNUM = re.compile(r"[^0-9a-z]")


@lru_cache(maxsize=4096)
def _folded_tokens(text: str) -> List[Tuple[int, int, str]]:
    """Word tokens with their spans, folded as :func:`name_tokens` folds them (cached: the
    same questions come back for every paraphrase and every model)."""
    out = []
    for m in _WORD.finditer(text):
        g = m.group()
        f = g.lower() if g.isascii() else fold(g)
        if not f.isalnum() or not f.isascii():
            # Apostrophes and letters folding leaves behind: keep ASCII alphanumerics only.
            f = _NON_ALNUM.sub("", f.replace("'", ""))
        if f:
            out.append((m.start(), m.end(), f))
    return out


@lru_cache(maxsize=4096)
def _question_tokens(question: str) -> frozenset:
    return frozenset(t[2] for t in _folded_tokens(question))


_SENTENCE_WORDS = frozenset(
    """is was were are am be been being won wins win received receives receive awarded award
    has have had did does do i i'm im it's its it this that these those there which who whom
    whose what when where why how believe think sorry unfortunately however according because
    not no answer would could should might may can cannot can't don't didn't isn't wasn't
    held took located take place ranked rank position placed year years
    given named known called went goes""".split()
)
# Words that may start a capitalized span but are not names ("The", "In 1901, ...").
_SPAN_STOP = frozenset(
    """the a an in on at of for and or but it its he she they his her their this that these
    those there here according as by from to with after before during while when where who
    what which why how i i'm im ive id youre were weve its dont cant wont yes no not however unfortunately sorry although though also
    based answer final note sure yes if so then the winner won is was were its it's please
    check visit see source sources as of my last knowledge update
    january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday""".split()
)
_PARTICLES = frozenset(
    "von van der den de del della di da du la le y bin al of the dos das d e ibn".split()
)
# Words that name the benchmark's own subject matter rather than an answer: a span made only
# of these ("Nobel Prize", "Academy Award", "FIFA World Cup") is never a claim.
_GENERIC = frozenset(
    """academy award awards oscar oscars nobel prize prizes best actor actress picture director
    directing film movie fifa world cup final finals team national physics chemistry medicine
    physiology literature peace economic economics sciences science memorial laureate
    laureates winner winners committee ceremony category edition qs university universities
    rankings ranking rank conference un united nations oic organisation organization islamic
    cooperation member state states membership general assembly security council
    the of in for and a an on at to by swedish norwegian royal bank riksbank alfred
    ai language model chatgpt gpt openai knowledge cutoff data information wikipedia
    answer question note however sorry match game tournament""".split()
)


def _is_generic(tokens: Sequence[str]) -> bool:
    return all(t in _GENERIC or t.isdigit() for t in tokens)


def _in_question(tokens: Sequence[str], question_tokens: frozenset) -> bool:
    return bool(tokens) and all(t in question_tokens for t in tokens)


# --------------------------------------------------------------------------------------------
# numbers, ranks, dates in text
# --------------------------------------------------------------------------------------------

_NUMBER_IN_TEXT = re.compile(
    r"(?<![\w.,/])(?<![A-Za-z]-)(?P<sign>(?<!\d)[-−](?=\d))?[$€£¥]?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{1,3}(?:[ \u00a0\u202f\u2009]\d{3})+(?![\d,])(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?:\s*/\s*(?P<den>\d+)(?![\d/]))?"
    r"(?P<scale>\s*(?:%|percent\b|thousand\b|million\b|billion\b|trillion\b|mn\b|bn\b))?"
    r"(?![\w]|[.,]\d)"
)


def _numbers(text: str, fractions: bool) -> List[Tuple[int, int, str, bool]]:
    """Numbers written in ``text``: ``(start, end, text_of_number, is_fraction)``."""
    out = []
    for m in _NUMBER_IN_TEXT.finditer(text):
        s, e = m.span()
        frac = m.group("den") is not None
        if frac and not fractions:
            # "3/4" outside math is two numbers, not a fraction (and never a date here).
            num = (m.group("sign") or "") + m.group("num")
            out.append((s, m.end("num"), num, False))
            out.append((m.start("den"), m.end("den"), m.group("den"), False))
            continue
        out.append((s, e, m.group(), frac))
    return out


@lru_cache(maxsize=4096)
def _question_numbers(question: str) -> frozenset:
    vals = set()
    for _, _, t, _ in _numbers(question, fractions=False):
        v = parse_number(t)
        if v is not None:
            vals.add(v)
    # "0-4 age group": both ends of a range the question names are the question's numbers.
    for m in re.finditer(r"(\d+)\s*[-–—]\s*(\d+)", question):
        vals.add(parse_number(m.group(1)))
        vals.add(parse_number(m.group(2)))
    return frozenset(v for v in vals if v is not None)


_RANK_MARKED = re.compile(
    r"(?:(?P<ord>\b\d+)(?:st|nd|rd|th)\b"
    r"|#\s*(?P<hash>\d+)\b"
    r"|(?<![\w=])=\s*(?P<eq1>\d+)\b"
    r"|\b(?P<eq2>\d+)=(?!\d)"
    r"|\b(?:ranked|ranking|rank|position(?:ed)?|placed|place|spot|number|no\.)\s*"
    r"(?:of|at|as|is|was|in)?\s*(?:#|no\.?\s*)?=?\s*(?P<kw>\d+)\b(?!\s*[-–—]\s*\d))",
    re.I,
)
_RANK_BAND_IN_TEXT = re.compile(r"(?<![\w.,])=?(\d{1,4})\s*[-–—]\s*(\d{1,4})(?![\w.,]|[-–—]\d)")


# --------------------------------------------------------------------------------------------
# the answer list (gazetteer)
# --------------------------------------------------------------------------------------------


class Gazetteer:
    """A domain's known answers, looked up by folded token n-grams (no regex alternation:
    a dict probe per start token keeps a 1,500-name list cheap)."""

    def __init__(self, names: Sequence[str] = ()) -> None:
        self._entries: Dict[Tuple[str, ...], str] = {}
        self._longest = 0
        for n in names:
            self.add(n)

    def add(self, name: str) -> None:
        toks = name_tokens(name)
        if not toks:
            return
        self._entries.setdefault(toks, name.strip())
        self._longest = max(self._longest, len(toks))

    def __contains__(self, text: str) -> bool:
        return name_tokens(text) in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def find(self, text: str, tokens: Optional[List[Tuple[int, int, str]]] = None) -> List[Tuple[int, int, str]]:
        """Non-overlapping known names in ``text`` (longest first at each start)."""
        if not self._entries:
            return []
        toks = tokens if tokens is not None else _folded_tokens(text)
        out = []
        i = 0
        n = len(toks)
        while i < n:
            hit = None
            for k in range(min(self._longest, n - i), 0, -1):
                key = tuple(t[2] for t in toks[i: i + k])
                if key in self._entries:
                    hit = k
                    break
            # A known name is a proper noun: it must start with a capital or a digit as written
            # ("the film spread its wings" does not name the film "Wings").
            if hit and (text[toks[i][0]].isupper() or text[toks[i][0]].isdigit()):
                s, e = toks[i][0], toks[i + hit - 1][1]
                out.append((s, e, text[s:e]))
                i += hit
            else:
                i += 1
        return out


# --------------------------------------------------------------------------------------------
# the extraction
# --------------------------------------------------------------------------------------------

#: Named-entity labels that can be a name or a place answer.
NAME_LABELS = frozenset({"PERSON", "ORG", "GPE", "NORP", "WORK_OF_ART", "FAC", "LOC", "EVENT", "PRODUCT"})
PLACE_LABELS = frozenset({"GPE", "LOC", "FAC"})


@dataclass(frozen=True)
class Extraction:
    """What a response asserts: ``claim`` (canonical) and ``aligned``.

    ``needs_ner`` is set when a name or place was left open by the rules and a spaCy pipeline
    may settle it; the caller then calls :func:`extract` again with ``entities``.
    """

    claim: Optional[str]
    aligned: bool
    needs_ner: bool = False
    how: str = ""


@dataclass(frozen=True)
class Context:
    """What the extractor knows about the row besides the response."""

    question: str
    type: str
    empty_gold: bool = False
    gazetteer: Optional[Gazetteer] = None
    dayfirst: bool = False
    asks_year: bool = False
    is_math: bool = False


_DAYFIRST_Q = re.compile(r"\b(?:dd\s*[/.-]\s*mm|day\s*/\s*month)\b", re.I)
_YEAR_Q = re.compile(r"\b(?:which|what|in what)\s+year\b|\byear\b", re.I)


def make_context(question: str, type_: str, empty_gold: bool = False, gazetteer: Optional[Gazetteer] = None, is_math: bool = False) -> Context:
    """Build a :class:`Context`, reading the day-first and year-only cues from the question."""
    return Context(
        question=question,
        type=type_,
        empty_gold=empty_gold,
        gazetteer=gazetteer,
        dayfirst=bool(_DAYFIRST_Q.search(question)),
        asks_year=bool(_YEAR_Q.search(question)),
        is_math=is_math,
    )


_NONE_STATEMENT = re.compile(
    r"\b(?:no\s+(?:[\w’'-]+\s+){0,3}?(?:prize|award|winner|laureate|recipient)s?\b|no\s+one\b"
    r"|not\s+(?:been\s+)?(?:awarded|given|presented|conferred)\b"
    r"|(?:wasn't|weren't|was\s+not|were\s+not)\s+(?:awarded|given|presented)\b"
    r"|withheld\b|nobody\b|none\b|n/a\b|no\s+award\b)",
    re.I,
)
_ONLINE = re.compile(r"\b(?:online|virtual(?:ly)?|remote(?:ly)?)\b", re.I)
_REFUSAL = re.compile(
    r"\b(?:i\s+(?:don't|do\s+not|cannot|can't|am\s+unable|'m\s+unable|am\s+not\s+able)|"
    r"as\s+an\s+ai|i'm\s+sorry|i\s+apologi[sz]e|unable\s+to\s+(?:find|provide|determine))",
    re.I,
)


def _value_claim(type_: str, text: str, ctx: Context) -> Optional[str]:
    """The canonical value when ``text`` (already cleaned) is one bare value of the type."""
    t = text.strip()
    if not t or "\n" in t:
        return None
    if type_ == "numeric":
        v = parse_number(t)
        if v is None and ctx.is_math:
            return None
        return canonical_number(v) if v is not None else None
    if type_ == "rank":
        r = parse_rank(t)
        return canonical_rank(r) if r is not None else None
    if type_ == "date":
        d = parse_date_text(t, dayfirst=ctx.dayfirst, allow_year=ctx.asks_year)
        return canonical_date(d) if d is not None else None
    if type_ == "city":
        return _bare_place(t, ctx)
    return _bare_name(t, ctx)


_INITIAL_OR_ABBREV = re.compile(r"\b(?:[A-Z]|Mrs?|Ms|Dr|St|Jr|Sr|Mt|Ft|No|Prof)\.$")


def _looks_like_sentence(t: str) -> bool:
    """Prose rather than one name: a verb or function word, a sentence break, or mostly
    lowercase words where the text does use capitals ("Let me know if you need more")."""
    words = t.replace("’", "'").split()
    low = [w.strip(",;:()!?\"'").lower() for w in words]
    if any(w in _SENTENCE_WORDS for w in low):
        return True
    for m in re.finditer(r"[.!?](?=\s+\S)", t):
        if not _INITIAL_OR_ABBREV.search(t[: m.end()]):
            return True
    if any(c.isupper() for c in t):
        content = [w for w, l in zip(words, low) if l and l not in _PARTICLES and l[0].isalpha()]
        lower = [w for w in content if w[0].islower()]
        if content and len(lower) * 2 > len(content):
            return True
    elif len(words) > 4:
        return True
    return False


def _bare_name(t: str, ctx: Context) -> Optional[str]:
    if len(t) > 90:
        return None
    if _NONE_STATEMENT.fullmatch(t) or (
        ctx.empty_gold and len(t.split()) <= 12 and _NONE_STATEMENT.search(t) and not _REFUSAL.search(t)
    ):
        return NONE_CLAIM
    gaz = ctx.gazetteer
    if gaz is not None and t in gaz:
        return t  # a known answer, even one that reads like a sentence ("It Happened One Night")
    if len(t.split()) > 10 or _looks_like_sentence(t):
        return None
    if re.search(r"^\s*(?:[-*•]|\d+[.)])\s", t) or "(" in t:
        return None  # a list item, or a name with a comment in brackets
    # Two names where one is asked ("Pierre Curie and Marie Curie", "Curie; Becquerel").
    parts = [p for p in re.split(r"\s+(?:and|&|or)\s+|\s*[;/,]\s*", t) if p.strip()]
    real = [p for p in parts if fold(p).strip(" .") not in {"jr", "sr", "ii", "iii", "iv"}]
    if len(real) >= 2 and sum(1 for p in real if p[:1].isupper()) >= 2:
        return None
    if not name_tokens(t):
        return None
    return t


_PLACE_OK_PART = re.compile(r"^[^\W\d_][\w .'’()-]*$")


def _bare_place(t: str, ctx: Context) -> Optional[str]:
    if len(t) > 90:
        return None
    if _ONLINE.search(t) and len(t.split()) <= 5 and not _looks_like_sentence(t):
        return ONLINE_CLAIM
    gaz = ctx.gazetteer
    if gaz is not None and t in gaz:
        return t
    parts = [p.strip() for p in t.split(",")]
    if len(parts) > 4 or any(not p or len(p.split()) > 5 for p in parts):
        return None
    if _looks_like_sentence(t) or not all(_PLACE_OK_PART.match(p) for p in parts):
        return None
    if re.search(r"\s+(?:and|&|or)\s+|;|/", t):
        return None  # two places
    return t


def extract(
    response: Optional[str],
    ctx: Context,
    entities: Optional[Sequence[Tuple[int, int, str]]] = None,
    ner_available: bool = False,
) -> Extraction:
    """Steps 1 to 3 of SCORING.md for one response.

    ``entities``: spans ``(start, end, label)`` a spaCy pipeline found in the *cleaned* text
    (``clean(response)``), or ``None`` when none ran.  With ``ner_available`` and no
    ``entities``, a name or place the rules cannot settle comes back with ``needs_ner``.
    """
    text = clean(response)
    if not text:
        return Extraction(None, False, how="empty")
    value = _value_claim(ctx.type, text, ctx)
    if value is not None:
        return Extraction(value, True, how="bare")
    mark = _marked_claim(text, ctx)
    if mark is not None:
        return Extraction(mark, False, how="marked")
    if ctx.is_math and ctx.type == "numeric":
        nums = _numbers(text, fractions=True)
        for s, e, t, _ in reversed(nums):
            v = parse_number(t)
            if v is not None:
                return Extraction(canonical_number(v), False, how="math-last")
        return Extraction(None, False, how="none")
    return _candidates_claim(text, ctx, entities, ner_available)


# -- explicit marks ---------------------------------------------------------------------------

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


def _marked_claim(text: str, ctx: Context) -> Optional[str]:
    marks: List[Tuple[int, str]] = []
    qtoks = _question_tokens(ctx.question)
    qnums = _question_numbers(ctx.question) if ctx.type in ("numeric", "rank") else frozenset()
    for pat in _MARK_PATTERNS:
        for m in pat.finditer(text):
            x = m.group("x")
            claim = _mark_value(x, ctx, qtoks, qnums)
            if claim is not None:
                marks.append((m.start("x"), claim))
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) >= 2:
        last = clean(lines[-1])
        claim = _value_claim(ctx.type, last, ctx)
        if claim is not None and not _contained(claim, ctx, qtoks, qnums):
            marks.append((text.rfind(lines[-1]), claim))
    if not marks:
        return None
    marks.sort(key=lambda m: m[0])
    return marks[-1][1]


def _contained(claim: str, ctx: Context, qtoks: frozenset, qnums: frozenset) -> bool:
    """Is this canonical claim something the question itself contains?"""
    if ctx.is_math or claim in (NONE_CLAIM, ONLINE_CLAIM):
        return False
    if ctx.type in ("numeric", "rank"):
        v = parse_number(claim)
        return v is not None and v in qnums
    if ctx.type == "date":
        return False
    return _in_question(name_tokens(claim), qtoks)


def _mark_value(x: str, ctx: Context, qtoks: frozenset, qnums: frozenset) -> Optional[str]:
    inner = clean(x)
    claim = _value_claim(ctx.type, inner, ctx)
    if claim is None and ctx.type in ("numeric", "rank", "date") and len(inner.split()) <= 6:
        # "The answer is 1,351,921 people": the value inside a short marked phrase.
        found = _typed_candidates(inner, ctx, qnums)
        claim = found[0][1] if found else None
    if claim is None:
        return None
    if ctx.type in ("name", "city") and _is_generic(name_tokens(claim)):
        if ctx.gazetteer is None or claim not in ctx.gazetteer:
            return None  # "**Nobel Prize**" is emphasis, not an answer; "United Nations" is one
    if _contained(claim, ctx, qtoks, qnums):
        return None
    return claim


# -- candidates -------------------------------------------------------------------------------


def _typed_candidates(text: str, ctx: Context, qnums: frozenset) -> List[Tuple[int, str]]:
    """Numeric, rank or date candidates not contained in the question, in reading order."""
    t = ctx.type
    if t == "numeric":
        # Numbers inside a written date ("9 August 2011") are not counts; a year-valued
        # question (world_org) still sees its year because bare years are kept.
        date_spans = [] if ctx.asks_year else [(s, e) for s, e, v in find_dates(text, years=False)]
        out = []
        years_in_dates = []
        for s, e, num, _ in _numbers(text, fractions=ctx.is_math):
            v = parse_number(num)
            if v is None or v in qnums:
                continue
            if any(ds <= s < de for ds, de in date_spans):
                if re.fullmatch(r"\d{4}", num):
                    years_in_dates.append((s, canonical_number(v)))
                continue
            out.append((s, canonical_number(v)))
        # A year inside a date ("December 1992") only when nothing else is left.
        return out or years_in_dates
    if t == "rank":
        strong: List[Tuple[int, str]] = []
        taken: List[Tuple[int, int]] = []
        for m in _RANK_BAND_IN_TEXT.finditer(text):
            lo, hi = int(m.group(1)), int(m.group(2))
            if lo < hi and lo not in qnums and hi not in qnums and hi < 1900:
                strong.append((m.start(), canonical_rank((lo, hi))))
                taken.append(m.span())
        for m in _RANK_MARKED.finditer(text):
            if any(s <= m.start() < e for s, e in taken):
                continue
            n = next(g for g in ("ord", "hash", "eq1", "eq2", "kw") if m.group(g) is not None)
            val = int(m.group(n))
            if val in qnums:
                continue
            strong.append((m.start(), str(val)))
            taken.append(m.span())
        if strong:
            return sorted(strong)
        out = []
        for s, e, num, _ in _numbers(text, fractions=False):
            if any(ts <= s < te for ts, te in taken):
                continue
            v = parse_number(num)
            if v is None or v in qnums or v != v.to_integral_value() or v < 1:
                continue
            if 1900 <= v <= 2100 and re.fullmatch(r"\d{4}", num):
                continue  # a year, not a QS position
            out.append((s, str(int(v))))
        return out
    if t == "date":
        qdates = {v for _, _, v in find_dates(ctx.question, dayfirst=ctx.dayfirst)}
        return [
            (s, canonical_date(v))
            for s, e, v in find_dates(text, dayfirst=ctx.dayfirst)
            if v not in qdates
        ]
    return []


_UNIT_LABEL = re.compile(r"^\s*(?P<n>[-−]?[$€£¥]?\d[\d,]*(?:\.\d+)?(?:\s*(?:thousand|million|billion))?)\s+(?P<u>[a-z][\w-]*(?:\s+[a-z][\w-]*){0,2})\s*$", re.I)


def _candidates_claim(text: str, ctx: Context, entities: Optional[Sequence[Tuple[int, int, str]]], ner_available: bool) -> Extraction:
    if ctx.type in ("numeric", "rank", "date"):
        qnums = _question_numbers(ctx.question) if ctx.type != "date" else frozenset()
        found = _typed_candidates(text, ctx, qnums)
        if found:
            return Extraction(found[0][1], False, how="candidate")
        m = _UNIT_LABEL.match(text)
        if m:  # "3 days", "240 students": only the value with a unit or label
            v = parse_number(m.group("n"))
            if v is not None:
                claim = canonical_rank(int(v)) if ctx.type == "rank" and v == v.to_integral_value() else canonical_number(v)
                return Extraction(claim, False, how="unit")
        return Extraction(None, False, how="none")
    return _name_claim(text, ctx, entities, ner_available)


def _capitalized_spans(text: str, toks: List[Tuple[int, int, str]]) -> List[Tuple[int, int]]:
    """Runs of capitalized words (with name particles between them): the no-NER fallback."""
    spans = []
    i, n = 0, len(toks)
    while i < n:
        s = toks[i][0]
        if not text[s].isupper():
            i += 1
            continue
        j = i
        while j + 1 < n:
            gap = text[toks[j][1]: toks[j + 1][0]]
            nxt = toks[j + 1]
            if gap.strip() not in ("", "-", ".", "'", "’") or "\n" in gap:
                break
            if gap.strip() == "." and not _INITIAL_OR_ABBREV.search(text[: toks[j][1] + 1]):
                break  # a sentence ends here ("... in Literature. Please check ...")
            if text[nxt[0]].isupper() or text[nxt[0]].isdigit():
                j += 1
                continue
            # "Santiago Ramón y Cajal", "Hans von Euler-Chelpin": a particle then a capital.
            k = j + 1
            while k < n and toks[k][2] in _PARTICLES and text[toks[k][0]].islower():
                k += 1
            if k < n and k > j + 1 and text[toks[k][0]].isupper() and all(
                text[toks[x][1]: toks[x + 1][0]].strip() in ("", "-", "'") for x in range(j, k)
            ):
                j = k
                continue
            break
        # Drop leading words that start sentences rather than names ("In", "The", "According").
        a = i
        while a <= j and toks[a][2] in _SPAN_STOP:
            a += 1
        if a <= j:
            spans.append((toks[a][0], toks[j][1]))
        i = j + 1
    return spans


def _inside_generic_phrase(text: str, s: int, e: int, spans: Sequence[Tuple[int, int]]) -> bool:
    for a, b in spans:
        if a <= s and e <= b and (a, b) != (s, e):
            rest = name_tokens(text[a:s] + " " + text[e:b])
            return bool(rest) and _is_generic(rest)
    return False


_ACRONYM_OR_NUMBER = re.compile(r"\d|\b[A-Z]{3,}\b")


def _extend_place(text: str, s: int, e: int) -> int:
    """Extend a place candidate over ", Region" and ", Country" that follow it."""
    for _ in range(2):
        m = re.match(r",\s*((?:[A-Z][\w.'’-]*)(?:\s+[A-Z][\w.'’-]*){0,3})(?=\s*(?:[,.;:!?)]|\s+(?:in|on|from|during|at|for|and|was|is|hosted|which|where|with)\b|$))", text[e:])
        if not m:
            break
        e += m.end()
    return e


def _name_claim(text: str, ctx: Context, entities: Optional[Sequence[Tuple[int, int, str]]], ner_available: bool) -> Extraction:
    qtoks = _question_tokens(ctx.question)
    toks = _folded_tokens(text)
    cands: List[Tuple[int, int, str, str]] = []  # (start, end, text, source)
    spans = _capitalized_spans(text, toks)
    gaz = ctx.gazetteer
    if gaz is not None:
        for s, e, t in gaz.find(text, toks):
            if _inside_generic_phrase(text, s, e, spans):
                continue  # "Memorial" (a laureate) inside "Nobel Memorial Prize"
            cands.append((s, e, t, "gazetteer"))
    if ctx.type == "city":
        for m in _ONLINE.finditer(text):
            cands.append((m.start(), m.end(), ONLINE_CLAIM, "online"))
    for m in _NONE_STATEMENT.finditer(text):
        if ctx.type == "name":
            cands.append((m.start(), m.end(), NONE_CLAIM, "none"))
    if entities is not None:
        labels = PLACE_LABELS if ctx.type == "city" else NAME_LABELS
        for s, e, label in entities:
            if label in labels:
                cands.append((s, e, text[s:e], "ner"))
    else:
        for s, e in spans:
            cands.append((s, e, text[s:e], "rule"))
    # Reading order; where spans overlap, a known answer beats NER, NER beats the rule.
    rank = {"gazetteer": 0, "online": 0, "none": 0, "ner": 1, "rule": 2}
    cands.sort(key=lambda c: (c[0], rank[c[3]], -(c[1] - c[0])))
    kept: List[Tuple[int, int, str, str]] = []
    for c in cands:
        clash = [k for k in kept if c[0] < k[1] and k[0] < c[1]]
        if not clash:
            kept.append(c)
        elif all(rank[c[3]] < rank[k[3]] for k in clash):
            for k in clash:
                kept.remove(k)
            kept.append(c)
    kept.sort(key=lambda c: c[0])
    for s, e, t, source in kept:
        if source in ("none", "online"):
            return Extraction(t, False, how=source)
        name_toks = name_tokens(t)
        if not name_toks or _in_question(name_toks, qtoks):
            continue
        if source != "gazetteer" and _is_generic(name_toks):
            continue
        if ctx.type == "city" and source == "rule" and _ACRONYM_OR_NUMBER.search(t):
            continue  # "ACL-IJCNLP 2009" names an event, not a place
        if source == "rule" and ner_available:
            # The rules found an unknown capitalized phrase before any known answer: a NER
            # pipeline (if there is one) should decide what it is.
            return Extraction(None, False, needs_ner=True, how="rule?")
        if ctx.type == "city" and source != "online":
            e = _extend_place(text, s, e)
            t = text[s:e]
        return Extraction(t.strip(" .,;:"), False, how=source)
    return Extraction(None, False, how="none")
