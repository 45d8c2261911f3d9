"""The run's own plugin instance, registered as ``defan-session`` when ``--defan-model`` is
given (the way pytest registers ``LogXML`` and xdist its ``DSession``): it holds the
pytest-free :class:`~defan_pytest.run.Run` and drives it through the session - the items at
collection, the model calls before they run, the records as they report, and on the
controller the gate's and the regression gate's tests, the reports and the GitHub summary.

Beside it are registered the run's :class:`~defan_pytest.plugin.terminal.Terminal` and the
integrations of the other plugins the session runs (:mod:`defan_pytest.plugin.integrations`);
:meth:`DefanPlugin.stop` unregisters them all when the session ends.
"""
from __future__ import annotations

import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Callable, Dict, Generator, List, Optional, Tuple, Union

import pytest

from defan_pytest.dataset import DOMAINS
from defan_pytest.errors import format_problems
from defan_pytest.plugin import integrations
from defan_pytest.plugin.interrupt import kept_on_interrupt
from defan_pytest.plugin.outputs import ReportWriters
from defan_pytest.plugin.items import DefanCollector, PromptItem, NOTES_PROPERTY, not_asked_of, notes_of, record_of, repeats_of
from defan_pytest.plugin.terminal import Terminal
from defan_pytest.plugin.verdict_tests import VerdictTests
from defan_pytest.report.formats import FORMATS
from defan_pytest.run import Run, Worker
from defan_pytest.scoring import ner
from defan_pytest.settings import ConfigError, Settings

__all__ = ["DefanPlugin", "SEQUENTIAL_PROPERTY", "worker_of"]

#: What an xdist worker tells the controller of a sequential run's stop (``workeroutput``).
SEQUENTIAL_PROPERTY = "defan_sequential"


def worker_of(config: pytest.Config) -> Worker:
    """Where this process stands in the run: an xdist worker, the controller of one, or alone."""
    is_worker = hasattr(config, "workerinput")
    workerinput = getattr(config, "workerinput", {})
    shared = bool(getattr(config.option, "numprocesses", None)) or is_worker or bool(getattr(config.option, "tx", None))
    return Worker(
        shared=shared,
        id=str(workerinput.get("workerid", "main")),
        count=int(workerinput.get("workercount", 1) or 1),
        is_worker=is_worker,
    )


class DefanPlugin(VerdictTests):
    """The hooks of one DefAn run (see the module docstring)."""

    def __init__(self, config: pytest.Config, run: Run, lane: Optional[str] = None) -> None:
        self.config = config
        self.run = run
        #: In a session of several models, the model this plugin asks (its tests are
        #: ``defan::<model>::...``, and :mod:`defan_pytest.plugin.models` ends the run); ``None``: one model.
        self.lane = lane
        self.node = "defan" if lane is None else f"defan::{lane}"
        #: The plugin of the model this one is compared with (``--defan-compare-to``), if any.
        self.versus: Optional["DefanPlugin"] = None
        self.worker = worker_of(config)
        self.notes_sent = len(run.notes)  # of run.notes, by an xdist worker (fresh_notes): the plan's are everywhere
        self.terminal = Terminal(config, run, self.worker, node=self.node)
        self.watcher: Any = None
        self.calls_began = time.monotonic()  # an xdist controller: when its pool started
        self.selected_rows: Optional[List[Any]] = None  # an xdist controller: the prompts a worker selected
        self.started = time.time()
        self.session: Optional[pytest.Session] = None
        # The gates' tests, counted into the session's total once the run starts (progress to 100%).
        self.planned: Optional[List[Tuple[str, str]]] = None
        self.counted = False
        self.integrations: Dict[str, integrations.Integration] = {}
        self.details = False  # each prompt's verdict in words, where a report shows it (a little per item)
        self.owns_integrations = True
        self.late_fatal = False  # an xdist worker's fatal failure read only when the run ended
        #: A session of several models: every model's plugin (on the first one), and the
        #: plugins the first one unregisters with itself.
        self.lanes: List["DefanPlugin"] = [self]
        self.companions: List[Any] = []
        #: ``--defan-sequential``: the prompts reported as not asked (the verdict was settled).
        self.not_asked = 0

    @classmethod
    def start(cls, config: pytest.Config, values: Dict[str, Any]) -> "DefanPlugin":
        """Configure the run from the options' raw ``values`` (every problem is one usage
        error, before any call) and register its plugins."""
        settings, problems = cls.settings_of(config, values)
        try:
            run = Run.configure(settings, problems, pick_backend=cls.backend_picker(config))
        except ConfigError as exc:
            raise pytest.UsageError(format_problems(exc.problems, "defan-pytest: configuration")) from None
        return cls.register(config, run)

    @staticmethod
    def backend_picker(config: pytest.Config) -> Callable[[Any, str], Any]:
        """The plugins' choice of model backend (``pytest_defan_backend``)."""
        return lambda model, call_path: config.hook.pytest_defan_backend(config=config, model=model, call_path=call_path)

    @staticmethod
    def settings_of(config: pytest.Config, values: Dict[str, Any]) -> Tuple[Settings, List[str]]:
        """The settings of the options' raw ``values`` and their problems (an xdist worker
        neither compares with a baseline nor writes a report)."""
        config.addinivalue_line("markers", "defan: a DefAn prompt or gate verdict")
        config.addinivalue_line("markers", "defan_gate: a verdict of the DefAn gate")
        config.addinivalue_line("markers", "defan_regression: a verdict of the DefAn regression gate")
        config.addinivalue_line("markers", "defan_compared: a model judged against another (--defan-compare-to)")
        is_worker = hasattr(config, "workerinput")
        if is_worker:
            # Only the controller compares with the baseline and writes the report (a worker of
            # --defan-sequential reads the baseline too: its own asking stops on the comparison).
            if not values.get("sequential"):
                values["baseline"] = None
            for output in FORMATS:
                if output.option:
                    values[output.option] = None
        return Settings.parse(values, root=Path(str(config.rootpath)), invocation_dir=Path(config.invocation_params.dir))

    @classmethod
    def register(cls, config: pytest.Config, run: Run, lane: Optional[str] = None,
                 shared: Optional[Dict[str, integrations.Integration]] = None) -> "DefanPlugin":
        """Register the plugin of a configured run (``lane``: its model, in a session of
        several; ``shared``: the integrations the first model's plugin started, which every
        model's tests use)."""
        for d in sorted(set(DOMAINS) | {r.domain for r in run.rows}):
            config.addinivalue_line("markers", f"defan_{d}: DefAn prompts of the {d} domain")
        is_worker = hasattr(config, "workerinput")
        if is_worker:
            run.run_id = config.workerinput.get("defan_run_id", "")  # type: ignore[attr-defined]
        plugin = cls(config, run, lane)
        suffix = "" if lane is None else f"[{lane}]"
        config.pluginmanager.register(plugin, "defan-session" + suffix)
        config.pluginmanager.register(plugin.terminal, "defan-terminal" + suffix)
        if not is_worker and lane is None:  # several models: one report of them all (plugin.models)
            config.pluginmanager.register(ReportWriters(run, plugin._annotate), "defan-outputs")
        plugin.owns_integrations = shared is None
        plugin.integrations = integrations.start(config, run) if shared is None else shared
        plugin.details = any(i.details for i in plugin.integrations.values())
        return plugin

    def stop(self) -> None:
        """Unregister the run's plugins (the session has ended)."""
        for companion in self.companions:
            if isinstance(companion, DefanPlugin):
                companion.stop()
            else:
                self.config.pluginmanager.unregister(companion)
        self.companions = []
        if self.owns_integrations:
            integrations.stop(self.config, self.integrations)
        self.integrations = {}
        self.config.pluginmanager.unregister(self.terminal)
        writers = self.config.pluginmanager.get_plugin("defan-outputs")
        if writers is not None:
            self.config.pluginmanager.unregister(writers)
        self.config.pluginmanager.unregister(self)

    def fresh_notes(self) -> List[str]:
        """An xdist worker's notes since the last it sent (the controller says them once)."""
        if not self.worker.is_worker:
            return []
        fresh = self.run.notes[self.notes_sent:]
        self.notes_sent = len(self.run.notes)
        return fresh

    def header_lines(self) -> List[str]:
        """The model, the size of the run and which scorer runs (rules only, or which pipeline);
        in a session of several models, each model's lines."""
        return [line for lane in self.lanes for line in lane.own_header_lines()]

    def own_header_lines(self) -> List[str]:
        """:meth:`header_lines` of this plugin's run alone."""
        run = self.run
        scopes = [*dict.fromkeys(r.domain for r in run.rows), "overall"]
        return [
            f"defan: model {run.model_name}, {len(run.rows):,} prompts",
            *(f"defan sample: {line}" for line in run.plan.header),
            f"defan scorer: {ner.describe(run.settings.spacy_model)['text']}",
            f"defan gate: {run.thresholds.describe(scopes)}",
        ]

    # -- collection ------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, items: List[pytest.Item]) -> Generator[None, None, None]:
        """Add one item per selected prompt before -k, -m, --deselect and --lf filter the list."""
        parent = self.collector(session)
        made = self._items(parent, self.run.rows)
        items.extend(made)
        # Report the items as collected, so the terminal's counts and progress include them.
        result: List[Union[pytest.Item, pytest.Collector]] = list(made)
        self.config.hook.pytest_collectreport(report=pytest.CollectReport(parent.nodeid, "passed", None, result))
        yield
        if self.worker.is_worker and not self.config.option.collectonly:
            # xdist: the controller asks the prompts through its one pool and runs their tests
            # itself, as a serial run does; the workers run the session's other tests.  A worker
            # says which prompts its collection selected (-k, -m, --deselect ...) and keeps none.
            mine = [it for it in items if isinstance(it, PromptItem) and it.plugin is self]
            self.run.publish_selection([it.row for it in mine], self.worker)
            items[:] = [it for it in items if not (isinstance(it, PromptItem) and it.plugin is self)]

    def _items(self, parent: DefanCollector, rows: List[Any]) -> List[PromptItem]:
        """One test per row, marked (``index``: the row's place in the run)."""
        where = {id(r): i for i, r in enumerate(self.run.rows)}
        made: List[PromptItem] = []
        for row in rows:
            item = PromptItem.from_parent(parent, name=row.id, row=row, index=where.get(id(row), 0), plugin=self)
            item.add_marker("defan")
            item.add_marker(f"defan_{row.domain}")
            self._mark(item)
            made.append(item)
        return made

    def collector(self, session: pytest.Session) -> DefanCollector:
        """The parent of this run's tests: node id ``defan`` (``defan::<model>`` in a session of several)."""
        return DefanCollector.from_parent(session, name=self.lane or "defan", nodeid=self.node)

    def _mark(self, item: pytest.Item) -> None:
        """The marks the other plugins' integrations give every DefAn test."""
        for integration in self.integrations.values():
            for mark in integration.marks():
                item.add_marker(mark)

    # -- calls (before the items report) -------------------------------------------------------

    def start_pool(self, selected: List[PromptItem]) -> None:
        """Start asking every selected prompt."""
        if self.run.pool is None:
            self.run.start_pool([it.row for it in selected], self.worker)

    def selected(self, session: pytest.Session) -> List[PromptItem]:
        """This run's prompts among the session's items (after -k, -m, --deselect, ...)."""
        return [it for it in session.items if isinstance(it, PromptItem) and it.plugin is self]

    def _prefetch(self, session: pytest.Session) -> None:
        """Ask the model every selected prompt before the items run, through one pool.

        Items then only score.  A serial run shows the progress itself; a worker publishes it in
        the cache for the controller.
        """
        selected = self.selected(session)
        if not selected:
            return
        run = self.run
        if not self.worker.is_worker and run.pool is None:
            self.terminal.write_estimate([it.row for it in selected])  # before the first call
        self.start_pool(selected)
        printer = None if self.worker.is_worker else self.terminal.progress(run.pool.stats.snapshot)
        began = time.monotonic()
        others = [lane.run for lane in self.lanes if lane is not self]  # several models: every model's
        with kept_on_interrupt(session, run, printer, self.worker.shared, others):  # Ctrl-C: one line, what is kept
            fatal = run.wait(deadline=self._session_deadline())
        run.durations["calls"] = round(time.monotonic() - began, 3)
        if fatal is None and not self.worker.is_worker:
            # One process runs every item: score them all in one batch, so that spaCy NER (for the
            # few names the rules leave open) runs once through nlp.pipe.  An xdist worker scores
            # item by item instead, so the workers split the scoring between them.
            began = time.monotonic()
            run.score_all([it.row for it in selected])
            run.durations["scoring"] = round(time.monotonic() - began, 3)
        if fatal is not None:
            run.fatal = fatal
            if self.worker.shared:
                run.publish_fatal()
            if not self.worker.is_worker:
                raise session.Interrupted(f"defan-pytest: {fatal}")

    def _session_deadline(self) -> Optional[float]:
        """pytest-timeout's --session-timeout, which it checks only between tests, also bounds
        the model calls that run before any test."""
        seconds = self.config.getoption("session_timeout", None)
        if seconds is None:
            try:
                seconds = self.config.getini("session_timeout") or None
            except ValueError:  # pytest-timeout is not installed
                seconds = None
        try:
            return self.started + float(seconds) if seconds else None
        except (TypeError, ValueError):
            return None

    def _watch_calls(self) -> Any:
        """xdist controller: the progress line of its one pool (once it has started)."""
        run = self.run
        return self.terminal.progress(lambda: run.pool.stats.snapshot() if run.pool is not None else None)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: List[str]) -> None:
        """xdist controller: a worker has collected and said which prompts it selected (after
        -k, -m, --deselect ...): the controller asks them through its one pool, then runs their
        tests itself once its workers are done (:meth:`_run_prompts_here`)."""
        if self.run.pool is not None or self.selected_rows is not None or self.config.option.collectonly:
            return
        rows = self.run.selection()
        if rows is None:
            return  # this worker did not say (the next one will)
        self.selected_rows = rows
        if not rows:
            return
        self.calls_began = time.monotonic()
        dsession = self.config.pluginmanager.get_plugin("dsession")

        def stop_session(message: str) -> None:
            if dsession is not None and not dsession.shouldstop:
                dsession.shouldstop = f"defan-pytest: {message}"

        self.run.start_pool(rows, self.worker, on_fatal=stop_session)

    def _run_prompts_here(self, session: pytest.Session) -> None:
        """xdist controller, its workers done: the calls over, scored in one batch and the
        prompts' tests run here, as a serial run runs them (xdist's cost per test, a report
        crossing processes, would exceed what the workers could share of the scoring)."""
        run = self.run
        if run.pool is None or not self.selected_rows:
            return
        others = [lane.run for lane in self.lanes if lane is not self]
        with kept_on_interrupt(session, run, self.watcher, True, others):
            fatal = run.wait(deadline=self._session_deadline())
        self.watcher = None
        run.durations["calls"] = round((run.pool.finished or time.monotonic()) - self.calls_began, 3)
        if fatal is not None:
            run.fatal = fatal
            raise session.Interrupted(f"defan-pytest: {fatal}")
        began = time.monotonic()
        run.score_all(self.selected_rows)
        run.durations["scoring"] = round(time.monotonic() - began, 3)
        items = self._items(self.collector(session), self.selected_rows)
        session.testscollected += len(items)
        tr = self.terminal.reporter
        if tr is not None and hasattr(tr, "tests_count"):  # pytest-sugar's progress bar
            tr.tests_count += len(items)
        for i, item in enumerate(items):
            if session.shouldfail or session.shouldstop:
                break
            self.config.hook.pytest_runtest_protocol(item=item, nextitem=items[i + 1] if i + 1 < len(items) else None)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, None, object]:
        controller = not session.config.option.collectonly and session.config.pluginmanager.has_plugin("dsession")
        if not session.config.option.collectonly:
            if controller:
                if self.lane is None:  # several models: plugin.models writes them, in the models' order
                    self.terminal.write_estimate(self.run.rows)  # the workers' selection is theirs: at most this
                self.watcher = self._watch_calls()  # xdist controller: it asks, the workers score
            else:
                self._prefetch(session)  # serial run, or an xdist worker
        try:  # an xdist controller waits for its workers in xdist's loop: Ctrl-C lands there
            others = [lane.run for lane in self.lanes if lane is not self]
            with kept_on_interrupt(session, self.run, None, True, others) if controller else nullcontext():
                result = yield
            if controller:
                self._run_prompts_here(session)  # its own Ctrl-C guard: the calls may still run
        finally:
            if self.watcher is not None:
                self.watcher.stop()
                self.watcher = None
        if self.worker.is_worker:
            # Notes from calls after this worker's last report (or of a worker that ran no
            # item: it asked prompts another worker's items read): xdist hands workeroutput to
            # the controller's pytest_testnodedown.
            self.config.workeroutput[NOTES_PROPERTY] = self.fresh_notes()  # type: ignore[attr-defined]
            if self.run.asking is not None:  # --defan-sequential: where this worker stopped asking
                self.config.workeroutput[SEQUENTIAL_PROPERTY] = self.run.asking.info()  # type: ignore[attr-defined]
        elif not session.config.option.collectonly and self.lane is None:  # nothing ran: no figures, no gate, no report
            self._finish(session)  # (several models: plugin.models ends every model's run)
        return result

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist controller: the notes a worker had not sent on a report."""
        output = getattr(node, "workeroutput", {})
        for note in output.get(NOTES_PROPERTY, ()) or ():
            if isinstance(note, str) and note not in self.run.notes:
                self.run.notes.append(note)
        found = output.get(SEQUENTIAL_PROPERTY)
        if isinstance(found, dict) and "scopes" not in (self.run.sequential or {}):
            self.run.sequential = found  # the whole block wins over a skipped prompt's brief

    # -- results (controller only) -----------------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        # The first item result ends the call phase: close the progress line before the
        # terminal prints anything else.
        if self.watcher is not None:
            watcher, self.watcher = self.watcher, None
            watcher.stop()
        self._count_verdict_tests()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # A rerun attempt (pytest-rerunfailures) is not a result: only the final report counts.
        if report.when != "call" or self.worker.is_worker or report.outcome == "rerun":
            return
        if self.lane is not None and not report.nodeid.startswith(self.node + "::"):
            return  # another model's test
        for note in notes_of(report):
            if note not in self.run.notes:
                self.run.notes.append(note)
        stopped = not_asked_of(report)
        if stopped is not None:
            self.not_asked += 1
            if self.run.sequential is None:
                self.run.sequential = dict(stopped)
        rec = record_of(report)
        if rec is not None:
            self.run.records.append(rec)
            again = repeats_of(report)
            if again is not None:
                self.run.repeats[str(rec.get("id"))] = again

    def _finish(self, session: pytest.Session) -> None:
        """The figures, the gate, the regression gate, their tests and the reports."""
        self.settle()
        self.judge(session)
        if self.run.summary is not None:
            session.config.hook.pytest_defan_report(config=session.config, report=self.run.report())

    def settle(self) -> None:
        """The figures and the gates' verdicts, from every record (controller)."""
        run = self.run
        self._count_verdict_tests()
        if run.fatal is None and run.watch is not None:
            # An xdist controller: a worker may have published its fatal failure after the
            # progress line stopped watching (at the first result); read it once more, so that a
            # run that stopped is never judged as one narrowed by -k.
            run.fatal = run.watch.run_progress()[1] or None
            self.late_fatal = run.fatal is not None
        if run.asking is not None:
            run.sequential = run.asking.info()  # a serial run: it asked the prompts itself
        ran = len(run.records) + self.not_asked
        if run.fatal is None and ran < len(run.rows) and not run.settings.gate_narrowed:
            # -k, -m, --deselect, --lf, a path or pytest-split ran part of the selection: the
            # figures describe that part only, which the limits were not set for.
            run.narrowed = True
            run.gate_skipped = (
                f"the gate judges whole runs: {ran} of the {len(run.rows)} selected prompts ran "
                "(narrowed by -k, -m, --deselect, --lf, a path or pytest-split); --defan-gate-narrowed judges anyway"
            )
        elif ran < len(run.rows):
            run.narrowed = True
        run.finish()
        if run.fatal is None and run.records:
            run.compare()

    def judge(self, session: pytest.Session) -> None:
        """The gates' verdicts as tests, and the summary hook (after :meth:`settle`)."""
        run, config = self.run, session.config
        # The gate's verdicts are tests of their own, run here on the controller through the
        # standard protocol: in the terminal, in --junitxml, in every reporting plugin and in the
        # exit code, like any test.
        items = self._verdict_items(session)
        for i, item in enumerate(items):
            config.hook.pytest_runtest_protocol(item=item, nextitem=items[i + 1] if i + 1 < len(items) else None)
        config.hook.pytest_defan_summary(config=config, summary=run.summary, verdicts=run.verdicts)

    def _annotate(self) -> Optional[Callable[[str], None]]:
        """Where the GitHub step's ``::error`` annotations go: the terminal summary, unless
        another plugin already annotates the failed tests."""
        if any(i.annotates_failures for i in self.integrations.values()):
            return None
        return self.terminal.annotations.append

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.late_fatal and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            session.exitstatus = pytest.ExitCode.INTERRUPTED  # the run stopped, as the summary says
        if self.run.report_error is not None and session.exitstatus == pytest.ExitCode.OK:
            # The report asked for is missing: the run did not do what it was told to.
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        self.run.close(self.worker)
