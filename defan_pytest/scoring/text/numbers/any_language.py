"""Number words of a text whose language is not known: which languages to read it in
(SCORING.md clarifications 5 and 16).

A bare answer in words ("un milion cinci sute ...", "Elfu moja mia tisa sitini na tisa") often
comes with too little text for a language detector.  So it is read in every language whose
number words one of its words is (an index of the words of each language's phrases of 1 to 10,
20, 100, 1000 and a million, built once), and in every language of its script when that is
not Latin; the value is kept only when all the languages that read it agree.  Each language's
vocabulary is built by :mod:`defan_pytest.scoring.text.numbers.vocab` only when a text needs it.
"""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from defan_pytest.scoring.text.memo import short_text_memo
from defan_pytest.scoring.text.numbers.sources import n2w_langs, phrases, rbnf_dir, vocab_langs, words_of
from defan_pytest.scoring.text.numbers.vocab import MAX_WORDS, value_in

__all__ = ["general_value"]


@lru_cache(maxsize=1)
def _index() -> Tuple[Dict[str, FrozenSet[str]], Dict[str, FrozenSet[str]]]:
    """Which languages a text is worth reading in: the words each language writes for 1 to
    10, 20, 100, 1000 and a million (num2words' phrases, and the CLDR rules of those values
    read straight from unicode_rbnf's data files: no engine is loaded), and their scripts."""
    words: Dict[str, Set[str]] = {}
    for lang, text in _index_phrases():
        for w in words_of(text):
            words.setdefault(w, set()).add(lang)
    scripts: Dict[str, Set[str]] = {}
    for w, langs in words.items():
        scripts.setdefault(_script(w), set()).update(langs)
    return ({w: frozenset(ls) for w, ls in words.items()}, {k: frozenset(ls) for k, ls in scripts.items()})


_INDEXED = frozenset(list(range(1, 11)) + [20, 100, 1000, 10**6])
_RULE = re.compile(r'<rbnfrule value="(\d+)"[^>]*>([^<]*)</rbnfrule>')
_MARKUP = re.compile(r"%[\w-]+|[←→=;\[\]$(){}#,0]")


def _index_phrases() -> List[Tuple[str, str]]:
    out: List[Tuple[str, str]] = []
    for lang in vocab_langs():
        if lang in n2w_langs():
            out.extend((lang, p) for n in sorted(_INDEXED) for p in phrases(lang, n, cldr=False))
    folder = rbnf_dir()
    if folder is not None:
        for path in sorted(folder.glob("*.xml")):
            if path.stem not in vocab_langs():
                continue
            for value, body in _RULE.findall(path.read_text(encoding="utf-8")):
                if int(value) in _INDEXED:
                    out.append((path.stem, _MARKUP.sub(" ", body)))
    return out


def _script(word: str) -> str:
    """The script of a word's first letter (the first word of its Unicode name)."""
    for c in word:
        if c.isalpha():
            return "LATIN" if c.isascii() else unicodedata.name(c, "?").split(" ", 1)[0]
    return ""


def _langs_of(word: str, index: Dict[str, FrozenSet[str]]) -> Set[str]:
    """The languages ``word`` is a number word of (the word, or a compound that starts with
    one: ``százezer``, ``nineteen``)."""
    found = set(index.get(word, ()))
    for cut in range(min(len(word) - 1, 16), 2, -1):
        found.update(index.get(word[:cut], ()))
    return found


def _candidate_langs(words: Sequence[str]) -> FrozenSet[str]:
    """The languages one of ``words`` is a number word of; for a script other than Latin,
    every language of it.  Latin words of which fewer than half are number words of any
    language (``I'm sorry I don't have access``) are read in none."""
    index, scripts = _index()
    found: Set[str] = set()
    hits = 0
    for w in words:
        langs = _langs_of(w, index)
        hits += bool(langs)
        found.update(langs)
    script = _script(words[0])
    if script not in ("LATIN", ""):
        found.update(scripts.get(script, ()))
    elif hits * 2 < len(words):
        return frozenset()
    return frozenset(found)


@short_text_memo(maxsize=8192)
def general_value(text: str, lang: str = "") -> Optional[Tuple[int, bool]]:
    """The value of ``text`` when it is, as a whole, one number in words of any language a
    library writes: ``(value, is_ordinal)``.  Read in ``lang`` first; else in every language
    one of its words is a number word of (or of its script), and kept only when they agree
    (a text that is two different numbers in two languages is none).

    >>> general_value("třicet tisíc devět set osm"), general_value("Elfu moja mia tisa sitini na tisa")
    ((30908, False), (1969, False))
    """
    words = words_of(text.strip().rstrip("."))
    if not words or len(words) > MAX_WORDS or any(any(c.isdigit() for c in w) for w in words):
        return None
    if lang in vocab_langs():
        found = value_in(words, lang)
        if found is not None:
            return found
    values = set()
    for other in sorted(_candidate_langs(words) - {lang}):
        found = value_in(words, other)
        if found is not None:
            values.add(found)
    return values.pop() if len(values) == 1 else None
