"""The history of a branch's reports (``defan history``): FCH, PMH and RC per domain over time,
with the regressions between consecutive reports marked.

A :class:`History` is built report by report, in the reports' own time order
(:meth:`History.add`), so that a caller holds two reports at most (one of the full public split
is 70,793 rows).  Each report becomes one :class:`Point`: when it was made, its model and
version, its level gate's word, each scope's figures with their intervals, the figures beyond
their limits in that run's own gate, and the figures the regression gate
(:func:`defan_pytest.gates.regression.judge`, with the tolerances the caller gives) finds worse
than in the report before it: beyond the tolerance and significantly, by the paired test over
the paraphrase groups both reports hold.  Two consecutive reports that cannot be compared
(another data set or scorer, no prompt in common:
:func:`~defan_pytest.gates.comparability.comparability`) are said so and not judged.

Every text of a report is data: the terminal's lines pass :func:`~defan_pytest.safetext.inline`,
the Markdown :func:`~defan_pytest.safetext.markdown_cell`, and the page
(:mod:`defan_pytest.report.html.history`) puts it in with ``textContent``.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from defan_pytest.gates import regression
from defan_pytest.gates.comparability import comparability
from defan_pytest.gates.thresholds import Thresholds
from defan_pytest.metrics.registry import METRICS
from defan_pytest.records import Report
from defan_pytest.report.models import SHOWN, figures_of
from defan_pytest.safetext import inline, markdown_cell

__all__ = ["BEYOND_MARK", "History", "Point", "REGRESSED_MARK"]

#: How the Markdown marks a figure that regressed against the report before it, and one beyond
#: its limit in its own run.
REGRESSED_MARK, BEYOND_MARK = "🔺", "✗"


@dataclass(frozen=True)
class Point:
    """One report of the history (see the module docstring).  ``compared``: why it was not
    compared with the report before it (``None``: compared, or the first)."""

    path: str
    created: str
    model: Optional[str]
    version: Optional[str]
    gate_status: str
    prompts: int
    figures: Dict[str, Dict[str, Any]]
    beyond: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    regressed: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    changes: Tuple[str, ...] = ()
    compared: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        return {
            "path": self.path, "created": self.created, "model": self.model, "version": self.version,
            "gate": self.gate_status, "prompts": self.prompts, "figures": self.figures,
            "beyond": {s: list(m) for s, m in self.beyond.items()},
            "regressed": {s: list(m) for s, m in self.regressed.items()},
            "changes": list(self.changes), "compared": self.compared,
        }


def _figures(report: Report) -> Dict[str, Dict[str, Any]]:
    """Each scope's shown figures and intervals (``overall``: the figure its limits judge)."""
    out: Dict[str, Dict[str, Any]] = {}
    for scope in [*report.domains, "overall"]:
        figs = figures_of(report, scope)
        out[scope] = {k: figs.get(k) for m in SHOWN for k in (m, f"{m}_ci")}
    return out


def _beyond(report: Report) -> Dict[str, Tuple[str, ...]]:
    """The figures beyond their limits in the report's own level gate, by scope."""
    out: Dict[str, List[str]] = {}
    for v in report.gate:
        if v.get("status") == "fail" and v.get("metric") in METRICS:
            out.setdefault(str(v.get("scope")), []).append(str(v.get("metric")))
    return {scope: tuple(metrics) for scope, metrics in out.items()}


def _against(before: Report, before_path: str, report: Report,
             limits: Thresholds) -> Tuple[Dict[str, Tuple[str, ...]], Tuple[str, ...], Optional[str]]:
    """The figures of ``report`` that regressed against ``before`` (by scope), the regression
    gate's message of each, and why the two were not compared (``None``: they were)."""
    problems = comparability(before, report.meta.dataset, report.meta.scorer, report.rows, where="the report before")
    if problems:
        return {}, (), "; ".join(problems)
    comparison = regression.judge(before.to_json(), report.rows, limits, baseline_path=before_path)
    if comparison.get("status") == "skipped":
        return {}, (), str(comparison.get("reason"))
    regressed: Dict[str, Tuple[str, ...]] = {}
    changes: List[str] = []
    for scope, mets in (comparison.get("scopes") or {}).items():
        worse = tuple(m for m, c in mets.items() if c.get("regressed"))
        if worse:
            regressed[scope] = worse
            changes.extend(str(mets[m].get("message")) for m in worse)
    return regressed, tuple(changes), None


@dataclass
class History:
    """The points of a history, oldest first, and the files that were not read (``skipped``:
    ``(path, why)``, one message each)."""

    points: List[Point] = field(default_factory=list)
    skipped: List[Tuple[str, str]] = field(default_factory=list)

    def add(self, report: Report, path: str, before: Optional[Tuple[Report, str]] = None,
            limits: Optional[Thresholds] = None, not_compared: Optional[str] = None) -> Point:
        """Add ``report`` (read from ``path``, newer than every point so far), judged against
        ``before`` (the report before it and its path) with the tolerances of ``limits``;
        ``not_compared`` says why it is not compared (no limits could be read for it)."""
        regressed: Dict[str, Tuple[str, ...]] = {}
        changes: Tuple[str, ...] = ()
        compared = not_compared
        if before is not None and not_compared is None:
            regressed, changes, compared = _against(before[0], before[1], report, limits or Thresholds.empty())
        model = report.meta.model
        point = Point(
            path=path, created=report.meta.created, model=report.meta.model_name,
            version=model.version if model is not None else None, gate_status=report.gate_status,
            prompts=len(report.rows), figures=_figures(report), beyond=_beyond(report), regressed=regressed,
            changes=changes, compared=None if before is None and not_compared is None else compared,
        )
        self.points.append(point)
        return point

    @property
    def scopes(self) -> List[str]:
        """Every domain of any point, in the order they first appear, then ``overall``."""
        seen = {s: None for p in self.points for s in p.figures if s != "overall"}
        return [*seen, "overall"]

    @property
    def regressions(self) -> int:
        return sum(len(m) for p in self.points for m in p.regressed.values())

    def to_json(self) -> Dict[str, Any]:
        """What the page draws (plain JSON)."""
        return {
            "scopes": self.scopes, "points": [p.to_json() for p in self.points],
            "metrics": [{"name": m, "label": METRICS[m].label if m in METRICS else m.upper(),
                         "higher": bool(METRICS[m].higher_is_better) if m in METRICS else False} for m in SHOWN],
            "skipped": [{"path": path, "why": why} for path, why in self.skipped],
        }

    def span(self) -> str:
        """``3 reports, 2030-01-01T00:00:00Z to 2030-01-03T00:00:00Z, 1 regression``."""
        n = len(self.points)
        when = f", {self.points[0].created} to {self.points[-1].created}" if n > 1 else (
            f", {self.points[0].created}" if n else "")
        k = self.regressions
        return f"{n} report{'' if n == 1 else 's'}{when}, {k} regression{'' if k == 1 else 's'}"

    def lines(self) -> List[str]:
        """The terminal's lines: the span, each regression, each pair not compared, each file
        not read."""
        out = [f"history: {inline(self.span())}"]
        for p in self.points:
            out.extend(f"{inline(p.created)}: REGRESSED {inline(c)}" for c in p.changes)
            if p.compared:
                out.append(f"{inline(p.created)}: not compared with the report before: {inline(p.compared)}")
        out.extend(f"not read: {inline(why)}" for _path, why in self.skipped)
        return out

    def markdown(self) -> str:
        """GitHub's step summary: a table a figure (FCH, PMH, RC) of the reports by scope, the
        regressions and beyond-limit figures marked, then the regressions, the pairs not
        compared and the files not read."""
        model = ", ".join(dict.fromkeys(p.model or "responses" for p in self.points)) or "no report"
        lines = [f"## DefAn history: {markdown_cell(model, 120)}", "", f"{markdown_cell(self.span(), 200)}.", ""]
        if self.points:
            lines += [f"Marks: {REGRESSED_MARK} regressed against the report before (worse beyond its tolerance, by the "
                      f"regression gate's paired test over paraphrase groups); {BEYOND_MARK} beyond its limit in that "
                      "run's own level gate.", ""]
        scopes = self.scopes
        for metric in SHOWN:
            if not self.points:
                break
            label = METRICS[metric].label if metric in METRICS else metric.upper()
            lines += [f"### {label}", "", "| report | model | level gate | " + " | ".join(markdown_cell(s, 40) for s in scopes) + " |",
                      "|---|---|---|" + "--:|" * len(scopes)]
            for p in self.points:
                cells = [_cell_of(p, scope, metric) for scope in scopes]
                lines.append(f"| {markdown_cell(_when(p.created), 30)} | {markdown_cell(_model(p), 60)} "
                             f"| {markdown_cell(p.gate_status, 20)} | " + " | ".join(cells) + " |")
            lines.append("")
        lines += _listed("Regressions", [f"{_when(p.created)}: {c}" for p in self.points for c in p.changes])
        lines += _listed("Not compared with the report before",
                         [f"{_when(p.created)}: {p.compared}" for p in self.points if p.compared])
        lines += _listed("Not read", [why for _path, why in self.skipped])
        return "\n".join(lines).rstrip() + "\n"


def _when(created: str) -> str:
    """A report's time as the tables show it: ``2030-01-01 03:17`` (as the report wrote it
    when it is not an ISO 8601 time)."""
    text = str(created)
    return text[:16].replace("T", " ") if len(text) >= 16 and text[10:11] == "T" else text


def _model(p: Point) -> str:
    return f"{p.model or 'responses'}" + (f" {p.version}" if p.version else "")


def _cell_of(p: Point, scope: str, metric: str) -> str:
    figs: Mapping[str, Any] = p.figures.get(scope) or {}
    value = figs.get(metric)
    text = f"{value:.3f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "–"
    if metric in p.regressed.get(scope, ()):
        text = f"**{text}** {REGRESSED_MARK}"
    if metric in p.beyond.get(scope, ()):
        text += f" {BEYOND_MARK}"
    return text


def _listed(title: str, items: List[str]) -> List[str]:
    if not items:
        return []
    return [f"### {title}", "", *(f"- {markdown_cell(item, 400)}" for item in items), ""]
