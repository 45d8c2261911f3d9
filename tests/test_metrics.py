"""Unit tests of defan_pytest.metrics, with figures computed by hand in the comments.

Claims are numeric strings ("386", "334") so that group consistency only depends on the most
basic numeric equivalence: "386" == "386", "386" != "334".
"""
from __future__ import annotations

import json
import math
import sys
from typing import Any

import pytest

from defan_pytest.metrics import DOMAIN_ORDER, cluster_interval, summarize, wilson_interval

DOMAIN_KEYS = {
    "n", "scored", "errors", "groups", "rc_groups", "consistent_groups", "fch_count", "pmh_count",
    "fch", "fch_ci", "pmh", "pmh_ci", "rc", "rc_ci", "error_rate", "error_rate_ci",
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


def test_cluster_interval_hand_example() -> None:
    # FCH units of sports_records(): (y_g, n_g) = (2,3), (0,3), (1,1); N = 7, p = 3/7, G = 3.
    # residuals y_g - p*n_g = 2-9/7 = 5/7, 0-9/7 = -9/7, 1-3/7 = 4/7; squares sum 122/49.
    # V = G/(G-1) * 122/49 / N^2 = 3/2 * 122/2401 = 183/2401 = 0.076218
    # n_eff = p(1-p)/V = (12/49) / (183/2401) = 588/183 = 3.21311   (< N = 7, so not capped)
    # Wilson, z = 1.96, z^2 = 3.8416: z^2/n = 1.195593, denom = 2.195593
    #   center = (0.428571 + 3.8416/(2*3.21311)) / 2.195593 = (0.428571 + 0.597803)/2.195593 = 0.467470
    #   half   = (1.96/2.195593) * sqrt(0.244898/3.21311 + 3.8416/(4*3.21311^2))
    #          = 0.892698 * sqrt(0.076218 + 0.093025) = 0.892698 * 0.411392 = 0.367249
    #   -> [0.100221, 0.834719] -> [0.1002, 0.8347]
    lo, hi = cluster_interval([(2, 3), (0, 3), (1, 1)])  # type: ignore[misc]
    assert (round(lo, 4), round(hi, 4)) == (0.1002, 0.8347)


def test_wilson_matches_textbook_formula() -> None:
    # p = 0 on n = 4: lower 0, upper z^2/(n+z^2) = 3.8416/7.8416 = 0.489900
    lo, hi = wilson_interval(0.0, 4)
    assert lo == 0.0
    assert hi == pytest.approx(3.8416 / 7.8416)
    # p = 0.8 on n = 1 (Table 6: one group of 15 with 12 wrong):
    # denom = 4.8416, center = (0.8 + 1.9208)/4.8416 = 0.561963,
    # half = 1.96/4.8416 * sqrt(0.16 + 0.9604) = 0.404825 * 1.058489 = 0.428503 -> [0.1335, 0.9905]
    lo, hi = wilson_interval(0.8, 1)
    assert (round(lo, 4), round(hi, 4)) == (0.1335, 0.9905)
    with pytest.raises(ValueError):
        wilson_interval(0.5, 0)


def test_zero_variance_falls_back_to_number_of_groups() -> None:
    # Every group has the same rate (1 of 2): V == 0 exactly, so n_eff = G = 3, not N = 6.
    assert cluster_interval([(1, 2), (1, 2), (1, 2)]) == wilson_interval(0.5, 3)
    # p == 0: n_eff = G = 4 -> upper 3.8416/7.8416
    assert cluster_interval([(0, 2)] * 4) == wilson_interval(0.0, 4)
    assert cluster_interval([(3, 3), (2, 2)]) == wilson_interval(1.0, 2)


def test_single_group_uses_one_effective_observation() -> None:
    assert cluster_interval([(12, 15)]) == wilson_interval(0.8, 1)


def test_effective_size_is_capped_to_n() -> None:
    # Groups more alike than chance (1 of 2 in five groups, plus a 0 and a 1 singleton):
    # N = 12, Y = 6, integer residuals y*N - Y*n = 0 x5, -6, 6 -> S = 72;
    # n_eff = Y(N-Y) N^2 (G-1) / (G S) = 6*6*144*6 / (7*72) = 61.7 > N -> capped to 12.
    units = [(1, 2)] * 5 + [(0, 1), (1, 1)]
    assert cluster_interval(units) == wilson_interval(0.5, 12)


def test_groups_without_responses_are_ignored_and_nothing_gives_none() -> None:
    assert cluster_interval([(2, 3), (0, 0), (0, 3), (1, 1)]) == cluster_interval([(2, 3), (0, 3), (1, 1)])
    assert cluster_interval([(0, 0)]) is None
    assert cluster_interval([]) is None


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
    assert d["fch_ci"] == [0.1002, 0.8347]  # see test_cluster_interval_hand_example
    # PMH units (1,3), (0,3), (1,1); p = 2/7; residuals 1/7, -6/7, 5/7, squares sum 62/49;
    # V = 3/2 * 62/49 / 49 = 93/2401; n_eff = (10/49)/(93/2401) = 490/93 = 5.268817
    # z^2/n = 0.729119, denom 1.729119; center = (0.285714 + 0.364556)/1.729119 = 0.376070
    # half = 1.133526 * sqrt(0.038734 + 0.034596) = 0.306953 -> [0.0691, 0.6830]
    assert d["pmh_ci"] == [0.0691, 0.683]
    # Error rate = 1/8 over all 3 groups: units (0,3), (0,3), (1,2); N = 8, Y = 1;
    # integer residuals y*N - Y*n = -3, -3, 6 -> S = 54; V = 3/2 * 54 / 8^4 = 0.0197754;
    # n_eff = (7/64) / V = 448/81 = 5.530864; z^2/n = 0.694575, denom 1.694575;
    # center = (0.125 + 0.347286)/1.694575 = 0.278706; half = 0.261641 -> [0.0171, 0.5403]
    assert d["error_rate"] == pytest.approx(1 / 8)
    assert d["error_rate_ci"] == [0.0171, 0.5403]


def test_rc_only_over_fully_scored_groups() -> None:
    # A: 386, 334, 334 -> inconsistent; B: 386 x3 -> consistent; C has an errored response, so it
    # is not an RC group at all, even though its one claim could never disagree with itself.
    d = summarize(sports_records())["domains"]["sports"]
    assert (d["rc_groups"], d["consistent_groups"]) == (2, 1)
    assert d["rc"] == pytest.approx(0.5)
    # Wilson(0.5, n=2): denom 2.9208, center 0.5, half = 0.671049 * sqrt(0.125 + 0.2401) = 0.405471
    assert d["rc_ci"] == [0.0945, 0.9055]


def test_rc_counts_a_group_without_claim_as_inconsistent() -> None:
    records = [rec("nobel", "q1", 0, claim="386"), rec("nobel", "q1", 1, claim=None, correct=False)]
    d = summarize(records)["domains"]["nobel"]
    assert (d["rc_groups"], d["consistent_groups"], d["rc"]) == (1, 0, 0.0)


def test_math_like_singleton_groups_have_no_rc() -> None:
    records = [rec("math", f"q{i}", 0, correct=i != 0) for i in range(4)]
    d = summarize(records)["domains"]["math"]
    assert (d["groups"], d["rc_groups"], d["consistent_groups"]) == (4, 0, 0)
    assert d["rc"] is None and d["rc_ci"] is None
    # FCH 1/4 over 4 singleton groups: S = 9+1+1+1 = 12, V = 4/3 * 12/4^4 = 0.0625,
    # n_eff = 0.1875/0.0625 = 3 (the G/(G-1) factor costs one observation) -> Wilson(0.25, 3)
    assert d["fch"] == 0.25
    assert d["fch_ci"] == [0.0368, 0.7439]


def test_rc_none_when_no_group_is_fully_scored() -> None:
    records = [rec("census", "q1", 0), rec("census", "q1", 1, error="rate limited")]
    d = summarize(records)["domains"]["census"]
    assert d["rc_groups"] == 0 and d["rc"] is None and d["rc_ci"] is None


def test_singletons_never_need_the_equivalence_module(monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes any import of it fail: summarize must not import it for math.
    monkeypatch.setitem(sys.modules, "defan_pytest.equivalence", None)
    out = summarize([rec("math", f"q{i}", 0) for i in range(3)])
    assert out["domains"]["math"]["rc"] is None


def test_domain_with_only_errors_has_no_fch_or_pmh() -> None:
    records = [rec("nobel", "q1", i, error="boom") for i in range(3)]
    d = summarize(records)["domains"]["nobel"]
    assert (d["n"], d["scored"], d["errors"]) == (3, 0, 3)
    for key in ("fch", "fch_ci", "pmh", "pmh_ci", "rc", "rc_ci"):
        assert d[key] is None, key
    assert d["error_rate"] == 1.0
    assert d["error_rate_ci"] == [round(x, 4) for x in wilson_interval(1.0, 1)]


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
    # sports: FCH 3/7, CI (0.100220, 0.834715); math: FCH 1/4, CI = Wilson(0.25, 3) = (0.036840, 0.743913).
    # mean = (3/7 + 1/4)/2 = 0.339286
    # Each side of a domain interval is read as 1.96 SE on that side:
    # below: sports 3/7 - 0.100220 = 0.328351, math 0.25 - 0.036840 = 0.213160
    #   half = sqrt(0.328351^2 + 0.213160^2) / 2 = 0.391473 / 2 = 0.195737 -> lo = 0.143549
    # above: sports 0.834715 - 3/7 = 0.406144, math 0.743913 - 0.25 = 0.493913
    #   half = sqrt(0.406144^2 + 0.493913^2) / 2 = 0.639455 / 2 = 0.319728 -> hi = 0.659014
    records = sports_records() + [rec("math", f"q{i}", 0, correct=i != 0) for i in range(4)]
    out = summarize(records)
    mean = out["overall"]["mean"]
    assert mean["fch"] == pytest.approx((3 / 7 + 1 / 4) / 2)
    assert mean["fch_ci"] == [0.1435, 0.659]
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
