"""The DefAn gate: judging a run's figures against its thresholds.

:func:`check` turns a :func:`defan_pytest.metrics.summary.summarize` summary and
:class:`~defan_pytest.gates.thresholds.Thresholds` into one :class:`Verdict` per threshold that is set,
per scope (each domain in the summary, then ``overall``). The plugin and ``defan gate`` decide
what to do with them (fail the session, print :func:`defan_pytest.gates.table.format_gate_table`).

Rules
-----

* One check per metric of :data:`defan_pytest.metrics.registry.METRICS`, in registration order,
  under its threshold key. ``max_*`` (lower is better: FCH, PMH, error rate) passes when the
  figure is ``<=`` the limit, ``min_*`` (higher is better: RC) when it is ``>=`` it, on the
  exact float values (a figure equal to its limit passes). Messages round to 2 decimals, except
  that a figure that *differs* from its limit but rounds to the same text is shown with enough
  digits to see the difference: "FCH 0.35 > max_fch 0.35" would read as a bug.
* ``min_samples`` counts paraphrase groups (the unit of the intervals; fifteen answers to one
  question are not fifteen samples): when a scope has fewer groups with a scored response than
  ``min_samples`` its FCH, PMH and RC are not judged; they get an ``"insufficient"`` verdict
  instead of passing silently. The error rate is the exception: its denominator is the responses
  *asked*, so it is judged as long as enough groups were asked. Otherwise a provider outage -
  almost every call errored, hence almost nothing scored - would make every check
  "insufficient" and the run would get through the gate exactly when it is most broken. (A
  metric declares which rule it follows with
  :attr:`~defan_pytest.metrics.registry.Metric.denominator`: ``"scored"`` or ``"asked"``.)
* ``decide``: ``"point"`` (default) fails a figure beyond its limit; ``"interval"`` fails it only
  when its whole 95% interval lies beyond the limit (a small pull-request sample whose point
  estimate crosses the limit by chance passes, and its message says it was not decided).
* ``"n/a"``: the figure does not exist (RC for ``math``, whose questions have no paraphrases;
  any rate of a scope with nothing to count). Not a pass, not a failure.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from defan_pytest.gates.thresholds import Limits, Thresholds
from defan_pytest.metrics.registry import ASKED, METRICS, Metric
from defan_pytest.metrics.summary import OVERALL
from defan_pytest.verdicts import RC_NO_CLAIM, no_claim_groups

__all__ = [
    "FAIL",
    "INSUFFICIENT",
    "INTERVAL",
    "NOT_APPLICABLE",
    "PASS",
    "POINT",
    "Verdict",
    "check",
    "passed_by_interval",
    "UNDECIDED",
    "count_of",
    "explain_rc",
    "format_figure",
    "format_limit",
    "interval_text",
    "overall_figures",
    "verdict_line",
]

Status = Literal["pass", "fail", "insufficient", "n/a", "undecided"]

PASS: Status = "pass"
#: A figure beyond its limit whose interval reaches the limit, under ``--defan-decide=interval``:
#: not a failure, and no pass either (issue 33: it was written "pass").
UNDECIDED: Status = "undecided"
FAIL: Status = "fail"
INSUFFICIENT: Status = "insufficient"
NOT_APPLICABLE: Status = "n/a"

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


def format_figure(x: float) -> str:
    """A figure as messages and tables print it: 2 decimals."""
    return f"{x:.2f}"


def format_limit(limit: float) -> str:
    """A limit as the user wrote it: 2 decimals, or more if the file has more (0.355)."""
    text = format_figure(limit)
    return text if float(text) == limit else f"{limit:g}"


def _format_pair(value: float, limit: float) -> tuple[str, str]:
    """Format a figure and its limit so that different numbers never print the same."""
    v, lim = format_figure(value), format_limit(limit)
    if value == limit:
        return lim, lim  # equal numbers print equal, also for a limit such as 0.355
    if v != lim:
        return v, lim
    for digits in range(3, 7):
        v = f"{value:.{digits}f}"
        if v != f"{limit:.{digits}f}":
            return v, lim
    return repr(value), lim


def _interval(ci: Any) -> tuple[float, float] | None:
    if isinstance(ci, Sequence) and not isinstance(ci, str) and len(ci) == 2 and None not in ci:
        return float(ci[0]), float(ci[1])
    return None


def interval_text(ci: Any) -> str | None:
    """A report interval ``[lo, hi]`` as ``lo-hi`` with 2 decimals; ``None`` when there is none."""
    found = _interval(ci)
    return None if found is None else f"{format_figure(found[0])}-{format_figure(found[1])}"


# --------------------------------------------------------------------------------------------
# The gate
# --------------------------------------------------------------------------------------------


def count_of(figs: Mapping[str, Any], key: str) -> int:
    """The count ``key`` of a scope's figures (0 when it is missing or not a number)."""
    value = figs.get(key)
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _groups(count: int, scored: bool = True) -> str:
    noun = "scored group" if scored else "group"
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _samples_verdict(scope: str, groups: int, min_samples: int) -> Verdict:
    if groups < min_samples:
        return Verdict(scope, "samples", INSUFFICIENT, groups, min_samples,
                       f"{scope}: {_groups(groups)} < min_samples {min_samples}: not judged")
    return Verdict(scope, "samples", PASS, groups, min_samples,
                   f"{scope}: {_groups(groups)} >= min_samples {min_samples}")


def _too_few(scope: str, metric: Metric, value: float, limit: float, figs: Mapping[str, Any],
             min_samples: int | None) -> Verdict | None:
    """The ``insufficient`` verdict of a metric whose scope has fewer groups than
    ``min_samples`` of the kind its denominator counts (scored, or asked), else ``None``."""
    if min_samples is None:
        return None
    if metric.denominator == ASKED:
        asked = count_of(figs, "groups")
        if asked >= min_samples:
            return None
        shown = _groups(asked, scored=False)
    else:
        scored = _scored_groups(figs)
        if scored >= min_samples:
            return None
        shown = _groups(scored)
    return Verdict(scope, metric.name, INSUFFICIENT, value, limit,
                   f"{scope}: {metric.label} not judged: {shown} < min_samples {min_samples}")


def _scored_groups(figs: Mapping[str, Any]) -> int:
    # min_samples counts paraphrase groups, the unit of the intervals: fifteen answers to one
    # question are not fifteen samples.
    return count_of(figs, "scored_groups") if "scored_groups" in figs else count_of(figs, "groups")


def _metric_verdict(scope: str, metric: Metric, figs: Mapping[str, Any], limit: float,
                    min_samples: int | None, decide: str) -> Verdict:
    """The verdict of one metric's limit in one scope."""
    key = metric.threshold_key
    raw = figs.get(metric.name)
    value = float(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) else None
    if value is None:
        return Verdict(scope, metric.name, NOT_APPLICABLE, None, limit,
                       f"{scope}: {metric.label} n/a ({metric.missing}): {key} {format_limit(limit)} not judged")
    short = _too_few(scope, metric, value, limit, figs, min_samples)
    if short is not None:
        return short
    ok = metric.passes(value, limit)
    undecided = False
    if decide == INTERVAL and not ok:
        # Fail only when the whole interval lies beyond the limit: a small sample whose point
        # estimate crosses the limit by chance does not fail the gate.
        ci = _interval(figs.get(metric.ci_key))
        if ci is not None and not (ci[1] < limit if metric.higher_is_better else ci[0] > limit):
            ok, undecided = True, True
    if metric.higher_is_better:
        op = ">=" if metric.passes(value, limit) else "<"
    else:
        op = "<=" if metric.passes(value, limit) else ">"
    v_text, lim_text = (metric.format(value), metric.format(limit)) if metric.unit else _format_pair(value, limit)
    details = [f"95% CI {ci_text}"] if (ci_text := interval_text(figs.get(metric.ci_key))) else []
    details.append(f"{metric.count_label}={count_of(figs, metric.count_key)}")
    tail = "; not decided: the interval reaches the limit" if undecided else ""
    return Verdict(scope, metric.name, UNDECIDED if undecided else PASS if ok else FAIL, value, limit,
                   f"{scope}: {metric.label} {v_text} {op} {key} {lim_text} ({', '.join(details)}){tail}")


def _judge_scope(scope: str, figs: Mapping[str, Any], limits: Limits, decide: str = POINT) -> list[Verdict]:
    min_samples = limits.min_samples
    verdicts = [] if min_samples is None else [_samples_verdict(scope, _scored_groups(figs), min_samples)]
    # The registry is read now, not at import, so a metric registered later is judged too.
    for metric in METRICS.values():
        limit = limits.get(metric.threshold_key)
        if limit is not None:
            verdicts.append(_metric_verdict(scope, metric, figs, float(limit), min_samples, decide))
    if count_of(figs, "n") and not count_of(figs, "scored") and verdicts:
        return _every_call_failed(scope, figs, verdicts)
    return verdicts


def _every_call_failed(scope: str, figs: Mapping[str, Any], verdicts: list[Verdict]) -> list[Verdict]:
    """A scope none of whose calls gave an answer fails, whatever its limits allow: nothing
    was judged, and a permissive ``max_error_rate`` (or an interval that reaches it on a tiny
    sample) must not let a run of failed calls pass.  The error rate's verdict says so."""
    n = count_of(figs, "n")
    message = f"{scope}: every call failed ({n} of {n}): nothing was scored, so nothing can pass"
    out = [v for v in verdicts if v.metric != "error_rate"]
    limit = next((v.limit for v in verdicts if v.metric == "error_rate"), 1.0)
    return [*out, Verdict(scope, "error_rate", FAIL, 1.0, limit, message)]


def passed_by_interval(verdict: Verdict) -> bool:
    """Whether ``verdict`` passed a figure that is beyond its limit: ``--defan-decide=interval``
    passes it when its interval reaches the limit ("not decided")."""
    metric = METRICS.get(verdict.metric)
    value = verdict.value
    return verdict.status == UNDECIDED


def overall_figures(summary: Mapping[str, Any], figure: str) -> dict[str, Any]:
    """The overall figures the gate judges (``figure``: ``"mean"`` or ``"pooled"``), with every
    metric's message count: the mean of domains has no group count of its own (nor any count a
    metric publishes), so it gets the sum over the domains (its RC rests on the RC groups of all
    domains together)."""
    overall = summary.get(OVERALL) or {}
    figs = dict(overall.get(figure) or {})
    domains = summary.get("domains") or {}
    for metric in METRICS.values():
        if metric.count_key not in figs:
            figs[metric.count_key] = sum(count_of(d, metric.count_key) for d in domains.values())
    return figs


def check(summary: Mapping[str, Any], thresholds: Thresholds, decide: str = POINT) -> list[Verdict]:
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
    overall = overall_figures(summary, thresholds.overall_figure)
    verdicts.extend(_judge_scope(OVERALL, overall, thresholds.for_overall(), decide))
    return verdicts


def explain_rc(verdicts: Sequence[Verdict], records: Sequence[Any]) -> list[Verdict]:
    """The gate's verdicts, a failed RC saying how many of its groups had a response with no
    claim: such a group is inconsistent by the contract, which fifteen identical refusals would
    not otherwise explain."""
    by_domain = no_claim_groups(r.to_json() if hasattr(r, "to_json") else r for r in records)
    out = []
    for v in verdicts:
        if v.metric == "rc" and v.status == FAIL:
            parts = by_domain.values() if v.scope == "overall" else [by_domain.get(v.scope, (0, 0))]
            counted, no_claim = sum(p[0] for p in parts), sum(p[1] for p in parts)
            if no_claim:
                v = replace(v, message=(
                    f"{v.message}; {no_claim} of {counted} groups have a response with no claim: {RC_NO_CLAIM}"))
        out.append(v)
    return out


def verdict_line(thresholds: Any, scope: str, verdicts: Sequence[Any]) -> int:
    """The 0-based line of the thresholds file a scope's verdict points at: the key that
    failed (or, when all passed, the first key judged), 0 when it cannot be told."""
    if thresholds is None or not verdicts:
        return 0
    bad = [v for v in verdicts if v.status in (FAIL, INSUFFICIENT)]
    verdict = (bad or list(verdicts))[0]
    if verdict.metric == "samples":
        key = "min_samples"
    elif verdict.metric in METRICS:
        key = METRICS[verdict.metric].threshold_key
    else:
        return 0
    line = thresholds.line_of(scope, key)
    return int(line) - 1 if line else 0
