"""Unit tests of defan_pytest.stats: the t and Beta quantiles the intervals rest on
(``distributions``), the intervals (``intervals``) and the paired score interval (``paired``).

Reference values are from printed tables (Student t to 7 decimals) or closed forms; a few were
checked against scipy.stats when the tests were written (scipy is not a dependency, and these
tests do not need it).
"""
from __future__ import annotations

import math

import pytest

from defan_pytest.stats.distributions import beta_quantile, normal_quantile, t_quantile, t_sf, two_sided_quantile
from defan_pytest.stats.intervals import clopper_pearson, korn_graubard, mean_interval, shrink_design_effect, welch_df
from defan_pytest.stats.paired import paired_score_interval

# t_{0.975, df}, the two-sided 95% quantiles of every table.
T975 = {
    1: 12.7062047, 2: 4.3026527, 3: 3.1824463, 4: 2.7764451, 5: 2.5705818, 9: 2.2621572,
    10: 2.2281389, 20: 2.0859634, 29: 2.0452296, 30: 2.0422725, 60: 2.0002978, 99: 1.9842169,
    120: 1.9799304,
}


@pytest.mark.parametrize("df, expected", sorted(T975.items()))
def test_t_quantile_matches_tables(df: int, expected: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-6)
    assert t_quantile(0.025, df) == pytest.approx(-expected, abs=1e-6)
    assert two_sided_quantile(0.95, df) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("p, df, expected", [
    (0.995, 1, 63.6567412), (0.9995, 1, 636.6192487), (0.999, 5, 5.8934295), (0.995, 2, 9.9248432),
    (0.9, 4, 1.5332063), (0.75, 3, 0.7648923), (0.995, 30, 2.7499957), (0.999, 120, 3.1595387),
])
def test_t_quantile_other_levels(p: float, df: int, expected: float) -> None:
    assert t_quantile(p, df) == pytest.approx(expected, abs=1e-6)


def test_closed_forms_for_one_and_two_degrees_of_freedom() -> None:
    # df = 1 is Cauchy: t = tan(pi (p - 1/2)); df = 2: t = (2p - 1) / sqrt(2 p (1 - p)).
    for p in (0.51, 0.6, 0.9, 0.975, 0.999, 0.999999):
        # (rel 1e-9: tan(pi (p - 1/2)) itself loses digits near p = 1)
        assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-9)
        assert t_quantile(p, 2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-9)
    # A fractional df between them lies between them.
    assert t_quantile(0.975, 2) < t_quantile(0.975, 1.5) < t_quantile(0.975, 1)


def test_near_the_median_and_far_in_the_tail() -> None:
    assert t_quantile(0.5, 7) == 0.0
    # Near p = 0.5 the quantile is (p - 0.5) / density(0); for df = 7 the density at 0 is
    # Gamma(4) / (sqrt(7 pi) Gamma(3.5)) = 0.3849915.
    density = math.gamma(4) / (math.sqrt(7 * math.pi) * math.gamma(3.5))
    assert density == pytest.approx(0.3849915, abs=1e-7)
    assert t_quantile(0.5 + 1e-9, 7) == pytest.approx(1e-9 / density, rel=1e-6)
    assert t_quantile(0.5 - 1e-9, 7) == pytest.approx(-1e-9 / density, rel=1e-6)
    # Round trips through the distribution function, deep in the tails and at fractional df.
    for df in (1.0, 2.5, 4.0, 9.0, 29.0, 333.3, 5e4):
        for p in (1e-10, 0.001, 0.025, 0.3, 0.5001, 0.975, 0.999, 1 - 1e-10):
            t = t_quantile(p, df)
            assert t_sf(-t, df) == pytest.approx(p, rel=1e-9, abs=1e-15)


def test_large_df_tends_to_the_normal_quantile() -> None:
    z = normal_quantile(0.975)
    assert z == pytest.approx(1.959963985, abs=1e-9)
    assert t_quantile(0.975, math.inf) == z
    for df in (1e3, 1e4 - 1, 1e4, 1e6, 1e12):
        # t - z = (z^3 + z) / (4 df) + O(df^-2) (Cornish-Fisher; the second term is 2.82 / df^2 here)
        assert abs(t_quantile(0.975, df) - z - (z**3 + z) / (4 * df)) < 3.0 / df**2 + 1e-15
    # No jump where the method switches from the continued fraction to the series.
    for p in (0.975, 0.999, 1 - 1e-9):
        assert t_quantile(p, 9_999.9999) == pytest.approx(t_quantile(p, 10_000.0), abs=1e-10)


def test_quantiles_decrease_with_df() -> None:
    values = [t_quantile(0.975, df) for df in (1, 1.5, 2, 3, 5, 10, 100, 1e6, math.inf)]
    assert values == sorted(values, reverse=True)


def test_bad_arguments_are_refused() -> None:
    for p in (0.0, 1.0, -0.1, 1.5, math.nan):
        with pytest.raises(ValueError):
            t_quantile(p, 5)
    for df in (0.0, -1.0, math.nan):
        with pytest.raises(ValueError):
            t_quantile(0.975, df)
    with pytest.raises(ValueError):
        two_sided_quantile(1.0, 5)
    with pytest.raises(ValueError):
        normal_quantile(0.0)


def test_incomplete_beta_closed_forms() -> None:
    # Through its inverse: I_x(a, 1) = x^a, I_x(1, b) = 1 - (1 - x)^b, I_x(1/2, 1/2) =
    # (2/pi) asin(sqrt(x)); integer a, b: a binomial tail.
    assert beta_quantile(0.3**2.5, 2.5, 1.0) == pytest.approx(0.3, rel=1e-12)
    assert beta_quantile(1 - 0.7**3.5, 1.0, 3.5) == pytest.approx(0.3, rel=1e-12)
    assert beta_quantile(0.3, 0.5, 0.5) == pytest.approx(math.sin(math.pi * 0.3 / 2) ** 2, rel=1e-12)
    # I_0.4(2, 3) = P(Bin(4, 0.4) >= 2) = 6*.16*.36 + 4*.064*.6 + .0256 = 0.5248
    assert beta_quantile(0.5248, 2.0, 3.0) == pytest.approx(0.4, rel=1e-12)
    assert beta_quantile(0.5, 0.5, 0.5) == pytest.approx(0.5, rel=1e-12)
    # The t distribution from it: P(T <= 2) with 3 df = 0.9303370.
    assert t_sf(-2.0, 3) == pytest.approx(0.93033702, abs=1e-8)
    assert t_sf(2.0, 3) == pytest.approx(1 - 0.93033702, abs=1e-8)


def test_beta_quantile_inverts_the_incomplete_beta() -> None:
    for a, b in ((0.3, 12.5), (1.0, 1.0), (2.451, 4.677), (450.5, 1050.5), (0.05, 0.05), (3000.0, 2.0)):
        for p in (1e-9, 0.025, 0.5, 0.975, 1 - 1e-9):
            x = beta_quantile(p, a, b)
            assert 0.0 <= x <= 1.0
            assert 0.0 < x or p < 0.5  # (a quantile below the smallest double is 0)
    # Round trips through closed forms: for whole a, b, I_x(a, b) = P(Bin(a + b - 1, x) >= a).
    for a, b in ((1, 1), (2, 5), (3, 4), (10, 30), (50, 2)):
        n = a + b - 1
        for p in (1e-6, 0.025, 0.5, 0.975, 1 - 1e-6):
            x = beta_quantile(p, a, b)
            tail = sum(math.comb(n, k) * x**k * (1 - x) ** (n - k) for k in range(a, n + 1))
            assert tail == pytest.approx(p, rel=1e-9, abs=1e-14)
    # Round trips through the t distribution, whose tail is an incomplete beta:
    # P(|T| > t) = I_{df/(df+t^2)}(df/2, 1/2), solved by Newton on t_sf (no Beta quantile).
    for df in (1.0, 2.5, 9.0, 120.0):
        for p in (0.6, 0.975, 0.9999):
            t = t_quantile(p, df)
            assert beta_quantile(2 * (1 - p), df / 2, 0.5) == pytest.approx(df / (df + t * t), rel=1e-9)
    # Far below 1e-154 (where lo * hi would underflow): Beta(0.05, 0.05) at 1e-9 is 9.7118236e-175.
    assert beta_quantile(1e-9, 0.05, 0.05) == pytest.approx(9.7118236e-175, rel=1e-7)
    # A quantile below the smallest double comes back as 0 or a subnormal, never out of [0, 1].
    assert 0.0 <= beta_quantile(1e-8, 0.0249, 0.196) < 1e-300
    # Closed forms: Beta(a, 1) has quantile p^(1/a).
    assert beta_quantile(0.975, 2.0, 1.0) == pytest.approx(math.sqrt(0.975), rel=1e-13)
    assert (beta_quantile(0.0, 2.0, 3.0), beta_quantile(1.0, 2.0, 3.0)) == (0.0, 1.0)


def test_clopper_pearson() -> None:
    # 0 of n: [0, 1 - 0.025^(1/n)]; n of n: [0.025^(1/n), 1]; 1 of 2: [1 - sqrt(.975), sqrt(.975)].
    assert clopper_pearson(0, 10) == (0.0, pytest.approx(1 - 0.025 ** 0.1))
    assert clopper_pearson(10, 10) == (pytest.approx(0.025 ** 0.1), 1.0)
    assert clopper_pearson(1, 2) == (pytest.approx(1 - math.sqrt(0.975)), pytest.approx(math.sqrt(0.975)))
    # 3 of 10 (scipy: 0.0667395, 0.6524529)
    lo, hi = clopper_pearson(3, 10)
    assert (round(lo, 7), round(hi, 7)) == (0.0667395, 0.6524529)
    with pytest.raises(ValueError):
        clopper_pearson(11, 10)


def test_korn_graubard_is_clopper_pearson_at_the_df_adjusted_size() -> None:
    z, t = normal_quantile(0.975), t_quantile(0.975, 5)
    n = 10.0 * (z / t) ** 2
    assert korn_graubard(4, 10.0, 20, 5.0) == clopper_pearson(0.2 * n, n)
    # With df -> infinity it is Clopper-Pearson at n_eff.
    assert korn_graubard(4, 10.0, 20, math.inf) == pytest.approx(clopper_pearson(2.0, 10.0))


def test_welch_df() -> None:
    # Equal variances, equal df: the sum of the dfs.
    assert welch_df([1.0, 1.0], [4.0, 4.0]) == pytest.approx(8.0)
    # One term dominating: close to its df.
    assert welch_df([1.0, 1e-9], [3.0, 50.0]) == pytest.approx(3.0)
    # A known variance (df = inf) and zero variances do not count; nothing left: inf.
    assert welch_df([1.0, 1.0], [5.0, math.inf]) == pytest.approx(20.0)
    assert welch_df([0.0, 0.0], [3.0, 4.0]) == math.inf
    with pytest.raises(ValueError):
        welch_df([1.0], [1.0, 2.0])


def test_mean_interval() -> None:
    # One estimate: its own interval back.
    mean, lo, hi, df = mean_interval([(0.3, 0.1, 0.6, 4.0)])
    assert (mean, df) == (0.3, 4.0) and lo == pytest.approx(0.1) and hi == pytest.approx(0.6)
    # Two symmetric normal-quantile intervals: the mean's half-width is sqrt(h1^2 + h2^2)/2.
    mean, lo, hi, df = mean_interval([(0.2, 0.1, 0.3, math.inf), (0.4, 0.2, 0.6, math.inf)])
    assert mean == pytest.approx(0.3)
    assert hi - mean == pytest.approx(mean - lo) == pytest.approx(math.sqrt(0.1**2 + 0.2**2) / 2)
    assert df == math.inf


def test_shrink_design_effect() -> None:
    assert shrink_design_effect(None, 40, 15.0) == 15.0
    assert shrink_design_effect(3.0, 0, 15.0) == 15.0
    assert shrink_design_effect(3.0, 1, 15.0) == pytest.approx(9.0)  # (1*3 + 1*15)/2
    assert shrink_design_effect(0.5, 3, 15.0) == pytest.approx((3 * 1.0 + 15.0) / 4)  # floored at 1
    assert shrink_design_effect(3.0, 1e6, 15.0) == pytest.approx(3.0, rel=1e-5)


def test_paired_score_interval() -> None:
    # No discordant pair: -+ q^2 / (n + q^2), not a point.
    q2 = normal_quantile(0.975) ** 2
    lo, hi = paired_score_interval(0, 0, 100)
    assert (lo, hi) == (pytest.approx(-q2 / (100 + q2)), pytest.approx(q2 / (100 + q2)))
    # Mirror symmetry, the estimate inside, the bounds.
    lo1, hi1 = paired_score_interval(7, 2, 50)
    lo2, hi2 = paired_score_interval(2, 7, 50)
    assert (lo1, hi1) == (pytest.approx(-hi2), pytest.approx(-lo2))
    assert lo1 < 0.1 < hi1
    assert paired_score_interval(40, 0, 40)[1] == 1.0
    assert paired_score_interval(0, 40, 40)[0] == -1.0
    # Fewer degrees of freedom, wider; fractional (effective) counts are fine.
    assert paired_score_interval(7, 2, 50, df=4)[0] < lo1
    lo, hi = paired_score_interval(12.3, 4.1, 77.7)
    assert lo < (12.3 - 4.1) / 77.7 < hi
    with pytest.raises(ValueError):
        paired_score_interval(30, 30, 50)


# --- the stratified cluster design (issue 25) ------------------------------------------------

from defan_pytest.stats.design import paired_design, rate_design, stratified_design  # noqa: E402


def test_design_of_one_stratum_is_the_cluster_design() -> None:
    units = [(0, 5), (1, 5), (1, 5), (2, 5), (3, 5), (5, 5)]
    design = rate_design([units])
    assert design is not None and design.estimable and design.df == 5.0 and design.n_kish == 30.0
    # estimated deff 8/3, shrunk with 5 groups carrying an event toward the worst case 5
    assert design.deff == pytest.approx((5 * 8 / 3 + 5) / 6)
    assert rate_design([[(0, 0)]]) is None and rate_design([]) is None


def test_worst_case_is_sum_of_squared_sizes_over_n() -> None:
    # The worst case is sum n^2 / N = (1 + 225) / 16, not the mean size 8; no event at all is
    # design effect 1 on one informative group, shrunk toward it.
    design = rate_design([[(0, 1), (0, 15)]])
    assert design is not None and design.deff == pytest.approx((1 + 226 / 16) / 2)


def test_the_interval_is_monotone_at_the_boundary() -> None:
    # Issue 25: 90/90 wrong over 6 groups got 0.35-1.00 where 89/90 got 0.55-1.00.
    from defan_pytest.metrics.summary import stratified_rate_interval
    all_wrong = stratified_rate_interval([[(15, 15)] * 6])
    one_right = stratified_rate_interval([[(14, 15)] + [(15, 15)] * 5])
    assert all_wrong is not None and one_right is not None
    assert all_wrong[0] >= one_right[0] and all_wrong[1] == 1.0
    none = stratified_rate_interval([[(0, 15)] * 6])
    one = stratified_rate_interval([[(1, 15)] + [(0, 15)] * 5])
    assert none is not None and one is not None and none[1] <= one[1]


def test_zero_between_group_variance_is_design_effect_one_before_shrinking() -> None:
    design = stratified_design([[(1, 15)] * 30], spread=(1 / 15) * (14 / 15), informative=30)
    assert design is not None and design.deff == pytest.approx((30 * 1.0 + 15.0) / 31)


def test_lonely_groups_are_centred_at_the_overall_mean() -> None:
    # Two domains of one group each: each group's deviation from the mean of the two rates.
    design = rate_design([[(3, 15)], [(9, 15)]])
    assert design is not None and design.estimable and design.df == 1.0
    w = 1 / (2 * 15)
    assert design.estimate == pytest.approx(0.4)
    # V = w^2 (3 - 6)^2 + w^2 (9 - 6)^2 = 18 w^2; deff = V / (p(1-p) / n_kish)
    assert design.deff >= 1.0 and design.variance == pytest.approx(design.deff * 0.24 / design.n_kish)
    # n_kish = 30: estimated deff 18 w^2 / (0.24 / 30) = 2.5; two groups carry events, worst 15
    assert 18 * w * w / (0.24 / design.n_kish) == pytest.approx(2.5)
    assert design.deff == pytest.approx((2 * 2.5 + 15) / 3)
    # One group in all cannot be estimated: the worst case on one degree of freedom.
    alone = rate_design([[(3, 15)]])
    assert alone is not None and not alone.estimable and alone.n_eff == pytest.approx(1.0) and alone.df == 1.0


def test_paired_design_rates_and_none() -> None:
    found = paired_design([[(2, 0, 15), (0, 1, 15)], [(1, 0, 5)]])
    assert found is not None
    design, rate_b, rate_c = found
    assert rate_b == pytest.approx((2 / 30 + 1 / 5) / 2) and rate_c == pytest.approx((1 / 30) / 2)
    assert design.estimate == pytest.approx(rate_b - rate_c) and design.df == 2.0
    assert paired_design([[(0, 0, 0)]]) is None
