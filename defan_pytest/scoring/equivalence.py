"""The equivalence rules of SCORING.md ("Correct", step 4), for any type.

The shared rules live here: the ``none`` and ``online`` claims; a group is consistent when
every response has a claim and all claims are equivalent.  What equality means for one type is
the type's own (:mod:`defan_pytest.scoring.types`), and so is reading a gold
(:func:`defan_pytest.scoring.types.parse_gold`).

>>> claim_correct("numeric", "42.86", types.parse_gold("numeric", "42.85"))
True
>>> group_consistent("rank", ["386", "386"]), group_consistent("rank", ["386", None])
(True, False)
"""
from __future__ import annotations

from typing import Optional, Sequence

from defan_pytest.scoring import types
from defan_pytest.scoring.types import NONE_CLAIM, ONLINE_CLAIM, Gold

__all__ = ["claim_correct", "claims_equivalent", "group_consistent"]


def claim_correct(type_: str, claim: Optional[str], gold: Gold) -> bool:
    """Does the canonical ``claim`` match one accepted answer of ``gold``?"""
    if claim is None:
        return False
    if gold.empty:
        return claim == NONE_CLAIM
    if claim == NONE_CLAIM:
        return False
    if claim == ONLINE_CLAIM:
        return gold.virtual
    return types.get(type_).correct(claim, gold)


def claims_equivalent(type_: str, a: Optional[str], b: Optional[str]) -> bool:
    """Are two canonical claims the same answer under the type's equivalence?"""
    if a is None or b is None:
        return False
    if a == b:
        return True
    if NONE_CLAIM in (a, b) or ONLINE_CLAIM in (a, b):
        return False
    return types.get(type_).equivalent(a, b)


def group_consistent(type_: str, claims: Sequence[Optional[str]]) -> bool:
    """A group is consistent when every response has a claim and all claims are equivalent."""
    if not claims or any(c is None for c in claims):
        return False
    distinct = list(dict.fromkeys(claims))
    return all(
        claims_equivalent(type_, distinct[i], distinct[j])
        for i in range(len(distinct))
        for j in range(i + 1, len(distinct))
    )
