"""The paired test of the regression gate: did this run get worse than a baseline run?

:func:`compare` takes the per-prompt records of two runs (the baseline's and the current one's;
plain dicts as :func:`defan_pytest.metrics.summary.summarize` reads them: ``id``, ``domain``, ``group``,
``type``, ``claim``, ``aligned``, ``correct``, ``error``; other keys are ignored) and returns a
:class:`Comparison`: per scope (each domain, and ``"overall"``) and per metric (FCH, PMH, RC,
error rate) the change *new - old*, its interval, the counts of flips and the verdict.

Pairing
-------

Prompts are paired by ``id``. A prompt in only one run is counted (``only_baseline``,
``only_current``) and otherwise ignored. A paired prompt that errored in either run is left out
of the FCH and PMH pairs (an errored response is never a hallucination, as in the level figures)
and counted in ``errored``; the error rate's change is over all paired prompts. The current
run's ``domain`` and ``group`` place a prompt (a prompt that changed domain between runs is a
different data set, which :mod:`defan_pytest.report.schema` refuses before this is called). Two runs
without a prompt in common give an empty comparison: no scope, nothing regresses.

RC compares groups, not prompts: a group counts when, restricted to its paired prompts, it counts
for RC in both runs (more than one response, none errored); its consistency in each run is
decided exactly as :func:`~defan_pytest.metrics.summary.summarize` decides it
(:func:`~defan_pytest.scoring.equivalence.group_consistent` on the claims).

The interval
------------

The same prompts are asked in both runs, so what varies between the runs is only which prompts
*flipped*: a paired test needs far fewer prompts than comparing two levels. Flips cluster by
paraphrase group like everything else (a model that changed its mind about a fact changes it on
most paraphrases), so the paraphrase group is the unit, as in :mod:`defan_pytest.metrics.summary`:

- per group ``g``: ``b_g`` prompts with the metric's event (hallucinated, misaligned, errored;
  for RC: consistent) in the new run only, ``c_g`` in the old run only, ``m_g`` pairs; the
  change is the ratio estimator ``sum(b_g - c_g) / sum(m_g)``;
- its cluster-robust variance ``G/(G-1) * sum_g (d_g - change*m_g)^2 / M^2`` (``d_g = b_g - c_g``),
  over the variance the same change would have with independent prompts, is the design
  effect; it is shrunk toward the worst case (each group one observation) while flips are
  scarce, exactly as the level intervals do
  (:func:`~defan_pytest.stats.intervals.shrink_design_effect`, the flips being the informative
  responses);
- the counts and the number of pairs are divided by the design effect, and the interval is
  Tango's score interval for a paired difference (:func:`~defan_pytest.stats.paired.paired_score_interval`)
  at those effective counts, with the Student t quantile on ``G - 1`` degrees of freedom.

A score interval rather than ``change -+ t * se``: the Wald form collapses to a point when the
observed flips are few or cancel, and then covers the true change far less than promised at a
pull-request's 5-10 groups per domain (62-92% in simulations). Simulated
(``bench/regression_stability.py``, 4,000 replicates a cell) with per-group rates correlated
between the runs, answers kept or re-drawn, and a known true change, this interval covered it
94.7-100% of the time from 5 to 100 groups (the lowest, at 100 groups, within Monte Carlo error
of 95%); ``tests/test_regression.py`` asserts at least 0.94 over a grid. It is conservative at
5-10 groups and 2-14% wider than the Wald interval at 100.

One consequence: runs without a single flip get the change 0 with an interval around it that
is not ``[0, 0]`` (``-+ q^2 / (G + q^2)``, 0.34 at 10 groups, 0.004 at 1,000): no flip among
a few groups does not show that the models agree on the prompts not asked. Such runs never
regress all the same, because the change is 0.

The overall change is either ``"mean"``, the unweighted mean of the domain changes (each
domain's interval read as standard errors, independent domains adding variances, the quantile
on Welch-Satterthwaite degrees of freedom, as for the level figures), or ``"pooled"``, the
same test over all groups together.

The decision
------------

A scope's metric **regresses** only when the worsening is both significant - the interval lies
wholly on the worse side of 0 (above it for FCH, PMH and the error rate, below it for RC) -
and larger than the tolerance for that scope and metric. A tolerance of ``None`` means the
metric's change is reported but never judged. Identical runs never regress (the change is 0).

Everything in a :class:`Comparison` converts to plain JSON with :meth:`Comparison.to_json`.
Nothing here imports pytest.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from defan_pytest.metrics.summary import DOMAIN_ORDER, METRICS
from defan_pytest.stats.intervals import mean_interval
from defan_pytest.stats.paired import paired_interval

__all__ = [
    "COMPARED",
    "DEFAULT_TOLERANCE",
    "OVERALL",
    "Change",
    "Comparison",
    "Flip",
    "Pairing",
    "Tolerances",
    "compare",
]

#: The scope name of the all-domains figure.
OVERALL = "overall"

#: The metrics compared, in report order. Metrics registered by users are level figures
#: computed from whole groups; they have no per-prompt event to pair and are not compared.
COMPARED: tuple[str, ...] = ("fch", "pmh", "rc", "error_rate")

#: The tolerance of FCH, PMH and RC when none is given (the error rate is then not judged):
#: the same as ``thresholds.DEFAULT_TOLERANCES``.
DEFAULT_TOLERANCE: Mapping[str, float] = {"fch": 0.02, "pmh": 0.02, "rc": 0.02}

#: Tolerances: a function ``(scope, metric) -> float | None``, or a mapping ``{metric: float}``
#: for every scope, optionally with per-scope mappings ``{scope: {metric: float}}`` that take
#: precedence. ``None`` (or a missing entry): the metric's change is not judged.
Tolerances = Union[Callable[[str, str], Union[float, None]], Mapping[str, Any]]

Direction = Literal["worse", "better"]


def _is_error(rec: Mapping[str, Any]) -> bool:
    # As in metrics: an empty string is what converters write for "no error".
    return bool(rec.get("error"))


# --------------------------------------------------------------------------------------------
# The result
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """The change of one metric in one scope, new run minus baseline, and its verdict.

    - ``old``, ``new``: the metric over the pairs compared (the paired prompts scored in both
      runs for FCH and PMH, all paired prompts for the error rate, the groups counting for RC
      in both runs for RC); ``change = new - old``.
    - ``interval``: ``(lo, hi)`` at ``confidence``; ``df``: the degrees of freedom of its
      quantile (``None`` if unbounded).
    - ``groups``: paraphrase groups with at least one pair; ``pairs``: the pairs (prompts; for
      RC, groups).
    - ``worse_flips`` / ``better_flips``: pairs that went the worse / the better way (right to
      hallucinated / back for FCH, aligned to misaligned / back for PMH, consistent to
      inconsistent / back for RC, answered to errored / back for the error rate).
    - ``worse``: the change is nonzero and in the worse direction; ``significant``: the
      interval excludes 0; ``significant_worse``: it lies wholly on the worse side of 0;
      ``regressed``: significantly worse by more than ``tolerance`` (never when the tolerance
      is ``None``).
    """

    scope: str
    metric: str
    old: float
    new: float
    change: float
    interval: tuple[float, float]
    df: float | None
    confidence: float
    groups: int
    pairs: int
    worse_flips: int
    better_flips: int
    higher_is_better: bool
    tolerance: float | None
    worse: bool
    significant: bool
    significant_worse: bool
    regressed: bool

    def to_json(self) -> dict[str, Any]:
        """Plain JSON: every field except ``scope``/``metric`` (the keys it is filed under),
        the interval as a list."""
        return {
            "old": self.old,
            "new": self.new,
            "change": self.change,
            "interval": [self.interval[0], self.interval[1]],
            "df": self.df,
            "confidence": self.confidence,
            "groups": self.groups,
            "pairs": self.pairs,
            "worse_flips": self.worse_flips,
            "better_flips": self.better_flips,
            "higher_is_better": self.higher_is_better,
            "tolerance": self.tolerance,
            "worse": self.worse,
            "significant": self.significant,
            "significant_worse": self.significant_worse,
            "regressed": self.regressed,
        }


@dataclass(frozen=True)
class Flip:
    """A prompt whose FCH verdict flipped: ``direction`` ``"worse"`` (right before,
    hallucinated now) or ``"better"``; ``old`` and ``new`` are its two records as given."""

    id: str
    domain: str
    group: Any
    metric: str
    direction: Direction
    old: Mapping[str, Any]
    new: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        """Plain JSON (the records as plain dicts)."""
        return {
            "id": self.id,
            "domain": self.domain,
            "group": self.group,
            "metric": self.metric,
            "direction": self.direction,
            "old": dict(self.old),
            "new": dict(self.new),
        }


@dataclass(frozen=True)
class Pairing:
    """How the two runs' prompts paired: ``paired`` prompts in both, ``only_baseline`` and
    ``only_current`` in one only, ``groups`` paraphrase groups among the paired prompts, and
    ``errored`` paired prompts that errored in either run (left out of FCH and PMH)."""

    paired: int
    only_baseline: int
    only_current: int
    groups: int
    errored: int

    def to_json(self) -> dict[str, int]:
        """Plain JSON."""
        return {
            "paired": self.paired,
            "only_baseline": self.only_baseline,
            "only_current": self.only_current,
            "groups": self.groups,
            "errored": self.errored,
        }


@dataclass(frozen=True)
class Comparison:
    """The result of :func:`compare`.

    ``scopes`` maps each domain (in report order) and then ``"overall"`` to its metrics'
    :class:`Change` (a metric that cannot be compared in a scope - no pairs, no RC group - is
    absent; a scope with nothing to compare is absent). ``flipped`` lists the prompts whose FCH
    verdict flipped, right to hallucinated first, then by domain, group and id.
    """

    confidence: float
    overall: str
    pairs: Pairing
    scopes: Mapping[str, Mapping[str, Change]] = field(default_factory=dict)
    flipped: tuple[Flip, ...] = ()

    @property
    def regressions(self) -> list[Change]:
        """The changes that regressed, in scope then metric order."""
        return [c for changes in self.scopes.values() for c in changes.values() if c.regressed]

    @property
    def regressed(self) -> bool:
        """Whether any scope's metric regressed."""
        return any(c.regressed for changes in self.scopes.values() for c in changes.values())

    def to_json(self) -> dict[str, Any]:
        """Plain JSON (``json.dumps(..., allow_nan=False)`` accepts it)::

            {"confidence": 0.95, "overall": "mean", "regressed": false,
             "pairs": {"paired", "only_baseline", "only_current", "groups", "errored"},
             "scopes": {scope: {metric: {"old", "new", "change", "interval", "df",
                                         "confidence", "groups", "pairs", "worse_flips",
                                         "better_flips", "higher_is_better", "tolerance",
                                         "worse", "significant", "significant_worse",
                                         "regressed"}}},
             "flipped": [{"id", "domain", "group", "metric", "direction", "old", "new"}]}
        """
        return {
            "confidence": self.confidence,
            "overall": self.overall,
            "regressed": self.regressed,
            "pairs": self.pairs.to_json(),
            "scopes": {
                scope: {name: change.to_json() for name, change in changes.items()}
                for scope, changes in self.scopes.items()
            },
            "flipped": [f.to_json() for f in self.flipped],
        }


# --------------------------------------------------------------------------------------------
# Pairing and counting
# --------------------------------------------------------------------------------------------


def _by_id(records: Iterable[Mapping[str, Any]], which: str) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for index, rec in enumerate(records):
        pid = rec.get("id")
        if pid is None or pid == "":
            raise ValueError(f"{which} record {index} has no id: {dict(rec)!r}")
        key = str(pid)
        if key in out:
            raise ValueError(f"{which} run has prompt id {key!r} twice: pairing would be ambiguous")
        out[key] = rec
    return out


@dataclass
class _Group:
    """One paraphrase group's pairs, as :func:`compare` counts them."""

    domain: str
    key: Any
    type: str
    ids: list[str] = field(default_factory=list)


def _group_key(value: Any) -> Any:
    # Group keys from JSON are str or int; anything unhashable is keyed by its text.
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def _consistent(type_: str, records: Sequence[Mapping[str, Any]]) -> bool | None:
    """RC of one run's records of a group: ``None`` when the group does not count for RC."""
    if len(records) < 2 or any(_is_error(r) for r in records):
        return None
    # Imported here, as summarize does, so that comparing data without paraphrase groups
    # never needs it.
    from defan_pytest.scoring.equivalence import group_consistent

    return bool(group_consistent(type_, [r.get("claim") for r in records]))


@dataclass
class _Tally:
    """One domain's counts for every compared metric: per group ``(b, c, m)`` (event in the new
    run only, in the old run only, pairs), and the events of each run over all its pairs."""

    units: dict[str, list[tuple[int, int, int]]] = field(
        default_factory=lambda: {metric: [] for metric in COMPARED})
    old: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COMPARED, 0))
    new: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COMPARED, 0))

    def add(self, metric: str, pairs: Sequence[tuple[bool, bool]]) -> None:
        """Count one group's pairs ``(old event, new event)`` of ``metric``."""
        self.units[metric].append((
            sum(1 for was, now in pairs if now and not was),
            sum(1 for was, now in pairs if was and not now),
            len(pairs),
        ))
        self.old[metric] += sum(1 for was, _ in pairs if was)
        self.new[metric] += sum(1 for _, now in pairs if now)

    def level(self, metric: str) -> tuple[int, int, int]:
        """(old events, new events, pairs) of ``metric``."""
        return self.old[metric], self.new[metric], sum(m for _, _, m in self.units[metric])


def _event(rec: Mapping[str, Any], metric: str) -> bool:
    # The metric's counted outcome of one scored record, as metrics counts it: not correct
    # (None included: "no claim is never correct"), not aligned.
    if metric == "fch":
        return rec.get("correct") is not True
    return rec.get("aligned") is not True


def _resolve_tolerance(tolerances: Tolerances | None, scope: str, metric: str) -> float | None:
    if tolerances is None:
        tolerances = DEFAULT_TOLERANCE
    if callable(tolerances):
        found = tolerances(scope, metric)
    else:
        specific = tolerances.get(scope)
        if isinstance(specific, Mapping) and metric in specific:
            found = specific[metric]
        else:
            found = tolerances.get(metric)
            if isinstance(found, Mapping):
                found = None
    if found is None:
        return None
    value = float(found)
    if not (math.isfinite(value) and value >= 0.0):
        raise ValueError(f"tolerance of {metric} in {scope} must be a number >= 0, got {found!r}")
    return value


def _verdict(scope: str, metric: str, old: float, new: float, change: float, interval: tuple[float, float],
             df: float | None, confidence: float, groups: int, pairs: int, plus: int, minus: int,
             tolerance: float | None) -> Change:
    """The :class:`Change` and its decision; ``plus`` / ``minus``: pairs that gained / lost the
    metric's event (hallucinated, misaligned, errored, consistent)."""
    higher = METRICS[metric].higher_is_better
    # The flips that made the figure worse: more events for a lower-is-better figure.
    worse_flips, better_flips = (minus, plus) if higher else (plus, minus)
    worse_amount = -change if higher else change
    lo, hi = interval
    significant_worse = (hi < 0.0) if higher else (lo > 0.0)
    return Change(
        scope=scope, metric=metric, old=old, new=new, change=change, interval=(lo, hi), df=df,
        confidence=confidence, groups=groups, pairs=pairs, worse_flips=worse_flips,
        better_flips=better_flips, higher_is_better=higher, tolerance=tolerance,
        worse=worse_amount > 0.0, significant=lo > 0.0 or hi < 0.0,
        significant_worse=significant_worse,
        regressed=tolerance is not None and significant_worse and worse_amount > tolerance,
    )


def _domain_sort_key(name: str) -> tuple[int, int, str]:
    try:
        return (0, DOMAIN_ORDER.index(name), "")
    except ValueError:
        return (1, 0, name)


def compare(
    baseline: Sequence[Mapping[str, Any]],
    current: Sequence[Mapping[str, Any]],
    *,
    confidence: float = 0.95,
    tolerances: Tolerances | None = None,
    overall: str = "mean",
) -> Comparison:
    """Compare the ``current`` run's per-prompt records with the ``baseline`` run's.

    - ``confidence``: of every interval (two-sided); a worsening is significant when the
      interval lies wholly on the worse side of 0, so the one-sided false-alarm rate of a
      scope's metric is at most ``(1 - confidence) / 2``.
    - ``tolerances``: the largest worsening that is not a regression, per scope and metric
      (see :data:`Tolerances`); default :data:`DEFAULT_TOLERANCE` (FCH, PMH, RC 0.02; the
      error rate not judged).
    - ``overall``: ``"mean"`` (the mean of the domain changes) or ``"pooled"`` (all groups
      together).

    Raises :class:`ValueError` for a record without ``id`` or ``domain``, an id given twice in
    one run, or a bad argument. See the module docstring for pairing, the interval and the
    decision.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if overall not in ("mean", "pooled"):
        raise ValueError(f'overall must be "mean" or "pooled", got {overall!r}')
    old_by_id = _by_id(baseline, "baseline")
    new_by_id = _by_id(current, "current")
    # Pairs in the current run's order: deterministic, and what the run itself listed.
    paired = [pid for pid in new_by_id if pid in old_by_id]
    only_current = len(new_by_id) - len(paired)
    only_baseline = len(old_by_id) - len(paired)

    groups: dict[tuple[str, Any], _Group] = {}
    for pid in paired:
        rec = new_by_id[pid]
        domain = rec.get("domain")
        if not isinstance(domain, str) or not domain:
            raise ValueError(f"current record {pid!r} has no domain: {dict(rec)!r}")
        raw_key = rec.get("group")
        key = ("__id__", pid) if raw_key is None else _group_key(raw_key)
        grp = groups.get((domain, key))
        if grp is None:
            grp = groups[(domain, key)] = _Group(domain, raw_key, str(rec.get("type") or ""))
        grp.ids.append(pid)

    errored = 0
    tallies: dict[str, _Tally] = {}
    worse_flips: list[Flip] = []
    better_flips: list[Flip] = []
    for grp in groups.values():
        tally = tallies.setdefault(grp.domain, _Tally())
        olds = [old_by_id[pid] for pid in grp.ids]
        news = [new_by_id[pid] for pid in grp.ids]
        tally.add("error_rate", [(_is_error(o), _is_error(n)) for o, n in zip(olds, news)])
        scored = [(pid, o, n) for pid, o, n in zip(grp.ids, olds, news) if not (_is_error(o) or _is_error(n))]
        errored += len(grp.ids) - len(scored)
        for metric in ("fch", "pmh"):
            tally.add(metric, [(_event(o, metric), _event(n, metric)) for _, o, n in scored])
        for pid, o, n in scored:
            was, now = _event(o, "fch"), _event(n, "fch")
            if was != now:
                (worse_flips if now else better_flips).append(
                    Flip(pid, grp.domain, grp.key, "fch", "worse" if now else "better", o, n))
        was_rc, now_rc = _consistent(grp.type, olds), _consistent(grp.type, news)
        if was_rc is not None and now_rc is not None:
            # RC's event is "consistent" (higher is better); the group is the one pair.
            tally.add("rc", [(was_rc, now_rc)])

    scopes: dict[str, dict[str, Change]] = {}
    domain_names = sorted(tallies, key=_domain_sort_key)
    for name in domain_names:
        out: dict[str, Change] = {}
        for metric in COMPARED:
            change = _scope_change(name, metric, tallies[name].units[metric], tallies[name].level(metric),
                                   confidence, _resolve_tolerance(tolerances, name, metric))
            if change is not None:
                out[metric] = change
        if out:
            scopes[name] = out

    total: dict[str, Change] = {}
    for metric in COMPARED:
        tolerance = _resolve_tolerance(tolerances, OVERALL, metric)
        if overall == "pooled":
            units_all = [u for name in domain_names for u in tallies[name].units[metric]]
            levels = [tallies[name].level(metric) for name in domain_names]
            pooled = (sum(x[0] for x in levels), sum(x[1] for x in levels), sum(x[2] for x in levels))
            change = _scope_change(OVERALL, metric, units_all, pooled, confidence, tolerance)
        else:
            parts = [scopes[name][metric] for name in domain_names if metric in scopes.get(name, {})]
            change = _mean_change(metric, parts, confidence, tolerance)
        if change is not None:
            total[metric] = change
    if total:
        scopes[OVERALL] = total

    order = {name: i for i, name in enumerate(domain_names)}

    def flip_key(f: Flip) -> tuple[int, str, str]:
        return (order[f.domain], str(f.group), f.id)

    flipped = tuple(sorted(worse_flips, key=flip_key)) + tuple(sorted(better_flips, key=flip_key))
    pairing = Pairing(len(paired), only_baseline, only_current, len(groups), errored)
    return Comparison(confidence, overall, pairing, scopes, flipped)


def _scope_change(scope: str, metric: str, units: Sequence[tuple[int, int, int]],
                  level: tuple[int, int, int], confidence: float, tolerance: float | None) -> Change | None:
    found = paired_interval(units, confidence)
    if found is None:
        return None
    change, lo, hi, df = found
    kept = [u for u in units if u[2] > 0]
    old_events, new_events, pairs = level
    return _verdict(scope, metric, old_events / pairs, new_events / pairs, change, (lo, hi), df, confidence,
                    len(kept), pairs, sum(u[0] for u in kept), sum(u[1] for u in kept), tolerance)


def _mean_change(metric: str, parts: Sequence[Change], confidence: float,
                 tolerance: float | None) -> Change | None:
    if not parts:
        return None
    mean, lo, hi, df = mean_interval(
        [(p.change, p.interval[0], p.interval[1], math.inf if p.df is None else p.df) for p in parts],
        confidence,
    )
    higher = parts[0].higher_is_better
    # Back to event counts: the verdict wants (b, c) as "event gained / lost", while a Change
    # stores them as worse / better.
    plus = sum(p.better_flips if higher else p.worse_flips for p in parts)
    minus = sum(p.worse_flips if higher else p.better_flips for p in parts)
    return _verdict(
        OVERALL, metric, sum(p.old for p in parts) / len(parts), sum(p.new for p in parts) / len(parts),
        mean, (max(-1.0, lo), min(1.0, hi)), df if math.isfinite(df) else None, confidence,
        sum(p.groups for p in parts), sum(p.pairs for p in parts), plus, minus, tolerance,
    )
