"""The verdict tests of a run (a mixin of :class:`~defan_pytest.plugin.session.DefanPlugin`):
the gate's ``gate[<scope>]``, the regression gate's ``regression[<scope>]`` and, in a session
of several models, ``compared[<scope>]`` against the model ``--defan-compare-to`` names; planned
when the run starts (counted into the session's total) and made once every prompt reported,
those that cannot judge marked skipped with the reason."""
from __future__ import annotations

from typing import Callable, TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple

import pytest

from defan_pytest.gates import regression
from defan_pytest.gates.level import Verdict
from defan_pytest.plugin.items import ComparedItem, DefanCollector, DefanItem, GateItem, RegressionItem

if TYPE_CHECKING:
    from defan_pytest.plugin.terminal import Terminal
    from defan_pytest.run import Run, Worker

__all__ = ["VerdictTests"]


class VerdictTests:
    """The verdict tests' planning and making, on the plugin's :attr:`run`."""

    run: "Run"
    worker: "Worker"
    terminal: "Terminal"
    session: Optional[pytest.Session]
    planned: Optional[List[Tuple[str, str]]]
    counted: bool
    versus: Any

    #: The plugin's own (``DefanPlugin.collector``, ``DefanPlugin._mark``): where the verdict
    #: tests hang, and the marks every item of the run gets.
    collector: Callable[[pytest.Session], DefanCollector]
    _mark: Callable[[pytest.Item], None]

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
            if self.versus is not None:
                planned.extend(("compared", scope) for scope in scopes)
            self.planned = planned
        return self.planned

    def _count_verdict_tests(self) -> None:
        """Count the verdict tests into the session's total (once): pytest and xdist set the
        total when collection ends, and a total that grew afterwards would make the progress
        percentage fall back when the gate's tests run."""
        if self.counted or self.session is None or self.worker.is_worker:
            return
        self.counted = True
        extra = len(self._plan())
        self.session.testscollected += extra
        tr = self.terminal.reporter
        if tr is not None and hasattr(tr, "tests_count"):  # pytest-sugar's progress bar
            tr.tests_count += extra

    def _verdict_items(self, session: pytest.Session) -> List[DefanItem]:
        """The gate's and the regression gate's tests, in the planned order; those that cannot
        judge are marked skipped, with the reason (reported at the gate's own location)."""
        run = self.run
        by_scope: Dict[str, List[Verdict]] = {}
        for v in run.verdicts:
            by_scope.setdefault(v.scope, []).append(v)
        skip = run.gate_skipped
        if run.fatal is not None:
            skip = f"not judged: the run stopped ({run.fatal})"
        parent = self.collector(session)
        items: List[DefanItem] = []
        for kind, scope in self._plan():
            item: DefanItem
            if kind == "gate":
                verdicts = by_scope.get(scope, [])
                item = GateItem.from_parent(
                    parent, name=f"gate[{scope}]", scope=scope, verdicts=verdicts,
                    source=run.thresholds_source, line=run.thresholds_line(scope, verdicts),
                )
                item.add_marker("defan_gate")
                reason = skip
                if reason is None and scope != "overall" and scope not in (run.summary or {}).get("domains", {}):
                    reason = "no prompt of this domain ran"
            else:
                comparison = run.comparison if kind == "regression" else run.versus
                changes: Mapping[str, Any] = ((comparison or {}).get("scopes") or {}).get(scope, {})
                item = (RegressionItem if kind == "regression" else ComparedItem).from_parent(
                    parent, name=f"{kind}[{scope}]", scope=scope, changes=changes,
                    source=run.thresholds_source, line=run.regression_line(scope, changes),
                )
                item.add_marker(f"defan_{kind}")
                reason = skip or (comparison or {}).get("reason")
                if reason is None and kind == "compared" and self.versus is not None:
                    other = self.versus.run
                    if other.fatal is not None:
                        reason = f"not judged: the run of {self.versus.lane} stopped ({other.fatal})"
                    elif other.gate_skipped is not None:
                        reason = f"not judged: the run of {self.versus.lane} it is compared with was narrowed ({other.gate_skipped})"
                shared = ((comparison or {}).get("shared") or {}).get(scope)
                if reason is None and not changes:
                    reason = "no prompt of this scope in both runs"
                elif reason is None and shared is not None and not shared.get("judged"):
                    reason = regression.not_judged_reason(scope, shared)
            item.add_marker("defan")
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=reason))
            self._mark(item)
            items.append(item)
        return items
