"""The words the plugin prints for each outcome (plugin/terminal.py, plugin/wording.py), exactly:
users grep for them, and pytest's summary line counts by their categories."""
from __future__ import annotations

from typing import Any, Dict, Optional

import pytest

from defan_pytest.plugin.terminal import domain_line, shown_outcome, status
from defan_pytest.plugin.wording import describe, short, verdict_cell, verdict_line


def record(correct: Optional[bool], aligned: bool, error: Optional[str] = None) -> Dict[str, Any]:
    return {
        "id": "nobel-q0001-p00", "domain": "nobel", "group": "nobel-q0001", "question": "Who won?",
        "answer": " Ada Lovelace ", "response": "It was Bob.", "claim": "Bob", "correct": correct,
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
        (record(False, True), "hallucinated", "H", "HALLUCINATED (claim 'Bob', gold 'Ada Lovelace')", "red"),
        (record(True, False), "misaligned", "M", "MISALIGNED (claim 'Bob', gold 'Ada Lovelace')", "yellow"),
        (record(False, False), "misaligned", "M", "MISALIGNED+WRONG (claim 'Bob', gold 'Ada Lovelace')", "yellow"),
        (record(None, False, "TimeoutError: slow"), "call-error", "C", "CALL-ERROR TimeoutError: slow", "yellow"),
    ],
    ids=["hallucinated", "misaligned", "misaligned-wrong", "call-error"],
)
def test_each_outcome_has_its_category_letter_and_word(
    rec: Dict[str, Any], category: str, letter: str, word: str, colour: str
) -> None:
    assert status(Report(rec)) == (category, letter, (word, {colour: True}))
    assert shown_outcome(Report(rec)) is not None


def test_a_right_answer_is_a_plain_pass_unless_verbose() -> None:
    right = Report(record(True, True))
    assert status(right) is None and shown_outcome(right) is None
    assert status(right, verbose=True) == (
        "passed", ".", ("PASSED claim 'Bob', gold 'Ada Lovelace'; Q: Who won? A: 'It was Bob.'", {"green": True}),
    )


def test_other_reports_are_left_to_pytest() -> None:
    wrong = record(False, True)
    assert status(Report(wrong, when="setup")) is None
    assert status(Report(wrong, passed=False)) is None


def test_verdict_lines_and_cells() -> None:
    assert verdict_line(record(False, False)) == "hallucinated, misaligned: claim 'Bob', gold 'Ada Lovelace'"
    assert verdict_line(record(True, True)) == "ok: claim 'Bob', gold 'Ada Lovelace'"
    assert verdict_line(record(None, False, "boom\x1b[2J")) == "call error: boom\\x1b[2J"
    assert verdict_cell(record(True, False)) == "misaligned: claim 'Bob', gold 'Ada Lovelace'"
    assert verdict_cell(record(None, False, "boom")) == "call error"
    assert describe(record(False, False)).splitlines()[0] == "nobel-q0001-p00: hallucinated (FCH) and misaligned (PMH)"
    assert describe(record(True, True)).splitlines()[0] == "nobel-q0001-p00: ok"
    assert short("a  b\nc " + "x" * 20, 10) == "a b c x..."


def test_domain_line() -> None:
    counts = {"done": 250, "hallucinated": 1200, "misaligned": 3, "errors": 0}
    assert domain_line("nobel", counts, 1000) == (
        "defan nobel: 250/1,000 prompts (25%): 1,200 hallucinated, 3 misaligned, 0 call errors"
    )
