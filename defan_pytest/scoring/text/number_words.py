"""Numbers in words (SCORING.md clarification 5): cardinals and ordinals up to the hundreds
of thousands, in English and in French, German, Spanish, Portuguese and Italian: a whole text
that is one number (:func:`words_value`) and the numbers written in words in a response
(:func:`number_words_in_text`).
"""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Dict, List, Optional, Tuple

from defan_pytest.scoring.text.search import word_alternation

# Each language: word (accent-folded, lower case) -> value; ordinals separately.  Compounds of
# these (``twenty-five``, ``three hundred and eighty-sixth``, ``vingt-six``, ``treinta y seis``)
# are read by :func:`_combine`; one-word compounds (``sechsundzwanzig``, ``ventisei``,
# ``veintiseis``) by :func:`_split_compound`.
def _table(words: str, start: int = 0, step: int = 1) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for i, group in enumerate(words.split()):
        for w in group.split("/"):
            out[w] = start + i * step
    return out


_CARDINALS: Dict[str, Dict[str, int]] = {
    "en": {
        **_table("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                 "fourteen fifteen sixteen seventeen eighteen nineteen"),
        **_table("twenty thirty forty/fourty fifty sixty seventy eighty ninety", 20, 10),
        "hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9,
    },
    "fr": {
        **_table("zero un/une deux trois quatre cinq six sept huit neuf dix onze douze treize "
                 "quatorze quinze seize"),
        **_table("vingt/vingts trente quarante cinquante soixante", 20, 10),
        "quatre-vingt": 80, "quatre-vingts": 80, "cent": 100, "cents": 100, "mille": 1000,
        "million": 10**6, "millions": 10**6, "milliard": 10**9, "milliards": 10**9,
    },
    "de": {
        **_table("null eins/ein/eine zwei drei vier funf sechs sieben acht neun zehn elf zwolf "
                 "dreizehn vierzehn funfzehn sechzehn siebzehn achtzehn neunzehn"),
        **_table("zwanzig dreissig vierzig funfzig sechzig siebzig achtzig neunzig", 20, 10),
        "hundert": 100, "einhundert": 100, "tausend": 1000, "eintausend": 1000,
        "million": 10**6, "millionen": 10**6, "milliarde": 10**9, "milliarden": 10**9,
    },
    "es": {
        **_table("cero uno/una/un dos tres cuatro cinco seis siete ocho nueve diez once doce trece "
                 "catorce quince dieciseis diecisiete dieciocho diecinueve veinte"),
        **_table("treinta cuarenta cincuenta sesenta setenta ochenta noventa", 30, 10),
        **_table("cien/ciento doscientos/doscientas trescientos/trescientas cuatrocientos/cuatrocientas "
                 "quinientos/quinientas seiscientos/seiscientas setecientos/setecientas "
                 "ochocientos/ochocientas novecientos/novecientas", 100, 100),
        "mil": 1000, "millon": 10**6, "millones": 10**6,
    },
    "pt": {
        **_table("zero um/uma dois/duas tres quatro cinco seis sete oito nove dez onze doze treze "
                 "catorze/quatorze quinze dezesseis/dezasseis dezessete/dezassete dezoito "
                 "dezenove/dezanove vinte"),
        **_table("trinta quarenta cinquenta sessenta setenta oitenta noventa", 30, 10),
        **_table("cem/cento duzentos/duzentas trezentos/trezentas quatrocentos/quatrocentas "
                 "quinhentos/quinhentas seiscentos/seiscentas setecentos/setecentas "
                 "oitocentos/oitocentas novecentos/novecentas", 100, 100),
        "mil": 1000, "milhao": 10**6, "milhoes": 10**6, "bilhao": 10**9, "bilhoes": 10**9,
    },
    "it": {
        **_table("zero uno/una/un due tre quattro cinque sei sette otto nove dieci undici dodici "
                 "tredici quattordici quindici sedici diciassette diciotto diciannove"),
        **_table("venti trenta quaranta cinquanta sessanta settanta ottanta novanta", 20, 10),
        "cento": 100, "mille": 1000, "mila": 1000, "milione": 10**6, "milioni": 10**6,
        "miliardo": 10**9, "miliardi": 10**9,
    },
}
_ORDINALS: Dict[str, Dict[str, int]] = {
    "en": {
        **_table("zeroth first second third fourth fifth sixth seventh eighth ninth tenth eleventh "
                 "twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth"),
        **_table("twentieth thirtieth fortieth fiftieth sixtieth seventieth eightieth ninetieth", 20, 10),
        "hundredth": 100, "thousandth": 1000,
    },
    "fr": {"premier": 1, "premiere": 1, "second": 2, "seconde": 2, "unieme": 1},
    "de": {"erste": 1, "erster": 1, "ersten": 1, "erstes": 1, "erstem": 1},
    "es": {
        **_table("primero/primer/primera segundo/segunda tercero/tercer/tercera cuarto/cuarta "
                 "quinto/quinta sexto/sexta septimo/setimo/septima octavo/octava noveno/nono/novena "
                 "decimo/decima undecimo duodecimo", 1),
        **_table("vigesimo trigesimo cuadragesimo quincuagesimo sexagesimo septuagesimo "
                 "octogesimo nonagesimo centesimo", 20, 10),
    },
    "pt": {
        **_table("primeiro/primeira segundo/segunda terceiro/terceira quarto/quarta quinto/quinta "
                 "sexto/sexta setimo/setima oitavo/oitava nono/nona decimo/decima", 1),
        **_table("vigesimo trigesimo quadragesimo quinquagesimo sexagesimo septuagesimo/setuagesimo "
                 "octogesimo nonagesimo centesimo", 20, 10),
    },
    "it": _table("primo/prima secondo/seconda terzo/terza quarto/quarta quinto/quinta sesto/sesta "
                 "settimo/settima ottavo/ottava nono/nona decimo/decima", 1),
}
# Words that join the parts of one number ("one hundred and five", "vingt et un").
_JOINERS = frozenset({"and", "et", "und", "y", "e"})
#: The languages whose number words are read in running text of any language: English only.
#: Another language's words are read in a response in that language or in a bare answer,
#: because many of them are English words too ("once", "due", "elf", "sept", "cent", "Otto").
NUMBER_WORD_LANGS: Tuple[str, ...] = ("en", "fr", "de", "es", "pt", "it")


def _fold_word(word: str) -> str:
    w = word.lower().replace("ß", "ss")
    if not w.isascii():
        w = "".join(c for c in unicodedata.normalize("NFKD", w) if not unicodedata.combining(c))
    return w


def _ordinal_stem(word: str, lang: str) -> Optional[int]:
    """An ordinal formed from a cardinal by a suffix (``vingt-sixième``, ``sechsundzwanzigste``,
    ``ventiseiesimo``, ``twenty-sixth`` is handled by the table)."""
    if lang == "fr" and word.endswith("ieme") and len(word) > 5:
        stem = word[:-4]
        for cand in (stem, stem + "e", {"cinqu": "cinq", "neuv": "neuf"}.get(stem, "")):
            v = _cardinal_word(cand, "fr")
            if v is not None:
                return v
    elif lang == "de":
        stem = re.sub(r"(?:ste|te)[rsnm]?$", "", word)
        if stem != word:
            v = _cardinal_word({"drit": "drei", "sieb": "sieben", "ach": "acht"}.get(stem, stem), "de")
            if v is not None and v > 1:
                return v
    elif lang == "it" and re.search(r"esim[oaie]$", word) and len(word) > 7:
        stem = word[:-5]
        for cand in (stem, stem + "i", stem + "e", stem + "a", stem + "o"):
            v = _cardinal_word(cand, "it")
            if v is not None:
                return v
    return None


def _split_compound(word: str, lang: str) -> Optional[int]:
    """One-word compounds: ``sechsundzwanzig`` (de), ``ventisei``/``centoventi`` (it),
    ``veintiseis`` (es)."""
    table = _CARDINALS[lang]
    if lang == "de":
        m = re.fullmatch(r"(?:(\w+?)?hundert)?(?:(\w+?)und)?(\w+)?", word)
        if m and (m.group(1) or "hundert" in word or m.group(2)):
            h, u, t = m.groups()
            total = 0
            if "hundert" in word:
                total += 100 * (table.get(h, -1000) if h else 1)
            if u:
                uv = table.get(u)
                tv = table.get(t or "")
                if uv is None or tv is None or not 1 <= uv <= 9 or tv % 10 or tv < 20:
                    return None
                total += uv + tv
            elif t:
                tv = table.get(t)
                if tv is None or tv >= 100:
                    return None
                total += tv
            return total if total > 0 else None
        return None
    if lang == "es" and word.startswith("veinti") and len(word) > 6:
        v = table.get(word[6:])
        return 20 + v if v is not None and 1 <= v <= 9 else None
    if lang == "it":
        m = re.fullmatch(r"(\w*?)cento(\w*)", word)
        if m:
            h = table.get(m.group(1), None) if m.group(1) else 1
            rest = _cardinal_word(m.group(2), "it") if m.group(2) else 0
            if h is None or rest is None or not 1 <= h <= 9 or rest >= 100:
                return None
            return h * 100 + rest
        for tens in ("venti", "trenta", "quaranta", "cinquanta", "sessanta", "settanta", "ottanta", "novanta"):
            stem = tens[:-1]  # "ventuno", "trentotto": the vowel elides before uno and otto
            for head in (tens, stem):
                if word.startswith(head) and len(word) > len(head):
                    v = table.get(word[len(head):])
                    if v is not None and 1 <= v <= 9:
                        return table[tens] + v
    return None


@lru_cache(maxsize=4096)
def _cardinal_word(word: str, lang: str) -> Optional[int]:
    v = _CARDINALS[lang].get(word)
    if v is None and len(word) > 5:
        v = _split_compound(word, lang)
    return v


@lru_cache(maxsize=8192)
def _word_atom(word: str, lang: str) -> Optional[Tuple[int, bool]]:
    """One number word (folded) in one language: ``(value, is_ordinal)`` or ``None``."""
    v = _ORDINALS[lang].get(word)
    if v is not None:
        return v, True
    v = _cardinal_word(word, lang)
    if v is not None:
        return v, False
    v = _ordinal_stem(word, lang)
    if v is not None:
        return v, True
    return None


def _may_follow(last: Optional[int], v: int) -> bool:
    """May the part ``v`` follow ``last`` inside one number?  After a hundreds part, anything
    under a hundred; after a ten, a unit (and in French, ``soixante-dix``/``quatre-vingt-douze``,
    a teen); after ``dix``, a unit (``dix-sept``); never a unit after a unit (``one two``)."""
    if last is None:
        return True
    if last >= 100 and last % 100 == 0:
        return v < 100
    if 20 <= last <= 90 and last % 10 == 0:
        return 1 <= v <= 9 or (last in (60, 80) and 10 <= v <= 19)
    if last == 10:
        return 7 <= v <= 9
    return False


def _combine(atoms: List[Tuple[int, bool]]) -> Optional[Tuple[int, bool]]:
    """Add up the atoms of one number (``three``, ``hundred``, ``eighty``, ``sixth``), with
    ``hundred`` and ``thousand`` multiplying what comes before them.  Only the last atom may be
    an ordinal, unless all are (``vigésimo sexto``)."""
    ordinals = [o for _, o in atoms]
    if any(ordinals[:-1]) and not all(ordinals):
        return None
    total = current = 0
    last: Optional[int] = None
    scale = 0  # the last of thousand, million, billion: each one smaller than the one before
    for i, (v, _) in enumerate(atoms):
        if i > 0 and v >= 1000:
            if current >= 1000 or (scale and v >= scale):
                return None
            total += (current or 1) * v
            current, last, scale = 0, None, v
            continue
        if i > 0 and v == 100 and last is not None and last < 100:
            if current >= 100:
                return None
            current *= 100
            last = 100
            continue
        if not _may_follow(last, v):
            return None
        current += v
        last = v
    return total + current, ordinals[-1]


_WORD_SPLIT = re.compile(r"[\s\-‐]+")
_ONLY_WORDS = re.compile(r"[^\W\d_]+(?:[\s\-‐]+[^\W\d_]+)*")


def words_value(text: str, lang: str = "") -> Optional[Tuple[int, bool]]:
    """The value of ``text`` when it is, as a whole, one number in words: ``(value, ordinal)``.

    English is always read; another language's words too (a bare answer has no language).

    >>> words_value("three hundred and eighty-sixth"), words_value("vingt-six")
    ((386, True), (26, False))
    """
    t = text.strip().rstrip(".").strip()
    if not t or len(t) > 120 or _ONLY_WORDS.fullmatch(t) is None:
        return None  # digits, punctuation or a long text: not a number in words
    words = [w for w in _WORD_SPLIT.split(_fold_word(t)) if w]
    if len(words) > 20:
        return None
    for language in _word_langs(lang, bare=True):
        if _word_atom(words[0], language) is None and words[0] != "a":
            continue  # most texts fail on their first word: no need to read on
        atoms = _atoms(words, language)
        if atoms:
            value = _combine(atoms)
            if value is not None:
                return value
    return None


def _word_langs(lang: str, bare: bool) -> Tuple[str, ...]:
    if bare:
        return NUMBER_WORD_LANGS if lang in ("", "en") else (lang, "en")
    return ("en",) if lang in ("", "en") or lang not in _CARDINALS else (lang, "en")


def _atoms(words: List[str], lang: str) -> Optional[List[Tuple[int, bool]]]:
    out: List[Tuple[int, bool]] = []
    if lang == "fr":  # "quatre-vingt(s)" is one word for 80, "quatre-vingt-dix" 90
        joined = " ".join(words).replace("quatre vingts", "quatre-vingts").replace("quatre vingt", "quatre-vingt")
        words = joined.split()
    for i, w in enumerate(words):
        if w in _JOINERS and 0 < i < len(words) - 1:
            continue
        if w == "a" and lang == "en" and i == 0 and len(words) > 1:
            continue  # "a hundred"
        atom = _word_atom(w, lang)
        if atom is None:
            return None
        out.append(atom)
    return out or None


_WORD_TOKEN = re.compile(r"[^\W\d_]+(?:[-‐][^\W\d_]+)*")


# An English number word anywhere (compounds such as "twenty-six" start with one): the gate
# before the word-by-word reading, which most responses (no number words) never reach.
_ENGLISH_NUMBER_WORD = re.compile(
    r"\b" + word_alternation(set(_CARDINALS["en"]) | set(_ORDINALS["en"])) + r"\b", re.I
)


def _run_value(words: List[str], langs: Tuple[str, ...]) -> Optional[Tuple[int, bool]]:
    for language in langs:
        atoms = _atoms(words, language)
        value = _combine(atoms) if atoms else None
        if value is not None:
            return value
    return None


def number_words_in_text(text: str, lang: str = "") -> List[Tuple[int, int, int, bool]]:
    """Numbers written in words in ``text``: ``(start, end, value, is_ordinal)``, in reading
    order.  English words are read in any text; another language's only in a response in that
    language (many of them are English words too: ``once``, ``due``, ``elf``, ``sept``, ``Otto``).

    >>> number_words_in_text("It came twenty-sixth, then fifth and sixth.")
    [(8, 20, 26, True), (27, 32, 5, True), (37, 42, 6, True)]
    """
    langs = _word_langs(lang, bare=False)
    if langs == ("en",) and _ENGLISH_NUMBER_WORD.search(text) is None:
        return []
    out: List[Tuple[int, int, int, bool]] = []
    run: List[Tuple[int, int, str]] = []  # the current run of words: (start, end, folded word)

    def flush() -> None:
        while run and run[-1][2] in _JOINERS:
            run.pop()
        if run:
            value = _run_value([p for _, _, w in run for p in _WORD_SPLIT.split(w) if p], langs)
            if value is not None:
                out.append((run[0][0], run[-1][1], value[0], value[1]))
            else:
                # "between forty and fifty": two numbers joined by a word, read one by one.
                part: List[Tuple[int, int, str]] = []
                for item in run + [(0, 0, "and")]:
                    if item[2] in _JOINERS:
                        if part:
                            v = _run_value([p for _, _, w in part for p in _WORD_SPLIT.split(w) if p], langs)
                            if v is not None:
                                out.append((part[0][0], part[-1][1], v[0], v[1]))
                        part = []
                    else:
                        part.append(item)
        run.clear()

    prev_end = 0
    for m in _WORD_TOKEN.finditer(text):
        if run and (text[prev_end: m.start()].strip() or "\n" in text[prev_end: m.start()]):
            flush()  # punctuation or a line break between two words ends a number
        prev_end = m.end()
        w = _fold_word(m.group())
        if w in _JOINERS:
            if run:
                run.append((m.start(), m.end(), w))
            continue
        parts = [p for p in _WORD_SPLIT.split(w) if p]
        if parts and all(any(_word_atom(p, lg) is not None for lg in langs) for p in parts):
            run.append((m.start(), m.end(), w))
        else:
            flush()
    flush()
    return out
