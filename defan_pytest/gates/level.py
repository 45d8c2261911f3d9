"""The DefAn gate: judging a run's figures against its thresholds.

:func:`check` turns a :func:`defan_pytest.metrics.summary.summarize` summary and
:class:`~defan_pytest.gates.thresholds.Thresholds` into one :class:`Verdict` per threshold that is set,
per scope (each domain in the summary, then ``overall``). The plugin decides what to do with
them (fail the session on :func:`failed`, print :func:`format_gate_table`).

Rules
-----

* One check per metric of :data:`defan_pytest.metrics.summary.METRICS`, in registration order, under
  its threshold key. ``max_*`` (lower is better: FCH, PMH, error rate) passes when the figure is
  ``<=`` the limit, ``min_*`` (higher is better: RC) when it is ``>=`` it, on the
  exact float values (a figure equal to its limit passes). Messages round to 2 decimals, except
  that a figure that *differs* from its limit but rounds to the same text is shown with enough
  digits to see the difference: "FCH 0.35 > max_fch 0.35" would read as a bug.
* ``min_samples`` counts paraphrase groups (the unit of the intervals; fifteen answers to one
  question are not fifteen samples): when a scope has fewer groups with a scored response than
  ``min_samples`` its FCH, PMH and RC are not judged; they get an ``"insufficient"`` verdict
  instead of passing silently. The error rate is the exception: its denominator is the responses
  *asked*, so it is judged as long as enough groups were asked.
* ``decide``: ``"point"`` (default) fails a figure beyond its limit; ``"interval"`` fails it only
  when its whole 95% interval lies beyond the limit (a small pull-request sample whose point
  estimate crosses the limit by chance passes, and its message says it was not decided). Otherwise a provider outage - almost every call errored,
  hence almost nothing scored - would make every check "insufficient" and the run would get
  through the gate exactly when it is most broken. (A metric declares which rule it follows
  with :attr:`~defan_pytest.metrics.summary.Metric.denominator`: ``"scored"`` or ``"asked"``.)
* ``"n/a"``: the figure does not exist (RC for ``math``, whose questions have no paraphrases;
  any rate of a scope with nothing to count). Not a pass, not a failure.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from defan_pytest.metrics.summary import ASKED, METRICS, Metric
from defan_pytest.gates.thresholds import Limits, Thresholds

__all__ = [
    "FAIL",
    "INSUFFICIENT",
    "NOT_APPLICABLE",
    "OVERALL",
    "PASS",
    "Verdict",
    "check",
    "format_gate_table",
]

Status = Literal["pass", "fail", "insufficient", "n/a"]

PASS: Status = "pass"
FAIL: Status = "fail"
INSUFFICIENT: Status = "insufficient"
NOT_APPLICABLE: Status = "n/a"

#: The scope name of the overall figure.
OVERALL = "overall"

#: How a figure beyond its limit is decided (``--defan-decide``): on the point estimate, or
#: only when the whole interval lies beyond the limit.
POINT = "point"
INTERVAL = "interval"


@dataclass(frozen=True)
class Verdict:
    """The outcome of one threshold for one scope.

    ``scope`` is a domain id or ``"overall"``; ``metric`` the name of a registered metric
    (``"fch"``, ``"pmh"``, ``"rc"``, ``"error_rate"``, ...) or ``"samples"``; ``status`` one of
    ``"pass"``, ``"fail"``, ``"insufficient"``, ``"n/a"``. ``value`` is the figure (the
    scored-response count for ``"samples"``; ``None`` when the figure does not exist) and
    ``limit`` the threshold.
    """

    scope: str
    metric: str
    status: Status
    value: float | int | None
    limit: float | int
    message: str


# --------------------------------------------------------------------------------------------
# Formatting helpers
# --------------------------------------------------------------------------------------------


def _fmt2(x: float) -> str:
    return f"{x:.2f}"


def _fmt_limit(limit: float) -> str:
    """A limit as the user wrote it: 2 decimals, or more if the file has more (0.355)."""
    text = _fmt2(limit)
    return text if float(text) == limit else f"{limit:g}"


def _fmt_pair(value: float, limit: float) -> tuple[str, str]:
    """Format a figure and its limit so that different numbers never print the same."""
    v, lim = _fmt2(value), _fmt_limit(limit)
    if value == limit:
        return lim, lim  # equal numbers print equal, also for a limit such as 0.355
    if v != lim:
        return v, lim
    for digits in range(3, 7):
        v = f"{value:.{digits}f}"
        if v != f"{limit:.{digits}f}":
            return v, lim
    return repr(value), lim


def _ci_text(ci: Any) -> str | None:
    if isinstance(ci, Sequence) and not isinstance(ci, str) and len(ci) == 2 and None not in ci:
        return f"{_fmt2(float(ci[0]))}-{_fmt2(float(ci[1]))}"
    return None


# --------------------------------------------------------------------------------------------
# The gate
# --------------------------------------------------------------------------------------------


def _count(figs: Mapping[str, Any], key: str) -> int:
    value = figs.get(key)
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _groups(count: int, scored: bool = True) -> str:
    noun = "scored group" if scored else "group"
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _interval_side(figs: Mapping[str, Any], metric: Metric, limit: float) -> bool | None:
    """Under ``decide="interval"``: True when the whole interval lies beyond ``limit`` (the
    figure fails), False when it does not, None when there is no interval."""
    ci = figs.get(metric.ci_key)
    if not (isinstance(ci, Sequence) and not isinstance(ci, str) and len(ci) == 2 and None not in ci):
        return None
    lo, hi = float(ci[0]), float(ci[1])
    return hi < limit if metric.higher_is_better else lo > limit


def _judge_scope(scope: str, figs: Mapping[str, Any], limits: Limits, decide: str = POINT) -> list[Verdict]:
    verdicts: list[Verdict] = []
    # min_samples counts paraphrase groups, the unit of the intervals: fifteen answers to one
    # question are not fifteen samples.
    groups = _count(figs, "scored_groups") if "scored_groups" in figs else _count(figs, "groups")
    asked_groups = _count(figs, "groups")
    min_samples = limits.min_samples
    short = min_samples is not None and groups < min_samples

    if min_samples is not None:
        if short:
            verdicts.append(Verdict(
                scope, "samples", INSUFFICIENT, groups, min_samples,
                f"{scope}: {_groups(groups)} < min_samples {min_samples}: not judged",
            ))
        else:
            verdicts.append(Verdict(
                scope, "samples", PASS, groups, min_samples,
                f"{scope}: {_groups(groups)} >= min_samples {min_samples}",
            ))

    # The registry is read now, not at import, so a metric registered later is judged too.
    for metric in METRICS.values():
        key = metric.threshold_key
        set_limit = limits.get(key)
        if set_limit is None:
            continue
        limit = float(set_limit)
        raw = figs.get(metric.name)
        value = float(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) else None
        if value is None:
            verdicts.append(Verdict(
                scope, metric.name, NOT_APPLICABLE, None, limit,
                f"{scope}: {metric.label} n/a ({metric.missing}): {key} {_fmt_limit(limit)} "
                "not judged",
            ))
            continue
        if min_samples is not None:
            if metric.denominator == ASKED:
                if asked_groups < min_samples:
                    verdicts.append(Verdict(
                        scope, metric.name, INSUFFICIENT, value, limit,
                        f"{scope}: {metric.label} not judged: {_groups(asked_groups, scored=False)} "
                        f"< min_samples {min_samples}",
                    ))
                    continue
            elif short:
                verdicts.append(Verdict(
                    scope, metric.name, INSUFFICIENT, value, limit,
                    f"{scope}: {metric.label} not judged: {_groups(groups)} "
                    f"< min_samples {min_samples}",
                ))
                continue
        ok = metric.passes(value, limit)
        undecided = False
        if decide == INTERVAL and not ok:
            # Fail only when the whole interval lies beyond the limit: a small sample whose
            # point estimate crosses the limit by chance does not fail the gate.
            beyond = _interval_side(figs, metric, limit)
            if beyond is False:
                ok, undecided = True, True
        if metric.higher_is_better:
            op = ">=" if metric.passes(value, limit) else "<"
        else:
            op = "<=" if metric.passes(value, limit) else ">"
        v_text, lim_text = _fmt_pair(value, limit)
        details = [f"95% CI {ci}"] if (ci := _ci_text(figs.get(metric.ci_key))) else []
        details.append(f"{metric.count_label}={_count(figs, metric.count_key)}")
        tail = "; not decided: the interval reaches the limit" if undecided else ""
        verdicts.append(Verdict(
            scope, metric.name, PASS if ok else FAIL, value, limit,
            f"{scope}: {metric.label} {v_text} {op} {key} {lim_text} ({', '.join(details)}){tail}",
        ))
    return verdicts


def _overall_figures(summary: Mapping[str, Any], figure: str) -> dict[str, Any]:
    overall = summary.get("overall") or {}
    figs = dict(overall.get(figure) or {})
    domains = summary.get("domains") or {}
    for metric in METRICS.values():
        if metric.count_key not in figs:
            # The mean of domains has no group count of its own (nor any count a metric
            # publishes); its RC rests on the RC groups of all domains together, which is what
            # the message should report.
            figs[metric.count_key] = sum(_count(d, metric.count_key) for d in domains.values())
    return figs


def check(summary: Mapping[str, Any], thresholds: Thresholds, decide: str = "point") -> list[Verdict]:
    """Judge ``summary`` (from :func:`~defan_pytest.metrics.summary.summarize`) against ``thresholds``.

    Returns one verdict per threshold that is set, per scope: every domain of the summary in
    summary order, then ``"overall"`` (the mean of domains, or the pooled figure when the file
    says ``[overall] figure = "pooled"``). Within a scope: ``samples``, then the metrics in
    registration order (``fch``, ``pmh``, ``rc``, ``error_rate``, then any registered later).
    Domains that have limits in the file but are not in the summary are not judged: the gate
    judges what was run.
    """
    verdicts: list[Verdict] = []
    for name, figs in (summary.get("domains") or {}).items():
        verdicts.extend(_judge_scope(name, figs or {}, thresholds.for_domain(name), decide))
    overall = _overall_figures(summary, thresholds.overall_figure)
    verdicts.extend(_judge_scope(OVERALL, overall, thresholds.for_overall(), decide))
    return verdicts


# --------------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------------

_MARK = "!"


def _scope_status(verdicts: Sequence[Verdict]) -> str:
    """One word for a row: a failure outranks a check that could not be judged."""
    statuses = {v.status for v in verdicts}
    if FAIL in statuses:
        return "FAIL"
    if INSUFFICIENT in statuses:
        return "INSUFFICIENT"
    if PASS in statuses:
        return "PASS"
    if NOT_APPLICABLE in statuses:
        return "N/A"
    return "-"


def _figure_cell(figs: Mapping[str, Any], metric: Metric, verdicts: Sequence[Verdict]) -> str:
    value = figs.get(metric.name)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    text = _fmt2(float(value))
    if metric.show_interval and (ci := _ci_text(figs.get(metric.ci_key))):
        text = f"{text} {ci}"
    # The marker goes after the text so the numbers stay aligned in their column.
    breached = any(v.metric == metric.name and v.status == FAIL for v in verdicts)
    return text + (_MARK if breached else "")


def _limit_cell(limit: float | int | None) -> str:
    return "-" if limit is None else _fmt_limit(float(limit))


def _column_title(metric: Metric) -> str:
    # Short labels padded to 4 so that "95% CI" lines up for FCH, PMH and RC.
    return f"{metric.short_label:<4} 95% CI" if metric.show_interval else metric.short_label


def format_gate_table(
    summary: Mapping[str, Any],
    thresholds: Thresholds,
    verdicts: Sequence[Verdict],
    width: int | None = None,
) -> str:
    """The gate table (:func:`format_wide_gate_table`), or, when that is wider than ``width``
    columns, the compact one (:func:`format_compact_gate_table`: no intervals, fits 80)."""
    wide = format_wide_gate_table(summary, thresholds, verdicts)
    if width is None or max(len(line) for line in wide.splitlines()) <= width:
        return wide
    return format_compact_gate_table(summary, thresholds, verdicts)


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
        (name, name, figs or {}, thresholds.for_domain(name))
        for name, figs in (summary.get("domains") or {}).items()
    ]
    scopes.append((OVERALL, f"overall ({figure})", _overall_figures(summary, figure), thresholds.for_overall()))
    return by_scope, scopes


_COMPACT_STATUS = {"INSUFFICIENT": "TOO FEW"}


def format_compact_gate_table(
    summary: Mapping[str, Any],
    thresholds: Thresholds,
    verdicts: Sequence[Verdict],
) -> str:
    """The gate table in at most 80 columns with the built-in metrics: per scope the scored
    paraphrase groups, then each metric's figure and limit, then the status; the intervals are
    in the gate's messages and the report."""
    by_scope, scopes = _table_scopes(summary, thresholds, verdicts)
    metrics = tuple(METRICS.values())
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
            cell = "-" if not isinstance(value, (int, float)) or isinstance(value, bool) else _fmt2(float(value))
            if any(v.metric == metric.name and v.status == FAIL for v in own):
                cell += _MARK
            row += [cell, _limit_cell(limits.get(metric.threshold_key))]
        status = _scope_status(own)
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
    return "\n".join(lines) + "\n"


def format_wide_gate_table(
    summary: Mapping[str, Any],
    thresholds: Thresholds,
    verdicts: Sequence[Verdict],
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

    metrics = tuple(METRICS.values())
    header = ["scope", "n"]
    for metric in metrics:
        header += [_column_title(metric), "min" if metric.higher_is_better else "max"]
    header.append("status")
    rows: list[list[str]] = []
    for scope, label, figs, limits in scopes:
        own = by_scope.get(scope, [])
        row = [label, str(_count(figs, "scored"))]
        for metric in metrics:
            row += [_figure_cell(figs, metric, own), _limit_cell(limits.get(metric.threshold_key))]
        row.append(_scope_status(own))
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
    return "\n".join(lines) + "\n"
