"""The paired test of the regression gate: the change of a rate between two runs of the same
prompts, and its interval.

The same prompts are asked in both runs, so what varies between the runs is only which prompts
*flipped*: a paired test needs far fewer prompts than comparing two levels. Flips cluster by
paraphrase group like everything else (a model that changed its mind about a fact changes it on
most paraphrases), so the paraphrase group is the unit, as in :mod:`defan_pytest.metrics.summary`
(:func:`paired_interval`):

- per group ``g``: ``b_g`` pairs with the metric's event in the new run only, ``c_g`` in the old
  run only, ``m_g`` pairs; the change is the ratio estimator ``sum(b_g - c_g) / sum(m_g)``;
- its cluster-robust variance ``G/(G-1) * sum_g (d_g - change*m_g)^2 / M^2`` (``d_g = b_g - c_g``),
  over the variance the same change would have with independent prompts, is the design
  effect; it is shrunk toward the worst case (each group one observation, ``sum m_g^2 / M``)
  while few groups carry a flip, exactly as the level intervals do
  (:func:`~defan_pytest.stats.design.stratified_design`); no between-group variation at all
  (every group changed by the same amount) is design effect 1 before shrinking, so one flip
  more can only make a change look worse, never better;
- the counts and the number of pairs are divided by the design effect, and the interval is
  Tango's score interval for a paired difference (:func:`paired_score_interval`) at those
  effective counts, with the Student t quantile on ``G - 1`` degrees of freedom.

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
a few groups does not show that the models agree on the prompts not asked.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from defan_pytest.stats.distributions import two_sided_quantile
from defan_pytest.stats.design import paired_design

__all__ = ["paired_interval", "paired_score_interval", "stratified_paired_interval"]


def _tango_z(b: float, c: float, n: float, d0: float) -> float:
    """Tango's score statistic for a paired difference ``d0`` (see :func:`paired_score_interval`)."""
    a2 = 2.0 * n
    bq = -b - c + (2.0 * n - b + c) * d0
    cq = -c * d0 * (1.0 - d0)
    root = math.sqrt(max(bq * bq - 4.0 * a2 * cq, 0.0))
    # The restricted estimate of P(old event, no new event), by the stable form of the root.
    p21 = -2.0 * cq / (root + bq) if bq > 0.0 else (root - bq) / (2.0 * a2)
    var = n * (2.0 * p21 + d0 * (1.0 - d0))
    num = b - c - n * d0
    if var <= 0.0:
        return 0.0 if num == 0.0 else math.copysign(math.inf, num)
    return num / math.sqrt(var)


def _decreasing_root(f: Callable[[float], float], lo: float, hi: float) -> float:
    """The ``x`` in ``[lo, hi]`` where the decreasing ``f`` crosses 0 (``f(lo) > 0 >= f(hi)``),
    by the Illinois variant of regula falsi, bisecting while an end is infinite."""
    flo, fhi = f(lo), f(hi)
    side = 0
    for _ in range(200):
        if hi - lo <= 1e-15 * max(1.0, abs(lo), abs(hi)):
            break
        if math.isfinite(flo) and math.isfinite(fhi) and flo != fhi:
            x = (lo * fhi - hi * flo) / (fhi - flo)
            if not lo < x < hi:
                x = 0.5 * (lo + hi)
        else:
            x = 0.5 * (lo + hi)
        fx = f(x)
        if fx == 0.0:
            return x
        if fx > 0.0:
            lo, flo = x, fx
            if side == 1 and math.isfinite(fhi):
                fhi *= 0.5  # Illinois: the end kept twice has its value halved
            side = 1
        else:
            hi, fhi = x, fx
            if side == -1 and math.isfinite(flo):
                flo *= 0.5
            side = -1
    return 0.5 * (lo + hi)


def paired_score_interval(b: float, c: float, n: float, confidence: float = 0.95,
                          df: float = math.inf) -> tuple[float, float]:
    """Tango's score interval for the difference of two paired proportions.

    Of ``n`` pairs, ``b`` have the event in the second member only and ``c`` in the first only
    (the discordant pairs; they may be fractional: effective counts). The difference is
    ``(b - c) / n``; the interval is the set of differences ``d0`` whose score statistic (the
    variance taken under ``d0``, with the nuisance parameter at its restricted maximum
    likelihood estimate) is within the two-sided quantile of ``t`` on ``df`` degrees of
    freedom. Tango (1998), "Equivalence test and confidence interval for the difference in
    proportions for the paired-sample design"; recommended by Fagerland, Lydersen & Laake
    (2013) for its coverage at small samples. Unlike the Wald interval it does not collapse to
    a point when there is no discordant pair: with ``b = c = 0`` it is ``-+ q^2 / (n + q^2)``.
    """
    if not n > 0.0:
        raise ValueError(f"paired_score_interval needs n > 0, got {n!r}")
    if b < 0.0 or c < 0.0 or b + c > n * (1.0 + 1e-12):
        raise ValueError(f"paired_score_interval needs b, c >= 0 and b + c <= n, got {b!r}, {c!r}, {n!r}")
    q = two_sided_quantile(confidence, df)
    est = (b - c) / n
    lo = -1.0 if est <= -1.0 else _decreasing_root(lambda d0: _tango_z(b, c, n, d0) - q, -1.0, est)
    hi = 1.0 if est >= 1.0 else _decreasing_root(lambda d0: _tango_z(b, c, n, d0) + q, est, 1.0)
    return max(-1.0, min(lo, est)), min(1.0, max(hi, est))


def paired_interval(
    units: Sequence[tuple[Any, Any, int]], confidence: float = 0.95
) -> tuple[float, float, float, float] | None:
    """The change and its interval for paired clusters ``units = [(b_g, c_g, m_g), ...]``.

    ``b_g``: pairs of group ``g`` with the event in the new run only, ``c_g``: in the old run
    only, ``m_g``: all pairs of the group. Returns ``(change, lo, hi, df)`` with ``change =
    sum(b - c) / sum(m)``, or ``None`` when there is no pair. See the module docstring for the
    method. Groups without pairs are ignored.

    >>> paired_interval([(0, 0, 15)] * 4)[0]
    0.0
    """
    return stratified_paired_interval([units], confidence)


def stratified_paired_interval(
    strata: Sequence[Sequence[tuple[Any, Any, int]]], confidence: float = 0.95
) -> tuple[float, float, float, float] | None:
    """:func:`paired_interval` of the unweighted mean of several strata's changes (the overall
    change as the mean of domains): the stratified cluster variance of every group's flips
    (:func:`defan_pytest.stats.design.paired_design`; a domain of one group centred at the
    mean), and Tango's interval at the effective counts it leaves. One stratum is
    :func:`paired_interval`. ``None`` when there is no pair."""
    for units in strata:
        for b, c, m in units:
            if b < 0 or c < 0 or b + c > m:
                raise ValueError(f"a paired unit needs 0 <= b, c and b + c <= m, got {(b, c, m)!r}")
    found = paired_design([[(b, c, int(m)) for b, c, m in units] for units in strata])
    if found is None:
        return None
    design, rate_b, rate_c = found
    n = design.n_eff
    # The weighted flip rates at the effective number of pairs; b + c <= n up to rounding.
    worse, better = min(rate_b * n, n), min(rate_c * n, n)
    if worse + better > n:
        worse, better = worse * n / (worse + better), better * n / (worse + better)
    lo, hi = paired_score_interval(worse, better, n, confidence, design.df)
    return design.estimate, lo, hi, design.df
