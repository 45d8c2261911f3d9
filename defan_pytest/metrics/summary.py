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

Why the intervals look the way they do
--------------------------------------

DefAn asks every question fifteen ways. Those fifteen responses are not independent draws: a
model that does not know an answer tends to get all paraphrases wrong together. A binomial
interval over responses would therefore pretend to have fifteen times the information it has
and come out far too narrow. The honest unit is the paraphrase group, so every rate is treated
as a ratio estimator over clusters:

    p = sum_g y_g / sum_g n_g        (y_g: events in group g, n_g: responses counted in g)

Its cluster-robust (linearization, "sandwich") variance, with the usual small-sample factor
G/(G-1), is

    V = G/(G-1) * sum_g (y_g - p*n_g)^2 / N^2          (N = sum_g n_g)

and ``deff = V / (p(1-p)/N)``, the *design effect*, says how much clustering costs: the same
figure from ``n_eff = N / deff`` independent responses would be as precise. Three corrections
then make the interval keep its promised 95% at the 5-10 groups per domain of a pull-request
sample, where a plain Wilson interval at ``n_eff`` (what this module used before) covered the
true rate only 85-93% of the time in simulations with 15 answers per group and realistic
between-group variation (``bench/regression_stability.py``):

1. **Few groups with the rare outcome cannot show how it clusters.** The estimated design
   effect rests on the ``k`` groups that carry the rarer outcome (any event when events are
   rare, any non-event when they are common): two hallucinations that happen to fall in
   different groups look independent (``deff`` near 1) even when the model's failures cluster
   strongly, and three groups of fifteen wrong answers are three observations, not forty-five.
   So the estimate, floored at 1 (clustering can only lose information, ``n_eff <= N``), is
   averaged with the worst case ``sum n_g^2 / N`` (every group one observation; the mean group
   size only when the sizes are equal), weighted ``k`` to 1
   (:func:`defan_pytest.stats.design.shrink_design_effect`, :func:`defan_pytest.stats.design.rate_design`):
   as if one more group had been seen clustered as badly as possible. With none (``p`` = 0 or
   1) the worst case is used. When ``V`` is exactly 0 with 0 < p < 1 (every group has the same
   rate) the estimate is design effect 1, then shrunk: reading it as the worst case made one
   flip more look *better* (the decision was not monotone). ``V`` is computed from integers, so
   "exactly 0" is exact, not a float accident. With a single group (G = 1) nothing can be
   estimated across groups: ``n_eff = 1`` (not estimable; the interval is all but [0, 1]).
2. **The variance is estimated from G groups**, so its quantile is Student's t on ``G - 1``
   degrees of freedom (1 for a single group), not the normal 1.96: 2.78 at 5 groups, 2.26 at
   10, 2.05 at 30, 1.98 at 100 (:func:`defan_pytest.stats.distributions.t_quantile`, written there
   because SciPy is not a dependency).
3. **Exact rather than Wilson at the effective size**: the Korn-Graubard interval, i.e. the
   Clopper-Pearson interval at ``n* = n_eff * (z / t)^2`` with ``p * n*`` events (the factor
   makes its normal approximation ``p -+ t * se``), which is never below its nominal coverage
   for a binomial count and, like Wilson, never collapses to a point near 0 or 1 (a strong
   model's FCH on an easy domain).

Simulated (group rate ~ Beta with mean 0.05-0.5 and intra-class correlation 0.05-0.5, 15
answers per group, 4,000 replicates a cell) it covered the true rate 95.2-100% of the time at 5,
10, 30 and 100 groups, where the old interval covered 84-95%; ``tests/test_regression.py``
asserts at least 0.94 over a grid. At 100 groups it is
4-10% wider than the old interval (6% on average), at 30 groups 16%, at 10 groups 1.5 times and
at 5 groups twice as wide: that is what 5-10 questions can say about a domain.

RC is a figure over groups, which are independent: the number of consistent groups is exactly
binomial, and its interval is the Clopper-Pearson interval over the groups that count for RC
(Wilson's dipped to 0.84-0.92 coverage at 5-10 groups for some rates). The error rate uses the
same cluster-robust interval as FCH and PMH, over all groups (errors cluster too: a provider
outage takes out a run of calls).

Everything is deterministic (no bootstrap), so the same records always give the same report.
Intervals are ``[lo, hi]`` at :data:`CONFIDENCE` (95%) rounded to 4 decimals; point estimates
are exact ratios.

Overall figures
---------------

``overall["mean"]`` is the unweighted mean of the domain figures, as the paper reports it (RC over
the domains that have RC). Its interval comes from the stratified cluster variance of every
group's counts, each domain a stratum (:func:`stratified_rate_interval`,
:func:`defan_pytest.stats.design.rate_design`): unclipped, on ``sum(G_d - 1)`` degrees of freedom,
a domain of a single group centred at the overall mean (survey software's "lonely cluster"
adjustment), the Korn-Graubard interval at its effective size. It is never rebuilt from the
domains' intervals clipped to [0, 1]: that read a domain of one group as nearly exact and covered
35% at one group a domain. A registered metric whose figure carries no per-group ``units`` keeps
the side-by-side combination of its domains' intervals (:func:`defan_pytest.stats.intervals.mean_interval`),
clipped to [0, 1]. ``overall["pooled"]``
computes the same figures over all records together, with all groups as clusters. The two differ
when domains differ in size: the pooled figure is dominated by the big domains, the mean is not.

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
