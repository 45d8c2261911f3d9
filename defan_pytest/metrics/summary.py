"""Per-domain and overall DefAn figures with group-level 95% intervals, and the metric registry.

The built-in figures follow ``SCORING.md`` ("Per domain"):

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

1. **Few rare responses cannot show how they cluster.** The estimated design effect rests on
   the ``k = min(Y, N - Y)`` responses of the rarer outcome. Two hallucinations that happen to
   fall in different groups look independent (``deff`` near 1) even when the model's failures
   cluster strongly, and the interval is then far too narrow exactly when the rate is low. So
   the estimate, floored at 1 (clustering can only lose information, ``n_eff <= N``), is
   averaged with the worst case ``N/G`` (every group one observation), weighted ``k`` to 1
   (:func:`defan_pytest.stats.intervals.shrink_design_effect`): as if one more rare response had been
   seen clustered as badly as possible
   (:func:`defan_pytest.stats.intervals.cluster_effective_size`). With hundreds of rare responses this changes nothing;
   with none (``p`` = 0 or 1), or when ``V`` is exactly 0 (every group has the same rate: the
   variance says nothing), ``n_eff = G``. ``V`` is computed from integers, so "exactly 0" is
   exact, not a float accident. With a single group (G = 1) nothing can be estimated across
   groups: ``n_eff = 1``.
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
the domains that have RC). Its interval treats domains as independent: each domain interval is
read as standard errors on each side, ``(p_d - lo_d) / q_d`` below and ``(hi_d - p_d) / q_d``
above, with ``q_d`` the quantile that domain's interval was built with (t on its ``G_d - 1``
degrees of freedom; normal for RC's exact interval); independent domains add variances, and each
side of the mean's interval is ``q * sqrt(sum se_d^2) / D`` with ``q`` the t quantile on the
Welch-Satterthwaite degrees of freedom of that sum (:func:`defan_pytest.stats.intervals.mean_interval`),
clipped to [0, 1]; with one domain this is that domain's own interval. ``overall["pooled"]``
computes the same figures over all records together, with all groups as clusters. The two differ
when domains differ in size: the pooled figure is dominated by the big domains, the mean is not.

Metrics are declared once
-------------------------

Each figure is one :class:`Metric` in the registry :data:`METRICS`: its summary key, its label,
whether higher is better, the function that counts it from the paraphrase groups of one scope,
and how the gate and the tables present it. Everything else is derived from that declaration
when it is used - the ``thresholds.toml`` keys (``max_<name>`` when lower is better,
``min_<name>`` when higher is better), the gate's checks and messages, the columns of both
tables and the ``<name>``/``<name>_ci`` keys of the report - so adding a metric is one
:func:`register_metric` call plus its counting function, and a metric registered by a user or a
plugin at any time before the run is judged like a built-in one.

The built-ins are registered in the order FCH, PMH, RC, error rate; the report lists each
scope's counts (:data:`SCOPE_COUNTS`, then the counts each metric publishes, in registration
order), then every metric's figure and interval, in registration order.
"""
from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from defan_pytest.dataset import DOMAINS
from defan_pytest.stats.intervals import clopper_pearson, cluster_effective_size, korn_graubard, mean_interval

__all__ = [
    "ASKED",
    "CONFIDENCE",
    "DOMAIN_ORDER",
    "Denominator",
    "METRICS",
    "SCOPE_COUNTS",
    "SCORED",
    "Z",
    "Figure",
    "Group",
    "Metric",
    "cluster_interval",
    "cluster_rate",
    "register_metric",
    "registered_metric",
    "summarize",
    "unregister_metric",
    "wilson_interval",
]

#: The confidence of every interval of the summary.
CONFIDENCE = 0.95

#: Two-sided 95% normal quantile, rounded: the default of :func:`wilson_interval`. The summary's
#: own intervals take exact quantiles (Student t where a variance is estimated).
Z = 1.96

#: DefAn domain ids in registry (file) order; the report lists domains in this order, then any
#: other (user) domain alphabetically.
DOMAIN_ORDER: tuple[str, ...] = tuple(DOMAINS)

#: The counts every scope of the report starts with, before any metric's own counts. RC's group
#: counts are here, not published by the RC metric, because group consistency is a fact about a
#: paraphrase group that :func:`summarize` establishes once (any metric may read it), and because
#: saved reports list them right after ``groups``.
SCOPE_COUNTS: tuple[str, ...] = (
    "n", "scored", "errors", "groups", "scored_groups", "rc_groups", "consistent_groups",
)

# Keys of the overall mean that are not metric keys either.
_MEAN_COUNTS: tuple[str, ...] = ("domains", "rc_domains")

Interval = tuple[float, float]

#: What a metric's denominator is, which decides how ``min_samples`` applies to it in the gate:
#: the responses *scored* (errored ones left out) or the responses *asked*.
Denominator = Literal["scored", "asked"]
SCORED: Denominator = "scored"
ASKED: Denominator = "asked"


def wilson_interval(p: float, n: float, z: float = Z) -> tuple[float, float]:
    """Wilson score interval for a proportion ``p`` observed on (effective) sample size ``n``.

    ``n`` may be fractional (an effective sample size). Returns unrounded ``(lo, hi)`` clipped
    to [0, 1]. ``n`` must be positive.
    """
    if n <= 0:
        raise ValueError(f"wilson_interval needs n > 0, got {n!r}")
    z2 = z * z
    denom = 1.0 + z2 / n
    center = (p + z2 / (2.0 * n)) / denom
    half = (z / denom) * math.sqrt(max(p * (1.0 - p) / n + z2 / (4.0 * n * n), 0.0))
    return max(0.0, center - half), min(1.0, center + half)


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


# --------------------------------------------------------------------------------------------
# What a metric counts from, and what it returns
# --------------------------------------------------------------------------------------------


def _is_error(rec: Mapping[str, Any]) -> bool:
    # An empty string is what CSV/JSONL converters write for "no error"; only a message counts.
    return bool(rec.get("error"))


@dataclass
class Group:
    """One paraphrase group of one domain, as a metric's counting function sees it.

    ``records`` are the group's per-response records in input order (the caller's mappings, not
    copies: read them, never change them). ``size``, ``errors``, ``not_correct`` and
    ``not_aligned`` are running counts over them; ``claims`` has one entry per response
    (``None`` for an errored one). ``consistent`` is set by :func:`summarize` for the groups that
    count for RC (:attr:`counts_for_rc`) and stays ``None`` for the others.
    """

    domain: str
    type: str
    size: int = 0
    errors: int = 0
    not_correct: int = 0
    not_aligned: int = 0
    claims: list[str | None] = field(default_factory=list)
    consistent: bool | None = None
    records: list[Mapping[str, Any]] = field(default_factory=list)

    @property
    def scored(self) -> int:
        """Responses that were scored (asked and not errored)."""
        return self.size - self.errors

    @property
    def counts_for_rc(self) -> bool:
        """True for a group of more than one response with every response scored."""
        return self.size > 1 and self.errors == 0

    @property
    def scored_records(self) -> list[Mapping[str, Any]]:
        """The records of the responses that were scored, in input order."""
        return [rec for rec in self.records if not _is_error(rec)]


@dataclass(frozen=True)
class Figure:
    """What a metric's counting function returns for one scope (a domain, or all records).

    ``value`` is the point estimate in [0, 1] (``None`` when it cannot be computed, e.g. nothing
    to count), ``interval`` its unrounded 95% ``(lo, hi)`` (``None`` together with the value),
    and ``counts`` the counts the metric publishes in the report, exactly the names listed in
    :attr:`Metric.publishes`. ``df``: the degrees of freedom of the variance behind the
    interval (``G - 1`` for a rate over G groups), which the overall mean's interval needs to
    combine domains; ``None`` when nothing was estimated (an exact interval), read as a normal
    quantile.
    """

    value: float | None
    interval: Interval | None = None
    counts: Mapping[str, int] = field(default_factory=dict)
    df: float | None = None


def cluster_rate(units: Sequence[tuple[int, int]], events_key: str | None = None) -> Figure:
    """The :class:`Figure` of a rate ``sum(y) / sum(n)`` over clusters ``[(y_g, n_g), ...]``.

    The value is the exact ratio (``None`` when ``sum(n)`` is 0) and the interval the
    :func:`cluster_interval` of the units (with its degrees of freedom). With ``events_key``
    the figure also publishes ``sum(y)`` under that name (FCH publishes ``fch_count`` so). Most
    metrics are such a rate over the paraphrase groups, with one unit per group.
    """
    events = sum(int(y) for y, _ in units)
    total = sum(int(n) for _, n in units)
    counts = {events_key: events} if events_key is not None else {}
    found = _cluster(units, CONFIDENCE)
    if found is None:
        return Figure(None, None, counts)
    interval, df = found
    return Figure(events / total, interval, counts, df)


# --------------------------------------------------------------------------------------------
# The declaration of a metric
# --------------------------------------------------------------------------------------------

# A summary key (and so a thresholds.toml key after max_/min_): a TOML bare key and a valid
# Python identifier, so ``limits.max_<name>`` works too.
_KEY = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class Metric:
    """The one declaration of a figure: how it is counted, judged and shown.

    - ``name``: the summary key (``"fch"``), also :attr:`defan_pytest.gates.level.Verdict.metric`; the
      report gets ``<name>`` and ``<name>_ci`` for every scope.
    - ``label``: how messages and the plain table name it (``"FCH"``, ``"error rate"``).
    - ``higher_is_better``: ``False`` makes the threshold a maximum ``max_<name>`` (passes when
      the figure is ``<=`` it), ``True`` a minimum ``min_<name>`` (passes when ``>=``).
    - ``compute``: counts the figure from the paraphrase groups of one scope, returning its
      :class:`Figure`.
    - ``count_key`` / ``count_label``: the count a gate message shows (``n=9795``,
      ``groups=653``); ``count_key`` is one of :data:`SCOPE_COUNTS` or of ``publishes``.
    - ``denominator``: :data:`SCORED` or :data:`ASKED`; below ``min_samples`` of that kind of
      response the gate does not judge the figure. The error rate is asked-based, so a provider
      outage (almost nothing scored) still fails the gate.
    - ``show_interval``: whether the tables print the interval next to the figure.
    - ``publishes``: the counts ``compute`` adds to the report (``("fch_count",)``), in order.
    - ``missing``: why the figure can be absent, for the gate's ``n/a`` message.
    - ``column``: a short title for the gate table's column (default: ``label``).
    """

    name: str
    label: str
    higher_is_better: bool
    compute: Callable[[Sequence[Group]], Figure]
    count_key: str = "scored"
    count_label: str = "n"
    denominator: Denominator = SCORED
    show_interval: bool = True
    publishes: tuple[str, ...] = ()
    missing: str = "no scored responses"
    column: str = ""

    def __post_init__(self) -> None:
        # Checked here, not at registration only, so a bad declaration fails where it is written.
        problems: list[str] = []
        if not isinstance(self.name, str) or not _KEY.fullmatch(self.name):
            problems.append("name must be lower case letters, digits and _, starting with a letter")
        elif self.name == "samples":
            problems.append('name "samples" is taken by the gate\'s min_samples verdict')
        if not isinstance(self.label, str) or not self.label.strip() or "\n" in self.label:
            problems.append("label must be a non-empty line of text")
        if not isinstance(self.higher_is_better, bool):
            problems.append("higher_is_better must be True or False")
        if not callable(self.compute):
            problems.append("compute must be a function of the groups of one scope")
        if self.denominator not in (SCORED, ASKED):
            problems.append(
                f"denominator must be {SCORED!r} or {ASKED!r}, not {self.denominator!r}"
            )
        if not isinstance(self.publishes, tuple):
            problems.append("publishes must be a tuple of count names")
        else:
            for key in self.publishes:
                if not isinstance(key, str) or not _KEY.fullmatch(key):
                    problems.append(f"published count {key!r} is not a valid key")
            if len(set(self.publishes)) != len(self.publishes):
                problems.append("publishes lists a count twice")
        if self.count_key not in (*SCOPE_COUNTS, *self.publishes):
            problems.append(
                f"count_key {self.count_key!r} is neither a scope count "
                f"({', '.join(SCOPE_COUNTS)}) nor one of publishes"
            )
        if not isinstance(self.count_label, str) or not self.count_label.strip():
            problems.append("count_label must be non-empty")
        if not problems:
            for key in self.keys:
                if key in (*SCOPE_COUNTS, *_MEAN_COUNTS):
                    problems.append(f"report key {key!r} is reserved")
        if problems:
            raise ValueError(f"metric {self.name!r}: " + "; ".join(problems))

    @property
    def threshold_key(self) -> str:
        """The ``thresholds.toml`` key: ``min_<name>`` if higher is better, else ``max_<name>``."""
        return f"{'min' if self.higher_is_better else 'max'}_{self.name}"

    @property
    def ci_key(self) -> str:
        """The report key of the figure's interval, ``<name>_ci``."""
        return f"{self.name}_ci"

    @property
    def short_label(self) -> str:
        """The gate table's column title: ``column``, or the label."""
        return self.column or self.label

    @property
    def keys(self) -> tuple[str, ...]:
        """Every report key this metric fills in a scope: its counts, figure and interval."""
        return (*self.publishes, self.name, self.ci_key)

    def passes(self, value: float, limit: float) -> bool:
        """Whether ``value`` is within ``limit`` (equal passes: a limit is inclusive)."""
        return value >= limit if self.higher_is_better else value <= limit


# --------------------------------------------------------------------------------------------
# The registry
# --------------------------------------------------------------------------------------------

_REGISTRY: dict[str, Metric] = {}
# Registration may happen from a plugin's import in any thread; a check-then-insert must be one
# step so two metrics cannot both claim a key.
_LOCK = threading.Lock()

#: The registered metrics by name, in registration order: a read-only *live* view, so code that
#: reads it at use time sees metrics registered later.
METRICS: Mapping[str, Metric] = MappingProxyType(_REGISTRY)


def register_metric(metric: Metric) -> Metric:
    """Add ``metric`` to :data:`METRICS` (after those already registered) and return it.

    Raises :class:`ValueError` when its name is taken or one of its report keys (``<name>``,
    ``<name>_ci``, published counts) is already filled by another metric. For example::

        def abstention(groups):
            return cluster_rate([(sum(r.get("claim") is None for r in g.scored_records), g.scored)
                                 for g in groups])

        register_metric(Metric("abstention", "abstention", False, abstention))

    makes ``max_abstention`` a valid threshold, judged by the gate, shown in both tables and
    reported as ``abstention``/``abstention_ci``.
    """
    if not isinstance(metric, Metric):
        raise TypeError(f"register_metric needs a Metric, got {type(metric).__name__}")
    with _LOCK:
        if metric.name in _REGISTRY:
            raise ValueError(f"metric {metric.name!r} is already registered")
        for other in _REGISTRY.values():
            clash = [key for key in metric.keys if key in other.keys]
            if clash:
                raise ValueError(
                    f"metric {metric.name!r}: report key {clash[0]!r} is already used by "
                    f"metric {other.name!r}"
                )
        _REGISTRY[metric.name] = metric
    return metric


def unregister_metric(name: str) -> Metric:
    """Remove the metric ``name`` from :data:`METRICS` and return it.

    The built-in metrics cannot be removed (the report format promises their keys). Raises
    :class:`ValueError` for those and for a name that is not registered.
    """
    with _LOCK:
        if name in _BUILT_IN:
            raise ValueError(f"metric {name!r} is built in and cannot be unregistered")
        if name not in _REGISTRY:
            known = ", ".join(_REGISTRY) or "none"
            raise ValueError(f"no metric {name!r} is registered; registered: {known}")
        return _REGISTRY.pop(name)


@contextmanager
def registered_metric(metric: Metric) -> Iterator[Metric]:
    """Register ``metric`` for the duration of a ``with`` block (tests, one-off runs)."""
    register_metric(metric)
    try:
        yield metric
    finally:
        unregister_metric(metric.name)


# --------------------------------------------------------------------------------------------
# The built-in metrics
# --------------------------------------------------------------------------------------------


def _fch(groups: Sequence[Group]) -> Figure:
    # A scored response whose ``correct`` is not True is not correct: no claim is never correct.
    return cluster_rate([(g.not_correct, g.scored) for g in groups], events_key="fch_count")


def _pmh(groups: Sequence[Group]) -> Figure:
    return cluster_rate([(g.not_aligned, g.scored) for g in groups], events_key="pmh_count")


def _rc(groups: Sequence[Group]) -> Figure:
    # RC is already a per-group figure, and groups are independent: the count of consistent
    # groups is exactly binomial, so the exact (Clopper-Pearson) interval keeps its coverage at
    # every size, where Wilson's dips to 0.84-0.92 at 5-10 groups for some rates.
    rc_groups = [g for g in groups if g.counts_for_rc]
    if not rc_groups:
        return Figure(None, None)
    consistent = sum(1 for g in rc_groups if g.consistent)
    rate = consistent / len(rc_groups)
    return Figure(rate, clopper_pearson(consistent, len(rc_groups), CONFIDENCE))


def _error_rate(groups: Sequence[Group]) -> Figure:
    # Over all responses asked, clustered too: a provider outage takes out a run of calls.
    return cluster_rate([(g.errors, g.size) for g in groups])


_BUILT_IN: frozenset[str] = frozenset()
for _metric in (
    Metric("fch", "FCH", False, _fch, publishes=("fch_count",)),
    Metric("pmh", "PMH", False, _pmh, publishes=("pmh_count",)),
    Metric("rc", "RC", True, _rc, count_key="rc_groups", count_label="groups",
           missing="no paraphrase groups"),
    # The error rate is errors / responses asked, so both its n and its min_samples rule count
    # the responses asked. No interval in the tables: it would push the gate table past ~110
    # columns, and the verdict message and the report carry it.
    Metric("error_rate", "error rate", False, _error_rate, count_key="n", denominator=ASKED,
           show_interval=False, missing="no responses", column="err"),
):
    register_metric(_metric)
_BUILT_IN = frozenset(_REGISTRY)
del _metric


# --------------------------------------------------------------------------------------------
# Counting
# --------------------------------------------------------------------------------------------


def _collect(records: Iterable[Mapping[str, Any]]) -> dict[tuple[str, Any], Group]:
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
        if _is_error(rec):
            grp.errors += 1
            grp.claims.append(None)
            continue
        if rec.get("correct") is not True:
            grp.not_correct += 1
        if rec.get("aligned") is not True:
            grp.not_aligned += 1
        grp.claims.append(rec.get("claim"))
    return groups


def _ci(interval: tuple[float, float] | None) -> list[float] | None:
    if interval is None:
        return None
    return [round(interval[0], 4), round(interval[1], 4)]


def _is_real(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _count(metric: Metric, groups: Sequence[Group]) -> Figure:
    """Run ``metric``'s counting function and check what it returned.

    A third-party function is checked so that a mistake is reported with the metric's name
    here, not as a confusing failure in the gate, a table or the JSON writer.
    """
    fig = metric.compute(groups)
    what = f"metric {metric.name!r}"
    if not isinstance(fig, Figure):
        raise TypeError(f"{what}: compute must return a Figure, got {type(fig).__name__}")
    value = fig.value
    if value is not None:
        if not _is_real(value) or not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise ValueError(f"{what}: value must be a number in [0, 1] or None, got {value!r}")
        value = float(value)
    interval = fig.interval
    if interval is not None:
        if value is None:
            raise ValueError(f"{what}: an interval without a value")
        if len(interval) != 2 or not all(_is_real(x) for x in interval):
            raise ValueError(f"{what}: interval must be (lo, hi), got {interval!r}")
    if set(fig.counts) != set(metric.publishes):
        raise ValueError(
            f"{what}: published counts {sorted(fig.counts)} differ from the declared "
            f"{sorted(metric.publishes)}"
        )
    for key, count in fig.counts.items():
        if not isinstance(count, int) or isinstance(count, bool):
            raise ValueError(f"{what}: count {key!r} must be an integer, got {count!r}")
    df = fig.df
    if df is not None and not (_is_real(df) and df > 0):
        raise ValueError(f"{what}: df must be a positive number or None, got {df!r}")
    return Figure(value, interval, fig.counts, None if df is None else float(df))


# A figure's unrounded interval and its degrees of freedom, kept for the overall mean.
_Raw = dict[str, tuple[Interval | None, float]]


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
        "consistent_groups": sum(1 for g in rc_groups if g.consistent),
    }
    counted = [(metric, _count(metric, groups)) for metric in metrics]
    # All counts before all figures: the report's key order (saved reports are compared).
    for metric, fig in counted:
        out.update((key, fig.counts[key]) for key in metric.publishes)
    raw: _Raw = {}
    for metric, fig in counted:
        out[metric.name] = fig.value
        out[metric.ci_key] = _ci(fig.interval)
        raw[metric.name] = (fig.interval, math.inf if fig.df is None else fig.df)
    return out, raw


def _domain_sort_key(name: str) -> tuple[int, int, str]:
    try:
        return (0, DOMAIN_ORDER.index(name), "")
    except ValueError:
        return (1, 0, name)


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
        # A domain without the figure (no scored response; no RC groups) has nothing to average.
        present: list[tuple[float, float, float, float]] = []
        for figs, raw in per_domain:
            value, (interval, df) = figs[rate], raw[rate]
            if value is not None and interval is not None:
                present.append((value, interval[0], interval[1], df))
        if not present:
            out[rate] = None
            out[metric.ci_key] = None
            continue
        # Each side of a domain interval read as quantile(df_d) SE on that side, independent
        # domains adding variances, the quantile on Welch-Satterthwaite df; with one domain
        # this gives back that domain's own interval.
        mean, lo, hi, _ = mean_interval(present, CONFIDENCE)
        out[rate] = mean
        out[metric.ci_key] = _ci((max(0.0, lo), min(1.0, hi)))
    return out


def summarize(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Summarize per-response records into per-domain and overall figures.

    Each record is a plain dict with ``id``, ``domain``, ``group`` (the paraphrase-group key,
    unique across domains), ``type``, ``claim``, ``aligned``, ``correct`` and ``error``.

    Returns ``{"domains": {domain: figures}, "overall": {"mean": ..., "pooled": ...}}``. Domain
    figures: the :data:`SCOPE_COUNTS` (``n``, ``scored``, ``errors``, ``groups``, ``rc_groups``,
    ``consistent_groups``), the counts each registered metric publishes (``fch_count``,
    ``pmh_count``), then for each metric of :data:`METRICS` (``fch``, ``pmh``, ``rc``,
    ``error_rate``, and any registered later) its figure and a ``<name>_ci`` ``[lo, hi]``
    (95%, 4 decimals); a figure that cannot be computed is ``None`` together with its
    interval. ``pooled`` has the same keys over all records; ``mean`` has ``domains``,
    ``rc_domains``, the total counts ``n``/``scored``/``errors``/``groups`` and the mean of
    each figure with its interval. Domains are ordered as in :data:`DOMAIN_ORDER`, then other
    names alphabetically. See the module docstring for the interval method.
    """
    # One snapshot of the registry, so every scope of one summary has the same keys even if a
    # metric is registered while this runs.
    metrics = tuple(METRICS.values())
    groups = _collect(records)

    rc_candidates = [g for g in groups.values() if g.counts_for_rc]
    if rc_candidates:
        # Imported here so that summarizing data without paraphrase groups never needs it.
        from defan_pytest.scoring.equivalence import group_consistent

        for grp in rc_candidates:
            grp.consistent = bool(group_consistent(grp.type, grp.claims))

    by_domain: dict[str, list[Group]] = {}
    for grp in groups.values():
        by_domain.setdefault(grp.domain, []).append(grp)

    per_domain: list[tuple[dict[str, Any], _Raw]] = []
    domains: dict[str, dict[str, Any]] = {}
    for name in sorted(by_domain, key=_domain_sort_key):
        figs, raw = _figures(by_domain[name], metrics)
        domains[name] = figs
        per_domain.append((figs, raw))

    pooled, _ = _figures(list(groups.values()), metrics)
    return {
        "domains": domains,
        "overall": {"mean": _mean(per_domain, pooled, metrics), "pooled": pooled},
    }
