"""The words that say "rank" or "place" in a ranking, read by the rank type and by cleaning
(a numbered list item is not a German or Turkish rank: "26. Platz", "186. sırada")."""
from __future__ import annotations

__all__ = ["ORDINAL_PREFIXES", "RANK_NOUNS", "RANK_WORDS"]

# Words that say "rank" or "place" (SCORING.md clarifications 4, 15, 16).  Hand-written: no
# library (CLDR included) records the noun for a place in a ranking.  English and the five
# languages of clarification 4, then Dutch, Swedish, Polish, Russian, Turkish and Indonesian,
# the languages whose numbers CLDR's separators already read; then (clarification 16, any
# language) Hungarian, Czech, Romanian, Greek, Vietnamese, Thai, Hebrew, Arabic, Swahili,
# Hindi, Ukrainian, Persian and Finnish: each language's noun for a place or a rank, and the
# forms a bare answer writes it in ("locul", "sijalla", "المرتبة").  One line a language.
_OTHER_RANK_NOUNS = (
    r"plaats|positie|plats|placering|miejsce|miejscu|pozycja|pozycji|место|месте|места|позиция|позиции|"
    r"sırada|sıra|sırası|sıralamada|peringkat|posisi|urutan|"
    r"hely|helyen|helyezés|helyezett|"  # Hungarian
    r"místo|místě|pozice|pozici|příčka|příčce|"  # Czech
    r"locul|locului|poziția|poziţia|pozitia|"  # Romanian
    r"θέση|θέσης|κατάταξη|"  # Greek
    r"hạng|thứ hạng|vị trí|"  # Vietnamese
    r"อันดับ|ลำดับ|"  # Thai
    r"מקום|במקום|דירוג|בדירוג|"  # Hebrew
    r"المرتبة|مرتبة|المركز|مركز|الترتيب|"  # Arabic
    r"nafasi(?:\s+ya)?|"  # Swahili
    r"स्थान|रैंक|पायदान|"  # Hindi
    r"місце|місці|позиція|позиції|"  # Ukrainian
    r"رتبه|رتبهٔ|جایگاه|مقام|"  # Persian
    r"sija|sijalla|sijalle|sijoitus|sijoituksella"  # Finnish
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
# Words written before a number to make it an ordinal, as CLDR's digits-ordinal rules write
# them (Vietnamese "thứ 85", Thai "ที่ 85") and the Romanian article of "al 207-lea", "a 5-a".
ORDINAL_PREFIXES = r"thứ|ที่|al|a"
