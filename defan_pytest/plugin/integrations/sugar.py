"""pytest-sugar: its reporter asks its own status function, not the hook, so every prompt would
print as a plain pass: the function is wrapped for the session (and
put back at its end) to answer for DefAn reports with their own letter and word."""
from __future__ import annotations

from typing import Any

import pytest
import pytest_sugar

from defan_pytest.plugin.integrations import Integration
from defan_pytest.plugin.terminal import shown_outcome
from defan_pytest.run import Run
from defan_pytest.verdicts import RIGHT

__all__ = ["Sugar", "start"]


class Sugar(Integration):
    """pytest-sugar's status function, wrapped while the session runs."""

    def __init__(self) -> None:
        self.original = pytest_sugar.pytest_report_teststatus
        pytest_sugar.pytest_report_teststatus = self.teststatus

    def teststatus(self, report: Any) -> Any:
        """pytest-sugar's answer, but for a DefAn prompt: its outcome's category, letter and word."""
        outcome = shown_outcome(report)
        if outcome is None or not pytest_sugar.IS_SUGAR_ENABLED:
            return self.original(report)
        theme = pytest_sugar.THEME
        colour = {"red": theme.fail, "green": theme.success}.get(outcome.colour, theme.skipped)
        letter = theme.symbol_passed if outcome is RIGHT else outcome.letter  # sugar's own mark of a pass
        return outcome.category, pytest_sugar.colored(letter, colour), outcome.status

    def close(self) -> None:
        pytest_sugar.pytest_report_teststatus = self.original


def start(config: pytest.Config, run: Run) -> Sugar:
    return Sugar()
