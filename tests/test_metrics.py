"""Unit tests of defan_pytest.metrics.summary (and of the built-in metrics it counts), with
figures computed by hand in the comments.

Claims are numeric strings ("386", "334") so that group consistency only depends on the most
basic numeric equivalence: "386" == "386", "386" != "334".
"""
from __future__ import annotations

import json
import math
import sys
from typing import Any

import pytest

from defan_pytest.metrics.summary import stratified_rate_interval, DOMAIN_ORDER, cluster_interval, collect_groups, summarize
from defan_pytest.stats.intervals import clopper_pearson, cluster_effective_size, korn_graubard, mean_interval

DOMAIN_KEYS = {
    "n", "scored", "errors", "groups", "scored_groups", "rc_groups", "consistent_groups", "fch_count", "pmh_count",
    "fch", "fch_ci", "pmh", "pmh_ci", "rc", "rc_ci", "error_rate", "error_rate_ci", "cost", "cost_ci", "latency_p95",
    "latency_p95_ci",
}


def rec(
    domain: str,
    group: str,
    i: int,
    *,
    claim: str | None = "386",
    aligned: bool | None = True,
    correct: bool | None = True,
    error: str | None = None,
    type: str = "numeric",
) -> dict[str, Any]:
    """A per-response record as the plugin and the CLI produce it."""
    if error is not None:
        claim = aligned = correct = None
    return {
        "id": f"{domain}-{group}-p{i:02d}",
        "domain": domain,
        "group": f"{domain}-{group}",
        "type": type,
        "claim": claim,
        "aligned": aligned,
        "correct": correct,
        "error": error,
    }


def sports_records() -> list[dict[str, Any]]:
    """Three groups: A (3 responses), B (3), C (2, one errored).

    group  responses                                   not correct  not aligned  errors
    A      386 ok/aligned, 334 wrong/aligned,           2 of 3       1 of 3       0 of 3
           334 wrong/misaligned
    B      386 ok/aligned x3                            0 of 3       0 of 3       0 of 3
    C      334 wrong/misaligned, error                  1 of 1       1 of 1       1 of 2
    """
    return [
        rec("sports", "A", 0, claim="386"),
        rec("sports", "A", 1, claim="334", correct=False),
        rec("sports", "A", 2, claim="334", correct=False, aligned=False),
        rec("sports", "B", 0), rec("sports", "B", 1), rec("sports", "B", 2),
        rec("sports", "C", 0, claim="334", correct=False, aligned=False),
        rec("sports", "C", 1, error="timeout"),
    ]


# --- the interval machinery -------------------------------------------------------------------
#
# The quantiles below are Student t and normal quantiles (stats.t_quantile, checked against
# tables in test_stats.py); the Clopper-Pearson bounds are Beta quantiles, which cannot be done
# by hand: the values quoted were checked against scipy.stats.beta.ppf when the tests were
# written (scipy is not a dependency).


def test_cluster_interval_hand_example() -> None:
    # Six groups of 5: y = 0, 1, 1, 2, 3, 5; N = 30, Y = 12, p = 0.4, G = 6.
    # integer residuals y*N - Y*n = 30y - 60: -60, -30, -30, 0, 30, 90 -> S = 14400
    # design effect estimated: G*S / ((G-1)*N*Y*(N-Y)) = 86400 / 32400 = 2.666667
    # rarer outcome: events (12 <= 18), carried by k = 5 groups; worst case sum n^2 / N = 5
    # shrunk: (5 * 2.666667 + 1 * 5) / 6 = 3.055556 -> n_eff = 30/3.055556 = 9.818182
    # df = G - 1 = 5, and the Korn-Graubard (Clopper-Pearson) interval at n* = n_eff (z/t)^2
    units = [(0, 5), (1, 5), (1, 5), (2, 5), (3, 5), (5, 5)]
    assert cluster_effective_size(units) == (12, 30, 6, pytest.approx(108 / 11))
    lo, hi = cluster_interval(units)  # type: ignore[misc]
    assert (round(lo, 6), round(hi, 6)) == (0.064694, 0.831066)
    assert cluster_interval(units) == korn_graubard(12, 108 / 11, 30, 5.0)


def test_zero_variance_is_design_effect_one_before_shrinking() -> None:
    # Every group has the same rate (1 of 2): S == 0 exactly, design effect 1, shrunk with the
    # k = 3 groups carrying events toward the worst case 2: (3*1 + 2)/4 = 1.25 -> n_eff = 4.8
    # (the old fallback, the worst case itself, made one flip more look better); df = 2.
    assert cluster_effective_size([(1, 2)] * 3) == (3, 6, 3, pytest.approx(4.8))
    assert cluster_interval([(1, 2), (1, 2), (1, 2)]) == korn_graubard(3, 4.8, 6, 2.0)
    # p == 0: no rare response at all, read as the limit of one (design effect 1 on one
    # informative group, shrunk toward the worst case 2): (1 + 2)/2 = 1.5 -> n_eff = 16/3, df = 3.
    assert cluster_interval([(0, 2)] * 4) == korn_graubard(0, 16 / 3, 8, 3.0)
    # ... and no wider than one event in those groups (the worst case made it wider).
    assert cluster_interval([(0, 2)] * 4)[1] <= cluster_interval([(1, 2)] + [(0, 2)] * 3)[1]  # type: ignore[index]
    # p == 1: the worst case sum n^2 / N = 13/5, (1 + 13/5)/2 = 9/5 -> n_eff = 25/9
    assert cluster_interval([(3, 3), (2, 2)]) == pytest.approx(korn_graubard(5, 25 / 9, 5, 1.0), rel=1e-9)


def test_single_group_is_one_observation_on_one_degree_of_freedom() -> None:
    # One group says nothing about the spread between groups: n_eff = 1, and the t quantile on
    # the least df there is (12.706) makes the interval all but [0, 1].
    assert cluster_effective_size([(12, 15)]) == (12, 15, 1, 1.0)
    assert cluster_interval([(12, 15)]) == korn_graubard(12, 1.0, 15, 1.0)
    lo, hi = cluster_interval([(12, 15)])  # type: ignore[misc]
    assert lo < 1e-6 and hi > 1 - 1e-9


def test_effective_size_is_capped_to_n_before_shrinking() -> None:
    # Groups more alike than chance (1 of 2 in five groups, plus a 0 and a 1 singleton):
    # N = 12, Y = 6, integer residuals y*N - Y*n = 0 x5, -6, 6 -> S = 72; estimated design
    # effect 7*72 / (6*12*6*6) = 0.194 < 1 -> floored at 1 (n_eff <= N); k = 6 groups carry
    # an event, worst sum n^2 / N = 22/12: (6*1 + 22/12) / 7 -> n_eff = 12 * 7 / (6 + 11/6)
    units = [(1, 2)] * 5 + [(0, 1), (1, 1)]
    assert cluster_effective_size(units) == (6, 12, 7, pytest.approx(84 / (6 + 11 / 6)))


def test_few_events_do_not_pass_for_independent_ones() -> None:
    # One hallucination in 10 groups of 15. Its group's residual is 150 - 15 = 135, the nine
    # others' -15: S = 18225 + 9*225 = 20250, estimated design effect 10*20250/(9*150*149) =
    # 1.006711: one event looks independent, and today's method used n_eff = 149. It rests on
    # k = 1 rare response, so it is averaged with the worst case 15: (1.006711 + 15)/2 =
    # 8.003356 -> n_eff = 18.742138.
    one = [(1, 15)] + [(0, 15)] * 9
    assert cluster_effective_size(one) == (1, 150, 10, pytest.approx(18.742138, abs=1e-6))
    lo, hi = cluster_interval(one)  # type: ignore[misc]
    assert lo < 1e-6 and 0.2 < hi < 0.3
    # No event at all is the limit of that one event (design effect 1 on one informative
    # group, shrunk: the same n_eff), so the upper bound grows with the events: the worst case
    # used here before (n_eff = G = 10) gave 0 events a wider interval than 1 (0.39 > 0.27).
    none = cluster_interval([(0, 15)] * 10)
    assert none is not None and none[0] == 0.0 and 0.2 < none[1] < hi
    # With hundreds of groups carrying the rare outcome the shrinking changes little: 200 of
    # them here, (200 * 1 + 15) / 201 = 1.07 against the estimate 1 (floored).
    many = [(5, 15), (4, 15), (6, 15), (3, 15)] * 50
    events, total, g, n_eff = cluster_effective_size(many)  # type: ignore[misc]
    s = sum((y * total - events * n) ** 2 for y, n in many)
    estimated = g * s / ((g - 1) * total * events * (total - events))
    assert n_eff == pytest.approx(total / max(estimated, 1.0), rel=0.075)


def test_groups_without_responses_are_ignored_and_nothing_gives_none() -> None:
    assert cluster_interval([(2, 3), (0, 0), (0, 3), (1, 1)]) == cluster_interval([(2, 3), (0, 3), (1, 1)])
    assert cluster_interval([(0, 0)]) is None
    assert cluster_interval([]) is None


def test_confidence_widens_and_narrows_the_interval() -> None:
    units = [(0, 5), (1, 5), (1, 5), (2, 5), (3, 5), (5, 5)]
    lo95, hi95 = cluster_interval(units)  # type: ignore[misc]
    lo80, hi80 = cluster_interval(units, confidence=0.8)  # type: ignore[misc]
    lo99, hi99 = cluster_interval(units, 0.99)  # type: ignore[misc]
    assert lo99 < lo95 < lo80 < 0.4 < hi80 < hi95 < hi99


def test_more_groups_give_narrower_intervals() -> None:
    widths = []
    for g in (5, 10, 30, 100):
        lo, hi = cluster_interval([(3, 15), (6, 15), (4, 15), (5, 15), (7, 15)] * (g // 5))  # type: ignore[misc]
        widths.append(hi - lo)
    assert widths == sorted(widths, reverse=True)


# --- per domain -------------------------------------------------------------------------------


def test_domain_figures_by_hand() -> None:
    out = summarize(sports_records())
    d = out["domains"]["sports"]
    assert set(d) == DOMAIN_KEYS
    assert (d["n"], d["scored"], d["errors"], d["groups"]) == (8, 7, 1, 3)
    # The errored response is out of the FCH/PMH denominators: 3/7 and 2/7, not 3/8, 2/8.
    assert (d["fch_count"], d["pmh_count"]) == (3, 2)
    assert d["fch"] == pytest.approx(3 / 7)
    assert d["pmh"] == pytest.approx(2 / 7)
    # Three groups leave 2 degrees of freedom (t = 4.303): every interval here is all but
    # [0, 1], which is what three questions can tell about a domain.
    # FCH units (2,3), (0,3), (1,1); N = 7, Y = 3; integer residuals 5, -9, 4 -> S = 122;
    # estimated design effect 3*122/(2*7*3*4) = 2.178571; k = 2 groups carry an event, worst
    # sum n^2 / N = 19/7: (2*2.178571 + 19/7)/3 = 2.357143 -> n_eff = 2.969697
    assert cluster_effective_size([(2, 3), (0, 3), (1, 1)]) == (3, 7, 3, pytest.approx(2.969697, abs=1e-6))
    assert d["fch_ci"] == [0.0, 1.0]
    # PMH units (1,3), (0,3), (1,1); Y = 2; residuals 1, -6, 5 -> S = 62; estimated 3*62/(2*7*2*5)
    # = 1.328571; k = 2 groups: (2*1.328571 + 19/7)/3 = 1.790476 -> n_eff = 3.909574; df 2
    assert cluster_effective_size([(1, 3), (0, 3), (1, 1)]) == (2, 7, 3, pytest.approx(3.909574, abs=1e-6))
    assert d["pmh_ci"] == [round(x, 4) for x in korn_graubard(2, 3.909574468, 7, 2.0)] == [0.0, 0.9987]
    # Error rate = 1/8 over all 3 groups: units (0,3), (0,3), (1,2); N = 8, Y = 1;
    # integer residuals y*N - Y*n = -3, -3, 6 -> S = 54; estimated 3*54/(2*8*1*7) = 1.446429;
    # k = 1 group, worst sum n^2 / N = 22/8: (1.446429 + 2.75)/2 = 2.098214 -> n_eff = 3.812766
    assert cluster_effective_size([(0, 3), (0, 3), (1, 2)]) == (1, 8, 3, pytest.approx(3.812766, abs=1e-6))
    assert d["error_rate"] == pytest.approx(1 / 8)
    assert d["error_rate_ci"] == [0.0, 0.9956]


def test_rc_only_over_fully_scored_groups() -> None:
    # A: 386, 334, 334 -> inconsistent; B: 386 x3 -> consistent; C has an errored response, so it
    # is not an RC group at all, even though its one claim could never disagree with itself.
    d = summarize(sports_records())["domains"]["sports"]
    assert (d["rc_groups"], d["consistent_groups"]) == (2, 1)
    assert d["rc"] == pytest.approx(0.5)
    # Groups are independent, so 1 consistent of 2 is exactly binomial: Clopper-Pearson,
    # [Beta^-1(0.025; 1, 2), Beta^-1(0.975; 2, 1)] = [1 - sqrt(0.975), sqrt(0.975)]
    assert d["rc_ci"] == [round(1 - math.sqrt(0.975), 4), round(math.sqrt(0.975), 4)] == [0.0126, 0.9874]
    assert d["rc_ci"] == [round(x, 4) for x in clopper_pearson(1, 2)]


def test_rc_counts_a_group_without_claim_as_inconsistent() -> None:
    records = [rec("nobel", "q1", 0, claim="386"), rec("nobel", "q1", 1, claim=None, correct=False)]
    d = summarize(records)["domains"]["nobel"]
    assert (d["rc_groups"], d["consistent_groups"], d["rc"]) == (1, 0, 0.0)


def test_math_like_singleton_groups_have_no_rc() -> None:
    records = [rec("math", f"q{i}", 0, correct=i != 0) for i in range(4)]
    d = summarize(records)["domains"]["math"]
    assert (d["groups"], d["rc_groups"], d["consistent_groups"]) == (4, 0, 0)
    assert d["rc"] is None and d["rc_ci"] is None
    # FCH 1/4 over 4 singleton groups: S = 9+1+1+1 = 12, estimated design effect
    # 4*12/(3*4*1*3) = 4/3 (the G/(G-1) factor); k = 1, worst 4/4 = 1 (a singleton group cannot
    # cluster): (4/3 + 1)/2 = 7/6 -> n_eff = 24/7 = 3.428571; df 3 (t = 3.182446):
    # n* = 3.428571 * (1.959964/3.182446)^2 = 1.300431 -> Clopper-Pearson at x* = n*/4
    assert d["fch"] == 0.25
    assert cluster_effective_size([(1, 1), (0, 1), (0, 1), (0, 1)]) == (1, 4, 4, pytest.approx(24 / 7))
    assert d["fch_ci"] == [0.0, 0.9828]


def test_rc_none_when_no_group_is_fully_scored() -> None:
    records = [rec("census", "q1", 0), rec("census", "q1", 1, error="rate limited")]
    d = summarize(records)["domains"]["census"]
    assert d["rc_groups"] == 0 and d["rc"] is None and d["rc_ci"] is None


def test_singletons_never_need_the_equivalence_module(monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes any import of it fail: summarize must not import it for math.
    monkeypatch.setitem(sys.modules, "defan_pytest.scoring.equivalence", None)
    out = summarize([rec("math", f"q{i}", 0) for i in range(3)])
    assert out["domains"]["math"]["rc"] is None


def test_domain_with_only_errors_has_no_fch_or_pmh() -> None:
    records = [rec("nobel", "q1", i, error="boom") for i in range(3)]
    d = summarize(records)["domains"]["nobel"]
    assert (d["n"], d["scored"], d["errors"]) == (3, 0, 3)
    for key in ("fch", "fch_ci", "pmh", "pmh_ci", "rc", "rc_ci"):
        assert d[key] is None, key
    assert d["error_rate"] == 1.0
    # One group: one observation on one degree of freedom.
    assert d["error_rate_ci"] == [round(x, 4) for x in korn_graubard(3, 1.0, 3, 1.0)] == [0.0, 1.0]


def test_scored_response_with_unknown_flags_counts_against_the_model() -> None:
    d = summarize([rec("census", "q1", 0, claim=None, aligned=None, correct=None)])["domains"]["census"]
    assert (d["fch_count"], d["pmh_count"]) == (1, 1)


def test_empty_error_string_is_not_an_error() -> None:
    r = rec("census", "q1", 0)
    r["error"] = ""
    d = summarize([r])["domains"]["census"]
    assert (d["errors"], d["scored"]) == (0, 1)


def test_same_group_label_in_two_domains_is_two_groups() -> None:
    a = rec("census", "q1", 0)
    b = rec("math", "q1", 0)
    a["group"] = b["group"] = "q1"
    out = summarize([a, b])
    assert out["overall"]["pooled"]["groups"] == 2
    assert out["overall"]["pooled"]["rc_groups"] == 0


# --- ordering and overall ---------------------------------------------------------------------


def test_domains_in_registry_order_then_alphabetical() -> None:
    names = ["zeta", "math", "alpha", "census", "sports", "world_org"]
    out = summarize([rec(name, "q1", 0) for name in names])
    assert list(out["domains"]) == ["sports", "census", "world_org", "math", "alpha", "zeta"]
    assert DOMAIN_ORDER[0] == "sports" and DOMAIN_ORDER[-1] == "math"


def test_empty_input() -> None:
    out = summarize([])
    assert out["domains"] == {}
    mean, pooled = out["overall"]["mean"], out["overall"]["pooled"]
    for part in (mean, pooled):
        assert (part["n"], part["scored"], part["errors"], part["groups"]) == (0, 0, 0, 0)
        for rate in ("fch", "pmh", "rc", "error_rate"):
            assert part[rate] is None and part[f"{rate}_ci"] is None
    assert mean["domains"] == 0
    json.dumps(out, allow_nan=False)


def test_mean_interval_by_hand() -> None:
    # sports: FCH 3/7 over groups (2, 3), (0, 3), (1, 1); math: FCH 1/4 over four singletons.
    # The mean of domains' interval is the stratified cluster interval of every group's counts
    # (issue 33: the figure used to lose its units on the way, and the mean fell back to the
    # domains' clipped intervals read as standard errors, which covered 25-89% at 1-3 groups a
    # domain).
    records = sports_records() + [rec("math", f"q{i}", 0, correct=i != 0) for i in range(4)]
    out = summarize(records)
    mean = out["overall"]["mean"]
    assert mean["fch"] == pytest.approx((3 / 7 + 1 / 4) / 2)
    expected = stratified_rate_interval([[(2, 3), (0, 3), (1, 1)], [(1, 1), (0, 1), (0, 1), (0, 1)]])
    assert expected is not None
    assert mean["fch_ci"] == [round(x, 4) for x in expected]
    assert mean["fch_ci"] != [round(x, 4) for x in mean_interval(
        [(3 / 7, *cluster_interval([(2, 3), (0, 3), (1, 1)]), 2.0),  # type: ignore[misc]
         (1 / 4, *cluster_interval([(1, 1), (0, 1), (0, 1), (0, 1)]), 3.0)])[1:3]]  # type: ignore[misc]
    # RC: only sports has RC groups (D = 1), so the mean is sports' figure and its interval is
    # exactly sports' interval (each side is carried over on its own).
    assert mean["rc"] == pytest.approx(0.5)
    assert mean["rc_ci"] == out["domains"]["sports"]["rc_ci"]
    assert (mean["domains"], mean["rc_domains"]) == (2, 1)
    assert (mean["n"], mean["scored"], mean["errors"], mean["groups"]) == (12, 11, 1, 7)

    pooled = out["overall"]["pooled"]
    assert set(pooled) == DOMAIN_KEYS
    assert pooled["fch"] == pytest.approx(4 / 11)
    assert pooled["fch_ci"] == [round(x, 4) for x in cluster_interval(
        [(2, 3), (0, 3), (1, 1), (1, 1), (0, 1), (0, 1), (0, 1)])]  # type: ignore[union-attr]
    assert (pooled["rc_groups"], pooled["consistent_groups"]) == (2, 1)


def test_mean_and_pooled_differ_when_domains_differ_in_size() -> None:
    # sports: one group of 2, both wrong (FCH 1); math: 8 singletons, all right (FCH 0).
    # mean of domains = (1 + 0)/2 = 0.5; pooled = 2/10 = 0.2.
    records = [rec("sports", "q1", i, claim="334", correct=False) for i in range(2)]
    records += [rec("math", f"q{i}", 0) for i in range(8)]
    out = summarize(records)
    assert out["overall"]["mean"]["fch"] == pytest.approx(0.5)
    assert out["overall"]["pooled"]["fch"] == pytest.approx(0.2)
    lo, hi = out["overall"]["mean"]["fch_ci"]
    assert 0.0 <= lo <= 0.5 <= hi <= 1.0


def test_mean_interval_is_clipped() -> None:
    records = [rec("sports", "q1", 0, claim="334", correct=False), rec("math", "q1", 0, claim="1", correct=False)]
    mean = summarize(records)["overall"]["mean"]
    assert mean["fch"] == 1.0
    assert mean["fch_ci"][1] == 1.0
    assert 0.0 <= mean["fch_ci"][0] < 1.0


def test_intervals_are_rounded_lists_and_contain_the_estimate() -> None:
    out = summarize(sports_records() + [rec("math", f"q{i}", 0, correct=i % 3 == 0) for i in range(9)])
    parts = [*out["domains"].values(), out["overall"]["mean"], out["overall"]["pooled"]]
    for part in parts:
        for rate in ("fch", "pmh", "rc", "error_rate"):
            ci = part[f"{rate}_ci"]
            if part[rate] is None:
                assert ci is None
                continue
            assert isinstance(ci, list) and len(ci) == 2
            assert all(round(x, 4) == x for x in ci)
            assert 0.0 <= ci[0] <= part[rate] + 1e-4 and part[rate] - 1e-4 <= ci[1] <= 1.0
            assert not math.isnan(ci[0])


def test_summarize_is_deterministic_and_accepts_an_iterator() -> None:
    records = sports_records()
    assert summarize(iter(records)) == summarize(records) == summarize(list(records))


def test_record_without_domain_is_rejected() -> None:
    r = rec("census", "q1", 0)
    del r["domain"]
    with pytest.raises(ValueError, match="no domain"):
        summarize([r])


def test_mean_interval_of_one_domain_is_that_domains_interval() -> None:
    # An asymmetric case: 1 wrong out of 10 singletons (Wilson interval far from symmetric).
    records = [rec("math", f"q{i}", 0, correct=i != 0) for i in range(10)]
    out = summarize(records)
    assert out["overall"]["mean"]["fch_ci"] == out["domains"]["math"]["fch_ci"]


def test_collect_groups_keys_counts_and_consistency() -> None:
    def shared(record: dict[str, Any], group: Any) -> dict[str, Any]:
        return {**record, "group": group}

    records = [
        shared(rec("nobel", "q1", 0), "q1"), shared(rec("nobel", "q1", 1), "q1"),
        shared(rec("nobel", "q1", 2, claim="334", correct=False), "q1"),
        rec("nobel", "q2", 0), rec("nobel", "q2", 1, error="timeout"),
        shared(rec("census", "q1", 0), "q1"), shared(rec("census", "q1", 1), "q1"),
        shared(rec("math", "q1", 0), None), shared(rec("math", "q1", 1), None),
    ]
    groups = collect_groups(records)
    # The same group key in two domains is two groups; no group key: each record its own group.
    assert list(groups)[:3] == [("nobel", "q1"), ("nobel", "nobel-q2"), ("census", "q1")]
    assert len(groups) == 5
    q1 = groups[("nobel", "q1")]
    assert (q1.size, q1.errors, q1.not_correct, q1.not_aligned, q1.claims) == (3, 0, 1, 0, ["386", "386", "334"])
    # Consistency is decided for the groups that count for RC only.
    assert (q1.consistent, groups[("census", "q1")].consistent) == (False, True)
    q2 = groups[("nobel", "nobel-q2")]
    assert (q2.counts_for_rc, q2.consistent, q2.claims, q2.scored) == (False, None, ["386", None], 1)
