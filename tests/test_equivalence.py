"""Step 4 of SCORING.md (type equivalence), gold parsing and group consistency."""
from __future__ import annotations

from decimal import Decimal

import pytest

from defan_pytest.scoring.equivalence import claim_correct, claims_equivalent, group_consistent
from defan_pytest.scoring.text.numbers.parse import canonical_number, parse_number
from defan_pytest.scoring.text.names import names_match
from defan_pytest.scoring.types import NONE_CLAIM, ONLINE_CLAIM, parse_gold
from defan_pytest.scoring.types.city import places_match
from defan_pytest.scoring.types.rank import parse_rank


def correct(type_: str, claim: str | None, gold: str) -> bool:
    return claim_correct(type_, claim, parse_gold(type_, gold))


@pytest.mark.parametrize(
    "text,value",
    [
        ("240", Decimal(240)),
        ("1,351,921", Decimal(1351921)),
        ("68.25", Decimal("68.25")),
        ("-3", Decimal(-3)),
        ("−3", Decimal(-3)),
        ("1.54 million", Decimal(1540000)),
        ("$1,200", Decimal(1200)),
        ("12%", Decimal(12)),
        ("3/4", Decimal("0.75")),
        ("½", Decimal("0.5")),
        ("  47  ", Decimal(47)),
        ("1 351 921", Decimal(1351921)),  # spaces as thousands separators
        ("114\u202f600", Decimal(114600)),
        ("3 days", None),
        ("abc", None),
    ],
)
def test_parse_number(text: str, value: Decimal | None) -> None:
    assert parse_number(text) == value


@pytest.mark.parametrize(
    "claim,gold,ok",
    [
        ("1351921", "1,351,921", True),
        ("1350000", "1,351,921", False),  # 1.35 million is not 1,351,921
        ("42.857", "42.85", True),  # within 10^-2 of a 2-decimal gold
        ("42.86", "42.85", True),
        ("42.84", "42.85", True),
        ("42.8", "42.85", False),  # 0.05 away from a 2-decimal gold
        ("42.7", "42.85", False),
        ("240", "240", True),
        ("240.5", "240", False),  # integers match exactly
        ("12", "12.0", True),
        ("0.5", "½", True),
        ("47", "  47  ", True),
    ],
)
def test_numbers_by_value_and_precision(claim: str, gold: str, ok: bool) -> None:
    assert correct("numeric", claim, gold) is ok


def test_precision_boundary_is_inclusive() -> None:
    assert correct("numeric", "42.86", "42.85")
    assert correct("numeric", "42.84", "42.85")
    assert not correct("numeric", "42.8601", "42.85")


@pytest.mark.parametrize(
    "text,value",
    [("334", 334), ("334th", 334), ("#334", 334), ("=47", 47), ("47=", 47), ("  269=  ", 269),
     ("Joint 269th", 269), ("601-650", (601, 650)), ("801–1000", (801, 1000)), ("650-601", None), ("top 400", None)],
)
def test_parse_rank(text: str, value: object) -> None:
    assert parse_rank(text) == value


def test_ranks_by_integer_and_bands_only_same_band() -> None:
    assert correct("rank", "269", "  269=  ")
    assert correct("rank", "386", "  386  ")
    assert not correct("rank", "601-650", "  386  ")
    assert correct("rank", "601-650", "601-650")
    assert not correct("rank", "601-650", "651-700")


def test_dates_by_year_month_day() -> None:
    assert correct("date", "1946-11-19", "11/19/1946")
    assert not correct("date", "1946-11-20", "11/19/1946")
    assert not correct("date", "1946", "11/19/1946")  # a year alone does not match a full date
    assert correct("date", "1946", "1946")  # a year-only gold by the year
    # golds are read month first, as the dataset writes them
    assert parse_gold("date", "03/08/1957").values == ((1957, 3, 8),)


@pytest.mark.parametrize(
    "claim,gold,ok",
    [
        ("Röntgen", "Wilhelm Röntgen", True),
        ("Wilhelm Rontgen", "Wilhelm Röntgen", True),  # accent folding
        ("wilhelm röntgen", "Wilhelm Röntgen", True),  # case folding
        ("Wilhelm Conrad Röntgen", "Wilhelm Röntgen", True),  # a middle name added
        ("Robert Grubbs", "Robert H. Grubbs", True),  # a middle initial left out
        ("Germany", "West Germany", True),  # all claim words in the gold
        ("West Germany", "Germany", False),  # a word added in front is another entity
        ("Olympiastadion Berlin", "Olympiastadion", True),  # words added after the name
        ("Martin Luther King", "Martin Luther King Jr.", True),  # suffixes
        ("Pierre Curie", "Marie Curie", False),  # a different first name contradicts
        ("Sir Alexander Fleming", "Alexander Fleming", True),  # title removal
        ("Lord Rayleigh", "The Lord Rayleigh", True),
        ("Dr. Martin Luther King Jr.", "Martin Luther King Jr.", True),
        ("The Godfather", "Godfather", True),  # leading article
        ("Hans von Euler Chelpin", "Hans von Euler-Chelpin", True),  # punctuation
        ("Wilhelm Roentgen", "Wilhelm Röntgen", True),  # transliteration (fuzzy token)
        ("Albert Einstein", "Wilhelm Röntgen", False),
        ("", "Wilhelm Röntgen", False),
    ],
)
def test_names(claim: str, gold: str, ok: bool) -> None:
    assert names_match(claim, gold) is ok


def test_alternatives_semicolon_and_ampersand() -> None:
    assert correct("name", "Kenneth Arrow", "John Hicks;Kenneth Arrow")
    assert correct("name", "Jerome Robbins", "Robert Wise & Jerome Robbins")
    assert not correct("name", "Paul Samuelson", "John Hicks;Kenneth Arrow")


def test_gold_quirks() -> None:
    assert parse_gold("name", "Richard Kuhn[b]").alternatives == ("Richard Kuhn",)
    assert parse_gold("name", "Adolf Butenandt;[b]Leopold Ružička").alternatives == (
        "Adolf Butenandt",
        "Leopold Ružička",
    )
    assert parse_gold("name", "None[c]").empty
    assert parse_gold("name", "").empty
    g = parse_gold("city", "Nashville, Tennessee Virtual/Online due to COVID-19[14]")
    assert g.virtual and g.alternatives == ("Nashville, Tennessee",)
    assert correct("city", ONLINE_CLAIM, "Montreal, Canada Virtual/Online")
    assert not correct("city", ONLINE_CLAIM, "Seattle, Washington")


def test_empty_gold_matched_only_by_none_claim() -> None:
    assert correct("name", NONE_CLAIM, "")
    assert correct("name", NONE_CLAIM, "None[c]")
    assert not correct("name", "Albert Einstein", "")
    assert not correct("name", NONE_CLAIM, "Albert Einstein")
    assert not correct("name", None, "")


@pytest.mark.parametrize(
    "claim,gold,ok",
    [
        ("Seattle", "Seattle, Washington", True),
        ("Seattle, WA, USA", "Seattle, Washington", True),
        ("Seattle, USA", "Seattle, Washington", True),
        ("Portland, Maine", "Portland, Oregon", False),
        ("Portland", "Portland, Oregon", True),
        ("Vancouver, Canada", "Vancouver, British Columbia", True),
        ("Vancouver, Washington", "Vancouver, Canada", False),
        ("Sydney, NSW", "Sydney, Australia", True),
        ("Washington, D.C.", "Washington D.C.", True),
        ("New York", "New York City, New York", True),
        ("Honolulu, Hawaii", "Kauai, Hawaii", False),
        ("Boston", "Seattle, Washington", False),
    ],
)
def test_places(claim: str, gold: str, ok: bool) -> None:
    assert places_match(claim, gold) is ok


def test_no_claim_is_never_correct() -> None:
    for t, g in [("numeric", "1"), ("rank", "1"), ("date", "01/01/2000"), ("name", "X"), ("city", "Paris, France")]:
        assert not correct(t, None, g)


def test_canonical_number() -> None:
    assert canonical_number(Decimal("1.35") * 10**6) == "1350000"
    assert canonical_number(Decimal("42.8570")) == "42.857"
    assert canonical_number(Decimal(2) / Decimal(3)) == "0.666666666667"


def test_group_consistency() -> None:
    assert group_consistent("rank", ["386", "386", "386"])
    assert not group_consistent("rank", ["386", "334"])
    assert not group_consistent("rank", ["386", None])
    assert group_consistent("numeric", ["1351921", "1351921.0"])
    assert group_consistent("name", ["Wilhelm Röntgen", "Wilhelm Conrad Rontgen", "Röntgen"])
    assert not group_consistent("name", ["Pierre Curie", "Marie Curie"])
    assert group_consistent("city", ["Seattle, Washington", "Seattle"])
    assert group_consistent("name", [NONE_CLAIM, NONE_CLAIM])
    assert not group_consistent("name", [])
    assert claims_equivalent("date", "1946-11-19", "1946-11-19")
    assert not claims_equivalent("date", "1946-11-19", "1946")
