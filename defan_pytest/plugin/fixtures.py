"""The fixtures defan-pytest offers every test suite (a plugin module loaded with the entry
point, so in every session)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from defan_pytest.scoring.scorer import Scorer

__all__ = ["defan_scorer"]


@pytest.fixture(scope="session")
def defan_scorer() -> "Scorer":
    """A :class:`defan_pytest.scoring.scorer.Scorer` (rules plus the installed spaCy pipeline, if any)
    for tests that score answers of their own."""
    # lazy: start-up. Imported by a test that asks for the fixture only: the scorer's modules import rapidfuzz,
    # and this module is loaded in every session.
    from defan_pytest.scoring.scorer import Scorer

    return Scorer(nlp="auto")
