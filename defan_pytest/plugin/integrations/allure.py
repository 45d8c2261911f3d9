"""Allure (with ``--alluredir``): each prompt's verdict, claim and gold attached to its result
and its verdict as a tag; each gate scope a parameter, so that two scopes are two tests there."""
from __future__ import annotations

from typing import Generator, Optional

import allure_commons
import pytest
from allure_commons.types import AttachmentType

from defan_pytest.plugin.integrations import Integration
from defan_pytest.plugin.items import GateItem, PromptItem, RegressionItem
from defan_pytest.plugin.wording import describe
from defan_pytest.run import Run
from defan_pytest.verdicts import outcome_of

__all__ = ["Allure", "start"]


class Allure(Integration):
    """Allure's annotations of DefAn tests, made while each one runs."""

    details = True

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        hook = allure_commons.plugin_manager.hook
        if isinstance(item, (GateItem, RegressionItem)):
            hook.add_parameter(name="scope", value=item.scope, excluded=None, mode=None)
        try:
            return (yield)
        finally:
            # Also when the prompt failed (--defan-strict): the verdict says why.
            if isinstance(item, PromptItem) and item.record is not None:
                hook.attach_data(
                    body=describe(item.record), name="defan verdict", attachment_type=AttachmentType.TEXT, extension=None,
                )
                hook.add_label(label_type="tag", labels=[outcome_of(item.record).word])


def start(config: pytest.Config, run: Run) -> Optional[Allure]:
    return Allure() if config.getoption("allure_report_dir", None) else None
