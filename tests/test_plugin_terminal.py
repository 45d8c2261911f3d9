"""The words the plugin prints for each outcome (plugin/terminal.py, plugin/wording.py), exactly:
users grep for them, and pytest's summary line counts by their categories."""
from __future__ import annotations

from typing import Any, Dict, Optional

import pytest

from defan_pytest.plugin.terminal import shown_outcome, status
from defan_pytest.plugin.wording import claim_and_gold, describe, short, verdict_cell, verdict_line
from defan_pytest.verdicts import OUTCOMES


def record(correct: Optional[bool], aligned: Optional[bool], error: Optional[str] = None,
           claim: Optional[str] = "Bob", answer: str = " Ada Lovelace ") -> Dict[str, Any]:
    return {
        "id": "nobel-q0001-p00", "domain": "nobel", "group": "nobel-q0001", "question": "Who won?",
        "answer": answer, "response": "It was Bob.", "claim": claim, "correct": correct,
        "aligned": aligned, "error": error,
    }


class Report:
    """What the status hook reads of a test report."""

    def __init__(self, rec: Dict[str, Any], when: str = "call", passed: bool = True) -> None:
        self.when = when
        self.passed = passed
        self.user_properties = [("defan", rec)]


@pytest.mark.parametrize(
    "rec, category, letter, word, colour",
    [
        (record(True, True), "right", ".", "RIGHT", "green"),
        (record(False, True), "hallucinated", "H", "HALLUCINATED", "red"),
        (record(True, False), "misaligned", "M", "MISALIGNED", "yellow"),
        (record(False, False), "misaligned and wrong", "W", "MISALIGNED AND WRONG", "red"),
        (record(False, False, claim=None), "no claim", "N", "NO CLAIM", "red"),
        (record(False, True, claim="none"), "no prize claimed", "P", "NO PRIZE CLAIMED", "red"),
        (record(None, None, "TimeoutError: slow"), "call error", "C", "CALL ERROR TimeoutError: slow", "yellow"),
    ],
    ids=["right", "hallucinated", "misaligned", "misaligned-wrong", "no-claim", "no-prize", "call-error"],
)
def test_each_outcome_has_its_category_letter_and_word(
    rec: Dict[str, Any], category: str, letter: str, word: str, colour: str
) -> None:
    assert status(Report(rec)) == (category, letter, (word, {colour: True}))
    outcome = shown_outcome(Report(rec))
    assert outcome is not None and outcome.category == category and outcome.status == word.split(" Timeout")[0]


def test_every_outcome_is_spelt_one_way() -> None:
    """The category is the word (pytest's summary line), the verbose status its upper case, and
    names, words, letters and codes are all distinct."""
    for o in OUTCOMES:
        assert o.category == o.word and o.status == o.word.upper()
    for field in ("name", "word", "letter", "code"):
        assert len({getattr(o, field) for o in OUTCOMES}) == len(OUTCOMES), field


def test_verbose_says_the_outcome_the_claim_and_the_gold() -> None:
    assert status(Report(record(True, True)), verbose=True) == (
        "right", ".", ("RIGHT claim 'Bob', gold 'Ada Lovelace'; Q: Who won? A: 'It was Bob.'", {"green": True}),
    )
    # No claim and an empty gold read as words, never as '' or None.
    refusal = record(False, False, claim=None, answer="")
    word = status(Report(refusal), verbose=True)[2][0]  # type: ignore[index]
    assert word.startswith("NO CLAIM gold no prize awarded; Q: Who won?"), word
    assert "''" not in word and "None" not in word


def test_other_reports_are_left_to_pytest() -> None:
    wrong = record(False, True)
    assert status(Report(wrong, when="setup")) is None
    assert status(Report(wrong, passed=False)) is None


def test_verdict_lines_and_cells() -> None:
    assert verdict_line(record(False, False)) == "misaligned and wrong: claim 'Bob', gold 'Ada Lovelace'"
    assert verdict_line(record(True, True)) == "right: claim 'Bob', gold 'Ada Lovelace'"
    assert verdict_line(record(False, False, claim=None)) == "no claim: gold 'Ada Lovelace'"
    assert verdict_line(record(False, True, claim="Bob", answer="")) == "hallucinated: claim 'Bob', gold no prize awarded"
    assert verdict_line(record(False, True, claim="none")) == "no prize claimed: claim no prize awarded, gold 'Ada Lovelace'"
    assert verdict_line(record(None, False, "boom\x1b[2J")) == "call error: boom\\x1b[2J"
    assert verdict_cell(record(True, False)) == "misaligned: claim 'Bob', gold 'Ada Lovelace'"
    assert verdict_cell(record(None, False, "boom")) == "call error"
    assert describe(record(False, False)).splitlines()[0] == "nobel-q0001-p00: misaligned and wrong (counted in FCH and PMH)"
    assert describe(record(True, True)).splitlines()[0] == "nobel-q0001-p00: right"
    lines = describe(record(False, False, claim=None, answer=" None[c] ")).splitlines()
    assert lines[0] == "nobel-q0001-p00: no claim (counted in FCH and PMH)"
    assert "  gold:     no prize awarded" in lines and "  claim:    no claim" in lines
    assert describe(record(None, None, "boom")).splitlines()[:2] == [
        "nobel-q0001-p00: call error: boom", "  counted in the error rate, not in FCH or PMH"]
    assert short("a  b\nc " + "x" * 20, 10) == "a b c x..."


def test_a_claim_that_is_missing_reads_no_claim_unless_the_outcome_says_so() -> None:
    # Not scored as such (aligned, no claim): the outcome follows the figures, the claim says no claim.
    odd = record(False, True, claim=None)
    assert claim_and_gold(odd) == "no claim, gold 'Ada Lovelace'"
    assert claim_and_gold(record(False, False, claim=None)) == "gold 'Ada Lovelace'"
