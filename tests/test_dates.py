"""Dates in text: the written forms a chat model uses, and the day-first rule."""
from __future__ import annotations

import pytest

from defan_pytest.scoring.text.dates import find_dates, parse_date_text


@pytest.mark.parametrize(
    "text,value",
    [
        ("11/19/1946", (1946, 11, 19)),
        ("19/11/1946", (1946, 11, 19)),  # the day is over 12
        ("19 November 1946", (1946, 11, 19)),
        ("19th of November, 1946", (1946, 11, 19)),
        ("November 19, 1946", (1946, 11, 19)),
        ("Nov. 19th 1946", (1946, 11, 19)),
        ("1946-11-19", (1946, 11, 19)),
        ("Tuesday, 19 November 1946", (1946, 11, 19)),
        ("November 1946", (1946, 11, None)),
        ("1.º de enero de 1946", (1946, 1, 1)),  # the Spanish ordinal day
        ("1946", None),
        ("02/30/1946", None),
        ("not a date", None),
    ],
)
def test_parse_date_text(text: str, value: object) -> None:
    assert parse_date_text(text) == value


def test_month_first_unless_day_first_is_asked() -> None:
    assert parse_date_text("05/11/1946") == (1946, 5, 11)
    assert parse_date_text("05/11/1946", dayfirst=True) == (1946, 11, 5)
    assert parse_date_text("1946", allow_year=True) == (1946, None, None)


def test_dateparser_reads_what_the_regexes_do_not() -> None:
    assert parse_date_text("19-Nov-1946") == (1946, 11, 19)


def test_find_dates_in_reading_order_years_only_where_uncovered() -> None:
    text = "Admitted on 19 November 1946 (after the 1945 charter), confirmed 1946-12-01."
    assert [v for _, _, v in find_dates(text)] == [(1946, 11, 19), (1945, None, None), (1946, 12, 1)]
    assert [v for _, _, v in find_dates(text, years=False)] == [(1946, 11, 19), (1946, 12, 1)]


@pytest.mark.parametrize(
    "text,value",
    [
        ("19 novembre 1946", (1946, 11, 19)),
        ("le 19 novembre 1946", (1946, 11, 19)),
        ("19. November 1946", (1946, 11, 19)),
        ("am 19. Dez. 1946", (1946, 12, 19)),
        ("19 de noviembre de 1946", (1946, 11, 19)),
        ("19 de setembro de 1946", (1946, 9, 19)),
        ("1º de março de 1946", (1946, 3, 1)),
        ("19 settembre 1946", (1946, 9, 19)),
        ("1er août 1946", (1946, 8, 1)),
        ("März 1946", (1946, 3, None)),
        ("noviembre de 1946", (1946, 11, None)),
    ],
)
def test_month_names_of_five_more_languages(text: str, value: object) -> None:
    """SCORING.md clarification 4: month names in French, German, Spanish, Portuguese, Italian."""
    assert parse_date_text(text) == value


def test_day_first_is_read_month_first_when_impossible() -> None:
    """Clarification 8: in a dd/mm row, a month over 12 means the date was written month first."""
    assert parse_date_text("11/19/1946", dayfirst=True) == (1946, 11, 19)
    assert [v for _, _, v in find_dates("admitted 11/19/1946", dayfirst=True)] == [(1946, 11, 19)]
