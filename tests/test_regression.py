"""Tests of defan_pytest.gates.paired (the paired test of the regression gate), and the coverage
simulations of both the level intervals (metrics.cluster_interval) and the paired interval.

Claims are numeric strings, so that group consistency (RC) only depends on "386" == "386".
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pytest
from numpy.polynomial.hermite_e import hermegauss

from defan_pytest.metrics.summary import cluster_interval
from defan_pytest.gates.paired import OVERALL, Comparison, compare, paired_interval

K = 15  # responses per paraphrase group, as in DefAn


def rec(domain: str, group: int, i: int, *, correct: bool | None = True, aligned: bool | None = True,
        claim: str | None = None, error: str | None = None, **extra: Any) -> dict[str, Any]:
    """A per-prompt record as the plugin writes it (extra keys are ignored by compare)."""
    if claim is None:
        claim = "386" if correct else "334"
    if error:
        claim = None
        correct = aligned = None
    return {"id": f"{domain}-q{group:04d}-p{i:02d}", "domain": domain, "group": f"{domain}-q{group:04d}",
            "type": "numeric", "claim": claim, "aligned": aligned, "correct": correct, "error": error,
            "question": f"q{group}?", **extra}


def run(domain: str, groups: int, wrong: Any = lambda g, i: i < 5, size: int = K, **kw: Any) -> list[dict[str, Any]]:
    """A run: ``groups`` groups of ``size`` prompts, prompt i of group g hallucinated when wrong(g, i)."""
    return [rec(domain, g, i, correct=not wrong(g, i), **kw) for g in range(groups) for i in range(size)]


def change_of(result: Comparison, scope: str, metric: str = "fch") -> dict[str, Any]:
    data: dict[str, Any] = result.to_json()["scopes"][scope][metric]
    return data


# --- the decision on constructed runs ---------------------------------------------------------


def test_identical_runs_never_regress() -> None:
    old = run("nobel", 40) + run("census", 12, wrong=lambda g, i: (g + i) % 4 == 0)
    result = compare(old, [dict(r) for r in old])
    assert not result.regressed and result.regressions == [] and result.flipped == ()
    assert result.pairs.to_json() == {"paired": 780, "only_baseline": 0, "only_current": 0, "groups": 52, "errored": 0}
    for scope, changes in result.scopes.items():
        for metric, c in changes.items():
            assert c.change == 0.0 and (c.worse_flips, c.better_flips) == (0, 0), (scope, metric)
            assert not (c.worse or c.significant or c.significant_worse or c.regressed)
            # No flip among a sample of groups does not show that the models agree elsewhere:
            # the interval is symmetric around 0, -+ q^2 / (G + q^2), not [0, 0].
            lo, hi = c.interval
            assert lo == pytest.approx(-hi) and 0.0 < hi < 0.4
    assert change_of(result, "nobel")["interval"][1] < change_of(result, "census")["interval"][1]


def test_a_three_point_rise_over_1000_groups_regresses() -> None:
    # Baseline: 5 of 15 wrong in every group (FCH 1/3). Now: 9 groups in every 20 have one more
    # wrong prompt: 450 flips right -> hallucinated over 15,000 prompts, +0.030 exactly.
    old = run("nobel", 1000)
    new = run("nobel", 1000, wrong=lambda g, i: i < 5 or (g % 20 < 9 and i == 5))
    result = compare(old, new, tolerances={"fch": 0.02})
    c = change_of(result, "nobel")
    assert c["change"] == pytest.approx(0.03) and (c["worse_flips"], c["better_flips"]) == (450, 0)
    assert (c["old"], c["new"]) == (pytest.approx(1 / 3), pytest.approx(1 / 3 + 0.03))
    assert c["interval"][0] > 0.02 and c["significant_worse"] and c["regressed"]
    assert (c["groups"], c["pairs"], c["df"]) == (1000, 15000, 999.0)
    assert result.regressed and [(r.scope, r.metric) for r in result.regressions] == [("nobel", "fch"), (OVERALL, "fch")]
    # The same significant rise within a larger tolerance is not a regression.
    assert not compare(old, new, tolerances={"fch": 0.05}).regressed


def test_the_same_rise_over_10_groups_does_not_regress() -> None:
    # 10 groups of 15: 5 prompts turn wrong (150 * 0.03 = 4.5 is not a whole number; 5 is a
    # larger rise, +0.033), in three groups, as a model that changed its mind on a few facts.
    old = run("nobel", 10)
    new = run("nobel", 10, wrong=lambda g, i: i < 5 or (g in (0, 3) and i in (5, 6)) or (g == 7 and i == 5))
    result = compare(old, new, tolerances={"fch": 0.02})
    c = change_of(result, "nobel")
    assert c["change"] == pytest.approx(5 / 150) and c["worse"] and c["worse_flips"] == 5
    assert c["interval"][0] < 0.0 < c["interval"][1]
    assert not (c["significant_worse"] or c["regressed"]) and not result.regressed


def test_an_improvement_never_regresses_and_rc_is_judged_downwards() -> None:
    old = run("nobel", 200, wrong=lambda g, i: i < 8)
    new = run("nobel", 200, wrong=lambda g, i: i < 3)
    c = compare(old, new).scopes["nobel"]
    assert c["fch"].change == pytest.approx(-5 / 15) and c["fch"].significant and not c["fch"].significant_worse
    assert c["fch"].better_flips == 1000 and not c["fch"].regressed
    # Every group had two claims (inconsistent) and now still has two: RC unchanged.
    assert c["rc"].change == 0.0
    # RC is higher-is-better: a drop is the worse side.
    rc_old = run("sports", 100, wrong=lambda g, i: False)             # all consistent
    rc_new = run("sports", 100, wrong=lambda g, i: g % 2 == 0 and i == 0)  # half the groups split
    rc = compare(rc_old, rc_new).scopes["sports"]["rc"]
    assert rc.higher_is_better and rc.change == pytest.approx(-0.5)
    assert (rc.worse_flips, rc.better_flips, rc.pairs, rc.groups) == (50, 0, 100, 100)
    assert rc.interval[1] < 0.0 and rc.significant_worse and rc.regressed
    assert (rc.old, rc.new) == (1.0, 0.5)


# --- pairing -----------------------------------------------------------------------------------


def test_disjoint_runs_give_an_empty_comparison() -> None:
    result = compare(run("nobel", 3), run("census", 3))
    assert result.pairs.to_json() == {"paired": 0, "only_baseline": 45, "only_current": 45, "groups": 0, "errored": 0}
    assert result.scopes == {} and result.flipped == () and not result.regressed
    assert result.to_json()["scopes"] == {}
    assert compare([], []).scopes == {}


def test_only_prompts_in_both_runs_are_paired() -> None:
    old = run("nobel", 4)
    new = run("nobel", 6, wrong=lambda g, i: i < 6)
    result = compare(old[:50], new)  # old: groups 0-2 and 5 prompts of group 3
    assert result.pairs.to_json() == {"paired": 50, "only_baseline": 0, "only_current": 40, "groups": 4, "errored": 0}
    c = result.scopes["nobel"]["fch"]
    # one more wrong prompt (p05) in each of groups 0-2; group 3's paired prompts are p00-p04
    assert (c.worse_flips, c.pairs, c.groups) == (3, 50, 4)


def test_records_without_id_or_with_a_repeated_id_are_refused() -> None:
    good = run("nobel", 1)
    with pytest.raises(ValueError, match="no id"):
        compare(good, [{k: v for k, v in r.items() if k != "id"} for r in good])
    with pytest.raises(ValueError, match="twice"):
        compare(good + good[:1], good)
    with pytest.raises(ValueError, match="no domain"):
        compare(good, [{**r, "domain": ""} for r in good])
    with pytest.raises(ValueError, match="overall"):
        compare(good, good, overall="median")
    with pytest.raises(ValueError, match="confidence"):
        compare(good, good, confidence=1.0)


def test_errored_prompts_leave_fch_and_pmh_and_count_for_the_error_rate() -> None:
    old = run("nobel", 20)
    new = [dict(r) for r in old]
    # Two prompts that were right now error out; one that was wrong errored in the baseline.
    for r in new[5:7]:
        r.update(error="TimeoutError: read timed out", claim=None, correct=None, aligned=None)
    old[0].update(error="RateLimitError", claim=None, correct=None, aligned=None)
    result = compare(old, new, tolerances=lambda scope, metric: 0.0 if metric == "error_rate" else 0.02)
    assert result.pairs.errored == 3
    fch = result.scopes["nobel"]["fch"]
    assert (fch.pairs, fch.change, fch.worse_flips) == (297, 0.0, 0)  # an error is never a hallucination
    err = result.scopes["nobel"]["error_rate"]
    assert (err.worse_flips, err.better_flips, err.pairs) == (2, 1, 300)
    assert err.change == pytest.approx(1 / 300) and err.tolerance == 0.0
    assert (err.old, err.new) == (pytest.approx(1 / 300), pytest.approx(2 / 300))
    # Groups 0 (error in the baseline) and the group of prompts 5-6 (errors now) still count
    # for RC: each run's answered paraphrases are compared, the errored ones left out (as from
    # FCH and PMH), and each group keeps at least two answered ones.
    assert result.scopes["nobel"]["rc"].pairs == 20


def test_rc_flips_and_groups_that_count() -> None:
    old = run("nobel", 4, wrong=lambda g, i: False, size=3)
    new = [dict(r) for r in old]
    new[0]["claim"] = "999"  # group 0: consistent -> inconsistent (and that prompt wrong)
    new[0]["correct"] = False
    result = compare(old, new)
    rc = result.scopes["nobel"]["rc"]
    assert (rc.worse_flips, rc.better_flips, rc.pairs, rc.change) == (1, 0, 4, -0.25)
    # Back the other way is a better flip.
    assert compare(new, old).scopes["nobel"]["rc"].better_flips == 1
    # Singleton groups (math) have no RC: the metric is absent from the scope.
    assert "rc" not in compare(run("math", 5, size=1), run("math", 5, size=1)).scopes["math"]


def test_pmh_flips_are_counted_separately() -> None:
    old = run("nobel", 10)
    new = [dict(r) for r in old]
    for r in new[:15:3]:
        r["aligned"] = False
    c = compare(old, new).scopes["nobel"]
    assert (c["pmh"].worse_flips, c["pmh"].change) == (5, pytest.approx(5 / 150))
    assert c["fch"].change == 0.0


def test_flipped_prompts_worse_first_in_a_deterministic_order() -> None:
    old = run("nobel", 3) + run("sports", 2)
    new = [dict(r) for r in old]
    by_id = {r["id"]: r for r in new}
    for pid in ("nobel-q0002-p07", "sports-q0001-p06", "nobel-q0000-p09"):      # right -> wrong
        by_id[pid].update(correct=False, claim="334")
    for pid in ("sports-q0000-p01", "nobel-q0001-p00"):                         # wrong -> right
        by_id[pid].update(correct=True, claim="386")
    result = compare(old, list(reversed(new)))
    assert [(f.id, f.direction) for f in result.flipped] == [
        ("sports-q0001-p06", "worse"), ("nobel-q0000-p09", "worse"), ("nobel-q0002-p07", "worse"),
        ("sports-q0000-p01", "better"), ("nobel-q0001-p00", "better"),
    ]
    first = result.flipped[0]
    assert (first.domain, first.group, first.metric) == ("sports", "sports-q0001", "fch")
    assert first.old["correct"] is True and first.new["correct"] is False
    assert first.new["question"] == "q1?"  # the records as given, other keys included


def test_json_shape_and_round_trip() -> None:
    old = run("nobel", 30) + run("math", 20, size=1)
    new = run("nobel", 30, wrong=lambda g, i: i < 6) + run("math", 20, wrong=lambda g, i: g < 3, size=1)
    data = compare(old, new).to_json()
    assert json.loads(json.dumps(data, allow_nan=False)) == data
    assert set(data) == {"confidence", "overall", "regressed", "pairs", "scopes", "flipped"}
    assert list(data["scopes"]) == ["nobel", "math", "overall"]
    assert set(data["scopes"]["nobel"]["fch"]) == {
        "old", "new", "change", "interval", "df", "confidence", "groups", "pairs", "worse_flips",
        "better_flips", "higher_is_better", "tolerance", "worse", "significant", "significant_worse", "regressed",
        "p_value", "level", "noise", "method", "catchable"}
    assert list(data["scopes"]["nobel"]) == ["fch", "pmh", "rc", "error_rate"]
    assert list(data["scopes"]["math"]) == ["fch", "pmh", "error_rate"]
    assert set(data["flipped"][0]) == {"id", "domain", "group", "metric", "direction", "old", "new"}


def test_tolerances_by_function_mapping_and_scope() -> None:
    old = run("nobel", 400) + run("census", 100)
    new = run("nobel", 400, wrong=lambda g, i: i < 5 or (g % 20 < 9 and i == 5)) + run("census", 100)
    # Default: FCH, PMH, RC 0.02; the error rate is not judged.
    result = compare(old, new)
    assert result.scopes["nobel"]["fch"].tolerance == 0.02 and result.scopes["nobel"]["error_rate"].tolerance is None
    assert result.scopes["nobel"]["fch"].regressed
    # Per scope, then per metric.
    result = compare(old, new, tolerances={"nobel": {"fch": 0.04}, "fch": 0.01})
    assert result.scopes["nobel"]["fch"].tolerance == 0.04 and not result.scopes["nobel"]["fch"].regressed
    assert result.scopes["census"]["fch"].tolerance == 0.01
    # None: reported, never judged.
    result = compare(old, new, tolerances=lambda scope, metric: None)
    assert not result.regressed and result.scopes["nobel"]["fch"].significant_worse
    with pytest.raises(ValueError, match="tolerance"):
        compare(old, new, tolerances={"fch": -1})


def test_overall_mean_and_pooled() -> None:
    # nobel: 1000 groups, +0.03; census: 10 groups, unchanged.
    old = run("nobel", 1000) + run("census", 10)
    new = run("nobel", 1000, wrong=lambda g, i: i < 5 or (g % 20 < 9 and i == 5)) + run("census", 10)
    mean = compare(old, new).scopes[OVERALL]["fch"]
    pooled = compare(old, new, overall="pooled").scopes[OVERALL]["fch"]
    # The mean of domain changes weighs census (no change, 10 groups, a wide interval) as much
    # as nobel; pooling is dominated by nobel's 1,000 groups.
    assert mean.change == pytest.approx(0.015)
    assert pooled.change == pytest.approx(450 / 15150)
    assert mean.interval[1] - mean.interval[0] > 3 * (pooled.interval[1] - pooled.interval[0])
    assert pooled.regressed and not mean.regressed
    assert (mean.groups, pooled.groups, mean.worse_flips, pooled.worse_flips) == (1010, 1010, 450, 450)
    # One domain: the mean is that domain.
    one = compare(old[:15000], new[:15000])
    assert one.scopes[OVERALL]["fch"].interval == pytest.approx(one.scopes["nobel"]["fch"].interval)


def test_paired_interval_basics() -> None:
    assert paired_interval([]) is None and paired_interval([(0, 0, 0)]) is None
    change, lo, hi, df = paired_interval([(2, 0, 15), (0, 1, 15), (1, 1, 15), (0, 0, 15)])  # type: ignore[misc]
    assert (change, df) == (pytest.approx(1 / 60), 3.0) and lo < change < hi
    # A single group: one observation, one degree of freedom.
    assert paired_interval([(3, 0, 15)])[3] == 1.0  # type: ignore[index]
    with pytest.raises(ValueError):
        paired_interval([(9, 9, 15)])
    # Wider at a higher confidence.
    units = [(2, 0, 15), (1, 0, 15), (0, 1, 15), (3, 0, 15), (1, 1, 15)] * 4
    a, b = paired_interval(units, 0.9), paired_interval(units, 0.99)
    assert a is not None and b is not None and b[1] < a[1] < a[2] < b[2]


# --- coverage simulations ----------------------------------------------------------------------
#
# 4,000 replicates per cell, fixed seeds (the test is deterministic). The Monte Carlo standard
# error of a coverage near 0.95 is sqrt(0.95 * 0.05 / 4000) = 0.0034. The assertion is the
# issue's 0.94; the lowest coverage bench/regression_stability.py measured over its larger grid
# (other seeds) is 0.952 for the level interval and 0.947 for the paired one (at 100 groups,
# where it is within 1 SE of 0.95), so 0.94 sits at least 2 SE below what the method delivers.
# The groups of the level test cover mu = 0.3 at three degrees of between-group variation, and
# the hard corner mu = 0.1 with rho = 0.5 (most groups near 0, a few near 1), where today's
# method covered 0.87 at 10 groups.

REPS = 4000
LEVEL_CELLS = [(g, 0.3, rho) for g in (5, 10, 30, 100) for rho in (0.05, 0.2, 0.5)] + [(10, 0.1, 0.5), (30, 0.1, 0.5)]


def _coverage(hits: Iterable[bool]) -> float:
    values = list(hits)
    return sum(values) / len(values)


def _reps(groups: int) -> int:
    # At 100 groups nearly every replicate is a new multiset (no cache hit) and the interval
    # is at its nominal coverage: a quarter of the replicates (Monte-Carlo error 0.7 points).
    return REPS // 4 if groups >= 100 else REPS


@pytest.mark.parametrize("cell", LEVEL_CELLS, ids=lambda c: "g{}-mu{}-rho{}".format(*c))
def test_level_interval_coverage(cell: tuple[int, float, float]) -> None:
    rng = np.random.default_rng(13 + LEVEL_CELLS.index(cell))
    low = []
    for g, mu, rho in [cell]:
        a, b = mu * (1 - rho) / rho, (1 - mu) * (1 - rho) / rho
        y = rng.binomial(K, rng.beta(a, b, size=(_reps(g), g)))
        cache: dict[tuple[int, ...], tuple[float, float]] = {}
        hits = []
        for row in y.tolist():
            key = tuple(sorted(row))  # the interval depends on the multiset of groups only
            if key not in cache:
                found = cluster_interval([(v, K) for v in key])
                assert found is not None
                cache[key] = found
            lo, hi = cache[key]
            hits.append(lo <= mu <= hi)
        cov = _coverage(hits)
        if cov < 0.94:
            low.append((g, mu, rho, cov))
    assert low == []


_X, _W = hermegauss(96)
_W = _W / _W.sum()


def _expit(x: Any) -> Any:
    return 1.0 / (1.0 + np.exp(-x))


def _location(mean: float, scale: float) -> float:
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if float((_W * _expit(mid + scale * _X)).sum()) < mean else (lo, mid)
    return 0.5 * (lo + hi)


def _logit_normal(mu: float, rho: float) -> tuple[float, float]:
    """Location and scale of a logit-normal group rate with mean mu and ICC rho."""
    lo, hi = 1e-6, 30.0
    for _ in range(80):
        s = 0.5 * (lo + hi)
        p = _expit(_location(mu, s) + s * _X)
        m = float((_W * p).sum())
        lo, hi = (s, hi) if (float((_W * p * p).sum()) - m * m) / (mu * (1 - mu)) < rho else (lo, s)
    return _location(mu, s), s


PAIRED_CELLS = (
    # (groups, mu, rho, true change, group-rate correlation between runs, P(answer kept))
    [(g, 0.3, rho, 0.03, 0.9, 0.8) for g in (5, 10, 30, 100) for rho in (0.05, 0.2, 0.5)]
    + [(10, 0.1, 0.5, 0.03, 0.9, 0.8), (30, 0.5, 0.2, 0.05, 0.7, 0.0), (10, 0.3, 0.2, 0.0, 1.0, 0.0)]
)


@pytest.mark.parametrize("cell", PAIRED_CELLS, ids=lambda c: "g{}-mu{}-rho{}-d{}-r{}-k{}".format(*c))
def test_paired_interval_coverage(cell: tuple[int, float, float, float, float, float]) -> None:
    # Two runs on the same groups: group rates logit-normal (mean mu, ICC rho), shifted by the
    # true change in the new run and correlated between the runs; each answer kept from the old
    # run with probability "kept" (a model that changed a little keeps most answers), else
    # re-drawn. The true change of the mean rate comes from Gauss-Hermite quadrature.
    rng = np.random.default_rng(17 + PAIRED_CELLS.index(cell))
    low = []
    for g, mu, rho, delta, r, kept in [cell]:
        reps = _reps(g)
        a, s = _logit_normal(mu, rho)
        a2 = _location(mu + delta, s)
        true = float((_W * _expit(a2 + s * _X)).sum()) - float((_W * _expit(a + s * _X)).sum())
        z = rng.standard_normal((reps, g))
        z2 = r * z + math.sqrt(1 - r * r) * rng.standard_normal((reps, g))
        u = rng.random((reps, g, K))
        v = np.where(rng.random((reps, g, K)) < kept, u, rng.random((reps, g, K)))
        old = u < _expit(a + s * z)[..., None]
        new = v < _expit(a2 + s * z2)[..., None]
        b = (new & ~old).sum(axis=2).tolist()
        c = (old & ~new).sum(axis=2).tolist()
        cache: dict[tuple[tuple[int, int], ...], tuple[float, float]] = {}
        hits = []
        for bs, cs in zip(b, c):
            key = tuple(sorted(zip(bs, cs)))  # the interval depends on the multiset of groups only
            if key not in cache:
                found = paired_interval([(bi, ci, K) for bi, ci in key])
                assert found is not None
                cache[key] = (found[1], found[2])
            lo, hi = cache[key]
            hits.append(lo - 1e-12 <= true <= hi + 1e-12)
        cov = _coverage(hits)
        if cov < 0.94:
            low.append((g, mu, rho, delta, cov))
    assert low == []


# --- issue 25: the overall interval, unequal groups, monotone decisions, the tolerance, K = 0 ----

from defan_pytest.gates.regression import NOTHING_JUDGED, judge  # noqa: E402
from defan_pytest.gates.thresholds import parse_thresholds  # noqa: E402
from defan_pytest.metrics.summary import stratified_rate_interval  # noqa: E402


def _strata(rng: np.random.Generator, mus: Iterable[float], groups: int, rho: float) -> list[list[tuple[int, int]]]:
    s = 1.0 / rho - 1.0
    out = []
    for mu in mus:
        y = rng.binomial(K, rng.beta(mu * s, (1.0 - mu) * s, size=groups))
        out.append([(int(v), K) for v in y])
    return out


@pytest.mark.parametrize("mus", [(0.05, 0.1, 0.2, 0.3, 0.5, 0.6, 0.8, 0.95), (0.1,) * 8, (0.5,) * 8])
def test_overall_interval_covers_at_one_to_three_groups_a_domain(mus: tuple[float, ...]) -> None:
    # Eight domains of 1, 2 or 3 groups (intra-class correlation 0.3): the mean of domains'
    # interval from the stratified cluster variance covers the mean of the domains' true rates.
    # The old one, built from the domains' clipped intervals, covered 35% at one group a domain.
    rng = np.random.default_rng(25)
    truth = sum(mus) / len(mus)
    for groups in (1, 2, 3):
        hits = 0
        for _ in range(150):
            found = stratified_rate_interval(_strata(rng, mus, groups, 0.3))
            assert found is not None
            hits += found[0] <= truth <= found[1]
        assert hits / 150 >= 0.94, (groups, hits)


def test_unequal_group_sizes_cover() -> None:
    # Half singletons, half groups of 15 (the mean group size 8 understated the worst case,
    # sum n^2 / N = 14.1: coverage 0.83 before).
    rng = np.random.default_rng(2)
    for mu, rho, groups in ((0.05, 0.3, 30), (0.2, 0.6, 30), (0.5, 0.3, 100), (0.02, 0.6, 100)):
        s = 1.0 / rho - 1.0
        hits = 0
        for _ in range(200):
            n = np.array([1 if g % 2 else K for g in range(groups)])
            y = rng.binomial(n, rng.beta(mu * s, (1.0 - mu) * s, size=groups))
            found = cluster_interval([(int(a), int(b)) for a, b in zip(y, n)])
            assert found is not None
            hits += found[0] <= mu <= found[1]
        assert hits / 200 >= 0.94, (mu, rho, groups, hits)


def test_one_flip_per_group_regresses_monotonically() -> None:
    # 30 groups, 5 of 15 wrong; then j groups get one more wrong prompt, or every group gets k
    # more. With zero between-group variance read as the worst case, 30 flips (one a group)
    # did not regress where 29 and 31 did: the decisions must only ever switch on.
    old = run("nobel", 30)
    decided = []
    for extra in range(0, 61):
        new = run("nobel", 30, wrong=lambda g, i: i < 5 + (extra // 30) + (g < extra % 30))
        decided.append(compare(old, new, tolerances={"fch": 0.02}).scopes["nobel"]["fch"].regressed)
    assert decided == sorted(decided) and decided[-1] and not decided[0]


def _rerun(rng: np.random.Generator, domains: Iterable[str], groups: int, errors: float,
           rise: float = 0.0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A run and a re-run of the same model (each answer re-drawn at its group's rate, plus
    ``rise``), each call failing with probability ``errors``."""
    old: list[dict[str, Any]] = []
    new: list[dict[str, Any]] = []
    for domain in domains:
        p = rng.beta(0.2 * 2.0, 0.8 * 2.0, size=groups)  # mean 0.2, intra-class correlation 1/3
        for g in range(groups):
            for out, rate in ((old, p[g]), (new, min(p[g] + rise, 1.0))):
                for i in range(K):
                    wrong = bool(rng.random() < rate)
                    claim = ("334", "335")[int(rng.random() < 0.5)] if wrong else "386"
                    err = "TimeoutError" if rng.random() < errors else None
                    out.append(rec(domain, g, i, correct=not wrong, aligned=not wrong, claim=claim, error=err))
    return old, new


def test_a_model_against_its_own_rerun_with_call_errors_fails_at_most_the_level() -> None:
    # Three domains of 10 groups, 5% and 10% call errors; the whole gate (FCH, PMH, RC judged in
    # every scope, one-sided Bonferroni over K = 12) at the configured 95%. Before: 7-13%.
    thresholds = parse_thresholds({"regression": {"confidence": 0.95}})
    rng = np.random.default_rng(7)
    for errors in (0.05, 0.10):
        failed = 0
        for _ in range(45):
            old, new = _rerun(rng, ("sports", "nobel", "census"), 10, errors)
            result = judge({"rows": old}, new, thresholds)
            assert result["judged"] == 12 and result["status"] in ("pass", "fail")
            failed += result["status"] == "fail"
        assert failed / 45 <= 0.05, (errors, failed)


def test_a_rise_within_the_tolerance_regresses_at_most_the_level() -> None:
    # A true 1-point FCH rise under the 2-point tolerance at 300 groups: the point rule
    # regressed 19% of the time; the one-sided 95% bound beyond the tolerance at most 5%.
    rng = np.random.default_rng(11)
    regressed = 0
    for _ in range(200):
        p = rng.beta(0.4, 1.6, size=300)
        was = rng.random((300, K)) < p[:, None]
        now = rng.random((300, K)) < np.minimum(p + 0.01, 1.0)[:, None]
        units = [(int(b), int(c), K) for b, c in zip((now & ~was).sum(1), (was & ~now).sum(1))]
        found = paired_interval(units, confidence=0.9)
        assert found is not None
        regressed += found[1] > 0.02
    assert regressed / 200 <= 0.05


def test_the_rule_in_the_words_users_read() -> None:
    # Issue 33: a change regresses when it is worse than no change (the flips against the
    # model's own noise, one-sided) and its estimate is past the tolerance. A 3-point rise over
    # 1,000 groups (450 flips worse, none better) regresses at a tolerance of 0.028, where the
    # old rule (the interval's bound beyond the tolerance) let it pass.
    old = run("nobel", 1000)
    new = run("nobel", 1000, wrong=lambda g, i: i < 5 or (g % 20 < 9 and i == 5))
    c = compare(old, new, tolerances={"fch": 0.028}).scopes["nobel"]["fch"]
    assert c.change > 0.028 and c.interval[0] < 0.028 and c.significant_worse and c.regressed
    assert c.p_value < 1e-100 and c.method == "sign test" and c.noise == "answers"
    # Significant, but within a tolerance the estimate does not pass: no regression.
    assert not compare(old, new, tolerances={"fch": 0.031}).scopes["nobel"]["fch"].regressed
    # Past the tolerance, but a handful of flips the model's own noise explains: no regression.
    few_old = run("nobel", 10)
    few_new = run("nobel", 10, wrong=lambda g, i: i < 5 or (g == 0 and i in (5, 6)) or (g == 7 and i == 5))
    few = compare(few_old, few_new, tolerances={"fch": 0.01}).scopes["nobel"]["fch"]
    assert few.change > 0.01 and few.p_value == pytest.approx(1 / 8) and not few.regressed


def test_nothing_judged_is_not_a_pass() -> None:
    # Every compared metric without a tolerance: K = 0, the gate says "not judged" (skipped).
    old = run("nobel", 10)
    off = {m: None for m in ("max_fch_rise", "max_pmh_rise", "max_rc_drop")}
    thresholds = parse_thresholds({"regression": {"confidence": 0.95}})
    result = judge({"rows": old}, [dict(r) for r in old], thresholds)
    assert result["status"] == "pass" and result["judged"] > 0
    untested = judge({"rows": old}, [dict(r) for r in old], _no_tolerances(thresholds))
    assert untested["judged"] == 0 and untested["status"] == "skipped" and untested["reason"] == NOTHING_JUDGED
    assert off  # the keys a file would leave out


def _no_tolerances(thresholds: Any) -> Any:
    class NoTolerance:
        """The thresholds with no tolerance anywhere."""

        def __getattr__(self, name: str) -> Any:
            return getattr(thresholds, name)

        def tolerance(self, scope: str, metric: str) -> None:
            return None

    return NoTolerance()


def test_one_group_changing_consistency_does_not_regress_overall() -> None:
    # Issue 25's reproduction: a domain with one RC group and another with 15; the one group
    # turns inconsistent. The old overall interval, read off the lone domain's interval clipped
    # to [-1, 1], was a point: "REGRESSED overall: RC 1.000 -> 0.938 (CI -0.067 to -0.057)".
    old = run("sports", 1, wrong=lambda g, i: False) + run("nobel", 15, wrong=lambda g, i: False)
    new = [dict(r) for r in old]
    new[0].update(claim="999", correct=False)
    result = compare(old, new, confidence=1 - 2 * 0.05 / 8)
    rc = result.scopes[OVERALL]["rc"]
    assert rc.change == pytest.approx(-0.5) and not rc.regressed and rc.interval[0] < -0.5 < rc.interval[1]
    assert rc.interval[1] > 0.0


def test_rc_keeps_a_group_with_one_errored_call() -> None:
    old = run("nobel", 6, wrong=lambda g, i: False)
    new = [dict(r) for r in old]
    new[0].update(error="TimeoutError", claim=None, correct=None, aligned=None)
    rc = compare(old, new).scopes["nobel"]["rc"]
    assert rc.pairs == 6  # the group's 14 answered paraphrases still say whether it is consistent
    two = run("nobel", 1, size=3, wrong=lambda g, i: False)
    two_new = [dict(r) for r in two]
    for r in two_new[:2]:
        r.update(error="TimeoutError", claim=None, correct=None, aligned=None)
    assert "rc" not in compare(two, two_new).scopes.get("nobel", {})  # one answered: no RC


def test_the_fch_message_states_the_model_s_own_flip_rate_when_the_run_measured_it() -> None:
    from defan_pytest.metrics.repeats import agreement

    old = run("nobel", 10) + run("math", 10, size=1)
    thresholds = parse_thresholds({"regression": {"confidence": 0.95}})
    right = {"response": "386", "correct": True, "aligned": True, "claim": "386"}
    wrong = {"response": "334", "correct": False, "aligned": True, "claim": "334"}
    noise = agreement([("nobel", [right, wrong]), ("nobel", [right, right]), ("math", [right, right])], 2,
                      temperature=0.0)
    result = judge({"rows": old}, [dict(r) for r in old], thresholds, noise=noise)
    said = "the model's own verdict flip rate at temperature 0 is {} (2 repeats of {} prompts): changes below ~that are noise"
    assert result["noise"] == said.format("33.3%", 3)
    scopes = result["scopes"]
    assert scopes["nobel"]["fch"]["message"].endswith("not worse; " + said.format("50.0%", 2))
    assert scopes["math"]["fch"]["message"].endswith("; " + said.format("0.0%", 1))
    assert scopes["overall"]["fch"]["message"].endswith("; " + said.format("33.3%", 3))
    assert "flip rate" not in scopes["nobel"]["pmh"]["message"]  # FCH's verdicts are the ones counted
    quiet = judge({"rows": old}, [dict(r) for r in old], thresholds)
    assert quiet["noise"] is None and "flip rate" not in quiet["scopes"]["nobel"]["fch"]["message"]


def test_the_baseline_block_says_when_the_baseline_failed_its_levels() -> None:
    """gates/baseline.py: the breaches a failed baseline recorded, in the comparison's baseline
    block and one sentence beside the regression verdict; nothing for a baseline that passed."""
    from defan_pytest.gates import regression
    from defan_pytest.gates.baseline import failed_levels, levels_note
    from defan_pytest.gates.thresholds import Thresholds

    records = [rec("nobel", g, i) for g in range(6) for i in range(3)]
    rows = [dict(r, id=f"nobel-q{r['group'][-4:]}-p{i % 3:02d}") for i, r in enumerate(records)]
    breaches = [{"scope": s, "metric": "fch", "status": "fail", "value": 0.7, "limit": 0.6,
                 "message": f"{s}: FCH 0.70 > max_fch 0.60"} for s in ("nobel", "sports", "math", "overall")]
    failed = {"gate_status": "fail", "gate": [*breaches, {"scope": "x", "metric": "rc", "status": "pass"}],
              "rows": rows, "meta": {"created": "2030-01-01T00:00:00Z"}}
    assert failed_levels(failed) == [b["message"] for b in breaches]
    note = levels_note({"failed_levels": failed_levels(failed)})
    assert note == ("the baseline itself failed its levels (nobel: FCH 0.70 > max_fch 0.60; sports: FCH 0.70 > "
                    "max_fch 0.60; math: FCH 0.70 > max_fch 0.60; and 1 more): the regression is judged against it "
                    "all the same, so a pass means no worse than that run")
    comparison = regression.judge(failed, rows, Thresholds.empty(), baseline_path="main.json")
    assert comparison["status"] == "pass" and comparison["baseline"]["failed_levels"] == failed_levels(failed)
    assert regression.format_comparison(comparison).splitlines()[1] == f"note: {note}"
    passed = dict(failed, gate_status="pass")
    assert failed_levels(passed) is None and levels_note({"failed_levels": None}) is None
    judged = regression.judge(passed, rows, Thresholds.empty(), baseline_path="main.json")
    assert "failed its levels" not in regression.format_comparison(judged)
