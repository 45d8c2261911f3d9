"""defan-pytest: the DefAn hallucination benchmark as a pytest regression gate.

``@defan_pytest.model("name")`` registers a user's own callable (see :mod:`defan_pytest.calls.models`).
"""
from __future__ import annotations

from defan_pytest.calls.models import model
from defan_pytest.version import __version__, RULES_VERSION

__all__ = ["RULES_VERSION", "model", "__version__"]
