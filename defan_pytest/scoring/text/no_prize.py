"""Statements that no prize was awarded, in any language (SCORING.md clarifications 7 and 16).

Hand-written, and the one place it is: no library carries "no prize was awarded" or "nobody"
(CLDR, Babel, dateparser, num2words, lingua and spaCy's stop words were checked: none marks a
negation or a word for "none").  Two kinds of data:

- :data:`NONE_STATEMENT`, the phrases of English and the languages read first (French, German,
  Spanish, Portuguese, Italian, Dutch, Polish, Turkish, Indonesian, Russian, Chinese, Japanese,
  Korean), whole phrases as they are written;
- :data:`_LANGUAGES`, one line a language for the rest: its words of negation, its words of a
  prize or of awarding, and its words that alone say "nobody" or "none".  A clause that holds a
  negation and a prize word (``Inget pris delades ut``, ``Δεν απονεμήθηκε βραβείο``) or a word
  of none standing alone (``Ingen``, ``Κανείς``, ``Hakuna.``) is a statement of none; the rule
  is the same for every language, only the words differ.
"""
from __future__ import annotations

import re
from typing import FrozenSet, List, Optional, Set, Tuple

from defan_pytest.scoring.text.language import language
from defan_pytest.scoring.text.memo import short_text_memo

__all__ = ["NONE_STATEMENT", "NONE_WORDS", "first_none", "is_none_statement", "none_spans"]

NONE_STATEMENT = re.compile(
    r"\b(?:no\s+(?:[\w’'-]+\s+){0,3}?(?:prize|award|winner|laureate|recipient)s?\b|no\s+one\b"
    r"|not\s+(?:been\s+)?(?:awarded|given|presented|conferred)\b"
    r"|(?:wasn't|weren't|was\s+not|were\s+not)\s+(?:awarded|given|presented)\b"
    r"|withheld\b|nobody\b|none\b|n/a\b|no\s+award\b"
    # French
    r"|aucun(?:e)?\s+(?:[\w’'-]+\s+){0,2}?(?:prix|lauréat|laureat|gagnant|vainqueur|récipiendaire)\b"
    r"|pas\s+(?:été\s+|ete\s+)?(?:de\s+prix|décerné|decerne|attribué|attribue|remis)"
    r"|non\s+(?:décerné|decerne|attribué|attribue)|personne\s+n['’]"
    # German
    # ("kein Literaturnobelpreis": German writes the prize as one compound word)
    r"|kein(?:e|en)?\s+(?:[\w-]+\s+){0,2}?\w{0,30}?(?:preis|preisträger|preistrager|gewinner|vergabe|verleihung)\w{0,3}\b"
    r"|nicht\s+(?:\w+\s+)?(?:vergeben|verliehen)\b|niemand\b"
    # Spanish
    r"|ningún\s+(?:premio|ganador|galardonado)|ningun\s+(?:premio|ganador|galardonado)"
    r"|no\s+se\s+(?:otorgó|otorgo|concedió|concedio|entregó|entrego|otorga|concede)\b"
    r"|no\s+(?:fue|hubo)\s+(?:otorgado|concedido|entregado|premio|ganador)\b|desierto\b|nadie\b"
    # Portuguese
    r"|nenhum\s+(?:prêmio|prémio|premio|vencedor|laureado)|ninguém\b"
    r"|não\s+(?:foi|houve)\s+(?:atribuído|atribuido|concedido|entregue|prêmio|prémio|vencedor)"
    # Italian
    r"|nessun\s+(?:premio|vincitore)\b|nessuno\b"
    r"|non\s+(?:è\s+stato|e\s+stato|fu|venne)\s+(?:assegnato|conferito|attribuito)\b"
    r"|pas\s+eu\s+de\s+(?:prix|lauréat|laureat|gagnant)"
    # Dutch
    r"|geen\s+(?:[\w-]+\s+){0,2}?(?:prijs|winnaar|laureaat|prijswinnaar)\b|niet\s+(?:uitgereikt|toegekend)\b"
    # Polish
    r"|nie\s+(?:została|zostala|został|zostal|było|bylo)\s+(?:przyznana|przyznany|przyznane|przyznana)\b"
    r"|nie\s+przyznano\b|(?:nie\s+)?(?:przyznana|przyznano)\s+nie\b|brak\s+laureata\b"
    # Turkish, Indonesian
    r"|verilmedi\b|verilmemiştir\b|kazanan\s+yok\b|tidak\s+ada\b|tidak\s+diberikan\b"
    # Russian
    r"|не\s+(?:был[аио]?\s+)?(?:присужд\w*|вруч\w*|присужден\w*)|никто\s+не\b)"
    # Chinese, Japanese, Korean: no word boundaries in these scripts.
    r"|未颁发|未頒發|没有颁发|沒有頒發|未颁奖|未頒獎|无人获奖|無人獲獎|空缺"
    r"|授与されなかった|授与されず|該当者なし|受賞者なし|수여되지\s*않",
    re.I,
)
#: The words of :data:`NONE_STATEMENT` that also begin names ("Nobody Special", "Nadie Gómez").
NONE_WORDS = frozenset({"nobody", "none", "niemand", "nadie", "nessuno", "ninguém", "no one"})

# One line a language: (negation, prize or awarding, "nobody" / "none" alone), each a regex
# alternation.  Latin, Cyrillic, Greek, Armenian, Georgian, Hebrew and Arabic words are matched
# as words (prize words by their beginning: "palkinto", "palkintoa"); the scripts written with
# vowel signs or without spaces (Devanagari, Bengali, Tamil, Thai) inside words.
_LANGUAGES: Tuple[Tuple[str, str, str], ...] = (
    # Swedish, Danish, Norwegian
    (r"inte|ej|icke|ikke|ikkje|ingen|inget|inga|intet", r"pris\w*|vinnare|vinder|delades|utdelades|tilldelades|uddelt\w*|utdelt",
     r"ingen|inget|ingen vinnare"),
    (r"ei|eikä", r"palkin\w*|jaettu|jaettiin|myönnet\w*|voittaja\w*", r"ei kukaan|ei ketään|kukaan"),  # Finnish
    (r"ei|pole", r"auhin\w*|preemia\w*|antud|anti|võitja\w*", r"mitte keegi|keegi|ei keegi"),  # Estonian
    (r"nem|nincs|senki", r"díj\w*|dij\w*|adták|ítélték|kiosztották|nyertes\w*|kapta", r"senki|nincs|egyik sem"),  # Hungarian
    # Czech, Slovak
    (r"nebyl[aoy]?|nebol[aoi]?|neuděl\w*|neudel\w*|žádn\w*|žiadn\w*|nikdo|nikto",
     r"cen[auy]|ceně|udělen\w*|udelen\w*|laureát\w*|vítěz\w*|víťaz\w*", r"nikdo|nikto|žádný|žiadny|nikdo nezískal"),
    (r"nije|nisu|ni|nitko|niko|nihče|nobeden", r"nagrad\w*|dodijeljen\w*|dodeljen\w*|podeljen\w*|podijeljen\w*",
     r"nitko|niko|nihče|nobeden"),  # Croatian, Serbian, Bosnian, Slovene
    (r"nebuvo|nebija|neįteik\w*|nesuteik\w*|nepiešķ\w*|niekas|neviens", r"premij\w*|prēmij\w*|apdovan\w*|piešķir\w*|įteik\w*|skirt\w*|laureāt\w*",
     r"niekas|neviens"),  # Lithuanian, Latvian
    (r"δεν|κανείς|κανένας|κανένα|καμία|ουδείς", r"βραβε\w*|απονεμ\w*|απονομ\w*|νικητ\w*", r"κανείς|κανένας|κανένα|καμία|ουδείς"),  # Greek
    (r"nu|niciun|nicio|nimeni", r"premi\w*|acordat\w*|decernat\w*|câștigător\w*|castigator\w*", r"nimeni|niciunul|niciun"),  # Romanian
    # Ukrainian, Belarusian, Bulgarian, Macedonian, Serbian Cyrillic
    (r"не|ні|ніхто|никой|никој|нико|немає|нема|няма", r"прем\w*|прису\w*|присъд\w*|вруч\w*|нагород\w*|наград\w*|лауреат\w*|додел\w*",
     r"ніхто|нікого|никой|никој|нико|никто"),
    (r"hakuna|hai\w+|haku\w+|hapaku\w+|hawaku\w+", r"tuzo|zawadi|\w*tolewa|mshindi", r"hakuna|hakuna mtu|hakuna mshindi"),  # Swahili
    (r"tidak|tiada|tak|bukan", r"hadiah|anugerah|diberikan|dianugerahkan|pemenang", r"tiada|tidak ada|tak ada|tiada siapa"),  # Malay, Indonesian
    (r"walang|hindi|wala", r"premyo|gantimpala|iginawad|ibinigay|nanalo|nagwagi", r"wala|walang nanalo"),  # Tagalog
    (r"không|chưa", r"giải|trao|đoạt", r"không có|không ai|không có ai|không có giải"),  # Vietnamese
    (r"hiç|yok|kimse", r"ödül\w*|verilme\w*|kazanan", r"hiç kimse|kimse|yok"),  # Turkish
    (r"no|cap|ningú", r"premi|atorgat|concedit|lliurat|guanyador", r"ningú|cap"),  # Catalan
    (r"ez|inork|inor", r"sari\w*|eman\w*|irabazle\w*", r"inork|inor ez"),  # Basque
    (r"ni|nid|dim|neb", r"gwobr\w*|dyfarn\w*|enillydd", r"neb|dim"),  # Welsh
    (r"ekki|enginn|engin|ekkert", r"verðlaun\w*|veitt\w*", r"enginn|engin"),  # Icelandic
    (r"nuk|askush|asnjë", r"çmim\w*|dhën\w*|fitues\w*", r"askush|asnjë"),  # Albanian
    (r"չ\w*|ոչ", r"մրցանակ\w*|շնորհ\w*|հաղթող\w*", r"ոչ ոք|ոչ մեկը"),  # Armenian
    (r"არ|ვერ|არავინ", r"პრემი\w*|ჯილდო\w*|მიენიჭ\w*|გადაეც\w*", r"არავინ"),  # Georgian
    (r"לא|אין|אף", r"\w*פרס\w*|\w*הוענק\w*|\w*זוכה\w*|\w*חולק\w*", r"אף אחד|אין|אף לא אחד"),  # Hebrew
    (r"لم|لا|ليس|لن", r"\w*جائز\w*|\w*منح\w*|\w*فائز\w*|فاز", r"لا أحد|لا يوجد|لا شيء"),  # Arabic
    (r"نشد|نشده|نگرفت|نبود|هیچ\w*|نه", r"\w*جایزه\w*|اهدا|برنده\w*", r"هیچ‌کس|هیچ کس|هیچ‌کدام|هیچ"),  # Persian
    (r"نہیں|کوئی نہیں", r"انعام|ایوارڈ|دیا", r"کوئی نہیں"),  # Urdu
)
# Scripts written with vowel signs or without spaces: matched inside words.
_INNER: Tuple[Tuple[str, str, str], ...] = (
    ("नहीं|कोई नहीं", "पुरस्कार|सम्मान|दिया|विजेता", "कोई नहीं|कोई भी नहीं|कोई पुरस्कार नहीं"),  # Hindi, Marathi
    ("না|নি|নেই", "পুরস্কার|দেওয়া|প্রদান", "কেউ না|কেউ নয়|কেউ নেই"),  # Bengali
    ("இல்லை|வில்லை", "பரிசு|வழங்க", "யாரும் இல்லை|யாருமில்லை"),  # Tamil
    ("ไม่", "รางวัล|มอบ|ได้รับ", "ไม่มี|ไม่มีใคร|ไม่มีผู้ได้รับรางวัล"),  # Thai
)


def _words(part: str) -> str:
    # A word of Persian may end in a zero-width non-joiner before its suffix ("جایزه‌ای").
    return rf"(?<![\w\u200c])(?:{part})(?![\w\u200c])"


_NEG = "|".join([_words(n) for n, _, _ in _LANGUAGES] + [n for n, _, _ in _INNER])
_AWARD = "|".join([_words(a) for _, a, _ in _LANGUAGES] + [a for _, a, _ in _INNER])
_ALONE = "|".join([w for _, _, w in _LANGUAGES] + [w for _, _, w in _INNER])
# A negation and a prize word in one clause (no sentence end between them), either order.
_CLAUSE = r"[^.!?;。।։\n]{0,80}?"
_OTHER_STATEMENT = re.compile(rf"(?:{_NEG}){_CLAUSE}(?:{_AWARD})|(?:{_AWARD}){_CLAUSE}(?:{_NEG})", re.I)
# A word of none that is the whole answer, or the first sentence of it ("Nikdo. Cena ...").
_ALONE_RE = re.compile(rf"^\s*(?:{_ALONE})\s*(?=[.!?;。।։]|$)", re.I)
# Arabic vowel marks, replaced one for one by the tatweel (a letter, so offsets and words stay).
_ARABIC_MARKS = re.compile("[\u064b-\u0652\u0670]")


def _gate_words() -> Tuple[FrozenSet[str], Tuple[str, ...]]:
    """The negations of :data:`_LANGUAGES` as whole words and as beginnings (``hai\\w+``:
    ``hai``): the cheap test most texts stop at before the clause regex runs."""
    words: Set[str] = set()
    heads: Set[str] = set()
    for neg, _, alone in _LANGUAGES:
        for item in (neg + "|" + alone).split("|"):
            item = item.split(" ", 1)[0]
            plain = re.split(r"[\\\[(?*+]", item, 1)[0]
            (words if plain == item else heads).add(plain)
    return frozenset(words), tuple(sorted(h for h in heads if h))


_GATE_WORDS, _GATE_HEADS = _gate_words()
_INNER_NEGS = tuple(w for n, _, a in _INNER for w in (n + "|" + a).split("|"))
_TOKENS = re.compile(r"[^\W\d_]+")
_GATE_HEAD_RE = re.compile("(?<![^\\W\\d_])(?:" + "|".join(map(re.escape, _GATE_HEADS)) + ")")


def _may_hold(text: str) -> bool:
    """Does ``text`` hold a word of negation or of none of the table at all?"""
    if not text.isascii() and any(w in text for w in _INNER_NEGS):
        return True
    low = text.lower()
    return not _GATE_WORDS.isdisjoint(_TOKENS.findall(low)) or _GATE_HEAD_RE.search(low) is not None


def _plain(text: str) -> str:
    return text if text.isascii() else _ARABIC_MARKS.sub("\u0640", text)


def _other_language(text: str) -> bool:
    """Is ``text`` in a language other than English (or too short to tell)?  The table's
    words are read only there: ``ne``, ``pole``, ``anti`` and ``premi`` are English too."""
    return language(text) != "en"


def none_spans(text: str) -> List[Tuple[int, int]]:
    """Where ``text`` says no prize was awarded, in reading order (spans of the phrases)."""
    return list(_none_spans(text))


@short_text_memo(maxsize=8192)
def _none_spans(text: str) -> Tuple[Tuple[int, int], ...]:
    spans = [m.span() for m in NONE_STATEMENT.finditer(text)]
    if not _may_hold(text):
        return tuple(spans)
    plain = _plain(text)
    other = [m.span() for m in _OTHER_STATEMENT.finditer(plain)]
    m = _ALONE_RE.match(plain)
    if m is not None:
        other.append((m.start() + len(m.group()) - len(m.group().lstrip()), m.end()))
    if other and _other_language(text):  # the language is asked only where a phrase is found
        spans.extend(other)
    return tuple(sorted(set(spans)))


def first_none(text: str) -> Optional[Tuple[int, int, str]]:
    """The first statement of none: ``(start, end, phrase)``, else ``None``."""
    spans = none_spans(text)
    if not spans:
        return None
    s, e = spans[0]
    return s, e, text[s:e]


@short_text_memo(maxsize=8192)
def is_none_statement(text: str) -> bool:
    """Is the whole of ``text`` one phrase that says none (``None``, ``No prize was awarded``,
    ``Ingen``, ``Κανείς``)?"""
    t = text.strip()
    if NONE_STATEMENT.fullmatch(t):
        return True
    m = _ALONE_RE.match(_plain(t))
    return m is not None and m.end() == len(t) and _other_language(t)
