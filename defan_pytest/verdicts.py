"""The verdict vocabulary: what one prompt's outcome is called, everywhere it is shown.

A scored record (``claim``, ``aligned``, ``correct``, ``error``) has exactly one
:class:`Outcome`.  The terminal's letters and words, ``-v``, pytest's summary categories, JUnit
properties, Allure tags, the HTML report's verdict codes and the step summary all read it from
here, so the same prompt is never called two different things (the base layer: imports nothing
of the package).

The outcomes follow the figures (SCORING.md): a response whose ``correct`` is not ``True`` is
*wrong* (FCH counts it; no claim is never correct), one whose ``aligned`` is not ``True`` is
*misaligned* (PMH counts it).  Two outcomes name a common case of those bits: **no claim** (a
refusal, or no answer of the asked kind: wrong and misaligned) and **no prize claimed** (a bare
"no prize was awarded" where one was: wrong).  So every outcome is exactly one of the four
combinations of the two figures' bits, or a call error, and the counts of the outcomes add up to
the figures' counts: FCH's count is the sum over the outcomes with :attr:`Outcome.wrong`, PMH's
over those with :attr:`Outcome.misaligned`.

>>> outcome_of({"claim": "Paris", "aligned": True, "correct": True, "error": None}).word
'right'
>>> outcome_of({"claim": None, "aligned": False, "correct": False, "error": None}).word
'no claim'
>>> outcome_of({"error": "TimeoutError: slow"}).category
'call error'
>>> claim_text(None), claim_text("none"), gold_text(" None[c] "), gold_text(" 386 ")
('no claim', 'no prize awarded', 'no prize awarded', "'386'")
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

__all__ = [
    "CALL_ERROR", "FLIPPED_WORSE_TEXT", "HALLUCINATED", "MISALIGNED", "MISALIGNED_WRONG", "NO_CLAIM", "NO_CLAIM_TEXT", "NO_PRIZE_CLAIM",
    "NO_PRIZE_CLAIMED", "NO_PRIZE_TEXT", "OUTCOMES", "Outcome", "RC_NO_CLAIM", "RIGHT", "claim_text", "count_outcomes",
    "counts_text", "empty_gold", "figure_parts", "gold_text", "no_claim_groups", "outcome_of", "short",
]

#: The code bits: FCH counts it, PMH counts it, the call failed, no claim, a claim of no prize.
WRONG_BIT, MISALIGNED_BIT, ERROR_BIT, NO_CLAIM_BIT, NO_PRIZE_BIT = 1, 2, 4, 8, 16


@dataclass(frozen=True)
class Outcome:
    """One named outcome of a prompt.

    ``name`` is the stable key (reports, filters); ``word`` the text in every line, tag and
    count, and pytest's summary category; ``status`` the upper-case word of pytest's verbose line;
    ``letter`` the progress letter (``.`` for a right answer); ``colour`` the terminal markup;
    ``code`` the HTML report's verdict bits (1 wrong, 2 misaligned, 4 call error; 8 no claim and
    16 no prize claimed refine a combination of the first two); ``meaning`` one sentence for a
    legend.
    """

    name: str
    word: str
    letter: str
    colour: str
    code: int
    meaning: str

    @property
    def status(self) -> str:
        """The word of pytest's verbose line."""
        return self.word.upper()

    @property
    def category(self) -> str:
        """pytest's summary category (its line counts the prompts by it)."""
        return self.word

    @property
    def wrong(self) -> bool:
        """Whether FCH counts it."""
        return bool(self.code & WRONG_BIT)

    @property
    def misaligned(self) -> bool:
        """Whether PMH counts it."""
        return bool(self.code & MISALIGNED_BIT)

    @property
    def errored(self) -> bool:
        """Whether the call failed (left out of FCH and PMH, counted in the error rate)."""
        return bool(self.code & ERROR_BIT)


RIGHT = Outcome("right", "right", ".", "green", 0, "the right answer, given as the bare value asked for")
HALLUCINATED = Outcome(
    "hallucinated", "hallucinated", "H", "red", WRONG_BIT, "a bare value of the asked kind, but the wrong one (FCH)"
)
MISALIGNED = Outcome(
    "misaligned", "misaligned", "M", "yellow", MISALIGNED_BIT,
    "the right answer, but not as the bare value asked for (a sentence, a hedge, a list: PMH)",
)
MISALIGNED_WRONG = Outcome(
    "misaligned_wrong", "misaligned and wrong", "W", "red", WRONG_BIT | MISALIGNED_BIT,
    "a wrong answer, and not as the bare value asked for (FCH and PMH)",
)
NO_CLAIM = Outcome(
    "no_claim", "no claim", "N", "red", WRONG_BIT | MISALIGNED_BIT | NO_CLAIM_BIT,
    "refused, or no answer of the asked kind: no claim is never correct nor aligned (FCH and PMH)",
)
NO_PRIZE_CLAIMED = Outcome(
    "no_prize_claimed", "no prize claimed", "P", "red", WRONG_BIT | NO_PRIZE_BIT,
    "says no prize was awarded, but one was (FCH)",
)
CALL_ERROR = Outcome(
    "call_error", "call error", "C", "yellow", ERROR_BIT,
    "the model call failed: left out of FCH and PMH, counted in the error rate",
)

#: Every outcome, in the order tables and counts list them.
OUTCOMES: Tuple[Outcome, ...] = (RIGHT, HALLUCINATED, MISALIGNED, MISALIGNED_WRONG, NO_CLAIM, NO_PRIZE_CLAIMED, CALL_ERROR)
_BY_BITS = {o.code: o for o in (RIGHT, HALLUCINATED, MISALIGNED, MISALIGNED_WRONG)}

#: The canonical claim of a response saying no prize was awarded (the scorer's ``NONE_CLAIM``,
#: :mod:`defan_pytest.scoring.types.base`; a test holds the two equal).
NO_PRIZE_CLAIM = "none"
#: How a missing claim reads, and a claim or a gold of "no prize was awarded".
NO_CLAIM_TEXT = "no claim"
NO_PRIZE_TEXT = "no prize awarded"
#: The prompts the regression gate lists: right in the baseline, wrong now (any outcome FCH
#: counts: hallucinated, no claim, ...).
FLIPPED_WORSE_TEXT = "right before, wrong now (FCH)"
#: Why a paraphrase group with a response without a claim is inconsistent (SCORING.md, RC).
RC_NO_CLAIM = "a group with no claim is inconsistent by the contract (RC needs a claim from every response)"


def outcome_of(record: Mapping[str, Any]) -> Outcome:
    """The outcome of one scored record: a call error first, then the combination of FCH's and
    PMH's bits (``correct`` / ``aligned`` not ``True``), refined to no claim (wrong and
    misaligned, no claim) and to no prize claimed (wrong but aligned, claiming no prize)."""
    if record.get("error"):
        return CALL_ERROR
    bits = (WRONG_BIT if record.get("correct") is not True else 0) | (
        MISALIGNED_BIT if record.get("aligned") is not True else 0
    )
    claim = record.get("claim")
    if bits == MISALIGNED_WRONG.code and (claim is None or claim == ""):
        return NO_CLAIM
    if bits == HALLUCINATED.code and claim == NO_PRIZE_CLAIM:
        return NO_PRIZE_CLAIMED
    return _BY_BITS[bits]


# -- how a claim and a gold read ------------------------------------------------------------------


def short(text: Any, limit: int) -> str:
    """``text`` on one line (runs of white space as one space), cut to ``limit`` characters."""
    s = " ".join(str(text or "").split())
    return s if len(s) <= limit else s[: max(0, limit - 3)] + "..."


def claim_text(claim: Any, limit: Optional[int] = None) -> str:
    """A claim as it reads: quoted (cut to ``limit``), ``no claim``, or ``no prize awarded``."""
    if claim is None or claim == "":
        return NO_CLAIM_TEXT
    if claim == NO_PRIZE_CLAIM:
        return NO_PRIZE_TEXT
    return repr(short(claim, limit) if limit else str(claim))


# A gold that says nothing was awarded: empty, or "None", with the dataset's footnote marks
# ("None[c]"), as the scorer's gold parsing reads it (tests/test_vocabulary.py holds them equal
# on the public split).
_FOOTNOTE = re.compile(r"\[[^\]]{0,12}\]")


def empty_gold(answer: Any) -> bool:
    """Whether a gold says nothing was awarded (the correct response says no prize was)."""
    text = "" if answer is None else str(answer)
    return _FOOTNOTE.sub("", text).strip().casefold() in ("", "none")


def gold_text(answer: Any, limit: Optional[int] = None) -> str:
    """A gold as it reads: quoted (stripped, cut to ``limit``), or ``no prize awarded`` for an
    empty gold."""
    if empty_gold(answer):
        return NO_PRIZE_TEXT
    text = str(answer).strip()
    return repr(short(text, limit) if limit else text)


# -- counts ---------------------------------------------------------------------------------------


def count_outcomes(records: Iterable[Mapping[str, Any]]) -> Dict[Outcome, int]:
    """How many records have each outcome (every outcome, in :data:`OUTCOMES` order)."""
    counts = {o: 0 for o in OUTCOMES}
    for rec in records:
        counts[outcome_of(rec)] += 1
    return counts


def counts_text(counts: Mapping[Outcome, int], every: bool = False) -> str:
    """``"3 right, 2 no claim"``: the outcomes counted (with ``every``, the zero ones too)."""
    parts = [f"{counts.get(o, 0):,} {o.word}" for o in OUTCOMES if every or counts.get(o, 0)]
    return ", ".join(parts) or "none"


def figure_parts(counts: Mapping[Outcome, int]) -> Tuple[str, str]:
    """The FCH and PMH counts as sums of outcomes: ``("FCH counts 5 = 2 hallucinated + 3 no
    claim", "PMH counts 3 = 3 no claim")`` (the outcomes present; ``0`` when none)."""

    def part(label: str, members: List[Outcome]) -> str:
        present = [o for o in members if counts.get(o, 0)]
        total = sum(counts.get(o, 0) for o in members)
        terms = " + ".join(f"{counts[o]:,} {o.word}" for o in present)
        return f"{label} counts {total:,}" + (f" = {terms}" if len(present) > 1 else f" ({terms})" if terms else "")

    return (part("FCH", [o for o in OUTCOMES if o.wrong]), part("PMH", [o for o in OUTCOMES if o.misaligned]))


def no_claim_groups(records: Iterable[Mapping[str, Any]]) -> Dict[str, Tuple[int, int]]:
    """Per domain: ``(groups that count for RC, those of them with a response without a
    claim)``; the latter are inconsistent whatever the other claims (:data:`RC_NO_CLAIM`).  A
    group counts for RC when it has more than one response and no call error (SCORING.md)."""
    groups: Dict[Tuple[str, str], List[Mapping[str, Any]]] = {}
    for rec in records:
        key = rec.get("group")
        if key is None:
            continue  # a record of its own: a group of one, no RC
        groups.setdefault((str(rec.get("domain")), str(key)), []).append(rec)
    out: Dict[str, Tuple[int, int]] = {}
    for (domain, _), recs in groups.items():
        counted, no_claim = out.get(domain, (0, 0))
        if len(recs) > 1 and not any(outcome_of(r).errored for r in recs):
            counted += 1
            no_claim += any(_claimless(r) for r in recs)
        out[domain] = (counted, no_claim)
    return out


def _claimless(rec: Mapping[str, Any]) -> bool:
    # ``None`` only, as RC's own test reads a group (scoring.equivalence.group_consistent).
    return rec.get("claim") is None

