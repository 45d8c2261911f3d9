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

import functools
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Tuple, Union

import pytest

from defan_pytest.settings import OPTIONS

if TYPE_CHECKING:
    from defan_pytest.run import Run, Worker

PROPERTY = "defan"
VERDICT_PROPERTY = "defan_verdict"
#: Above this many selected prompts (and without -v), DefAn items print no letter each: the
#: terminal shows a line per domain at every quarter instead.
LINES_ABOVE = 1000
# pytest-rerunfailures' marker (registered by it) for items whose reruns cannot change anything.
_NO_RERUNS = pytest.mark.flaky(reruns=0, condition=False)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from defan_pytest.plugin import hookspecs

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


def _reruns_asked(config: pytest.Config) -> bool:
    """Does this session ask pytest-rerunfailures for reruns (``--reruns``, the ``reruns`` ini
    key, ``--force-reruns``)?  Only then do DefAn items need its marker that forbids them: a
    marked item goes through its rerun protocol, which under xdist asks the controller's
    status database over a socket for every item (45 ms an item here)."""
    for name in ("reruns", "force_reruns"):
        if getattr(config.option, name, None) is not None:
            return True
    try:
        return bool(str(config.getini("reruns") or "").strip())
    except ValueError:
        return False


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
        if isinstance(values["model"], str):
            # Given, but empty (--defan-model=$MODEL with the variable unset): running without
            # the plugin would pass a CI job that was meant to gate a model.
            raise pytest.UsageError(
                "defan-pytest: --defan-model: given an empty value (an unset variable?); give a model, "
                "or leave the option out to run without defan-pytest"
            )
        return
    from defan_pytest.dataset import DOMAINS
    from defan_pytest.errors import format_problems
    from defan_pytest.run import Run
    from defan_pytest.settings import ConfigError, Settings

    config.addinivalue_line("markers", "defan: a DefAn prompt or gate verdict")
    config.addinivalue_line("markers", "defan_gate: a verdict of the DefAn gate")
    config.addinivalue_line("markers", "defan_regression: a verdict of the DefAn regression gate")
    if _is_worker(config):
        # Only the controller compares with the baseline and writes the report.
        values["baseline"] = values["report"] = values["html"] = None
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


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> Optional[bool]:
    """A DefAn run given no paths asks the prompts only: ``pytest --defan-model=my-rag`` in a
    project does not also run the test suite its ``testpaths`` name (pytest filled the paths in
    from there).  Paths named on the command line (``pytest --defan-model=my-rag tests``) are
    collected as usual, and so is the folder pytest was started in when no ``testpaths`` is
    configured."""
    if _plugin(config) is None:
        return None
    if getattr(config, "args_source", None) is pytest.Config.ArgsSource.TESTPATHS:
        return True
    return None


def pytest_report_header(config: pytest.Config) -> Optional[List[str]]:
    """The model, the size of the run and which scorer runs (rules only, or which pipeline)."""
    plugin = _plugin(config)
    if plugin is None:
        return None
    from defan_pytest.scoring import ner

    run = plugin.run
    return [
        f"defan: model {run.model_name}, {len(run.rows):,} prompts",
        f"defan scorer: {ner.describe(run.settings.spacy_model)['text']}",
    ]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: List[pytest.Item]) -> None:
    """pytest-split: keep paraphrase groups whole.  Registered with this module (before
    pytest-split registers its own plugin in pytest_configure), this runs after -k, -m and
    --deselect and before pytest-split's own trylast split: it takes the DefAn items out and
    keeps this split's share of whole groups (every split computes the same partition), which
    the run's wrapper adds back after pytest-split has split the other tests."""
    plugin = _plugin(config)
    splits, group = getattr(config.option, "splits", None), getattr(config.option, "group", None)
    if plugin is None or not splits or not group:
        return
    ours = [it for it in items if isinstance(it, DefanItem)]
    keys = sorted({it.row.group_key for it in ours})
    keep = {k for i, k in enumerate(keys) if i % int(splits) == int(group) - 1}
    plugin.split_share = [it for it in ours if it.row.group_key in keep]
    items[:] = [it for it in items if not isinstance(it, DefanItem)]
    dropped = [it for it in ours if it.row.group_key not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)


# --------------------------------------------------------------------------------------------
# items
# --------------------------------------------------------------------------------------------


class DefanFailure(AssertionError):
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
        from defan_pytest.calls.protocol import FatalCallError

        try:
            rec = run.verdict(self.row, self.index)
        except FatalCallError as exc:
            run.fatal = str(exc)
            pytest.skip(f"not asked: the run stopped ({exc})")
        self.record = rec
        # Replaced, not appended: a rerun (pytest-rerunfailures) must not leave a stale record.
        self.user_properties[:] = [p for p in self.user_properties if p[0] not in (PROPERTY, VERDICT_PROPERTY)]
        self.user_properties.append((PROPERTY, rec))
        # The verdict in words, as a JUnit property CI test viewers list with the test case.
        self.user_properties.append((VERDICT_PROPERTY, _verdict_text(rec)))
        if plugin.details:
            text = _describe_record(rec)
            self.add_report_section("call", "defan", text)  # pytest-html shows report sections
            if plugin.allure:
                _allure_verdict(rec, text)
        if run.settings.strict and (rec["error"] is not None or not (rec["correct"] and rec["aligned"])):
            raise DefanFailure(rec)

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        if isinstance(excinfo.value, DefanFailure):
            return _describe_record(excinfo.value.args[0])
        from defan_pytest.calls.protocol import FatalCallError

        if isinstance(excinfo.value, FatalCallError):
            return f"the run stopped: {excinfo.value}"
        return super().repr_failure(excinfo)

    def reportinfo(self) -> Tuple[Any, Optional[int], str]:
        # The question's row when the data file is in the repository (a user's own set); the
        # test's own id otherwise, never a file outside the repository (CI annotations, JUnit).
        source = _in_repository(self.row.source, str(self.config.rootpath))
        if source is None:
            return "defan", 0, f"defan {self.row.id}"
        return source, max(0, self.row.line - 1), f"defan {self.row.id}"


class GateFailure(AssertionError):
    """The gate failed (or could not judge) one scope."""


class DefanGateItem(pytest.Item):
    """The gate's verdicts on one scope (a domain, or ``overall``): a test of its own, run on
    the controller through pytest's standard protocol once every prompt has reported, so that
    every plugin (JUnit, html, allure, rerunfailures, ...) sees it like any other test."""

    def __init__(
        self, *, scope: str, verdicts: List[Any], source: Optional[str], line: int, **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.scope = scope
        self.verdicts = verdicts
        self.source = source
        self.line = line
        self.user_properties.append(("defan_gate", [v.message for v in verdicts]))

    def runtest(self) -> None:
        from defan_pytest.gates import level as gate

        _allure_parameter("scope", self.scope)
        bad = [v for v in self.verdicts if v.status in (gate.FAIL, gate.INSUFFICIENT)]
        if bad:
            raise GateFailure("\n".join(v.message for v in bad))
        text = "\n".join(v.message for v in self.verdicts if v.status == gate.PASS)
        self.add_report_section("call", "defan gate", text)

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        if isinstance(excinfo.value, GateFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> Tuple[Any, Optional[int], str]:
        return self.source or "thresholds.toml", self.line, f"gate[{self.scope}]"


class RegressionFailure(AssertionError):
    """The regression gate found a scope worse than its baseline."""


class DefanRegressionItem(pytest.Item):
    """The regression gate's verdict on one scope (a domain, or ``overall``): the change of each
    metric against the baseline, judged by a paired test over paraphrase groups.  Run on the
    controller through pytest's standard protocol, like :class:`DefanGateItem`."""

    def __init__(
        self, *, scope: str, changes: Mapping[str, Any], source: Optional[str], line: int, **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.scope = scope
        self.changes = changes
        self.source = source
        self.line = line
        self.user_properties.append(("defan_regression", [c.get("message") for c in changes.values()]))

    def runtest(self) -> None:
        _allure_parameter("scope", self.scope)
        bad = [c for c in self.changes.values() if c.get("regressed")]
        if bad:
            raise RegressionFailure("\n".join(str(c.get("message")) for c in bad))
        self.add_report_section("call", "defan regression", "\n".join(str(c.get("message")) for c in self.changes.values()))

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        if isinstance(excinfo.value, RegressionFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> Tuple[Any, Optional[int], str]:
        return self.source or "thresholds.toml", self.line, f"regression[{self.scope}]"


@functools.lru_cache(maxsize=64)
def _in_repository(source: str, root: str) -> Optional[Path]:
    """``source`` as a path when it lies inside ``root`` (once per data file, not per item)."""
    try:
        Path(source).resolve().relative_to(Path(root).resolve())
    except (ValueError, OSError):
        return None
    return Path(source)


def _verdict_word(rec: Mapping[str, Any]) -> str:
    if rec.get("error"):
        return "call error"
    if not rec.get("correct"):
        return "hallucinated" if rec.get("aligned") else "hallucinated, misaligned"
    return "ok" if rec.get("aligned") else "misaligned"


def _category(rec: Mapping[str, Any]) -> Optional[str]:
    """A prompt's category in pytest's summary line, so that its counts agree with the figures:
    ``misaligned`` is every prompt PMH counts (wrong or right), ``hallucinated`` every other
    prompt FCH counts; FCH's count is the hallucinated plus the misaligned that are wrong."""
    if rec.get("error"):
        return "call-error"
    if not rec.get("aligned"):
        return "misaligned"
    if not rec.get("correct"):
        return "hallucinated"
    return None


def _domain_line(domain: str, counts: Mapping[str, int], total: int) -> str:
    done = counts["done"]
    return (
        f"defan {domain}: {done:,}/{total:,} prompts ({100 * done // max(1, total)}%): "
        f"{counts['hallucinated']:,} hallucinated, {counts['misaligned']:,} misaligned, "
        f"{counts['errors']:,} call errors"
    )


def _verdict_text(rec: Mapping[str, Any]) -> str:
    """One line: the verdict, and the claim and gold (or the call's error)."""
    from defan_pytest.safetext import printable

    if rec.get("error"):
        return printable(f"call error: {_short(rec['error'], 300)}")
    return printable(
        f"{_verdict_word(rec)}: claim {_short(rec.get('claim'), 80)!r}, gold {_short(rec.get('answer'), 80)!r}"
    )


def _short(text: Any, limit: int) -> str:
    s = " ".join(str(text or "").split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _allure_parameter(name: str, value: str) -> None:
    """Give a test an Allure parameter (so two gate scopes are two tests there), if Allure runs."""
    try:
        import allure_commons
    except ImportError:
        return
    allure_commons.plugin_manager.hook.add_parameter(name=name, value=value, excluded=None, mode=None)


def _allure_verdict(rec: Mapping[str, Any], text: str) -> None:
    """Attach a prompt's verdict, claim and gold to its Allure result, and tag it."""
    try:
        import allure_commons
        from allure_commons.types import AttachmentType
    except ImportError:
        return
    hook = allure_commons.plugin_manager.hook
    hook.attach_data(body=text, name="defan verdict", attachment_type=AttachmentType.TEXT, extension=None)
    hook.add_label(label_type="tag", labels=[_verdict_word(rec)])


def _describe_record(rec: Dict[str, Any]) -> str:
    from defan_pytest.safetext import printable

    if rec.get("error"):
        return printable("\n".join([
            f"{rec['id']}: call error: {rec['error']}",
            f"  question: {rec['question']}",
            f"  gold:     {str(rec['answer']).strip()!r}",
            f"  attempts: {rec.get('attempts', 1)}",
        ]))
    verdict = []
    if not rec["correct"]:
        verdict.append("hallucinated (FCH)")
    if not rec["aligned"]:
        verdict.append("misaligned (PMH)")
    response = rec["response"] or ""
    if len(response) > 600:
        response = response[:600] + " ..."
    # Text from the data file and the model reaches the terminal: escape codes in it are shown
    # escaped, never acted on (printable keeps newlines and tabs).
    return printable("\n".join([
        f"{rec['id']}: {' and '.join(verdict) or 'ok'}",
        f"  question: {rec['question']}",
        f"  gold:     {rec['answer'].strip()!r}",
        f"  response: {response!r}",
        f"  claim:    {rec['claim']!r}",
        f"  aligned:  {rec['aligned']}   correct: {rec['correct']}",
    ]))


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
        self.started = time.time()
        self.reruns_active = config.pluginmanager.hasplugin("rerunfailures") and _reruns_asked(config)
        self.split_share: Optional[List[pytest.Item]] = None  # pytest-split: this split's groups
        self.allure = config.pluginmanager.hasplugin("allure_pytest") and bool(config.getoption("allure_report_dir", None))
        html = config.pluginmanager.hasplugin("html") and bool(config.getoption("htmlpath", None))
        # Each prompt's verdict in words, where a report shows it (costs a little per item).
        self.details = bool(self.allure or html)
        self._restore: List[Any] = []
        self.session: Optional[pytest.Session] = None
        # The gate's and the regression gate's tests, counted into the session's total once the
        # run starts, so that progress percentages climb to 100% through them.
        self.planned: Optional[List[Tuple[str, str]]] = None
        verbosity = config.get_verbosity() if hasattr(config, "get_verbosity") else config.option.verbose
        # A big run reports a line per domain now and then instead of a wall of letters.
        self.lines_mode = verbosity <= 0 and len(run.rows) > LINES_ABOVE
        self.domain_totals: Dict[str, int] = {}
        for row in run.rows:
            self.domain_totals[row.domain] = self.domain_totals.get(row.domain, 0) + 1
        self.domain_counts: Dict[str, Dict[str, int]] = {}
        self.domain_marks: Dict[str, int] = {}
        if config.pluginmanager.hasplugin("sugar"):
            self._teach_sugar()

    def _teach_sugar(self) -> None:
        """pytest-sugar's reporter asks its own status function, not the hook, so hallucinated
        and misaligned prompts would print as plain passes: its function is wrapped (and put
        back at the end) to answer for DefAn reports."""
        try:
            import pytest_sugar
        except ImportError:
            return
        original = pytest_sugar.pytest_report_teststatus

        def teststatus(report: Any) -> Any:
            ours = _defan_status(report)
            if ours is None or not pytest_sugar.IS_SUGAR_ENABLED:
                return original(report)
            category, letter, (word, _markup) = ours
            colour = pytest_sugar.THEME.fail if category == "hallucinated" else pytest_sugar.THEME.skipped
            return category, pytest_sugar.colored(letter, colour), word.split(" ")[0]

        pytest_sugar.pytest_report_teststatus = teststatus
        self._restore.append(lambda: setattr(pytest_sugar, "pytest_report_teststatus", original))

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        for restore in self._restore:
            restore()

    # -- collection ------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, items: List[pytest.Item]) -> Iterator[None]:
        """Add one item per selected prompt before -k, -m, --deselect and --lf filter the list;
        after pytest-split has split the other tests, add this split's share of whole groups."""
        self._add_items(session, items)
        result = yield
        if self.split_share is not None:
            items.extend(self.split_share)
        return result

    def _add_items(self, session: pytest.Session, items: List[pytest.Item]) -> None:
        parent = DefanCollector.from_parent(session, name="defan", nodeid="defan")
        made: List[pytest.Item] = []
        for i, row in enumerate(self.run.rows):
            item = DefanItem.from_parent(parent, name=row.id, row=row, index=i)
            item.add_marker("defan")
            item.add_marker(f"defan_{row.domain}")
            self._no_reruns(item)
            made.append(item)
        items.extend(made)
        # Report the items as collected, so the terminal's counts and progress include them.
        result: List[Union[pytest.Item, pytest.Collector]] = list(made)
        self.config.hook.pytest_collectreport(report=pytest.CollectReport(parent.nodeid, "passed", None, result))

    def _no_reruns(self, item: pytest.Item) -> None:
        """A verdict is a function of an answer already asked and kept: running the item again
        (pytest-rerunfailures) cannot change it, so reruns are switched off for DefAn items.
        ``condition=False`` holds in every rerun mode, --force-reruns included."""
        if self.reruns_active:
            item.add_marker(_NO_RERUNS)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist (controller): every worker of the run shares the run id (claims in the cache)."""
        node.workerinput["defan_run_id"] = self.run.run_id

    # -- calls (before the items report) -------------------------------------------------------

    def start_pool(self, selected: List["DefanItem"]) -> None:
        """Start asking every selected prompt."""
        self.run.start_pool([it.row for it in selected], self.worker)

    def _printer(self, source: Any) -> Any:
        from defan_pytest.report.progress import ProgressPrinter

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
        if not self.worker.is_worker:
            self._write_estimate([it.row for it in selected])  # before the first call
        self.start_pool(selected)
        printer = None if self.worker.is_worker else self._printer(run.pool.stats.snapshot)
        began = time.monotonic()
        try:
            fatal = run.wait(deadline=self._session_deadline())
        finally:
            if printer is not None:
                printer.stop()
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

    def _write_estimate(self, rows: List[Any]) -> None:
        """The estimate of what the run will send and cost, before the first call."""
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None and rows:
            from defan_pytest.safetext import printable

            tr.ensure_newline()
            tr.write_line(printable(self.run.estimate_line(rows)))

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
                self._write_estimate(self.run.rows)  # the workers' selection is theirs: at most this
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

    # -- other plugins' reports -----------------------------------------------------------------

    @pytest.hookimpl(optionalhook=True)
    def pytest_json_runtest_metadata(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Optional[Dict[str, Any]]:
        """pytest-json-report: each prompt's record (and each gate's verdicts) in its test."""
        if call.when != "call":
            return None
        if isinstance(item, DefanItem) and item.record is not None:
            return {"defan": item.record}
        if isinstance(item, DefanGateItem):
            return {"defan_gate": [v.message for v in item.verdicts]}
        return None

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_header(self, cells: List[str]) -> None:
        """pytest-html: a column with each prompt's verdict."""
        cells.insert(2, '<th class="sortable" data-column-type="defan">DefAn</th>')

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_row(self, report: pytest.TestReport, cells: List[str]) -> None:
        import html

        rec = _record_of(report)
        if rec is not None:
            word = _verdict_word(rec)
            detail = "" if rec.get("error") else f": claim {rec.get('claim')!r}, gold {str(rec.get('answer', '')).strip()!r}"
            text = word + detail
        elif report.nodeid.startswith("defan::gate["):
            text = "gate: " + report.outcome
        else:
            text = ""
        cells.insert(2, f'<td class="col-defan">{html.escape(text)}</td>')

    # -- results (controller only) -----------------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    def _plan(self) -> List[Tuple[str, str]]:
        """The verdict tests the run will end with: ``("gate", scope)`` for every scope the
        thresholds set a limit for, ``("regression", scope)`` for every scope with a baseline."""
        if self.planned is None:
            run = self.run
            domains = list(dict.fromkeys(r.domain for r in run.rows))
            scopes = [*domains, "overall"]
            planned: List[Tuple[str, str]] = []
            t = run.thresholds
            if t is not None:
                for scope in scopes:
                    limits = t.for_overall() if scope == "overall" else t.for_domain(scope)
                    if not limits.is_empty:
                        planned.append(("gate", scope))
            if run.baseline is not None:
                planned.extend(("regression", scope) for scope in scopes)
            self.planned = planned
        return self.planned

    def _count_verdict_tests(self) -> None:
        """Count the verdict tests into the session's total (once): pytest and xdist set the
        total when collection ends, and a total that grew afterwards would make the progress
        percentage fall back when the gate's tests run."""
        if getattr(self, "_counted", False) or self.session is None or self.worker.is_worker:
            return
        self._counted = True
        extra = len(self._plan())
        self.session.testscollected += extra
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None and hasattr(tr, "tests_count"):  # pytest-sugar's progress bar
            tr.tests_count += extra

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
        rec = _record_of(report)
        if rec is not None:
            self.run.records.append(rec)
            if self.lines_mode:
                self._domain_progress(rec)

    def _domain_progress(self, rec: Mapping[str, Any]) -> None:
        """A big run: one line per domain at every quarter of its prompts."""
        domain = str(rec.get("domain"))
        counts = self.domain_counts.setdefault(domain, {"done": 0, "hallucinated": 0, "misaligned": 0, "errors": 0})
        counts["done"] += 1
        category = _category(rec)
        if category == "call-error":
            counts["errors"] += 1
        elif category in ("hallucinated", "misaligned"):
            counts[category] += 1
        total = self.domain_totals.get(domain, 0) or counts["done"]
        quarter = min(4, 4 * counts["done"] // total)
        if quarter > self.domain_marks.get(domain, 0):
            self.domain_marks[domain] = quarter
            tr = self.config.pluginmanager.get_plugin("terminalreporter")
            if tr is not None:
                tr.ensure_newline()
                tr.write_line(_domain_line(domain, counts, total))

    def _finish(self, session: pytest.Session) -> None:
        from defan_pytest.gates import level as gate

        run = self.run
        config = session.config
        self._count_verdict_tests()
        if run.fatal is None and len(run.records) < len(run.rows) and not run.settings.gate_narrowed:
            # -k, -m, --deselect, --lf, a path or pytest-split ran part of the selection: the
            # figures describe that part only, which the limits were not set for.
            run.narrowed = True
            run.gate_skipped = (
                f"the gate judges whole runs: {len(run.records)} of the {len(run.rows)} selected prompts ran "
                "(narrowed by -k, -m, --deselect, --lf, a path or pytest-split); --defan-gate-narrowed judges anyway"
            )
        elif len(run.records) < len(run.rows):
            run.narrowed = True
        run.finish()
        if run.fatal is None and run.records:
            run.compare()
        # The gate's verdicts are tests of their own, run here on the controller through the
        # standard protocol: in the terminal, in --junitxml, in every reporting plugin and in the
        # exit code, like any test.
        by_scope: Dict[str, List[Any]] = {}
        for v in run.verdicts:
            by_scope.setdefault(v.scope, []).append(v)
        skip = run.gate_skipped
        if run.fatal is not None:
            skip = f"not judged: the run stopped ({run.fatal})"
        parent = DefanCollector.from_parent(session, name="defan", nodeid="defan")
        items: List[pytest.Item] = []
        for kind, scope in self._plan():
            item: pytest.Item
            if kind == "gate":
                verdicts = by_scope.get(scope, [])
                item = DefanGateItem.from_parent(
                    parent, name=f"gate[{scope}]", scope=scope, verdicts=verdicts,
                    source=run.thresholds_source, line=run.thresholds_line(scope, verdicts),
                )
                item.add_marker("defan_gate")
                reason = skip
                if reason is None and scope != "overall" and scope not in (run.summary or {}).get("domains", {}):
                    reason = "no prompt of this domain ran"
            else:
                changes = ((run.comparison or {}).get("scopes") or {}).get(scope, {})
                item = DefanRegressionItem.from_parent(
                    parent, name=f"regression[{scope}]", scope=scope, changes=changes,
                    source=run.thresholds_source, line=run.regression_line(scope, changes),
                )
                item.add_marker("defan_regression")
                reason = skip or (run.comparison or {}).get("reason")
                if reason is None and not changes:
                    reason = "no prompt of this scope in both runs"
            item.add_marker("defan")
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=reason))  # reported at the gate's own location
            self._no_reruns(item)
            items.append(item)
        for i, item in enumerate(items):
            config.hook.pytest_runtest_protocol(item=item, nextitem=items[i + 1] if i + 1 < len(items) else None)
        config.hook.pytest_defan_summary(config=config, summary=run.summary, verdicts=run.verdicts)
        run.write_report()
        self._github()

    def _github(self) -> None:
        """GitHub Actions: the Markdown step summary, and an annotation per breach and regression
        (unless pytest-github-actions-annotate-failures already annotates the failed tests)."""
        from defan_pytest.report import github

        run = self.run
        if run.summary is None or not (os.environ.get("GITHUB_STEP_SUMMARY") or os.environ.get("GITHUB_ACTIONS") == "true"):
            return
        report = run.report()
        github.append_step_summary(github.step_summary(report))
        if os.environ.get("GITHUB_ACTIONS") == "true" and not self.config.pluginmanager.hasplugin(
            "pytest_github_actions_annotate_failures"
        ):
            self.annotations = github.error_annotations(report, run.annotation_lines())

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        run = self.run
        if self.worker.is_worker or run.summary is None:
            return
        from defan_pytest.gates.table import format_gate_table
        from defan_pytest.report import tables as reports
        from defan_pytest.safetext import printable

        tr = terminalreporter
        tr.write_sep("=", f"DefAn: {printable(run.model_name)}")
        if run.fatal:
            tr.write_line(f"the run stopped: {printable(run.fatal)}", red=True)
        width = int(getattr(getattr(tr, "_tw", None), "fullwidth", 80) or 80)
        if run.thresholds is not None and not run.thresholds.is_empty:
            tr.write_line(format_gate_table(run.summary, run.thresholds, run.verdicts, width=width))
        else:
            tr.write_line(reports.format_table(run.summary))
            tr.write_line("no thresholds file: nothing was gated (see --defan-thresholds)")
        if run.gate_skipped:
            tr.write_line(f"gates skipped: {run.gate_skipped}", yellow=True)
        if run.records:
            self._write_counts(tr)
            for line in run.usage_lines():  # tokens, latency, cost and the budget
                tr.write_line(printable(line), yellow=line.startswith("budget") and "reached" in line)
        if run.comparison is not None:
            self._write_regression(tr)
        if run.report_path is not None:
            tr.write_line(f"report: {printable(str(run.report_path))}")
        if run.html_path is not None:
            tr.write_line(f"html report: {printable(str(run.html_path))}")
        if run.report_error is not None:
            tr.write_line(f"defan-pytest: the report was not written: {printable(run.report_error)}", red=True)
        for note in run.notes[:10]:  # the data's text replaced where it entered (invalid characters)
            tr.write_line(f"note: {printable(note)}", yellow=True)
        if len(run.notes) > 10:
            tr.write_line(f"note: ... and {len(run.notes) - 10} more", yellow=True)
        for line in getattr(self, "annotations", ()):
            tr.write_line(line)

    def _write_counts(self, tr: Any) -> None:
        """Where the answers came from, the verdict counts as FCH and PMH count them, and the
        call errors grouped by kind."""
        from defan_pytest.run import error_kind
        from defan_pytest.safetext import printable

        run = self.run
        c = run.call_counts()
        # Which version (and source) the cached answers belong to: an edited callable must
        # not pass for the one whose answers were reused.
        origin = f" ({c['cached_from']})" if c["cached"] and c.get("cached_from") else ""
        peer = f"; {c['peer']} of them through another worker" if c.get("peer") else ""
        tr.write_line(
            f"{c['prompts']} prompts: {c['answered']} answered by the model, {c['cached']} from the cache{origin}, "
            f"{c['retries']} retries, {c['errors']} call errors{peer}"
        )
        scored = [r for r in run.records if not r.get("error")]
        wrong = sum(1 for r in scored if not r.get("correct"))
        misaligned = sum(1 for r in scored if not r.get("aligned"))
        both = sum(1 for r in scored if not r.get("correct") and not r.get("aligned"))
        tr.write_line(
            f"{len(scored)} scored: {wrong} hallucinated (FCH) of which {both} also misaligned; "
            f"{misaligned} misaligned (PMH)"
        )
        kinds: Dict[str, int] = {}
        example: Dict[str, str] = {}
        for r in run.records:
            kind = error_kind(r.get("error"))
            if kind:
                kinds[kind] = kinds.get(kind, 0) + 1
                example.setdefault(kind, str(r["error"]))
        for kind, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))[:10]:
            text = example[kind]
            message = text.split(":", 1)[1].strip() if ":" in text else ""
            tr.write_line(printable(f"  {n} x {kind}: {_short(message, 100)}" if message else f"  {n} x {kind}"), yellow=True)

    def _write_regression(self, tr: Any) -> None:
        """The regression gate: each scope's changes, and the prompts that went from right to
        hallucinated with both answers."""
        from defan_pytest.safetext import printable

        comp = self.run.comparison or {}
        base = comp.get("baseline") or {}
        tr.write_sep("-", "DefAn: compared with the baseline")
        if comp.get("status") == "skipped":
            tr.write_line(f"regression gate skipped: {printable(str(comp.get('reason')))}", yellow=True)
            return
        pairs = comp.get("pairs") or {}
        tr.write_line(printable(
            f"baseline {base.get('path')} ({base.get('model')}, {base.get('created')}): "
            f"{pairs.get('paired', 0)} prompts in common in {pairs.get('groups', 0)} groups"
        ))
        for scope, mets in (comp.get("scopes") or {}).items():
            for _metric, change in mets.items():
                red = bool(change.get("regressed"))
                tr.write_line(printable(("REGRESSED " if red else "  ") + str(change.get("message"))), red=red)
        flipped = [f for f in comp.get("flipped") or () if f.get("direction") == "worse"]
        if flipped:
            shown = flipped[:20]
            tr.write_line(f"right before, hallucinated now: {len(flipped)} prompts (first {len(shown)}; all in the report)")
            for f in shown:
                tr.write_line(printable(
                    f"  {f.get('id')}: gold {_short(f.get('answer'), 30)!r}; before {_short(f.get('old_response'), 40)!r}"
                    f" -> now {_short(f.get('new_response'), 40)!r}"
                ))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.run.report_error is not None and session.exitstatus == pytest.ExitCode.OK:
            # The report asked for is missing: the run did not do what it was told to.
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        self.run.close(self.worker)


@pytest.hookimpl(tryfirst=True)  # first: another plugin (pytest-sugar) answers every report
def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Optional[Tuple[str, str, Any]]:
    """Hallucinated and misaligned prompts and call errors have their own letters and counts;
    they do not fail the run unless --defan-strict (the gate decides).  With -v each prompt's
    line says its verdict, claim, gold, question and answer; a big run prints no letters (a
    line per domain instead)."""
    plugin = _plugin(config)
    verbose = config.get_verbosity() > 0
    status = _defan_status(report, verbose=verbose)
    if plugin is None or not plugin.lines_mode or getattr(report, "when", None) != "call":
        return status
    if status is None:
        if not report.passed or _record_of(report) is None:
            return None
        status = ("passed", ".", "PASSED")
    category, _letter, word = status
    # No letter (a word, so pytest still counts the item's progress): the domain lines instead.
    return category, "", word


def _defan_status(report: Any, verbose: bool = False) -> Optional[Tuple[str, str, Any]]:
    if getattr(report, "when", None) != "call" or not report.passed:
        return None
    rec = _record_of(report)
    if rec is None:
        return None
    from defan_pytest.safetext import printable

    category = _category(rec)
    if category == "call-error":
        return "call-error", "C", (printable("CALL-ERROR " + _short(rec["error"], 160)), {"yellow": True})
    detail = printable(f" (claim {rec['claim']!r}, gold {rec['answer'].strip()!r})")
    if verbose:
        detail = printable(
            f" claim {_short(rec['claim'], 40)!r}, gold {_short(rec['answer'], 40)!r}; "
            f"Q: {_short(rec.get('question'), 70)} A: {_short(rec.get('response'), 60)!r}"
        )
    if category == "hallucinated":
        return "hallucinated", "H", ("HALLUCINATED" + detail, {"red": True})
    if category == "misaligned":
        word = "MISALIGNED" + ("+WRONG" if not rec.get("correct") else "")
        return "misaligned", "M", (word + detail, {"yellow": True})
    if verbose:
        return "passed", ".", ("PASSED" + detail, {"green": True})
    return None


#: Questions the summary names, at most (the most hallucinated first).
HALLUCINATED_SHOWN = 10


@pytest.hookimpl(trylast=True)  # after the DefAn table
def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """The hallucinated questions, a line per paraphrase group: how many of its prompts were
    hallucinated, its question, the most frequent claim and the gold (-v shows every prompt)."""
    plugin = _plugin(config)
    if plugin is None or plugin.worker.is_worker or config.get_verbosity() > 0 or not plugin.run.records:
        return
    from collections import Counter

    from defan_pytest.safetext import printable

    groups: Dict[str, List[Mapping[str, Any]]] = {}
    for rec in plugin.run.records:
        if rec.get("error") is None:
            groups.setdefault(str(rec.get("group")), []).append(rec)
    bad = [(sum(1 for r in g if not r.get("correct")), key, g) for key, g in groups.items()]
    bad = sorted((b for b in bad if b[0]), key=lambda b: (-b[0], b[1]))
    if not bad:
        return
    tr = terminalreporter
    tr.write_line(f"hallucinated: {len(bad)} of {len(groups)} questions (most hallucinated first; -v shows every prompt)")
    for count, key, g in bad[:HALLUCINATED_SHOWN]:
        claim = Counter(repr(r.get("claim")) for r in g if not r.get("correct")).most_common(1)[0][0]
        tr.write_line(printable(
            f"  {key}  {count}/{len(g)}  {_short(g[0].get('question'), 72)}  claim {_short(claim, 40)}, "
            f"gold {_short(str(g[0].get('answer', '')).strip(), 40)!r}"
        ))
    if len(bad) > HALLUCINATED_SHOWN:
        tr.write_line(f"  ... and {len(bad) - HALLUCINATED_SHOWN} more")


@pytest.fixture(scope="session")
def defan_scorer() -> Any:
    """A :class:`defan_pytest.scoring.scorer.Scorer` (rules plus the installed spaCy pipeline, if any)
    for tests that score answers of their own."""
    from defan_pytest.scoring.scorer import Scorer

    return Scorer(nlp="auto")
