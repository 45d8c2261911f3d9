"""Word tokens with their spans, and what the entity types read from them: the words of a
question, the benchmark's own subject words, the sentence heuristics, capitalized spans (the
no-NER fallback) and the gazetteer (a domain's known answers).

Nothing here knows about answer types; :mod:`defan_pytest.scoring.types` builds on it.
"""
from __future__ import annotations

import re
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

from defan_pytest.scoring.text.memo import MAX_MEMO_BYTES, short_text_memo
from defan_pytest.scoring.text.names import fold, name_tokens

#: A word token of a text: ``(start, end, folded form)``.
Token = Tuple[int, int, str]

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


_NON_ALNUM = re.compile(r"[^0-9a-z]")


# (a result weighs some 30 bytes a character: an eighth of a memo's default bytes)
@short_text_memo(maxsize=4096, max_bytes=MAX_MEMO_BYTES // 8)
def folded_tokens(text: str) -> List[Token]:
    """Word tokens with their spans, folded as :func:`name_tokens` folds them (cached: the
    same questions come back for every paraphrase and every model)."""
    out = []
    for m in _WORD.finditer(text):
        g = m.group()
        f = g.lower() if g.isascii() else fold(g)
        if not f.isalnum() or not f.isascii():
            if f.endswith("'s"):
                f = f[:-2]  # a possessive, as name_tokens drops it
            # Apostrophes and letters folding leaves behind: keep ASCII alphanumerics only.
            f = _NON_ALNUM.sub("", f.replace("'", ""))
        if f:
            out.append((m.start(), m.end(), f))
    return out


@short_text_memo(maxsize=4096)
def question_tokens(question: str) -> FrozenSet[str]:
    """The folded word tokens of a question (cached: every paraphrase comes back per model)."""
    return frozenset(t[2] for t in folded_tokens(question))


_SENTENCE_WORDS = frozenset(
    """is was were are am be been being won wins win received receives receive awarded award
    has have had did does do i i'm im it's its it this that these those there which who whom
    whose what when where why how believe think sorry unfortunately however according because
    not no answer would could should might may can cannot can't don't didn't isn't wasn't
    held took located take place ranked rank position placed year years
    given named known called went goes
    est était fut ont sont été ist wurde wurden sind fue fueron foi é fu è sono stato
    gewann erhielt ganó recibió ganhou recebeu vinse ricevette remporté reçu né née geboren
    nació nasceu ging bekam obtuvo obteve ottenne reçut obtint""".split()
)
# Words that may start a capitalized span but are not names ("The", "In 1901, ...").
_SPAN_STOP = frozenset(
    """the a an in on at of for and or but it its he she they his her their this that these
    those there here according as by from to with after before during while when where who
    what which why how i i'm im ive id youre were weve its dont cant wont yes no not however unfortunately sorry although though also
    based answer final note sure yes if so then the winner won is was were its it's please
    check visit see source sources as of my last knowledge update
    january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday
    en dans selon laut gemass gemäß im am nel nella em según segun secondo segundo durante
    ce cette je nous ich wir yo eu io es because since owing despite unlike instead perhaps
    maybe probably possibly actually indeed per via
    il elle elles ils er sie ella ellas ellos ele ela eles elas lui lei egli essa esso""".split()
)
_PARTICLES = frozenset(
    "von van der den de del della di da du do la le y bin al of the dos das d e ibn".split()
)
# Words that are never an answer by themselves, in any domain: articles and particles, and
# what a chat model says about itself or the exchange ("As an AI language model", "Note").
# A domain's own subject words ("Nobel Prize") are its profile's
# (:class:`defan_pytest.scoring.profile.DomainProfile`).
_NO_ANSWER = frozenset(
    """the of in for and a an on at to by
    ai language model chatgpt gpt openai knowledge cutoff data information wikipedia
    answer question note however sorry
    der die das le la les el los las il lo gli un une ein eine uno una um uma o os""".split()
)


def is_generic(tokens: Sequence[str], words: FrozenSet[str] = frozenset(), endings: Tuple[str, ...] = ()) -> bool:
    """Only words that are no answer: :data:`_NO_ANSWER`, a domain's subject ``words`` (and
    compounds ending in ``endings``), numbers.  Emphasis or topic, never an answer."""
    return all(
        t in _NO_ANSWER or t in words or t.isdigit() or (bool(endings) and t.endswith(endings)) for t in tokens
    )


def in_question(tokens: Sequence[str], question_tokens: FrozenSet[str]) -> bool:
    """Every token is a word of the question (a claim that only repeats the question)."""
    return bool(tokens) and all(t in question_tokens for t in tokens)


INITIAL_OR_ABBREV = re.compile(r"\b(?:[A-Z]|Mrs?|Ms|Dr|St|Jr|Sr|Mt|Ft|No|Prof|vs|Vs)\.$")  # "Kramer vs. Kramer"


def _ends_with_abbreviation(text: str, end: int) -> bool:
    """Does ``text[:end]`` end with an initial or an abbreviation and its full stop?

    Searched from a few characters before ``end`` only (the longest form, ``Prof.``, has five):
    the same answer as searching ``text[:end]``, without reading the text from its start, which
    made long responses quadratic.  (``\\b`` still sees the character before the start.)
    """
    return INITIAL_OR_ABBREV.search(text, max(0, end - 6), end) is not None


_TITLE_ARTICLES = frozenset("la le les el los las il lo gli der die das det den het een os".split())


@short_text_memo(maxsize=8192)
def looks_like_sentence(t: str) -> bool:
    """Prose rather than one name: a verb or function word, a sentence break, or mostly
    lowercase words where the text does use capitals ("Let me know if you need more")."""
    words = t.replace("’", "'").split()
    low = [w.strip(",;:()!?\"'").lower() for w in words]
    for i, w in enumerate(low):
        if w in _SENTENCE_WORDS:
            # "do" between two capitalized words is a name particle ("Estádio do Maracanã").
            if w in _PARTICLES and 0 < i < len(words) - 1 and words[i - 1][:1].isupper() and words[i + 1][:1].isupper():
                continue
            return True
    for m in re.finditer(r"[.!?](?=\s+\S)", t):
        if not _ends_with_abbreviation(t, m.end()):
            return True
    if any(c.isupper() for c in t):
        content = [w for w, l in zip(words, low) if l and l not in _PARTICLES and l[0].isalpha()]
        lower = [w for w in content if w[0].islower()]
        # A short title in sentence case, as Romance languages write titles, opens with its
        # article ("La forma del agua", "Il postino"): no verb, no stop, so no sentence.
        title_case = len(words) <= 6 and words[0][:1].isupper() and low[0] in _TITLE_ARTICLES
        if content and len(lower) * 2 > len(content) and not title_case:
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
        if a <= j and not all(toks[x][2] in _PARTICLES for x in range(a, j + 1)):
            # (a particle alone is no name: the Dutch article of "De prijs ging naar X")
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
        # First token -> the most tokens of a known name starting with it: most words of a
        # response start no known name, and one dict probe says so.
        self._first: Dict[str, int] = {}
        for n in names:
            self.add(n)

    def add(self, name: str) -> None:
        toks = name_tokens(name)
        if not toks:
            return
        self._entries.setdefault(toks, name.strip())
        self._longest = max(self._longest, len(toks))
        self._first[toks[0]] = max(self._first.get(toks[0], 0), len(toks))

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
        first = self._first
        while i < n:
            hit = None
            longest = first.get(toks[i][2], 0)
            # A known name is a proper noun: it must start with a capital or a digit as written
            # ("the film spread its wings" does not name the film "Wings").
            c = text[toks[i][0]]
            if longest and (c.isupper() or c.isdigit()):
                for k in range(min(longest, n - i), 0, -1):
                    key = tuple(t[2] for t in toks[i: i + k])
                    if key in self._entries:
                        hit = k
                        break
            if hit:
                s, e = toks[i][0], toks[i + hit - 1][1]
                out.append((s, e, text[s:e]))
                i += hit
            else:
                i += 1
        return out
