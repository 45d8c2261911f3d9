"""Number words of any language the libraries write (SCORING.md clarifications 5 and 16):
defan_pytest/scoring/text/numbers/sources.py, vocab.py and any_language.py.

The property tests hold the reader to the libraries its vocabulary comes from: what num2words
or CLDR's rule-based formats write for a number reads back as that number.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from defan_pytest.scoring.scorer import Scorer
from defan_pytest.scoring.text.numbers.any_language import general_value
from defan_pytest.scoring.text.numbers.sources import phrases, vocab_langs, words_of
from defan_pytest.scoring.text.numbers.vocab import is_vocab_word, value_in
from defan_pytest.scoring.text.numbers.words import words_value

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
RULES = Scorer(nlp=None)
CENSUS = "What was the population count of Victoria's 0-4 age group in 2011?"
OIC = "Republic of AZERBAIJAN year of admission into the OIC"
RANK = "What was the position of Kobe University in the QS rankings for 2022?"

# Languages whose every phrase of both libraries reads back (measured over random numbers to
# ten million); others read most of theirs (docs/SCORING-CHOICES.md says which fail and why).
ROUND_TRIP = ["bg", "cs", "el", "et", "fa", "hi", "hr", "hy", "is", "lv", "mk", "pl", "ro", "ru", "sq", "sr", "ta", "uk"]


@pytest.mark.parametrize(
    "text, value",
    [
        ("un milion cinci sute patruzeci și două de mii opt sute șaptezeci și nouă", 1542879),
        ("Один мільйон п'ятсот сорок дві тисячі вісімсот сімдесят дев'ять", 1542879),
        ("Elfu moja mia tisa sitini na tisa", 1969),
        ("elfu mia tano na arobaini na mbili", 542000),
        ("sita", 6),
        ("उन्नीस सौ उनहत्तर", 1969),
        ("χίλια εννιακόσια εξήντα εννέα", 1969),
        ("třicet tisíc devět set osm", 30908),
        ("százezer-hatszáznyolcvanhat", 100686),
        ("saith deg un mil pedwar cant wyth deg tri", 71483),
        ("divi miljoni deviņdesmit astoņi tūkstoši septiņi simti četrdesmit pieci", 2098745),
        ("nineteen seventy-two", 1972),
        ("settecentottantunomilacinquecentotrentatré", 781533),
    ],
)
def test_number_words_of_any_language(text: str, value: int) -> None:
    assert words_value(text) == (value, False)


def test_bare_number_words_are_aligned_numbers() -> None:
    s = RULES.score(OIC, "1969", "numeric", "Elfu moja mia tisa sitini na tisa", domain="world_org")
    assert (s.claim, s.aligned, s.correct) == ("1969", True, True)
    s = RULES.score(CENSUS, "30,908", "numeric", "třicet tisíc devět set osm", domain="census")
    assert (s.claim, s.aligned, s.correct) == ("30908", True, True)


def test_an_ordinal_word_is_a_rank() -> None:
    assert general_value("thứ hai") == (2, True)  # CLDR's Vietnamese ordinal prefix, on any cardinal
    s = RULES.score(RANK, "2", "rank", "thứ hai", domain="qs_ranking")
    assert (s.claim, s.aligned, s.correct) == ("2", True, True)


def test_a_math_result_in_words_is_its_last_number() -> None:
    s = RULES.score("what is 672 divided by 21 ?", "32", "numeric", "The correct quotient is thirty-two.", domain="math")
    assert (s.claim, s.aligned, s.correct) == ("32", False, True)


@pytest.mark.parametrize("text", ["Albert Einstein", "Kobe University", "I'm sorry I don't have access to that information", "three twenty", "twenty ten"])
def test_words_that_make_no_number_are_none(text: str) -> None:
    assert words_value(text) is None


def test_words_of_a_language_and_the_languages() -> None:
    assert {"ro", "sw", "hi", "el", "cy", "vi", "th"} <= set(vocab_langs())
    assert is_vocab_word("hatszáznyolcvanhat", "hu") and not is_vocab_word("paris", "hu")
    assert words_of("saith deg, un") == ["saith", "deg", "un"]


@SETTINGS
@given(n=st.integers(0, 10**7), lang=st.sampled_from(ROUND_TRIP))
def test_property_what_the_libraries_write_reads_back(n: int, lang: str) -> None:
    for written in phrases(lang, n)[:3]:
        assert value_in(words_of(written), lang) == (n, False), written


@SETTINGS
@given(n=st.integers(1, 999_999), lang=st.sampled_from(["ro", "uk", "el", "hi", "cs"]))
def test_property_a_bare_phrase_reads_without_its_language(n: int, lang: str) -> None:
    written = phrases(lang, n)[0]
    assert general_value(written, lang) == (n, False), written
    # Without its language: read in every language it may be, kept only where they agree, so
    # never another number.
    assert general_value(written) in ((n, False), None), written


def _num2words_or_skip():  # type: ignore[no-untyped-def]
    num2words = pytest.importorskip("num2words").num2words
    return num2words


@pytest.mark.parametrize("lang", ["tr", "id", "sv"])
def test_the_general_reader_reads_random_numbers_num2words_writes(lang: str) -> None:
    """Issue 37: the general reader alone (no num2words-in-reverse path) reads what num2words
    writes in Turkish, Indonesian and Swedish, 0 to a billion, seeded: a scale word after a
    hundreds compound (``niohundratretusen``), a multiplier after a hundred (``seratus enam
    puluh``).  Numbers whose text num2words also writes for another (Turkish drops ``bir``
    before ``bin``: 681,972 and 680,972 read alike) are left out."""
    import random

    num2words = _num2words_or_skip()
    rng = random.Random(37)
    nums = [rng.choice([rng.randint(0, 999), rng.randint(1000, 999_999), rng.randint(10**6, 10**9 - 1)])
            for _ in range(200)]
    missed = []
    for n in nums:
        text = num2words(n, lang=lang)
        if n >= 1000 and num2words(n - 1000 if n % 10**6 >= 2000 else n + 1000, lang=lang) == text:
            continue  # num2words writes two numbers alike
        if general_value(text, lang) != (n, False):
            missed.append((n, text, general_value(text, lang)))
    assert not missed, missed
