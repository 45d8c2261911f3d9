"""Anytime-valid tests of a mean: betting e-processes whose error holds at any stopping time.

A run that stops asking as soon as its verdict is settled (``--defan-sequential``) looks at its
evidence after every batch; a fixed-sample test looked at that often would reject far more than
its level (each look is another chance). A *test martingale* does not: under its null
hypothesis its expected value stays 1, so by Ville's inequality the chance that it **ever**
reaches ``1 / alpha`` is at most ``alpha``, however often it is looked at and whenever the run
stops (Ville 1939; Shafer and Vovk; Waudby-Smith and Ramdas 2023, "Estimating means of bounded
random variables by betting", JRSS B).

:class:`BetTest` is one such martingale for increments ``x`` bounded in ``[lo, hi]`` and the
null "the mean of each increment, given the past, is at most ``m``" (``side=+1``) or "at least
``m``" (``side=-1``): the wealth of a gambler who bets a share ``lambda_i`` of it on the next
increment, ``K_n = prod(1 + lambda_i * side * (x_i - m))``, with ``lambda_i`` chosen from the
increments before (predictable: aGRAPA, the growth-rate-adaptive plug-in of Waudby-Smith and
Ramdas, capped so that the wealth stays positive). Under the null every factor has mean at
most 1. Its peak is kept: a null rejected once stays rejected (Ville bounds the supremum).

:class:`MeanBounds` runs one test a side at each point of a grid of means: its
:meth:`~MeanBounds.upper` is the smallest grid mean that the evidence excludes from above (an
anytime-valid upper confidence bound on the grid) and :meth:`~MeanBounds.lower` the largest one
excluded from below.

Symmetric increments (the paired change of a prompt under "nothing changed": a flip for the
worse is as likely as one for the better) have mean 0, so ``BetTest(m=0, side=+1)`` is the
sequential form of the regression gate's test against the model's own noise, valid for any
increments whose conditional mean is at most 0.

Pure Python, no SciPy; every test is updated one increment at a time (a run of 3,000 prompts
with a few dozen tests a scope costs well under a second).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

__all__ = ["BetTest", "MeanBounds", "grid"]

#: The share of its largest safe bet that the gambler stakes at most (Waudby-Smith and Ramdas
#: use 1/2 to 3/4; 0.9 settles a run of unchanged
#: groups a group sooner, bench/sequential.py): a wealth that can never reach 0.
CAP = 0.9


class BetTest:
    """A test martingale for the mean of increments in ``[lo, hi]``: the null is ``mean <= m``
    (``side=+1``, rejected by increments above ``m``) or ``mean >= m`` (``side=-1``).

    ``log_wealth`` is the log of the current wealth, ``peak`` its largest value so far; the null
    is rejected at level ``alpha`` once ``peak >= log(1 / alpha)`` (:meth:`rejects`)."""

    __slots__ = ("m", "side", "limit", "count", "total", "squares", "log_wealth", "peak")

    def __init__(self, m: float, side: int = 1, lo: float = -1.0, hi: float = 1.0) -> None:
        if side not in (1, -1):
            raise ValueError(f"side must be +1 or -1, got {side!r}")
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ValueError(f"the bounds must be finite with lo < hi, got [{lo!r}, {hi!r}]")
        if not lo <= m <= hi:
            raise ValueError(f"the null mean {m!r} must lie in [{lo}, {hi}]")
        self.m = float(m)
        self.side = side
        # The largest loss a factor can take per unit of bet: 1 + lambda * side * (x - m) > 0 for
        # every x in [lo, hi] while lambda < 1 / reach.
        reach = (m - lo) if side == 1 else (hi - m)
        self.limit = CAP / reach if reach > 0.0 else 0.0
        self.count = 0
        self.total = 0.0
        self.squares = 0.0
        self.log_wealth = 0.0
        self.peak = 0.0

    def bet(self) -> float:
        """The share staked on the next increment (aGRAPA: the running excess over the null
        divided by its running second moment, shrunk toward 0 by a prior increment at the null,
        in ``[0, limit]``)."""
        n = self.count + 1.0
        excess = self.side * (self.total - self.count * self.m) / n
        second = (self.squares - 2.0 * self.m * self.total + self.count * self.m * self.m + 0.25) / n
        if excess <= 0.0 or self.limit <= 0.0:
            return 0.0
        return min(self.limit, excess / max(second, 1e-12))

    def add(self, x: float) -> None:
        """Take one increment (in ``[lo, hi]``; the caller checks)."""
        lam = self.bet()
        if lam > 0.0:
            factor = 1.0 + lam * self.side * (x - self.m)
            self.log_wealth += math.log(max(factor, 1e-300))
            if self.log_wealth > self.peak:
                self.peak = self.log_wealth
        self.count += 1
        self.total += x
        self.squares += x * x

    def rejects(self, alpha: float) -> bool:
        """Whether the wealth has ever reached ``1 / alpha`` (the null rejected at ``alpha``)."""
        return alpha > 0.0 and self.peak >= math.log(1.0 / alpha)

    @property
    def e_value(self) -> float:
        """The peak wealth (an e-value bounded by Ville's inequality)."""
        return math.exp(min(self.peak, 700.0))


def grid(lo: float, hi: float, extra: Iterable[float] = ()) -> tuple[float, ...]:
    """The means :class:`MeanBounds` tests: fine near 0 (changes of a few points decide a
    gate), coarser further out, always ``lo`` and ``hi``, and the ``extra`` points (a limit, a
    tolerance) exactly."""
    steps = [0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7,
             0.8, 0.9, 1.0]
    points = {lo, hi, *(s for s in steps if lo <= s <= hi), *(-s for s in steps if lo <= -s <= hi)}
    points.update(float(e) for e in extra if lo <= float(e) <= hi)
    return tuple(sorted(points))


class MeanBounds:
    """Anytime-valid bounds on the mean of increments in ``[lo, hi]``, on a grid of means:
    a :class:`BetTest` a side at each point of ``points`` (default :func:`grid`)."""

    def __init__(self, lo: float = -1.0, hi: float = 1.0, points: Sequence[float] | None = None) -> None:
        self.lo, self.hi = float(lo), float(hi)
        self.points = tuple(points) if points is not None else grid(lo, hi)
        # No test at an end: nothing can be excluded beyond the bounds themselves.
        self.below = [BetTest(m, 1, lo, hi) for m in self.points if m < hi]   # null: mean <= m
        self.above = [BetTest(m, -1, lo, hi) for m in self.points if m > lo]  # null: mean >= m
        self.count = 0
        self.total = 0.0

    def add(self, x: float) -> None:
        """Take one increment, clipped into ``[lo, hi]``."""
        x = min(self.hi, max(self.lo, float(x)))
        for test in self.below:
            test.add(x)
        for test in self.above:
            test.add(x)
        self.count += 1
        self.total += x

    def extend(self, xs: Iterable[float]) -> None:
        """Take every increment of ``xs`` in order."""
        for x in xs:
            self.add(x)

    @property
    def mean(self) -> float | None:
        """The mean of the increments so far (``None`` before the first)."""
        return self.total / self.count if self.count else None

    def upper(self, alpha: float) -> float:
        """The smallest grid mean whose "mean >= m" was rejected at ``alpha`` (``hi`` when none
        was): the mean lies below it, except with chance ``alpha``, at any stopping time."""
        return min((t.m for t in self.above if t.rejects(alpha)), default=self.hi)

    def lower(self, alpha: float) -> float:
        """The largest grid mean whose "mean <= m" was rejected at ``alpha`` (``lo`` when none
        was)."""
        return max((t.m for t in self.below if t.rejects(alpha)), default=self.lo)

    def rejects_at_most(self, m: float, alpha: float) -> bool:
        """Whether "mean <= m" was rejected at ``alpha`` (``m`` on the grid; ``False`` otherwise)."""
        return any(t.m == m and t.rejects(alpha) for t in self.below)

    def rejects_at_least(self, m: float, alpha: float) -> bool:
        """Whether "mean >= m" was rejected at ``alpha`` (``m`` on the grid; ``False`` otherwise)."""
        return any(t.m == m and t.rejects(alpha) for t in self.above)
