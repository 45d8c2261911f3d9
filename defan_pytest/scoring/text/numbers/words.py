"""Numbers in words (SCORING.md clarifications 5 and 16), read by libraries, not tables.

- English, French, German, Spanish, Portuguese, Italian, Dutch and Danish: ``text2num``
  (``alpha2digit``), cardinals and ordinals, compounds in one word (``sechsundzwanzig``,
  ``trecentosettantunomiladuecentoventi``) included.
- Russian, Polish, Turkish, Indonesian and Swedish, which ``text2num`` does not cover, and
  every other language a library writes: the one compositional reader of
  :mod:`defan_pytest.scoring.text.numbers.vocab` (its vocabulary harvested from num2words and
  CLDR), which also reads the few forms ``text2num`` misses (the elided Italian
  ``centottantotto``).

:func:`words_value` reads a whole text that is one number; :func:`number_words_in_text` finds
the numbers written in words in a response.  Hand-written here: only the words that join the
parts of a number (``and``, ``et``, ``und``, ``y``, ``e``, ``en``, ``og``, ``i``, ``ve``), which
neither library lists.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Dict, FrozenSet, List, Optional, Pattern, Tuple

from defan_pytest.scoring.text.memo import short_text_memo
from defan_pytest.scoring.text.numbers.any_language import general_value
from defan_pytest.scoring.text.numbers.sources import vocab_langs
from defan_pytest.scoring.text.numbers.vocab import is_vocab_word, value_in

#: Languages ``text2num`` reads.
T2N_LANGS: FrozenSet[str] = frozenset({"en", "fr", "de", "es", "pt", "it", "nl", "da"})
#: Languages text2num does not read, read first for a bare answer (by the general reader).
N2W_LANGS: Tuple[str, ...] = ("ru", "pl", "tr", "id", "sv")
# The text2num languages num2words also writes (its ordinals fill text2num's few gaps).
_N2W_SUPPORTED = frozenset({"en", "fr", "de", "es", "pt", "it", "nl", "da"})
#: The languages a bare answer of unknown language is read in, in this order (English first).
NUMBER_WORD_LANGS: Tuple[str, ...] = ("en", "fr", "de", "es", "pt", "it", "nl") + N2W_LANGS
# Words that join the parts of one number ("one hundred and five", "vingt et un", "treinta y
# seis", "vinte e seis", "sto i dwa"); neither library lists them.
_JOINERS = frozenset({"and", "et", "und", "y", "e", "en", "og", "i", "ve"})
# What alpha2digit writes for a number: digits and maybe an ordinal mark (26th, 26ème, 26.,
# 26º, 1er).
_DIGITS_OUT = re.compile(r"(\d+)(st|nd|rd|th|ème|eme|e|er|re|ère|ᵉ|º|ª|°|\.|o|a)?")


def _alpha2digit(text: str, lang: str) -> str:
    from text_to_num import alpha2digit  # type: ignore[import-untyped]

    try:
        return str(alpha2digit(text, lang, 0))
    except Exception:  # an unsupported language or an input the library refuses
        return text


@lru_cache(maxsize=1)
def _num2words():  # type: ignore[no-untyped-def]
    try:
        from num2words import num2words  # type: ignore[import-untyped]
    except ImportError:  # an install without it: those languages read no words
        return None
    return num2words


@lru_cache(maxsize=None)
def _n2w_ordinals(lang: str) -> Dict[str, int]:
    """Ordinals under a hundred as num2words writes them (``sixtieth``: 60)."""
    n2w = _num2words()
    out: Dict[str, int] = {}
    if n2w is None:
        return out
    for n in range(1, 101):
        try:
            out.setdefault(_norm(n2w(n, lang=lang, to="ordinal")), n)
        except Exception:  # a language without ordinals
            break
    return out


def _norm(text: str) -> str:
    return re.sub(r"[\s\-‐]+", " ", text.lower()).strip()


def _phrase_value(words: List[str], lang: str) -> Optional[Tuple[int, bool]]:
    """The value of a run of words (lower case) that is one number in ``lang``."""
    if lang in T2N_LANGS:
        if lang == "en" and len(words) > 1 and words[0] == "a":
            words = words[1:]  # "a hundred"
        out = _alpha2digit(" ".join(words), lang)
        m = _DIGITS_OUT.fullmatch(out.strip())
        if m is None:
            if len(words) > 1 and out == " ".join(words):
                return None  # nothing in it is a number word
            fallback = _t2n_ordinal_fallback(words, lang)
            if fallback is None and lang in vocab_langs():
                # text2num misses a few forms num2words writes (the elided Italian
                # "centottantotto"): the general reader reads them.
                fallback = value_in([p for w in words for p in _WORD_SPLIT.split(w) if p], lang)
            return fallback
        suffix = m.group(2)
        if suffix in ("o", "a") and lang not in ("es", "pt", "it"):
            return None
        return int(m.group(1)), suffix is not None
    if lang in N2W_LANGS and lang in vocab_langs():
        return value_in(words, lang)
    return None


def _t2n_ordinal_fallback(words: List[str], lang: str) -> Optional[Tuple[int, bool]]:
    """text2num misses a few ordinals (``sixtieth``, ``sedicesimo``): a last word that
    num2words writes as an ordinal under a hundred is read as that cardinal, and the whole as
    an ordinal (``two hundred and sixtieth`` is 260th)."""
    if lang not in _N2W_SUPPORTED or not words:
        return None
    last = _n2w_ordinals(lang).get(words[-1])
    n2w = _num2words()
    if last is None or n2w is None:
        return None
    out = _alpha2digit(" ".join(words[:-1] + [n2w(last, lang=lang)]), lang)
    m = _DIGITS_OUT.fullmatch(out.strip())
    return (int(m.group(1)), True) if m is not None and m.group(2) is None else None


_WORD_SPLIT = re.compile(r"[\s\-‐]+")
_ONLY_WORDS = re.compile(r"[^\W\d_](?:[^\W\d_]|[\s\-‐'’ʼ\u0300-\u036f\u0591-\u05c7\u064b-\u065f\u0670\u0900-\u0dff\u0e00-\u0eff\u1000-\u109f])*")


@short_text_memo(maxsize=8192)
def words_value(text: str, lang: str = "") -> Optional[Tuple[int, bool]]:
    """The value of ``text`` when it is, as a whole, one number in words: ``(value, ordinal)``.

    English is always read; a bare answer of unknown language in every language of
    :data:`NUMBER_WORD_LANGS`.

    >>> words_value("three hundred and eighty-sixth"), words_value("vingt-six")
    ((386, True), (26, False))
    >>> words_value("trzydzieści tysięcy dwieście trzynaście"), words_value("mil novecentos e noventa e quatro")
    ((30213, False), (1994, False))
    """
    # "one thousand, one hundred": a comma between the words of one number (num2words writes it).
    t = re.sub(r"(?<=[^\W\d_]),\s+(?=[^\W\d_])", " ", text.strip().rstrip(".").strip())
    if not t or len(t) > 120 or _ONLY_WORDS.fullmatch(t) is None:
        return None  # digits, punctuation or a long text: not a number in words
    lowered = t.lower()
    words = [w for w in re.split(r"\s+", lowered) if w]
    if len(words) > 20:
        return None
    for language in _word_langs(lang, bare=True):
        ws = [p for w in words for p in _WORD_SPLIT.split(w) if p] if language in N2W_LANGS else words
        value = _phrase_value(ws, language)
        if value is not None:
            return value
    # Any other language a library writes numbers in (Romanian, Swahili, Hindi, Greek, ...):
    # the compositional reader of number_vocab, its vocabulary harvested from the libraries.
    return general_value(t, lang)


def _word_langs(lang: str, bare: bool) -> Tuple[str, ...]:
    known = lang in T2N_LANGS or lang in N2W_LANGS
    if bare:
        return NUMBER_WORD_LANGS if lang in ("", "en") or not known else (lang, "en")
    if lang not in ("", "en") and not known and lang in vocab_langs():
        return (lang, "en")  # a response in Greek, Hindi, Thai, ...: the general reader
    return ("en",) if lang in ("", "en") or not known else (lang, "en")


@short_text_memo(maxsize=65536)
def _is_number_word(word: str, lang: str) -> bool:
    """Is this one word (lower case, maybe hyphenated) a number word of ``lang``?"""
    if lang in T2N_LANGS:
        if any(c.isdigit() for c in _alpha2digit(word, lang)):
            return True
        return lang in _N2W_SUPPORTED and word in _n2w_ordinals(lang)
    if lang in N2W_LANGS:
        parts = [p for p in _WORD_SPLIT.split(word) if p]
        return bool(parts) and all(is_vocab_word(p, lang) for p in parts) or value_in([word], lang) is not None
    return is_vocab_word(word, lang)


@lru_cache(maxsize=1)
def _english_gate() -> Optional[Tuple[Pattern[str], FrozenSet[str]]]:
    """A regex of every English number word (from num2words: cardinals and ordinals under a
    hundred, and the scale words), the cheap test that most responses, which hold none, stop
    at, and those words (in ASCII text, a match is a whole ``\\w+`` word, lower-cased, among
    them).  ``None`` without num2words (then every response is read word by word)."""
    n2w = _num2words()
    if n2w is None:
        return None
    words = set()
    for n in list(range(101)) + [1000, 10**6, 10**9]:
        words.update(_norm(n2w(n, lang="en")).split())
        if n:
            words.update(_norm(n2w(n, lang="en", to="ordinal")).split())
    words.update({"hundredth", "thousandth", "millionth"})
    words -= {"and", "a"}
    return re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, words), key=len, reverse=True)) + r")\b", re.I), frozenset(words)


_WORD_TOKEN = re.compile(r"[^\W\d_]+(?:[-‐][^\W\d_]+)*")
_W_WORDS = re.compile(r"\w+")
# The most words one number in words takes ("seven hundred and seventy-seven thousand seven
# hundred and seventy-seven" is 11).
_MAX_RUN = 24


def _run_value(words: List[str], langs: Tuple[str, ...]) -> Optional[Tuple[int, bool]]:
    for language in langs:
        ws = [p for w in words for p in _WORD_SPLIT.split(w) if p] if language in N2W_LANGS else words
        value = _phrase_value(ws, language)
        if value is None and language not in T2N_LANGS and language not in N2W_LANGS:
            value = general_value(" ".join(words), language)
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
    if langs == ("en",):
        gate = _english_gate()
        if gate is not None and (gate[1].isdisjoint(_W_WORDS.findall(text.lower())) if text.isascii() else gate[0].search(text) is None):
            return []
    out: List[Tuple[int, int, int, bool]] = []
    run: List[Tuple[int, int, str]] = []  # the current run of words: (start, end, lower-case word)

    def emit(part: List[Tuple[int, int, str]]) -> bool:
        v = _run_value([w for _, _, w in part], langs)
        if v is not None:
            out.append((part[0][0], part[-1][1], v[0], v[1]))
        return v is not None

    def flush() -> None:
        while run and run[-1][2] in _JOINERS:
            run.pop()
        if run and not emit(run):
            # "between forty and fifty": two numbers joined by a word, read one by one.
            part: List[Tuple[int, int, str]] = []
            for item in run + [(0, 0, "and")]:
                if item[2] in _JOINERS:
                    if part:
                        emit(part)
                    part = []
                else:
                    part.append(item)
        run.clear()

    prev_end = 0
    for m in _WORD_TOKEN.finditer(text):
        if run and (text[prev_end: m.start()].strip() or "\n" in text[prev_end: m.start()]):
            flush()  # punctuation or a line break between two words ends a number
        prev_end = m.end()
        w = m.group().lower()
        if w in _JOINERS:
            if run:
                run.append((m.start(), m.end(), w))
            continue
        if any(_is_number_word(w, lg) for lg in langs):
            if len(run) >= _MAX_RUN:
                flush()  # no number is this long: a runaway repetition is read in pieces
            run.append((m.start(), m.end(), w))
        else:
            flush()
    flush()
    return out
