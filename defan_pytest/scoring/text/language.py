"""The language of a response (SCORING.md clarification 4), from a few function words."""
from __future__ import annotations

import re
from typing import Dict, Tuple

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
