"""Statements that no prize was awarded in any language (SCORING.md clarifications 7 and 16):
defan_pytest/scoring/text/no_prize.py, through the scorer and alone."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from defan_pytest.scoring.scorer import Scorer
from defan_pytest.scoring.text.no_prize import first_none, is_none_statement, none_spans

RULES = Scorer(nlp=None)
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ECON_1928 = "Who was awarded the Nobel Prize in Economics in 1928?"
PHYSICS_1921 = "Who won the Nobel Prize in Physics in 1921?"


def verdict(question: str, gold: str, response: str) -> tuple:
    s = RULES.score(question, gold, "name", response, domain="nobel")
    return s.claim, s.aligned, s.correct


@pytest.mark.parametrize(
    "response",
    [
        "Inget pris delades ut 1928.", "Palkintoa ei jaettu vuonna 1928.", "1928-ban nem adták ki a díjat.",
        "V roce 1928 nebyla cena udělena.", "Δεν απονεμήθηκε βραβείο το 1928.", "הפרס לא הוענק בשנת 1928.",
        "لم تُمنح الجائزة في عام 1928.", "1928 में यह पुरस्कार नहीं दिया गया।", "ไม่มีการมอบรางวัลในปี 1928",
        "Không có giải thưởng nào được trao năm 1928.", "در سال ۱۹۲۸ جایزه‌ای اهدا نشد.",
        "Nu s-a acordat niciun premiu în 1928.", "Hakuna tuzo iliyotolewa mwaka 1928.", "Hakuna.", "Ingen",
        "Κανείς", "कोई पुरस्कार नहीं", "Sel aastal auhinda ei antud.", "Մրցանակ չի շնորհվել։",
        "யாருக்கும் வழங்கப்படவில்லை.",
    ],
)
def test_a_short_statement_of_none_in_any_language_is_aligned_and_right(response: str) -> None:
    assert verdict(ECON_1928, "", response) == ("none", True, True)


@pytest.mark.parametrize(
    "response",
    [
        "Премію 1928 року не присуджували. Кошти перенесли до спеціального фонду.",
        "Nikdo. Cena nebyla v roce 1935 udělena.",
        "The Economics prize (Sveriges Riksbank Prize) was only established in 1968, so nobody won it in 1930.",
    ],
)
def test_a_statement_of_none_with_more_claims_none_but_is_misaligned(response: str) -> None:
    assert verdict(ECON_1928, "", response) == ("none", False, True)


def test_a_statement_of_none_where_someone_won_is_wrong() -> None:
    assert verdict(PHYSICS_1921, "Albert Einstein", "Inget pris delades ut 1921.") == ("none", True, False)


@pytest.mark.parametrize(
    "text",
    [
        "The new premier said he would never go to prison.",  # "ne", "premi", "pris" in English
        "Albert Einstein won the prize.",
        "Marie Curie, a Pole, won it in 1911.",
        "Einstein",
    ],
)
def test_english_and_names_are_no_statement_of_none(text: str) -> None:
    assert none_spans(text) == [] and not is_none_statement(text)


def test_the_phrase_and_its_place() -> None:
    text = "Премію 1928 року не присуджували."
    found = first_none(text)
    # The table's clause: the prize word, then the negation (Ukrainian; the Russian phrase of
    # NONE_STATEMENT, "не присуждали", is another word).
    assert found is not None and found[0] == 0 and found[2] == "Премію 1928 року не"
    assert is_none_statement("None") and is_none_statement("Ingen") and not is_none_statement("Ingen pris delades ut")


# A negation and a prize word of one language, in either order, with a year between them.
_PAIRS = [
    ("inte", "priset"), ("ei", "palkintoa"), ("nem", "díjat"), ("nebyla", "cena"), ("δεν", "βραβείο"),
    ("nu", "premiul"), ("не", "премію"), ("không", "giải"), ("لم", "الجائزة"), ("לא", "הפרס"),
]


@SETTINGS
@given(pair=st.sampled_from(_PAIRS), year=st.integers(1901, 2024), flip=st.booleans())
def test_property_a_negation_and_a_prize_word_of_a_language_say_none(pair: tuple, year: int, flip: bool) -> None:
    neg, prize = pair
    text = f"{prize} {year} {neg} x" if flip else f"{neg} {year} {prize}"
    assert none_spans(text), text
    # A full stop between them: two sentences, no statement.
    assert not none_spans(f"{neg}. {year}. {prize}.")


@SETTINGS
@given(words=st.lists(st.sampled_from("the prize was won by Albert Einstein in physics for his work".split()), min_size=1, max_size=10))
def test_property_english_words_without_a_negation_are_never_none(words: list) -> None:
    assert none_spans(" ".join(words)) == []
