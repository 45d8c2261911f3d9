"""Text primitives every answer type shares: folding, name tokens, fuzzy name matching, word
tokens with their spans, the sentence heuristics, capitalized spans and the gazetteer.

Nothing here knows about answer types; :mod:`defan_pytest.scoring.types` builds on it.

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
# A possessive "'s" is not part of the name ("Gary Oldman's performance" names Gary Oldman).
_POSSESSIVE = re.compile(r"(?<=[^\W_])'s\b")
_NON_WORD = re.compile(r"[^0-9a-z]+")
_ARTICLES = frozenset({"the", "a", "an"})
_TITLES = frozenset(
    {
        "sir", "lord", "lady", "dame", "dr", "doctor", "prof", "professor", "mr", "mrs", "ms",
        "miss", "mme", "madame", "monsieur", "president", "king", "queen", "prince",
        "princess", "saint", "rev", "reverend", "baron", "hon", "honourable",
        # peerage (SCORING.md clarification 9: in golds as well as answers, "The Lord Todd")
        # ("Earl" and "Duke" are left out: as a first word they are more often given names,
        # "Earl Wilbur Sutherland Jr.", "Duke Ellington".)
        "baroness", "viscount", "viscountess", "countess", "marquess", "marquis", "duchess",
        "rt", "herr", "frau", "signor", "senor",
    }
)
# Titles that stand for a given name: "The Lord Todd" and "Sir Fleming" name a person by title
# and surname, so a claim may add the given name in front ("Alexander Todd").
_PEERAGE_TITLES = frozenset(
    {"sir", "lord", "lady", "dame", "baron", "baroness", "viscount", "viscountess", "countess",
     "marquess", "marquis", "duchess"}
)


_SUFFIXES = frozenset({"jr", "sr", "ii", "iii", "iv", "frs", "kbe", "obe", "cbe", "mbe", "om", "phd"})


@lru_cache(maxsize=65536)
def name_tokens(text: str) -> Tuple[str, ...]:
    """Tokens of a name after folding, punctuation, leading article and title removal."""
    text = _APOSTROPHE.sub("", _POSSESSIVE.sub("", fold(strip_footnotes(text))))
    tokens = _NON_WORD.sub(" ", text).split()
    # "The Lord Rayleigh", "Sir Alexander Fleming", "Dr. Jane Doe": drop any run of leading
    # articles and titles, but never the whole name (a film called "The Lord" stays itself).
    i = 0
    while i < len(tokens) - 1 and (
        tokens[i] in _ARTICLES or (tokens[i] in _TITLES and tokens[i + 1] != "of")
    ):  # "The Lord of the Rings", "The King of Comedy": a title followed by "of" is no honorific
        i += 1
    j = len(tokens)
    while j - 1 > i and tokens[j - 1] in _SUFFIXES:  # "Martin Luther King Jr."
        j -= 1
    return tuple(tokens[i:j])


@lru_cache(maxsize=16384)
def _titled(text: str) -> bool:
    """Is ``text`` a title and a surname ("The Lord Todd", "Lord Rayleigh", "Sir Fleming")?"""
    tokens = _NON_WORD.sub(" ", fold(strip_footnotes(text))).split()
    i = 0
    while i < len(tokens) and tokens[i] in _ARTICLES:
        i += 1
    return i < len(tokens) - 1 and tokens[i] in _PEERAGE_TITLES and len(name_tokens(text)) == 1


# SCORING.md clarification 9: a common short form of a given name is the same first name
# ("Jim" = "James"), and so is the same name in another language ("Maria" = "Marie",
# "Wilhelm" = "William").  One line per name: its forms; a short form on several lines
# ("Al", "Ted") is each of those names, but two different full names never meet through it.
_GIVEN_NAMES = """
alexander aleksandr alexandr aleksander alexandre alessandro alejandro alexandros alex sasha sandy
mary maria marie mariya marija
john jon johann johannes jan jean juan giovanni joao jack johnny hans
james jim jimmy jamie jacques giacomo jaime
william wilhelm guillaume guillermo willem bill billy will willy willie
robert roberto bob bobby rob robbie bert
richard ricardo riccardo dick rick ricky rich
thomas tomas tommaso tom tommy
michael michel mikhail michele miguel mihail mike mick mickey
david dave davy davide
daniel dan danny daniele
joseph josef jozef giuseppe jose joe joey
edward eduard edouard eduardo edoardo ed eddie ted teddy ned
theodore theodor teodoro ted teddy theo
albert alberto al bert
alfred alfredo al alf fred
alan allan allen al
samuel sam sammy
benjamin ben benny
christopher chris kit
anthony antony antoine antonio anton tony
stephen steven stefan stephane etienne esteban stefano steve stevie
andrew andre andreas andrei andrey andres andrea andy drew
frederick frederic friedrich federico fred freddie freddy fritz
henry henri heinrich enrique enrico henrik harry hank hal
harold harry hal
lawrence laurence lorenzo laurent larry
elizabeth elisabeth elisabetta liz lizzie beth betty bess
katherine catherine kathryn katharine catharine caterina ekaterina yekaterina kate katie kathy cathy
margaret margarethe marguerite margarita margherita meg peggy maggie
susan suzanne susanna sue susie
jennifer jenny jen
patrick patricio pat paddy
patricia pat patty trish
nicholas nicolas nikolai nikolay niccolo nicola nick nicky
matthew matthias matteo mateo matt
gregory gregor gregorio greg
jeffrey geoffrey jeff geoff
kenneth ken kenny
ronald ron ronnie
donald don donnie
eugene eugen eugenio gene
walter walther gualtiero walt wally
charles carl karl carlos carlo charlie chuck
francis francois francesco francisco franz frank frankie
franklin frank
gerald gerard gerhard gerardo jerry gerry
jerome jerry
leonard leonardo len lenny leo
philip phillip philippe filippo felipe phil
raymond raimund ramon ray
timothy tim timmy
vincent vincenzo vicente vince
abraham abram abe
herbert herb bert
stanley stan
martin martino marty
ernest ernst ernesto ernie
louis ludwig luis luigi lewis lou louie
augustus august augusto auguste gus
maximilian max
emmanuel emanuel manuel manny
paul paolo pablo pavel paulo
peter pierre pietro pedro pyotr piotr petr pete
george georg georges giorgio jorge georgy georgi
"""
_NAME_GROUPS: Dict[str, FrozenSet[int]] = {}
for _i, _line in enumerate(_GIVEN_NAMES.strip().splitlines()):
    for _w in _line.split():
        _NAME_GROUPS[_w] = _NAME_GROUPS.get(_w, frozenset()) | {_i}
del _i, _line, _w

# Transliteration (clarification 9: "Aleksandr" = "Alexander"): spellings that differ only in
# how a sound is written ("ks"/"x", "v"/"w", "i"/"y", "k"/"c", "s"/"z", an "h" after a consonant as in
# "Gandhi"/"Ghandi", doubled letters) share a key.
_TRANSLIT = [
    (re.compile(r"x"), "ks"), (re.compile(r"ph"), "f"), (re.compile(r"w"), "v"),
    (re.compile(r"[yj]"), "i"), (re.compile(r"[cq]"), "k"), (re.compile(r"z"), "s"),
    (re.compile(r"(?<=[^aeiou])h"), ""),
    (re.compile(r"ou"), "u"), (re.compile(r"(.)\1+"), r"\1"),
]


@lru_cache(maxsize=16384)
def _translit_key(token: str) -> str:
    for pattern, repl in _TRANSLIT:
        token = pattern.sub(repl, token)
    return token


def _token_eq(a: str, b: str) -> bool:
    if a == b:
        return True
    # An initial ("R. H. Grubbs") stands for any token it begins.
    if len(a) == 1 or len(b) == 1:
        return a[0] == b[0] and not (a.isdigit() or b.isdigit())
    if a.isdigit() or b.isdigit():
        return False
    ga = _NAME_GROUPS.get(a)
    if ga is not None:
        gb = _NAME_GROUPS.get(b)
        if gb is not None and ga & gb:
            return True  # "Jim" = "James", "Maria" = "Marie"
    # Transliteration and typos: "roentgen" ~ "rontgen", "tchaikovsky" ~ "chaikovsky",
    # "aleksandr" ~ "alexander" (by their transliteration keys).
    if min(len(a), len(b)) >= 4:
        if Indel.normalized_similarity(a, b) >= 0.85:
            return True
        ka, kb = _translit_key(a), _translit_key(b)
        return ka == kb or (min(len(ka), len(kb)) >= 4 and Indel.normalized_similarity(ka, kb) >= 0.85)
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


def _full_word_shared(c: Sequence[str], g: Sequence[str]) -> bool:
    """Do the names share a word that is not an initial?  ("Paris" is not "James P. Allison":
    an initial stands for a word of a name that also matches otherwise.)"""
    if all(len(b) > 1 for b in g):
        return True  # no initial in the gold: a claim word that is no initial matched a word
    return any(len(a) > 1 and any(len(b) > 1 and _token_eq(a, b) for b in g) for a in c)


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
    if _tokens_within(c, g) and _full_word_shared(c, g):
        return True
    # The claim adds words (a middle name, "Olympiastadion Berlin"), but never in front of the
    # gold's first word: "West Germany" is another country than "Germany".  A gold that is a
    # title and a surname ("The Lord Todd") has no first word to keep: "Alexander Todd" matches.
    if len(c) > len(g) and (_token_eq(c[0], g[0]) or _titled(gold)) and _tokens_within(g, c):
        return True
    # A long name spelt a little differently as a whole (a truncated or misspelt gold such as
    # "Manchester by the Sa"); short names need the token rule, so "Joan Smith" stays apart
    # from "John Smith".
    cj, gj = " ".join(c), " ".join(g)
    return min(len(cj), len(gj)) >= 12 and Indel.normalized_similarity(cj, gj) >= 0.92


def word_alternation(words: Iterable[str]) -> str:
    """A regex alternation of many words, built as a trie (``f(?:ive|our|irst)``): the regex
    engine then follows one branch per letter instead of trying every word at every position
    (month names of six languages, number words).  Longer words win over their prefixes.

    >>> word_alternation(["four", "fourth", "five"])
    'f(?:ive|our(?:th)?)'
    """
    trie: Dict[str, Dict] = {}
    for w in words:
        node = trie
        for c in w:
            node = node.setdefault(c, {})
        node[""] = {}

    def walk(node: Dict[str, Dict]) -> str:
        alts = [re.escape(c) + walk(sub) for c, sub in sorted(node.items()) if c]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        if "" in node:  # a word ends here: what follows is optional
            body = ("(?:" + body + ")" if len(alts) == 1 and len(body) > 1 else body) + "?"
        return body

    return walk(trie)


# --------------------------------------------------------------------------------------------
# the language of a response (SCORING.md clarification 4)
# --------------------------------------------------------------------------------------------

# A few function words per language, none of them a name particle ("de", "la", "van", "von",
# "del", "da": "Universidad de Chile" in an English sentence is still English).  Only the
# numbers (a comma for decimals) and number words depend on the language, so a handful of
# frequent words is enough; no language model is loaded.
_LANGUAGE_WORDS = {
    "en": """the is was were are of and to in which with has have it this that by for on at from
        be been answer ranked born won there what who not was held""",
    "fr": """les est était été une au aux et où qui dans pour par sur pas aucun avec cette sont fut
        ont elle l d qu n réponse prix classée classé né née rang lauréat décerné""",
    "de": """die das ist war wurde und im dem nicht ein eine auf mit für zu platz rang geboren kein
        keine wurden belegte am antwort es sich bei wird nach preis verliehen""",
    "es": """los las fue es y una que se por con puesto nació ningún premio lugar respuesta su al
        como fueron está ha otorgó""",
    "pt": """o os foi é dos das em uma não na no posição nasceu nenhum prêmio prémio ficou
        resposta ao pelo pela com seu sua""",
    "it": """il lo gli è stato stata della che nel nella fu non posto nato nata nessun premio
        classifica si sono alla dei delle risposta""",
}
_WORD_LANGS: Dict[str, Tuple[str, ...]] = {}
for _lang, _words in _LANGUAGE_WORDS.items():
    for _w in _words.split():
        _WORD_LANGS[_w] = _WORD_LANGS.get(_w, ()) + (_lang,)
del _lang, _words, _w
_LETTERS = re.compile(r"[^\W\d_]+")


def language(text: str, limit: int = 4000) -> str:
    """The language of a response, from a few function words: ``en``, ``de``, ``fr``, ``es``,
    ``pt``, ``it``, or ``""`` when it has no such word (a bare value).  Reads the first
    ``limit`` characters only.

    >>> language("Die Universität belegte 2022 den 386. Platz"), language("It was 386"), language("386")
    ('de', 'en', '')
    """
    counts: Dict[str, int] = {}
    for m in _LETTERS.finditer(text, 0, limit):
        for lang in _WORD_LANGS.get(m.group().lower(), ()):
            counts[lang] = counts.get(lang, 0) + 1
    if not counts:
        return ""
    en = counts.pop("en", 0)
    if counts:
        best = max(counts, key=lambda k: (counts[k], k == "fr"))
        if counts[best] > en:
            return best
    return "en" if en else ""


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
            if f.endswith("'s"):
                f = f[:-2]  # a possessive, as name_tokens drops it
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
    answer question note however sorry match game tournament
    nobelpreis prix preis premio prêmio prémio physik physique fisica física chimie
    chemie quimica química chimica medecine médecine medizin medicina litterature littérature
    literatur literatura letteratura paix frieden paz pace economie économie economia
    economía wirtschaftswissenschaften laureat lauréat preistrager preisträger ganador vencedor
    vincitore gagnant meilleur meilleure bester beste mejor melhor miglior pelicula película
    filme coupe monde weltmeisterschaft copa mundo mundial coppa mondo der die das le la les
    el los las il lo gli un une ein eine uno una um uma o os""".split()
)


# German compounds of the benchmark's words ("Literaturnobelpreis", "Friedensnobelpreises").
_GENERIC_ENDINGS = ("preis", "preises", "preistrager", "preistragerin")


def is_generic(tokens: Sequence[str]) -> bool:
    """Only the benchmark's own subject words ("Nobel Prize"): emphasis, never an answer."""
    return all(t in _GENERIC or t.isdigit() or t.endswith(_GENERIC_ENDINGS) for t in tokens)


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
