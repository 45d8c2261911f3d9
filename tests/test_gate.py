"""Tests of defan_pytest.gates.level and its table (defan_pytest.gates.table) on hand-built summaries
(the shape defan_pytest.metrics.summary.summarize returns)."""
from __future__ import annotations

import math
import re
from dataclasses import FrozenInstanceError, replace
from typing import Any

import pytest

from defan_pytest.report.builder import gate_status
from defan_pytest.dataset import DOMAINS
from defan_pytest.gates.level import FAIL, Verdict, check
from defan_pytest.gates.table import format_gate_table
from defan_pytest.metrics.summary import summarize
from defan_pytest.gates.thresholds import Thresholds, parse_thresholds


def figs(
    *,
    fch: float | None = 0.30,
    pmh: float | None = 0.20,
    rc: float | None = 0.50,
    error_rate: float | None = 0.0,
    scored: int = 9795,
    n: int | None = None,
    rc_groups: int = 653,
    fch_ci: list[float] | None = None,
    pmh_ci: list[float] | None = None,
    rc_ci: list[float] | None = None,
    error_rate_ci: list[float] | None = None,
) -> dict[str, Any]:
    """One domain's figures; intervals default to value +- 0.03 (clipped)."""

    def around(v: float | None, ci: list[float] | None) -> list[float] | None:
        if ci is not None or v is None:
            return ci
        return [max(0.0, round(v - 0.03, 4)), min(1.0, round(v + 0.03, 4))]

    n = scored if n is None else n
    return {
        # Hand-built figures: one response a group, so min_samples (groups) reads the counts.
        "n": n, "scored": scored, "errors": n - scored, "groups": n, "scored_groups": scored,
        "rc_groups": rc_groups,
        "fch": fch, "fch_ci": around(fch, fch_ci),
        "pmh": pmh, "pmh_ci": around(pmh, pmh_ci),
        "rc": rc, "rc_ci": around(rc, rc_ci),
        "error_rate": error_rate, "error_rate_ci": around(error_rate, error_rate_ci),
    }


def summary(domains: dict[str, dict[str, Any]], mean: dict[str, Any] | None = None,
            pooled: dict[str, Any] | None = None) -> dict[str, Any]:
    mean = dict(mean or figs(fch=0.30))
    mean.pop("rc_groups", None)  # summarize's mean has no group count of its own
    return {"domains": domains, "overall": {"mean": mean, "pooled": pooled or figs(fch=0.30)}}


def th(data: dict[str, Any], model: str | None = None) -> Thresholds:
    return parse_thresholds(data, "thresholds.toml", model=model)


def only(verdicts: list[Verdict], scope: str, metric: str) -> Verdict:
    found = [v for v in verdicts if v.scope == scope and v.metric == metric]
    assert len(found) == 1, verdicts
    return found[0]


# --------------------------------------------------------------------------------------------
# Messages and exact comparisons
# --------------------------------------------------------------------------------------------


def test_fch_fail_message() -> None:
    s = summary({"nobel": figs(fch=0.41, fch_ci=[0.38, 0.44])})
    v = only(check(s, th({"domains": {"nobel": {"max_fch": 0.35}}})), "nobel", "fch")
    assert v == Verdict("nobel", "fch", "fail", 0.41, 0.35,
                        "nobel: FCH 0.41 > max_fch 0.35 (95% CI 0.38-0.44, n=9795)")


def test_fch_pass_message() -> None:
    s = summary({"nobel": figs(fch=0.30, fch_ci=[0.27, 0.33])})
    v = only(check(s, th({"domains": {"nobel": {"max_fch": 0.35}}})), "nobel", "fch")
    assert v.status == "pass"
    assert v.message == "nobel: FCH 0.30 <= max_fch 0.35 (95% CI 0.27-0.33, n=9795)"


def test_rc_fail_message_counts_groups() -> None:
    s = summary({"nobel": figs(rc=0.25, rc_ci=[0.20, 0.31])})
    v = only(check(s, th({"defaults": {"min_rc": 0.30}})), "nobel", "rc")
    assert v.status == "fail"
    assert v.message == "nobel: RC 0.25 < min_rc 0.30 (95% CI 0.20-0.31, groups=653)"


def test_error_rate_message_counts_responses_asked() -> None:
    s = summary({"nobel": figs(error_rate=0.05, error_rate_ci=[0.04, 0.06], scored=950, n=1000)})
    v = only(check(s, th({"defaults": {"max_error_rate": 0.02}})), "nobel", "error_rate")
    assert v.status == "fail"
    assert v.message == "nobel: error rate 0.05 > max_error_rate 0.02 (95% CI 0.04-0.06, n=1000)"


def test_pmh_message() -> None:
    s = summary({"sports": figs(pmh=0.2, pmh_ci=[0.15, 0.25], scored=100)})
    v = only(check(s, th({"defaults": {"max_pmh": 0.5}})), "sports", "pmh")
    assert v.message == "sports: PMH 0.20 <= max_pmh 0.50 (95% CI 0.15-0.25, n=100)"


@pytest.mark.parametrize("metric, key", [("fch", "max_fch"), ("pmh", "max_pmh"), ("error_rate", "max_error_rate")])
def test_maximum_equal_passes_and_just_above_fails(metric: str, key: str) -> None:
    limit = 0.35
    # 35/100 is the same double as the literal 0.35: "equal" is a real case, not a float accident.
    equal = summary({"nobel": figs(**{metric: 35 / 100})})
    above = summary({"nobel": figs(**{metric: math.nextafter(limit, 1.0)})})
    t = th({"defaults": {key: limit}})
    assert only(check(equal, t), "nobel", metric).status == "pass"
    v = only(check(above, t), "nobel", metric)
    assert v.status == "fail"
    # Rounding both to 0.35 would print "0.35 > 0.35"; the message shows the difference.
    assert "0.35 > " not in v.message and f" > {key} 0.35 " in v.message


def test_minimum_equal_passes_and_just_below_fails() -> None:
    t = th({"defaults": {"min_rc": 0.3}})
    equal = only(check(summary({"nobel": figs(rc=3 / 10)}), t), "nobel", "rc")
    below = only(check(summary({"nobel": figs(rc=math.nextafter(0.3, 0.0))}), t), "nobel", "rc")
    assert equal.status == "pass" and equal.message.startswith("nobel: RC 0.30 >= min_rc 0.30 ")
    assert below.status == "fail" and " < min_rc 0.30 " in below.message


def test_close_values_get_more_digits() -> None:
    v = only(check(summary({"nobel": figs(fch=0.3504)}), th({"defaults": {"max_fch": 0.35}})), "nobel", "fch")
    assert v.message.startswith("nobel: FCH 0.3504 > max_fch 0.35 (")


def test_limit_with_more_decimals_is_shown_as_written() -> None:
    v = only(check(summary({"nobel": figs(fch=0.36)}), th({"defaults": {"max_fch": 0.355}})), "nobel", "fch")
    assert v.message.startswith("nobel: FCH 0.36 > max_fch 0.355 (")


def test_value_equal_to_a_three_decimal_limit_prints_equal() -> None:
    v = only(check(summary({"nobel": figs(fch=0.355)}), th({"defaults": {"max_fch": 0.355}})), "nobel", "fch")
    assert v.status == "pass" and v.message.startswith("nobel: FCH 0.355 <= max_fch 0.355 (")


def test_missing_interval_is_left_out_of_the_message() -> None:
    d = figs(fch=0.3)
    d["fch_ci"] = None
    v = only(check(summary({"nobel": d}), th({"defaults": {"max_fch": 0.35}})), "nobel", "fch")
    assert v.message == "nobel: FCH 0.30 <= max_fch 0.35 (n=9795)"


# --------------------------------------------------------------------------------------------
# What gets checked
# --------------------------------------------------------------------------------------------


def test_only_set_thresholds_are_checked_in_a_fixed_order() -> None:
    s = summary({"sports": figs(), "nobel": figs()})
    verdicts = check(s, th({"defaults": {"min_rc": 0.1, "max_fch": 0.9, "min_samples": 1}}))
    assert [(v.scope, v.metric) for v in verdicts] == [
        ("sports", "samples"), ("sports", "fch"), ("sports", "rc"), ("sports", "error_rate"),
        ("nobel", "samples"), ("nobel", "fch"), ("nobel", "rc"), ("nobel", "error_rate"),
        ("overall", "samples"), ("overall", "fch"), ("overall", "rc"), ("overall", "error_rate"),
    ]  # the error rate at its built-in limit, which the file does not set
    assert all(v.status == "pass" for v in verdicts)


def test_domains_in_the_file_but_not_in_the_run_are_not_judged() -> None:
    verdicts = check(summary({"sports": figs()}), th({"domains": {"nobel": {"max_fch": 0.0}}}))
    assert [(v.scope, v.metric) for v in verdicts] == [("sports", "error_rate"), ("overall", "error_rate")]


def test_failed_helper() -> None:
    s = summary({"nobel": figs(fch=0.5), "sports": figs(fch=0.1)})
    verdicts = check(s, th({"defaults": {"max_fch": 0.35}}))
    assert [(v.scope, v.metric) for v in verdicts if v.status == FAIL] == [("nobel", "fch")]


def test_verdict_is_frozen() -> None:
    v = Verdict("nobel", "fch", "pass", 0.1, 0.2, "m")
    with pytest.raises(FrozenInstanceError):
        v.status = "fail"  # type: ignore[misc]


# --------------------------------------------------------------------------------------------
# min_samples and n/a
# --------------------------------------------------------------------------------------------


def test_insufficient_samples_are_not_judged() -> None:
    s = summary({"math": figs(fch=0.99, pmh=0.99, rc=None, scored=12, rc_groups=0)})
    t = th({"defaults": {"max_fch": 0.35, "max_pmh": 0.35, "min_rc": 0.3, "min_samples": 30}})
    verdicts = [v for v in check(s, t) if v.scope == "math"]
    samples = only(verdicts, "math", "samples")
    assert samples == Verdict("math", "samples", "insufficient", 12, 30,
                              "math: 12 scored groups < min_samples 30: not judged")
    assert only(verdicts, "math", "fch").status == "insufficient"
    assert only(verdicts, "math", "fch").message == "math: FCH not judged: 12 scored groups < min_samples 30"
    assert only(verdicts, "math", "pmh").status == "insufficient"
    # A figure that would have failed does not fail: it was not judged.
    assert [x for x in verdicts if x.status == FAIL] == []


def test_enough_samples_pass_at_the_limit() -> None:
    s = summary({"nobel": figs(scored=30)})
    v = only(check(s, th({"defaults": {"min_samples": 30}})), "nobel", "samples")
    assert v.status == "pass" and v.message == "nobel: 30 scored groups >= min_samples 30"


def test_one_scored_response_is_singular() -> None:
    v = only(check(summary({"nobel": figs(scored=1)}), th({"defaults": {"min_samples": 2}})), "nobel", "samples")
    assert v.message == "nobel: 1 scored group < min_samples 2: not judged"


def test_error_rate_is_judged_on_responses_asked_even_when_few_were_scored() -> None:
    # A provider outage: 100 asked, 95 errored. FCH cannot be judged on 5 responses, but the
    # outage itself must fail the gate rather than hide behind "insufficient".
    s = summary({"nobel": figs(scored=5, n=100, error_rate=0.95)})
    t = th({"defaults": {"max_fch": 0.5, "max_error_rate": 0.02, "min_samples": 30}})
    verdicts = check(s, t)
    assert only(verdicts, "nobel", "fch").status == "insufficient"
    assert only(verdicts, "nobel", "error_rate").status == "fail"
    # ... and with too few responses asked, the error rate is not judged either.
    few = check(summary({"nobel": figs(scored=5, n=10, error_rate=0.5)}), t)
    assert only(few, "nobel", "error_rate").status == "insufficient"
    assert only(few, "nobel", "error_rate").message == (
        "nobel: error rate not judged: 10 groups < min_samples 30"
    )


def test_rc_is_not_applicable_for_math() -> None:
    s = summary({"math": figs(rc=None, rc_ci=None, rc_groups=0)})
    v = only(check(s, th({"defaults": {"min_rc": 0.3}})), "math", "rc")
    assert v == Verdict("math", "rc", "n/a", None, 0.3,
                        "math: RC n/a (no paraphrase groups): min_rc 0.30 not judged")
    assert v.status != FAIL


def test_rc_not_applicable_from_real_math_records() -> None:
    # The real summary of math records: singleton groups, so no RC at all.
    records = [
        {"id": f"math-q{i:04d}-p00", "domain": "math", "group": f"math-q{i:04d}", "type": "numeric",
         "claim": "7", "aligned": True, "correct": i % 2 == 0, "error": None}
        for i in range(40)
    ]
    s = summarize(records)
    t = th({"defaults": {"max_fch": 0.5, "min_rc": 0.3, "min_samples": 30}})
    verdicts = check(s, t)
    assert only(verdicts, "math", "fch").status == "pass"  # 20 of 40 wrong: 0.50 <= 0.50
    assert only(verdicts, "math", "rc").status == "n/a"
    assert only(verdicts, "overall", "rc").status == "n/a"


def test_no_scored_responses_is_not_applicable_without_min_samples() -> None:
    s = summary({"nobel": figs(fch=None, pmh=None, scored=0, n=10, error_rate=1.0)})
    verdicts = check(s, th({"defaults": {"max_fch": 0.5, "max_error_rate": 0.1}}))
    assert only(verdicts, "nobel", "fch").status == "n/a"
    assert only(verdicts, "nobel", "fch").message == "nobel: FCH n/a (no scored responses): max_fch 0.50 not judged"
    assert only(verdicts, "nobel", "error_rate").status == "fail"


# --------------------------------------------------------------------------------------------
# Models and the overall figure
# --------------------------------------------------------------------------------------------


def test_per_model_overrides() -> None:
    s = summary({"nobel": figs(fch=0.30)})
    data = {"domains": {"nobel": {"max_fch": 0.35}}, "models": {"my-rag": {"domains": {"nobel": {"max_fch": 0.20}}}}}
    assert only(check(s, th(data)), "nobel", "fch").status == "pass"
    strict = only(check(s, th(data, model="my-rag")), "nobel", "fch")
    assert strict.status == "fail" and strict.limit == 0.20
    assert strict.message.startswith("nobel: FCH 0.30 > max_fch 0.20 ")
    # Another model judged with the same file gets the top-level limits.
    assert only(check(s, replace(th(data), model="other")), "nobel", "fch").status == "pass"


def test_overall_uses_the_mean_by_default_and_pooled_on_request() -> None:
    s = summary({"nobel": figs()}, mean=figs(fch=0.50, scored=2000), pooled=figs(fch=0.70, scored=2000))
    mean = only(check(s, th({"overall": {"max_fch": 0.6}})), "overall", "fch")
    assert mean.status == "pass" and mean.value == 0.50
    assert mean.message.startswith("overall: FCH 0.50 <= max_fch 0.60 ")
    pooled = only(check(s, th({"overall": {"max_fch": 0.6, "figure": "pooled"}})), "overall", "fch")
    assert pooled.status == "fail" and pooled.value == 0.70
    # A model can choose the figure for its own runs.
    model = th({"overall": {"max_fch": 0.6, "figure": "pooled"}, "models": {"m": {"overall": {"figure": "mean"}}}},
               model="m")
    assert only(check(s, model), "overall", "fch").status == "pass"


def test_defaults_apply_to_overall_but_domain_tables_do_not() -> None:
    s = summary({"nobel": figs(fch=0.3)}, mean=figs(fch=0.5))
    verdicts = check(s, th({"defaults": {"max_fch": 0.6}, "domains": {"nobel": {"max_fch": 0.4}}}))
    assert only(verdicts, "nobel", "fch").limit == 0.4
    assert only(verdicts, "overall", "fch").limit == 0.6


def test_overall_mean_rc_counts_all_domain_groups() -> None:
    s = summary({"sports": figs(rc_groups=100), "nobel": figs(rc_groups=653), "math": figs(rc=None, rc_groups=0)},
                mean=figs(rc=0.5, rc_ci=[0.45, 0.55]))
    v = only(check(s, th({"overall": {"min_rc": 0.3}})), "overall", "rc")
    assert v.message == "overall: RC 0.50 >= min_rc 0.30 (95% CI 0.45-0.55, groups=753)"


def test_overall_samples_use_total_scored() -> None:
    s = summary({"nobel": figs(scored=10)}, mean=figs(scored=10))
    v = only(check(s, th({"overall": {"min_samples": 30}})), "overall", "samples")
    assert v.status == "insufficient" and v.message == "overall: 10 scored groups < min_samples 30: not judged"


# --------------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------------


def test_gate_table_rows_and_status() -> None:
    s = summary(
        {
            "sports": figs(fch=0.30),
            "nobel": figs(fch=0.41, fch_ci=[0.38, 0.44]),
            "conference_venue": figs(scored=12),
            "math": figs(rc=None, rc_groups=0),
        },
        mean=figs(fch=0.40),
    )
    t = th({"defaults": {"max_fch": 0.6, "max_pmh": 0.5, "min_rc": 0.3, "max_error_rate": 0.02, "min_samples": 30},
            "domains": {"nobel": {"max_fch": 0.35}}})
    verdicts = check(s, t)
    table = format_gate_table(s, t, verdicts)
    lines = table.rstrip("\n").split("\n")
    assert lines[0].split()[0] == "scope" and lines[0].split()[-1] == "status"
    body = {ln.split()[0]: ln for ln in lines[1:] if ln and not ln.startswith("-") and not ln.startswith("n =")}
    assert body["sports"].endswith("PASS")
    assert body["nobel"].endswith("FAIL")
    assert "0.41 0.38-0.44!" in body["nobel"] and " 0.35 " in body["nobel"]
    assert body["conference_venue"].endswith("INSUFFICIENT")
    assert body["math"].endswith("PASS")  # RC n/a does not fail math
    assert any(ln.startswith("overall (mean)") and ln.endswith("PASS") for ln in lines)
    assert "! = outside its threshold" in lines[-1]
    # Every figure sits next to its limit; the widest realistic row stays around 110 columns.
    assert max(len(ln) for ln in lines) <= 115


def test_gate_table_without_thresholds_and_with_pooled() -> None:
    s = summary({"nobel": figs()})
    table = format_gate_table(s, Thresholds.empty(), [])
    assert "overall (mean)" in table and "!" not in table
    row = next(ln for ln in table.splitlines() if ln.startswith("nobel"))
    assert row.endswith("-")
    t = th({"overall": {"figure": "pooled", "max_fch": 0.5}})
    assert "overall (pooled)" in format_gate_table(s, t, check(s, t))


# --------------------------------------------------------------------------------------------
# Deciding on the interval, and the 80-column table
# --------------------------------------------------------------------------------------------


def test_interval_decision_fails_only_when_the_whole_interval_is_beyond() -> None:
    t = th({"defaults": {"max_fch": 0.35, "min_rc": 0.5}})
    crossing = summary({"nobel": figs(fch=0.41, fch_ci=[0.30, 0.52], rc=0.45, rc_ci=[0.40, 0.55])})
    point = check(crossing, t)
    assert only(point, "nobel", "fch").status == "fail" and only(point, "nobel", "rc").status == "fail"
    interval = check(crossing, t, decide="interval")
    fch = only(interval, "nobel", "fch")
    assert fch.status == "undecided"  # not a failure, and no pass either (issue 33)
    assert fch.message == ("nobel: FCH 0.41 > max_fch 0.35 (95% CI 0.30-0.52, n=9795); "
                           "not decided: the interval reaches the limit")
    assert only(interval, "nobel", "rc").status == "undecided"
    assert gate_status(interval) == "pass"  # the gate passes it
    beyond = summary({"nobel": figs(fch=0.41, fch_ci=[0.36, 0.46], rc=0.45, rc_ci=[0.40, 0.49])})
    assert only(check(beyond, t, decide="interval"), "nobel", "fch").status == "fail"
    assert only(check(beyond, t, decide="interval"), "nobel", "rc").status == "fail"


@pytest.mark.parametrize("width", [None, 80], ids=["wide", "compact"])
def test_an_interval_decision_is_said_in_the_table_and_each_figure_it_passed_is_marked(width: int | None) -> None:
    t = th({"defaults": {"max_fch": 0.35, "min_rc": 0.5}})
    s = summary({"nobel": figs(fch=0.41, fch_ci=[0.30, 0.52], rc=0.55),      # FCH past, its interval crossing
                 "sports": figs(fch=0.41, fch_ci=[0.36, 0.46], rc=0.45, rc_ci=[0.40, 0.55]),  # FCH fails; RC crosses
                 "math": figs(fch=0.20, rc=0.55)},                          # within both
                mean=figs(fch=0.34, rc=0.52))
    table = format_gate_table(s, t, check(s, t, decide="interval"), width=width, decide="interval")
    rows = {line.split()[0]: re.sub(r" \d\.\d\d-\d\.\d\d", "", line) for line in table.splitlines()
            if line.split() and line.split()[0] in ("nobel", "sports", "math")}  # the figures without intervals
    assert "0.41~" in rows["nobel"] and rows["nobel"].endswith("PASS")
    assert "0.41!" in rows["sports"] and "0.45~" in rows["sports"]
    assert "~" not in rows["math"] and "!" not in rows["math"]
    assert table.splitlines()[-1] == (
        "decided by interval (--defan-decide=interval): a figure fails only when its whole 95% interval lies beyond "
        "its limit; ~ = beyond its limit, passed because its interval reaches it")
    # Deciding on the point: neither the legend nor a ~.
    point = format_gate_table(s, t, check(s, t), width=width)
    assert "~" not in point and "interval" not in point
    # Nothing past a limit: the legend still says how the gate decided, without the mark's words.
    within = summary({"math": figs(fch=0.20, rc=0.55)}, mean=figs(fch=0.20, rc=0.55))
    quiet = format_gate_table(within, t, check(within, t, decide="interval"), width=width, decide="interval")
    assert quiet.splitlines()[-1].startswith("decided by interval") and "~" not in quiet


def test_min_samples_counts_groups_from_real_records() -> None:
    # 4 groups of 15 responses: 60 responses, but 4 samples.
    records = [
        {"id": f"nobel-q{g:04d}-p{p:02d}", "domain": "nobel", "group": f"nobel-q{g:04d}", "type": "name",
         "claim": "X", "aligned": True, "correct": True, "error": None}
        for g in range(4) for p in range(15)
    ]
    v = only(check(summarize(records), th({"defaults": {"min_samples": 5}})), "nobel", "samples")
    assert v.status == "insufficient" and v.message == "nobel: 4 scored groups < min_samples 5: not judged"


def test_compact_table_fits_80_columns() -> None:
    s = summary({d: figs(fch=0.41, scored=12 if d == "conference_venue" else 9795) for d in DOMAINS},
                mean=figs(fch=0.40))
    t = th({"defaults": {"max_fch": 0.35, "max_pmh": 0.5, "min_rc": 0.3, "max_error_rate": 0.02, "min_samples": 30}})
    verdicts = check(s, t)
    wide = format_gate_table(s, t, verdicts)
    assert max(map(len, wide.splitlines())) > 80
    table = format_gate_table(s, t, verdicts, width=80)
    lines = table.splitlines()
    assert max(map(len, lines)) <= 80, table
    assert lines[0].split() == ["scope", "grp", "FCH", "max", "PMH", "max", "RC", "min", "err", "max", "status"]
    conf = next(ln for ln in lines if ln.startswith("conference_venue"))
    assert conf.split()[-1] == "FEW" and "0.41" in conf
    nobel = next(ln for ln in lines if ln.startswith("nobel"))
    assert "0.41! 0.35" in nobel and nobel.endswith("FAIL")


# --------------------------------------------------------------------------------------------
# No silent pass
# --------------------------------------------------------------------------------------------


def test_the_error_rate_is_judged_without_a_file_at_the_built_in_limit() -> None:
    s = summary({"nobel": figs(fch=0.2, error_rate=0.06)})
    verdicts = check(s, Thresholds.empty())
    assert [(v.scope, v.metric) for v in verdicts] == [("nobel", "error_rate"), ("overall", "error_rate")]
    assert only(verdicts, "nobel", "error_rate").status == "fail" and only(verdicts, "nobel", "error_rate").limit == 0.05
    # A file that sets the key wins, even a permissive one.
    assert only(check(s, th({"defaults": {"max_error_rate": 0.1}})), "nobel", "error_rate").status == "pass"


def test_every_call_failed_fails_whatever_the_limits_allow() -> None:
    s = summary({"nobel": figs(fch=None, pmh=None, rc=None, scored=0, n=10, error_rate=1.0),
                 "math": figs(fch=0.1)})
    for limits in ({"defaults": {"max_error_rate": 1.0}}, {"defaults": {"max_fch": 0.5, "max_error_rate": 1.0}}):
        verdicts = check(s, th(limits))
        failed = only(verdicts, "nobel", "error_rate")
        assert failed.status == "fail" and failed.message == (
            "nobel: every call failed (10 of 10): nothing was scored, so nothing can pass"
        )
        assert only(verdicts, "math", "error_rate").status == "pass"
    # Under --defan-decide=interval too (ten errors of ten: the interval reaches any limit).
    assert only(check(s, th({"defaults": {"max_error_rate": 0.5}}), decide="interval"), "nobel", "error_rate").status == "fail"


def test_a_failed_rc_says_when_groups_fail_for_want_of_a_claim() -> None:
    from defan_pytest.gates.level import explain_rc

    # Fifteen identical refusals: no claim anywhere, so the group is inconsistent by the contract.
    records = [{"id": f"nobel-q0001-p{i:02d}", "domain": "nobel", "group": "nobel-q0001", "claim": None,
                "aligned": False, "correct": False, "error": None} for i in range(15)]
    s = summarize(records)
    verdicts = explain_rc(check(s, th({"defaults": {"min_rc": 0.5}})), records)
    rc = only(verdicts, "nobel", "rc")
    assert rc.status == "fail" and rc.message.endswith(
        "; 1 of 1 groups have a response with no claim: a group with no claim is inconsistent by the contract "
        "(RC needs a claim from every response)")
    assert "no claim" in only(verdicts, "overall", "rc").message
