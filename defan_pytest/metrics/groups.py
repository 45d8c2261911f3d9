"""What a metric counts from and what it returns: the paraphrase groups of one scope
(:class:`Group`), a figure (:class:`Figure`), and for the regression gate one group's prompts in
two runs (:class:`PairedGroup`) with the pairs of values a metric compares
(:data:`PairedEvents`, :class:`PairedValue`, :func:`per_response`).

A prompt asked more than once (``--defan-repeat``) carries its extra asks in its record's
``repeats``; every answer counts (:func:`asks_of`, :func:`share`): a prompt's value for an event
is the share of its scored asks that have it (``reduce="mean"``, Inspect's epoch mean), or 1
when any of them has it (``reduce="all"``: a prompt passes only when all its answers do).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal, Optional, Union

from defan_pytest.verdicts import CALL_ERROR, outcome_of

__all__ = [
    "REDUCES", "Figure", "Group", "Interval", "PairedEvents", "PairedGroup", "PairedValue", "Reduce", "Share", "asks_of",
    "answered", "errored", "pair_value", "per_response", "rounds", "share",
]

Interval = tuple[float, float]

#: How a prompt's asks make its value (``--defan-repeat-reduce``): the mean over its scored
#: asks, or all of them (the worse value when any ask has the event).
Reduce = Literal["mean", "all"]
REDUCES: tuple[str, ...] = ("mean", "all")

#: A prompt's value for an event: 0 or 1 (an ``int``: one ask, or ``reduce="all"``), or the
#: share of its asks (a :class:`~fractions.Fraction`); exact either way.
Share = Union[int, Fraction]


def errored(record: Mapping[str, Any]) -> bool:
    """Whether the model call of ``record`` failed (its ``error`` set): never a hallucination,
    left out of every scored figure (an empty string, what converters write, is no error)."""
    return outcome_of(record) is CALL_ERROR


def asks_of(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every ask of a prompt, in order: its record (the run's own ask), then the extra asks of
    ``--defan-repeat`` its ``repeats`` holds (each a mapping with ``claim``, ``aligned``,
    ``correct`` and ``error``, in ``repeat`` order)."""
    extra = record.get("repeats") or ()
    if not extra:
        return [record]
    ordered = sorted((a for a in extra if isinstance(a, Mapping)), key=lambda a: int(a.get("repeat") or 0))
    return [record, *ordered]


def share(record: Mapping[str, Any], event: Callable[[Mapping[str, Any]], bool], reduce: str = "mean",
          asked: bool = False) -> Optional[Share]:
    """A prompt's value for ``event`` over its asks: the share of its scored asks that have it
    (``reduce="mean"``), or 1 when any has it (``"all"``); ``asked``: over every ask, errored
    ones included (the error rate's). ``None`` when no ask counts (every call failed)."""
    counted = [a for a in asks_of(record) if asked or not errored(a)]
    if not counted:
        return None
    hits = sum(1 for a in counted if event(a))
    if reduce == "all":
        return 1 if hits else 0
    return hits if len(counted) == 1 else Fraction(hits, len(counted))


# --------------------------------------------------------------------------------------------
# What a metric counts from, and what it returns
# --------------------------------------------------------------------------------------------


@dataclass
class Group:
    """One paraphrase group of one domain, as a metric's counting function sees it.

    ``records`` are the group's per-prompt records in input order (the caller's mappings, not
    copies: read them, never change them). ``size`` counts its prompts, ``errors`` those
    without a scored answer (every ask failed); ``not_correct``, ``not_aligned`` and
    ``errored_asks`` are sums of the prompts' values (:func:`share`: 0 or 1 for a prompt asked
    once, a share of its asks with ``--defan-repeat``); ``claims`` has the run's own ask's claim
    of each prompt (``None`` for an errored one). ``consistent`` (1 or 0, a share of the repeat
    rounds with ``--defan-repeat``) is set by :func:`defan_pytest.metrics.summary.collect_groups`
    for the groups that count for RC (:attr:`counts_for_rc`) and stays ``None`` for the others.
    """

    domain: str
    type: str
    size: int = 0
    errors: int = 0
    not_correct: Share = 0
    not_aligned: Share = 0
    errored_asks: Share = 0
    claims: list[str | None] = field(default_factory=list)
    consistent: Share | None = None
    records: list[Mapping[str, Any]] = field(default_factory=list)

    @property
    def scored(self) -> int:
        """Prompts that were scored (at least one ask answered)."""
        return self.size - self.errors

    @property
    def counts_for_rc(self) -> bool:
        """True for a group with at least two scored prompts: RC compares the answered
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


def rounds(records: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """The asks of a group's prompts by round (``--defan-repeat``): round ``k`` holds each
    prompt's ``k``-th ask that exists (round 0: the run's own asks); one round without repeats."""
    asks = [asks_of(r) for r in records]
    depth = max((len(a) for a in asks), default=0)
    return [[a[k] for a in asks if len(a) > k] for k in range(depth)]


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
    counts: Mapping[str, float] = field(default_factory=dict)
    df: float | None = None
    units: tuple[tuple[Share, int], ...] | None = None


@dataclass(frozen=True)
class PairedGroup:
    """One paraphrase group's prompts asked in both runs, as a metric's ``paired`` sees them.

    ``old`` and ``new`` are the baseline's and this run's records of the same prompts, in the
    same order (this run's); ``domain`` and ``type`` are this run's; ``reduce``: how a prompt's
    asks make its value (:data:`Reduce`).
    """

    domain: str
    type: str
    old: tuple[Mapping[str, Any], ...]
    new: tuple[Mapping[str, Any], ...]
    reduce: str = "mean"

    @property
    def pairs(self) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
        """Every prompt's ``(old record, new record)``."""
        return list(zip(self.old, self.new))

    @property
    def scored_pairs(self) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
        """The pairs of the prompts scored in both runs (a prompt none of whose asks was
        answered in a run is no hallucination there, so it is left out of every scored
        comparison)."""
        return [(o, n) for o, n in self.pairs if answered(o) and answered(n)]


def answered(record: Mapping[str, Any]) -> bool:
    """Whether a prompt has a scored answer: any of its asks whose call did not fail."""
    return any(not errored(a) for a in asks_of(record))


@dataclass(frozen=True)
class PairedValue:
    """One pair a metric compares: its value in the baseline (``old``) and now (``new``), each
    in [0, 1] (the event's share of a prompt's asks; 0 or 1 for one ask), and, for a run that
    asked it more than once, the event of each ask in order (``None`` for an ask that does not
    count): what the regression gate measures the model's own noise with."""

    old: Share
    new: Share
    old_asks: tuple[Optional[int], ...] = ()
    new_asks: tuple[Optional[int], ...] = ()


#: How a metric is compared between two runs: for one :class:`PairedGroup`, the pairs it counts,
#: each a :class:`PairedValue` or a plain ``(value in the baseline, value now)`` (booleans are
#: 0 and 1), the value being what the metric's rate counts (a hallucination for FCH, a
#: consistent group for RC). The metric's change is ``sum(new - old) / pairs`` over the groups
#: of a scope.
PairedEvents = Callable[[PairedGroup], Sequence[Union[PairedValue, tuple[Any, Any]]]]


def _ask_events(record: Mapping[str, Any], event: Callable[[Mapping[str, Any]], bool],
                asked: bool) -> tuple[Optional[int], ...]:
    asks = asks_of(record)
    if len(asks) < 2:
        return ()
    return tuple(None if (not asked and errored(a)) else int(bool(event(a))) for a in asks)


def pair_value(old: Mapping[str, Any], new: Mapping[str, Any], event: Callable[[Mapping[str, Any]], bool],
               reduce: str = "mean", asked: bool = False) -> PairedValue | None:
    """One prompt's :class:`PairedValue` for ``event``: the :func:`share` of its asks in each
    run (with ``reduce="all"`` over the asks both runs made, so that a run asked three times is
    not held to three answers where the other gave one); ``None`` when a run has no ask that
    counts. ``asked``: a rate over calls (errored asks count, the mean whatever ``reduce``)."""
    reduce = "mean" if asked else reduce
    if reduce == "all":
        depth = min(len(asks_of(old)), len(asks_of(new)))
        old, new = _first_asks(old, depth), _first_asks(new, depth)
    was, now = share(old, event, reduce, asked), share(new, event, reduce, asked)
    if was is None or now is None:
        return None
    if reduce == "all":
        return PairedValue(was, now)
    return PairedValue(was, now, _ask_events(old, event, asked), _ask_events(new, event, asked))


def _first_asks(record: Mapping[str, Any], depth: int) -> Mapping[str, Any]:
    """``record`` with only its first ``depth`` asks."""
    asks = asks_of(record)
    if len(asks) <= depth:
        return record
    return {**record, "repeats": asks[1:depth]}


def per_response(event: Callable[[Mapping[str, Any]], bool], *, asked: bool = False) -> PairedEvents:
    """The :attr:`Metric.paired` of a rate over responses: one :class:`PairedValue` per prompt
    scored in both runs (:func:`pair_value`), or with ``asked`` per prompt asked (errored asks
    included, as for the error rate)."""

    def paired(group: PairedGroup) -> list[PairedValue]:
        out = []
        for o, n in (group.pairs if asked else group.scored_pairs):
            value = pair_value(o, n, event, group.reduce, asked)
            if value is not None:
                out.append(value)
        return out

    return paired
