"""Several models side by side: the domains-by-models table of a session that asked more than
one model (:class:`~defan_pytest.records.ModelsReport`), as terminal lines and as the Markdown
of GitHub's step summary, and the lines of their comparison with the model ``--defan-compare-to``
names.  Every text from a report passes :func:`~defan_pytest.safetext.inline` (one line, no
command) or :func:`~defan_pytest.safetext.markdown_cell`.
"""
from __future__ import annotations

from typing import Any, List, Mapping, Sequence

from defan_pytest.metrics.registry import METRICS
from defan_pytest.records import ModelsReport, Report, model_of
from defan_pytest.safetext import inline, markdown_cell

__all__ = ["comparison_lines", "figures_of", "markdown_table", "runs_of", "scopes_of", "text_table"]

#: The figures the table shows, in its order.
SHOWN = ("fch", "pmh", "rc")


def scopes_of(report: ModelsReport) -> List[str]:
    """Every domain any model ran (in the order they first appear), then ``overall``."""
    seen = {d: None for run in report.runs for d in run.domains}
    return [*seen, "overall"]


def figures_of(run: Report, scope: str) -> Mapping[str, Any]:
    """A run's figures on one scope (``overall``: the figure its limits apply to)."""
    if scope == "overall":
        return run.overall.get(run.figure) or {}
    return run.domains.get(scope) or {}


def _rate(value: Any) -> str:
    return "-" if not isinstance(value, (int, float)) else f"{value:.3f}"


def _status(run: Report, scope: str) -> str:
    """The level gate's word on a scope of a run: ``fail``, ``pass`` or ``-`` (no limit)."""
    verdicts = [v for v in run.gate if v.get("scope") == scope]
    if not verdicts:
        return "skipped" if run.gate_status == "skipped" else "-"
    return "FAIL" if any(v.get("status") in ("fail", "insufficient") for v in verdicts) else "pass"


def _labels() -> List[str]:
    return [METRICS[m].label if m in METRICS else m.upper() for m in SHOWN]


def text_table(report: ModelsReport) -> List[str]:
    """The terminal's table: a row per domain and overall, for each model its FCH, PMH and RC
    and its gate's word on the scope."""
    labels = _labels()
    header = ["scope"] + [f"{inline(model_of(r))[:24]} {label}" for r in report.runs for label in [*labels, "gate"]]
    rows = [header]
    for scope in scopes_of(report):
        row = [inline(scope)[:24]]
        for run in report.runs:
            figs = figures_of(run, scope)
            row.extend(_rate(figs.get(m)) for m in SHOWN)
            row.append(_status(run, scope))
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(r, widths))).rstrip()
            for r in rows]


def markdown_table(report: ModelsReport) -> List[str]:
    """The step summary's table: domains by models, a model's FCH / PMH / RC in one cell."""
    labels = " / ".join(_labels())
    lines = [
        "| scope | " + " | ".join(f"{markdown_cell(model_of(r))} ({labels})" for r in report.runs) + " |",
        "|---|" + "---|" * len(report.runs),
    ]
    for scope in scopes_of(report):
        cells = []
        for run in report.runs:
            figs = figures_of(run, scope)
            status = _status(run, scope)
            mark = " ✗" if status == "FAIL" else ""
            cells.append(" / ".join(_rate(figs.get(m)) for m in SHOWN) + mark)
        lines.append(f"| {markdown_cell(scope)} | " + " | ".join(cells) + " |")
    return lines


def comparison_lines(report: ModelsReport, flipped: int = 10, every: bool = True) -> List[str]:
    """Each model against ``compare_to``: the verdict, each scope-metric change (``every``:
    also those that did not regress), and the first prompts right there and wrong here; a
    line's indent says what it belongs to."""
    if report.compare_to is None:
        return []
    out: List[str] = []
    for model, comp in report.comparisons.items():
        out.append(f"{inline(model)} against {inline(report.compare_to)}: {comp.get('status')}"
                   + (f" ({inline(comp.get('reason'))})" if comp.get("reason") else ""))
        for mets in (comp.get("scopes") or {}).values():
            for change in mets.values():
                if change.get("regressed") or every:
                    out.append("  " + ("REGRESSED " if change.get("regressed") else "") + inline(change.get("message")))
        worse = [f for f in comp.get("flipped") or () if f.get("direction") == "worse"]
        if worse:
            out.append(f"  right in {inline(report.compare_to)}, wrong in {inline(model)}: {len(worse)} prompts"
                       + (f" (first {flipped})" if len(worse) > flipped else ""))
            out.extend(f"    {inline(f.get('id'))}: {inline(report.compare_to)} {inline(f.get('old_claim'))[:40]!r}"
                       f" -> {inline(model)} {inline(f.get('new_claim'))[:40]!r}" for f in worse[:flipped])
    return out


def runs_of(reports: Sequence[Report]) -> ModelsReport:
    """A :class:`ModelsReport` of runs without comparisons (for a table)."""
    return ModelsReport(runs=tuple(reports))
