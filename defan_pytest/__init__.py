"""defan-pytest: the DefAn hallucination benchmark as a pytest regression gate."""
from __future__ import annotations

__version__ = "0.1.0"
