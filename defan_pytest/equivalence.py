"""Typed values and the equivalence rules of SCORING.md ("Correct", step 4).

Golds and claims are parsed into small typed values:

- numeric: a :class:`~decimal.Decimal` (exact; no float rounding surprises at 10^-d);
- rank: an ``int`` or a band ``(lo, hi)``;
- date: ``(year, month, day)`` with ``month``/``day`` possibly ``None`` (a year, or a month);
- name / city: folded token tuples, compared with a fuzzy token match.

A claim travels between processes as a *canonical string* (``"1350000"``, ``"601-650"``,
``"1946-11-19"``, a name as written, ``"none"``, ``"online"``), so that the controller can
recompute group consistency from plain JSON.  :func:`parse_claim` reads such a string back.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Optional, Sequence, Tuple, Union

from rapidfuzz.distance import Indel

from defan_pytest.dates import DateValue, parse_date_text

#: The canonical claim of a response that says no prize was awarded (empty gold).
NONE_CLAIM = "none"
#: The canonical claim of a response that says a conference was held online.
ONLINE_CLAIM = "online"

TYPES = ("name", "numeric", "date", "rank", "city")

RankValue = Union[int, Tuple[int, int]]

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
_COUNTRIES = frozenset(set(_COUNTRY_ALIASES.values()) | {
    "canada", "australia", "china", "japan", "france", "germany", "italy", "spain", "portugal",
    "brazil", "chile", "india", "greece", "denmark", "qatar", "singapore", "south korea",
    "czech republic", "united kingdom", "united states", "mexico", "netherlands", "belgium",
    "switzerland", "austria", "sweden", "norway", "finland", "ireland", "israel", "taiwan",
    "hong kong", "thailand", "vietnam", "new zealand", "argentina", "turkey", "egypt",
    "south africa", "russia", "poland", "hungary", "united arab emirates",
})


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
    if part in _COUNTRIES:
        return part
    return _REGION_COUNTRY.get(part)


@lru_cache(maxsize=8192)
def _split_place(text: str) -> Tuple[str, Tuple[str, ...]]:
    parts = [p for p in (_place_part(x) for x in strip_footnotes(text).split(",")) if p]
    if not parts:
        return "", ()
    return parts[0], tuple(parts[1:])


def places_match(claim: str, gold: str) -> bool:
    """The city part must match; a region or country the claim adds must not contradict.

    ``Seattle`` matches ``Seattle, Washington``; ``Seattle, WA, USA`` matches it too;
    ``Portland, Maine`` does not match ``Portland, Oregon``.
    """
    c_city, c_rest = _split_place(claim)
    g_city, g_rest = _split_place(gold)
    if not c_city or not g_city or not names_match(c_city, g_city):
        return False
    g_set = set(g_rest)
    g_countries = {x for x in (_country_of(p) for p in g_rest) if x}
    gold_has_region = any(p in _REGION_COUNTRY for p in g_rest)
    for part in c_rest:
        forms = _region_forms(part)
        if forms & g_set or forms & g_countries:
            continue  # the same region, or the country of the gold's region
        known = [f for f in forms if _country_of(f)]
        if not known or not g_rest:
            continue  # an unknown qualifier, or a gold with nothing to contradict
        if not gold_has_region and any(_REGION_COUNTRY.get(f) in g_countries for f in known):
            continue  # "Sydney, NSW" for "Sydney, Australia"
        return False
    return True


# --------------------------------------------------------------------------------------------
# numbers
# --------------------------------------------------------------------------------------------

_SCALES = {
    "thousand": Decimal(1000), "million": Decimal(10) ** 6, "mn": Decimal(10) ** 6,
    "billion": Decimal(10) ** 9, "bn": Decimal(10) ** 9, "trillion": Decimal(10) ** 12,
}
_VULGAR = {
    "½": Decimal("0.5"), "⅓": Decimal(1) / Decimal(3), "⅔": Decimal(2) / Decimal(3),
    "¼": Decimal("0.25"), "¾": Decimal("0.75"), "⅕": Decimal("0.2"), "⅛": Decimal("0.125"),
}
_NUM_CORE = re.compile(
    r"^\s*[$€£¥]?\s*([-+−]?)\s*[$€£¥]?\s*(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{1,3}(?:[ \u00a0\u202f\u2009]\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?:\s*/\s*(\d+))?\s*(%|percent|thousand|million|billion|trillion|mn|bn)?\s*$",
    re.IGNORECASE,
)


def parse_number(text: str) -> Optional[Decimal]:
    """The value of one written number (``1,351,921``, ``-3``, ``1.54 million``, ``3/4``)."""
    t = text.strip()
    if t in _VULGAR:
        return _VULGAR[t]
    m = _NUM_CORE.match(t)
    if not m:
        return None
    sign, digits, denom, scale = m.groups()
    try:
        value = Decimal(re.sub(r"[,\s\u00a0\u202f\u2009]", "", digits))
        if denom is not None:
            if int(denom) == 0:
                return None
            value = value / Decimal(denom)
    except InvalidOperation:
        return None
    if scale and scale.lower() in _SCALES:
        value = value * _SCALES[scale.lower()]
    if sign in ("-", "−"):
        value = -value
    return value


def decimals_of(text: str) -> int:
    """Number of decimals a written gold number carries (``42.85`` -> 2, ``1,351,921`` -> 0)."""
    m = re.search(r"\.(\d+)", text)
    return len(m.group(1)) if m else 0


def canonical_number(value: Decimal) -> str:
    """A canonical string for a number: no exponent, no trailing zeros (``1350000``)."""
    if value == value.to_integral_value():
        return str(int(value))
    # A repeating fraction (2/3) is cut at 12 places: far below any gold's precision.
    return format(value.quantize(Decimal("1e-12")).normalize(), "f")


# --------------------------------------------------------------------------------------------
# ranks
# --------------------------------------------------------------------------------------------

_RANK_ONE = re.compile(r"^\s*(?:#|no\.?\s*|(?:joint|tied|t-)\s*)?=?\s*(\d+)\s*(?:st|nd|rd|th)?\s*=?\s*$", re.I)
_RANK_BAND = re.compile(r"^\s*=?(\d+)\s*(?:-|–|—|to)\s*(\d+)\s*$", re.I)


def parse_rank(text: str) -> Optional[RankValue]:
    """A rank (``334``, ``334th``, ``#334``, ``=47``, ``47=``) or a band (``601-650``)."""
    m = _RANK_ONE.match(text)
    if m:
        return int(m.group(1))
    m = _RANK_BAND.match(text)
    if m:
        lo, hi = int(m.group(1)), int(m.group(2))
        if lo < hi:
            return (lo, hi)
    return None


def canonical_rank(value: RankValue) -> str:
    """``386`` or ``601-650``."""
    if isinstance(value, tuple):
        return f"{value[0]}-{value[1]}"
    return str(value)


def canonical_date(value: DateValue) -> str:
    """``1946-11-19``, ``1946-11`` or ``1946``."""
    y, m, d = value
    if m is None:
        return f"{y:04d}"
    if d is None:
        return f"{y:04d}-{m:02d}"
    return f"{y:04d}-{m:02d}-{d:02d}"


_ISO_DATE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")


def _parse_canonical_date(text: str) -> Optional[DateValue]:
    m = _ISO_DATE.match(text.strip())
    if not m:
        return None
    y, mo, d = m.groups()
    return (int(y), int(mo) if mo else None, int(d) if d else None)


# --------------------------------------------------------------------------------------------
# golds
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gold:
    """A parsed gold answer: its accepted alternatives, typed."""

    type: str
    raw: str
    alternatives: Tuple[str, ...]
    empty: bool
    virtual: bool
    numbers: Tuple[Tuple[Decimal, int], ...] = ()
    ranks: Tuple[RankValue, ...] = ()
    dates: Tuple[DateValue, ...] = ()


_SPLIT_ALTERNATIVES = re.compile(r"\s*;\s*|\s+&\s+")
_VIRTUAL = re.compile(r"\b(?:virtual(?:ly)?|online)\b.*$", re.I)


@lru_cache(maxsize=16384)
def parse_gold(type_: str, raw: str) -> Gold:
    """Parse a raw gold string: footnotes dropped, ``None`` empty, ``;``/`` & `` split.

    A conference gold that says the event was virtual accepts both a claim that it was held
    online and the planned city (documented in docs/SCORING-CHOICES.md).
    """
    text = strip_footnotes(raw).strip()
    virtual = False
    if type_ == "city" and _VIRTUAL.search(text):
        virtual = True
        text = _VIRTUAL.sub("", text).strip().rstrip("/,").strip()
    if text.casefold() == "none":
        text = ""
    alts = tuple(a.strip() for a in _SPLIT_ALTERNATIVES.split(text) if a.strip())
    empty = not alts and not virtual
    numbers: list = []
    ranks: list = []
    dates: list = []
    for a in alts:
        if type_ == "numeric":
            v = parse_number(a)
            if v is not None:
                numbers.append((v, decimals_of(a)))
        elif type_ == "rank":
            r = parse_rank(a)
            if r is not None:
                ranks.append(r)
        elif type_ == "date":
            # The dataset writes dates month first (MM/DD/YYYY), whatever the question asks.
            d = parse_date_text(a, dayfirst=False, allow_year=True)
            if d is not None:
                dates.append(d)
    return Gold(type_, raw, alts, empty, virtual, tuple(numbers), tuple(ranks), tuple(dates))


# --------------------------------------------------------------------------------------------
# claims
# --------------------------------------------------------------------------------------------


def parse_claim(type_: str, claim: str) -> object:
    """Read a canonical claim string back into its typed value (``None`` if unreadable)."""
    if claim in (NONE_CLAIM, ONLINE_CLAIM):
        return claim
    if type_ == "numeric":
        return parse_number(claim)
    if type_ == "rank":
        return parse_rank(claim)
    if type_ == "date":
        return _parse_canonical_date(claim)
    return claim


def claim_correct(type_: str, claim: Optional[str], gold: Gold) -> bool:
    """Does the canonical ``claim`` match one accepted answer of ``gold``?"""
    if claim is None:
        return False
    if gold.empty:
        return claim == NONE_CLAIM
    if claim == NONE_CLAIM:
        return False
    if claim == ONLINE_CLAIM:
        return gold.virtual
    if type_ == "numeric":
        value = parse_number(claim)
        if value is None:
            return False
        for g, d in gold.numbers:
            if d == 0:
                if value == g:
                    return True
            elif abs(value - g) <= Decimal(1).scaleb(-d):
                return True
        return False
    if type_ == "rank":
        rank = parse_rank(claim)
        return rank is not None and rank in gold.ranks
    if type_ == "date":
        date = _parse_canonical_date(claim)
        return date is not None and date in gold.dates
    if type_ == "city":
        return any(places_match(claim, g) for g in gold.alternatives)
    return any(names_match(claim, g) for g in gold.alternatives)


def claims_equivalent(type_: str, a: Optional[str], b: Optional[str]) -> bool:
    """Are two canonical claims the same answer under the type's equivalence?"""
    if a is None or b is None:
        return False
    if a == b:
        return True
    if NONE_CLAIM in (a, b) or ONLINE_CLAIM in (a, b):
        return False
    if type_ in ("numeric", "rank", "date"):
        va, vb = parse_claim(type_, a), parse_claim(type_, b)
        return va is not None and va == vb
    if type_ == "city":
        return places_match(a, b) and places_match(b, a)
    return names_match(a, b) or names_match(b, a)


def group_consistent(type_: str, claims: Sequence[Optional[str]]) -> bool:
    """A group is consistent when every response has a claim and all claims are equivalent."""
    if not claims or any(c is None for c in claims):
        return False
    distinct = list(dict.fromkeys(claims))
    return all(
        claims_equivalent(type_, distinct[i], distinct[j])
        for i in range(len(distinct))
        for j in range(i + 1, len(distinct))
    )
