"""The fallback reader of written dates from CLDR's date patterns (scoring/text/dates/cldr.py):
the forms dateparser's month data misses, read only where the main reader finds no full date."""
from __future__ import annotations

import datetime
import time
from functools import lru_cache
from typing import Tuple

import pytest
from babel import Locale
from babel.dates import format_date
from babel.localedata import locale_identifiers
from hypothesis import assume, given, settings, strategies as st

from defan_pytest.scoring.text.dates import cldr_data, cldr as cldr_module
from defan_pytest.scoring.text.dates.cldr_data import parse_pattern
from defan_pytest.scoring.text.dates.cldr import cldr_dates, scripts_of
from defan_pytest.scoring.text.dates.text import parse_date_text
from defan_pytest.scoring.text.dates.parse import find_dates
from defan_pytest.scoring.text.dates.months import english_month, fold, load


def _full(text: str) -> list:
    return [v for _, _, v in find_dates(text) if None not in v]


@pytest.mark.parametrize(
    "text,value",
    [
        ("1960ko abuztuaren 20a", (1960, 8, 20)),  # Basque: y('e')'ko' MMMM'ren' d('a')
        ("1960(e)ko abuztuaren 20(a)", (1960, 8, 20)),  # as Babel writes it
        ("2001eko urtarrilaren 3a", (2001, 1, 3)),
        ("1960ko abuztuaren 20an", (1960, 8, 20)),  # "on the 20th": the day's case ending
        ("1946. gada 19. novembris", (1946, 11, 19)),  # Latvian: a year word between
        ("20ê tebaxa 1960an", (1960, 8, 20)),  # Kurdish: d'ê' MMMM'a' y'an'
    ],
)
def test_forms_the_main_reader_misses(text: str, value: object) -> None:
    assert _full(text) == [value], text


def test_a_basque_date_is_one_bare_date() -> None:
    assert parse_date_text("1960ko abuztuaren 20a") == (1960, 8, 20)
    text = "Jaio zen 1960ko abuztuaren 20a, Bilbon."
    assert _full(text) == [(1960, 8, 20)]
    # In an English sentence too: the word is no month word dateparser knows.
    assert _full("He was born on 1960ko abuztuaren 20a in Bilbao.") == [(1960, 8, 20)]


def test_used_only_where_the_main_reader_finds_no_full_date() -> None:
    calls = []
    real = cldr_module.cldr_dates

    def spy(text: str, language=str):  # type: ignore[no-untyped-def]
        calls.append(text)
        return real(text, language)

    from defan_pytest.scoring.text.dates import parse as dates

    dates.cldr_dates = spy  # type: ignore[assignment]
    try:
        assert _full("Born 19 November 1946, 1960ko abuztuaren 20a x") == [(1946, 11, 19)]
        assert _full("19/11/1946 and more") == [(1946, 11, 19)]
        assert calls == []
        assert _full("1960ko abuztuaren 20a ") == [(1960, 8, 20)]
        assert len(calls) == 1
    finally:
        dates.cldr_dates = real  # type: ignore[assignment]


@pytest.mark.parametrize(
    "text",
    [
        "1990 May 3 people",  # an English month, year first: prose (the main reader's rule)
        "In 1999 June 5 was hot",
        "12 de 1961",  # a connective is no month (CLDR's "de" is a December somewhere)
        "Total: 15 ma 2001",  # two Latin letters are no month
        "in 1990, 5 set 2000",  # another language's abbreviation in English text
        "Born 1946. gada 19. novembris in Riga",  # a known month word in English text
        "He scored 12 goals in 2001",
    ],
)
def test_what_the_main_reader_declines_stays_declined(text: str) -> None:
    assert _full(text) == []


def test_numeric_dates_are_never_read_here() -> None:
    for text in ("12.04.1961", "04/12/1961", "1961-04-12", "12. 4. 1961"):
        assert cldr_dates(text) == [], text
    assert parse_date_text("8. 4. 1892") == (1892, 8, 4)  # month first, as before


def test_patterns() -> None:
    assert parse_pattern("y('e')'ko' MMMM'ren' d('a')") == (
        ("y", ""), ("lit", "(e)ko "), ("M", "wide"), ("lit", "ren "), ("d", ""), ("lit", "(a)"),
    )
    assert parse_pattern("EEEE, d MMMM y") == (
        ("E", "wide"), ("lit", ", "), ("d", ""), ("lit", " "), ("M", "wide"), ("lit", " "), ("y", ""),
    )
    assert parse_pattern("dd/MM/y") is None  # a numeric month
    assert parse_pattern("MMMM y") is None  # no day
    assert parse_pattern("d 'de' MMMM 'de' y")[1] == ("lit", " de ")  # type: ignore[index]


def test_scripts() -> None:
    assert scripts_of("1960ko abuztuaren 20a") == ("Latn",)
    assert scripts_of("12 апреля 1961") == ("Cyrl",)
    assert scripts_of("1946") == ()


def test_index_is_built_per_script_and_cheaply() -> None:
    cldr_module._index.cache_clear()
    cldr_data.variants_of_script.cache_clear()
    cldr_data._RAW.clear()
    load()
    t0 = time.perf_counter()
    cldr_dates("1960ko abuztuaren 20a")
    latin = time.perf_counter() - t0
    assert cldr_module._index.cache_info().currsize == 1  # Latin only: no Cyrillic, no Arabic
    assert latin < 2.0  # about 0.3 s; loose, the machine is shared
    t0 = time.perf_counter()
    cldr_dates("1960ko abuztuaren 21a")
    assert time.perf_counter() - t0 < 0.05


# --- the property: a date Babel writes in any locale's long form reads back ---------------

_UNREAD_SCRIPTS = {
    # Letters Python 3.11's Unicode data does not have (Sunuwar, Unicode 16), and Chakma's
    # vowel signs: combining marks outside the ranges month_data.WORD covers.
    "suz", "ccp",
}


@lru_cache(maxsize=None)
def _long_locales() -> Tuple[str, ...]:
    out = []
    for ident in sorted(locale_identifiers()):
        if ident.split("_")[0] in _UNREAD_SCRIPTS:
            continue
        if parse_pattern(Locale.parse(ident).date_formats["long"].pattern) is not None:
            out.append(ident)
    return tuple(out)


def _readable(name: str) -> bool:
    """A month name this reader reads (SCORING-CHOICES): no digits (CLDR's placeholders
    ``M08``, Korean ``8월``: the main reader's CJK forms), not two Latin letters, not an English
    month word nor a connective (the main reader's to read or decline)."""
    word = fold(name)
    if any(c.isdigit() for c in word) or (len(word) < 3 and word.isascii()):
        return False
    data = load()
    return not (english_month(word) or word in data.connectives or word in data.year_words)


@settings(max_examples=400, deadline=None)
@given(
    st.dates(min_value=datetime.date(1000, 1, 1), max_value=datetime.date(2099, 12, 31)),
    st.sampled_from(_long_locales()),
)
def test_property_every_locale_long_date_reads_back(date: datetime.date, locale: str) -> None:
    """Any date in the long form of any of Babel's locales (some 1,100) is read back by the
    CLDR reader, the month taken in the locale's own language where two languages differ."""
    loc = Locale.parse(locale)
    width = next(w for k, w in parse_pattern(loc.date_formats["long"].pattern) or () if k == "M")
    assume(_readable(loc.months["format"][width][date.month]))
    text = format_date(date, format="long", locale=locale)
    lang = locale.split("_")[0]
    found = cldr_dates(text, lambda: lang)
    assert [v for _, _, v in found] == [(date.year, date.month, date.day)], text


@pytest.mark.parametrize("locale", ["eu", "lv", "ku", "ckb", "syr", "mn", "be", "fi", "ka", "hy"])
@settings(max_examples=30, deadline=None)
@given(st.dates(min_value=datetime.date(1100, 1, 1), max_value=datetime.date(2099, 12, 31)))
def test_property_whole_reader_on_locales_dateparser_misses(locale: str, date: datetime.date) -> None:
    """Through find_dates (main reader, then this one): one full date, the right one."""
    text = format_date(date, format="long", locale=locale)
    assert _full(text) == [(date.year, date.month, date.day)], text
