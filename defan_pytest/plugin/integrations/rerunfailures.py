"""pytest-rerunfailures: a verdict is a function of an answer already asked and kept, so
running a DefAn test again cannot change it: reruns are switched off for them.

Only when the session asks for reruns: a test with the marker goes through the rerun protocol,
which under xdist asks the controller's status database over a socket for every test (45 ms a
test here)."""
from __future__ import annotations

from functools import cached_property
from typing import List, Optional

import pytest

from defan_pytest.plugin.integrations import Integration
from defan_pytest.run import Run

__all__ = ["Rerunfailures", "reruns_asked", "start"]


def reruns_asked(config: pytest.Config) -> bool:
    """Does this session ask for reruns (``--reruns``, the ``reruns`` ini key, ``--force-reruns``)?"""
    for name in ("reruns", "force_reruns"):
        if getattr(config.option, name, None) is not None:
            return True
    try:
        return bool(str(config.getini("reruns") or "").strip())
    except ValueError:
        return False


class Rerunfailures(Integration):
    """The marker (pytest-rerunfailures' own) that forbids reruns."""

    @cached_property
    def no_reruns(self) -> pytest.MarkDecorator:
        # ``condition=False`` holds in every rerun mode, --force-reruns included.
        return pytest.mark.flaky(reruns=0, condition=False)

    def marks(self) -> List[pytest.MarkDecorator]:
        return [self.no_reruns]


def start(config: pytest.Config, run: Run) -> Optional[Rerunfailures]:
    return Rerunfailures() if reruns_asked(config) else None
