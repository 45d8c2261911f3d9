"""pytest-github-actions-annotate-failures annotates every failed test, the gate's among them:
the run's own ``::error`` annotations are then left out, so that nothing is said twice."""
from __future__ import annotations

import pytest

from defan_pytest.plugin.integrations import Integration
from defan_pytest.run import Run

__all__ = ["GithubAnnotate", "start"]


class GithubAnnotate(Integration):
    """Says that failed tests are annotated already."""

    annotates_failures = True


def start(config: pytest.Config, run: Run) -> GithubAnnotate:
    return GithubAnnotate()
