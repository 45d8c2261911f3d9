"""Hooks defan-pytest offers to conftest.py files and other plugins (no pytest import)."""
from __future__ import annotations

from typing import Any, List, Mapping, Optional

from pluggy import HookspecMarker

hookspec = HookspecMarker("pytest")


@hookspec
def pytest_defan_summary(config: Any, summary: Mapping[str, Any], verdicts: List[Any]) -> None:
    """Called on the controller once every prompt has been scored and the gate has judged.

    ``summary`` is the per-domain and overall figures (as in the JSON report); ``verdicts`` the
    gate's :class:`defan_pytest.gates.level.Verdict` list (empty without a thresholds file).
    """


@hookspec(firstresult=True)
def pytest_defan_backend(config: Any, model: Any, call_path: str) -> Optional[Any]:
    """Pick the model backend of the run, once, before any call.

    ``model`` is the resolved ``--defan-model`` (:func:`defan_pytest.calls.models.resolve`: a
    ``CallableModel`` or a ``LitellmModel``), ``call_path`` the ``--defan-call-path`` value
    (``auto``, ``litellm`` or ``openai``).  Return a
    :class:`defan_pytest.calls.protocol.Backend` (for instance one of
    :data:`defan_pytest.calls.backends.BACKENDS`) to call the model through it, or ``None``
    for no opinion: the first implementation that returns a backend wins, and when none does
    :func:`defan_pytest.calls.backends.choose` picks the first registered backend that serves
    the model.
    """


@hookspec
def pytest_defan_report(config: Any, report: Any) -> None:
    """Called on the controller once, with the finished report (a
    :class:`defan_pytest.records.Report`), after the gate's verdicts have run.

    Every output is a plugin implementing it: defan-pytest's own writers (the report formats of
    :data:`defan_pytest.report.formats.FORMATS`: JSON, HTML, the GitHub step summary and
    annotations, and any format another package registered) are registered on the controller
    only, as ``defan-outputs``, the way pytest registers ``LogXML``.
    """
