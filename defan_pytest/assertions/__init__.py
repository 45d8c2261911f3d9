"""Scoring one answer inside a team's own tests: :func:`score` and :func:`assert_answer`.

The same scorer as a plugin run (SCORING.md), one response at a time:

>>> s = score(question="What was Kobe University's QS rank in 2022?", response="386th", gold="386",
...           type="rank", nlp=None)
>>> s.claim, s.aligned, s.correct, s.verdict
('386', True, True, 'right')
>>> s == "right"
True
>>> assert_answer(question="Who won the Nobel Prize in Physics in 1921?", response="Niels Bohr",
...               gold="Albert Einstein", type="name", nlp=None)
Traceback (most recent call last):
...
AssertionError: hallucinated: claim 'Niels Bohr', gold 'Albert Einstein' (name)
  aligned: the whole response is one bare name
  correct: no: the claim matches no accepted answer of the gold
  question: Who won the Nobel Prize in Physics in 1921?

An :class:`AnswerScore` compares equal to its verdict word (``right``, ``hallucinated``,
``misaligned``, ``misaligned and wrong``, ``no claim``, ``no prize claimed``), so
``assert score(...) == "right"`` is a test; under pytest a failing comparison shows the claim,
the gold, the verdict and the rules that decided (the plugin's ``pytest_assertrepr_compare``).
No pytest here: this package is plain Python; its functions set pytest's ``__tracebackhide__``
(a local name, no import), so that a failing test's traceback shows the test's line and none
of this package's.
"""
from __future__ import annotations

import builtins
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, List, Optional, Union

from defan_pytest.dataset import profiles  # noqa: F401 - DefAn's domain profiles, registered
from defan_pytest.scoring.scorer import Scorer
from defan_pytest.verdicts import claim_text, gold_text, outcome_of, short

__all__ = ["AnswerScore", "assert_answer", "score"]

#: What each extraction rule means, for the explanation (SCORING.md steps 2-3 and clarifications).
_HOW = {
    "bare": "the whole response is one bare {type}",
    "marked": "an explicit answer mark gave the claim (The answer is ..., Answer: ..., bold, \\boxed, a last line)",
    "candidate": "the first {type} in reading order that the question does not contain",
    "math-last": "a worked solution without a mark claims its last number",
    "unit": "only the question's own value, with a unit or label",
    "override": "a statement decided the claim (no prize was awarded, held online)",
    "empty": "nothing is left after cleaning",
    "none": "no {type} the question does not already contain",
}

#: How a value of each built-in type is called in an explanation (a registered type: its name).
_NOUNS = {"numeric": "number", "city": "place"}


@dataclass(frozen=True, eq=False)
class AnswerScore:
    """The verdicts on one answer: ``claim`` (canonical, ``None`` when it asserts nothing),
    ``aligned`` (no prompt misalignment), ``correct`` (no fact-contradicting hallucination),
    ``verdict`` (the outcome's word, as the plugin's reports say it) and ``why`` (the rules that
    decided, one line each)."""

    question: str
    response: str
    gold: str
    type: str
    claim: Optional[str]
    aligned: bool
    correct: bool
    verdict: str
    why: List[str]

    def __eq__(self, other: object) -> bool:
        # A verdict word: `assert score(...) == "right"`.
        if isinstance(other, str):
            return self.verdict == other
        if isinstance(other, AnswerScore):
            return (self.claim, self.aligned, self.correct, self.verdict) == (
                other.claim, other.aligned, other.correct, other.verdict)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # compared with words: not a set member

    def explain(self) -> str:
        """The verdict, claim and gold, then the deciding rules and the question, one per line."""
        head = f"{self.verdict}: claim {claim_text(self.claim, 200)}, gold {gold_text(self.gold)} ({self.type})"
        return "\n".join([head, *(f"  {line}" for line in self.why), f"  question: {short(self.question, 200)}"])


def _check_arguments(**arguments: object) -> None:
    """One clear ``TypeError`` naming the first argument of the wrong type (the scorer reads
    texts: bytes, a number or a list would fail deep inside it, or score as something else)."""
    __tracebackhide__ = True
    for name, value in arguments.items():
        if name == "gold":
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                raise TypeError(f"score(): gold must be a str (the accepted answers, ';' between them; '' when "
                                f"no prize was awarded), an int or a float, not {_kind(value)}")
        elif name in ("domain", "finish_reason"):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"score(): {name} must be a str or None, not {_kind(value)}")
        elif not isinstance(value, str):
            raise TypeError(f"score(): {name} must be a str, not {_kind(value)}")


def _kind(value: object) -> str:
    return "None" if value is None else f"{builtins.type(value).__name__} {short(repr(value), 40)}"


@lru_cache(maxsize=8)
def _scorer(nlp: Optional[str]) -> Scorer:
    # One scorer per pipeline for the whole test session: loading spaCy takes a second.
    return Scorer(nlp=nlp)


def score(
    *,
    question: str,
    response: str,
    gold: Union[str, int, float],
    type: str,
    domain: Optional[str] = None,
    finish_reason: Optional[str] = None,
    nlp: Optional[str] = "auto",
) -> AnswerScore:
    """Score one ``response`` to ``question`` against ``gold`` (raw, ``;`` between accepted
    answers, empty for "no prize was awarded") of answer ``type`` (``name``, ``numeric``,
    ``date``, ``rank``, ``city`` or a registered one: an unknown type lists the valid ones).

    ``domain`` ``"math"`` reads a worked solution (its last number); ``finish_reason``
    ``"length"`` says the token limit cut the answer; ``nlp``: the spaCy pipeline (``"auto"``:
    the first installed English one; ``None``: rules only).
    """
    __tracebackhide__ = True  # a failure in a team's test points at the test's line, not here
    _check_arguments(question=question, response=response, gold=gold, type=type, domain=domain,
                     finish_reason=finish_reason)
    raw_gold = gold if isinstance(gold, str) else str(gold)
    s = _scorer(nlp).score(question, raw_gold, type, response, domain=domain, finish_reason=finish_reason)
    aligned, correct = bool(s.aligned), bool(s.correct)
    outcome = outcome_of({"claim": s.claim, "aligned": aligned, "correct": correct, "error": None, "answer": raw_gold})
    noun = _NOUNS.get(type, type)
    rule = _HOW.get(s.how or "", s.how or "the rules").format(type=noun)
    why = [
        f"aligned: {rule}" if aligned else f"misaligned: not one bare {noun}; the claim: {rule}",
        "correct: the claim matches an accepted answer of the gold" if correct else
        "correct: no: " + ("there is no claim, and no claim is never correct" if s.claim is None
                           else "the claim matches no accepted answer of the gold"),
    ]
    if s.note:
        why.append(f"note: {s.note}")
    return AnswerScore(question, response, raw_gold, type, s.claim, aligned, correct, outcome.word, why)


def assert_answer(
    *,
    question: str,
    response: str,
    gold: Union[str, int, float],
    type: str,
    aligned: bool = False,
    **options: Any,
) -> AnswerScore:
    """Fail (``AssertionError``) unless ``response`` is correct, and with ``aligned=True`` also
    aligned; the message shows the verdict, claim, gold and the rules that decided.  Returns the
    :class:`AnswerScore` when it passes.  ``options``: ``domain``, ``finish_reason``, ``nlp``
    as for :func:`score`."""
    __tracebackhide__ = True  # the failure points at the test's line: the message says the rest
    s = score(question=question, response=response, gold=gold, type=type, **options)
    if not s.correct or (aligned and not s.aligned):
        raise AssertionError(s.explain())
    return s
