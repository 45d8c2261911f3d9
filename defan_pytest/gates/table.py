"""The gate table: every scope's figures next to their limits, and its verdict.

One row per domain of the summary, then the judged overall figure; one column pair per
registered metric (the figure, with its 95% interval when the metric shows one, and its limit).
When that is wider than the terminal, a compact table of at most 80 columns (no intervals) is
printed instead: the intervals are in the gate's messages and the report.

A scope's name comes from the data (a user's file, a report judged again): it is printed inert
(:func:`~defan_pytest.safetext.inline`), measured after escaping so that the columns line up.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from defan_pytest.gates.level import (
    FAIL,
    INSUFFICIENT,
    NOT_APPLICABLE,
    PASS,
    UNDECIDED,
    INTERVAL,
    POINT,
    Verdict,
    count_of,
    format_figure,
    format_limit,
    interval_text,
    overall_figures,
    passed_by_interval,
)
from defan_pytest.gates.thresholds import Limits, Thresholds
from defan_pytest.metrics.registry import METRICS, Metric
from defan_pytest.metrics.summary import OVERALL
from defan_pytest.safetext import inline

__all__ = ["format_gate_table", "interval_legend"]

_MARK = "!"
#: A figure beyond its limit that passed because its interval reaches the limit
#: (``--defan-decide=interval``).
_UNDECIDED = "~"


#: A row's status when the gates were skipped.
NOT_JUDGED = "NOT JUDGED"


def _scope_status(verdicts: Sequence[Verdict], not_judged: str | None = None) -> str:
    """One word for a row: a failure outranks a check that could not be judged; nothing is
    judged when the gates were skipped."""
    if not_judged is not None:
        return NOT_JUDGED
    statuses = {v.status for v in verdicts}
    if FAIL in statuses:
        return "FAIL"
    if INSUFFICIENT in statuses:
        return "INSUFFICIENT"
    if statuses & {PASS, UNDECIDED}:
        return "PASS"
    if NOT_APPLICABLE in statuses:
        return "N/A"
    return "-"


def _not_judged_line(reason: str) -> str:
    """The legend of a table whose gates were skipped: why."""
    return f"{NOT_JUDGED} = the gates were skipped: {inline(' '.join(reason.split()))}"


def _mark(metric: Metric, verdicts: Sequence[Verdict]) -> str:
    """A figure's mark: ``!`` beyond its limit and failed, ``~`` beyond it and passed because
    its interval reaches the limit, else none."""
    own = [v for v in verdicts if v.metric == metric.name]
    if any(v.status == FAIL for v in own):
        return _MARK
    return _UNDECIDED if any(passed_by_interval(v) for v in own) else ""


def _figure_cell(figs: Mapping[str, Any], metric: Metric, verdicts: Sequence[Verdict]) -> str:
    value = figs.get(metric.name)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    text = metric.format(float(value)) if metric.unit else format_figure(float(value))
    if metric.show_interval and (ci := interval_text(figs.get(metric.ci_key))):
        text = f"{text} {ci}"
    # The marker goes after the text so the numbers stay aligned in their column.
    return text + _mark(metric, verdicts)


def interval_legend(marked: bool) -> str:
    """The legend line of a table decided by interval (``--defan-decide=interval``)."""
    line = ("decided by interval (--defan-decide=interval): a figure fails only when its whole 95% interval lies "
            "beyond its limit")
    return line + (f"; {_UNDECIDED} = beyond its limit, passed because its interval reaches it" if marked else "")


def _limit_cell(limit: float | int | None, metric: Metric | None = None) -> str:
    if limit is None:
        return "-"
    return metric.format(float(limit)) if metric is not None and metric.unit else format_limit(float(limit))


def _shown(scopes: Sequence[tuple[str, str, Mapping[str, Any], Limits]]) -> tuple[Metric, ...]:
    """The metrics a table shows: every rate, and an amount (cost, latency) where a scope has a
    limit for it (the table stays within its width for the figures most runs judge)."""
    return tuple(m for m in METRICS.values()
                 if not m.unit or any(limits.get(m.threshold_key) is not None for *_, limits in scopes))


def _column_title(metric: Metric) -> str:
    # Short labels padded to 4 so that "95% CI" lines up for FCH, PMH and RC.
    return f"{metric.short_label:<4} 95% CI" if metric.show_interval else metric.short_label


def format_gate_table(
    summary: Mapping[str, Any],
    thresholds: Thresholds,
    verdicts: Sequence[Verdict],
    width: int | None = None,
    not_judged: str | None = None,
    decide: str = POINT,
) -> str:
    """The gate table of ``verdicts``: one row per domain of the summary, then the judged
    overall figure; one column pair per registered metric, the figure (with its 95% interval
    when the metric shows one; the error rate does not) followed by its limit (``-``: not set,
    headed ``max`` or ``min``); ``!`` marks a figure that failed; the last column is the scope's
    status (PASS, FAIL, INSUFFICIENT, N/A, or ``-`` when nothing is set). When that is wider
    than ``width`` columns, the compact table instead (no intervals, fits 80).

    ``not_judged``: why the gates were skipped (a shard, a narrowed selection): every scope's
    status is then ``NOT JUDGED`` (its figures beside their limits, never a verdict), and the
    legend says why.

    ``decide``: how the gate decided (``--defan-decide``); under ``interval`` a legend line says
    so, and ``~`` marks each figure beyond its limit that passed because its interval reaches it."""
    wide = _wide_table(summary, thresholds, verdicts, not_judged)
    table = wide if width is None or max(len(line) for line in wide.splitlines()) <= width else (
        _compact_table(summary, thresholds, verdicts, not_judged))
    if decide != INTERVAL:
        return table
    return table + interval_legend(any(passed_by_interval(v) for v in verdicts)) + "\n"


def _table_scopes(
    summary: Mapping[str, Any], thresholds: Thresholds, verdicts: Sequence[Verdict]
) -> tuple[dict[str, list[Verdict]], list[tuple[str, str, Mapping[str, Any], Limits]]]:
    """The verdicts by scope, and the rows of a gate table: (scope, label, figures, limits) for
    each domain of the summary, then the judged overall figure."""
    figure = thresholds.overall_figure
    by_scope: dict[str, list[Verdict]] = {}
    for v in verdicts:
        by_scope.setdefault(v.scope, []).append(v)
    scopes: list[tuple[str, str, Mapping[str, Any], Limits]] = [
        (name, inline(name), figs or {}, thresholds.for_domain(name))
        for name, figs in (summary.get("domains") or {}).items()
    ]
    scopes.append((OVERALL, f"overall ({figure})", overall_figures(summary, figure), thresholds.for_overall()))
    return by_scope, scopes


_COMPACT_STATUS = {"INSUFFICIENT": "TOO FEW"}


def _compact_table(
    summary: Mapping[str, Any],
    thresholds: Thresholds,
    verdicts: Sequence[Verdict],
    not_judged: str | None = None,
) -> str:
    """The gate table in at most 80 columns with the built-in metrics: per scope the scored
    paraphrase groups, then each metric's figure and limit, then the status; the intervals are
    in the gate's messages and the report."""
    by_scope, scopes = _table_scopes(summary, thresholds, verdicts)
    metrics = _shown(scopes)
    header = ["scope", "grp"]
    for metric in metrics:
        header += [metric.short_label[:5], "min" if metric.higher_is_better else "max"]
    header.append("status")
    rows: list[list[str]] = []
    for scope, label, figs, limits in scopes:
        own = by_scope.get(scope, [])
        groups = figs.get("scored_groups", figs.get("groups", 0))
        row = [label, str(groups)]
        for metric in metrics:
            value = figs.get(metric.name)
            cell = ("-" if not isinstance(value, (int, float)) or isinstance(value, bool)
                    else metric.format(float(value)) if metric.unit else format_figure(float(value)))
            if cell != "-":
                cell += _mark(metric, own)
            row += [cell, _limit_cell(limits.get(metric.threshold_key), metric)]
        status = _scope_status(own, not_judged)
        row.append(_COMPACT_STATUS.get(status, status))
        rows.append(row)
    table = [header, *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]

    def fmt(r: list[str]) -> str:
        cells = [r[0].ljust(widths[0]), r[1].rjust(widths[1])]
        for i in range(2, len(r) - 1, 2):
            cells.append(r[i].ljust(max(widths[i], 5)) + " " + r[i + 1].rjust(widths[i + 1]))
        cells.append(r[-1])
        return "  ".join(cells).rstrip()

    lines = [fmt(header)]
    lines.extend(fmt(r) for r in rows[:-1])
    lines.append(fmt(rows[-1]))
    legend = ["grp = scored paraphrase groups", "max/min = limit"]
    if any(_MARK in c for r in rows for c in r):
        legend.append(f"{_MARK} = outside its limit")
    lines.append("; ".join(legend))
    if not_judged is not None:
        lines.append(_not_judged_line(not_judged))
    return "\n".join(lines) + "\n"


def _wide_table(
    summary: Mapping[str, Any],
    thresholds: Thresholds,
    verdicts: Sequence[Verdict],
    not_judged: str | None = None,
) -> str:
    """A fixed-width table of the gate: one row per domain of the summary, then the judged
    overall figure. One column pair per registered metric: the figure (with its 95% interval
    when the metric shows one; the error rate does not) followed by its limit (``-``: not set,
    headed ``max`` or ``min``); ``!`` marks a figure that failed; the last column is the scope's
    status (PASS, FAIL, INSUFFICIENT, N/A, or ``-`` when nothing is set). Figures print with 2
    decimals. With the built-in metrics, the widest realistic row (``conference_venue`` with an
    INSUFFICIENT status) is about 110 columns.
    """
    by_scope, scopes = _table_scopes(summary, thresholds, verdicts)

    metrics = _shown(scopes)
    header = ["scope", "n"]
    for metric in metrics:
        header += [_column_title(metric), "min" if metric.higher_is_better else "max"]
    header.append("status")
    rows: list[list[str]] = []
    for scope, label, figs, limits in scopes:
        own = by_scope.get(scope, [])
        row = [label, str(count_of(figs, "scored"))]
        for metric in metrics:
            row += [_figure_cell(figs, metric, own), _limit_cell(limits.get(metric.threshold_key), metric)]
        row.append(_scope_status(own, not_judged))
        rows.append(row)

    table = [header, *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    figure_columns = range(2, 2 + 2 * len(metrics), 2)
    # Counts and limits: right-aligned so digits line up.
    right = {1, *(i + 1 for i in figure_columns)}

    def fmt(r: list[str]) -> str:
        cells = []
        for i, (cell, width) in enumerate(zip(r, widths)):
            cells.append(cell.rjust(width) if i in right else cell.ljust(width))
        # A figure and its limit are one unit: one space between them, two between units.
        out = cells[0]
        for i in range(1, len(cells)):
            out += (" " if i in right and i != 1 else "  ") + cells[i]
        return out.rstrip()

    rule_cells = ["-" * w for w in widths]
    lines = [fmt(header), fmt(rule_cells)]
    lines.extend(fmt(r) for r in rows[:-1])
    if len(rows) > 1:
        lines.append(fmt(rule_cells))
    lines.append(fmt(rows[-1]))
    legend = ["n = scored responses", "max/min = limit (- = not set)"]
    if any(_MARK in r[i] for r in rows for i in figure_columns):
        legend.append(f"{_MARK} = outside its threshold")
    lines.append("; ".join(legend))
    if not_judged is not None:
        lines.append(_not_judged_line(not_judged))
    return "\n".join(lines) + "\n"
