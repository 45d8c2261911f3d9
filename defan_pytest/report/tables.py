"""The terminal table of a DefAn run's figures.

The table is for a human reading a terminal or CI log: one fixed-width row per domain, then the
two overall rows (the paper's mean of domains, and the pooled figure), with one column per
metric of :data:`defan_pytest.metrics.summary.METRICS`.  (The JSON report is the ``json``
report format, :mod:`defan_pytest.report.formats`.)
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from defan_pytest.metrics.registry import METRICS, Metric
from defan_pytest.safetext import inline

__all__ = ["format_table"]

_MEAN_LABEL = "overall (mean of domains)"
_POOLED_LABEL = "overall (pooled)"
_BREACH = "!"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _rate_ci(value: float | None, ci: Sequence[float] | None) -> str:
    if value is None:
        return "-"
    if ci is None:
        return f"{value:.3f}"
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"


def _breached(metric: Metric, value: float | None, limits: Mapping[str, Any] | None) -> bool:
    if value is None or not limits or limits.get(metric.name) is None:
        return False
    return not metric.passes(value, float(limits[metric.name]))


def _row(
    label: str, figs: Mapping[str, Any], limits: Mapping[str, Any] | None, metrics: Sequence[Metric]
) -> list[str]:
    row = [label, str(figs.get("n", 0)), str(figs.get("errors", 0))]
    for metric in metrics:
        value = figs.get(metric.name)
        if metric.show_interval:
            text = _rate_ci(value, figs.get(metric.ci_key))
        else:
            text = _rate(value)
        # The marker goes after the text so the numbers stay aligned in their column.
        row.append(text + (_BREACH if _breached(metric, value, limits) else ""))
    return row


def _title(metric: Metric) -> str:
    return f"{metric.label} [95% CI]" if metric.show_interval else metric.label


def format_table(
    summary: Mapping[str, Any],
    thresholds: Mapping[str, Mapping[str, float]] | None = None,
) -> str:
    """Render a summary from :func:`~defan_pytest.metrics.summary.summarize` as a fixed-width table.

    Columns: domain, n, errors, then one per registered metric - FCH, PMH and RC (each with its
    95% interval) and the error rate for the built-ins; then an "overall (mean of domains)" and
    an "overall (pooled)" row. Rates print with three decimals; a figure that cannot be
    computed prints as ``-``.

    ``thresholds`` optionally maps a domain name (or ``"overall"``, which applies to the mean
    row, the figure the paper reports) to limits keyed by metric name, ``{"fch": max, "pmh": max,
    "error_rate": max, "rc": min}`` (a maximum or a minimum as the metric's
    ``higher_is_better`` says; :meth:`~defan_pytest.gates.thresholds.Limits.figure_limits` gives this
    shape); a figure outside its limit is marked with ``!`` and a legend line is added.
    The table only marks figures; deciding pass/fail is the gate's job.
    """
    thresholds = thresholds or {}
    domains: Mapping[str, Any] = summary.get("domains") or {}
    overall: Mapping[str, Any] = summary.get("overall") or {}

    # The registry is read now, not at import, so a metric registered later gets its column; the
    # rates only (an amount, cost or latency, is judged in the gate table where a limit is set).
    metrics = tuple(m for m in METRICS.values() if not m.unit)
    header = ["domain", "n", "errors", *(_title(metric) for metric in metrics)]
    # A domain name (of a user's file, of a report judged again) is printed inert: one line, its
    # escape codes shown, never a workflow command at the line's start.
    body = [_row(inline(name), figs, thresholds.get(name), metrics) for name, figs in domains.items()]
    tail = [
        _row(_MEAN_LABEL, overall.get("mean") or {}, thresholds.get("overall"), metrics),
        _row(_POOLED_LABEL, overall.get("pooled") or {}, None, metrics),
    ]
    rows = [header, *body, *tail]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    # Text columns (a figure with its interval) left-aligned, numbers right-aligned so digits
    # line up.
    left = {0, *(3 + i for i, metric in enumerate(metrics) if metric.show_interval)}

    def fmt(r: list[str]) -> str:
        cells = [c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * w for w in widths)
    lines = [fmt(header), rule, *(fmt(r) for r in body)]
    if body:
        lines.append(rule)
    lines.extend(fmt(r) for r in tail)
    if any(_BREACH in c for r in body + tail for c in r[3:]):
        lines.append(f"{_BREACH} outside its threshold")
    return "\n".join(lines) + "\n"

