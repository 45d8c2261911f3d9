"""pytest-xdist (controller): every worker of the run shares the run's id, under which the
workers claim prompts in the cache."""
from __future__ import annotations

from typing import Any

import pytest

from defan_pytest.plugin.integrations import Integration
from defan_pytest.run import Run

__all__ = ["Xdist", "start"]


class Xdist(Integration):
    """xdist's node hook."""

    def __init__(self, run: Run) -> None:
        self.run = run

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["defan_run_id"] = self.run.run_id


def start(config: pytest.Config, run: Run) -> Xdist:
    return Xdist(run)
