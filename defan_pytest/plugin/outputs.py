"""The run's outputs as a plugin: every report format writes the finished report it receives
through ``pytest_defan_report`` (registered on the controller only, as pytest registers
``LogXML`` only where it writes)."""
from __future__ import annotations

import os
from typing import Callable, Optional

import pytest

from defan_pytest.records import Report
from defan_pytest.run import Run

__all__ = ["ReportWriters"]


class ReportWriters:
    """Writes the report in every format asked for (the output options given, and those the
    environment asks for: GitHub Actions), through :func:`defan_pytest.report.formats.write_all`.

    ``annotate`` is where ``::error`` annotations go (``None`` when another plugin already
    annotates the failed tests)."""

    def __init__(self, run: Run, annotate: Optional[Callable[[], Optional[Callable[[str], None]]]] = None) -> None:
        self.run = run
        self._annotate = annotate or (lambda: None)

    @pytest.hookimpl(trylast=True)  # after other plugins saw the report: a write error is ours to report
    def pytest_defan_report(self, config: pytest.Config, report: Report) -> None:
        self.run.write_report(report, environ=os.environ, annotate=self._annotate())

    def __repr__(self) -> str:
        return f"<ReportWriters of {self.run.model_name!r}>"
