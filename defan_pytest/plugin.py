"""The pytest plugin: every hook of defan-pytest, and only hooks (plus the item classes).

Without ``--defan-model`` the plugin registers its options and does nothing else: no dataset,
no spaCy, no litellm is imported.  With it, ``pytest_configure`` builds the run's
:class:`~defan_pytest.settings.Settings` and :class:`~defan_pytest.run.Run` (every problem is
one usage error, before any call) and registers a :class:`DefanPlugin` holding them, the way
pytest registers ``LogXML`` and xdist its ``DSession``.  Each selected DefAn prompt becomes a
test item; all model calls of the process go through one pool; each item scores its answer and
puts the verdict on ``report.user_properties``; the controller (the only process that
aggregates, with or without xdist) computes the domain figures, runs the gate and writes the
reports.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Tuple, Union

import pytest

from defan_pytest.settings import OPTIONS

if TYPE_CHECKING:
    from defan_pytest.run import Run, Worker

PROPERTY = "defan"


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from defan_pytest import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("defan", "DefAn hallucination benchmark (defan-pytest)")
    for opt in OPTIONS:
        # argparse formats help with %: a literal one must be doubled on the command line.
        cli_help = opt.help_text.replace("%", "%%")
        if opt.kind == "bool":
            group.addoption(opt.flag, action="store_true", dest=opt.dest, default=None, help=cli_help)
        elif opt.kind in ("linelist", "args"):
            group.addoption(opt.flag, action="append", dest=opt.dest, default=None, metavar="VALUE", help=cli_help)
        else:
            group.addoption(opt.flag, action="store", dest=opt.dest, default=None, metavar="VALUE", help=cli_help)
        parser.addini(opt.dest, help=opt.help_text, type=opt.kind, default=opt.default)


def _values(config: pytest.Config) -> Dict[str, Any]:
    """Every option's raw value: the command line, else the ini key."""
    values: Dict[str, Any] = {}
    for opt in OPTIONS:
        value = config.getoption(opt.dest)
        if value is None or value == []:
            value = config.getini(opt.dest)
        values[opt.noun] = value
    return values


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _worker(config: pytest.Config) -> "Worker":
    from defan_pytest.run import Worker

    shared = bool(getattr(config.option, "numprocesses", None)) or _is_worker(config) or bool(
        getattr(config.option, "tx", None)
    )
    workerinput = getattr(config, "workerinput", {})
    return Worker(
        shared=shared,
        id=str(workerinput.get("workerid", "main")),
        count=int(workerinput.get("workercount", 1) or 1),
        is_worker=_is_worker(config),
    )


plugin_key = pytest.StashKey["DefanPlugin"]()


def pytest_configure(config: pytest.Config) -> None:
    values = _values(config)
    if not values["model"]:
        return
    from defan_pytest.dataset import DOMAINS
    from defan_pytest.errors import format_problems
    from defan_pytest.run import Run
    from defan_pytest.settings import ConfigError, Settings

    config.addinivalue_line("markers", "defan: a DefAn prompt")
    settings, problems = Settings.parse(
        values, root=Path(str(config.rootpath)), invocation_dir=Path(config.invocation_params.dir)
    )
    try:
        run = Run.configure(settings, problems)
    except ConfigError as exc:
        raise pytest.UsageError(format_problems(exc.problems, "defan-pytest: configuration")) from None
    for d in sorted(set(DOMAINS) | {r.domain for r in run.rows}):
        config.addinivalue_line("markers", f"defan_{d}: DefAn prompts of the {d} domain")
    if _is_worker(config):
        run.run_id = config.workerinput.get("defan_run_id", "")  # type: ignore[attr-defined]
    plugin = DefanPlugin(config, run)
    config.stash[plugin_key] = plugin
    config.pluginmanager.register(plugin, "defan-session")


def _plugin(config: pytest.Config) -> Optional["DefanPlugin"]:
    return config.stash.get(plugin_key, None)


# --------------------------------------------------------------------------------------------
# items
# --------------------------------------------------------------------------------------------


class DefanFailure(Exception):
    """A prompt that hallucinated or was misaligned, under --defan-strict."""


class DefanCollector(pytest.Collector):
    """The parent of every DefAn item (node id ``defan``)."""

    def collect(self) -> List[pytest.Item]:  # pragma: no cover - items are made by the plugin
        return []


class DefanItem(pytest.Item):
    """One DefAn prompt: asks the model, scores the answer, reports the verdict."""

    def __init__(self, *, row: Any, index: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.row = row
        self.index = index
        self.record: Optional[Dict[str, Any]] = None

    def runtest(self) -> None:
        plugin = _plugin(self.config)
        assert plugin is not None
        run = plugin.run
        if run.fatal is not None:
            # The run stopped on a failure every call would share (bad key, unknown model):
            # the remaining prompts are not asked, and not counted as failures either.
            pytest.skip(f"not asked: the run stopped ({run.fatal})")
        if run.pool is None:  # not prefetched (a plugin ran the item outside the loop): start now
            plugin.start_pool([it for it in self.session.items if isinstance(it, DefanItem)])
        from defan_pytest.calls import FatalCallError

        try:
            rec = run.verdict(self.row, self.index)
        except FatalCallError as exc:
            run.fatal = str(exc)
            pytest.skip(f"not asked: the run stopped ({exc})")
        self.record = rec
        self.user_properties.append((PROPERTY, rec))
        if run.settings.strict and rec["error"] is None and not (rec["correct"] and rec["aligned"]):
            raise DefanFailure(rec)

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        if isinstance(excinfo.value, DefanFailure):
            return _describe_record(excinfo.value.args[0])
        from defan_pytest.calls import FatalCallError

        if isinstance(excinfo.value, FatalCallError):
            return f"the run stopped: {excinfo.value}"
        return super().repr_failure(excinfo)

    def reportinfo(self) -> Tuple[Any, Optional[int], str]:
        return self.path, max(0, self.row.line - 1), f"defan {self.row.id}"


def _describe_record(rec: Dict[str, Any]) -> str:
    verdict = []
    if not rec["correct"]:
        verdict.append("hallucinated (FCH)")
    if not rec["aligned"]:
        verdict.append("misaligned (PMH)")
    response = rec["response"] or ""
    if len(response) > 600:
        response = response[:600] + " ..."
    return "\n".join([
        f"{rec['id']}: {' and '.join(verdict) or 'ok'}",
        f"  question: {rec['question']}",
        f"  gold:     {rec['answer'].strip()!r}",
        f"  response: {response!r}",
        f"  claim:    {rec['claim']!r}",
        f"  aligned:  {rec['aligned']}   correct: {rec['correct']}",
    ])


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Optional[pytest.Item]) -> Optional[bool]:
    """A DefAn item has no fixtures and nothing to set up or tear down: report its one call
    phase only.  pytest's own cost per item is most of a cached run (bench/collect_speed.py), and this
    removes two of its three reports."""
    if not isinstance(item, DefanItem):
        return None
    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    call = pytest.CallInfo.from_call(item.runtest, when="call", reraise=(pytest.exit.Exception, KeyboardInterrupt))
    report = ihook.pytest_runtest_makereport(item=item, call=call)
    ihook.pytest_runtest_logreport(report=report)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


# --------------------------------------------------------------------------------------------
# the run's own plugin instance: collection, the call phase, results, the gate, the summary
# --------------------------------------------------------------------------------------------


def _record_of(report: pytest.TestReport) -> Optional[Dict[str, Any]]:
    for name, value in getattr(report, "user_properties", ()) or ():
        if name == PROPERTY and isinstance(value, dict):
            return value
    return None


class DefanPlugin:
    """The hooks of one DefAn run, registered as ``defan-session`` when ``--defan-model`` is
    given.  Holds the pytest-free :class:`~defan_pytest.run.Run` and drives it."""

    def __init__(self, config: pytest.Config, run: "Run") -> None:
        self.config = config
        self.run = run
        self.worker = _worker(config)
        self.watcher: Any = None

    # -- collection ------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, items: List[pytest.Item]) -> None:
        """Add one item per selected prompt before -k, -m, --deselect and --lf filter the list."""
        parent = DefanCollector.from_parent(session, name="defan", nodeid="defan")
        made: List[pytest.Item] = []
        for i, row in enumerate(self.run.rows):
            item = DefanItem.from_parent(parent, name=row.id, row=row, index=i)
            item.path = Path(row.source)
            item.add_marker("defan")
            item.add_marker(f"defan_{row.domain}")
            made.append(item)
        items.extend(made)
        # Report the items as collected, so the terminal's counts and progress include them.
        result: List[Union[pytest.Item, pytest.Collector]] = list(made)
        self.config.hook.pytest_collectreport(report=pytest.CollectReport(parent.nodeid, "passed", None, result))

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist (controller): every worker of the run shares the run id (claims in the cache)."""
        node.workerinput["defan_run_id"] = self.run.run_id

    # -- calls (before the items report) -------------------------------------------------------

    def start_pool(self, selected: List["DefanItem"]) -> None:
        """Start asking every selected prompt."""
        self.run.start_pool([it.row for it in selected], self.worker)

    def _printer(self, source: Any) -> Any:
        from defan_pytest.progress import ProgressPrinter

        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is None:
            return None
        interval = float(os.environ.get("DEFAN_PROGRESS_SECONDS", "10") or 10)
        return ProgressPrinter(
            write=lambda text: tr.write(text, flush=True), source=source, live=bool(tr.isatty), interval=interval,
        ).start()

    def _prefetch(self, session: pytest.Session) -> None:
        """Ask the model every selected prompt before the items run, through one pool.

        Items then only score.  A serial run shows the progress itself; a worker publishes it in
        the cache for the controller.
        """
        selected = [it for it in session.items if isinstance(it, DefanItem)]
        if not selected:
            return
        run = self.run
        self.start_pool(selected)
        printer = None if self.worker.is_worker else self._printer(run.pool.stats.snapshot)
        try:
            fatal = run.wait()
        finally:
            if printer is not None:
                printer.stop()
        if fatal is None and not self.worker.is_worker:
            # One process runs every item: score them all in one batch, so that spaCy NER (for the
            # few names the rules leave open) runs once through nlp.pipe.  An xdist worker scores
            # item by item instead, so the workers split the scoring between them.
            run.score_all([it.row for it in selected])
        if fatal is not None:
            run.fatal = fatal
            if self.worker.shared:
                run.publish_fatal()
            if not self.worker.is_worker:
                raise session.Interrupted(f"defan-pytest: {fatal}")

    def _watch_workers(self) -> Any:
        """xdist controller: show the workers' call progress, and stop the run on a fatal failure."""
        if self.run.cache_folder(shared=True) is None:
            return None
        progress = self.run.watch_progress()
        dsession = self.config.pluginmanager.get_plugin("dsession")

        def source() -> Any:
            stats = progress()
            if self.run.fatal and dsession is not None and not dsession.shouldstop:
                dsession.shouldstop = f"defan-pytest: {self.run.fatal}"
            return stats

        return self._printer(source)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Iterator[None]:
        if not session.config.option.collectonly:
            if session.config.pluginmanager.has_plugin("dsession"):
                self.watcher = self._watch_workers()  # xdist controller: workers make the calls
            else:
                self._prefetch(session)  # serial run, or an xdist worker
        try:
            result = yield
        finally:
            if self.watcher is not None:
                self.watcher.stop()
                self.watcher = None
        if not self.worker.is_worker:
            self._finish(session)
        return result

    # -- results (controller only) -----------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        # The first item result ends the call phase: close the progress line before the
        # terminal prints anything else.
        if self.watcher is not None:
            watcher, self.watcher = self.watcher, None
            watcher.stop()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call" or self.worker.is_worker:
            return
        rec = _record_of(report)
        if rec is not None:
            self.run.records.append(rec)

    def _finish(self, session: pytest.Session) -> None:
        from defan_pytest import gate

        run = self.run
        config = session.config
        run.finish()
        # The gate's verdicts are test reports of their own: in the terminal, in --junitxml and in
        # the exit code, like any test.
        source = run.thresholds_source or "thresholds.toml"
        by_scope: Dict[str, List[Any]] = {}
        for v in run.verdicts:
            by_scope.setdefault(v.scope, []).append(v)
        judged_scopes = [
            scope for scope, vs in by_scope.items()
            if any(v.status in (gate.FAIL, gate.INSUFFICIENT, gate.PASS) for v in vs)
        ]
        # The gate's reports count as tests of this session (progress stays within 100%).
        session.testscollected += len(judged_scopes)
        for scope, verdicts in by_scope.items():
            bad = [v for v in verdicts if v.status in (gate.FAIL, gate.INSUFFICIENT)]
            judged = [v for v in verdicts if v.status == gate.PASS]
            if not bad and not judged:
                continue
            text = "\n".join(v.message for v in (bad or judged))
            nodeid = f"defan::gate[{scope}]"
            rep = pytest.TestReport(
                nodeid=nodeid,
                location=(source, 0, f"gate[{scope}]"),
                keywords={"defan": 1, "gate": 1},
                outcome="failed" if bad else "passed",
                longrepr=text if bad else None,
                when="call",
                sections=[] if bad else [("defan gate", text)],
                user_properties=[("defan_gate", [v.message for v in verdicts])],
            )
            config.hook.pytest_runtest_logstart(nodeid=nodeid, location=rep.location)
            config.hook.pytest_runtest_logreport(report=rep)
            config.hook.pytest_runtest_logfinish(nodeid=nodeid, location=rep.location)
        config.hook.pytest_defan_summary(config=config, summary=run.summary, verdicts=run.verdicts)
        run.write_report()

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        run = self.run
        if self.worker.is_worker or run.summary is None:
            return
        from defan_pytest import gate, reports

        tr = terminalreporter
        tr.write_sep("=", f"DefAn: {run.model_name}")
        if run.fatal:
            tr.write_line(f"the run stopped: {run.fatal}", red=True)
        if run.thresholds is not None and not run.thresholds.is_empty:
            tr.write_line(gate.format_gate_table(run.summary, run.thresholds, run.verdicts))
        else:
            tr.write_line(reports.format_table(run.summary))
            tr.write_line("no thresholds file: nothing was gated (see --defan-thresholds)")
        if run.records:
            c = run.call_counts()
            tr.write_line(
                f"{c['prompts']} prompts: {c['answered']} answered by the model, {c['cached']} from the cache, "
                f"{c['retries']} retries, {c['errors']} call errors"
            )
        if run.report_path is not None:
            tr.write_line(f"report: {run.report_path}")

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.run.close(self.worker)


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Optional[Tuple[str, str, Any]]:
    """Hallucinated and misaligned prompts have their own letters and counts; they do not fail
    the run unless --defan-strict (the gate decides)."""
    if report.when != "call" or not report.passed:
        return None
    rec = _record_of(report)
    if rec is None:
        return None
    if rec["error"] is not None:
        return "call-error", "C", ("CALL-ERROR", {"yellow": True})
    detail = f" (claim {rec['claim']!r}, gold {rec['answer'].strip()!r})"
    if not rec["correct"]:
        return "hallucinated", "H", ("HALLUCINATED" + detail, {"red": True})
    if not rec["aligned"]:
        return "misaligned", "M", ("MISALIGNED" + detail, {"yellow": True})
    return None


@pytest.fixture(scope="session")
def defan_scorer() -> Any:
    """A :class:`defan_pytest.scoring.Scorer` (rules plus the installed spaCy pipeline, if any)
    for tests that score answers of their own."""
    from defan_pytest.scoring import Scorer

    return Scorer(nlp="auto")
