"""The paired test of the regression gate: did this run get worse than a baseline run?

:func:`compare` takes the per-prompt records of two runs (the baseline's and the current one's;
plain dicts as :func:`defan_pytest.metrics.summary.summarize` reads them: ``id``, ``domain``, ``group``,
``type``, ``claim``, ``aligned``, ``correct``, ``error``; other keys are ignored) and returns a
:class:`~defan_pytest.gates.comparison.Comparison`: per scope (each domain, and ``"overall"``)
and per compared metric the change *new - old*, its interval, the counts of flips and the verdict.

Pairing
-------

Prompts are paired by ``id``. A prompt in only one run is counted (``only_baseline``,
``only_current``) and otherwise ignored. The current run's ``domain`` and ``group`` place a
prompt (a prompt that changed domain between runs is a different data set, which
:mod:`defan_pytest.gates.comparability` refuses before this is called). Two runs without a
prompt in common give an empty comparison: no scope, nothing regresses.

Every registered metric that declares how two runs of it compare
(:attr:`defan_pytest.metrics.registry.Metric.paired`) is compared, in registration order: per
paraphrase group, the metric's ``paired`` gives the pairs ``(event before, event now)`` of the
group's paired prompts (:class:`~defan_pytest.metrics.registry.PairedGroup`). The built-ins
(:mod:`defan_pytest.metrics.builtin`): a paired prompt that errored in either run is left out of
the FCH and PMH pairs (an errored response is never a hallucination, as in the level figures)
and counted in ``errored``; the error rate's change is over all paired prompts; RC compares
groups, not prompts: a group counts when, restricted to its paired prompts, it counts for RC in
both runs (more than one response, none errored), its consistency in each run decided exactly as
:func:`~defan_pytest.metrics.summary.summarize` decides it.

The change of a scope is the paired test over its groups
(:func:`defan_pytest.stats.paired.paired_interval`: the group is the unit, and the interval is
Tango's score interval at the counts the design effect leaves). The overall change is either
``"mean"``, the unweighted mean of the domain changes (each domain's interval read as standard
errors, independent domains adding variances, the quantile on Welch-Satterthwaite degrees of
freedom, as for the level figures), or ``"pooled"``, the same test over all groups together.

The decision
------------

A scope's metric **regresses** when the tolerance itself is exceeded significantly: the
interval's bound on the worse side lies beyond the tolerance (its lower bound above ``+tol`` for
a lower-is-better metric such as FCH, its upper bound below ``-tol`` for a higher-is-better one
such as RC). That bound is one-sided at ``(1 + confidence) / 2``, so a true change within the
tolerance regresses at most ``(1 - confidence) / 2`` of the time at any sample size (applying
the tolerance to the point estimate, as before, let a true 1-point rise under a 2-point
tolerance regress 19% of the time at 300 groups). ``significant_worse`` still says whether the
interval lies wholly on the worse side of 0. A tolerance of ``None`` means the metric's change
is reported but never judged. Identical runs never regress (the change is 0).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from defan_pytest.gates.comparison import Change, Comparison, Flip, Pairing
from defan_pytest.metrics.builtin import hallucinated
from defan_pytest.metrics.groups import PairedGroup, errored
from defan_pytest.metrics.registry import METRICS, Metric
from defan_pytest.metrics.summary import OVERALL, domain_sort_key
from defan_pytest.stats.paired import paired_interval, stratified_paired_interval

__all__ = ["Tolerances", "compare", "compared_metrics"]

#: Tolerances: a function ``(scope, metric) -> float | None``, or a mapping ``{metric: float}``
#: for every scope, optionally with per-scope mappings ``{scope: {metric: float}}`` that take
#: precedence. ``None`` (or a missing entry): the metric's change is not judged.
Tolerances = Union[Callable[[str, str], Union[float, None]], Mapping[str, Any]]

# Per group (b, c, m): pairs with the event in the new run only, in the old run only, pairs.
Unit = tuple[int, int, int]


def compared_metrics() -> tuple[Metric, ...]:
    """The registered metrics the paired test compares (those with ``paired``), in order."""
    return tuple(metric for metric in METRICS.values() if metric.paired is not None)


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
    """One paraphrase group's paired prompts, by id, in the current run's order."""

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


def _groups(paired: Sequence[str], new_by_id: Mapping[str, Mapping[str, Any]]) -> list[_Group]:
    """The paraphrase groups of the paired prompts, placed by the current run's records."""
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
    return list(groups.values())


@dataclass
class _Tally:
    """One domain's counts of every compared metric: its units per group, and the events of
    each run over all its pairs."""

    units: dict[str, list[Unit]] = field(default_factory=dict)
    old: dict[str, int] = field(default_factory=dict)
    new: dict[str, int] = field(default_factory=dict)

    def add(self, metric: str, pairs: Sequence[tuple[bool, bool]]) -> None:
        """Count one group's pairs ``(old event, new event)`` of ``metric``."""
        self.units.setdefault(metric, []).append((
            sum(1 for was, now in pairs if now and not was),
            sum(1 for was, now in pairs if was and not now),
            len(pairs),
        ))
        self.old[metric] = self.old.get(metric, 0) + sum(1 for was, _ in pairs if was)
        self.new[metric] = self.new.get(metric, 0) + sum(1 for _, now in pairs if now)

    def level(self, metric: str) -> tuple[int, int, int]:
        """(old events, new events, pairs) of ``metric``."""
        return self.old.get(metric, 0), self.new.get(metric, 0), sum(m for _, _, m in self.units.get(metric, ()))


@dataclass
class _Counted:
    """Every domain's tally, the paired prompts that errored in either run, and the FCH flips."""

    tallies: dict[str, _Tally] = field(default_factory=dict)
    errored: int = 0
    worse: list[Flip] = field(default_factory=list)
    better: list[Flip] = field(default_factory=list)


def _count(groups: Sequence[_Group], old_by_id: Mapping[str, Mapping[str, Any]],
           new_by_id: Mapping[str, Mapping[str, Any]], metrics: Sequence[Metric]) -> _Counted:
    counted = _Counted()
    for grp in groups:
        tally = counted.tallies.setdefault(grp.domain, _Tally())
        olds = tuple(old_by_id[pid] for pid in grp.ids)
        news = tuple(new_by_id[pid] for pid in grp.ids)
        paired = PairedGroup(grp.domain, grp.type, olds, news)
        for metric in metrics:
            if metric.paired is not None:
                tally.add(metric.name, metric.paired(paired))
        scored = [(pid, o, n) for pid, o, n in zip(grp.ids, olds, news) if not (errored(o) or errored(n))]
        counted.errored += len(grp.ids) - len(scored)
        # The prompts that went from right to hallucinated or back, for the report to list.
        for pid, o, n in scored:
            was, now = hallucinated(o), hallucinated(n)
            if was != now:
                (counted.worse if now else counted.better).append(
                    Flip(pid, grp.domain, grp.key, "fch", "worse" if now else "better", o, n))
    return counted


# --------------------------------------------------------------------------------------------
# The decision
# --------------------------------------------------------------------------------------------


def _resolve_tolerance(tolerances: Tolerances | None, scope: str, metric: str) -> float | None:
    if tolerances is None:
        found: Any = METRICS[metric].default_tolerance
    elif callable(tolerances):
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
    # The tolerance itself is tested: the scope regresses when the worse side's bound of the
    # interval (one-sided at (1 + confidence) / 2) lies beyond it, so a true change within the
    # tolerance regresses at most that one-sided level, whatever the sample size.
    beyond = tolerance is not None and ((hi < -tolerance) if higher else (lo > tolerance))
    return Change(
        scope=scope, metric=metric, old=old, new=new, change=change, interval=(lo, hi), df=df,
        confidence=confidence, groups=groups, pairs=pairs, worse_flips=worse_flips,
        better_flips=better_flips, higher_is_better=higher, tolerance=tolerance,
        worse=worse_amount > 0.0, significant=lo > 0.0 or hi < 0.0,
        significant_worse=significant_worse,
        regressed=beyond,
    )


def _scope_change(scope: str, metric: str, units: Sequence[Unit], level: tuple[int, int, int],
                  confidence: float, tolerance: float | None) -> Change | None:
    found = paired_interval(units, confidence)
    if found is None:
        return None
    change, lo, hi, df = found
    kept = [u for u in units if u[2] > 0]
    old_events, new_events, pairs = level
    return _verdict(scope, metric, old_events / pairs, new_events / pairs, change, (lo, hi), df, confidence,
                    len(kept), pairs, sum(u[0] for u in kept), sum(u[1] for u in kept), tolerance)


def _mean_change(metric: str, parts: Sequence[Change], strata: Sequence[Sequence[Unit]], confidence: float,
                 tolerance: float | None) -> Change | None:
    if not parts:
        return None
    found = stratified_paired_interval(strata, confidence)
    if found is None:
        return None
    mean, lo, hi, df = found
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


def _overall_change(metric: str, tallies: Mapping[str, _Tally], scopes: Mapping[str, Mapping[str, Change]],
                    confidence: float, tolerance: float | None, overall: str) -> Change | None:
    """The overall change of ``metric``: the mean of the domains' changes (its variance the
    stratified cluster variance of every domain's groups, never read off the domains' clipped
    intervals), or the paired test over all their groups together (``"pooled"``)."""
    if overall == "pooled":
        units = [u for tally in tallies.values() for u in tally.units.get(metric, ())]
        levels = [tally.level(metric) for tally in tallies.values()]
        pooled = (sum(x[0] for x in levels), sum(x[1] for x in levels), sum(x[2] for x in levels))
        return _scope_change(OVERALL, metric, units, pooled, confidence, tolerance)
    names = [name for name, changes in scopes.items() if metric in changes]
    parts = [scopes[name][metric] for name in names]
    strata = [tallies[name].units.get(metric, []) for name in names]
    return _mean_change(metric, parts, strata, confidence, tolerance)


def _changes(tallies: Mapping[str, _Tally], metrics: Sequence[str], confidence: float,
             tolerances: Tolerances | None, overall: str) -> dict[str, dict[str, Change]]:
    """Each domain's changes (in ``tallies``' order), then the overall ones; a metric that
    cannot be compared in a scope is absent, and so is a scope with nothing to compare."""
    scopes: dict[str, dict[str, Change]] = {}
    for name, tally in tallies.items():
        out: dict[str, Change] = {}
        for metric in metrics:
            change = _scope_change(name, metric, tally.units.get(metric, ()), tally.level(metric),
                                   confidence, _resolve_tolerance(tolerances, name, metric))
            if change is not None:
                out[metric] = change
        if out:
            scopes[name] = out
    total: dict[str, Change] = {}
    for metric in metrics:
        tolerance = _resolve_tolerance(tolerances, OVERALL, metric)
        change = _overall_change(metric, tallies, scopes, confidence, tolerance, overall)
        if change is not None:
            total[metric] = change
    if total:
        scopes[OVERALL] = total
    return scopes


def compare(
    baseline: Sequence[Mapping[str, Any]],
    current: Sequence[Mapping[str, Any]],
    *,
    confidence: float = 0.95,
    tolerances: Tolerances | None = None,
    overall: str = "mean",
) -> Comparison:
    """Compare the ``current`` run's per-prompt records with the ``baseline`` run's.

    - ``confidence``: of every interval (two-sided); a scope's metric regresses when the
      worse side's bound lies beyond its tolerance, so its one-sided false-alarm rate (a true
      change within the tolerance) is at most ``(1 - confidence) / 2``.
    - ``tolerances``: the largest worsening that is not a regression, per scope and metric
      (see :data:`Tolerances`); default: each metric's
      :attr:`~defan_pytest.metrics.registry.Metric.default_tolerance` (FCH, PMH, RC 0.02; the
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
    groups = _groups(paired, new_by_id)
    metrics = compared_metrics()
    counted = _count(groups, old_by_id, new_by_id, metrics)

    domain_names = sorted(counted.tallies, key=domain_sort_key)
    tallies = {name: counted.tallies[name] for name in domain_names}
    scopes = _changes(tallies, [m.name for m in metrics], confidence, tolerances, overall)

    order = {name: i for i, name in enumerate(domain_names)}

    def flip_key(f: Flip) -> tuple[int, str, str]:
        return (order[f.domain], str(f.group), f.id)

    flipped = tuple(sorted(counted.worse, key=flip_key)) + tuple(sorted(counted.better, key=flip_key))
    pairing = Pairing(len(paired), len(old_by_id) - len(paired), len(new_by_id) - len(paired), len(groups),
                      counted.errored)
    return Comparison(confidence, overall, pairing, scopes, flipped)
