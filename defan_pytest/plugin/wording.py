"""How one prompt's verdict reads where pytest shows it: a JUnit property, a report section, a
failure, an HTML cell.  The words themselves come from :mod:`defan_pytest.verdicts`; text from
the data file and the model is passed through :func:`~defan_pytest.safetext.printable`, so
escape codes in it are shown escaped, never acted on."""
from __future__ import annotations

from typing import Any, Mapping

from defan_pytest.safetext import printable
from defan_pytest.verdicts import outcome_of

__all__ = ["describe", "short", "verdict_cell", "verdict_line"]


def short(text: Any, limit: int) -> str:
    """``text`` on one line (runs of white space as one space), cut to ``limit`` characters."""
    s = " ".join(str(text or "").split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


def verdict_line(rec: Mapping[str, Any]) -> str:
    """One line: the verdict, and the claim and gold (or the call's error)."""
    if rec.get("error"):
        return printable(f"call error: {short(rec['error'], 300)}")
    return printable(
        f"{outcome_of(rec).word}: claim {short(rec.get('claim'), 80)!r}, gold {short(rec.get('answer'), 80)!r}"
    )


def verdict_cell(rec: Mapping[str, Any]) -> str:
    """The verdict with the whole claim and gold (pytest-html's DefAn column; not yet escaped)."""
    word = outcome_of(rec).word
    if rec.get("error"):
        return word
    return f"{word}: claim {rec.get('claim')!r}, gold {str(rec.get('answer', '')).strip()!r}"


def describe(rec: Mapping[str, Any]) -> str:
    """A prompt in full: its verdict, question, gold, response and claim (or the call's error)."""
    if rec.get("error"):
        return printable("\n".join([
            f"{rec['id']}: call error: {rec['error']}",
            f"  question: {rec['question']}",
            f"  gold:     {str(rec['answer']).strip()!r}",
            f"  attempts: {rec.get('attempts', 1)}",
        ]))
    outcome = outcome_of(rec)
    verdict = []
    if outcome.wrong:
        verdict.append("hallucinated (FCH)")
    if outcome.misaligned:
        verdict.append("misaligned (PMH)")
    response = rec["response"] or ""
    if len(response) > 600:
        response = response[:600] + " ..."
    return printable("\n".join([
        f"{rec['id']}: {' and '.join(verdict) or outcome.word}",
        f"  question: {rec['question']}",
        f"  gold:     {rec['answer'].strip()!r}",
        f"  response: {response!r}",
        f"  claim:    {rec['claim']!r}",
        f"  aligned:  {rec['aligned']}   correct: {rec['correct']}",
    ]))
