"""pytest-json-report: each prompt's record (and each gate's verdicts) in its test's metadata."""
from __future__ import annotations

from typing import Any, Dict, Optional

import pytest

from defan_pytest.plugin.integrations import Integration
from defan_pytest.plugin.items import GateItem, PromptItem
from defan_pytest.run import Run
from defan_pytest.verdicts import outcome_of

__all__ = ["JsonReportIntegration", "start"]


class JsonReportIntegration(Integration):
    """pytest-json-report's metadata hook."""

    @pytest.hookimpl(optionalhook=True)
    def pytest_json_runtest_metadata(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Optional[Dict[str, Any]]:
        if call.when != "call":
            return None
        if isinstance(item, PromptItem) and item.record is not None:
            # json-report serialises plain JSON; the outcome in the words of every other output.
            return {"defan": item.record.to_json(), "defan_outcome": outcome_of(item.record).word}
        if isinstance(item, GateItem):
            return {"defan_gate": [v.message for v in item.verdicts]}
        return None


def start(config: pytest.Config, run: Run) -> JsonReportIntegration:
    return JsonReportIntegration()
