"""The answer-type registry: built-in types, strict look-ups, and a type added from outside."""
from __future__ import annotations

from typing import Iterator

import pytest
from toy_yesno import YesNo

from defan_pytest import types
from defan_pytest.equivalence import claim_correct, group_consistent, parse_gold
from defan_pytest.errors import DefanError
from defan_pytest.metrics import summarize
from defan_pytest.scoring import Score, Scorer, ScoreInput


@pytest.fixture
def yesno() -> Iterator[types.AnswerType]:
    kind = types.register(YesNo())
    yield kind
    types.unregister("yesno")


def test_built_in_types_in_order() -> None:
    assert types.names() == ("name", "numeric", "date", "rank", "city")
    for name in types.names():
        kind = types.get(name)
        assert isinstance(kind, types.AnswerType)
        assert kind.name == name


def test_unknown_type_lists_the_valid_ones() -> None:
    with pytest.raises(types.UnknownAnswerType, match="unknown answer type 'colour'; allowed: name, numeric, date, rank, city"):
        types.get("colour")


@pytest.mark.parametrize("bad", ["", "Yes-No", "YESNO", "2x", None])
def test_register_rejects_bad_names(bad: object) -> None:
    class Bad(YesNo):
        name = bad  # type: ignore[assignment]

    with pytest.raises(DefanError, match="expected a lower-case identifier"):
        types.register(Bad())


def test_register_rejects_duplicates_and_non_types(yesno: types.AnswerType) -> None:
    with pytest.raises(DefanError, match="already registered"):
        types.register(YesNo())
    with pytest.raises(DefanError, match="built in"):
        types.unregister("name")

    class NotAType:
        name = "notatype"

    with pytest.raises(DefanError, match="does not implement the AnswerType protocol"):
        types.register(NotAType())  # type: ignore[arg-type]


def test_a_toy_type_scores_end_to_end(yesno: types.AnswerType) -> None:
    assert types.names()[-1] == "yesno"
    assert parse_gold("yesno", "Yes").values == ("yes",)
    scorer = Scorer(nlp=None)
    q = "Was the 1930 final played in Montevideo?"
    items = [
        ScoreInput(q, "Yes", "yesno", "Yes.", domain="toy"),
        ScoreInput(q, "Yes", "yesno", "True", domain="toy"),
        ScoreInput(q, "Yes", "yesno", "I think the answer is no, it was elsewhere.", domain="toy"),
        ScoreInput(q, "Yes", "yesno", "**Yes**, it was.", domain="toy"),
        ScoreInput(q, "Yes", "yesno", "Hard to say.", domain="toy"),
        ScoreInput(q, "Yes", "yesno", None, error="timeout", domain="toy"),
    ]
    got = scorer.score_many(items)
    assert got == [
        Score("yes", True, True),
        Score("yes", True, True),
        Score("no", False, False),
        Score("yes", False, True),
        Score(None, False, False),
        Score(None, None, None, "timeout"),
    ]
    assert claim_correct("yesno", "yes", parse_gold("yesno", "True"))
    assert group_consistent("yesno", ["yes", "yes"]) and not group_consistent("yesno", ["yes", "no"])
    records = [
        {"id": str(i), "domain": "toy", "group": "toy-q0", "type": "yesno", **s.to_dict()}
        for i, s in enumerate(got[:4])
    ]
    figures = summarize(records)["domains"]["toy"]
    assert figures["fch"] == 0.25 and figures["pmh"] == 0.5 and figures["rc"] == 0.0


def test_unregistered_type_is_gone(yesno: types.AnswerType) -> None:
    types.unregister("yesno")
    with pytest.raises(types.UnknownAnswerType):
        types.get("yesno")
    types.register(YesNo())  # the fixture removes it again


def test_registering_forgets_parsed_golds(yesno: types.AnswerType) -> None:
    # A gold parsed while no such type existed must not survive under a new type of the name.
    types.unregister("yesno")
    with pytest.raises(types.UnknownAnswerType):
        parse_gold("yesno", "No")
    types.register(YesNo())
    assert parse_gold("yesno", "No").values == ("no",)
