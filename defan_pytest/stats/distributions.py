"""Small, dependency-free distribution functions the intervals need: Student's t and Beta.

The intervals of :mod:`defan_pytest.metrics.summary` and :mod:`defan_pytest.stats.paired` estimate a
variance from the spread *between paraphrase groups*, so with G groups the variance estimate has
only G - 1 degrees of freedom. At 5 or 10 groups per domain (a pull-request sample) a normal
quantile (1.96) then gives intervals that cover well below their promised 95%; the Student t
quantile on G - 1 degrees of freedom is the classical correction. SciPy would provide it, but the
plugin must not depend on SciPy, so the few functions needed are written here:

- the regularized incomplete beta function ``I_x(a, b)``, by its continued fraction (modified
  Lentz), which converges quickly on the side of the symmetry point that is chosen;
- :func:`t_sf`, the upper tail of Student's t, from ``I_x`` by the usual identity;
- :func:`t_quantile`, by safeguarded Newton iteration on the tail (bisection whenever a Newton
  step would leave the bracket), exact closed forms for 1 and 2 degrees of freedom, and the
  Cornish-Fisher expansion for very large degrees of freedom, where it is exact to double
  precision and the continued fraction would be slow;
- :func:`beta_quantile` (Halley's method in a shrinking bracket), which the exact binomial
  intervals of :mod:`defan_pytest.stats.intervals` rest on.

Everything is deterministic and pure Python; the t quantiles are cached because the same few
(confidence, degrees of freedom) pairs are asked for again and again.

>>> round(t_quantile(0.975, 4), 7)
2.7764451
>>> round(two_sided_quantile(0.95, math.inf), 6)
1.959964
"""
from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

__all__ = [
    "beta_quantile",
    "binomial_half_upper",
    "check_df",
    "normal_quantile",
    "t_quantile",
    "t_sf",
    "two_sided_quantile",
]

# Continued-fraction constants: the smallest number Lentz's method lets a denominator be (to
# avoid dividing by zero) and the relative precision at which it stops.
_TINY = 1e-300
_EPS = 1e-16
_MAX_ITER = 100_000

# Above this many degrees of freedom the Cornish-Fisher series is used: its first omitted term
# is O(df^-5) (about 1e-18 here at p = 0.999), while the continued fraction needs O(sqrt(df))
# iterations and its front factor loses digits to lgamma of a large argument (about 1e-11 at
# 1e5 degrees of freedom).
_LARGE_DF = 1e4

_NORMAL = NormalDist()


def normal_quantile(p: float) -> float:
    """The standard normal quantile ``Phi^-1(p)`` for ``0 < p < 1``."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"normal_quantile needs 0 < p < 1, got {p!r}")
    # statistics.NormalDist uses Wichura's AS241, accurate to about 1e-16.
    return _NORMAL.inv_cdf(p)


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (Numerical Recipes' ``betacf``).

    Written with chained comparisons rather than ``abs()``: this loop is where the summary's
    interval time goes, and the simulations in the tests call it millions of times.
    """
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    if -_TINY < d < _TINY:
        d = _TINY
    d = 1.0 / d
    h = d
    for m in range(1, _MAX_ITER + 1):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        if -_TINY < d < _TINY:
            d = _TINY
        c = 1.0 + aa / c
        if -_TINY < c < _TINY:
            c = _TINY
        d = 1.0 / d
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        if -_TINY < d < _TINY:
            d = _TINY
        c = 1.0 + aa / c
        if -_TINY < c < _TINY:
            c = _TINY
        d = 1.0 / d
        step = d * c
        h *= step
        if -_EPS < step - 1.0 < _EPS:
            return h
    raise ArithmeticError(f"incomplete beta continued fraction did not converge (a={a}, b={b}, x={x})")


def _betainc(a: float, b: float, x: float, y: float) -> float:
    """``I_x(a, b)`` given both ``x`` and ``y = 1 - x`` (computed by the caller without
    cancellation: the t tail needs ``t^2 / (df + t^2)`` for large ``t`` exactly)."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(y)
    front = math.exp(log_front)
    # The fraction converges fast below the symmetry point; above it use I_x(a,b) = 1 - I_y(b,a).
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, y) / b



def beta_quantile(p: float, a: float, b: float) -> float:
    """The ``x`` with ``I_x(a, b) = p``: the quantile of a Beta(a, b) distribution.

    ``0 <= p <= 1`` and ``a, b > 0`` (fractional is fine). Halley's method from the usual
    starting approximation (Numerical Recipes' ``invbetai``), kept inside a bracket that
    shrinks with every evaluation, so that it cannot wander off where the density is extreme
    (``a < 1`` puts an infinite density at 0). Accurate to about 1e-13 relative.
    """
    if not (a > 0.0 and b > 0.0):
        raise ValueError(f"beta_quantile needs a > 0 and b > 0, got a={a!r}, b={b!r}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"beta_quantile needs 0 <= p <= 1, got {p!r}")
    if p == 0.0:
        return 0.0
    if p == 1.0:
        return 1.0
    if p > 0.5:
        # Solve the smaller tail (1 - p is exact for p >= 0.5): a quantile near 1 is then found
        # as its small distance from 1, to full relative precision.
        return 1.0 - _beta_lower_quantile(1.0 - p, b, a)
    return _beta_lower_quantile(p, a, b)


def _beta_lower_quantile(p: float, a: float, b: float) -> float:
    """:func:`beta_quantile` for ``0 < p <= 0.5``."""
    a1, b1 = a - 1.0, b - 1.0
    if a >= 1.0 and b >= 1.0:
        pp = p if p < 0.5 else 1.0 - p
        t = math.sqrt(-2.0 * math.log(pp))
        x = (2.30753 + t * 0.27061) / (1.0 + t * (0.99229 + t * 0.04481)) - t
        if p < 0.5:
            x = -x
        al = (x * x - 3.0) / 6.0
        h = 2.0 / (1.0 / (2.0 * a - 1.0) + 1.0 / (2.0 * b - 1.0))
        w = x * math.sqrt(al + h) / h - (1.0 / (2.0 * b - 1.0) - 1.0 / (2.0 * a - 1.0)) * (
            al + 5.0 / 6.0 - 2.0 / (3.0 * h))
        x = a / (a + b * math.exp(min(2.0 * w, 700.0)))
    else:
        lna, lnb = math.log(a / (a + b)), math.log(b / (a + b))
        t = math.exp(a * lna) / a
        u = math.exp(b * lnb) / b
        w = t + u
        # In logs: for a small ``a`` the power underflows long before the quantile does.
        if p < t / w:
            x = math.exp(math.log(a * w * p) / a)
        else:
            x = 1.0 - math.exp(math.log(b * w * (1.0 - p)) / b)
    log_norm = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    lo, hi = 0.0, 1.0
    for _ in range(400):
        if not lo < x < hi:
            x = _split(lo, hi)
            if not 0.0 < x < 1.0:
                return x  # the quantile is beyond double precision at 0 or 1
        err = _betainc(a, b, x, 1.0 - x) - p
        if err == 0.0:
            return x
        if err < 0.0:
            lo = x
        else:
            hi = x
        if hi - lo <= 4e-15 * hi:
            return 0.5 * (lo + hi)
        log_dens = a1 * math.log(x) + b1 * math.log1p(-x) + log_norm
        dens = math.exp(log_dens) if log_dens < 700.0 else 0.0
        if not 0.0 < dens < math.inf:
            x = -1.0  # no usable slope: bisect
            continue
        u = err / dens
        # Halley's correction, damped as in invbetai.
        step = u / (1.0 - 0.5 * min(1.0, u * (a1 / x - b1 / (1.0 - x))))
        new = x - step
        # Halley converges cubically: once a step is below 1e-10 relative, the error left
        # after it is far below double precision, so the step is not checked by one more call.
        if abs(step) <= 1e-10 * x and lo < new < hi:
            return new
        x = new
    # Not converged in 400 steps (a quantile at the edge of double precision): the bracket's
    # middle is as good as it gets.
    return x if lo <= x <= hi else 0.5 * (lo + hi)


def _split(lo: float, hi: float) -> float:
    """A bisection point of ``[lo, hi]`` inside (0, 1): geometric near 0 and near 1 (a quantile
    there can be many orders of magnitude from 0.5), arithmetic in between."""
    if hi <= 0.5:
        # Without a lower end yet, square: 2^-1, 2^-2, 2^-4, ... reaches 1e-300 in 10 steps.
        # sqrt of each: lo * hi would underflow for quantiles below 1e-154.
        return math.sqrt(lo) * math.sqrt(hi) if lo > 0.0 else hi * hi
    if lo >= 0.5:
        return 1.0 - (math.sqrt(1.0 - lo) * math.sqrt(1.0 - hi) if hi < 1.0 else (1.0 - lo) ** 2)
    return 0.5 * (lo + hi)



def binomial_half_upper(k: int, n: int) -> float:
    """``P(X >= k)`` for ``X ~ Binomial(n, 1/2)``: the exact one-sided p-value of a sign test
    with ``k`` of ``n`` discordant pairs on one side (``I_{1/2}(k, n - k + 1)``)."""
    if n < 0 or k < 0:
        raise ValueError(f"binomial_half_upper needs k, n >= 0, got {k!r}, {n!r}")
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    return min(1.0, max(0.0, _betainc(float(k), float(n - k + 1), 0.5, 0.5)))


def check_df(df: float) -> None:
    """Refuse degrees of freedom that are not positive (NaN included)."""
    if not df > 0.0:  # also rejects NaN
        raise ValueError(f"degrees of freedom must be > 0, got {df!r}")


def t_sf(t: float, df: float) -> float:
    """The upper tail ``P(T > t)`` of Student's t with ``df`` degrees of freedom (``df`` may be
    fractional, or ``math.inf`` for the normal distribution)."""
    check_df(df)
    if math.isinf(df):
        return _NORMAL.cdf(-t)
    if t < 0.0:
        return 1.0 - t_sf(-t, df)
    t2 = t * t
    # P(|T| > t) = I_{df/(df+t^2)}(df/2, 1/2); both arguments formed without cancellation.
    return 0.5 * _betainc(0.5 * df, 0.5, df / (df + t2), t2 / (df + t2))



def _t_pdf(t: float, df: float) -> float:
    log_c = math.lgamma(0.5 * (df + 1.0)) - math.lgamma(0.5 * df) - 0.5 * math.log(df * math.pi)
    return math.exp(log_c - 0.5 * (df + 1.0) * math.log1p(t * t / df))


def _cornish_fisher(z: float, df: float) -> float:
    """Abramowitz & Stegun 26.7.5: the t quantile from the normal one, as a series in 1/df."""
    z2 = z * z
    g1 = (z2 + 1.0) * z / 4.0
    g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0
    g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0
    g4 = ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z / 92160.0
    return z + (g1 + (g2 + (g3 + g4 / df) / df) / df) / df


def _upper_quantile(q: float, df: float) -> float:
    """The ``t > 0`` with ``P(T > t) = q`` for ``0 < q < 0.5``."""
    if df == 1.0:
        # Cauchy: P(T > t) = 1/2 - atan(t)/pi.
        return 1.0 / math.tan(math.pi * q)
    if df == 2.0:
        return (1.0 - 2.0 * q) / math.sqrt(2.0 * q * (1.0 - q))
    z = -normal_quantile(q)
    if df >= _LARGE_DF:
        return _cornish_fisher(z, df)
    # A bracket [lo, hi] with sf(lo) > q > sf(hi). The t quantile is always beyond the normal
    # one, so lo = z; hi is found by doubling (heavy tails at small df need a few doublings).
    lo, hi = z, max(2.0 * z, 1.0)
    while t_sf(hi, df) > q:
        lo, hi = hi, 2.0 * hi
    guess = _cornish_fisher(z, df)
    t = guess if lo < guess < hi else 0.5 * (lo + hi)
    for _ in range(200):
        f = t_sf(t, df) - q
        if f > 0.0:
            lo = t
        else:
            hi = t
        # Newton on the tail (its derivative is -pdf); bisect when the step leaves the bracket,
        # which keeps the iteration safe where the tail is very flat (small df, far out).
        step = f / _t_pdf(t, df)
        new = t + step
        if not lo < new < hi:
            new = 0.5 * (lo + hi)
        if abs(new - t) <= 4e-16 * abs(new) or hi - lo <= 4e-16 * hi:
            return new
        t = new
    return t


@lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """The quantile ``t`` with ``P(T <= t) = p`` of Student's t with ``df`` degrees of freedom.

    ``0 < p < 1``; ``df > 0`` may be fractional (Welch-Satterthwaite) or ``math.inf``, which
    gives the normal quantile. Accurate to about 1e-13 relative. ``t_quantile(0.975, 9)`` is
    2.2621572 to the 7 decimals of the usual tables.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"t_quantile needs 0 < p < 1, got {p!r}")
    check_df(df)
    if p == 0.5:
        return 0.0
    if math.isinf(df):
        return normal_quantile(p)
    # Solve on the smaller tail: 1 - p is exact for p >= 0.5 (Sterbenz), so p = 0.999 loses nothing.
    if p > 0.5:
        return _upper_quantile(1.0 - p, df)
    return -_upper_quantile(p, df)


def two_sided_quantile(confidence: float, df: float) -> float:
    """The multiplier of a two-sided interval at ``confidence`` (0.95 -> 1.96 for
    ``df = inf``, 2.776 for ``df = 4``): ``t_quantile((1 + confidence) / 2, df)``."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return t_quantile(0.5 + 0.5 * confidence, df)

