"""The language of a response (SCORING.md clarifications 4 and 16): function words first,
then the script, then lingua; ``""`` when a text has no language to tell."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from defan_pytest.scoring.text.language import DETECTED_LANGS, language


@pytest.mark.parametrize(
    "text,lang",
    [
        # Function words decide first (short English is what a detector misreads).
        ("The attendance was 94, 194.", "en"),
        ("Otto Hahn was due once more", "en"),
        ("Die Universität belegte 2022 den 386. Platz.", "de"),
        ("L'université était classée 386e en 2022.", "fr"),
        # The script names the language.
        ("第266位", "zh"),
        ("約2万8千人", "zh"),
        ("1931年のノーベル物理学賞は授与されなかった。", "ja"),
        ("김대중", "ko"),
        ("जनसंख्या तेरह लाख", "hi"),
        # lingua, for Cyrillic and for Latin text without the function words.
        ("шестьсот девяносто четыре человека", "ru"),
        ("trzydzieści tysięcy dwieście trzynaście", "pl"),
        ("Sekitar 439 ribu", "id"),
        ("Peringkat 248", "id"),
        ("12. sırada", "tr"),
        # No language: a bare value.
        ("386", ""),
        ("١٬٣٥١٬٩٢١", ""),
        ("MCMXCII", ""),
        ("", ""),
    ],
)
def test_language(text: str, lang: str) -> None:
    assert language(text) == lang


def test_codes_are_iso_639_1() -> None:
    assert all(len(code) == 2 and code.islower() for code in DETECTED_LANGS)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_property_any_text_has_a_known_code_or_none(text: str) -> None:
    got = language(text)
    assert got == "" or got in DETECTED_LANGS or got in {"ja", "zh", "ko", "hi", "ar", "el", "he", "th"}
