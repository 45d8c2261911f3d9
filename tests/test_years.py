"""Years in dates (defan_pytest/scoring/text/dates/years.py): the question's years, two-digit years,
the Buddhist Era, valid days."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from defan_pytest.scoring.text.dates.years import expand_year, gregorian, question_years, valid_day, year_of, year_of_num


def test_the_years_a_question_names() -> None:
    assert question_years("Who won in 1954 and 2010? (not 19541)") == (1954, 2010)
    assert question_years("What is 12 + 30?") == ()


def test_two_digit_years_and_apostrophes() -> None:
    assert year_of("'54", ()) == 1954 and year_of("’05", (2010,)) == 2005 and year_of("1946", ()) == 1946
    assert year_of_num("98", (2002,)) == 1998 and year_of_num("1998", ()) == 1998


def test_the_buddhist_era_and_valid_days() -> None:
    assert gregorian((2486, 8, 17)) == (1943, 8, 17) and gregorian((1943, 8, 17)) == (1943, 8, 17)
    assert gregorian((None, 8, 17)) == (None, 8, 17)
    assert valid_day(2, 29) and not valid_day(2, 30) and not valid_day(4, 31) and valid_day(12, None)
    assert not valid_day(13, 1) and not valid_day(1, 0)


@given(st.integers(0, 99), st.lists(st.integers(1000, 2199), max_size=3))
def test_a_two_digit_year_keeps_its_digits(two: int, refs: list) -> None:
    year = expand_year(two, refs)
    assert year % 100 == two and 1000 <= year < 2200
