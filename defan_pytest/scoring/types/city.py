"""The ``city`` answer type: where a conference or a final was held.

The city part must match; a region or country the claim adds must not contradict the gold's
(``Portland, Maine`` is not ``Portland, Oregon``), and a claim naming only the gold city's
region or country (``Hawaii`` for ``Honolulu, Hawaii``) does not match.  A conference gold that
says the event was virtual accepts only ``online``, not the city once planned (SCORING.md
clarification 18); a city's other names (``Madras`` = ``Chennai``) match it; a response that says the event was held virtually claims ``online``
even when it names the planned city (SCORING.md clarification 10).
"""
from __future__ import annotations

import bisect
import re
import unicodedata
from typing import FrozenSet, List, Optional, Tuple

from defan_pytest.scoring.text.countries import country_codes
from defan_pytest.scoring.text.language import language
from defan_pytest.scoring.text.memo import short_text_memo
from defan_pytest.scoring.text.names import fold, name_tokens, names_match, strip_footnotes
from defan_pytest.scoring.text.online_words import ONLINE_WORD, OTHER_ONLINE_WORD
from defan_pytest.scoring.text.places import is_place_name, native_key, places
from defan_pytest.scoring.text.tokens import looks_like_sentence
from defan_pytest.scoring.types.entity import Candidate, EntityAnswerType
from defan_pytest.scoring.types.base import ONLINE_CLAIM, Context, Gold

#: Named-entity labels that can be a place answer.
PLACE_LABELS = frozenset({"GPE", "LOC", "FAC"})

# Any language's word for online (a Thai or Hindi word may end in a vowel sign: no \b there).
_ONLINE = re.compile(rf"(?<!\w)(?:{ONLINE_WORD}|{OTHER_ONLINE_WORD})(?!\w)", re.I)
_OTHER_ONLINE = re.compile(rf"(?<!\w){OTHER_ONLINE_WORD}(?!\w)", re.I)
# A statement that the event itself was held online (not "the papers are online"): a verb of
# holding before the word, or "fully virtual", "virtual format", "online-only".
_HELD_ONLINE = re.compile(
    r"\b(?:held|took\s+place|hosted|conducted|organi[sz]ed|run|moved|switched|shifted|"
    r"transitioned|converted|went|happened|staged|s['’]est\s+tenue?|a\s+eu\s+lieu|fand|"
    r"se\s+celebr[óo]|se\s+realiz[óo]|foi\s+realizad[ao]|si\s+[èe]\s+svolt[ao])\b[^.\n;]{0,40}?"
    rf"\b{ONLINE_WORD}\b"
    r"|\b(?:was|were|is|became)\s+(?:an?\s+)?(?:entirely\s+|fully\s+|completely\s+|purely\s+)?(?:online|virtual)\b"
    r"|\b(?:fully|entirely|completely|purely|all)[\s-]+(?:online|virtual)\b"
    r"|\bvirtual\s+(?:format|conference|event|meeting|edition|venue)\b|\bonline[\s-]+only\b",
    re.I,
)
# "Digitalt, på grund av covid-19-pandemin": a clause after a comma is more than one answer.
_REASON = re.compile(r",\s*\S+\s+\S+\s+\S+")
_NEGATED = re.compile(r"\bnot\b|n['’]t\b|\binstead\s+of\b|\brather\s+than\b|\bnicht\b|\bpas\b|\bno\b|\bnão\b|\bnon\b", re.I)
_CLAUSE_BREAK = re.compile(r".*[,.;:!?]", re.S)


# Every negation _NEGATED reads contains one of these (a substring test rules most text out).
_NEGATION_HINTS = ("no", "n't", "n’t", "instead", "rather", "nicht", "pas", "não")


def _negated(text: str, start: int) -> bool:
    """Is the statement at ``start`` negated within its clause ("was not held online",
    "instead of being held online"; not "No, it was held online")?"""
    before = text[max(0, start - 30): start]
    low = before.lower()
    if not any(h in low for h in _NEGATION_HINTS):
        return False
    m = _CLAUSE_BREAK.match(before)
    return _NEGATED.search(before[m.end():] if m else before) is not None
_VIRTUAL = re.compile(r"\b(?:virtual(?:ly)?|online)\b.*$", re.I)

_EDITION_YEAR = re.compile(r"(?<!\d)(?:19|20)\d\d(?!\d)")
_SENTENCE_BREAK = re.compile(r"[.!?](?:\s|$)|\n")
_CLAUSE_STOP = re.compile(r"[.;,!?\n]")


@short_text_memo(maxsize=4096)
def _question_years(question: str) -> FrozenSet[str]:
    return frozenset(_EDITION_YEAR.findall(question))


class _Editions:
    """Which edition each online statement of one text is about: the years and the sentence
    and clause breaks of the text, found once (one pass each), so that each statement costs a
    binary search, however many there are."""

    def __init__(self, text: str, asked: FrozenSet[str]) -> None:
        self.asked = asked
        years = [(m.start(), m.group()) for m in _EDITION_YEAR.finditer(text)]
        self.year_at = [p for p, _ in years]
        self.year = [y for _, y in years]
        self.sentence_starts = [m.end() for m in _SENTENCE_BREAK.finditer(text)]
        self.clause_ends = [m.start() for m in _CLAUSE_STOP.finditer(text)]

    def other(self, start: int, end: int) -> bool:
        """Is the statement at ``[start, end)`` about another edition than the asked one?  Its
        year is the nearest one before it in its sentence (within 200 characters: "ACL 2020
        was supposed to be in Seattle but went virtual"), else the first one after it in its
        clause (within 100: "it went virtual in 2020"); none: the asked edition."""
        i = bisect.bisect_right(self.sentence_starts, start) - 1
        lo = max(start - 200, self.sentence_starts[i] if i >= 0 else 0)
        j = bisect.bisect_right(self.year_at, start - 4) - 1  # the last year that ends by start
        if j >= 0 and self.year_at[j] >= lo:
            return self.year[j] not in self.asked
        k = bisect.bisect_left(self.clause_ends, end)
        hi = min(end + 100, self.clause_ends[k] if k < len(self.clause_ends) else end + 100)
        j = bisect.bisect_left(self.year_at, end)
        if j < len(self.year_at) and self.year_at[j] + 4 <= hi:
            return self.year[j] not in self.asked
        return False


def _editions(text: str, ctx: Optional[Context]) -> Optional[_Editions]:
    """The editions of ``text`` when the question names a year (else no statement can be
    about another edition)."""
    if ctx is None:
        return None
    asked = _question_years(ctx.question)
    return _Editions(text, asked) if asked else None


# --------------------------------------------------------------------------------------------
# places
# --------------------------------------------------------------------------------------------

_US_STATES = {
    "al": "alabama", "ak": "alaska", "az": "arizona", "ar": "arkansas", "ca": "california",
    "co": "colorado", "ct": "connecticut", "de": "delaware", "fl": "florida", "ga": "georgia",
    "hi": "hawaii", "id": "idaho", "il": "illinois", "in": "indiana", "ia": "iowa",
    "ks": "kansas", "ky": "kentucky", "la": "louisiana", "me": "maine", "md": "maryland",
    "ma": "massachusetts", "mi": "michigan", "mn": "minnesota", "ms": "mississippi",
    "mo": "missouri", "mt": "montana", "ne": "nebraska", "nv": "nevada",
    "nh": "new hampshire", "nj": "new jersey", "nm": "new mexico", "ny": "new york",
    "nc": "north carolina", "nd": "north dakota", "oh": "ohio", "ok": "oklahoma",
    "or": "oregon", "pa": "pennsylvania", "ri": "rhode island", "sc": "south carolina",
    "sd": "south dakota", "tn": "tennessee", "tx": "texas", "ut": "utah", "vt": "vermont",
    "va": "virginia", "wa": "washington", "wv": "west virginia", "wi": "wisconsin",
    "wy": "wyoming", "pr": "puerto rico",
}
_CA_PROVINCES = {
    "bc": "british columbia", "ab": "alberta", "on": "ontario", "qc": "quebec",
    "ns": "nova scotia", "nb": "new brunswick", "mb": "manitoba", "sk": "saskatchewan",
}
_AU_STATES = {
    "nsw": "new south wales", "vic": "victoria", "qld": "queensland", "wa": "western australia",
    "sa": "south australia", "tas": "tasmania", "act": "australian capital territory",
}
_COUNTRY_ALIASES = {
    "usa": "united states", "us": "united states", "u s": "united states",
    "u s a": "united states", "united states of america": "united states",
    "america": "united states", "uk": "united kingdom", "u k": "united kingdom",
    "great britain": "united kingdom", "britain": "united kingdom", "england": "united kingdom",
    "scotland": "united kingdom", "korea": "south korea", "republic of korea": "south korea",
    "czechia": "czech republic", "prc": "china", "peoples republic of china": "china",
}
# region (folded) -> its country (folded)
_REGION_COUNTRY = {
    **{v: "united states" for v in _US_STATES.values()},
    **{v: "canada" for v in _CA_PROVINCES.values()},
    **{v: "australia" for v in _AU_STATES.values()},
}


def _place_part(text: str) -> str:
    key = " ".join(name_tokens(text))
    return _COUNTRY_ALIASES.get(key, key)


def _region_forms(part: str) -> set:
    """Possible meanings of a region part (``wa`` is Washington or Western Australia)."""
    forms = {part}
    for table in (_US_STATES, _CA_PROVINCES, _AU_STATES):
        if part in table:
            forms.add(table[part])
    return forms


def _country_of(part: str) -> Optional[str]:
    """The country a folded place part names (itself, when CLDR names a country so in any
    language), or the country of a region it names; ``None`` otherwise."""
    if country_codes(part):
        return part
    return _REGION_COUNTRY.get(part)


# The comma of Arabic script, the ideographic and the full-width comma are commas.
_OTHER_COMMAS = str.maketrans({"،": ",", "、": ",", "，": ","})


def _raw_parts(text: str) -> List[str]:
    return [p.strip() for p in strip_footnotes(text).translate(_OTHER_COMMAS).split(",")]


@short_text_memo(maxsize=8192)
def _split_place(text: str) -> Tuple[str, Tuple[str, ...]]:
    parts = [p for p in (_place_part(x) for x in _raw_parts(text)) if p]
    if not parts:
        return "", ()
    return parts[0], tuple(parts[1:])


def _other_name(c_city: str, g_city: str, g_rest: Tuple[str, ...], written: str = "") -> Optional[bool]:
    """Is ``c_city`` (``written`` so in the claim) another name of the gold's city (True), the
    name of another place (False), or unknown to the gazetteer (None)?"""
    index = places()
    country = next((x for x in (_country_of(p) for p in g_rest) if x), None)
    gold_city = index.city(g_city, country)
    if gold_city is None:
        return None
    ids = index.ids.get(c_city)
    if ids is None and written and not written.isascii():
        ids = index.native.get(native_key(written))
    if ids is None:
        return None
    return gold_city in ids


def places_match(claim: str, gold: str) -> bool:
    """The city part must match; a region or country the claim adds must not contradict.

    ``Seattle`` matches ``Seattle, Washington``; ``Seattle, WA, USA`` matches it too;
    ``Portland, Maine`` does not match ``Portland, Oregon``.  Another name of the city matches
    (``Madras`` = ``Chennai``); a claim that adds words naming another place does not
    (``Santiago de Compostela`` for ``Santiago, Chile``; clarification 18).
    """
    c_city, c_rest = _split_place(claim)
    g_city, g_rest = _split_place(gold)
    if not c_city or not g_city:
        return False
    written = _raw_parts(claim)[0] if not claim.isascii() else ""
    if names_match(c_city, g_city) or (written and names_match(written, _raw_parts(gold)[0])):
        # (a claim in another script is also compared as written: an abjad by consonants)
        if c_city != g_city and len(c_city.split()) > len(g_city.split()) and _other_name(c_city, g_city, g_rest) is False:
            return False  # the added words make another place's name
    elif _other_name(c_city, g_city, g_rest, written) is not True:
        return False
    g_set = set(g_rest)
    g_countries = {x for x in (_country_of(p) for p in g_rest) if x}
    g_codes = frozenset().union(*(country_codes(c) for c in g_countries))
    gold_has_region = any(p in _REGION_COUNTRY for p in g_rest)
    for part in c_rest:
        forms = _region_forms(part)
        if forms & g_set or forms & g_countries or any(country_codes(f) & g_codes for f in forms):
            continue  # the same region, or the country of the gold's region (in any language)
        known = [f for f in forms if _country_of(f)]
        if not known or not g_rest:
            continue  # an unknown qualifier, or a gold with nothing to contradict
        if not gold_has_region and any(_REGION_COUNTRY.get(f) in g_countries for f in known):
            continue  # "Sydney, NSW" for "Sydney, Australia"
        return False
    return True



_PLACE_OK_PART = re.compile(r"^[^\W\d_][\w .'’()-]*$")


def _place_part_ok(part: str) -> bool:
    """A part of a place: a letter, then letters (with their combining marks: Tamil and
    Devanagari vowel signs), spaces and ``.'’()-``."""
    if part.isascii() or not any(unicodedata.combining(c) or unicodedata.category(c) == "Mc" for c in part):
        return _PLACE_OK_PART.match(part) is not None
    kept = "".join(c for c in part if not (unicodedata.combining(c) or unicodedata.category(c) == "Mc"))
    return _PLACE_OK_PART.match(kept) is not None


def _bare_place(t: str, ctx: Context) -> Optional[str]:
    if len(t) > 90:
        return None
    if _ONLINE.search(t) and len(t.split()) <= 5 and not looks_like_sentence(t) and not _REASON.search(t):
        return ONLINE_CLAIM
    gaz = ctx.gazetteer
    if gaz is not None and t in gaz:
        return t
    parts = _raw_parts(t)
    if len(parts) > 4 or any(not p or len(p.split()) > 5 for p in parts):
        return None
    if looks_like_sentence(t) or not all(_place_part_ok(p) for p in parts):
        return None
    if re.search(r"\s+(?:and|&|or)\s+|;|/", t):
        return None  # two places
    return t


_ACRONYM_OR_NUMBER = re.compile(r"\d|\b[A-Z]{3,}\b")


def _extend_place(text: str, s: int, e: int) -> int:
    """Extend a place candidate over ", Region" and ", Country" that follow it."""
    for _ in range(2):
        m = re.match(r",\s*((?:[A-Z][\w.'’-]*)(?:\s+[A-Z][\w.'’-]*){0,3})(?=\s*(?:[,.;:!?)]|\s+(?:in|on|from|during|at|for|and|was|is|hosted|which|where|with)\b|$))", text[e:])
        if not m:
            break
        e += m.end()
    return e



class CityType(EntityAnswerType):
    """Places: the city must match, added regions and countries must not contradict."""

    name = "city"
    ner_labels = PLACE_LABELS
    labels: FrozenSet[str] = frozenset(
        """answer final result city location venue place host site held where ville lieu stadt
        ort ciudad lugar sede cidade local citta luogo""".split()
    )

    def gold_text(self, text: str) -> Tuple[str, bool]:
        if _VIRTUAL.search(text):
            return _VIRTUAL.sub("", text).strip().rstrip("/,").strip(), True
        return text, False

    def bare(self, text: str, ctx: Context) -> Optional[str]:
        # A virtual gold answered as written ("Nashville, Tennessee Virtual/Online due to
        # COVID-19"): the place it names and the word online, one bare answer (clarification 10).
        place, virtual = self.gold_text(text)
        if virtual and text.count("\n") == 0 and (not place or _bare_place(place, ctx) is not None):
            return ONLINE_CLAIM
        return _bare_place(text, ctx)

    def statements(self, text: str, ctx: Optional[Context] = None) -> List[Candidate]:
        out: List[Candidate] = []
        editions: Optional[_Editions] = None
        built = False
        for m in _ONLINE.finditer(text):
            if _negated(text, m.start()):
                continue  # "not held online"
            if not built:  # found once, on the first statement (most responses have none)
                editions, built = _editions(text, ctx), True
            if editions is not None and editions.other(m.start(), m.end()):
                continue  # "ECCV 2020 was virtual" in an answer about ECCV 2018
            out.append((m.start(), m.end(), ONLINE_CLAIM, "online"))
        return out

    def override(self, text: str, ctx: Context) -> Optional[str]:
        # "CVPR 2020 was planned for Seattle, WA, but moved to a fully virtual format": the
        # event was held online, whatever city it names (and before any marked city).
        editions: Optional[_Editions] = None
        built = False
        for m in _HELD_ONLINE.finditer(text):
            # "was not held online", "instead of online": the words just before count too.
            if _negated(text, m.start()) or _NEGATED.search(m.group()):
                continue
            if not built:  # found once, on the first statement (most responses have none)
                editions, built = _editions(text, ctx), True
            if editions is not None and editions.other(m.start(), m.end()):
                continue  # "ACL 2020 went virtual", said in an answer about ACL 2019
            return ONLINE_CLAIM
        other = _OTHER_ONLINE.search(text)  # another language's word ("Konference proběhla virtuálně")
        return ONLINE_CLAIM if other and not _negated(text, other.start()) and language(text) != "en" else None

    def rejects(self, text: str, source: str) -> bool:
        # "ACL-IJCNLP 2009" names an event, not a place.
        return source == "rule" and bool(_ACRONYM_OR_NUMBER.search(text))

    def rejects_span(self, text: str, start: int, end: int, source: str) -> bool:
        # "Hội nghị ICCV 1999 được tổ chức tại Corfu", "Die Konferenz fand in Long Beach statt":
        # a sentence's first word is capitalized in any language (and German nouns are);
        # followed by a lower-case word and no place the gazetteer knows, such a run of up to
        # three words is no place ("Seattle hosted CVPR" keeps Seattle).
        if source != "rule" or text.count(" ", start, end) > 2:
            return False
        before = text[:start].rstrip(" \t\"'“‘*_")
        if before and before[-1] not in ".!?\n:":
            return False
        after = text[end:].lstrip(" \t")
        if not after[:1].islower():
            return False
        return not is_place_name(text[start:end])

    def finish(self, text: str, start: int, end: int) -> int:
        return _extend_place(text, start, end)

    def correct(self, claim: str, gold: Gold) -> bool:
        if gold.virtual:
            return False  # a virtual conference is matched only by "online" (clarification 18)
        return any(places_match(claim, g) for g in gold.alternatives)

    def equivalent(self, a: str, b: str) -> bool:
        return places_match(a, b) and places_match(b, a)
