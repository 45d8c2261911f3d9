"""The words that say "rank" or "place" in a ranking, read by the rank type and by cleaning
(a numbered list item is not a German or Turkish rank: "26. Platz", "186. sırada")."""
from __future__ import annotations

__all__ = ["RANK_NOUNS", "RANK_WORDS"]

# Words that say "rank" or "place" (SCORING.md clarifications 4, 15, 16).  Hand-written: no
# library (CLDR included) records the noun for a place in a ranking.  English and the five
# languages of clarification 4, then Dutch, Swedish, Polish, Russian, Turkish and Indonesian,
# the languages whose numbers CLDR's separators already read.
_OTHER_RANK_NOUNS = (
    r"plaats|positie|plats|placering|miejsce|miejscu|pozycja|pozycji|место|месте|места|позиция|позиции|"
    r"sırada|sıra|sırası|sıralamada|peringkat|posisi|urutan"
)
RANK_WORDS = (
    r"rank(?:ed|ing)?|position(?:ed)?|placed|place|spot|platz|rang|stelle|platzierung|"
    r"puesto|posici[oó]n|lugar|posto|posi[cç][aã]o|posizione|classement|clasificaci[oó]n|classifica|"
    + _OTHER_RANK_NOUNS
)
# The nouns alone: a bare rank may carry one ("Platz 26", "26th place", "326º posto").
RANK_NOUNS = (
    r"rank|position|place|spot|platz|rang|stelle|puesto|posici[oó]n|lugar|posto|posi[cç][aã]o|posizione|"
    + _OTHER_RANK_NOUNS
)
