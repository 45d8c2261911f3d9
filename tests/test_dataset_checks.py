"""Tests for defan_pytest.dataset.checks: the answer types (asked per file), golds of value
types, paraphrase blocks."""
from __future__ import annotations

from pathlib import Path

import pytest

from defan_pytest import dataset
from defan_pytest.dataset import DatasetError, checks


# ------------------------------------------------------------------------------------------
# Answer types: one function, asked per file
# ------------------------------------------------------------------------------------------


def test_answer_types_and_the_constant_follow_the_function(monkeypatch: pytest.MonkeyPatch) -> None:
    assert dataset.answer_types() == ("name", "numeric", "date", "rank", "city")
    assert dataset.ANSWER_TYPES == dataset.answer_types()
    monkeypatch.setattr(checks, "answer_types", lambda: ("name", "colour"))
    # Nothing bound the list at import time: the constant and the per-file table follow.
    assert dataset.ANSWER_TYPES == ("name", "colour")
    assert checks.type_table() == {"name": "name", "colour": "colour"}
    with pytest.raises(AttributeError):
        dataset.NO_SUCH_NAME  # type: ignore[attr-defined]  # noqa: B018


def test_readers_ask_answer_types_at_read_time(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    user = tmp_path / "set.csv"
    user.write_text("question,answer,type\nWhat colour is the Windmere flag?,teal,colour\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"unknown type 'colour' \(expected one of name, numeric, date, rank, city\)"):
        dataset.load_user_set(user)
    public = tmp_path / "m.csv"
    public.write_text("questions,answer,type\nWhat colour is teal?,teal,colour\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="unknown type 'colour'"):
        dataset.read_public_csv(public, "math")

    monkeypatch.setattr(checks, "answer_types", lambda: ("name", "numeric", "colour"))
    assert [r.type for r in dataset.load_user_set(user)] == ["colour"]
    assert [r.type for r in dataset.read_public_csv(public, "math")] == ["colour"]
    responses = tmp_path / "r.jsonl"
    responses.write_text('{"question": "Q", "answer": "teal", "type": "Colour", "response": "teal"}\n', encoding="utf-8")
    assert [r.type for r in dataset.load_responses(responses)] == ["colour"]


def test_a_value_gold_must_hold_a_value_of_its_type() -> None:
    assert checks.gold_problem("numeric", "1,351,921") is None
    assert checks.gold_problem("rank", "601-650") is None
    assert checks.gold_problem("numeric", "None") is None  # nothing was awarded: fine
    assert checks.gold_problem("name", "N/A") is None  # a name type matches the text
    assert checks.gold_problem("date", "someday") == (
        "answer 'someday' holds no date value (a date gold is compared as one; fix the answer or the type)"
    )


def test_check_blocks_names_the_row_and_the_block() -> None:
    rows: list[tuple[str, str] | None] = [("Paris", "city")] * 14 + [("Lyon", "city")] + [("x", "name"), None]

    def locate(i: int) -> tuple[str, str]:
        return f"f:{i + 2}", f"line {i + 2}"

    assert checks.check_blocks(rows, locate) == [
        "f:16: answer 'Lyon' differs from 'Paris' at line 2, the first row of its 15-row paraphrase block",
        "f:17: 17 rows is not a multiple of 15: the last paraphrase block, starting here, has only 2 rows",
    ]
    assert checks.check_blocks(rows[:15] * 2, locate, "domain 'x'")[0].endswith("paraphrase block of domain 'x'")
