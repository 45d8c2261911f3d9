"""Numbers: reading one written number, finding numbers in text, and canonical forms.

Shared by the numeric and rank answer types (a rank is a number too) and by the math rule.

Separators follow SCORING.md (clarification 4): in German, French, Spanish, Portuguese and
Italian a dot or a space groups thousands and a comma marks decimals; in English the reverse;
a space (or a thin space, or an apostrophe) only ever groups thousands; several equal
separators each followed by three digits group thousands in any language; one separator
followed by exactly three digits groups thousands when the gold is an integer; and a separator
that cannot group thousands (``53,51``, ``42.5``) marks decimals in any language.  Everything
that reads a number takes the response's language (``lang``, from
:func:`defan_pytest.scoring.text.words.language`) and whether the gold is an integer (``integer_gold``).

Currency signs, codes and abbreviations around a number (``₹21.60``, ``Rs. 642.86``,
``USD 5``, ``5 €``) are part of the number (clarification 6); number words up to the hundreds
of thousands, cardinal and ordinal, are numbers (clarification 5).

>>> parse_number("1.54 million"), canonical_number(parse_number("1,351,921"))
(Decimal('1540000.00'), '1351921')
>>> parse_number("53,51", lang="de"), parse_number("326.121", integer_gold=True)
(Decimal('53.51'), Decimal('326121'))
>>> parse_number("Rs. 642.86"), parse_number("twenty-five"), parse_number("vingt-six")
(Decimal('642.86'), Decimal('25'), Decimal('26'))
"""
from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Dict, FrozenSet, List, Optional, Tuple

from defan_pytest.scoring.text.words import word_alternation

#: Languages whose numbers group thousands with a dot or a space and mark decimals with a comma.
DECIMAL_COMMA_LANGS = frozenset({"de", "fr", "es", "pt", "it"})

_SCALES = {
    "thousand": Decimal(1000), "thousands": Decimal(1000), "tausend": Decimal(1000),
    "mille": Decimal(1000), "mila": Decimal(1000), "mil": Decimal(1000),
    "million": Decimal(10) ** 6, "millions": Decimal(10) ** 6, "mn": Decimal(10) ** 6,
    "millionen": Decimal(10) ** 6, "mio": Decimal(10) ** 6, "millón": Decimal(10) ** 6,
    "millon": Decimal(10) ** 6, "millones": Decimal(10) ** 6, "milhão": Decimal(10) ** 6,
    "milhao": Decimal(10) ** 6, "milhões": Decimal(10) ** 6, "milhoes": Decimal(10) ** 6,
    "milione": Decimal(10) ** 6, "milioni": Decimal(10) ** 6,
    "billion": Decimal(10) ** 9, "billions": Decimal(10) ** 9, "bn": Decimal(10) ** 9,
    "milliard": Decimal(10) ** 9, "milliards": Decimal(10) ** 9, "milliarde": Decimal(10) ** 9,
    "milliarden": Decimal(10) ** 9, "mrd": Decimal(10) ** 9, "miliardo": Decimal(10) ** 9,
    "miliardi": Decimal(10) ** 9, "bilhão": Decimal(10) ** 9, "bilhao": Decimal(10) ** 9,
    "bilhões": Decimal(10) ** 9, "bilhoes": Decimal(10) ** 9,
    "trillion": Decimal(10) ** 12,
}
# Scale words as a regex (longest first, so "millions" is not read as "million" + "s").  Left
# out on purpose: the Spanish "billón" and Portuguese "bilião", a million millions (long scale),
# which an English reader would take for 10^9.
_SCALE_RE = "|".join(re.escape(w) for w in sorted(_SCALES, key=len, reverse=True))
_PERCENT_RE = r"%|percent|per\s+cent|pour\s+cent|prozent|por\s+ciento|por\s+cento|per\s+cento"
_VULGAR = {
    "½": Decimal("0.5"), "⅓": Decimal(1) / Decimal(3), "⅔": Decimal(2) / Decimal(3),
    "¼": Decimal("0.25"), "¾": Decimal("0.75"), "⅕": Decimal("0.2"), "⅛": Decimal("0.125"),
}

# Currency (clarification 6): a sign, or a code or abbreviation, before or after the number.
_CUR_SIGN = r"[$€£¥₹₩₽₺₦₱฿₫₪₴₵¢]"
_CUR_CODE = (
    r"(?-i:(?:US|USD|A|AU|AUD|C|CA|CAD|NZ|HK|S|R|MX)\$|Rs\.?|INR|USD|EUR|GBP|AUD|CAD|JPY|CNY|RMB|"
    r"CHF|NZD|HKD|SGD|BRL|MXN|ZAR|SEK|NOK|DKK|KRW|RUB|PKR|BDT|LKR|NPR|AED|SAR|QAR|Rp|Tk)"
)
_CUR_BEFORE = rf"(?:{_CUR_SIGN}|{_CUR_CODE}(?![A-Za-z]))"
_CUR_AFTER = rf"(?:{_CUR_SIGN}|(?<![A-Za-z]){_CUR_CODE}(?![\w$]))"

# The digits of one number: grouped (one kind of separator between groups of three, and
# maybe a decimal part after another separator), a single separator, or plain digits.
_SPACE = "[ \u00a0\u202f\u2009]"
_SEP_CHARS = ".,'’ \u00a0\u202f\u2009"


def _body(name: str) -> str:
    return (
        rf"\d{{1,3}}(?P<{name}>[,.'’]|{_SPACE})\d{{3}}(?:(?P={name})\d{{3}})*(?:[.,]\d+)?(?!\d)"
        r"|\d+[.,]\d+|\d+"
    )


_NUM_CORE = re.compile(
    rf"^\s*(?:{_CUR_BEFORE}\s?)?([-+−]?)\s*(?:{_CUR_BEFORE}\s?)?({_body('g')}|[.,]\d+)"
    rf"(?:\s*/\s*(\d+))?\s*(?:({_PERCENT_RE})|({_SCALE_RE})\.?)?\s*(?:{_CUR_AFTER})?\s*$",
    re.IGNORECASE,
)
_SEP = re.compile(r"[.,'’ \u00a0\u202f\u2009]")


def _grouped(groups: List[str]) -> bool:
    """Do these digit groups read as thousands (``1``, ``351``, ``921``)?"""
    return 1 <= len(groups[0]) <= 3 and all(len(g) == 3 for g in groups[1:])


def read_digits(digits: str, lang: str = "", integer_gold: Optional[bool] = None) -> Optional[Decimal]:
    """The value of a run of digits and separators, read in the response's language.

    >>> read_digits("8.159.808"), read_digits("1,5", lang="fr"), read_digits("1,500")
    (Decimal('8159808'), Decimal('1.5'), Decimal('1500'))
    >>> read_digits("391.197"), read_digits("391.197", lang="de"), read_digits("391.197", integer_gold=True)
    (Decimal('391.197'), Decimal('391197'), Decimal('391197'))
    """
    seps = _SEP.findall(digits)
    try:
        if not seps:
            return Decimal(digits)
        groups = _SEP.split(digits)
        if any(not g for g in groups[1:]) or (not groups[0] and len(groups) != 2):
            return None
        kinds = ["." if s == "." else "," if s == "," else " " for s in seps]  # "'" groups like a space
        comma_decimal = lang in DECIMAL_COMMA_LANGS
        if all(k == kinds[0] for k in kinds):
            sep = kinds[0]
            if sep == " " or len(kinds) >= 2:
                # Spaces and apostrophes only group; two equal dots or commas cannot be decimals.
                return Decimal("".join(groups)) if _grouped(groups) else None
            head, tail = groups
            if head and _grouped(groups) and head[0] != "0":
                # One separator and exactly three digits: thousands for an integer gold (in any
                # language), otherwise as the language writes it.
                if integer_gold or (sep == ",") != comma_decimal:
                    return Decimal(head + tail)
                return Decimal((head or "0") + "." + tail)
            # A comma before other than three digits can only be a decimal comma ("53,51"),
            # whatever the language; a dot the same.
            return Decimal((head or "0") + "." + tail)
        # Mixed: a consistent run of one separator, then another one before the decimals
        # ("1.351.921,5", "1,351,921.5", "1 351 921,5").
        if len(set(kinds[:-1])) == 1 and kinds[-1] != kinds[0] and kinds[-1] in ".," and _grouped(groups[:-1]):
            return Decimal("".join(groups[:-1]) + "." + groups[-1])
        return None
    except InvalidOperation:
        return None


def parse_number(text: str, lang: str = "", integer_gold: Optional[bool] = None) -> Optional[Decimal]:
    """The value of one written number (``1,351,921``, ``-3``, ``1.54 million``, ``3/4``,
    ``₹21.60``, ``twenty-five``), its separators read as :func:`read_digits` reads them."""
    t = text.strip()
    if t in _VULGAR:
        return _VULGAR[t]
    m = _NUM_CORE.match(t)
    if not m:
        w = words_value(t, lang)
        return None if w is None else Decimal(w[0])
    sign, digits, _sep, denom, _percent, scale = m.groups()
    value = read_digits(digits, lang, integer_gold)
    if value is None:
        return None
    try:
        if denom is not None:
            # Decimal, not int: reads any number of digits (int() refuses past 4300).
            if Decimal(denom) == 0:
                return None
            value = value / Decimal(denom)
    except InvalidOperation:
        return None
    if scale:
        value = value * _SCALES[scale.lower()]
    if sign in ("-", "−"):
        value = -value
    return value


def decimals_of(text: str) -> int:
    """Number of decimals a written gold number carries (``42.85`` -> 2, ``1,351,921`` -> 0)."""
    m = re.search(r"\.(\d+)", text)
    return len(m.group(1)) if m else 0


def canonical_number(value: Decimal) -> str:
    """A canonical string for a number: no exponent, no trailing zeros (``1350000``).

    Any number a response can write has one, however long: past Python's 4300-digit limit on
    ``str(int)`` and past the decimal context's 28 digits the digits are written out as they are.
    """
    try:
        if value == value.to_integral_value():
            return str(int(value))
        # A repeating fraction (2/3) is cut at 12 places: far below any gold's precision.
        return format(value.quantize(Decimal("1e-12")).normalize(), "f")
    except (ValueError, InvalidOperation):
        # Too many digits for the above (a model answering with a 5,000-digit number).
        text = format(value, "f")
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return "0" if text in ("", "-0") else text


# --------------------------------------------------------------------------------------------
# number words (clarification 5): cardinals and ordinals, in English and the five languages
# --------------------------------------------------------------------------------------------

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


_NUMBER_IN_TEXT = re.compile(
    rf"(?<![\w.,/])(?<![A-Za-z]-)(?P<sign>(?<!\d)[-−](?=[\d$€£¥₹]))?(?:{_CUR_BEFORE}\s?)?"
    rf"(?P<num>{_body('s')})"
    r"(?:\s*/\s*(?P<den>\d+)(?![\d/]))?"
    rf"(?P<scale>\s*(?i:{_PERCENT_RE}|(?:{_SCALE_RE})\.?)(?!\w))?"  # German capitalizes "Millionen"
    r"(?![\w]|[.,]\d)"
)
_FRACTION_TAIL = re.compile(r"\s*/\s*\d+$")


def numbers_in_text(
    text: str, fractions: bool, lang: str = "en", integer_gold: Optional[bool] = None
) -> List[Tuple[int, int, str, bool]]:
    """Numbers written in ``text``: ``(start, end, text_of_number, is_fraction)``.

    Only numbers that read in ``lang`` are kept (``5,6`` in English is not one number); read
    each one's text back with :func:`parse_number` and the same ``lang`` and ``integer_gold``.
    In running text an unknown language reads as English.
    """
    lang = lang or "en"
    out = []
    for m in _NUMBER_IN_TEXT.finditer(text):
        num = m.group("num")
        if not num.isdigit() and read_digits(num, lang, integer_gold) is None:
            continue
        s, e = m.span()
        frac = m.group("den") is not None
        if frac and not fractions:
            # "3/4" outside math is two numbers, not a fraction (and never a date here).
            num = (m.group("sign") or "") + m.group("num")
            out.append((s, m.end("num"), num, False))
            out.append((m.start("den"), m.end("den"), m.group("den"), False))
            continue
        out.append((s, e, m.group(), frac))
    return out


@lru_cache(maxsize=4096)
def question_numbers(question: str) -> FrozenSet[Decimal]:
    """The numbers a question contains (a claim equal to one only repeats the question)."""
    vals: set[Optional[Decimal]] = set()
    for _, _, t, _ in numbers_in_text(question, fractions=False):
        v = parse_number(t, "en")
        if v is not None:
            vals.add(v)
    # "0-4 age group": both ends of a range the question names are the question's numbers.
    for m in re.finditer(r"(\d+)\s*[-–—]\s*(\d+)", question):
        vals.add(parse_number(m.group(1)))
        vals.add(parse_number(m.group(2)))
    return frozenset(v for v in vals if v is not None)
