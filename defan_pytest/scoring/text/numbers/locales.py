"""What the Unicode CLDR locale data (through Babel) says about written numbers: which languages
write decimals with a comma (:func:`decimal_comma`), and the scale words and abbreviations of
the compact number formats (``million``, ``Millionen``, ``Mio.``, ``ribu``, ``тысяч``, ``万``,
``12K``: :func:`scale_words`), built once and read by :mod:`defan_pytest.scoring.text.numbers.parse`."""
from __future__ import annotations

import re
import unicodedata
from decimal import Decimal
from functools import lru_cache
from typing import Any, Dict, List, Optional, Tuple

__all__ = ["decimal_comma", "scale_of", "scale_patterns", "scale_words"]


@lru_cache(maxsize=256)
def decimal_comma(lang: str) -> bool:
    """Does ``lang`` write decimals with a comma (and so group with a dot or a space)?  From
    the Unicode CLDR locale data (Babel): ``de``, ``fr``, ``ru``, ``pl``, ``tr``, ``id``, ... do;
    ``en``, ``ja``, ``hi``, ... and an unknown language do not."""
    if not lang:
        return False
    try:
        from babel.numbers import get_decimal_symbol

        return get_decimal_symbol(lang) == ","
    except Exception:  # an unknown or malformed locale code: no convention known
        return False


# --- Scale words (CLDR compact number formats) ----------------------------------------------

# The locales whose compact forms ("0 thousand", "0K", "0 Millionen", "0 ribu", "0万", "0 лакх")
# are read as scale words.  English comes first, so its readings win where two locales write
# the same word for different values (the French "billion" is 10^12, the English one 10^9).
_SCALE_LOCALES = ("en", "en_IN", "de", "fr", "es", "pt", "it", "nl", "pl", "ru", "tr", "id", "sv", "ja", "zh", "hi")
# Common abbreviations CLDR does not record (English press usage, plurals), and the
# lower-case "k" ("12k").
_SCALE_EXTRA = {
    "thousands": 10**3, "millions": 10**6, "billions": 10**9, "bn": 10**9, "mn": 10**6,
    "mio": 10**6, "mrd": 10**9, "tsd": 10**3, "lakhs": 10**5, "crores": 10**7,
}
_ATTACHED_EXTRA = {"k": 10**3}
_CJK_SCRIPT = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff]")


def _fold(word: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


@lru_cache(maxsize=1)
def scale_words() -> Tuple[Dict[str, Decimal], Dict[str, Decimal]]:
    """``(words, attached)``: scale words read case-insensitively after a number, with or
    without a space (``million``, ``Millionen``, ``Mio.``, ``ribu``, ``тысяч``, ``万``), and
    abbreviations read only when attached, case-sensitively (``12K``, ``1.2M``, ``3B``).

    Built once, from Babel's CLDR compact decimal formats of :data:`_SCALE_LOCALES` (long
    forms of every locale; short forms of English, and the other locales' of three letters
    or more, ``Mio.``, ``тыс.``, so that ``5 M`` or ``3 T`` in prose is not a scale).
    """
    from babel import Locale

    words: Dict[str, Decimal] = {}
    attached: Dict[str, Decimal] = {}
    for code in _SCALE_LOCALES:
        formats = Locale.parse(code).compact_decimal_formats
        for kind in ("long", "short"):
            if kind == "short" and code == "en_IN":
                continue  # "0L", "0Cr": litres and credits in English prose
            for forms in formats.get(kind, {}).values():
                for magnitude, pattern in forms.items():
                    text = getattr(pattern, "pattern", str(pattern))
                    zeros = text.count("0")
                    word = text.replace("0", "").replace("'", "").replace("\u00a0", " ").replace("\u202f", " ").strip()
                    if not zeros or not word or ";" in word:
                        continue
                    value = Decimal(int(magnitude)).scaleb(1 - zeros)
                    if kind == "short" and code == "en":
                        attached.setdefault(word, value)
                        continue
                    if kind == "short" and len(word.rstrip(".")) < 3 and not _CJK_SCRIPT.search(word):
                        continue
                    for w in {word.lower(), _fold(word.lower())}:
                        words.setdefault(w, value)
    for w, v in _SCALE_EXTRA.items():
        words.setdefault(w, Decimal(v))
    for w, v in _ATTACHED_EXTRA.items():
        attached.setdefault(w, Decimal(v))
    return words, attached


def scale_of(word: str) -> Optional[Decimal]:
    """The value of a scale word or attached abbreviation as a number wrote it (``Mio.``,
    ``K``), ``None`` if it is none."""
    words, attached = scale_words()
    w = word.strip()
    if w in attached:
        return attached[w]
    w = re.sub(r"\s+", " ", w.lower())
    return words.get(w, words.get(w.rstrip("."), words.get(_fold(w))))


@lru_cache(maxsize=1)
def scale_patterns() -> Tuple[str, str]:
    """The scale words and the attached abbreviations, each as one trie regex."""
    words, attached = scale_words()

    return _trie_regex(list(words)), _trie_regex(list(attached))


def _trie_regex(words: List[str]) -> str:
    """One regex for a set of words, as a trie (``mil(?:l(?:ion(?:s|)|...)|...)``): several
    hundred scale words cost one branch per letter instead of a try per word.  A longer word
    is tried before its prefix ("millions" before "million"); a space matches any one space."""
    trie: Dict[str, Any] = {}
    for w in words:
        node = trie
        for c in w:
            node = node.setdefault(c, {})
        node[""] = {}

    def emit(node: Dict[str, Any]) -> str:
        branches = [(r"\s" if c == " " else re.escape(c)) + emit(child) for c, child in sorted(node.items()) if c]
        if not branches:
            return ""
        body = "|".join(branches)
        if "" in node:
            return f"(?:{body}|)"  # the word may end here, after its longer forms
        return body if len(branches) == 1 and len(node) == 1 else f"(?:{body})"

    return emit(trie)
