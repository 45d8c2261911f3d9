"""The package's version and the version of its scoring rules (the base layer: imports nothing)."""
from __future__ import annotations

__version__ = "0.1.0"

#: The version of the scoring rules (claims, alignment, correctness, consistency), in every
#: report's ``meta.scorer.rules``.  Bumped whenever a change to the rules can change a verdict: a
#: baseline scored by other rules is refused by the regression gate (``--defan-baseline-force``
#: compares anyway).
RULES_VERSION = "2026.11.1"
