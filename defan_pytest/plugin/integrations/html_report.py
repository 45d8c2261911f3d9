"""pytest-html: a DefAn column with each prompt's verdict (and the gate's outcome), and each
prompt's verdict in full as a report section when an HTML report is written."""
from __future__ import annotations

import html
from typing import List

import pytest

from defan_pytest.plugin.integrations import Integration
from defan_pytest.plugin.items import record_of
from defan_pytest.plugin.wording import verdict_cell
from defan_pytest.run import Run

__all__ = ["Html", "start"]


class Html(Integration):
    """pytest-html's table hooks."""

    def __init__(self, details: bool) -> None:
        self.details = details

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_header(self, cells: List[str]) -> None:
        cells.insert(2, '<th class="sortable" data-column-type="defan">DefAn</th>')

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_row(self, report: pytest.TestReport, cells: List[str]) -> None:
        rec = record_of(report)
        if rec is not None:
            text = verdict_cell(rec)
        elif report.nodeid.startswith("defan::") and report.nodeid.rsplit("::", 1)[-1].startswith("gate["):  # a model's too
            text = "gate: " + report.outcome
        else:
            text = ""
        cells.insert(2, f'<td class="col-defan">{html.escape(text)}</td>')


def start(config: pytest.Config, run: Run) -> Html:
    return Html(details=bool(config.getoption("htmlpath", None)))
