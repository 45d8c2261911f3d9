"""The DefAn gate: judging a run's figures against its thresholds.

:func:`check` turns a :func:`defan_pytest.metrics.summarize` summary and
:class:`~defan_pytest.thresholds.Thresholds` into one :class:`Verdict` per threshold that is set,
per scope (each domain in the summary, then ``overall``). The plugin decides what to do with
them (fail the session on :func:`failed`, print :func:`format_gate_table`).

Rules
-----

* ``max_*`` passes when the figure is ``<=`` the limit, ``min_rc`` when RC is ``>=`` it, on the
  exact float values (a figure equal to its limit passes). Messages round to 2 decimals, except
  that a figure that *differs* from its limit but rounds to the same text is shown with enough
  digits to see the difference: "FCH 0.35 > max_fch 0.35" would read as a bug.
* ``min_samples``: when a scope has fewer scored responses than ``min_samples`` its FCH, PMH and
  RC are not judged; they get an ``"insufficient"`` verdict instead of passing silently. The
  error rate is the exception: its denominator is the responses *asked*, so it is judged as long
  as enough responses were asked. Otherwise a provider outage - almost every call errored,
  hence almost nothing scored - would make every check "insufficient" and the run would get
  through the gate exactly when it is most broken.
* ``"n/a"``: the figure does not exist (RC for ``math``, whose questions have no paraphrases;
  any rate of a scope with nothing to count). Not a pass, not a failure.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from defan_pytest.thresholds import Limits, Thresholds

__all__ = [
    "FAIL",
    "INSUFFICIENT",
    "NOT_APPLICABLE",
    "PASS",
    "Verdict",
    "check",
    "failed",
    "format_gate_table",
]

Status = Literal["pass", "fail", "insufficient", "n/a"]

PASS: Status = "pass"
FAIL: Status = "fail"
INSUFFICIENT: Status = "insufficient"
NOT_APPLICABLE: Status = "n/a"

#: The scope name of the overall figure.
OVERALL = "overall"


@dataclass(frozen=True)
class Verdict:
    """The outcome of one threshold for one scope.

    ``scope`` is a domain id or ``"overall"``; ``metric`` one of ``"fch"``, ``"pmh"``, ``"rc"``,
    ``"error_rate"``, ``"samples"``; ``status`` one of ``"pass"``, ``"fail"``,
    ``"insufficient"``, ``"n/a"``. ``value`` is the figure (the scored-response count for
    ``"samples"``; ``None`` when the figure does not exist) and ``limit`` the threshold.
    """

    scope: str
    metric: str
    status: Status
    value: float | int | None
    limit: float | int
    message: str


@dataclass(frozen=True)
class _Rate:
    """How one rate threshold is checked and described."""

    metric: str  # the summary key, also Verdict.metric
    key: str  # the Limits field / thresholds.toml key
    label: str  # how messages name the figure
    upper: bool  # True: a maximum (pass when <=); False: a minimum (pass when >=)
    count_key: str  # the summary key the message's count comes from
    count_label: str  # "n" or "groups"


_CHECKS: tuple[_Rate, ...] = (
    _Rate("fch", "max_fch", "FCH", True, "scored", "n"),
    _Rate("pmh", "max_pmh", "PMH", True, "scored", "n"),
    _Rate("rc", "min_rc", "RC", False, "rc_groups", "groups"),
    # The error rate is errors / responses asked, so its n is the responses asked.
    _Rate("error_rate", "max_error_rate", "error rate", True, "n", "n"),
)


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


def _responses(count: int, scored: bool = True) -> str:
    noun = "scored response" if scored else "response"
    return f"{count} {noun}{'' if count == 1 else 's'}"


# --------------------------------------------------------------------------------------------
# The gate
# --------------------------------------------------------------------------------------------


def _count(figs: Mapping[str, Any], key: str) -> int:
    value = figs.get(key)
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _judge_scope(scope: str, figs: Mapping[str, Any], limits: Limits) -> list[Verdict]:
    verdicts: list[Verdict] = []
    scored = _count(figs, "scored")
    asked = _count(figs, "n")
    min_samples = limits.min_samples
    short = min_samples is not None and scored < min_samples

    if min_samples is not None:
        if short:
            verdicts.append(Verdict(
                scope, "samples", INSUFFICIENT, scored, min_samples,
                f"{scope}: {_responses(scored)} < min_samples {min_samples}: not judged",
            ))
        else:
            verdicts.append(Verdict(
                scope, "samples", PASS, scored, min_samples,
                f"{scope}: {_responses(scored)} >= min_samples {min_samples}",
            ))

    for rate in _CHECKS:
        limit = getattr(limits, rate.key)
        if limit is None:
            continue
        raw = figs.get(rate.metric)
        value = float(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) else None
        if value is None:
            reason = {"rc": "no paraphrase groups", "error_rate": "no responses"}.get(
                rate.metric, "no scored responses"
            )
            verdicts.append(Verdict(
                scope, rate.metric, NOT_APPLICABLE, None, limit,
                f"{scope}: {rate.label} n/a ({reason}): {rate.key} {_fmt_limit(limit)} not judged",
            ))
            continue
        if min_samples is not None:
            if rate.metric == "error_rate":
                if asked < min_samples:
                    verdicts.append(Verdict(
                        scope, rate.metric, INSUFFICIENT, value, limit,
                        f"{scope}: {rate.label} not judged: {_responses(asked, scored=False)} "
                        f"< min_samples {min_samples}",
                    ))
                    continue
            elif short:
                verdicts.append(Verdict(
                    scope, rate.metric, INSUFFICIENT, value, limit,
                    f"{scope}: {rate.label} not judged: {_responses(scored)} "
                    f"< min_samples {min_samples}",
                ))
                continue
        ok = value <= limit if rate.upper else value >= limit
        if rate.upper:
            op = "<=" if ok else ">"
        else:
            op = ">=" if ok else "<"
        v_text, lim_text = _fmt_pair(value, limit)
        details = [f"95% CI {ci}"] if (ci := _ci_text(figs.get(f"{rate.metric}_ci"))) else []
        details.append(f"{rate.count_label}={_count(figs, rate.count_key)}")
        verdicts.append(Verdict(
            scope, rate.metric, PASS if ok else FAIL, value, limit,
            f"{scope}: {rate.label} {v_text} {op} {rate.key} {lim_text} ({', '.join(details)})",
        ))
    return verdicts


def _overall_figures(summary: Mapping[str, Any], figure: str) -> dict[str, Any]:
    overall = summary.get("overall") or {}
    figs = dict(overall.get(figure) or {})
    if "rc_groups" not in figs:
        # The mean of domains has no group count of its own; its RC rests on the RC groups of
        # all domains together, which is what the message should report.
        domains = summary.get("domains") or {}
        figs["rc_groups"] = sum(_count(d, "rc_groups") for d in domains.values())
    return figs


def check(summary: Mapping[str, Any], thresholds: Thresholds) -> list[Verdict]:
    """Judge ``summary`` (from :func:`~defan_pytest.metrics.summarize`) against ``thresholds``.

    Returns one verdict per threshold that is set, per scope: every domain of the summary in
    summary order, then ``"overall"`` (the mean of domains, or the pooled figure when the file
    says ``[overall] figure = "pooled"``). Within a scope: ``samples``, ``fch``, ``pmh``, ``rc``,
    ``error_rate``. Domains that have limits in the file but are not in the summary are not
    judged: the gate judges what was run.
    """
    verdicts: list[Verdict] = []
    for name, figs in (summary.get("domains") or {}).items():
        verdicts.extend(_judge_scope(name, figs or {}, thresholds.for_domain(name)))
    overall = _overall_figures(summary, thresholds.overall_figure)
    verdicts.extend(_judge_scope(OVERALL, overall, thresholds.for_overall()))
    return verdicts


def failed(verdicts: Iterable[Verdict]) -> list[Verdict]:
    """The verdicts that fail the gate."""
    return [v for v in verdicts if v.status == FAIL]


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


def _figure_cell(
    figs: Mapping[str, Any], metric: str, verdicts: Sequence[Verdict], with_ci: bool
) -> str:
    value = figs.get(metric)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    text = _fmt2(float(value))
    if with_ci and (ci := _ci_text(figs.get(f"{metric}_ci"))):
        text = f"{text} {ci}"
    # The marker goes after the text so the numbers stay aligned in their column.
    breached = any(v.metric == metric and v.status == FAIL for v in verdicts)
    return text + (_MARK if breached else "")


def _limit_cell(limit: float | None) -> str:
    return "-" if limit is None else _fmt_limit(limit)


def format_gate_table(
    summary: Mapping[str, Any],
    thresholds: Thresholds,
    verdicts: Sequence[Verdict],
) -> str:
    """A fixed-width table of the gate: one row per domain of the summary, then the judged
    overall figure. Each figure (with its 95% interval, except the error rate) is followed by
    its limit (``-``: not set); ``!`` marks a figure that failed; the last column is the scope's
    status (PASS, FAIL, INSUFFICIENT, N/A, or ``-`` when nothing is set). Figures print with 2
    decimals. The widest realistic row (``conference_venue`` with an INSUFFICIENT status) is
    about 110 columns.
    """
    figure = thresholds.overall_figure
    by_scope: dict[str, list[Verdict]] = {}
    for v in verdicts:
        by_scope.setdefault(v.scope, []).append(v)

    scopes: list[tuple[str, str, Mapping[str, Any], Limits]] = [
        (name, name, figs or {}, thresholds.for_domain(name))
        for name, figs in (summary.get("domains") or {}).items()
    ]
    scopes.append((OVERALL, f"overall ({figure})", _overall_figures(summary, figure),
                   thresholds.for_overall()))

    header = ["scope", "n", "FCH  95% CI", "max", "PMH  95% CI", "max", "RC   95% CI", "min",
              "err", "max", "status"]
    rows: list[list[str]] = []
    for scope, label, figs, limits in scopes:
        own = by_scope.get(scope, [])
        rows.append([
            label,
            str(_count(figs, "scored")),
            _figure_cell(figs, "fch", own, True), _limit_cell(limits.max_fch),
            _figure_cell(figs, "pmh", own, True), _limit_cell(limits.max_pmh),
            _figure_cell(figs, "rc", own, True), _limit_cell(limits.min_rc),
            # No interval for the error rate: it would push the table past ~110 columns, and
            # the verdict message carries it.
            _figure_cell(figs, "error_rate", own, False), _limit_cell(limits.max_error_rate),
            _scope_status(own),
        ])

    table = [header, *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    right = {1, 3, 5, 7, 9}  # counts and limits: right-aligned so digits line up

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
    if any(_MARK in c for r in rows for c in r[2:10]):
        legend.append(f"{_MARK} = outside its threshold")
    lines.append("; ".join(legend))
    return "\n".join(lines) + "\n"
