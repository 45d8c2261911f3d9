"""What a metric counts from and what it returns: the paraphrase groups of one scope
(:class:`Group`), a figure (:class:`Figure`), and for the regression gate one group's prompts in
two runs (:class:`PairedGroup`) with the pairs of events a metric compares
(:data:`PairedEvents`, :func:`per_response`).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from defan_pytest.verdicts import CALL_ERROR, outcome_of

__all__ = ["Figure", "Group", "Interval", "PairedEvents", "PairedGroup", "errored", "per_response"]

Interval = tuple[float, float]


def errored(record: Mapping[str, Any]) -> bool:
    """Whether the model call of ``record`` failed (its ``error`` set): never a hallucination,
    left out of every scored figure (an empty string, what converters write, is no error)."""
    return outcome_of(record) is CALL_ERROR


# --------------------------------------------------------------------------------------------
# What a metric counts from, and what it returns
# --------------------------------------------------------------------------------------------


@dataclass
class Group:
    """One paraphrase group of one domain, as a metric's counting function sees it.

    ``records`` are the group's per-response records in input order (the caller's mappings, not
    copies: read them, never change them). ``size``, ``errors``, ``not_correct`` and
    ``not_aligned`` are running counts over them; ``claims`` has one entry per response
    (``None`` for an errored one; RC reads the scored ones, :attr:`scored_claims`). ``consistent`` is set by
    :func:`defan_pytest.metrics.summary.collect_groups` for the groups that count for RC
    (:attr:`counts_for_rc`) and stays ``None`` for the others.
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
        """True for a group with at least two scored responses: RC compares the answered
        paraphrases, an errored one left out as it is from FCH and PMH (SCORING.md: "An
        errored response is never scored ... left out of the denominators")."""
        return self.scored > 1

    @property
    def scored_claims(self) -> list[str | None]:
        """The claims of the scored responses, in input order (what RC compares)."""
        return [rec.get("claim") for rec in self.scored_records]

    @property
    def scored_records(self) -> list[Mapping[str, Any]]:
        """The records of the responses that were scored, in input order."""
        return [rec for rec in self.records if not errored(rec)]


@dataclass(frozen=True)
class Figure:
    """What a metric's counting function returns for one scope (a domain, or all records).

    ``value`` is the point estimate in [0, 1] (``None`` when it cannot be computed, e.g. nothing
    to count), ``interval`` its unrounded 95% ``(lo, hi)`` (``None`` together with the value),
    and ``counts`` the counts the metric publishes in the report, exactly the names listed in
    :attr:`Metric.publishes`. ``df``: the degrees of freedom of the variance behind the
    interval (``G - 1`` for a rate over G groups), which the overall mean's interval needs to
    combine domains; ``None`` when nothing was estimated (an exact interval), read as a normal
    quantile. ``units``: the figure's per-group counts ``(u_g, n_g)`` when it is a rate over
    groups (``sum(u) / sum(n)``), from which the overall mean of domains gets its variance
    (:func:`defan_pytest.stats.design.rate_design`, one stratum a domain); ``None`` for a
    figure that is not such a rate (its overall interval is then read off the domains'
    intervals, :func:`defan_pytest.stats.intervals.mean_interval`).
    """

    value: float | None
    interval: Interval | None = None
    counts: Mapping[str, int] = field(default_factory=dict)
    df: float | None = None
    units: tuple[tuple[int, int], ...] | None = None


@dataclass(frozen=True)
class PairedGroup:
    """One paraphrase group's prompts asked in both runs, as a metric's ``paired`` sees them.

    ``old`` and ``new`` are the baseline's and this run's records of the same prompts, in the
    same order (this run's); ``domain`` and ``type`` are this run's.
    """

    domain: str
    type: str
    old: tuple[Mapping[str, Any], ...]
    new: tuple[Mapping[str, Any], ...]

    @property
    def pairs(self) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
        """Every prompt's ``(old record, new record)``."""
        return list(zip(self.old, self.new))

    @property
    def scored_pairs(self) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
        """The pairs of the prompts scored in both runs (an errored response in either run is
        no hallucination, so it is left out of every scored comparison)."""
        return [(o, n) for o, n in self.pairs if not (errored(o) or errored(n))]


#: How a metric is compared between two runs: for one :class:`PairedGroup`, the pairs ``(event
#: in the baseline, event now)`` the paired test counts, the event being what the metric's rate
#: counts (a hallucination for FCH, a consistent group for RC). The metric's change is
#: ``(events now - events before) / pairs`` over the groups of a scope.
PairedEvents = Callable[[PairedGroup], Sequence[tuple[bool, bool]]]


def per_response(event: Callable[[Mapping[str, Any]], bool], *, asked: bool = False) -> PairedEvents:
    """The :attr:`Metric.paired` of a rate over responses: one pair ``(event(old),
    event(new))`` per prompt scored in both runs, or with ``asked`` per prompt asked (errored
    ones included, as for the error rate)."""

    def paired(group: PairedGroup) -> list[tuple[bool, bool]]:
        pairs = group.pairs if asked else group.scored_pairs
        return [(bool(event(o)), bool(event(n))) for o, n in pairs]

    return paired
