"""What an answer type is: the :class:`AnswerType` protocol, and what the scorer hands it.

An answer type knows everything SCORING.md says about one kind of gold (a name, a number, a
date, ...): how to read a gold, what a bare answer of the type looks like, where candidates
stand in a longer response, which values the question itself contains, and when two claims or
a claim and a gold are the same answer.  The extraction flow itself (cleaning, explicit marks,
reading order) is shared and lives in :mod:`defan_pytest.scoring.claims`.

Claims travel between processes as canonical strings (``"1350000"``, ``"601-650"``,
``"1946-11-19"``, a name as written, ``"none"``, ``"online"``); a type reads its own back with
:meth:`AnswerType.parse_claim`.

:class:`BaseAnswerType` gives the defaults, so a new type implements only what differs.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, FrozenSet, Optional, Protocol, Sequence, Tuple, runtime_checkable

from defan_pytest.scoring.profile import PLAIN, DomainProfile, profile_for
from defan_pytest.scoring.text.memo import short_text_memo
from defan_pytest.scoring.text.tokens import Gazetteer

__all__ = [
    "NONE_CLAIM",
    "ONLINE_CLAIM",
    "AnswerType",
    "BaseAnswerType",
    "Context",
    "Entity",
    "Extraction",
    "Gold",
    "make_context",
]

#: The canonical claim of a response that says no prize was awarded (empty gold).
NONE_CLAIM = "none"
#: The canonical claim of a response that says a conference was held online.
ONLINE_CLAIM = "online"

#: A named entity spaCy found in a cleaned response: ``(start, end, label)``.
Entity = Tuple[int, int, str]


@dataclass(frozen=True)
class Gold:
    """A parsed gold answer: its accepted alternatives, and each one's typed value.

    ``values`` holds what :meth:`AnswerType.gold_value` made of each alternative (alternatives
    it could not read are left out); ``empty`` is a gold that says nothing was awarded;
    ``virtual`` a gold that says the event was held online.
    """

    type: str
    raw: str
    alternatives: Tuple[str, ...]
    empty: bool
    virtual: bool
    values: Tuple[Any, ...] = ()


@dataclass(frozen=True)
class Extraction:
    """What a response asserts: ``claim`` (canonical) and ``aligned``.

    ``needs_ner`` is set when a name or place was left open by the rules and a spaCy pipeline
    may settle it; the caller then extracts again with the entities.  ``how`` says which rule
    found the claim (for debugging and tests).
    """

    claim: Optional[str]
    aligned: bool
    needs_ner: bool = False
    how: str = ""
    at: Optional[int] = None  # with needs_ner: where in the cleaned text the open candidate starts


@dataclass(frozen=True)
class Context:
    """What the extractor knows about the row besides the response.

    ``integer_gold``: whether every accepted answer is a whole number (``None``: not a number
    type, or unknown); it decides ``326.121`` (thousands for an integer gold, SCORING.md
    clarification 4).  ``lang``: the response's language (:func:`defan_pytest.scoring.text.language.language`),
    filled in per response by :func:`defan_pytest.scoring.claims.extract` where a number's separators
    need it; ``None`` when nobody asked.
    """

    question: str
    type: str
    empty_gold: bool = False
    gazetteer: Optional[Gazetteer] = None
    dayfirst: bool = False
    asks_year: bool = False
    asks_month: bool = False
    is_math: bool = False
    integer_gold: Optional[bool] = None
    lang: Optional[str] = None
    #: The provider's finish reason for this answer (``"stop"``, ``"length"``, ...), ``None``
    #: when unknown; ``"length"`` means the token limit cut it (SCORING.md clarification 14).
    finish_reason: Optional[str] = None
    #: What the row's domain means (its subject words, key concepts, worked solutions).
    profile: DomainProfile = PLAIN


_DAYFIRST_Q = re.compile(r"\b(?:dd\s*[/.-]\s*mm|day\s*/\s*month)\b", re.I)
_YEAR_Q = re.compile(r"\b(?:which|what|in what)\s+year\b|\byear\b", re.I)
_MONTH_Q = re.compile(r"\bmonth\b", re.I)


def make_context(
    question: str,
    type_: str,
    empty_gold: bool = False,
    gazetteer: Optional[Gazetteer] = None,
    is_math: bool = False,
    integer_gold: Optional[bool] = None,
    finish_reason: Optional[str] = None,
    profile: Optional[DomainProfile] = None,
) -> Context:
    """Build a :class:`Context`, reading the day-first and year-only cues from the question.
    ``profile``: the row's domain profile (default: the one registered for any domain); one
    whose answers are worked solutions makes the row a math row."""
    dayfirst, asks_year, asks_month = _question_cues(question)
    return Context(
        question=question,
        type=type_,
        empty_gold=empty_gold,
        gazetteer=gazetteer,
        dayfirst=dayfirst,
        asks_year=asks_year,
        asks_month=asks_month,
        is_math=is_math or (profile is not None and profile.worked_solutions),
        integer_gold=integer_gold,
        finish_reason=finish_reason,
        profile=profile if profile is not None else profile_for(None),
    )


@short_text_memo(maxsize=4096)
def _question_cues(question: str) -> Tuple[bool, bool, bool]:
    # Cached: every paraphrase comes back once per model (and per response of a batch).
    if question.isascii():
        # Each cue's word written at all first (a substring test is far cheaper than the
        # patterns; in ASCII text, ignoring case is lower-casing).
        low = question.lower()
        return (
            ("dd" in low or "day" in low) and _DAYFIRST_Q.search(question) is not None,
            "year" in low and _YEAR_Q.search(question) is not None,
            "month" in low and _MONTH_Q.search(question) is not None,
        )
    return bool(_DAYFIRST_Q.search(question)), bool(_YEAR_Q.search(question)), bool(_MONTH_Q.search(question))


@runtime_checkable
class AnswerType(Protocol):
    """One kind of gold answer.  Register an implementation with
    :func:`defan_pytest.scoring.types.register`; the dataset loaders, ``defan score`` and the scorer
    then accept its name in a row's ``type``.

    Every method gets text that :func:`defan_pytest.scoring.cleaning.clean` already cleaned.  None of
    them sees ``"none"`` or ``"online"`` claims: the shared flow settles those first.
    """

    #: The name rows use in their ``type`` column (``"name"``, ``"numeric"``, ...).
    name: str
    #: Whether the domain's known answers (its gazetteer) help find this type's claims.
    uses_gazetteer: bool
    #: Words that label this type's answer in a table header, a ``Key: value`` list or a JSON
    #: key (``Laureate``, ``Rank``, ``City``): SCORING.md clarification 2.
    labels: FrozenSet[str]

    def gold_text(self, text: str) -> Tuple[str, bool]:
        """A gold with footnotes removed -> (the text to split into alternatives, virtual?)."""
        ...

    def gold_alternatives(self, alternative: str) -> Tuple[str, ...]:
        """One ``;``-separated part of a gold -> its accepted answers (a name gold splits
        ``Joel Coen and Ethan Coen`` in two, clarification 21)."""
        ...

    def integer_gold(self, gold: Gold) -> Optional[bool]:
        """Whether every accepted answer of ``gold`` is a whole number (``None``: not a number
        type); it decides ``326.121`` (clarification 4)."""
        ...

    def override(self, text: str, ctx: Context) -> Optional[str]:
        """A claim that wins over marks and reading order (a statement that the conference was
        held online, clarification 10), or ``None``."""
        ...

    def gold_value(self, alternative: str) -> Any:
        """The typed value of one gold alternative, or ``None`` if it has none."""
        ...

    def bare(self, text: str, ctx: Context) -> Optional[str]:
        """The canonical claim when ``text`` is one bare answer of the type (aligned), else
        ``None``."""
        ...

    def phrase_value(self, text: str, ctx: Context) -> Optional[str]:
        """The value inside a short marked phrase (``The answer is 1,351,921 people``)."""
        ...

    def is_emphasis(self, claim: str, ctx: Context) -> bool:
        """Whether a marked ``**claim**`` is emphasis rather than an answer."""
        ...

    def contained(self, claim: str, ctx: Context) -> bool:
        """Whether the canonical ``claim`` only repeats something the question contains."""
        ...

    def candidates(
        self, text: str, ctx: Context, entities: Optional[Sequence[Entity]], ner_available: bool
    ) -> Extraction:
        """The claim of a response with no bare answer and no explicit mark: the first
        candidate in reading order (SCORING.md step 3)."""
        ...

    def parse_claim(self, claim: str) -> Any:
        """Read a canonical claim back into its typed value (``None`` if unreadable)."""
        ...

    def correct(self, claim: str, gold: Gold) -> bool:
        """Does the canonical ``claim`` match one accepted answer of a non-empty ``gold``?"""
        ...

    def equivalent(self, a: str, b: str) -> bool:
        """Are two different canonical claims the same answer (group consistency)?"""
        ...


class BaseAnswerType:
    """Defaults for an :class:`AnswerType`: no typed gold values, no phrase values, no
    emphasis rule, nothing contained in the question, claims compared as typed values."""

    name: str = ""
    uses_gazetteer: bool = False
    labels: FrozenSet[str] = frozenset()

    def gold_text(self, text: str) -> Tuple[str, bool]:
        return text, False

    def gold_alternatives(self, alternative: str) -> Tuple[str, ...]:
        return (alternative,)

    def integer_gold(self, gold: Gold) -> Optional[bool]:
        return None

    def override(self, text: str, ctx: Context) -> Optional[str]:
        return None

    def gold_value(self, alternative: str) -> Any:
        return None

    def bare(self, text: str, ctx: Context) -> Optional[str]:
        raise NotImplementedError

    def phrase_value(self, text: str, ctx: Context) -> Optional[str]:
        return None

    def is_emphasis(self, claim: str, ctx: Context) -> bool:
        return False

    def contained(self, claim: str, ctx: Context) -> bool:
        return False

    def candidates(
        self, text: str, ctx: Context, entities: Optional[Sequence[Entity]], ner_available: bool
    ) -> Extraction:
        raise NotImplementedError

    def parse_claim(self, claim: str) -> Any:
        return claim

    def correct(self, claim: str, gold: Gold) -> bool:
        value = self.parse_claim(claim)
        return value is not None and value in gold.values

    def equivalent(self, a: str, b: str) -> bool:
        va, vb = self.parse_claim(a), self.parse_claim(b)
        return va is not None and va == vb

    def __repr__(self) -> str:
        return f"<answer type {self.name!r}>"
