"""Hooks defan-pytest offers to conftest.py files and other plugins (no pytest import)."""
from __future__ import annotations

from typing import Any, List, Mapping

from pluggy import HookspecMarker

hookspec = HookspecMarker("pytest")


@hookspec
def pytest_defan_summary(config: Any, summary: Mapping[str, Any], verdicts: List[Any]) -> None:
    """Called on the controller once every prompt has been scored and the gate has judged.

    ``summary`` is the per-domain and overall figures (as in the JSON report); ``verdicts`` the
    gate's :class:`defan_pytest.gates.level.Verdict` list (empty without a thresholds file).
    """
