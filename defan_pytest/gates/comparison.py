"""What the regression gate's paired test returns: each scope's :class:`Change` of each compared
metric, the prompts whose FCH verdict :class:`Flip`-ped, how the runs' prompts paired
(:class:`Pairing`), all in one :class:`Comparison` (:func:`defan_pytest.gates.paired.compare`).

Everything converts to plain JSON with :meth:`Comparison.to_json`.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Change", "Comparison", "Direction", "Flip", "Pairing"]

Direction = Literal["worse", "better"]


@dataclass(frozen=True)
class Change:
    """The change of one metric in one scope, new run minus baseline, and its verdict.

    - ``old``, ``new``: the metric over the pairs compared (what its
      :attr:`~defan_pytest.metrics.registry.Metric.paired` counts: the paired prompts scored in
      both runs for FCH and PMH, all paired prompts for the error rate, the groups counting for
      RC in both runs for RC); ``change = new - old``.
    - ``interval``: ``(lo, hi)`` at ``confidence``; ``df``: the degrees of freedom of its
      quantile (``None`` if unbounded).
    - ``groups``: paraphrase groups with at least one pair; ``pairs``: the pairs (prompts; for
      RC, groups).
    - ``worse_flips`` / ``better_flips``: pairs that went the worse / the better way (right to
      hallucinated / back for FCH, aligned to misaligned / back for PMH, consistent to
      inconsistent / back for RC, answered to errored / back for the error rate).
    - ``worse``: the change is nonzero and in the worse direction; ``significant``: the
      interval excludes 0; ``significant_worse``: the test against no change found it worse
      than the model's own noise (``p_value`` below the one-sided ``level``);
      ``regressed``: significantly worse and past ``tolerance`` (never when the tolerance is
      ``None``).
    - ``p_value``: one-sided, of the test against no change
      (:func:`defan_pytest.stats.flips.against_noise`); ``level``: what it must be below;
      ``noise``: where the noise's variance came from (``answers``, ``questions``,
      ``repeats``); ``method``: ``sign test``, ``sign-flip`` or ``normal``.
    - ``catchable``: the smallest even worsening this comparison's pairs and noise catch with
      80% power at ``level`` past the tolerance (:func:`defan_pytest.stats.flips.catchable_rise`);
      ``None`` without a tolerance, or when no worsening the figure can make is caught that often.
    """

    scope: str
    metric: str
    old: float
    new: float
    change: float
    interval: tuple[float, float] | None
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
    p_value: float = 1.0
    level: float = 0.025
    noise: str = "answers"
    method: str = "sign test"
    catchable: float | None = None

    def to_json(self) -> dict[str, Any]:
        """Plain JSON: every field except ``scope``/``metric`` (the keys it is filed under),
        the interval as a list."""
        return {
            "old": self.old,
            "new": self.new,
            "change": self.change,
            "interval": None if self.interval is None else [self.interval[0], self.interval[1]],
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
            "p_value": self.p_value,
            "level": self.level,
            "noise": self.noise,
            "method": self.method,
            "catchable": self.catchable,
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
    """The result of :func:`defan_pytest.gates.paired.compare`.

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
