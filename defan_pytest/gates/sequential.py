"""Sequential gating (``--defan-sequential``): whether the gates' verdicts are settled after
the paraphrase groups asked so far, so that the run can stop asking.

A :class:`Judge` takes the groups as they are answered (:meth:`Judge.add_group`: the scored
records of one whole paraphrase group) and keeps, for every scope and judged metric, the
anytime-valid bounds of :mod:`defan_pytest.stats.sequential` on the stream of its per-prompt
values (per group for RC). After a batch, :meth:`Judge.state` says of each scope:

- the **regression gate** (with a baseline), per metric with a tolerance, in every scope that
  shares ``min_samples`` groups with the baseline: *fail* once the paired changes reject
  "no change or better" (the sequential test against the model's own noise: under no change a
  flip is as likely each way) **and** "a change at most the tolerance", both at the gate's
  corrected one-sided level (``(1 - confidence) / K``, as today); *pass* once they reject "a
  change of at least :data:`PASS_FACTOR` times the tolerance" at ``1 - confidence``, or of
  the change the whole sample could catch if larger (:meth:`Judge.pass_now`; the indifference
  zone: a change between the tolerance and that may pass early);
- the **level gate**, per limit: *pass* or *fail* once the limit is excluded from the figure's
  anytime-valid bounds at ``(1 - 0.95) / 2`` a side; a limit of a metric without per-prompt
  values (cost, latency) keeps its scope open to the end;
- the **overall** figure (the mean of domains): its bounds are the mean of the domains' bounds,
  each at the level divided by the number of domains (a union bound), a domain asked to its
  end counting its figure exactly; its test against no change weights each domain's changes
  as the mean does (predictable weights from the planned sample).

The gate's verdict is settled when one scope is settled failing (the gate fails whatever the
others do) or every judged scope is settled passing (:meth:`Judge.settled`); a domain keeps
being asked while one of its own scopes is open, or, once none is, while the overall one is
(:meth:`Judge.wanted`). The verdicts themselves stay the gates' own, on the prompts asked: a
settled scope is one whose verdict those gates will give.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from defan_pytest.gates.paired import compared_metrics
from defan_pytest.gates.thresholds import Thresholds
from defan_pytest.gates.thresholds.keys import DEFAULT_MIN_SHARED_GROUPS
from defan_pytest.metrics.groups import PairedGroup, PairedValue
from defan_pytest.metrics.registry import METRICS, Metric
from defan_pytest.metrics.summary import OVERALL
from defan_pytest.stats.flips import PowerPart, catchable_rise
from defan_pytest.stats.sequential import BetTest, MeanBounds, grid

__all__ = ["LEVEL_CONFIDENCE", "PASS_FACTOR", "Judge", "ScopeState", "State"]

State = Literal["pass", "fail", "open"]

#: The regression gate's indifference zone: a scope is settled passing once its change is
#: shown to be under this many times its tolerance (bench/sequential.py: 2 let a change of
#: 1.25 tolerances pass early in half the runs; 1.25 costs an unchanged run 1 point more).
PASS_FACTOR = 1.25
#: The confidence of the level gate's intervals, whose bounds settle a limit.
LEVEL_CONFIDENCE = 0.95


@dataclass
class ScopeState:
    """Where one scope stands: ``state`` and, per judged metric, its own state and why."""

    scope: str
    state: State = "open"
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON."""
        return {"state": self.state, "metrics": self.metrics}


def _values(metric: Metric, group: PairedGroup) -> list[tuple[float, float]]:
    """The ``(old, new)`` values the metric's paired form gives for one group."""
    assert metric.paired is not None
    out = []
    for value in metric.paired(group):
        if isinstance(value, PairedValue):
            out.append((float(value.old), float(value.new)))
        else:
            old, new = value
            out.append((float(old), float(new)))
    return out


class _Stream:
    """One scope's metric: its bounds on the values (or changes) and their count."""

    def __init__(self, lo: float, hi: float, extra: Iterable[float]) -> None:
        self.bounds = MeanBounds(lo, hi, grid(lo, hi, extra))

    def add(self, xs: Iterable[float]) -> None:
        self.bounds.extend(xs)


class Judge:
    """The sequential state of one run's gates (see the module docstring).

    ``thresholds``: the run's; ``planned``: each domain's planned paraphrase groups and
    prompts (``{domain: (groups, prompts)}``, the whole sample); ``baseline``: the baseline's
    rows (``None``: no regression gate); ``reduce`` and ``noise`` as the regression gate's.
    """

    def __init__(self, thresholds: Thresholds, planned: Mapping[str, tuple[int, int]],
                 baseline: Sequence[Mapping[str, Any]] | None = None, reduce: str = "mean",
                 judged: int | None = None) -> None:
        self.thresholds = thresholds
        self.planned = dict(planned)
        self.domains = list(planned)
        self.reduce = reduce
        self.noise = thresholds.regression_noise()
        self.old = {str(r.get("id")): r for r in baseline} if baseline is not None else None
        self.asked_groups: dict[str, int] = {d: 0 for d in self.domains}
        self.asked_prompts: dict[str, int] = {d: 0 for d in self.domains}
        confidence = float(thresholds.regression_confidence())
        self.confidence = confidence
        # The regression gate's corrected one-sided level (as regression.judge: K judged changes).
        self.judged = judged if judged is not None else self._count_judged()
        self.alpha = (1.0 - confidence) / max(1, self.judged)
        self.beta = 1.0 - confidence
        self.level_alpha = (1.0 - LEVEL_CONFIDENCE) / 2.0
        self.metrics = [m for m in compared_metrics()]
        # Per (domain, metric): changes (regression) and values (level).
        self.changes: dict[tuple[str, str], _Stream] = {}
        self.levels: dict[tuple[str, str], _Stream] = {}
        # (domain, metric) -> [change sum, pairs, value sum, values, baseline value sum, better squares]
        self.sums: dict[tuple[str, str], list[float]] = {}
        # The overall test against no change, per metric: each domain's changes weighted as the
        # mean of domains weighs them (1 / (D * planned prompts)), scaled into [-1, 1].
        weights = {d: 1.0 / max(1, p) for d, (_, p) in self.planned.items()}
        top = max(weights.values(), default=1.0)
        self.weight = {d: w / top for d, w in weights.items()}
        self.overall_noise: dict[str, BetTest] = {m.name: BetTest(0.0, 1, -1.0, 1.0) for m in self.metrics}

    # -- what is judged ------------------------------------------------------------------------

    def _count_judged(self) -> int:
        if self.old is None:
            return 0
        count = 0
        for scope in [*self.domains, OVERALL]:
            if not self._shared_enough(scope):
                continue
            count += sum(1 for m in compared_metrics() if self.thresholds.tolerance(scope, m.name) is not None
                         and self._comparable(scope, m.name))
        return count

    def _comparable(self, scope: str, metric: str) -> bool:
        """Whether the metric has pairs in ``scope`` at all: RC needs paraphrases (math's
        groups are single prompts)."""
        if metric != "rc":
            return True
        domains = self.domains if scope == OVERALL else [scope]
        return any(p > g for g, p in (self.planned.get(d, (0, 0)) for d in domains))

    def _needed(self, scope: str) -> int:
        limits = self.thresholds.for_overall() if scope == OVERALL else self.thresholds.for_domain(scope)
        need = limits.min_samples
        return DEFAULT_MIN_SHARED_GROUPS if need is None else int(need)

    def _shared_enough(self, scope: str) -> bool:
        """Whether the whole sample gives ``scope`` the groups in common with the baseline the
        regression gate needs (the planned groups: the baseline holds every prompt of a
        pull request's sample)."""
        groups = sum(g for g, _ in self.planned.values()) if scope == OVERALL else self.planned.get(scope, (0, 0))[0]
        return groups >= self._needed(scope)

    def _enough(self, scope: str) -> bool:
        """Whether ``scope`` has been asked the groups its gates need to judge it (the level
        gate's ``min_samples``, and the regression gate's groups in common), or all it has."""
        limits = self.thresholds.for_overall() if scope == OVERALL else self.thresholds.for_domain(scope)
        need = max(int(limits.min_samples or 0), self._needed(scope) if self.old is not None else 0)
        if scope == OVERALL:
            asked, planned = sum(self.asked_groups.values()), sum(g for g, _ in self.planned.values())
        else:
            asked, planned = self.asked_groups.get(scope, 0), self.planned.get(scope, (0, 0))[0]
        return asked >= min(need, planned)

    def _limit(self, scope: str, metric: Metric) -> float | None:
        limits = self.thresholds.for_overall() if scope == OVERALL else self.thresholds.for_domain(scope)
        found = limits.get(metric.threshold_key)
        return None if found is None else float(found)

    def _level_judged(self, scope: str) -> bool:
        limits = self.thresholds.for_overall() if scope == OVERALL else self.thresholds.for_domain(scope)
        need = limits.min_samples
        groups = sum(g for g, _ in self.planned.values()) if scope == OVERALL else self.planned.get(scope, (0, 0))[0]
        return need is None or groups >= int(need)

    # -- taking answers --------------------------------------------------------------------------

    def add_group(self, domain: str, type_: str, records: Sequence[Mapping[str, Any]]) -> None:
        """One whole paraphrase group's scored records (this run's; ``repeats`` joined)."""
        if domain not in self.asked_groups:
            self.domains.append(domain)
            self.planned.setdefault(domain, (1, len(records)))
            self.asked_groups[domain] = self.asked_prompts[domain] = 0
            self.weight.setdefault(domain, 1.0)
        self.asked_groups[domain] += 1
        self.asked_prompts[domain] += len(records)
        news = tuple(records)
        own = PairedGroup(domain, type_, news, news, self.reduce)
        for metric in self.metrics:
            key = (domain, metric.name)
            sums = self.sums.setdefault(key, [0.0] * 6)
            limit = self._limit(domain, metric)
            over = self._limit(OVERALL, metric)
            if limit is not None or over is not None:  # the level gate judges it here
                values = [new for _, new in _values(metric, own)]
                sums[2] += sum(values)
                sums[3] += len(values)
                self.levels.setdefault(key, _Stream(0.0, 1.0, [v for v in (limit, over) if v is not None])).add(values)
            if self.old is None:
                continue
            olds = tuple(self.old.get(str(r.get("id"))) for r in news)
            kept = [(o, n) for o, n in zip(olds, news) if o is not None]
            if not kept:
                continue
            pair = PairedGroup(domain, type_, tuple(o for o, _ in kept), tuple(n for _, n in kept), self.reduce)
            sign = -1.0 if metric.higher_is_better else 1.0
            found = _values(metric, pair)
            diffs = [sign * (new - old) for old, new in found]
            if not diffs:
                continue
            sums[0] += sum(diffs)
            sums[1] += len(diffs)
            sums[4] += sum(old for old, _ in found)
            sums[5] += sum(d * d for d in diffs if d < 0)
            # A question's paraphrases together ([regression] noise = "question"): the group is
            # one unit; otherwise each answer is its own draw.
            units = [sum(diffs) / len(diffs)] if self.noise == "question" else diffs
            tols = [t for t in (self.thresholds.tolerance(domain, metric.name),
                                self.thresholds.tolerance(OVERALL, metric.name)) if t is not None]
            extra = [0.0, *tols, *(self.pass_at(domain, metric.name, t) for t in tols)]
            self.changes.setdefault(key, _Stream(-1.0, 1.0, extra)).add(units)
            test = self.overall_noise[metric.name]
            for u in units:
                test.add(self.weight[domain] * u)

    def units(self, domain: str, metric: str) -> int:
        """The units the regression gate's test counts in ``domain`` over the whole sample:
        its prompts, or its groups for a group figure (RC) or a question's noise."""
        groups, prompts = self.planned.get(domain, (0, 0))
        return groups if (self.noise == "question" or metric == "rc") else prompts

    def pass_at(self, domain: str, metric: str, tolerance: float) -> float:
        """The change a scope must be shown to stay under to pass early: :data:`PASS_FACTOR`
        times its tolerance, or the smallest change the whole sample could show significant at
        all, if larger (``k`` worse flips and none better reach the corrected level when
        ``2 ** -k`` does; fewer units than that cannot call a change smaller than ``k / units``:
        RC over 28 groups, for one)."""
        flips = math.ceil(math.log2(1.0 / self.alpha)) if self.alpha > 0.0 else 1
        units = self.units(domain, metric) if domain != OVERALL else min(
            (self.units(d, metric) for d in self.domains), default=0)
        reach = min(1.0, flips / units) if units > 0 else 1.0
        return max(PASS_FACTOR * tolerance, reach)

    def pass_now(self, domain: str, metric: str, tolerance: float) -> float:
        """:meth:`pass_at`, or the smallest change the whole sample catches with 80% power
        (:func:`~defan_pytest.stats.flips.catchable_rise`, the regression gate's own power
        figure), if larger: its noise read from the flips for the better so far (under no
        change each way is as likely), so that a noisy application is not held to a change its
        whole sample could not catch either."""
        reach = self.pass_at(domain, metric, tolerance)
        sums = self.sums.get((domain, metric))
        if sums is None or not sums[1] or reach >= 1.0:
            return reach
        units = self.units(domain, metric)
        old = sums[4] / sums[1]
        room = old if METRICS[metric].higher_is_better else 1.0 - old
        found = catchable_rise([PowerPart(1.0 / units, units, 2.0 * sums[5] / sums[1], room)], self.alpha, tolerance)
        return 1.0 if found is None else max(reach, found)

    # -- the state ---------------------------------------------------------------------------

    def exhausted(self, domain: str) -> bool:
        """Whether every planned group of ``domain`` has been asked."""
        return self.asked_groups.get(domain, 0) >= self.planned.get(domain, (0, 0))[0]

    def _estimate(self, domain: str, metric: str, change: bool) -> float | None:
        sums = self.sums.get((domain, metric))
        if sums is None:
            return None
        total, count = (sums[0], sums[1]) if change else (sums[2], sums[3])
        return total / count if count else None

    def _domain_bound(self, domain: str, metric: str, side: str, alpha: float, change: bool,
                      lo: float, hi: float) -> float:
        """A domain's bound for the overall mean: its figure exactly once asked to the end."""
        estimate = self._estimate(domain, metric, change)
        if self.exhausted(domain) and estimate is not None:
            return estimate
        stream = (self.changes if change else self.levels).get((domain, metric))
        if stream is None:
            return lo if side == "lower" else hi
        return stream.bounds.lower(alpha) if side == "lower" else stream.bounds.upper(alpha)

    def _regression(self, scope: str, metric: Metric) -> dict[str, Any] | None:
        tol = self.thresholds.tolerance(scope, metric.name)
        if self.old is None or tol is None or not self._shared_enough(scope) or not self._comparable(scope, metric.name):
            return None
        if scope == OVERALL:
            domains = [d for d in self.domains if self._comparable(d, metric.name)]
            count = len(domains)
            estimates = [self._estimate(d, metric.name, True) for d in domains]
            known = [e for e in estimates if e is not None]
            estimate = sum(known) / len(known) if known else None
            lower = sum(self._domain_bound(d, metric.name, "lower", self.alpha / count, True, -1.0, 1.0)
                        for d in domains) / count
            upper = sum(self._domain_bound(d, metric.name, "upper", self.beta / count, True, -1.0, 1.0)
                        for d in domains) / count
            noise = self.overall_noise[metric.name].rejects(self.alpha)
            done = all(self.exhausted(d) for d in domains)
            fail = noise and lower > tol
            reach = min(1.0, sum(self.pass_now(d, metric.name, tol) for d in domains) / count)
            passed = reach >= 1.0 or upper <= reach
        else:
            stream = self.changes.get((scope, metric.name))
            estimate = self._estimate(scope, metric.name, True)
            done = self.exhausted(scope)
            reach = self.pass_now(scope, metric.name, tol)
            if stream is None:
                fail, passed, lower, upper = False, reach >= 1.0, -1.0, 1.0
            else:
                b = stream.bounds
                fail = b.rejects_at_most(0.0, self.alpha) and b.rejects_at_most(tol, self.alpha)
                # A sample too small to call any change significant passes as it stands.
                passed = reach >= 1.0 or b.upper(self.beta) <= reach
                lower, upper = b.lower(self.alpha), b.upper(self.beta)
        state: State = "fail" if fail else "pass" if passed else "open"
        return {"gate": "regression", "state": state, "estimate": estimate, "lower": lower, "upper": upper,
                "tolerance": tol, "pass_below": reach, "asked_to_end": done}

    def _level(self, scope: str, metric: Metric) -> dict[str, Any] | None:
        limit = self._limit(scope, metric)
        if limit is None or not self._level_judged(scope):
            return None
        a = self.level_alpha
        if scope == OVERALL:
            count = len(self.domains)
            lower = sum(self._domain_bound(d, metric.name, "lower", a / count, False, 0.0, 1.0) for d in self.domains) / count
            upper = sum(self._domain_bound(d, metric.name, "upper", a / count, False, 0.0, 1.0) for d in self.domains) / count
            known = [e for d in self.domains if (e := self._estimate(d, metric.name, False)) is not None]
            estimate = sum(known) / len(known) if known else None
        else:
            stream = self.levels.get((scope, metric.name))
            estimate = self._estimate(scope, metric.name, False)
            lower = stream.bounds.lower(a) if stream is not None else 0.0
            upper = stream.bounds.upper(a) if stream is not None else 1.0
            if self.exhausted(scope) and estimate is not None:
                lower = upper = estimate
        if metric.higher_is_better:
            passed, fail = lower >= limit, upper < limit
        else:
            passed, fail = upper <= limit, lower > limit
        state: State = "fail" if fail else "pass" if passed else "open"
        return {"gate": "level", "state": state, "estimate": estimate, "lower": lower, "upper": upper, "limit": limit}

    def state(self) -> dict[str, ScopeState]:
        """Every judged scope's state (domains, then ``overall``); a scope nothing judges is
        absent."""
        out: dict[str, ScopeState] = {}
        for scope in [*self.domains, OVERALL]:
            found = ScopeState(scope)
            for metric in METRICS.values():
                limits = self.thresholds.for_overall() if scope == OVERALL else self.thresholds.for_domain(scope)
                if metric.paired is None:
                    if limits.get(metric.threshold_key) is not None and self._level_judged(scope):
                        found.metrics[f"level:{metric.name}"] = {"gate": "level", "state": "open",
                                                                 "why": "not judged sequentially"}
                    continue
                for made in (self._level(scope, metric), self._regression(scope, metric)):
                    if made is not None:
                        found.metrics[f"{made['gate']}:{metric.name}"] = made
            if not found.metrics:
                continue
            if not self._enough(scope):
                # The gates judge a scope on min_samples groups: none is settled before them.
                for made in found.metrics.values():
                    made["state"] = "open"
            states = {m["state"] for m in found.metrics.values()}
            found.state = "fail" if "fail" in states else "open" if "open" in states else "pass"
            out[scope] = found
        return out

    def settled(self, states: Mapping[str, ScopeState] | None = None) -> bool:
        """Whether the gate's verdict is settled: one scope fails, or every judged one passes."""
        states = self.state() if states is None else states
        values = [s.state for s in states.values()]
        return "fail" in values or all(v == "pass" for v in values)

    def wanted(self, states: Mapping[str, ScopeState] | None = None) -> list[str]:
        """The domains to keep asking (not asked to the end): those with an open scope of
        their own, or a domain no scope of its own judges; all of them while only the
        overall figure is open."""
        states = self.state() if states is None else states
        left = [d for d in self.domains if not self.exhausted(d)]
        own = [d for d in left if d not in states or states[d].state == "open"]
        if own:
            return own
        overall = states.get(OVERALL)
        return left if overall is not None and overall.state == "open" else []

    def open_scopes(self, states: Mapping[str, ScopeState] | None = None) -> list[str]:
        """The scopes whose verdict is still open."""
        states = self.state() if states is None else states
        return [s for s, v in states.items() if v.state == "open"]


def fraction(asked: int, total: int) -> float:
    """``asked / total`` (1 for an empty run)."""
    return asked / total if total else 1.0


def bound_text(x: float) -> str:
    """A bound as points (``+3.2``)."""
    return f"{100 * x:+.1f}" if math.isfinite(x) else "-"


def stop_lines(block: Mapping[str, Any] | None) -> list[str]:
    """What a sequential run's summary says (the report's ``meta.sequential``): where it
    stopped, what it asked of how many, what that saved, and the scopes still open."""
    if not block:
        return []
    asked, total = int(block.get("asked") or 0), int(block.get("total") or 0)
    share = f"{100 * fraction(asked, total):.0f}%"
    if block.get("settled"):
        where = f"stopped after batch {int(block.get('batches') or 0)}: the verdict was settled"
    else:
        where = f"asked the whole sample ({int(block.get('batches') or 0)} batches): the verdict was not settled sooner"
    saved = block.get("saved") or {}
    parts = [f"{int(saved.get('prompts') or 0):,} prompts"]
    if isinstance(saved.get("tokens"), (int, float)):
        parts.append(f"about {int(saved['tokens']):,} tokens")
    if isinstance(saved.get("dollars"), (int, float)):
        parts.append(f"about ${float(saved['dollars']):.2f}")
    lines = [f"defan sequential: {where}; asked {asked:,} of {total:,} prompts ({share}); saved {', '.join(parts)}"]
    still = [str(s) for s in block.get("open") or ()]
    if still:
        lines.append(f"defan sequential: still open when it stopped: {', '.join(still)} (judged as a fixed sample)")
    return lines


def where_text(block: Mapping[str, Any]) -> str:
    """Where a sequential run stopped, for a verdict's message: ``--defan-sequential: stopped
    after batch 4, 120 of 600 prompts asked``."""
    asked, total = int(block.get("asked") or 0), int(block.get("total") or 0)
    how = f"stopped after batch {int(block.get('batches') or 0)}" if block.get("settled") else "asked the whole sample"
    return f"--defan-sequential: {how}, {asked:,} of {total:,} prompts asked"
