"""pytest-split (``--splits``, ``--group``): paraphrase groups are kept whole.

The DefAn prompts are taken out of the list before pytest-split splits the other tests by
their durations, and this split's share of whole groups (every split computes the same
partition) is added back after it.  The taking out is :func:`defan_pytest.plugin.pytest_collection_modifyitems`,
a hook of the entry-point module: registered before pytest-split registers its own plugin in
``pytest_configure``, it runs after -k, -m and --deselect and before pytest-split's own
trylast split."""
from __future__ import annotations

from typing import Generator, List, Optional

import pytest

from defan_pytest.plugin.integrations import Integration
from defan_pytest.plugin.items import PromptItem
from defan_pytest.run import Run

__all__ = ["Split", "start"]


class Split(Integration):
    """This split's share of the DefAn prompts."""

    def __init__(self, config: pytest.Config, splits: int, group: int) -> None:
        self.config = config
        self.splits = splits
        self.group = group
        self.share: List[pytest.Item] = []

    def take_share(self, items: List[pytest.Item]) -> None:
        """Take the DefAn prompts out of ``items``, keep this split's groups, deselect the rest."""
        ours = [it for it in items if isinstance(it, PromptItem)]
        keys = sorted({it.row.group_key for it in ours})
        keep = {k for i, k in enumerate(keys) if i % self.splits == self.group - 1}
        self.share = [it for it in ours if it.row.group_key in keep]
        items[:] = [it for it in items if not isinstance(it, PromptItem)]
        dropped = [it for it in ours if it.row.group_key not in keep]
        if dropped:
            self.config.hook.pytest_deselected(items=dropped)

    @pytest.hookimpl(wrapper=True)
    def pytest_collection_modifyitems(self, items: List[pytest.Item]) -> Generator[None, None, None]:
        """After pytest-split has split the other tests, add this split's share back."""
        result = yield
        items.extend(self.share)
        return result


def start(config: pytest.Config, run: Run) -> Optional[Split]:
    option = config.option
    splits, group = getattr(option, "splits", None), getattr(option, "group", None)
    return Split(config, int(splits), int(group)) if splits and group else None
