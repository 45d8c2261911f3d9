"""How one prompt's verdict reads where pytest shows it: a JUnit property, a report section, a
failure, an HTML cell.  The words themselves come from :mod:`defan_pytest.verdicts` (the outcome,
``no claim``, ``no prize awarded``); text from the data file and the model is passed through
:func:`~defan_pytest.safetext.printable`, so escape codes in it are shown escaped, never acted
on."""
from __future__ import annotations

from typing import Any, Mapping, Optional

from defan_pytest.records.finish import CUT
from defan_pytest.safetext import printable
from defan_pytest.verdicts import NO_CLAIM, NO_CLAIM_TEXT, claim_text, gold_text, outcome_of, short

__all__ = ["claim_and_gold", "counted_in", "describe", "finish_tag", "short", "verdict_cell", "verdict_line"]


def finish_tag(rec: Mapping[str, Any]) -> str:
    """`` [finish: length, cut by the token limit]`` after an answer whose provider gave a
    finish reason other than the ordinary ``stop``; ``""`` for ``stop`` and an unknown one."""
    reason = rec.get("finish_reason")
    if not reason or reason == "stop":
        return ""
    return f" [finish: {reason}{', cut by the token limit' if reason == CUT else ''}]"


def claim_and_gold(rec: Mapping[str, Any], limit: Optional[int] = None) -> str:
    """``claim 'Bob', gold 'Ada Lovelace'``, ``claim no prize awarded, gold ...``, ``gold
    no prize awarded``; ``no claim, gold ...`` where the outcome's word does not say so already."""
    gold = f"gold {gold_text(rec.get('answer'), limit)}"
    claim = claim_text(rec.get("claim"), limit)
    if claim != NO_CLAIM_TEXT:
        return f"claim {claim}, {gold}"
    return gold if outcome_of(rec) is NO_CLAIM else f"{claim}, {gold}"


def counted_in(rec: Mapping[str, Any]) -> str:
    """Which figures the outcome counts in: ``FCH and PMH``, ``FCH``, ``PMH``, ``neither``, or
    ``the error rate``."""
    outcome = outcome_of(rec)
    if outcome.errored:
        return "the error rate"
    figures = [name for name, counts in (("FCH", outcome.wrong), ("PMH", outcome.misaligned)) if counts]
    return " and ".join(figures) or "neither FCH nor PMH"


def verdict_line(rec: Mapping[str, Any]) -> str:
    """One line: the outcome, and the claim and gold (or the call's error)."""
    if rec.get("error"):
        return printable(f"{outcome_of(rec).word}: {short(rec['error'], 300)}")
    return printable(f"{outcome_of(rec).word}: {claim_and_gold(rec, 80)}")


def verdict_cell(rec: Mapping[str, Any]) -> str:
    """The outcome with the whole claim and gold (pytest-html's DefAn column; not yet escaped)."""
    word = outcome_of(rec).word
    if rec.get("error"):
        return word
    return f"{word}: {claim_and_gold(rec)}"


def describe(rec: Mapping[str, Any]) -> str:
    """A prompt in full: its outcome and what it counts in, question, gold, response and claim
    (or the call's error)."""
    outcome = outcome_of(rec)
    if rec.get("error"):
        return printable("\n".join([
            f"{rec['id']}: {outcome.word}: {rec['error']}",
            "  counted in the error rate, not in FCH or PMH",
            f"  question: {rec['question']}",
            f"  gold:     {gold_text(rec.get('answer'))}",
            f"  attempts: {rec.get('attempts', 1)}",
        ]))
    response = rec.get("response") or ""
    if len(response) > 600:
        response = response[:600] + " ..."
    return printable("\n".join([
        f"{rec['id']}: {outcome.word} (counted in {counted_in(rec)})" if outcome.wrong or outcome.misaligned
        else f"{rec['id']}: {outcome.word}",
        f"  question: {rec['question']}",
        f"  gold:     {gold_text(rec.get('answer'))}",
        f"  response: {response!r}",
        *([f"  finish:   {rec['finish_reason']}{' (cut by the token limit)' if rec['finish_reason'] == CUT else ''}"]
          if rec.get("finish_reason") else []),
        f"  claim:    {claim_text(rec.get('claim'))}",
        f"  aligned:  {rec.get('aligned')}   correct: {rec.get('correct')}",
    ]))
