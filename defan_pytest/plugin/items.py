"""The tests a DefAn run adds to the session: one per selected prompt, and the verdicts of the
gate and the regression gate on each scope, all children of one collector (node id ``defan``).

The gate's and the regression gate's verdicts are tests of their own, run on the controller
through pytest's standard protocol once every prompt has reported, so that every plugin (JUnit,
html, allure, rerunfailures, ...) sees them like any other test.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Protocol, Tuple, Type, Union

import pytest

from defan_pytest.calls.protocol import FatalCallError
from defan_pytest.gates.level import FAIL, INSUFFICIENT, PASS, UNDECIDED, Verdict
from defan_pytest.plugin.wording import describe, verdict_line
from defan_pytest.records import ScoredRecord
from defan_pytest.run import Run
from defan_pytest.run.sequential import not_asked_reason
from defan_pytest.safetext import printable
from defan_pytest.verdicts import RIGHT, outcome_of

__all__ = [
    "ComparedFailure", "ComparedItem", "NOT_ASKED_PROPERTY", "not_asked_of", "OUTCOME_PROPERTY", "PROPERTY", "REPEATS_PROPERTY", "VERDICT_PROPERTY", "PromptSource", "DefanCollector", "DefanFailure", "DefanItem", "GateFailure", "GateItem",
    "PromptItem", "RegressionFailure", "RegressionItem", "in_repository", "record_of", "repeats_of",
]

#: The user property that carries a prompt's record to the controller (and to every report).
PROPERTY = "defan"
#: The user property with the verdict in words, which CI test viewers list with the test case.
VERDICT_PROPERTY = "defan_verdict"
#: The user property with the outcome's word alone (``right``, ``no claim``, ...), to filter by.
OUTCOME_PROPERTY = "defan_outcome"
#: The user property with the notes an xdist worker's calls gave rise to since its last report
#: (a Retry-After capped, say): the controller says each once.
NOTES_PROPERTY = "defan_notes"
#: The user property with a repeated prompt's extra asks (``--defan-repeat``), scored, as plain
#: JSON: the controller measures the model's agreement with itself from them.
REPEATS_PROPERTY = "defan_repeats"
#: The property of a prompt ``--defan-sequential`` did not ask: where the run stopped.
NOT_ASKED_PROPERTY = "defan_not_asked"


def notes_of(report: Any) -> List[str]:
    """The notes a prompt's test report carries from an xdist worker."""
    for name, value in getattr(report, "user_properties", ()) or ():
        if name == NOTES_PROPERTY and isinstance(value, list):
            return [str(v) for v in value]
    return []


def repeats_of(report: Any) -> Optional[List[Dict[str, Any]]]:
    """The extra asks a repeated prompt's test report carries (``--defan-repeat``), if any."""
    for name, value in getattr(report, "user_properties", ()) or ():
        if name == REPEATS_PROPERTY and isinstance(value, list):
            return [v for v in value if isinstance(v, dict)]
    return None


def not_asked_of(report: Any) -> Optional[Dict[str, Any]]:
    """Where a sequential run stopped, from the report of a prompt it did not ask."""
    for name, value in getattr(report, "user_properties", ()):
        if name == NOT_ASKED_PROPERTY and isinstance(value, dict):
            return value
    return None


def record_of(report: Any) -> Optional[Dict[str, Any]]:
    """The record a prompt's test report carries, if it is one."""
    for name, value in getattr(report, "user_properties", ()) or ():
        if name == PROPERTY and isinstance(value, dict):
            return value
    return None


@functools.lru_cache(maxsize=64)
def in_repository(source: str, root: str) -> Optional[Path]:
    """``source`` as a path when it lies inside ``root`` (once per data file, not per item)."""
    try:
        Path(source).resolve().relative_to(Path(root).resolve())
    except (ValueError, OSError):
        return None
    return Path(source)


class PromptSource(Protocol):
    """What a prompt's test needs of the run's plugin (:class:`~defan_pytest.plugin.session.DefanPlugin`)."""

    run: Run
    #: Whether a report shows each prompt's verdict in full (a report section a prompt).
    details: bool

    def start_pool(self, selected: List["PromptItem"]) -> None:
        """Start asking every selected prompt."""

    def fresh_notes(self) -> List[str]:
        """An xdist worker's notes not yet sent to the controller (none elsewhere)."""


class DefanCollector(pytest.Collector):
    """The parent of every DefAn item (node id ``defan``)."""

    def collect(self) -> List[Union[pytest.Item, pytest.Collector]]:  # pragma: no cover - the plugin makes the items
        return []


class DefanFailure(AssertionError):
    """A prompt that hallucinated or was misaligned, under --defan-strict."""


class GateFailure(AssertionError):
    """The gate failed (or could not judge) one scope."""


class RegressionFailure(AssertionError):
    """The regression gate found a scope worse than its baseline."""


class DefanItem(pytest.Item):
    """What every DefAn test shares: :meth:`judge` says whether it failed (the failure's text)
    and what its report shows; a failure is its text alone, never a traceback; its location is
    the file that set what it checks (``source``, ``line``), else ``unsourced``."""

    #: The exception a failure of this kind of test raises.
    failure: Type[AssertionError] = AssertionError
    #: The title of the report section with what a passing test checked.
    section = "defan"
    #: The location when no file of the repository set what the test checks.
    unsourced = "defan"

    def __init__(self, *, source: Union[str, Path, None], line: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.source = source
        self.line = line

    def judge(self) -> Tuple[Optional[str], str]:
        """``(failure, section)``: the failure's text (``None``: it passed), and the report
        section's text (``""``: none)."""
        raise NotImplementedError

    @property
    def label(self) -> str:
        """The test's name where its location is shown (with the model's, in a session of
        several models: ``worse::gate[nobel]``)."""
        return self.nodeid.split("::", 1)[1] if self.nodeid.count("::") > 1 else self.name

    def runtest(self) -> None:
        failure, section = self.judge()
        if section:
            self.add_report_section("call", self.section, printable(section))  # pytest-html shows report sections
        if failure is not None:
            raise self.failure(failure)

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        if isinstance(excinfo.value, self.failure):
            # A verdict names its scope (a domain of the data): no line of it may start a command.
            return printable(str(excinfo.value))
        if isinstance(excinfo.value, FatalCallError):
            return printable(f"the run stopped: {excinfo.value}")
        return super().repr_failure(excinfo)

    def reportinfo(self) -> Tuple[Any, Optional[int], str]:
        return self.source or self.unsourced, self.line, self.label


class PromptItem(DefanItem):
    """One DefAn prompt: asks the model (through the run's pool), scores the answer and puts
    the verdict on the report's ``user_properties``.  Its location is the question's row when
    the data file is in the repository (a user's own set); the test's own id otherwise, never a
    file outside the repository (CI annotations, JUnit)."""

    failure = DefanFailure

    def __init__(self, *, row: Any, index: int, plugin: PromptSource, **kwargs: Any) -> None:
        super().__init__(source=None, line=0, **kwargs)
        self.row = row
        self.index = index
        self.plugin = plugin
        self.record: Optional[ScoredRecord] = None
        self.source = in_repository(row.source, str(self.config.rootpath))
        self.line = max(0, row.line - 1) if self.source is not None else 0

    @property
    def label(self) -> str:
        return f"defan {self.nodeid.split('::', 1)[1]}" if self.nodeid.count("::") > 1 else f"defan {self.row.id}"

    def judge(self) -> Tuple[Optional[str], str]:
        plugin = self.plugin
        run = plugin.run
        if run.fatal is not None:
            # The run stopped on a failure every call would share (bad key, unknown model):
            # the remaining prompts are not asked, and not counted as failures either.
            pytest.skip(f"not asked: the run stopped ({run.fatal})")
        if run.pool is None:  # not prefetched (a plugin ran the item outside the loop): start now
            plugin.start_pool([it for it in self.session.items if isinstance(it, PromptItem)])
        if run.asking is not None and not run.asking.was_asked(self.row.id):
            # --defan-sequential stopped asking: the verdict was settled without this prompt.
            brief = run.asking.brief()
            self.user_properties[:] = [p for p in self.user_properties if p[0] != NOT_ASKED_PROPERTY]
            self.user_properties.append((NOT_ASKED_PROPERTY, brief))
            pytest.skip(not_asked_reason(brief))
        try:
            record = run.record(self.row, self.index)
            again = run.repeat_answers(self.row)
        except FatalCallError as exc:
            run.fatal = str(exc)
            pytest.skip(f"not asked: the run stopped ({exc})")
        self.record = record
        rec = record.to_json()  # what travels to the controller: plain JSON (xdist)
        # Replaced, not appended: a rerun (pytest-rerunfailures) must not leave a stale record.
        ours = (PROPERTY, VERDICT_PROPERTY, OUTCOME_PROPERTY, NOTES_PROPERTY, REPEATS_PROPERTY)
        self.user_properties[:] = [p for p in self.user_properties if p[0] not in ours]
        notes = plugin.fresh_notes()
        if notes:
            self.user_properties.append((NOTES_PROPERTY, notes))
        self.user_properties.append((PROPERTY, rec))
        self.user_properties.append((VERDICT_PROPERTY, verdict_line(rec)))
        self.user_properties.append((OUTCOME_PROPERTY, outcome_of(rec).word))
        if again:
            self.user_properties.append((REPEATS_PROPERTY, again))
        # The whole verdict (costs a little per item) only where a report shows it.
        section = describe(rec) if plugin.details else ""
        if run.settings.strict and outcome_of(rec) is not RIGHT:
            return section or describe(rec), section
        return None, section


class GateItem(DefanItem):
    """The gate's verdicts on one scope (a domain, or ``overall``); located at the scope's
    table in the thresholds file."""

    failure = GateFailure
    section = "defan gate"
    unsourced = "thresholds.toml"

    def __init__(self, *, scope: str, verdicts: List[Verdict], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scope = scope
        self.verdicts = verdicts
        self.user_properties.append(("defan_gate", [v.message for v in verdicts]))

    def judge(self) -> Tuple[Optional[str], str]:
        bad = [v.message for v in self.verdicts if v.status in (FAIL, INSUFFICIENT)]
        if bad:
            return "\n".join(bad), ""
        return None, "\n".join(v.message for v in self.verdicts if v.status in (PASS, UNDECIDED))


class RegressionItem(DefanItem):
    """The regression gate's verdict on one scope (a domain, or ``overall``): the change of each
    metric against the baseline, judged by a paired test over paraphrase groups."""

    failure = RegressionFailure
    section = "defan regression"
    unsourced = "thresholds.toml"

    def __init__(self, *, scope: str, changes: Mapping[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scope = scope
        self.changes = changes
        self.user_properties.append(("defan_regression", [c.get("message") for c in changes.values()]))

    def judge(self) -> Tuple[Optional[str], str]:
        bad = [str(c.get("message")) for c in self.changes.values() if c.get("regressed")]
        if bad:
            return "\n".join(bad), ""
        return None, "\n".join(str(c.get("message")) for c in self.changes.values())


class ComparedFailure(RegressionFailure):
    """A model is worse than the one it is compared with (``--defan-compare-to``)."""


class ComparedItem(RegressionItem):
    """A model against the one ``--defan-compare-to`` names, on one scope: the regression
    gate's paired test, with the other model's answers to the same prompts as the baseline."""

    failure = ComparedFailure
    section = "defan compared"
