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
        "better_flips", "higher_is_better", "tolerance", "worse", "significant", "significant_worse", "regressed"}
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


def test_level_interval_coverage() -> None:
    rng = np.random.default_rng(13)
    low = []
    for g, mu, rho in LEVEL_CELLS:
        a, b = mu * (1 - rho) / rho, (1 - mu) * (1 - rho) / rho
        y = rng.binomial(K, rng.beta(a, b, size=(REPS, g)))
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


def test_paired_interval_coverage() -> None:
    # Two runs on the same groups: group rates logit-normal (mean mu, ICC rho), shifted by the
    # true change in the new run and correlated between the runs; each answer kept from the old
    # run with probability "kept" (a model that changed a little keeps most answers), else
    # re-drawn. The true change of the mean rate comes from Gauss-Hermite quadrature.
    rng = np.random.default_rng(17)
    low = []
    for g, mu, rho, delta, r, kept in PAIRED_CELLS:
        a, s = _logit_normal(mu, rho)
        a2 = _location(mu + delta, s)
        true = float((_W * _expit(a2 + s * _X)).sum()) - float((_W * _expit(a + s * _X)).sum())
        z = rng.standard_normal((REPS, g))
        z2 = r * z + math.sqrt(1 - r * r) * rng.standard_normal((REPS, g))
        u = rng.random((REPS, g, K))
        v = np.where(rng.random((REPS, g, K)) < kept, u, rng.random((REPS, g, K)))
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
