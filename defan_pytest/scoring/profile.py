"""What a domain means to the scorer: a :class:`DomainProfile`, carried in the scoring context.

The text layer (:mod:`defan_pytest.scoring.text`) knows languages, not benchmarks.  What one
benchmark's domain adds lives in its profile:

* ``generic_words`` (and ``generic_endings``): the words of the domain's own subject matter
  (``Nobel``, ``Prize``, ``Oscar``, ``FIFA``): a span made only of them is emphasis or the topic,
  never an answer;
* ``key_concepts``: groups of words that say the same thing in a question and in the key of a
  structured answer (a ``Runner-up`` column answers "Which nation came second?");
* ``worked_solutions``: the domain's answers are worked solutions, which claim their last
  number (SCORING.md step 3, math).

DefAn's eight profiles live with the dataset (:mod:`defan_pytest.dataset.profiles`), which
registers them here; a user's own split gives its own with :func:`register_profile` (or a
:class:`~defan_pytest.scoring.scorer.ScoreInput` carries one).  A domain nobody registered gets
the profile registered for ``None`` (DefAn's common one once the dataset is loaded), else
:data:`PLAIN`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, FrozenSet, Optional, Sequence, Tuple

from defan_pytest.scoring.text.tokens import is_generic

__all__ = ["PLAIN", "DomainProfile", "profile_for", "register_profile"]


@dataclass(frozen=True)
class DomainProfile:
    """The benchmark knowledge of one domain (see the module's text)."""

    generic_words: FrozenSet[str] = frozenset()
    generic_endings: Tuple[str, ...] = ()
    key_concepts: Tuple[FrozenSet[str], ...] = ()
    worked_solutions: bool = False

    def is_generic(self, tokens: Sequence[str]) -> bool:
        """Are the folded ``tokens`` only words that are no answer here: the domain's subject
        words, or words that are no answer anywhere (:func:`~defan_pytest.scoring.text.tokens.is_generic`)?"""
        return is_generic(tokens, self.generic_words, self.generic_endings)


#: The profile of a domain that says nothing of itself.
PLAIN = DomainProfile()

_PROFILES: Dict[Optional[str], DomainProfile] = {}


def register_profile(domain: Optional[str], profile: DomainProfile) -> None:
    """Give ``domain`` (``None``: every domain without one of its own) its profile."""
    if not isinstance(profile, DomainProfile):
        raise TypeError(f"a domain profile must be a DomainProfile, not {type(profile).__name__}")
    _PROFILES[domain] = profile


def profile_for(domain: Optional[str]) -> DomainProfile:
    """The profile registered for ``domain``, else the one for ``None``, else :data:`PLAIN`."""
    found = _PROFILES.get(domain)
    if found is None:
        found = _PROFILES.get(None, PLAIN)
    return found
