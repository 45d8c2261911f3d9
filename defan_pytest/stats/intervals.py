"""Interval estimates of rates over paraphrase groups, and of a mean of independent estimates.

- :func:`cluster_effective_size`: the effective sample size of a rate over clusters, from its
  cluster-robust design effect, shrunk by :func:`shrink_design_effect` while few responses show
  how outcomes cluster (the method is explained in :mod:`defan_pytest.metrics.summary`);
- :func:`clopper_pearson`, the exact binomial interval, and :func:`korn_graubard`, the same at a
  clustered proportion's effective sample size and degrees of freedom;
- :func:`welch_df` and :func:`mean_interval`, the Welch-Satterthwaite degrees of freedom of a
  sum of independent variance estimates and the interval of a mean of independent estimates
  (the overall mean of domains).

The quantiles come from :mod:`defan_pytest.stats.distributions` (no SciPy).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from defan_pytest.stats.design import PSEUDO_COUNT, exact, rate_design, shrink_design_effect
from defan_pytest.stats.distributions import beta_quantile, check_df, two_sided_quantile

__all__ = [
    "PSEUDO_COUNT",
    "clopper_pearson",
    "cluster_effective_size",
    "korn_graubard",
    "mean_interval",
    "shrink_design_effect",
    "welch_df",
]


def clopper_pearson(x: float, n: float, confidence: float = 0.95) -> tuple[float, float]:
    """The Clopper-Pearson ("exact") interval for ``x`` events in ``n`` trials.

    ``0 <= x <= n``, ``n > 0``; both may be fractional (an effective count and sample size,
    as in the Korn-Graubard interval). It is the set of rates whose binomial tail on each side
    is at least ``(1 - confidence) / 2``: coverage is never below ``confidence`` for a true
    binomial count, which is why it is used for figures counted over independent groups.
    """
    if not n > 0.0:
        raise ValueError(f"clopper_pearson needs n > 0, got {n!r}")
    if not 0.0 <= x <= n:
        raise ValueError(f"clopper_pearson needs 0 <= x <= n, got x={x!r}, n={n!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    alpha = 1.0 - confidence
    lo = 0.0 if x <= 0.0 else beta_quantile(0.5 * alpha, x, n - x + 1.0)
    hi = 1.0 if x >= n else beta_quantile(1.0 - 0.5 * alpha, x + 1.0, n - x)
    return lo, hi


def welch_df(variances: Sequence[float], dfs: Sequence[float]) -> float:
    """Welch-Satterthwaite degrees of freedom of ``sum(variances)``, each variance estimate
    having ``dfs[i]`` degrees of freedom (``math.inf`` for one that is known exactly).

    ``(sum v)^2 / sum(v^2 / df)``; it lies between the smallest ``df`` and the sum of them.
    Terms with zero variance carry no uncertainty and drop out; with nothing left (all
    variances zero) the result is ``math.inf``, so a caller's quantile is the normal one.
    """
    if len(variances) != len(dfs):
        raise ValueError("welch_df needs one df per variance")
    total = 0.0
    denom = 0.0
    for v, df in zip(variances, dfs):
        if v < 0.0:
            raise ValueError(f"a variance must be >= 0, got {v!r}")
        check_df(df)
        total += v
        if v > 0.0 and not math.isinf(df):
            denom += v * v / df
    if total == 0.0 or denom == 0.0:
        return math.inf
    return total * total / denom


def korn_graubard(events: float, n_eff: float, total: float, df: float,
                  confidence: float = 0.95) -> tuple[float, float]:
    """The Korn-Graubard interval of a clustered proportion ``events / total``.

    The Clopper-Pearson interval at the effective sample size ``n_eff``, shrunk further by
    ``(z / t_df)^2`` so that the interval's normal approximation is ``p -+ t_df * se`` rather
    than ``p -+ z * se`` (the variance was estimated with ``df`` degrees of freedom); the
    effective count is ``p * n``. Korn & Graubard (1998), "Confidence intervals for proportions
    with small expected number of positive counts estimated from survey data".
    """
    if not total > 0.0 or not n_eff > 0.0:
        raise ValueError(f"korn_graubard needs total > 0 and n_eff > 0, got {total!r}, {n_eff!r}")
    p = events / total
    z = two_sided_quantile(confidence, math.inf)
    t = two_sided_quantile(confidence, df)
    n = n_eff * (z / t) ** 2
    return clopper_pearson(min(max(p * n, 0.0), n), n, confidence)


def mean_interval(parts: Sequence[tuple[float, float, float, float]],
                  confidence: float = 0.95) -> tuple[float, float, float, float]:
    """The unweighted mean of independent estimates and its interval.

    ``parts`` are ``(value, lo, hi, df)``: an estimate, its interval at ``confidence`` and the
    degrees of freedom its quantile was taken on (``math.inf`` for a normal one). Each side of
    an interval is read as ``quantile(df)`` standard errors on that side (the intervals are
    asymmetric near 0 and 1); independent estimates add variances, so each side of the mean's
    interval is ``quantile(df') * sqrt(sum se^2) / D`` with ``df'`` the Welch-Satterthwaite
    degrees of freedom of that sum. With one estimate this gives back its own interval.
    Returns ``(mean, lo, hi, df)``, not clipped; ``df`` is the smaller of the two sides'.
    """
    if not parts:
        raise ValueError("mean_interval needs at least one estimate")
    d = len(parts)
    mean = sum(value for value, _, _, _ in parts) / d
    bounds: list[float] = []
    side_dfs: list[float] = []
    for side in (0, 1):
        variances: list[float] = []
        dfs: list[float] = []
        for value, lo, hi, df in parts:
            q = two_sided_quantile(confidence, df)
            gap = (value - lo) if side == 0 else (hi - value)
            variances.append((max(gap, 0.0) / q) ** 2)
            dfs.append(df)
        df_side = welch_df(variances, dfs)
        half = two_sided_quantile(confidence, df_side) * math.sqrt(sum(variances)) / d
        bounds.append(mean - half if side == 0 else mean + half)
        side_dfs.append(df_side)
    return mean, bounds[0], bounds[1], min(side_dfs)


def cluster_effective_size(units: Sequence[tuple[Any, Any]]) -> tuple[float, int, int, float] | None:
    """``(events, total, groups, n_eff)`` of a rate over clusters ``[(y_g, n_g), ...]``, or
    ``None`` when nothing is counted (every ``n_g`` is 0; such clusters are ignored).

    ``n_eff = N / deff`` with the cluster-robust ("sandwich") design effect
    ``deff = G/(G-1) * sum_g (y_g - p*n_g)^2 / N^2 / (p(1-p)/N)`` (1 when every group has the
    same rate), shrunk toward the worst case ``sum_g n_g^2 / N`` while few groups carry the
    rarer outcome (:func:`defan_pytest.stats.design.rate_design`). With a single cluster nothing
    can be estimated across clusters: ``n_eff = 1``.
    """
    kept = [(exact(y), int(n)) for y, n in units if n > 0]
    design = rate_design([kept])
    if design is None:
        return None
    return float(sum(y for y, _ in kept)), sum(n for _, n in kept), len(kept), design.n_eff
