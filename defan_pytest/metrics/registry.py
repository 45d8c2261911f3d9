"""The declaration of a metric, and the registry of them.

Each figure is one :class:`Metric` in the registry :data:`REGISTRY` (read as the mapping
:data:`METRICS`): its summary key, its label, whether higher is better, the function that counts
it from the paraphrase groups of one scope, how the gate and the tables present it, and how two
runs of it are compared (:attr:`Metric.paired`). Everything else is derived from that declaration
when it is used - the ``thresholds.toml`` keys (``max_<name>`` when lower is better,
``min_<name>`` when higher is better; ``max_<name>_rise`` / ``max_<name>_drop`` in
``[regression]``), the gate's checks and messages, the regression gate's comparisons, the
columns of both tables and the ``<name>``/``<name>_ci`` keys of the report - so adding a metric
is one :func:`register_metric` call plus its counting function, and a metric registered by a
user or a plugin at any time before the run is judged like a built-in one.

:data:`REGISTRY` is a :class:`defan_pytest.registry.Registry` of kind ``"metric"``: a package
can also add a metric through an entry point ``metric.<name>`` of the ``defan_pytest`` group.
The built-in metrics (:mod:`defan_pytest.metrics.builtin`) come first and cannot be removed.
"""
from __future__ import annotations

import math
import re
from fractions import Fraction
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Optional

from defan_pytest.metrics.groups import Figure, Group, PairedEvents
from defan_pytest.registry import Registry

__all__ = [
    "ASKED",
    "UNITS",
    "Aggregate",
    "Amount",
    "MEAN_COUNTS",
    "METRICS",
    "REGISTRY",
    "SCOPE_COUNTS",
    "SCORED",
    "Denominator",
    "Metric",
    "register_metric",
]

#: The counts every scope of the report starts with, before any metric's own counts. RC's group
#: counts are here, not published by the RC metric, because group consistency is a fact about a
#: paraphrase group that :func:`defan_pytest.metrics.summary.summarize` establishes once (any
#: metric may read it), and because saved reports list them right after ``groups``.
SCOPE_COUNTS: tuple[str, ...] = (
    "n", "scored", "errors", "groups", "scored_groups", "rc_groups", "consistent_groups",
)

#: Keys of the overall mean that are not metric keys either.
MEAN_COUNTS: tuple[str, ...] = ("domains", "rc_domains")

#: A metric's unit: ``""`` for a rate in [0, 1] (FCH, PMH, RC: SCORING.md's figures), ``"$"``
#: for dollars and ``"s"`` for seconds (an amount: the run's cost, its latency).
UNITS: tuple[str, ...] = ("", "$", "s")

#: An amount metric's value of one record (``None``: the record has none, e.g. a cached answer's
#: latency), and how the values of a scope make its figure (a sum, a percentile).
Amount = Callable[[Mapping[str, Any]], Optional[float]]
Aggregate = Callable[[Sequence[float]], float]

#: What a metric's denominator is, which decides how ``min_samples`` applies to it in the gate:
#: the responses *scored* (errored ones left out) or the responses *asked*.
Denominator = Literal["scored", "asked"]
SCORED: Denominator = "scored"
ASKED: Denominator = "asked"

# A summary key (and so a thresholds.toml key after max_/min_): a TOML bare key and a valid
# Python identifier, so ``limits.max_<name>`` works too.
_KEY = re.compile(r"[a-z][a-z0-9_]*")


# --------------------------------------------------------------------------------------------
# The declaration of a metric
# --------------------------------------------------------------------------------------------


def _is_real(value: object) -> bool:
    return isinstance(value, (int, float, Fraction)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Metric:
    """The one declaration of a figure: how it is counted, judged, compared and shown.

    - ``name``: the summary key (``"fch"``), also :attr:`defan_pytest.gates.level.Verdict.metric`; the
      report gets ``<name>`` and ``<name>_ci`` for every scope.
    - ``label``: how messages and the plain table name it (``"FCH"``, ``"error rate"``).
    - ``higher_is_better``: ``False`` makes the threshold a maximum ``max_<name>`` (passes when
      the figure is ``<=`` it), ``True`` a minimum ``min_<name>`` (passes when ``>=``).
    - ``compute``: counts the figure from the paraphrase groups of one scope
      (:class:`~defan_pytest.metrics.groups.Group`), returning its
      :class:`~defan_pytest.metrics.groups.Figure`.
    - ``count_key`` / ``count_label``: the count a gate message shows (``n=9795``,
      ``groups=653``); ``count_key`` is one of :data:`SCOPE_COUNTS` or of ``publishes``.
    - ``denominator``: :data:`SCORED` or :data:`ASKED`; below ``min_samples`` of that kind of
      response the gate does not judge the figure. The error rate is asked-based, so a provider
      outage (almost nothing scored) still fails the gate.
    - ``show_interval``: whether the tables print the interval next to the figure.
    - ``publishes``: the counts ``compute`` adds to the report (``("fch_count",)``), in order.
    - ``missing``: why the figure can be absent, for the gate's ``n/a`` message.
    - ``column``: a short title for the gate table's column (default: ``label``).
    - ``paired``: how the regression gate compares two runs of it
      (:data:`~defan_pytest.metrics.groups.PairedEvents`, e.g.
      :func:`~defan_pytest.metrics.groups.per_response`); ``None``: it is not compared, and ``thresholds.toml`` refuses a
      tolerance for it.
    - ``default_tolerance``: the largest worsening that is not a regression when
      ``thresholds.toml`` sets none (``None``: the change is only judged where a tolerance
      ``max_<name>_rise`` / ``max_<name>_drop`` is set). Needs ``paired`` (or ``amount``).
    - ``unit``: ``""`` for a rate in [0, 1] (the default), ``"$"`` or ``"s"`` for an amount
      (:data:`UNITS`): any number >= 0, no interval, its overall figure counted over every
      record (the run's cost, the p95 of all its calls) rather than the mean of domains, and
      its limits and tolerances in its unit.
    - ``amount`` and ``aggregate``: for an amount metric, each record's value
      (:data:`Amount`) and how a scope's values make its figure (:data:`Aggregate`); the
      regression gate compares the figure over the prompts with a value in both runs (the
      change ``new - old``), its test against no change McNemar's sign test on which run's
      value is the larger, over the pairs with a value beyond the ``tail`` quantile of both
      runs' values together (``None``: every pair), which exchanging a prompt's two values
      leaves unchanged: exact under no change, and aimed at the figure (a p95 moves by its tail).
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
    paired: PairedEvents | None = None
    default_tolerance: float | None = None
    unit: str = ""
    amount: Amount | None = None
    aggregate: Aggregate | None = None
    tail: float | None = None

    def __post_init__(self) -> None:
        # Checked here, not at registration only, so a bad declaration fails where it is written.
        problems = [*self._naming_problems(), *self._comparison_problems()]
        if not problems:
            for key in self.keys:
                if key in (*SCOPE_COUNTS, *MEAN_COUNTS):
                    problems.append(f"report key {key!r} is reserved")
        if problems:
            raise ValueError(f"metric {self.name!r}: " + "; ".join(problems))

    def _naming_problems(self) -> list[str]:
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
            problems.append(f"denominator must be {SCORED!r} or {ASKED!r}, not {self.denominator!r}")
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
        return problems

    def _comparison_problems(self) -> list[str]:
        problems: list[str] = []
        if self.unit not in UNITS:
            problems.append(f"unit must be one of {', '.join(map(repr, UNITS))}, not {self.unit!r}")
        if self.paired is not None and not callable(self.paired):
            problems.append("paired must be a function of a PairedGroup, or None")
        if self.amount is not None and not (callable(self.amount) and callable(self.aggregate)):
            problems.append("amount and aggregate must be functions (of a record; of a scope's values)")
        if self.tail is not None and not (_is_real(self.tail) and 0.0 <= self.tail < 1.0):
            problems.append(f"tail must be a quantile in [0, 1) or None, not {self.tail!r}")
        if self.unit and self.paired is not None:
            problems.append("an amount (a unit) is compared by its amount function, not paired events")
        if not self.unit and self.amount is not None:
            problems.append("amount is for a metric with a unit; a rate is compared by paired events")
        tolerance = self.default_tolerance
        if tolerance is not None:
            if not (_is_real(tolerance) and math.isfinite(tolerance) and 0.0 <= tolerance <= self.bound):
                problems.append(f"default_tolerance must be a number in [0, {self.bound:g}] or None, not {tolerance!r}")
            elif not self.compared:
                problems.append("default_tolerance needs paired (a metric that is not compared has none)")
        return problems

    @property
    def compared(self) -> bool:
        """Whether the regression gate compares it (``paired`` events, or an ``amount``)."""
        return self.paired is not None or self.amount is not None

    @property
    def bound(self) -> float:
        """The largest value the figure (and a limit or tolerance of it) can take: 1 for a
        rate, unbounded for an amount."""
        return math.inf if self.unit else 1.0

    def format(self, value: float) -> str:
        """The figure as tables and messages print it: ``0.49``, ``$0.42``, ``1.80 s``."""
        if self.unit == "$":
            return f"${value:.2f}" if value >= 0.01 or value == 0 else f"${value:.4f}"
        if self.unit == "s":
            return f"{value:.2f} s"
        return f"{value:.2f}"

    @property
    def threshold_key(self) -> str:
        """The ``thresholds.toml`` key: ``min_<name>`` if higher is better, else ``max_<name>``."""
        return f"{'min' if self.higher_is_better else 'max'}_{self.name}"

    @property
    def tolerance_key(self) -> str:
        """The ``[regression]`` key: ``max_<name>_drop`` if higher is better (RC), else
        ``max_<name>_rise`` (FCH, PMH, error rate)."""
        return f"max_{self.name}_{'drop' if self.higher_is_better else 'rise'}"

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

    def count(self, groups: Sequence[Group]) -> Figure:
        """Run :attr:`compute` on ``groups`` and check what it returned.

        A third-party function is checked so that a mistake is reported with the metric's name
        here, not as a confusing failure in the gate, a table or the JSON writer.
        """
        fig = self.compute(groups)
        what = f"metric {self.name!r}"
        if not isinstance(fig, Figure):
            raise TypeError(f"{what}: compute must return a Figure, got {type(fig).__name__}")
        value = fig.value
        if value is not None:
            if not _is_real(value) or not (math.isfinite(value) and 0.0 <= value <= self.bound):
                raise ValueError(f"{what}: value must be a number in [0, {self.bound:g}] or None, got {value!r}")
            value = float(value)
        interval = fig.interval
        if interval is not None:
            if value is None:
                raise ValueError(f"{what}: an interval without a value")
            if len(interval) != 2 or not all(_is_real(x) for x in interval):
                raise ValueError(f"{what}: interval must be (lo, hi), got {interval!r}")
        if set(fig.counts) != set(self.publishes):
            raise ValueError(
                f"{what}: published counts {sorted(fig.counts)} differ from the declared "
                f"{sorted(self.publishes)}"
            )
        for key, count in fig.counts.items():
            # A whole number, or a sum of shares when prompts were asked more than once.
            if not _is_real(count) or not (math.isfinite(count) and count >= 0):
                raise ValueError(f"{what}: count {key!r} must be a number >= 0, got {count!r}")
        df = fig.df
        if df is not None and not (_is_real(df) and df > 0):
            raise ValueError(f"{what}: df must be a positive number or None, got {df!r}")
        units = fig.units
        if units is not None:
            units = tuple((Fraction(y), int(n)) for y, n in units)
            if any(not 0 <= y <= n for y, n in units):
                raise ValueError(f"{what}: units must be (events, responses) pairs with 0 <= events <= responses")
        # The units travel with the figure: the overall mean's interval is the stratified one
        # built from them (dropping them here made it fall back to the domains' clipped intervals).
        return Figure(value, interval, fig.counts, None if df is None else float(df), units)


# --------------------------------------------------------------------------------------------
# The registry
# --------------------------------------------------------------------------------------------


def _acceptable(entry: object) -> bool | str | None:
    """The registry's check of a new metric: a :class:`Metric` whose report keys no registered
    metric fills already (a taken name is the registry's own message)."""
    if not isinstance(entry, Metric):
        return f"expected a Metric, got {type(entry).__name__}"
    # The entries as they are, without loading entry points: this runs while they load, and
    # while the built-ins are registered (before any third-party metric may come in).
    current = REGISTRY.snapshot()
    if entry.name in current:
        return None
    for other in current.values():
        clash = [key for key in entry.keys if key in other.keys]
        if clash:
            return f"report key {clash[0]!r} is already used by metric {other.name!r}"
    return None


#: Every metric, built-in ones first, in registration order (the report's key order).
REGISTRY: Registry[Metric] = Registry("metric", _acceptable, entry_point_prefix="metric")


class _Metrics(Mapping[str, Metric]):
    """:data:`REGISTRY` read as a mapping of names to metrics: a live, read-only view."""

    def __getitem__(self, name: str) -> Metric:
        if name not in REGISTRY:
            raise KeyError(name)
        return REGISTRY.get(name)

    def __iter__(self) -> Iterator[str]:
        return iter(REGISTRY.names())

    def __len__(self) -> int:
        return len(REGISTRY)


#: The registered metrics by name, in registration order: a read-only *live* view of
#: :data:`REGISTRY`, so code that reads it at use time sees metrics registered later.
METRICS: Mapping[str, Metric] = _Metrics()


def register_metric(metric: Metric) -> Metric:
    """Add ``metric`` to :data:`REGISTRY` (after those already registered) and return it.

    Raises :class:`TypeError` for anything but a :class:`Metric`, and a
    :class:`~defan_pytest.registry.RegistryError` (a ``ValueError``) when its name is taken or
    one of its report keys (``<name>``, ``<name>_ci``, published counts) is already filled by
    another metric. For example::

        def abstains(record):
            return record.get("claim") is None

        def abstention(groups):
            return cluster_rate([(sum(map(abstains, g.scored_records)), g.scored) for g in groups])

        register_metric(Metric("abstention", "abstention", False, abstention,
                               paired=per_response(abstains)))

    makes ``max_abstention`` a valid threshold and ``max_abstention_rise`` a valid regression
    tolerance, judged by both gates, shown in both tables and reported as
    ``abstention``/``abstention_ci`` (``cluster_rate`` is in :mod:`defan_pytest.metrics.summary`,
    ``per_response`` in :mod:`defan_pytest.metrics.groups`).
    """
    if not isinstance(metric, Metric):
        raise TypeError(f"register_metric needs a Metric, got {type(metric).__name__}")
    return REGISTRY.register(metric)
