"""Per-domain and overall DefAn figures with group-level 95% intervals.

The figures are the registered metrics (:mod:`defan_pytest.metrics.registry`); the built-in ones
(:mod:`defan_pytest.metrics.builtin`) follow ``SCORING.md`` ("Per domain"):

- **FCH** = responses not correct / responses scored,
- **PMH** = responses not aligned / responses scored,
- **RC** = consistent paraphrase groups / groups of more than one response with every response
  scored (``None`` for a domain without such groups, e.g. ``math``, whose groups are singletons),
- **error rate** = errored responses / responses asked.

An errored response (``error`` set: the model call failed) is never a hallucination: it is left
out of the FCH and PMH numerators *and* denominators and only counts towards the error rate.
A scored response whose ``correct`` (``aligned``) is ``None`` counts as not correct (not
aligned): "no claim is never correct", and an unknown alignment must not flatter a model.

Why the intervals are group-level, small-sample-safe and exact, and how the overall figures
combine the domains: ``docs/statistics.md`` ("How the figures' intervals are made").

The report lists each scope's counts (:data:`~defan_pytest.metrics.registry.SCOPE_COUNTS`, then
the counts each metric publishes, in registration order), then every metric's figure and
interval, in registration order.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from defan_pytest.dataset import DOMAINS
from defan_pytest.metrics.groups import Figure, Group, Interval, Share, errored, rounds, share
from defan_pytest.metrics.registry import METRICS, Metric
from defan_pytest.scoring.equivalence import group_consistent
from defan_pytest.stats.design import exact, rate_design
from defan_pytest.stats.intervals import cluster_effective_size, korn_graubard, mean_interval
from defan_pytest.verdicts import outcome_of

__all__ = [
    "CONFIDENCE",
    "DOMAIN_ORDER",
    "OVERALL",
    "cluster_interval",
    "cluster_rate",
    "collect_groups",
    "stratified_rate_interval",
    "domain_sort_key",
    "summarize",
]

#: The confidence of every interval of the summary.
CONFIDENCE = 0.95

#: DefAn domain ids in registry (file) order; the report lists domains in this order, then any
#: other (user) domain alphabetically.
DOMAIN_ORDER: tuple[str, ...] = tuple(DOMAINS)

#: The summary's key of the all-domains figures, and the gates' name of that scope.
OVERALL = "overall"


def domain_sort_key(name: str) -> tuple[int, int, str]:
    """The report's order of domains: :data:`DOMAIN_ORDER`, then other names alphabetically."""
    try:
        return (0, DOMAIN_ORDER.index(name), "")
    except ValueError:
        return (1, 0, name)


# --------------------------------------------------------------------------------------------
# A rate over paraphrase groups
# --------------------------------------------------------------------------------------------


def _cluster(units: Sequence[tuple[int, int]], confidence: float) -> tuple[Interval, float] | None:
    """The interval of :func:`cluster_interval` and the degrees of freedom behind it."""
    size = cluster_effective_size(units)
    if size is None:
        return None
    events, total, g, n_eff = size
    # The variance is estimated from G groups: G - 1 degrees of freedom (1 for a single group,
    # the least the t family allows, which makes the interval all but [0, 1]).
    df = float(max(g - 1, 1))
    return korn_graubard(events, n_eff, total, df, confidence), df


def cluster_interval(
    units: Sequence[tuple[int, int]], confidence: float = CONFIDENCE
) -> tuple[float, float] | None:
    """Interval at ``confidence`` for ``sum(y) / sum(n)`` over clusters ``units = [(y_g, n_g), ...]``.

    The effective sample size from the cluster-robust design effect (shrunk while the rarer
    outcome is scarce), on G - 1 degrees of freedom, and the Korn-Graubard (Clopper-Pearson)
    interval at it: see the module docstring. Clusters with ``n_g == 0`` carry no information
    and are ignored (they would otherwise inflate G). Returns ``None`` when no response is
    counted at all.
    """
    found = _cluster(units, confidence)
    return None if found is None else found[0]


def stratified_rate_interval(strata: Sequence[Sequence[tuple[Share, int]]],
                             confidence: float = CONFIDENCE) -> Interval | None:
    """The interval of the unweighted mean over ``strata`` (domains) of their rates
    ``sum(y) / sum(n)`` over groups ``(y_g, n_g)``: the Korn-Graubard interval at the effective
    size and degrees of freedom of the stratified cluster variance
    (:func:`defan_pytest.stats.design.rate_design`). One stratum is :func:`cluster_interval`.
    ``None`` when nothing is counted."""
    design = rate_design(strata)
    if design is None:
        return None
    return korn_graubard(min(max(design.estimate, 0.0), 1.0), design.n_eff, 1.0, design.df, confidence)


def cluster_rate(units: Sequence[tuple[Any, int]], events_key: str | None = None) -> Figure:
    """The :class:`~defan_pytest.metrics.registry.Figure` of a rate ``sum(y) / sum(n)`` over
    clusters ``[(y_g, n_g), ...]``.

    The value is the exact ratio (``None`` when ``sum(n)`` is 0) and the interval the
    :func:`cluster_interval` of the units (with its degrees of freedom). ``y_g`` may be a
    fraction (prompts asked more than once count the share of their asks). With
    ``events_key`` the figure also publishes ``sum(y)`` under that name (FCH publishes
    ``fch_count`` so: a whole number, or a number with ``--defan-repeat``). Most metrics are
    such a rate over the paraphrase groups, with one unit per group.
    """
    kept = tuple((exact(y), int(n)) for y, n in units if n > 0)
    events = sum(y for y, _ in kept)
    total = sum(n for _, n in kept)
    counts = {events_key: count_value(events)} if events_key is not None else {}
    found = _cluster(kept, CONFIDENCE)
    if found is None:
        return Figure(None, None, counts)
    interval, df = found
    return Figure(float(events / total), interval, counts, df, kept)


def count_value(value: Any) -> float:
    """A count as the report writes it: a whole number as an ``int``, a sum of shares (with
    ``--defan-repeat``) rounded to 4 decimals."""
    value = exact(value)
    return int(value) if isinstance(value, int) or value.denominator == 1 else round(float(value), 4)


# --------------------------------------------------------------------------------------------
# Counting
# --------------------------------------------------------------------------------------------


def collect_groups(records: Iterable[Mapping[str, Any]], reduce: str = "mean") -> dict[tuple[str, Any], Group]:
    """The paraphrase groups of ``records``, keyed by ``(domain, group key)``, in the order
    they first appear, with :attr:`~defan_pytest.metrics.registry.Group.consistent` decided
    for the groups that count for RC. A record without a group key is its own group.
    ``reduce``: how a prompt's asks (``--defan-repeat``) make its value
    (:data:`~defan_pytest.metrics.groups.Reduce`)."""
    groups: dict[tuple[str, Any], Group] = {}
    for index, rec in enumerate(records):
        domain = rec.get("domain")
        if not isinstance(domain, str) or not domain:
            raise ValueError(f"record {index} has no domain: {dict(rec)!r}")
        key = rec.get("group")
        if key is None:
            # No group key: the record is its own group (never merged with another).
            key = ("__row__", index)
        # Keyed by domain too: group keys are meant to be unique across domains, but a user set
        # that reuses "q1" in two domains must not merge two different questions.
        gkey = (domain, key)
        grp = groups.get(gkey)
        if grp is None:
            grp = groups[gkey] = Group(domain=domain, type=str(rec.get("type") or ""))
        grp.size += 1
        grp.records.append(rec)
        grp.claims.append(None if errored(rec) else rec.get("claim"))
        grp.errored_asks += share(rec, errored, "mean", asked=True) or 0
        # A scored prompt whose ``correct`` (``aligned``) is not True is not correct (not
        # aligned): no claim is never correct. Its value is the share of its scored asks.
        wrong = share(rec, _wrong, reduce)
        if wrong is None:
            grp.errors += 1
            continue
        grp.not_correct += wrong
        grp.not_aligned += share(rec, _misaligned, reduce) or 0
    for grp in groups.values():
        if grp.counts_for_rc:
            grp.consistent = group_consistency(grp.type, grp.records, reduce)
    return groups


def _wrong(record: Mapping[str, Any]) -> bool:
    return outcome_of(record).wrong


def _misaligned(record: Mapping[str, Any]) -> bool:
    return outcome_of(record).misaligned


def group_consistency(answer_type: str, records: Sequence[Mapping[str, Any]], reduce: str = "mean") -> Share | None:
    """Whether a group's answers agree (RC's event), round by round of ``--defan-repeat``
    (round ``k``: each prompt's ``k``-th ask): the share of its rounds with at least two
    answered asks that agree (``reduce="mean"``), or 1 only when every such round agrees
    (``"all"``); ``None`` when no round has two answered asks."""
    verdicts = []
    for asked in rounds(records):
        claims = [a.get("claim") for a in asked if not errored(a)]
        if len(claims) > 1:
            verdicts.append(bool(group_consistent(answer_type, claims)))
    if not verdicts:
        return None
    if reduce == "all":
        return int(all(verdicts))
    return int(verdicts[0]) if len(verdicts) == 1 else Fraction(sum(verdicts), len(verdicts))


def _ci(interval: tuple[float, float] | None) -> list[float] | None:
    if interval is None:
        return None
    return [round(interval[0], 4), round(interval[1], 4)]


# A figure's unrounded interval, its degrees of freedom and its per-group units, kept for the
# overall mean.
_Raw = dict[str, tuple[Interval | None, float, tuple[tuple[Share, int], ...] | None]]


def _figures(groups: Sequence[Group], metrics: Sequence[Metric]) -> tuple[dict[str, Any], _Raw]:
    """Figures for a set of groups, plus the unrounded intervals (for the overall mean)."""
    n = sum(g.size for g in groups)
    errors = sum(g.errors for g in groups)
    rc_groups = [g for g in groups if g.counts_for_rc]
    out: dict[str, Any] = {
        "n": n,
        "scored": n - errors,
        "errors": errors,
        "groups": len(groups),
        # Groups with at least one scored response: what min_samples counts (the unit of the
        # intervals is the group, not the response).
        "scored_groups": sum(1 for g in groups if g.scored > 0),
        "rc_groups": len(rc_groups),
        "consistent_groups": count_value(sum(g.consistent or 0 for g in rc_groups)),
    }
    counted = [(metric, metric.count(groups)) for metric in metrics]
    # All counts before all figures: the report's key order (saved reports are compared).
    for metric, fig in counted:
        out.update((key, fig.counts[key]) for key in metric.publishes)
    raw: _Raw = {}
    for metric, fig in counted:
        out[metric.name] = fig.value
        out[metric.ci_key] = _ci(fig.interval)
        raw[metric.name] = (fig.interval, math.inf if fig.df is None else fig.df, fig.units)
    return out, raw


def _mean(
    per_domain: Sequence[tuple[dict[str, Any], _Raw]],
    totals: Mapping[str, Any],
    metrics: Sequence[Metric],
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "domains": len(per_domain),
        "rc_domains": sum(1 for figs, _ in per_domain if figs["rc"] is not None),
        "n": totals["n"],
        "scored": totals["scored"],
        "errors": totals["errors"],
        "groups": totals["groups"],
        "scored_groups": totals["scored_groups"],
    }
    for metric in metrics:
        rate = metric.name
        if metric.unit:
            # An amount (the run's cost, the p95 of its calls) is counted over every record: the
            # mean of domains' costs is no cost the run had.
            out[rate], out[metric.ci_key] = totals.get(rate), None
            continue
        # A domain without the figure (no scored response; no RC groups) has nothing to average.
        present: list[tuple[float, float, float, float]] = []
        strata: list[tuple[tuple[Share, int], ...]] = []
        for figs, raw in per_domain:
            value, (interval, df, units) = figs[rate], raw[rate]
            if value is not None and interval is not None:
                present.append((value, interval[0], interval[1], df))
                if units is not None:
                    strata.append(units)
        if not present:
            out[rate] = None
            out[metric.ci_key] = None
            continue
        out[rate], out[metric.ci_key] = _mean_figure(present, strata)
    return out


def _mean_figure(present: Sequence[tuple[float, float, float, float]],
                 strata: Sequence[Sequence[tuple[Share, int]]]) -> tuple[float, list[float] | None]:
    """The mean of the domains' figures and its interval: from the stratified cluster variance
    of the groups' counts (each domain a stratum; a domain of one group centred at the mean),
    never from the domains' intervals clipped to [0, 1]."""
    mean = sum(value for value, _, _, _ in present) / len(present)
    if len(present) == 1:
        # One domain: the mean is its figure, and its interval the domain's own.
        return mean, _ci((present[0][1], present[0][2]))
    if len(strata) == len(present):
        interval = stratified_rate_interval(strata, CONFIDENCE)
        if interval is not None:
            return mean, _ci(interval)
    # A registered metric that is not a rate over groups: each side of a domain interval read
    # as quantile(df_d) SE on that side, independent domains adding variances.
    _, lo, hi, _ = mean_interval(present, CONFIDENCE)
    return mean, _ci((max(0.0, lo), min(1.0, hi)))


def summarize(records: Iterable[Mapping[str, Any]], reduce: str = "mean") -> dict[str, Any]:
    """Summarize per-response records into per-domain and overall figures.

    Each record is a plain dict with ``id``, ``domain``, ``group`` (the paraphrase-group key,
    unique across domains), ``type``, ``claim``, ``aligned``, ``correct`` and ``error``.

    Returns ``{"domains": {domain: figures}, "overall": {"mean": ..., "pooled": ...}}``. Domain
    figures: the scope counts (``n``, ``scored``, ``errors``, ``groups``, ``scored_groups``,
    ``rc_groups``, ``consistent_groups``), the counts each registered metric publishes
    (``fch_count``, ``pmh_count``), then for each metric of
    :data:`~defan_pytest.metrics.registry.METRICS` (``fch``, ``pmh``, ``rc``, ``error_rate``,
    and any registered later) its figure and a ``<name>_ci`` ``[lo, hi]`` (95%, 4 decimals); a
    figure that cannot be computed is ``None`` together with its interval. ``pooled`` has the
    same keys over all records; ``mean`` has ``domains``, ``rc_domains``, the total counts
    ``n``/``scored``/``errors``/``groups``/``scored_groups`` and the mean of each figure with
    its interval. Domains are ordered by :func:`domain_sort_key`. See the module docstring for
    the interval method.

    A record with ``repeats`` (``--defan-repeat``'s extra asks) counts every answer: its FCH
    and PMH are the share of its answered asks that are wrong (misaligned) with ``reduce``
    ``"mean"``, or 1 when any is (``"all"``), and its group's RC is judged round by round
    (:func:`group_consistency`).
    """
    # One snapshot of the registry, so every scope of one summary has the same keys even if a
    # metric is registered while this runs.
    metrics = tuple(METRICS.values())
    groups = collect_groups(records, reduce)

    by_domain: dict[str, list[Group]] = {}
    for grp in groups.values():
        by_domain.setdefault(grp.domain, []).append(grp)

    per_domain: list[tuple[dict[str, Any], _Raw]] = []
    domains: dict[str, dict[str, Any]] = {}
    for name in sorted(by_domain, key=domain_sort_key):
        figs, raw = _figures(by_domain[name], metrics)
        domains[name] = figs
        per_domain.append((figs, raw))

    pooled, _ = _figures(list(groups.values()), metrics)
    return {
        "domains": domains,
        OVERALL: {"mean": _mean(per_domain, pooled, metrics), "pooled": pooled},
    }
