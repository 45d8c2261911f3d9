"""A fallback reader of written dates from CLDR's date patterns (Babel's data), for the forms
dateparser's month data misses: a month name with the pattern's literal affixes (Basque
``1960ko abuztuaren 20a``, CLDR ``y('e')'ko' MMMM'ren' d('a')``), a year word between the parts
(Latvian ``1946. gada 19. novembris``), a locale's own order.

Every locale's full, long and medium patterns with a month name (:mod:`.cldr_data`) become
one matcher each; locales that write dates alike share one.  An index from the word a month
is written as (the name with the letters the pattern attaches to it: ``abuztuaren``) to the
matchers that write it so is built per script, lazily, the first time a text of that script
asks (the Latin locales, the most, take about 0.2-0.3 s); a matcher's regex is compiled the first
time one of its words is seen.  Numeric months are never read here (month-first numeric
reading is :mod:`.dates`'s), nor partial dates.

Read by :func:`defan_pytest.scoring.text.dates.find_dates` only where it finds no full date
(SCORING-CHOICES, "Dates in any language and script").
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from defan_pytest.scoring.text.dates.cldr_data import Template, Variant, script_of_char, variants_of_script
from defan_pytest.scoring.text.dates.months import WORD, english_month, fold, load
from defan_pytest.scoring.text.dates.years import DateValue, valid_day

__all__ = ["cldr_dates", "scripts_of"]

_WORD = re.compile(WORD)
_DIGITS = re.compile(r"\d+")
# A year and a day, neither part of a decimal number ("1276.28").
_YEAR = re.compile(r"(?<![\d.,])\d{4}(?!\d|[.,]\d)")
_DAY = re.compile(r"(?<![\d.,])\d{1,2}(?!\d|[.,]\d)")
_SPACE = "[\\s\u00a0\u202f\u200e\u200f]"
_OPTIONAL = re.compile(r"\(([^()]*)\)")  # "(e)ko", "(a)": letters a form may leave out


def scripts_of(text: str) -> Tuple[str, ...]:
    """The scripts (CLDR codes) of the letters in ``text``: ``("Latn",)`` for ASCII."""
    if text.isascii():
        return ("Latn",) if any(c.isalpha() for c in text) else ()
    found = {script_of_char(c) for c in set(text) if c.isalpha()}
    return tuple(sorted(s for s in found if s is not None))


def _literal(text: str, edge: bool) -> str:
    """A pattern's literal as a regex: spaces any run of spaces, punctuation optional, letters
    as written (case aside), a bracketed part optional; at either end of a pattern, optional."""
    out: List[str] = []
    pos = 0
    for m in _OPTIONAL.finditer(text):
        out.append(_plain(text[pos:m.start()]))
        inner = _plain(m.group(1))
        out.append(rf"(?:\({inner}\)|{inner})?")
        pos = m.end()
    out.append(_plain(text[pos:]))
    body = "".join(out)
    return f"(?:{body})?" if edge else body


def _plain(text: str) -> str:
    out: List[str] = []
    for c in text:
        if c.isspace():
            if not out or out[-1] != f"{_SPACE}*":
                out.append(f"{_SPACE}*")
        elif c.isalpha():
            out.append(re.escape(c))
        else:
            out.append(re.escape(c) + "?")
    return "".join(out)


def _names(names: Sequence[str]) -> str:
    alts = sorted({n.strip() for n in names if n.strip()}, key=len, reverse=True)
    return "|".join(_plain(n.rstrip(".")) + (r"\.?" if n.endswith(".") else "") for n in alts).replace(
        f"{_SPACE}*", f"{_SPACE}+"
    )


@lru_cache(maxsize=None)
def _regex(variant: Variant) -> "re.Pattern[str]":
    """One variant's matcher: named groups ``y``, ``d`` and ``w`` (the month as written)."""
    parts = variant.template
    fields = [i for i, (k, _) in enumerate(parts) if k != "lit"]
    first, last = fields[0], fields[-1]
    out: List[str] = []
    for i, (kind, _) in enumerate(parts):
        if kind == "lit":
            out.append(_literal(parts[i][1], i < first or i > last))
        elif kind == "y":
            out.append(r"(?P<y>\d{4})(?!\d)")
        elif kind == "d":
            out.append(r"(?P<d>\d{1,2})(?!\d)")
        elif kind == "M":
            names = [n for _, ns in variant.months for n in ns]
            out.append(rf"(?P<w>{_names(names)})")
        elif kind == "E":
            out.append(f"(?:{_names(variant.weekdays)})?" if variant.weekdays else "")
        elif kind == "G":
            out.append(f"(?:{_names(variant.eras)})?" if variant.eras else "")
    if parts[last][0] == "M":
        out.insert(last + 1, r"(?![^\W\d_])")
    # Not inside a word or a number: "120 ..." is no day 20, "xAugust" no August.
    start = r"(?<![^\W_]|[.,/:])" if parts[first][0] in "yd" else r"(?<![^\W\d_])"
    return re.compile(start + "".join(out), re.I)


def _key(template: Template, name: str) -> Optional[str]:
    """The word a month name is looked up by in this pattern: the longest run of letters of
    the name with the letters the pattern attaches to it (``abuztuaren``; ``agost`` of
    Catalan ``d’agost``), folded."""
    i = next(i for i, (k, _) in enumerate(template) if k == "M")
    before = template[i - 1][1] if i > 0 and template[i - 1][0] == "lit" else ""
    after = template[i + 1][1] if i + 1 < len(template) and template[i + 1][0] == "lit" else ""
    return _key_of(re.split(r"\s", before)[-1], name, re.split(r"\s", after)[0])


@lru_cache(maxsize=None)
def _key_of(before: str, name: str, after: str) -> Optional[str]:
    runs = _WORD.findall(_OPTIONAL.sub("", before + name + after))
    return max(runs, key=len).casefold() if runs else None


@lru_cache(maxsize=None)
def _index(script: str) -> Dict[str, Tuple[Tuple[Variant, Dict[str, int]], ...]]:
    """Folded month word -> the variants writing it, each with its name -> month map."""
    index: Dict[str, List[Tuple[Variant, Dict[str, int]]]] = {}
    for variant in variants_of_script(script):
        months = {_fold(n): num for num, ns in variant.months for n in ns}
        for num, ns in variant.months:
            for name in ns:
                key = _key(variant.template, name)
                if key and len(key) >= 2:
                    entry = index.setdefault(key, [])
                    if not entry or entry[-1][0] is not variant:
                        entry.append((variant, months))
    return {k: tuple(v) for k, v in index.items()}


def _fold(name: str) -> str:
    return re.sub(r"\s+", " ", name.strip().rstrip(".")).casefold()


def cldr_dates(text: str, language: Callable[[], str] = str) -> List[Tuple[int, int, DateValue]]:
    """The full dates with a month name that some CLDR locale writes so, in reading order,
    as ``(start, end, (year, month, day))``.  Overlapping readings keep the longest; of two
    readings of one span, that of a locale of ``language()`` (the text's language, asked
    only when a reading is found), else the first (CLDR's order of locale names).  A month
    word must pass :func:`_plausible`; in English text it must be one dateparser's month
    data lacks (``abuztuaren``), others being the main reader's to judge."""
    # A full date has a year and a day: without both, no index is built or read (the public
    # split's responses never build it).
    if _YEAR.search(text) is None or _DAY.search(text) is None:
        return []
    scripts = scripts_of(text)
    if not scripts:
        return []
    indexes = [_index(s) for s in scripts]
    hits: List[Tuple[int, int, Tuple[str, ...], DateValue, str, str]] = []
    seen = set()
    for number in _DIGITS.finditer(text):
        lo, hi = max(0, number.start() - 40), min(len(text), number.end() + 40)
        for word in _WORD.finditer(text, lo, hi):
            key = word.group().casefold()
            for index in indexes:
                for variant, months in index.get(key, ()):
                    if (word.start(), id(variant)) in seen:
                        continue
                    seen.add((word.start(), id(variant)))
                    hit = _read(text, word, variant, months)
                    if hit is not None:
                        hits.append(hit)
    hits = [h for h in hits if _plausible(h[4])]
    if not hits:
        return []
    lang = language()
    if lang == "en":  # a month word dateparser knows is the main reader's to judge in English
        hits = [h for h in hits if fold(h[5]) not in load().months]
    hits.sort(key=lambda h: (-(h[1] - h[0]), lang not in h[2], h[0]))
    out: List[Tuple[int, int, DateValue]] = []
    for s, e, _, value, _, _ in hits:
        if all(e <= a or s >= b for a, b, _ in out):
            out.append((s, e, value))
    return sorted(out)


def _plausible(month: str) -> bool:
    """The main reader's rules for any month word (SCORING-CHOICES): an English month word is
    read there, or declined there on purpose ("1990 May 3 people"); two Latin letters
    ("ma") are no month, nor a connective, year or day word of any language ("de")."""
    word = fold(month)
    if len(word) < 3 and word.isascii():
        return False
    data = load()
    if word in data.connectives or word in data.year_words or word in data.day_words:
        return False
    return not english_month(word)


def _read(
    text: str, word: "re.Match[str]", variant: Variant, months: Dict[str, int]
) -> Optional[Tuple[int, int, Tuple[str, ...], DateValue, str, str]]:
    regex = _regex(variant)
    start = max(0, word.start() - 40)
    while True:
        m = regex.search(text, start, min(len(text), word.end() + 40))
        if m is None or m.start() > word.start():
            return None
        # The match reads this word as its month (and covers it, with the attached letters).
        if m.start("w") < word.end() and m.end("w") > word.start() and m.end() >= word.end():
            break
        start = m.start() + 1
    month = months.get(_fold(m.group("w")))
    if month is None:
        return None
    day = int(m.group("d"))
    if not valid_day(month, day):
        return None
    return m.start(), m.end(), variant.languages, (int(m.group("y")), month, day), m.group("w"), word.group()
