"""A session of several models (``--defan-model`` given more than once): one run a model, side
by side.

Each model gets its own :class:`~defan_pytest.plugin.session.DefanPlugin` (a *lane*: its run,
its items ``defan::<model>::<prompt id>``, its gate with its own threshold table, its terminal
section), and this module's :class:`Models` plugin holds them together: it starts every
model's calls at once before any waits (their pools run side by side, each with the model's
cache key, concurrency and rate limit), ends every run on the controller (figures, gates,
``--defan-compare-to``'s paired comparison, the verdict tests), prints the domains-by-models
table and writes one report of them all (schema version 2,
:class:`~defan_pytest.records.ModelsReport`).  Serial and xdist runs share this path: records
reach each lane on the controller through ``report.user_properties`` as in a run of one model.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Generator, List, Optional

import pytest

from defan_pytest.errors import format_problems
from defan_pytest.plugin.items import PromptItem
from defan_pytest.plugin.session import DefanPlugin
from defan_pytest.records import ModelsReport
from defan_pytest.report import formats
from defan_pytest.report.models import comparison_lines, text_table
from defan_pytest.run import Run
from defan_pytest.safetext import inline, printable
from defan_pytest.settings import ConfigError, Settings

__all__ = ["Models", "start"]


def start(config: pytest.Config, values: Dict[str, Any], names: List[str]) -> DefanPlugin:
    """Configure a run for each model of ``names`` (every problem of every model in one usage
    error, before any call), register their plugins and the :class:`Models` plugin; the first
    model's plugin is returned (the session's, in the config's stash)."""
    settings, problems = DefanPlugin.settings_of(config, values)
    runs: List[Run] = []
    found: List[str] = []
    for name in names:
        try:
            runs.append(Run.configure(settings.for_model(name), problems, pick_backend=DefanPlugin.backend_picker(config)))
        except ConfigError as exc:
            found.extend(p for p in exc.problems if p not in found)
    if found:
        raise pytest.UsageError(format_problems(found, "defan-pytest: configuration"))
    first = DefanPlugin.register(config, runs[0], lane=names[0])
    lanes = [first] + [DefanPlugin.register(config, run, lane=name, shared=first.integrations)
                       for name, run in zip(names[1:], runs[1:])]
    for k, lane in enumerate(lanes[1:], 1):
        # Each model claims its prompts under a run id of its own; an xdist worker derives the
        # same ids from the one the controller gave it.
        lane.run.run_id = f"{first.run.run_id}-{k}"
    if settings.compare_to is not None:
        reference = next(lane for lane in lanes if lane.lane == settings.compare_to)
        for lane in lanes:
            if lane is not reference:
                lane.versus = reference
    models = Models(config, settings, lanes)
    config.pluginmanager.register(models, "defan-models")
    for lane in lanes:
        lane.lanes = lanes  # the session's header (on the first) and a Ctrl-C's line count every model
    first.companions = [*lanes[1:], models]
    return first


class Models:
    """The hooks that hold several models' runs together (see the module docstring)."""

    def __init__(self, config: pytest.Config, settings: Settings, lanes: List[DefanPlugin]) -> None:
        self.config = config
        self.settings = settings
        self.lanes = lanes
        self.report: Optional[ModelsReport] = None
        self.written: Dict[str, Any] = {}
        self.report_error: Optional[str] = None

    @property
    def worker(self) -> Any:
        return self.lanes[0].worker

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, items: List[pytest.Item]) -> Generator[None, None, None]:
        """Every model's prompts in the order the models were given (each lane added its own,
        the last registered first), before -k, -m and --deselect filter them."""
        order = {id(lane): k for k, lane in enumerate(self.lanes)}
        at = [i for i, it in enumerate(items) if isinstance(it, PromptItem)]
        ordered = sorted((items[i] for i in at), key=lambda it: order.get(id(getattr(it, "plugin", None)), 0))
        for i, item in zip(at, ordered):
            items[i] = item
        return (yield)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, None, object]:
        """Start every model's calls before any lane waits for its own (a serial run, or an
        xdist worker), and end every run once all of them have reported (the controller)."""
        if not session.config.option.collectonly and session.config.pluginmanager.has_plugin("dsession"):
            for lane in self.lanes:  # an xdist controller: the workers' selection is theirs, at most this
                lane.terminal.write_estimate(lane.run.rows)
        elif not session.config.option.collectonly:
            for lane in self.lanes:
                selected = lane.selected(session)
                if selected:
                    if not self.worker.is_worker:
                        lane.terminal.write_estimate([it.row for it in selected])
                    lane.start_pool(selected)
        result = yield
        if not self.worker.is_worker and not session.config.option.collectonly:
            self.finish(session)
        return result

    def finish(self, session: pytest.Session) -> None:
        """Every model's figures and gates, the comparisons, the verdict tests, the report."""
        for lane in self.lanes:
            lane.settle()
        for lane in self.lanes:
            other = lane.versus
            if other is not None and lane.run.fatal is None and other.run.fatal is None and lane.run.records and other.run.records:
                lane.run.compare_with(other.run)
        for lane in self.lanes:
            lane.judge(session)
        runs = [lane.run for lane in self.lanes]
        if any(run.summary is None for run in runs):
            return
        reports = []
        for run in runs:
            reports.append(run.report())
            session.config.hook.pytest_defan_report(config=session.config, report=reports[-1])
        self.report = ModelsReport(
            runs=tuple(reports), compare_to=self.settings.compare_to,
            comparisons={lane.lane or "": lane.run.versus for lane in self.lanes if lane.run.versus is not None},
        )
        self.write(self.report)

    def write(self, report: ModelsReport) -> None:
        """Write the report of every model in each format asked for (the first model's run
        checked the outputs before any call)."""
        first = self.lanes[0]
        written = formats.write_all(report, self.settings.outputs,
                                    first.run.write_context(os.environ, first._annotate()))
        self.written = dict(written.paths)
        self.report_error = "; ".join(written.problems) or None

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if self.report is None:
            return
        tr = terminalreporter
        tr.write_sep("=", f"DefAn: {len(self.lanes)} models")
        for line in text_table(self.report):
            tr.write_line(printable(line))
        for line in comparison_lines(self.report):
            tr.write_line(printable(line), red=line.lstrip().startswith("REGRESSED") or line.endswith(": fail"))
        for name, path in self.written.items():
            if name in ("json", "html"):
                tr.write_line(f"{'report' if name == 'json' else 'html report'}: {printable(str(path))}")
        if self.report_error is not None:
            tr.write_line(f"defan-pytest: the report was not written: {inline(self.report_error)}", red=True)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.report_error is not None and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
