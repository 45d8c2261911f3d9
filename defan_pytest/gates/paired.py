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

The change of a scope is ``sum(new - old) / pairs`` (the overall change: the unweighted mean of
the domains' changes, ``"mean"``, or all groups together, ``"pooled"``). Each pair's value is the
metric's event for one prompt (one group for RC): 0 or 1, or with ``--defan-repeat`` the share of
its asks that have it (``reduce="mean"``) or whether any has (``reduce="all"``, over the asks
both runs made).

The decision
------------

A scope's metric **regresses** when its flips are significantly more often for the worse than
the model's own noise explains (one-sided, at ``(1 - confidence) / 2``) and its estimated change
is past the tolerance. The test against no change is
:func:`defan_pytest.stats.flips.against_noise`: each paired change worse-signed, their net
compared with its variance under no change, the noise measured by the runs' repeats where a run
asked a group more than once, else each answer's own (``noise="answer"``: McNemar's exact test
when every pair is asked once) or each question's (``noise="question"``: the paraphrase group
the unit). ``significant_worse`` says whether the test found the change worse than noise;
``interval`` is the domain's change with its uncertainty as a sample of the domain's groups
(:func:`defan_pytest.stats.paired.paired_interval`: the group the unit, Tango's score interval),
shown for what the sample says of the whole domain. A tolerance of ``None`` means the metric's
change is reported but never judged. Identical runs never regress (the change is 0).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from defan_pytest.gates.comparison import Change, Comparison, Direction, Flip, Pairing
from defan_pytest.metrics.builtin import hallucinated
from defan_pytest.metrics.groups import REDUCES, PairedGroup, PairedValue, Share, answered, pair_value
from defan_pytest.metrics.registry import METRICS, Metric
from defan_pytest.metrics.summary import OVERALL, domain_sort_key
from defan_pytest.stats.design import exact
from defan_pytest.stats.distributions import binomial_half_upper
from defan_pytest.stats.flips import NOISES, GroupChange, NoiseTest, PowerPart, against_noise, catchable_rise, combine
from defan_pytest.stats.paired import paired_interval, stratified_paired_interval
from defan_pytest.stats.intervals import welch_df

__all__ = ["Tolerances", "compare", "compared_metrics", "measured_noise"]

#: Tolerances: a function ``(scope, metric) -> float | None``, or a mapping ``{metric: float}``
#: for every scope, optionally with per-scope mappings ``{scope: {metric: float}}`` that take
#: precedence. ``None`` (or a missing entry): the metric's change is not judged.
Tolerances = Union[Callable[[str, str], Union[float, None]], Mapping[str, Any]]

# Per group (b, c, m): how much the pairs gained the event, lost it (sums of the positive and
# negative changes: counts of pairs when each was asked once), and the pairs.
Unit = tuple[Share, Share, int]


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


def _value(found: Any) -> PairedValue:
    """A metric's pair as a :class:`PairedValue` (a plain ``(old, new)`` of booleans or numbers
    is accepted, as a third-party metric written before repeats returns)."""
    if isinstance(found, PairedValue):
        return found
    old, new = found
    return PairedValue(exact(old), exact(new))


def _round_variance(asks: Sequence[tuple[Optional[int], ...]]) -> tuple[float, int] | None:
    """The variance of one round's group sum between the rounds of one run (the group's
    prompts' asks, round ``k`` each prompt's ``k``-th), and the rounds; ``None`` when the run
    asked the group once. Each prompt is centred at its own mean, so a change in the prompts'
    rates between runs is no noise; a prompt with fewer answered asks (a failed call) weighs
    more in the rounds it has (its mean rests on fewer), and adds nothing to a round it lacks."""
    depth = max((len(a) for a in asks), default=0)
    if depth < 2:
        return None
    totals = [0.0] * depth
    for events in asks:
        given = [e for e in events if e is not None]
        if not given:
            continue
        mean = sum(given) / len(given)
        weight = depth / len(given)
        for k, e in enumerate(events):
            if e is not None:
                totals[k] += weight * (e - mean)
    return sum(t * t for t in totals) / (depth - 1), depth


def measured_noise(values: Sequence[PairedValue]) -> tuple[float, float] | None:
    """The variance of a group's net change under no change, from the runs' repeats, and its
    degrees of freedom: one round's spread divided by each run's rounds (a run asked once
    borrows the other's spread, the same model's under no change), on the rounds less one of
    each run that measured it; ``None`` when neither run repeated the group."""
    old = _round_variance([v.old_asks for v in values])
    new = _round_variance([v.new_asks for v in values])
    if old is None and new is None:
        return None
    spread_old = old[0] if old is not None else new[0]  # type: ignore[index]
    spread_new = new[0] if new is not None else old[0]  # type: ignore[index]
    rounds_old = old[1] if old is not None else 1
    rounds_new = new[1] if new is not None else 1
    df = sum(found[1] - 1 for found in (old, new) if found is not None)
    return spread_old / rounds_old + spread_new / rounds_new, float(df)


@dataclass
class _Tally:
    """One domain's counts of every compared metric: its units per group (the interval's), its
    groups' worse-signed changes (the test's), and each run's sum over all its pairs."""

    units: dict[str, list[Unit]] = field(default_factory=dict)
    changes: dict[str, list[GroupChange]] = field(default_factory=dict)
    old: dict[str, Share] = field(default_factory=dict)
    new: dict[str, Share] = field(default_factory=dict)
    worse: dict[str, int] = field(default_factory=dict)
    better: dict[str, int] = field(default_factory=dict)

    def add(self, metric: Metric, values: Sequence[PairedValue], measure: bool) -> None:
        """Count one group's pairs of ``metric`` (``measure``: the noise from repeats counts)."""
        name = metric.name
        diffs = [v.new - v.old for v in values]
        self.units.setdefault(name, []).append((
            sum(d for d in diffs if d > 0), sum(-d for d in diffs if d < 0), len(values),
        ))
        sign = -1 if metric.higher_is_better else 1
        noise = measured_noise(values) if measure else None
        self.changes.setdefault(name, []).append(GroupChange(
            tuple(sign * d for d in diffs), None if noise is None else noise[0], math.inf if noise is None else noise[1]))
        self.old[name] = self.old.get(name, 0) + sum(v.old for v in values)
        self.new[name] = self.new.get(name, 0) + sum(v.new for v in values)
        self.worse[name] = self.worse.get(name, 0) + sum(1 for d in diffs if sign * d > 0)
        self.better[name] = self.better.get(name, 0) + sum(1 for d in diffs if sign * d < 0)

    def level(self, metric: str) -> tuple[Share, Share, int]:
        """(old sum, new sum, pairs) of ``metric``."""
        pairs = sum(m for _, _, m in self.units.get(metric, ()))
        return self.old.get(metric, 0), self.new.get(metric, 0), pairs


@dataclass
class _Counted:
    """Every domain's tally, the paired prompts that errored in either run, and the FCH flips."""

    tallies: dict[str, _Tally] = field(default_factory=dict)
    errored: int = 0
    worse: list[Flip] = field(default_factory=list)
    better: list[Flip] = field(default_factory=list)


def _count(groups: Sequence[_Group], old_by_id: Mapping[str, Mapping[str, Any]],
           new_by_id: Mapping[str, Mapping[str, Any]], metrics: Sequence[Metric], reduce: str) -> _Counted:
    counted = _Counted()
    for grp in groups:
        tally = counted.tallies.setdefault(grp.domain, _Tally())
        olds = tuple(old_by_id[pid] for pid in grp.ids)
        news = tuple(new_by_id[pid] for pid in grp.ids)
        paired = PairedGroup(grp.domain, grp.type, olds, news, reduce)
        for metric in metrics:
            if metric.paired is not None:
                # Repeats measure the noise of the mean of asks; "all" makes a value 0 or 1,
                # whose noise is each answer's.
                tally.add(metric, [_value(v) for v in metric.paired(paired)], measure=reduce == "mean")
        scored = [(pid, o, n) for pid, o, n in zip(grp.ids, olds, news) if answered(o) and answered(n)]
        counted.errored += len(grp.ids) - len(scored)
        # The prompts whose FCH value went from right to hallucinated or back, for the report.
        for pid, o, n in scored:
            value = pair_value(o, n, hallucinated, reduce)
            if value is not None and value.new != value.old:
                direction: Direction = "worse" if value.new > value.old else "better"
                (counted.worse if direction == "worse" else counted.better).append(
                    Flip(pid, grp.domain, grp.key, "fch", direction, o, n))
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


def _power_part(tally: _Tally, metric: str, weight_of: Callable[[int], float]) -> tuple[PowerPart, bool] | None:
    """What the power calculation needs of one domain's ``metric``: its pairs, the noise of one
    pair's change (measured by repeats, else twice the better-going changes' squares: under no
    change each way is as likely), how far it can get worse, and whether every group's noise
    was measured."""
    old_sum, _, pairs = tally.level(metric)
    if pairs <= 0:
        return None
    noise = 0.0
    measured = True
    spreads: list[tuple[float, float]] = []
    for group in tally.changes.get(metric, ()):
        if group.measured is not None:
            noise += group.measured
            spreads.append((group.measured, group.df))
        else:
            measured = False
            noise += 2.0 * float(sum(d * d for d in group.diffs if d < 0))
    old = float(old_sum) / pairs
    room = old if METRICS[metric].higher_is_better else 1.0 - old
    df = welch_df([v for v, _ in spreads], [d for _, d in spreads]) if measured else math.inf
    return PowerPart(weight_of(pairs), pairs, noise / pairs, room, df), measured


def _catchable(parts: Sequence[tuple[PowerPart, bool]], level: float, tolerance: float | None) -> float | None:
    if tolerance is None or not parts:
        return None
    return catchable_rise([p for p, _ in parts], level, tolerance, measured=all(m for _, m in parts))


def _verdict(scope: str, metric: str, old: float, new: float, change: float, interval: tuple[float, float] | None,
             df: float | None, confidence: float, groups: int, pairs: int, worse_flips: int, better_flips: int,
             test: NoiseTest, tolerance: float | None, catchable: float | None = None) -> Change:
    """The :class:`Change` and its decision: worse than no change (the test against the model's
    own noise, one-sided at ``(1 - confidence) / 2``) and past the tolerance."""
    higher = METRICS[metric].higher_is_better
    worse_amount = -change if higher else change
    lo, hi = interval if interval is not None else (math.nan, math.nan)
    level = (1.0 - confidence) / 2.0
    significant_worse = worse_amount > 0.0 and test.p_value < level
    past = tolerance is not None and worse_amount > tolerance
    return Change(
        scope=scope, metric=metric, old=old, new=new, change=change, interval=interval, df=df,
        confidence=confidence, groups=groups, pairs=pairs, worse_flips=worse_flips,
        better_flips=better_flips, higher_is_better=higher, tolerance=tolerance,
        worse=worse_amount > 0.0, significant=lo > 0.0 or hi < 0.0,
        significant_worse=significant_worse, regressed=significant_worse and past,
        p_value=test.p_value, level=level, noise=test.noise, method=test.method, catchable=catchable,
    )


def _scope_change(scope: str, metric: str, tally: _Tally, confidence: float, tolerance: float | None,
                  noise: str) -> tuple[Change, NoiseTest] | None:
    units = tally.units.get(metric, ())
    found = paired_interval(units, confidence)
    test = against_noise(tally.changes.get(metric, ()), noise)
    if found is None or test is None:
        return None
    change, lo, hi, df = found
    kept = [u for u in units if u[2] > 0]
    old_sum, new_sum, pairs = tally.level(metric)
    part = _power_part(tally, metric, lambda n: 1.0 / n)
    catchable = _catchable([part] if part else [], (1.0 - confidence) / 2.0, tolerance)
    made = _verdict(scope, metric, float(old_sum) / pairs, float(new_sum) / pairs, change, (lo, hi), df, confidence,
                    len(kept), pairs, tally.worse.get(metric, 0), tally.better.get(metric, 0), test, tolerance,
                    catchable)
    return made, test


def _overall_change(metric: str, tallies: Mapping[str, _Tally], scopes: Mapping[str, tuple[Change, NoiseTest]],
                    confidence: float, tolerance: float | None, overall: str, noise: str) -> Change | None:
    """The overall change of ``metric``: the mean of the domains' changes (the test a weighted
    sum of the domains' tests; the interval from the stratified cluster variance of every
    domain's groups, never read off the domains' clipped intervals), or everything over all
    their groups together (``"pooled"``)."""
    if overall == "pooled":
        pooled = _Tally()
        for tally in tallies.values():
            for key in ("units", "changes"):
                getattr(pooled, key).setdefault(metric, []).extend(getattr(tally, key).get(metric, ()))
            for key in ("old", "new"):
                getattr(pooled, key)[metric] = getattr(pooled, key).get(metric, 0) + getattr(tally, key).get(metric, 0)
            for key in ("worse", "better"):
                getattr(pooled, key)[metric] = getattr(pooled, key).get(metric, 0) + getattr(tally, key).get(metric, 0)
        found = _scope_change(OVERALL, metric, pooled, confidence, tolerance, noise)
        return None if found is None else found[0]
    parts = [scopes[name] for name in scopes]
    if not parts:
        return None
    interval = stratified_paired_interval([tallies[name].units.get(metric, []) for name in scopes], confidence)
    test = combine([(1.0 / (len(parts) * c.pairs), t) for c, t in parts])
    if interval is None or test is None:
        return None
    mean, lo, hi, df = interval
    changes = [c for c, _ in parts]
    count = len(changes)
    power = [part for name in scopes
             if (part := _power_part(tallies[name], metric, lambda n: 1.0 / (count * n))) is not None]
    return _verdict(
        OVERALL, metric, sum(c.old for c in changes) / len(changes), sum(c.new for c in changes) / len(changes),
        mean, (max(-1.0, lo), min(1.0, hi)), df if math.isfinite(df) else None, confidence,
        sum(c.groups for c in changes), sum(c.pairs for c in changes), sum(c.worse_flips for c in changes),
        sum(c.better_flips for c in changes), test, tolerance, _catchable(power, (1.0 - confidence) / 2.0, tolerance),
    )


def _changes(tallies: Mapping[str, _Tally], metrics: Sequence[str], confidence: float,
             tolerances: Tolerances | None, overall: str, noise: str) -> dict[str, dict[str, Change]]:
    """Each domain's changes (in ``tallies``' order), then the overall ones; a metric that
    cannot be compared in a scope is absent, and so is a scope with nothing to compare."""
    found: dict[str, dict[str, tuple[Change, NoiseTest]]] = {}
    for name, tally in tallies.items():
        out: dict[str, tuple[Change, NoiseTest]] = {}
        for metric in metrics:
            made = _scope_change(name, metric, tally, confidence, _resolve_tolerance(tolerances, name, metric), noise)
            if made is not None:
                out[metric] = made
        if out:
            found[name] = out
    scopes = {name: {metric: made[0] for metric, made in out.items()} for name, out in found.items()}
    total: dict[str, Change] = {}
    for metric in metrics:
        tolerance = _resolve_tolerance(tolerances, OVERALL, metric)
        parts = {name: out[metric] for name, out in found.items() if metric in out}
        change = _overall_change(metric, tallies, parts, confidence, tolerance, overall, noise)
        if change is not None:
            total[metric] = change
    if total:
        scopes[OVERALL] = total
    return scopes


def _amount_change(scope: str, metric: Metric, pairs: Sequence[tuple[float, float]], confidence: float,
                   tolerance: float | None) -> Change | None:
    """The change of an amount (cost, latency p95) over the pairs with a value in both runs:
    its figure over each run's values, and McNemar's sign test on which of a pair's two values
    is the larger, over the pairs with a value past the metric's tail quantile of both runs'
    values together (exchanging a pair's two values changes neither that quantile nor which
    pairs pass it: the test is exact under no change)."""
    if not pairs or metric.aggregate is None:
        return None
    olds, news = [o for o, _ in pairs], [n for _, n in pairs]
    old, new = float(metric.aggregate(olds)), float(metric.aggregate(news))
    cut = -math.inf
    if metric.tail is not None:
        both = sorted(olds + news)
        cut = both[min(len(both) - 1, int(metric.tail * len(both)))]
    tested = [(o, n) for o, n in pairs if max(o, n) > cut and o != n]
    worse = sum(1 for o, n in tested if (n < o if metric.higher_is_better else n > o))
    better = len(tested) - worse
    test = NoiseTest(float(worse - better), float(len(tested)), binomial_half_upper(worse, len(tested)),
                     "sign test", "answers", len(pairs))
    return _verdict(scope, metric.name, old, new, new - old, None, None, confidence, 0, len(pairs), worse, better,
                    test, tolerance)


def _amount_changes(groups: Sequence[_Group], old_by_id: Mapping[str, Mapping[str, Any]],
                    new_by_id: Mapping[str, Mapping[str, Any]], confidence: float, tolerances: Tolerances | None,
                    scopes: dict[str, dict[str, Change]]) -> None:
    """Add each compared amount metric's change to ``scopes``: per domain, and overall over
    every pair (an amount's overall figure is counted over every record, not as a mean)."""
    for metric in METRICS.values():
        if not (metric.unit and metric.amount is not None):
            continue
        by_domain: dict[str, list[tuple[float, float]]] = {}
        for grp in groups:
            for pid in grp.ids:
                o, n = metric.amount(old_by_id[pid]), metric.amount(new_by_id[pid])
                if o is not None and n is not None:
                    by_domain.setdefault(grp.domain, []).append((float(o), float(n)))
        for domain in sorted(by_domain, key=domain_sort_key):
            made = _amount_change(domain, metric, by_domain[domain], confidence,
                                  _resolve_tolerance(tolerances, domain, metric.name))
            if made is not None:
                scopes.setdefault(domain, {})[metric.name] = made
        every = [p for pairs in by_domain.values() for p in pairs]
        made = _amount_change(OVERALL, metric, every, confidence, _resolve_tolerance(tolerances, OVERALL, metric.name))
        if made is not None:
            scopes.setdefault(OVERALL, {})[metric.name] = made


def compare(
    baseline: Sequence[Mapping[str, Any]],
    current: Sequence[Mapping[str, Any]],
    *,
    confidence: float = 0.95,
    tolerances: Tolerances | None = None,
    overall: str = "mean",
    reduce: str = "mean",
    noise: str = "answer",
) -> Comparison:
    """Compare the ``current`` run's per-prompt records with the ``baseline`` run's.

    - ``confidence``: of every interval (two-sided); a scope's metric regresses when its test
      against no change is significant one-sided at ``(1 - confidence) / 2`` and its change
      is past the tolerance.
    - ``tolerances``: the largest worsening that is not a regression, per scope and metric
      (see :data:`Tolerances`); default: each metric's
      :attr:`~defan_pytest.metrics.registry.Metric.default_tolerance` (FCH, PMH, RC 0.02; the
      error rate not judged).
    - ``overall``: ``"mean"`` (the mean of the domain changes) or ``"pooled"`` (all groups
      together).
    - ``reduce``: how a prompt's asks make its value (``--defan-repeat-reduce``: ``"mean"`` or
      ``"all"``).
    - ``noise``: what the model's own noise is made of where no repeat measured it:
      ``"answer"`` (each call its own draw) or ``"question"`` (a question's paraphrases
      together).

    Raises :class:`ValueError` for a record without ``id`` or ``domain``, an id given twice in
    one run, or a bad argument. See the module docstring for pairing, the test and the
    decision.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if overall not in ("mean", "pooled"):
        raise ValueError(f'overall must be "mean" or "pooled", got {overall!r}')
    if reduce not in REDUCES:
        raise ValueError(f"reduce must be one of {', '.join(REDUCES)}, got {reduce!r}")
    if noise not in NOISES:
        raise ValueError(f"noise must be one of {', '.join(NOISES)}, got {noise!r}")
    old_by_id = _by_id(baseline, "baseline")
    new_by_id = _by_id(current, "current")
    # Pairs in the current run's order: deterministic, and what the run itself listed.
    paired = [pid for pid in new_by_id if pid in old_by_id]
    groups = _groups(paired, new_by_id)
    metrics = compared_metrics()
    counted = _count(groups, old_by_id, new_by_id, metrics, reduce)

    domain_names = sorted(counted.tallies, key=domain_sort_key)
    tallies = {name: counted.tallies[name] for name in domain_names}
    scopes = _changes(tallies, [m.name for m in metrics], confidence, tolerances, overall, noise)
    _amount_changes(groups, old_by_id, new_by_id, confidence, tolerances, scopes)
    # Domains in report order, the overall scope last (an amount may add a domain's scope).
    scopes = {name: scopes[name] for name in sorted(scopes, key=lambda s: (s == OVERALL, domain_sort_key(s)))}

    order = {name: i for i, name in enumerate(domain_names)}

    def flip_key(f: Flip) -> tuple[int, str, str]:
        return (order[f.domain], str(f.group), f.id)

    flipped = tuple(sorted(counted.worse, key=flip_key)) + tuple(sorted(counted.better, key=flip_key))
    pairing = Pairing(len(paired), len(old_by_id) - len(paired), len(new_by_id) - len(paired), len(groups),
                      counted.errored)
    return Comparison(confidence, overall, pairing, scopes, flipped)
