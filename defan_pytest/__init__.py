"""defan-pytest: the DefAn hallucination benchmark as a pytest regression gate.

``@defan_pytest.model("name")`` registers a user's own callable (see :mod:`defan_pytest.models`).
"""
from __future__ import annotations

from defan_pytest.models import model

__all__ = ["RULES_VERSION", "model", "__version__"]
__version__ = "0.1.0"

#: The version of the scoring rules (claims, alignment, correctness, consistency), in every
#: report's ``meta.scorer.rules``.  Bumped whenever a change to the rules can change a verdict: a
#: baseline scored by other rules is refused by the regression gate (``--defan-baseline-force``
#: compares anyway).
RULES_VERSION = "2026.11.1"
