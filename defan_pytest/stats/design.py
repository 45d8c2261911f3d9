"""The variance of a rate (or a paired change) over paraphrase groups, one stratum a domain.

Every figure of the report is a ratio over paraphrase groups: a domain's rate ``sum(u_g) /
sum(n_g)``, or the unweighted mean of several domains' rates (the overall figure as the paper
reports it). :func:`stratified_design` gives both one variance, read the way survey software
reads a stratified cluster sample (each domain a stratum, each paraphrase group a cluster):

- the estimate ``theta = mean_h (U_h / N_h)`` (one stratum: the plain ratio);
- its cluster-robust variance ``V = sum_h W_h^2 * G_h/(G_h-1) * sum_g (u_g - theta_h n_g)^2``
  with ``W_h = 1 / (D N_h)`` - computed from the groups' counts, never from a domain's interval
  clipped to [0, 1] (what the old overall interval did, and why it covered 35% at one group a
  domain);
- a stratum with a single group (a "lonely cluster") cannot estimate its own variance; as
  R's ``survey`` package does with ``options(survey.lonely.psu = "adjust")``, its group is
  centred at the overall estimate instead of its own (conservative: the domain's distance from
  the others is counted as noise). A scope of one group altogether cannot estimate anything and
  is declared not estimable: its interval is the worst case on one degree of freedom;
- the design effect ``deff = V / (sigma^2 / n_kish)``, against the variance the same figure would
  have from independent responses (``n_kish = 1 / sum_h W_h^2 N_h``, ``N`` for one stratum), is
  shrunk toward the worst case ``n_kish * sum_g (W_h n_g)^2`` (every group one observation;
  ``sum n_g^2 / N`` for one stratum, which is the mean group size only when the sizes are equal)
  while few *groups* carry the rarer outcome (:func:`~defan_pytest.stats.intervals.shrink_design_effect`):
  three groups of fifteen wrong answers are three observations, not forty-five;
- ``V = 0`` with some variation (every group changed by exactly the same amount, or every group
  has the same rate) is design effect 1 before shrinking, not the worst case: otherwise one flip
  more in one group could turn a regression into a pass (the decision would not be monotone);
- no variation at all (every response the same, 0/N or N/N) is read as the limit of one rare
  response: design effect 1 on one informative group, shrunk; the worst case there made 90/90
  wrong over 6 groups a wider interval (0.35-1.00) than 89/90 (0.55-1.00);
- degrees of freedom: ``sum_h (G_h - 1)`` over the strata with two groups or more, plus one per
  lonely stratum (one less when every stratum is lonely: the overall estimate used up one).

``n_eff = n_kish / deff`` and ``df`` then feed the Korn-Graubard interval (a rate) or Tango's
paired score interval (a change).
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

__all__ = ["PSEUDO_COUNT", "Design", "exact", "paired_design", "rate_design", "shrink_design_effect", "stratified_design"]

#: The weight, in groups, of the worst-case design effect in :func:`shrink_design_effect`.
PSEUDO_COUNT = 1.0

#: One group: ``(u_g, n_g)``, the group's sum (events, or worse minus better flips; a fraction
#: when prompts were asked more than once and count the share of their asks) and size.
Unit = tuple[Fraction, int]


@dataclass(frozen=True)
class Design:
    """What :func:`stratified_design` found for one scope.

    ``estimate``: the figure; ``variance``: its (unclipped) variance; ``n_kish``: the number of
    independent responses with the same weights' precision (``N`` for one stratum); ``deff``:
    the design effect used; ``n_eff = n_kish / deff``; ``df``: the degrees of freedom of the
    variance (at least 1); ``groups``: groups counted; ``estimable``: False when the scope has
    a single group (nothing can be estimated across groups).
    """

    estimate: float
    variance: float
    n_kish: float
    deff: float
    n_eff: float
    df: float
    groups: int
    estimable: bool


def shrink_design_effect(estimated: float | None, informative: float, worst: float,
                         pseudo: float = PSEUDO_COUNT) -> float:
    """The design effect to use when the estimated one rests on few informative groups.

    ``estimated`` is the cluster-robust design effect (variance over the variance the same
    figure would have with independent responses; ``None`` when the data cannot estimate it,
    e.g. no variation at all), ``informative`` the number of groups that reveal how outcomes
    cluster (the rarer outcome: events when they are rare, non-events when they are common;
    flips in a comparison), ``worst`` the largest design effect possible (the mean group size:
    every group counts as one observation).

    Returns ``(k * max(estimated, 1) + c * worst) / (k + c)`` with ``k = informative`` and
    ``c = pseudo``: the estimate, floored at 1 (clustering can only lose information), averaged
    with the worst case as if ``c`` more rare responses had been seen clustered as badly as
    possible. With a handful of rare responses the estimate is unreliable and mostly too small
    (two hallucinations that happen to fall in different groups look independent even when the
    model's failures cluster strongly), which made intervals at small samples cover far less
    than promised; with hundreds of them the average is the estimate. With none, or no
    estimate, it is ``worst``.
    """
    if estimated is None or informative <= 0.0:
        return float(worst)
    return (informative * max(estimated, 1.0) + pseudo * worst) / (informative + pseudo)


def exact(value: Any) -> Any:
    """A count as exact arithmetic wants it: an ``int`` stays one (the fast, common case), a
    fraction (a share of repeated asks) stays a :class:`~fractions.Fraction`."""
    if isinstance(value, numbers.Integral):
        return int(value)
    return value if isinstance(value, Fraction) else Fraction(value)


def _strata(strata: Sequence[Sequence[tuple[Any, Any]]]) -> list[list[Unit]]:
    kept = [[(exact(u), int(n)) for u, n in units if n > 0] for units in strata]
    return [units for units in kept if units]


def _between(kept: Sequence[Sequence[Unit]], theta: Fraction) -> tuple[float, bool]:
    """``(V, V == 0 exactly)``: the stratified cluster variance of the weighted mean."""
    d = len(kept)
    total = 0.0
    zero = True
    for units in kept:
        g = len(units)
        big_n = sum(n for _, n in units)
        if g > 1:
            big_u = sum(u for u, _ in units)
            # Exact residuals u_g*N - U*n_g (integers, or fractions): "exactly 0" is exact, not a
            # float accident.
            s = sum((u * big_n - big_u * n) ** 2 for u, n in units)
            zero = zero and s == 0
            total += g / (g - 1) * float(s) / (d * d * big_n ** 4)
        else:
            # A lonely group, centred at the overall estimate (survey's "adjust").
            u, n = units[0]
            r = Fraction(u) - theta * n
            zero = zero and r == 0
            total += float(r * r) / (d * d * big_n * big_n)
    return total, zero


def _df(kept: Sequence[Sequence[Unit]]) -> float:
    lonely = sum(1 for units in kept if len(units) == 1)
    df = sum(len(units) - 1 for units in kept if len(units) > 1) + lonely
    if lonely == len(kept):
        df -= 1  # every stratum lonely: the overall estimate they are centred at used one
    return float(df)


def stratified_design(strata: Sequence[Sequence[tuple[Any, Any]]], spread: float, informative: int) -> Design | None:
    """The design of the unweighted mean over ``strata`` of ``sum(u) / sum(n)`` (see the module
    docstring), or ``None`` when nothing is counted.

    ``spread``: the variance of one response's value under independence at the estimate
    (``p(1-p)`` for a rate, the flip rate minus the squared change for a paired change);
    ``informative``: the groups that carry the rarer outcome (or flips), which is what shows how
    outcomes cluster. Groups with ``n_g == 0`` and empty strata are ignored.
    """
    kept = _strata(strata)
    if not kept:
        return None
    d = len(kept)
    sizes = [sum(n for _, n in units) for units in kept]
    theta = sum((Fraction(sum(u for u, _ in units), big_n) for units, big_n in zip(kept, sizes)),
                Fraction(0)) / d
    groups = sum(len(units) for units in kept)
    # sum over responses of W^2 (W_h = 1 / (D N_h)), and over groups of (W n_g)^2.
    w2 = sum(1.0 / (d * d * big_n) for big_n in sizes)
    n_kish = 1.0 / w2
    worst = n_kish * sum(n * n / (d * d * big_n * big_n) for units, big_n in zip(kept, sizes) for _, n in units)
    df = _df(kept)
    if groups == 1 or df < 1:
        # One group: every group is one observation, on the least degrees of freedom there are.
        return Design(float(theta), max(spread, 0.0) * worst / n_kish, n_kish, worst, n_kish / worst, 1.0,
                      groups, False)
    between, zero = _between(kept, theta)
    if spread > 0.0:
        # No between-group variation at all is design effect 1 (then shrunk), not unknown.
        estimated = 1.0 if zero else between / (spread / n_kish)
    else:
        # Every response the same (0/N or N/N): read as the limit of one rare response in one
        # group (estimated design effect 1, one informative group), so that the interval is
        # monotone in the counts: with the worst case here, 90/90 wrong over 6 groups got
        # 0.35-1.00 where 89/90 got 0.55-1.00.
        estimated, informative = 1.0, max(informative, 1)
    deff = shrink_design_effect(estimated, informative, worst)
    return Design(float(theta), max(spread, 0.0) * deff / n_kish, n_kish, deff, n_kish / deff, df, groups, True)


def _informative_groups(strata: Sequence[Sequence[Unit]], theta_low: bool) -> int:
    """Groups carrying the rarer outcome: any event when events are rare, any non-event else."""
    return sum(1 for units in strata for y, n in units if n > 0 and ((y > 0) if theta_low else (y < n)))


def rate_design(strata: Sequence[Sequence[tuple[Any, Any]]]) -> Design | None:
    """:func:`stratified_design` of a rate: ``strata`` of groups ``(events, responses)``."""
    kept = _strata(strata)
    if not kept:
        return None
    p = sum(float(sum(y for y, _ in units)) / sum(n for _, n in units) for units in kept) / len(kept)
    events = sum(y for units in kept for y, _ in units)
    total = sum(n for units in kept for _, n in units)
    informative = _informative_groups(kept, 2 * events <= total)
    return stratified_design(kept, p * (1.0 - p), informative)


def paired_design(strata: Sequence[Sequence[tuple[Any, Any, int]]]) -> tuple[Design, float, float] | None:
    """:func:`stratified_design` of a paired change: ``strata`` of groups ``(b, c, m)`` (pairs
    with the event in the new run only, in the old run only, pairs). Returns the design and the
    weighted rates of ``b`` and ``c`` (the effective counts are those rates times ``n_eff``),
    or ``None`` when there is no pair."""
    kept = [[(exact(b), exact(c), int(m)) for b, c, m in units if m > 0] for units in strata]
    kept = [units for units in kept if units]
    if not kept:
        return None
    d = len(kept)
    rate_b = sum(float(sum(b for b, _, _ in u)) / sum(m for _, _, m in u) for u in kept) / d
    rate_c = sum(float(sum(c for _, c, _ in u)) / sum(m for _, _, m in u) for u in kept) / d
    change = rate_b - rate_c
    spread = max(rate_b + rate_c - change * change, 0.0)
    flips = sum(b + c for u in kept for b, c, _ in u)
    pairs = sum(m for u in kept for _, _, m in u)
    # The groups with a flip show how flips cluster (or, if nearly every pair flipped, those
    # with a pair that did not).
    few = 2 * flips <= pairs
    informative = sum(1 for u in kept for b, c, m in u if ((b + c > 0) if few else (b + c < m)))
    design = stratified_design([[(b - c, m) for b, c, m in u] for u in kept], spread, informative)
    if design is None or math.isnan(design.estimate):
        return None
    return design, rate_b, rate_c
