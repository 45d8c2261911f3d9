"""defan-pytest: the DefAn hallucination benchmark as a pytest regression gate.

``@defan_pytest.model("name")`` registers a user's own callable (see :mod:`defan_pytest.calls.models`).
For a team's own tests: :func:`score` and :func:`assert_answer` score one answer
(:mod:`defan_pytest.assertions`), ``@cases("golden.jsonl")`` parametrizes a test with a question
file (:mod:`defan_pytest.plugin.cases`).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from defan_pytest.calls.models import model
from defan_pytest.version import __version__, RULES_VERSION

if TYPE_CHECKING:
    from defan_pytest.assertions import AnswerScore, assert_answer, score
    from defan_pytest.plugin.cases import cases

__all__ = ["RULES_VERSION", "AnswerScore", "assert_answer", "cases", "model", "score", "__version__"]

#: Loaded on first use: the scorer's modules (and pytest, for ``cases``) are not needed to
#: register a model.
_LAZY = {"AnswerScore": "defan_pytest.assertions", "assert_answer": "defan_pytest.assertions",
         "score": "defan_pytest.assertions", "cases": "defan_pytest.plugin.cases"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'defan_pytest' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
