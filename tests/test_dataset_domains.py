"""Tests for defan_pytest.dataset.domains: registry, the pinned digests, Row, DatasetError."""
from __future__ import annotations

import dataclasses

import pytest

from defan_pytest import dataset
from defan_pytest.dataset import DOMAINS, DatasetError, Row, get_domain, parse_domains
from defan_pytest.errors import DefanError

ALL_IDS = [
    "sports",
    "census",
    "nobel",
    "entertainment",
    "world_org",
    "qs_ranking",
    "conference_venue",
    "math",
]


# ------------------------------------------------------------------------------------------
# Registry
# ------------------------------------------------------------------------------------------


def test_registry_order_and_fields() -> None:
    assert list(DOMAINS) == ALL_IDS
    assert [d.file_index for d in DOMAINS.values()] == list(range(1, 9))
    assert [d.paraphrased for d in DOMAINS.values()] == [True] * 7 + [False]
    assert DOMAINS["nobel"].filename == "QA_domain_3_public.csv"
    assert DOMAINS["sports"].title == "FIFA World Cup finals"
    assert DOMAINS["world_org"].title == "UN and OIC membership"
    assert set(dataset.PUBLIC_SHA256) == {d.filename for d in DOMAINS.values()}
    assert DOMAINS["nobel"].sha256 == dataset.PUBLIC_SHA256["QA_domain_3_public.csv"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        DOMAINS["math"].paraphrased = True  # type: ignore[misc]
    with pytest.raises(TypeError):
        DOMAINS["extra"] = DOMAINS["math"]  # type: ignore[index]


def test_get_domain() -> None:
    assert get_domain("nobel") is DOMAINS["nobel"]
    assert get_domain(" QS_Ranking ") is DOMAINS["qs_ranking"]
    assert get_domain(DOMAINS["math"]) is DOMAINS["math"]
    with pytest.raises(DatasetError) as info:
        get_domain("oscars")
    message = str(info.value)
    assert "'oscars'" in message
    for domain_id in ALL_IDS:
        assert domain_id in message


def test_parse_domains_repeatable_comma_separated_registry_order() -> None:
    got = parse_domains(["math,sports", " nobel ", "sports"])
    assert [d.id for d in got] == ["sports", "nobel", "math"]
    assert [d.id for d in parse_domains("census , world_org")] == ["census", "world_org"]
    assert parse_domains(None) == tuple(DOMAINS.values())
    assert parse_domains([]) == tuple(DOMAINS.values())
    assert parse_domains(["", " , "]) == tuple(DOMAINS.values())
    with pytest.raises(DatasetError) as info:
        parse_domains(["sports,nobles", "chess"])
    message = str(info.value)
    assert "'nobles'" in message and "'chess'" in message
    assert ", ".join(ALL_IDS) in message


# ------------------------------------------------------------------------------------------
# Row
# ------------------------------------------------------------------------------------------


def test_row_contract() -> None:
    row = Row("nobel", 42, 3, "q?", " a ", "name", "f.csv", 7)
    assert row.id == "nobel-q0042-p03"
    assert row.group_key == "nobel-q0042"
    assert not hasattr(row, "__dict__")  # slots: small rows
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.answer = "b"  # type: ignore[misc]
    assert [f.name for f in dataclasses.fields(Row)] == [
        "domain", "group", "para", "question", "answer", "type", "source", "line",
    ]


# ------------------------------------------------------------------------------------------
# DatasetError
# ------------------------------------------------------------------------------------------


def test_dataset_error_is_a_defan_error_with_problems() -> None:
    assert issubclass(DatasetError, DefanError) and issubclass(DatasetError, ValueError)
    err = DatasetError("f.csv:3: empty question")
    assert err.problems == ("f.csv:3: empty question",)
    with pytest.raises(DefanError):
        get_domain("oscars")
