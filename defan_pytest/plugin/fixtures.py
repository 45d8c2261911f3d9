"""The fixtures defan-pytest offers every test suite (a plugin module loaded with the entry
point, so in every session)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import pytest

if TYPE_CHECKING:
    from defan_pytest.run.evaluate import Evaluation
    from defan_pytest.scoring.scorer import Scorer

__all__ = ["defan_evaluate", "defan_scorer"]

#: The session's options an evaluation inherits: where answers are kept and how calls are made.
#: What is asked (model, domains, sample, seed) is the test's, and no gate or report applies.
_INHERITED = ("dataset", "cache", "concurrency", "rpm", "tpm", "retries", "timeout", "max-backoff", "max-answer",
              "spacy-model", "call-path", "model-arg")


@pytest.fixture(scope="session")
def defan_scorer() -> "Scorer":
    """A :class:`defan_pytest.scoring.scorer.Scorer` (rules plus the installed spaCy pipeline, if any)
    for tests that score answers of their own."""
    # lazy: start-up. Imported by a test that asks for the fixture only: the scorer's modules import rapidfuzz,
    # and this module is loaded in every session.
    from defan_pytest.scoring.scorer import Scorer

    return Scorer(nlp="auto")


@pytest.fixture(scope="session")
def defan_evaluate(pytestconfig: pytest.Config) -> Callable[..., "Evaluation"]:
    """A function that runs a small DefAn evaluation of a model inside a test and returns its
    figures with 95% intervals (:func:`defan_pytest.run.evaluate.evaluate`)::

        def test_nobel(defan_evaluate):
            result = defan_evaluate("my-rag", domain="nobel", sample="5g")
            assert result["nobel"].fch <= 0.30, result["nobel"].fch.interval

    It asks through the session's answer cache and call options (``--defan-cache``,
    ``--defan-concurrency``, ``--defan-timeout``, ``--defan-dataset``, ... and their ini keys),
    so a prompt answered once is not asked again; a problem fails the test with one message.
    """
    # lazy: start-up. The run's modules load only for a test that asks for this fixture.
    from defan_pytest.plugin import option_values
    from defan_pytest.run.evaluate import EvaluationError, evaluate

    session = option_values(pytestconfig)
    defaults = {noun: session[noun] for noun in _INHERITED if session.get(noun) not in (None, "", [])}
    root = Path(str(pytestconfig.rootpath))

    def run(model: str, **options: Any) -> "Evaluation":
        __tracebackhide__ = True  # a failure points at the test's line
        problem = None
        try:
            return evaluate(model, defaults=defaults, root=root, **options)
        except EvaluationError as exc:
            problem = str(exc)
        pytest.fail(problem, pytrace=False)

    return run
