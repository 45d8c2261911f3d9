"""Number words of any language the libraries write, read by one compositional reader
(SCORING.md clarifications 5 and 16).

No table per language: a language's vocabulary is harvested, once and at first use, by running
the libraries that write numbers in words over a small set of numbers -- ``num2words`` and the
Unicode CLDR's rule-based number formats (``unicode_rbnf``: every cardinal rule set, so the
feminine, neuter and case forms too) -- and learning what each word does from the phrases:

- a phrase of one word is that word's value (``sita`` 6, ``εννιακόσια`` 900, ``हज़ार`` 1000);
- a word that is the only unknown part of a phrase is given the one role that makes the
  phrase read as its number: a joining word (``și``, ``na``, ``lẻ``), a multiplier (``mươi``
  x10, ``sute`` x100, ``mii`` x1000) or a value (``două`` 2, ``ושניים`` 2);
- a word written as one compound (``hatszáznyolcvanhat``, ``หกสิบ``) is cut into known words,
  longest first.

The reader is the usual accumulator: values add up inside a group under a thousand, a
multiplier under a thousand multiplies the value before it (``उन्नीस सौ`` is 1900), a scale
word closes the group (``tisíc``, ``мільйон``); a language that writes the multiplier first
(Swahili ``mia tisa`` is 900, ``elfu moja`` 1000) is told by its phrases of 200 and 300.
Every language's vocabulary is built only when a text needs it, and cached; reading is linear
in the words (at most :data:`MAX_WORDS`).
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Dict, List, Optional, Sequence, Set, Tuple

from defan_pytest.scoring.text.memo import short_text_memo
from defan_pytest.scoring.text.numbers.sources import phrases, vocab_langs, words_of

__all__ = ["MAX_WORDS", "is_vocab_word", "value_in"]

#: The most words one number in words takes here.
MAX_WORDS = 24
# The numbers whose phrases teach a language its words.
_SAMPLES: Tuple[int, ...] = tuple(
    list(range(0, 101)) + list(range(200, 1000, 100)) + [101, 110, 111, 121, 999]
    + [k * 1000 for k in range(1, 10)] + [10**4, 2 * 10**4, 21000, 10**5, 2 * 10**5]
    + [10**6, 2 * 10**6, 5 * 10**6, 10**7, 2 * 10**7, 10**8, 2 * 10**8, 10**9, 2 * 10**9]
)
_POWERS = (10, 100, 1000, 10**4, 10**5, 10**6, 10**7, 10**8, 10**9, 10**12)
_JOIN = -1
_VOWELS = frozenset("aeiouàèéìòóù")


class _Vocab:
    """One language's number words: values, multipliers, joining words, ordinals."""

    def __init__(self) -> None:
        self.values: Dict[str, int] = {}
        self.muls: Set[str] = set()
        self.ordinals: Dict[str, int] = {}
        self.post = False  # the multiplier before its factor (Swahili "mia tisa")
        self.longest = 1
        self.affix: Tuple[str, str] = ("", "")  # what makes a cardinal an ordinal ("thứ ", "")
        self.elided: Optional[Dict[str, str]] = None  # built at the first compound
        #: The smallest scale word, which closes a group: a thousand, or ten thousand where a
        #: word multiplies by it (Japanese and Korean count in myriads: 六千 is inside 六千万).
        self.scale_floor = 1000

    def known(self, piece: str) -> bool:
        return piece in self.values

    def is_mul(self, piece: str) -> bool:
        v = self.values.get(piece, 0)
        return piece in self.muls or v >= 100 and v in _POWERS

    def segment(self, word: str) -> Optional[List[str]]:
        """``word`` cut into known words, longest first from the left, going back where the
        rest does not cut (at most 12 parts).  A word's last vowel may be elided before a
        vowel (Italian ``settecent|ottantuno``)."""
        if word in self.values:
            return [word]
        if self.elided is None:
            self.elided = {w[:-1]: w for w in self.values if len(w) >= 4 and w[-1] in _VOWELS}
        failed: Set[int] = set()

        def cut(i: int, depth: int) -> Optional[List[str]]:
            if i == len(word):
                return []
            if depth >= 12 or i in failed:
                return None
            for j in range(min(len(word), i + self.longest), i, -1):
                part = word[i:j]
                whole = part if part in self.values else None
                if whole is None and j < len(word) and word[j] in _VOWELS:
                    whole = self.elided.get(part) if self.elided else None
                if whole is not None:
                    rest = cut(j, depth + 1)
                    if rest is not None:
                        return [whole] + rest
            failed.add(i)
            return None

        return cut(0, 0)


def _read(pieces: Sequence[str], vocab: _Vocab) -> Optional[int]:
    """The value of known words in order, or ``None`` when they make no number."""
    if not any(vocab.values[w] != _JOIN for w in pieces):
        return None
    return _read_post(pieces, vocab) if vocab.post else _read_pre(pieces, vocab)


def _place(n: int) -> int:
    """The power of ten below which a value may follow ``n`` (``20`` -> 10, ``500`` -> 100)."""
    p = 1
    while n % (p * 10) == 0:
        p *= 10
    return p


def _read_pre(pieces: Sequence[str], vocab: _Vocab) -> Optional[int]:
    """A language that writes a multiplier after its factor (``nine hundred``, ``sáu mươi``,
    ``उन्नीस सौ``, ``трёх тысяч``, ``seratus enam puluh enam``).  Three sums: ``total`` (closed
    by scale words), ``section`` (the group under the scale, its multiplied parts) and
    ``small`` (the values since the last multiplier, what the next one multiplies)."""
    total, section, small, last_scale = 0, 0, 0, None
    for w in pieces:
        v = vocab.values[w]
        if v == _JOIN:
            continue
        mul = vocab.is_mul(w)
        current = section + small
        scale = v if mul and v >= vocab.scale_floor else 0
        if scale:
            # A scale word ("tusen", "bin", "ribu") closes the group before it.
            if last_scale is not None and scale >= last_scale:
                return None
            total += (current or 1) * scale
            section, small, last_scale = 0, 0, scale
        elif mul:
            if small == 0:
                product = v  # "hundred", "seratus", "mười": one of it
            elif small < v:
                product = small * v
            elif small % 1000 == 0:
                section, product = section + small, v  # "četrtūkstoš simt": 4000, then a hundred
            else:
                return None
            if section and product >= _place(section):
                return None  # "three hundred two hundred": not a number
            section, small = section + product, 0
        elif current and v >= _place(current):
            if not (v == 10 and 0 < small < 10):
                return None  # "three twenty": not a number
            small += v  # a word for ten after a digit ("dua belas": 12)
        else:
            small += v
    return total + section + small


def _read_post(pieces: Sequence[str], vocab: _Vocab) -> Optional[int]:
    """A language that writes a multiplier before its factor (Swahili ``elfu moja, mia tisa
    na sitini na tisa`` is 1969; ``elfu mia tano na arobaini na mbili`` is 542,000)."""
    total, group, last_scale, i = 0, 0, None, 0
    while i < len(pieces):
        w = pieces[i]
        v = vocab.values[w]
        i += 1
        if v == _JOIN:
            continue
        if vocab.is_mul(w) and v >= 1000:
            j = i
            run: List[str] = []
            while j < len(pieces) and not _closes(pieces[j], run, vocab):
                run.append(pieces[j])
                j += 1
            factor = _read_post(run, vocab) if run else 1
            if factor is None or factor >= 1000 or group or last_scale is not None and v >= last_scale:
                return None
            total, i, last_scale = total + (factor or 1) * v, j, v
        elif vocab.is_mul(w):
            u = vocab.values.get(pieces[i], 0) if i < len(pieces) else 0
            factor = 1
            if 0 < u < 10 and not vocab.is_mul(pieces[i]):
                factor, i = u, i + 1
            if group and v * factor >= _place(group):
                return None
            group += v * factor
        elif group and v >= _place(group):
            return None
        else:
            group += v
    return total + group


def _closes(piece: str, run: Sequence[str], vocab: _Vocab) -> bool:
    """Does ``piece`` end the factor of a scale word in a multiplier-first language: a scale,
    or a hundreds word once the factor has a value (``elfu moja | mia tisa``)?"""
    if not vocab.is_mul(piece):
        return False
    return vocab.values[piece] >= 1000 or any(vocab.values[r] != _JOIN for r in run)


def _pieces(words: Sequence[str], vocab: _Vocab) -> Tuple[List[str], List[str]]:
    """The known words of a phrase (compounds cut) and the parts left unknown."""
    pieces: List[str] = []
    unknown: List[str] = []
    for w in words:
        seg = vocab.segment(w)
        if seg is None:
            head = _known_head(w, vocab)
            if head is not None and len(head[1]) >= 2:
                pieces.extend(head[0] + [head[1]])
                unknown.append(head[1])
                continue
            pieces.append(w)
            unknown.append(w)
        else:
            pieces.extend(seg)
    return pieces, unknown


def _known_head(word: str, vocab: _Vocab) -> Optional[Tuple[List[str], str]]:
    """A compound that begins with known words and ends with one unknown part (the Finnish
    ``viisisataa``: ``viisi`` and ``sataa``)."""
    for cut in range(len(word) - 2, 1, -1):
        seg = vocab.segment(word[:cut])
        if seg is not None:
            return seg, word[cut:]
    return None


def _roles(n: int) -> List[Tuple[int, bool]]:
    """What an unknown word may be, in the order tried: a joining word, a multiplier, a value."""
    return [(_JOIN, False)] + [(p, True) for p in _POWERS if p <= n] + [(v, False) for v in range(1, 100)] + [(n, False)]


def _learn(words: Sequence[str], n: int, vocab: _Vocab) -> bool:
    """Learn from one phrase of ``n``: the role of its one unknown word, or that a word of
    the value of a power of ten multiplies here (Thai ``หกสิบ``: 6 x 10).  Whether it learned."""
    pieces, unknown = _pieces(words, vocab)
    vocab.elided = None  # the vocabulary may change
    if len(words) == 1 and pieces == [words[0]] and n >= 1000:
        # A compound known as a whole ("duemila"): learn its parts too ("mila" x1000).
        head = _known_head(words[0], vocab)
        if head is not None and head[1] not in vocab.values and len(head[1]) >= 2:
            pieces, unknown = head[0] + [head[1]], [head[1]]
    if not unknown:
        if _read(pieces, vocab) == n:
            return False
        for p in dict.fromkeys(pieces):
            if vocab.values[p] in _POWERS and p not in vocab.muls:
                vocab.muls.add(p)
                if _read(pieces, vocab) == n:
                    return True
                vocab.muls.discard(p)
        return False
    if len(unknown) == 2 and len(pieces) == 2 and n in _POWERS and n >= 100:
        one, scale = (pieces[1], pieces[0]) if vocab.post else (pieces[0], pieces[1])
        vocab.values[one], vocab.values[scale] = 1, n  # "o mie", "un milion": one, then the scale
        vocab.muls.add(scale)
        return True
    if len(set(unknown)) != 1:
        return False
    u = unknown[0]
    for value, mul in _roles(n):
        vocab.values[u] = value
        if mul:
            vocab.muls.add(u)
        if _read(pieces, vocab) == n:
            vocab.longest = max(vocab.longest, len(u))
            return True
        vocab.muls.discard(u)
    del vocab.values[u]
    return False


def _writes_post(written: Sequence[Tuple[int, List[str]]]) -> bool:
    """Does the language write a multiplier before its factor?  Its phrases of 200 and 300
    share their first word (Swahili ``mia mbili``, ``mia tatu``), not their last."""
    first = {n: words for n, words in written if n in (200, 300) and len(words) == 2}
    return len(first) == 2 and first[200][0] == first[300][0] and first[200][1] != first[300][1]


@lru_cache(maxsize=None)
def _vocab(lang: str) -> _Vocab:
    """One language's vocabulary, harvested from the libraries' phrases (built once)."""
    vocab = _Vocab()
    written = [(n, words_of(p)) for n in _SAMPLES for p in phrases(lang, n)]
    for n, words in written:
        if len(words) == 1:
            vocab.values.setdefault(words[0], n)
    vocab.longest = max((len(w) for w in vocab.values), default=1)
    vocab.post = _writes_post(written)
    for _ in range(4):
        if not sum(_learn(words, n, vocab) for n, words in written):
            break
    if any(v == 10**4 and len(w) == 1 for w, v in vocab.values.items()):
        vocab.scale_floor = 10**4
    _split_compounds(vocab)
    _learn_ordinals(lang, vocab)
    return vocab


def _split_compounds(vocab: _Vocab) -> None:
    """Forget a compound of a thousand or more learned whole (``tretusen``, ``onbin``) when
    its parts read as the same number: read in parts, it joins the number around it
    (``niohundra|tre|tusen``), where a whole value of 3000 after 900 makes none."""
    for word, value in sorted(vocab.values.items(), key=lambda kv: -len(kv[0])):
        if value < 1000 or word in vocab.muls:
            continue
        del vocab.values[word]
        vocab.elided = None
        parts = vocab.segment(word)
        if parts is None or _read(parts, vocab) != value:
            vocab.values[word] = value
    vocab.elided = None


def _learn_ordinals(lang: str, vocab: _Vocab) -> None:
    """Ordinals under a hundred as whole phrases, and the affix that makes a cardinal an
    ordinal where one does (Vietnamese ``thứ`` before it: ``thứ hai`` is second)."""
    affixes: Dict[Tuple[str, str], int] = {}
    for n in range(1, 101):
        cards = [" ".join(words_of(p)) for p in phrases(lang, n)]
        for p in phrases(lang, n, ordinal=True):
            phrase = " ".join(words_of(p))
            if phrase in cards:
                continue  # num2words writes some languages' ordinals as cardinals ("hai")
            vocab.ordinals.setdefault(phrase, n)
            for c in cards:
                at = phrase.find(c)
                if c and at >= 0 and (at or len(phrase) > len(c)):
                    key = (phrase[:at], phrase[at + len(c):])
                    affixes[key] = affixes.get(key, 0) + 1
    best = max(affixes.items(), key=lambda kv: kv[1], default=None)
    if best is not None and best[1] >= 30:
        vocab.affix = best[0]


def value_in(words: Sequence[str], lang: str) -> Optional[Tuple[int, bool]]:
    """``(value, is_ordinal)`` of words (lower case) that are, as a whole, one number of
    ``lang``; ``None`` otherwise."""
    vocab = _vocab(lang)
    if not vocab.values:
        return None
    phrase = " ".join(words)
    if phrase in vocab.ordinals:
        return vocab.ordinals[phrase], True
    head, tail = vocab.affix
    if (head or tail) and phrase.startswith(head) and phrase.endswith(tail) and len(phrase) > len(head) + len(tail):
        inner = _cardinal(words_of(phrase[len(head): len(phrase) - len(tail)]), vocab)
        if inner is not None:
            return inner, True
    value = _cardinal(words, vocab)
    return None if value is None else (value, False)


def _cardinal(words: Sequence[str], vocab: _Vocab) -> Optional[int]:
    pieces: List[str] = []
    for w in words:
        seg = vocab.segment(w)
        if seg is None:
            return None
        pieces.extend(seg)
    if not pieces:
        return None
    value = _read(pieces, vocab)
    if value is None and len(pieces) <= 4:
        # A year as it is said, two numbers under a hundred ("nineteen seventy-two": 1972).
        for cut in range(1, len(pieces)):
            a, b = _read(pieces[:cut], vocab), _read(pieces[cut:], vocab)
            if a is not None and b is not None and 11 <= a <= 19 and 10 <= b <= 99:
                return a * 100 + b
    return value


@short_text_memo(maxsize=65536)
def is_vocab_word(word: str, lang: str) -> bool:
    """Is ``word`` (lower case) a number word of ``lang``, or a compound of them?"""
    if lang not in vocab_langs():
        return False
    vocab = _vocab(lang)
    parts = words_of(word)
    return bool(parts) and all(vocab.segment(p) is not None for p in parts)
