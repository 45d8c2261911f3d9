"""Text primitives every answer type shares: folding, name tokens, fuzzy name matching, word
tokens with their spans, the sentence heuristics, capitalized spans and the gazetteer.

Nothing here knows about answer types; :mod:`defan_pytest.types` builds on it.

>>> name_tokens("Sir Alexander Fleming")
('alexander', 'fleming')
>>> names_match("Röntgen", "Wilhelm Conrad Roentgen")
True
"""
from __future__ import annotations

import bisect
import itertools
import re
import unicodedata
from functools import lru_cache
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

from rapidfuzz.distance import Indel

#: A word token of a text: ``(start, end, folded form)``.
Token = Tuple[int, int, str]

# --------------------------------------------------------------------------------------------
# text folding
# --------------------------------------------------------------------------------------------

# Letters that NFKD does not decompose into an ASCII base plus a combining mark.
_SPECIAL_FOLD = str.maketrans(
    {
        "ø": "o", "Ø": "o", "æ": "ae", "Æ": "ae", "œ": "oe", "Œ": "oe", "ß": "ss",
        "đ": "d", "Đ": "d", "ł": "l", "Ł": "l", "ı": "i", "þ": "th", "ð": "d",
        "’": "'", "‘": "'", "ʼ": "'", "`": "'", "´": "'",
        "–": "-", "—": "-", "‑": "-", "‐": "-", "−": "-",
    }
)

_FOOTNOTE = re.compile(r"\[(?:[a-z]|\d{1,3})\]")


def fold(text: str) -> str:
    """Case-fold and accent-fold ``text`` (``Röntgen`` -> ``rontgen``)."""
    text = text.translate(_SPECIAL_FOLD)
    if not text.isascii():
        text = "".join(
            c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)
        )
    return text.casefold()


def strip_footnotes(text: str) -> str:
    """Drop upstream footnote marks such as ``[b]`` or ``[14]``."""
    return _FOOTNOTE.sub("", text)


_APOSTROPHE = re.compile(r"'")
_NON_WORD = re.compile(r"[^0-9a-z]+")
_ARTICLES = frozenset({"the", "a", "an"})
_TITLES = frozenset(
    {
        "sir", "lord", "lady", "dame", "dr", "doctor", "prof", "professor", "mr", "mrs", "ms",
        "miss", "mme", "madame", "monsieur", "president", "king", "queen", "prince",
        "princess", "saint", "rev", "reverend", "baron", "hon", "honourable",
    }
)


_SUFFIXES = frozenset({"jr", "sr", "ii", "iii", "iv"})


@lru_cache(maxsize=65536)
def name_tokens(text: str) -> Tuple[str, ...]:
    """Tokens of a name after folding, punctuation, leading article and title removal."""
    text = _APOSTROPHE.sub("", fold(strip_footnotes(text)))
    tokens = _NON_WORD.sub(" ", text).split()
    # "The Lord Rayleigh", "Sir Alexander Fleming", "Dr. Jane Doe": drop any run of leading
    # articles and titles, but never the whole name (a film called "The Lord" stays itself).
    i = 0
    while i < len(tokens) - 1 and (tokens[i] in _ARTICLES or tokens[i] in _TITLES):
        i += 1
    j = len(tokens)
    while j - 1 > i and tokens[j - 1] in _SUFFIXES:  # "Martin Luther King Jr."
        j -= 1
    return tuple(tokens[i:j])


def _token_eq(a: str, b: str) -> bool:
    if a == b:
        return True
    # An initial ("R. H. Grubbs") stands for any token it begins.
    if len(a) == 1 or len(b) == 1:
        return a[0] == b[0] and not (a.isdigit() or b.isdigit())
    if a.isdigit() or b.isdigit():
        return False
    # Transliteration and typos: "roentgen" ~ "rontgen", "tchaikovsky" ~ "chaikovsky".
    if min(len(a), len(b)) >= 4:
        return Indel.normalized_similarity(a, b) >= 0.85
    return False


def _tokens_within(small: Sequence[str], big: Sequence[str]) -> bool:
    """Every token of ``small`` matches a distinct token of ``big``."""
    used = [False] * len(big)
    for s in small:
        for j, b in enumerate(big):
            if not used[j] and _token_eq(s, b):
                used[j] = True
                break
        else:
            return False
    return True


def _all_initials(tokens: Sequence[str]) -> bool:
    return all(len(t) == 1 for t in tokens)


def names_match(claim: str, gold: str) -> bool:
    """Fuzzy token match of two names (SCORING.md, names and places).

    A claim whose words are all in the gold matches (a surname alone, a middle name left out,
    ``Germany`` for ``West Germany``); so does a claim that only adds words to the gold (a
    middle name added).  Anything else, such as a different first name, contradicts.
    """
    c, g = name_tokens(claim), name_tokens(gold)
    if not c or not g or _all_initials(c):
        return False
    if _tokens_within(c, g):
        return True
    # The claim adds words (a middle name, "Olympiastadion Berlin"), but never in front of the
    # gold's first word: "West Germany" is another country than "Germany".
    if len(c) > len(g) and _token_eq(c[0], g[0]) and _tokens_within(g, c):
        return True
    # A long name spelt a little differently as a whole (a truncated or misspelt gold such as
    # "Manchester by the Sa"); short names need the token rule, so "Joan Smith" stays apart
    # from "John Smith".
    cj, gj = " ".join(c), " ".join(g)
    return min(len(cj), len(gj)) >= 12 and Indel.normalized_similarity(cj, gj) >= 0.92


# --------------------------------------------------------------------------------------------
# shared token helpers
# --------------------------------------------------------------------------------------------

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


_NON_ALNUM = re.compile(r"[^0-9a-z]")


@lru_cache(maxsize=4096)
def folded_tokens(text: str) -> List[Token]:
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
def question_tokens(question: str) -> FrozenSet[str]:
    """The folded word tokens of a question (cached: every paraphrase comes back per model)."""
    return frozenset(t[2] for t in folded_tokens(question))


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


def is_generic(tokens: Sequence[str]) -> bool:
    """Only the benchmark's own subject words ("Nobel Prize"): emphasis, never an answer."""
    return all(t in _GENERIC or t.isdigit() for t in tokens)


def in_question(tokens: Sequence[str], question_tokens: FrozenSet[str]) -> bool:
    """Every token is a word of the question (a claim that only repeats the question)."""
    return bool(tokens) and all(t in question_tokens for t in tokens)


INITIAL_OR_ABBREV = re.compile(r"\b(?:[A-Z]|Mrs?|Ms|Dr|St|Jr|Sr|Mt|Ft|No|Prof)\.$")


class SpanIndex:
    """Which positions lie inside any of a fixed set of spans ``[start, end)``: a binary search
    a query instead of a scan of every span, so that long responses stay linear."""

    def __init__(self, spans: Iterable[Tuple[int, int]]) -> None:
        ordered = sorted(spans)
        self._starts = [s for s, _ in ordered]
        self._reach = list(itertools.accumulate((e for _, e in ordered), max))  # furthest end so far

    def __contains__(self, pos: int) -> bool:
        i = bisect.bisect_right(self._starts, pos) - 1
        return i >= 0 and self._reach[i] > pos


class DisjointSpans:
    """A growing set of disjoint spans ``[start, end)`` that answers "does this span overlap
    one of them?" by binary search."""

    def __init__(self) -> None:
        self._starts: List[int] = []
        self._ends: List[int] = []

    def overlaps(self, start: int, end: int) -> bool:
        i = bisect.bisect_left(self._starts, end)  # spans starting before ``end``
        return i > 0 and self._ends[i - 1] > start  # disjoint and ordered: the last reaches furthest

    def add(self, start: int, end: int) -> None:
        i = bisect.bisect_left(self._starts, start)
        self._starts.insert(i, start)
        self._ends.insert(i, end)


def _ends_with_abbreviation(text: str, end: int) -> bool:
    """Does ``text[:end]`` end with an initial or an abbreviation and its full stop?

    Searched from a few characters before ``end`` only (the longest form, ``Prof.``, has five):
    the same answer as searching ``text[:end]``, without reading the text from its start, which
    made long responses quadratic.  (``\\b`` still sees the character before the start.)
    """
    return INITIAL_OR_ABBREV.search(text, max(0, end - 6), end) is not None


def looks_like_sentence(t: str) -> bool:
    """Prose rather than one name: a verb or function word, a sentence break, or mostly
    lowercase words where the text does use capitals ("Let me know if you need more")."""
    words = t.replace("’", "'").split()
    low = [w.strip(",;:()!?\"'").lower() for w in words]
    if any(w in _SENTENCE_WORDS for w in low):
        return True
    for m in re.finditer(r"[.!?](?=\s+\S)", t):
        if not _ends_with_abbreviation(t, m.end()):
            return True
    if any(c.isupper() for c in t):
        content = [w for w, l in zip(words, low) if l and l not in _PARTICLES and l[0].isalpha()]
        lower = [w for w in content if w[0].islower()]
        if content and len(lower) * 2 > len(content):
            return True
    elif len(words) > 4:
        return True
    return False


def capitalized_spans(text: str, toks: Sequence[Token]) -> List[Tuple[int, int]]:
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
            if gap.strip() == "." and not _ends_with_abbreviation(text, toks[j][1] + 1):
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

    def find(self, text: str, tokens: Optional[Sequence[Token]] = None) -> List[Tuple[int, int, str]]:
        """Non-overlapping known names in ``text`` (longest first at each start)."""
        if not self._entries:
            return []
        toks = tokens if tokens is not None else folded_tokens(text)
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

