"""The language of a response (SCORING.md clarifications 4 and 16).

Three steps, cheapest first:

1. a few function words of English, French, German, Spanish, Portuguese and Italian (the
   table below): short English answers are the common case, and a statistical detector
   misreads them (lingua's low-accuracy mode reads ``The attendance was 94, 194.`` as French
   and ``Otto Hahn was due once more`` as Italian), so these words decide first;
2. the script, from the Unicode character names (``unicodedata``): Han with kana is Japanese,
   Han alone Chinese, Hangul Korean, Devanagari Hindi, Arabic, Greek, Hebrew, Thai;
3. otherwise (Cyrillic, and Latin text with none of the function words: ``Sekitar 439 ribu``,
   ``trzydzieści tysięcy``, ``12. sırada``), lingua, restricted to the languages whose numbers
   and words the scorer reads, built once on first use; an unsure answer is no language.
"""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any, Dict, Optional, Tuple

from defan_pytest.scoring.text.memo import short_text_memo

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


# Scripts that name their language (the first word of a character's Unicode name).
_SCRIPT_LANGS = {
    "HIRAGANA": "ja", "KATAKANA": "ja", "HANGUL": "ko", "DEVANAGARI": "hi", "ARABIC": "ar",
    "GREEK": "el", "HEBREW": "he", "THAI": "th", "CJK": "zh",
}
#: The languages lingua chooses among (ISO 639-1): those whose numbers (CLDR separators),
#: number words (text2num, num2words) or rank words the scorer reads.
DETECTED_LANGS = ("en", "de", "fr", "es", "pt", "it", "nl", "da", "sv", "pl", "tr", "id", "ru", "uk", "bg")
# lingua's confidence below which a text has no language.
_MIN_CONFIDENCE = 0.6


def _script(text: str) -> str:
    """The language a non-Latin script names, ``"cyrillic"`` for Cyrillic (lingua decides
    among its languages), ``""`` for Latin text."""
    seen: Dict[str, int] = {}
    for c in text[:400]:
        if c.isascii() or not c.isalpha():
            continue
        head = unicodedata.name(c, "").split(" ", 1)[0]
        if head in ("HIRAGANA", "KATAKANA"):
            return "ja"  # kana decides even among Han characters
        seen[head] = seen.get(head, 0) + 1
    if not seen:
        return ""
    head = max(seen, key=lambda k: seen[k])
    if head == "CYRILLIC":
        return "cyrillic"
    return _SCRIPT_LANGS.get(head, "")


@lru_cache(maxsize=1)
def _detector() -> Any:
    """lingua's detector over :data:`DETECTED_LANGS`, low-accuracy mode (its n-gram models of
    one to three letters: enough for the sentences step 1 leaves, and fast), built once."""
    from lingua import IsoCode639_1, Language, LanguageDetectorBuilder

    langs = [Language.from_iso_code_639_1(getattr(IsoCode639_1, code.upper())) for code in DETECTED_LANGS]
    return LanguageDetectorBuilder.from_languages(*langs).with_low_accuracy_mode().build()


@short_text_memo(maxsize=4096)
def _detected(text: str) -> str:
    values = _detector().compute_language_confidence_values(text)
    if not values or values[0].value < _MIN_CONFIDENCE:
        return ""
    return str(values[0].language.iso_code_639_1.name.lower())


def _function_words(text: str, limit: int) -> Optional[str]:
    counts: Dict[str, int] = {}
    for m in _LETTERS.finditer(text, 0, limit):
        for lang in _WORD_LANGS.get(m.group().lower(), ()):
            counts[lang] = counts.get(lang, 0) + 1
    if not counts:
        return None
    en = counts.pop("en", 0)
    if counts:
        best = max(counts, key=lambda k: (counts[k], k == "fr"))
        if counts[best] > en:
            return best
    return "en" if en else None


def language(text: str, limit: int = 4000) -> str:
    """The language of a response: an ISO 639-1 code (``en``, ``de``, ``fr``, ``ru``, ``pl``,
    ``ja``, ...), or ``""`` when it has none (a bare value, a text too short or too mixed to
    tell).  Reads the first ``limit`` characters only.

    >>> language("Die Universität belegte 2022 den 386. Platz"), language("It was 386"), language("386")
    ('de', 'en', '')
    >>> language("шестьсот девяносто четыре человека"), language("第266位"), language("Sekitar 439 ribu")
    ('ru', 'zh', 'id')
    """
    head = text[:limit]
    found = _function_words(head, limit)
    if found is not None:
        return found
    letters = _LETTERS.findall(head, 0, 400)
    if not letters:
        return ""
    script = "" if head.isascii() else _script(head)
    if script and script != "cyrillic":
        return script
    if sum(len(w) for w in letters) < 4:
        return ""  # "A", "km": too little to tell
    return _detected(" ".join(letters[:60]))
