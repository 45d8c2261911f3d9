"""defan-pytest: the DefAn hallucination benchmark as a pytest regression gate.

``@defan_pytest.model("name")`` registers a user's own callable (see :mod:`defan_pytest.models`).
"""
from __future__ import annotations

from defan_pytest.models import model

__all__ = ["model", "__version__"]
__version__ = "0.1.0"
