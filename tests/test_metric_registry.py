"""Tests of the metric registry (defan_pytest.metrics.summary.METRICS): the built-in declarations give
exactly what used to be hard-coded in four modules, and a metric registered from outside the
package is validated, counted, judged and shown like a built-in one."""
from __future__ import annotations

import copy
import pickle
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from defan_pytest.gates import thresholds as thresholds_mod
from defan_pytest.errors import DefanError
from defan_pytest.gates.level import FAIL, Verdict, check, format_gate_table
from defan_pytest.metrics.summary import (
    ASKED,
    METRICS,
    SCOPE_COUNTS,
    Figure,
    Group,
    Metric,
    cluster_interval,
    cluster_rate,
    register_metric,
    registered_metric,
    summarize,
    unregister_metric,
)
from defan_pytest.report.tables import format_table
from defan_pytest.gates.thresholds import (
    Limits,
    Thresholds,
    ThresholdsError,
    limit_keys,
    load_thresholds,
    parse_thresholds,
    rate_keys,
)

BUILT_IN_ALLOWED = "max_fch, max_pmh, min_rc, max_error_rate, min_samples"


def rec(domain: str, group: str, i: int, claim: str | None = "1", *, correct: bool = True,
        error: str | None = None) -> dict[str, Any]:
    """A per-response record as the plugin and the CLI produce it."""
    return {
        "id": f"{domain}-{group}-p{i:02d}", "domain": domain, "group": f"{domain}-{group}",
        "type": "numeric", "claim": None if error else claim, "aligned": error is None,
        "correct": None if error else correct, "error": error,
    }


# --------------------------------------------------------------------------------------------
# The toy metric: abstention = scored responses without a claim / scored responses
# --------------------------------------------------------------------------------------------


def abstention(groups: Sequence[Group]) -> Figure:
    """Share of scored responses whose claim is None, clustered by paraphrase group."""
    units = [(sum(1 for r in g.scored_records if r.get("claim") is None), g.scored) for g in groups]
    return cluster_rate(units, events_key="abstention_count")


ABSTENTION = Metric("abstention", "abstention", False, abstention, publishes=("abstention_count",))


@pytest.fixture
def with_abstention() -> Iterator[Metric]:
    with registered_metric(ABSTENTION) as metric:
        yield metric
    assert "abstention" not in METRICS


def abstention_records() -> list[dict[str, Any]]:
    """nobel q1: "1", no claim, "1"; q2: no claim, an error -> 2 of 4 scored abstain.
    math: four singletons, one without a claim -> 1 of 4."""
    return [
        rec("nobel", "q1", 0), rec("nobel", "q1", 1, None), rec("nobel", "q1", 2),
        rec("nobel", "q2", 0, None), rec("nobel", "q2", 1, error="timeout"),
        *(rec("math", f"q{i}", 0, None if i == 0 else "7") for i in range(4)),
    ]


# --------------------------------------------------------------------------------------------
# The built-ins derive what used to be written out by hand
# --------------------------------------------------------------------------------------------


def test_built_in_metrics_in_order() -> None:
    assert [m.name for m in METRICS.values()][:4] == ["fch", "pmh", "rc", "error_rate"]


def test_threshold_keys_equal_the_old_constants() -> None:
    assert rate_keys() == ("max_fch", "max_pmh", "min_rc", "max_error_rate")
    assert limit_keys() == ("max_fch", "max_pmh", "min_rc", "max_error_rate", "min_samples")
    # The old module constants still read, now from the registry.
    assert thresholds_mod.RATE_KEYS == rate_keys()
    assert thresholds_mod.LIMIT_KEYS == limit_keys()
    with pytest.raises(AttributeError):
        thresholds_mod.NO_SUCH_NAME  # type: ignore[attr-defined]  # noqa: B018


def test_gate_checks_equal_the_old_table() -> None:
    # gate._CHECKS was: (metric, key, label, upper, count_key, count_label)
    old = [
        ("fch", "max_fch", "FCH", True, "scored", "n"),
        ("pmh", "max_pmh", "PMH", True, "scored", "n"),
        ("rc", "min_rc", "RC", False, "rc_groups", "groups"),
        ("error_rate", "max_error_rate", "error rate", True, "n", "n"),
    ]
    derived = [(m.name, m.threshold_key, m.label, not m.higher_is_better, m.count_key, m.count_label)
               for m in METRICS.values()]
    assert derived == old
    # The error-rate exception of min_samples is a property of the declaration, nothing else.
    assert {m.name: m.denominator for m in METRICS.values()} == {
        "fch": "scored", "pmh": "scored", "rc": "scored", "error_rate": "asked"}
    # The n/a reasons of the old gate.
    assert {m.name: m.missing for m in METRICS.values()} == {
        "fch": "no scored responses", "pmh": "no scored responses", "rc": "no paraphrase groups",
        "error_rate": "no responses"}


def test_report_directions_and_intervals_equal_the_old_ones() -> None:
    # reports._MAX_FIGURES / _MIN_FIGURES
    assert tuple(m.name for m in METRICS.values() if not m.higher_is_better) == ("fch", "pmh", "error_rate")
    assert tuple(m.name for m in METRICS.values() if m.higher_is_better) == ("rc",)
    # Both tables printed every interval but the error rate's.
    assert [m.name for m in METRICS.values() if not m.show_interval] == ["error_rate"]


def test_figure_limits_equal_the_old_pairs() -> None:
    limits = Limits(max_fch=0.35, max_pmh=0.5, min_rc=0.3, max_error_rate=0.02, min_samples=30)
    assert limits.figure_limits() == {"fch": 0.35, "pmh": 0.5, "rc": 0.3, "error_rate": 0.02}
    assert list(limits.figure_limits()) == ["fch", "pmh", "rc", "error_rate"]


def test_summary_key_order_is_the_saved_report_order() -> None:
    out = summarize([rec("nobel", "q1", 0), rec("nobel", "q1", 1)])
    expected = ["n", "scored", "errors", "groups", "scored_groups", "rc_groups", "consistent_groups", "fch_count", "pmh_count",
                "fch", "fch_ci", "pmh", "pmh_ci", "rc", "rc_ci", "error_rate", "error_rate_ci"]
    assert list(out["domains"]["nobel"]) == expected
    assert list(out["overall"]["pooled"]) == expected
    assert list(out["overall"]["mean"]) == [
        "domains", "rc_domains", "n", "scored", "errors", "groups", "scored_groups",
        "fch", "fch_ci", "pmh", "pmh_ci", "rc", "rc_ci", "error_rate", "error_rate_ci"]


# Both tables of summarize([one correct nobel response]), as the code before the registry
# printed them.
OLD_GATE_TABLE = """\
scope           n  FCH  95% CI    max  PMH  95% CI    max  RC   95% CI min  err  max  status
--------------  -  -------------- ---  -------------- ---  ----------- ---  ---- ---  ------
nobel           1  0.00 0.00-1.00   -  0.00 0.00-1.00   -  -             -  0.00   -  -
--------------  -  -------------- ---  -------------- ---  ----------- ---  ---- ---  ------
overall (mean)  1  0.00 0.00-1.00   -  0.00 0.00-1.00   -  -             -  0.00   -  -
n = scored responses; max/min = limit (- = not set)
"""
OLD_PLAIN_TABLE = """\
domain                     n  errors  FCH [95% CI]          PMH [95% CI]          RC [95% CI]  error rate
-------------------------  -  ------  --------------------  --------------------  -----------  ----------
nobel                      1       0  0.000 [0.000, 1.000]  0.000 [0.000, 1.000]  -                 0.000
-------------------------  -  ------  --------------------  --------------------  -----------  ----------
overall (mean of domains)  1       0  0.000 [0.000, 1.000]  0.000 [0.000, 1.000]  -                 0.000
overall (pooled)           1       0  0.000 [0.000, 1.000]  0.000 [0.000, 1.000]  -                 0.000
"""


def test_tables_equal_the_old_ones() -> None:
    s = summarize([rec("nobel", "q1", 0)])
    assert format_gate_table(s, Thresholds.empty(), []) == OLD_GATE_TABLE
    assert format_table(s) == OLD_PLAIN_TABLE


# --------------------------------------------------------------------------------------------
# Registration is checked
# --------------------------------------------------------------------------------------------


def _rate(groups: Sequence[Group]) -> Figure:
    return cluster_rate([(0, g.scored) for g in groups])


@pytest.mark.parametrize("name", ["", "Abstention", "1x", "with-dash", "with space", "samples"])
def test_bad_names_are_rejected(name: str) -> None:
    with pytest.raises(ValueError, match="metric"):
        Metric(name, "x", False, _rate)


@pytest.mark.parametrize("name", ["n", "scored", "errors", "groups", "rc_groups", "consistent_groups", "domains"])
def test_reserved_report_keys_are_rejected(name: str) -> None:
    with pytest.raises(ValueError, match=f"report key '{name}' is reserved"):
        Metric(name, "x", False, _rate)


def test_bad_declarations_are_rejected() -> None:
    with pytest.raises(ValueError, match="label"):
        Metric("x", "", False, _rate)
    with pytest.raises(ValueError, match="denominator"):
        Metric("x", "x", False, _rate, denominator="all")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="count_key 'answers'"):
        Metric("x", "x", False, _rate, count_key="answers")
    with pytest.raises(ValueError, match="compute"):
        Metric("x", "x", False, None)  # type: ignore[arg-type]
    # A published count may be the count a message shows.
    assert Metric("x", "x", False, _rate, publishes=("x_count",), count_key="x_count").count_key == "x_count"


def test_duplicates_and_key_clashes_are_rejected() -> None:
    with pytest.raises(ValueError, match="metric 'fch' is already registered"):
        register_metric(Metric("fch", "FCH again", False, _rate))
    with pytest.raises(ValueError, match="report key 'fch_count' is already used by metric 'fch'"):
        register_metric(Metric("fch_count", "x", False, _rate))
    with pytest.raises(ValueError, match="report key 'pmh_count' is already used by metric 'pmh'"):
        register_metric(Metric("mine", "x", False, _rate, publishes=("pmh_count",)))
    with pytest.raises(TypeError):
        register_metric("abstention")  # type: ignore[arg-type]
    assert list(METRICS) == ["fch", "pmh", "rc", "error_rate"]


def test_unregistering() -> None:
    with pytest.raises(ValueError, match="built in"):
        unregister_metric("fch")
    with pytest.raises(ValueError, match="no metric 'abstention' is registered"):
        unregister_metric("abstention")
    register_metric(ABSTENTION)
    try:
        assert list(METRICS)[-1] == "abstention"
    finally:
        assert unregister_metric("abstention") is ABSTENTION
    assert "abstention" not in METRICS


def test_registry_view_is_read_only() -> None:
    with pytest.raises(TypeError):
        METRICS["abstention"] = ABSTENTION  # type: ignore[index]


def test_a_bad_figure_names_its_metric() -> None:
    def too_big(groups: Sequence[Group]) -> Figure:
        return Figure(2.0, (0.0, 1.0))

    def undeclared_count(groups: Sequence[Group]) -> Figure:
        return Figure(0.5, (0.0, 1.0), {"surprise": 1})

    with registered_metric(Metric("too_big", "x", False, too_big)):
        with pytest.raises(ValueError, match=r"metric 'too_big': value must be a number in \[0, 1\]"):
            summarize([rec("nobel", "q1", 0)])
    with registered_metric(Metric("undeclared", "x", False, undeclared_count)):
        with pytest.raises(ValueError, match="metric 'undeclared': published counts"):
            summarize([rec("nobel", "q1", 0)])


# --------------------------------------------------------------------------------------------
# A metric registered from outside the package
# --------------------------------------------------------------------------------------------


def test_threshold_key_rejected_before_and_after_registration() -> None:
    data = {"defaults": {"max_abstention": 0.2}}
    with pytest.raises(ThresholdsError) as before:
        parse_thresholds(data)
    assert before.value.problems == (
        f"thresholds.toml: defaults.max_abstention: unknown key; allowed: {BUILT_IN_ALLOWED}",)
    with registered_metric(ABSTENTION):
        assert parse_thresholds(data).for_domain("nobel").max_abstention == 0.2
    with pytest.raises(ThresholdsError, match="defaults.max_abstention: unknown key"):
        parse_thresholds(data)


def test_thresholds_file_accepts_the_new_key(tmp_path: Path, with_abstention: Metric) -> None:
    assert with_abstention.threshold_key == "max_abstention"
    path = tmp_path / "thresholds.toml"
    path.write_text("[defaults]\nmax_fch = 0.6\nmax_abstention = 0.25\n[domains.nobel]\nmax_abstention = 0.1\n",
                    encoding="utf-8")
    t = load_thresholds(path)
    assert t.for_domain("nobel") == Limits(max_fch=0.6, max_abstention=0.1)
    assert t.for_domain("math").max_abstention == 0.25
    assert t.for_overall().figure_limits() == {"fch": 0.6, "abstention": 0.25}
    # Validated like every rate, and listed among the allowed keys.
    with pytest.raises(ThresholdsError) as info:
        parse_thresholds({"defaults": {"max_abstention": 1.5, "max_abstain": 0.1}})
    assert info.value.problems == (
        "thresholds.toml: defaults.max_abstention: 1.5 is outside [0, 1]",
        "thresholds.toml: defaults.max_abstain: unknown key; allowed: max_fch, max_pmh, min_rc, "
        "max_error_rate, max_abstention, min_samples",
    )


def test_limits_with_the_new_key_survive_copies(with_abstention: Metric) -> None:
    limits = Limits(max_abstention=0.2, min_samples=3)
    assert pickle.loads(pickle.dumps(limits)) == limits
    assert copy.deepcopy(limits) == limits
    assert hash(limits) == hash(Limits(min_samples=3, max_abstention=0.2))
    assert repr(limits) == "Limits(max_abstention=0.2, min_samples=3)"
    with pytest.raises(TypeError, match="unknown key 'max_abstain'"):
        Limits(max_abstain=0.2)


def test_summarize_publishes_the_new_metric(with_abstention: Metric) -> None:
    out = summarize(abstention_records())
    nobel = out["domains"]["nobel"]
    # Counts first (the new count after the built-in ones), then every figure with its interval.
    assert list(nobel) == [
        "n", "scored", "errors", "groups", "scored_groups", "rc_groups", "consistent_groups", "fch_count", "pmh_count",
        "abstention_count", "fch", "fch_ci", "pmh", "pmh_ci", "rc", "rc_ci", "error_rate", "error_rate_ci",
        "abstention", "abstention_ci"]
    # nobel: units (1, 3) and (1, 1): 2 of 4 scored responses have no claim.
    assert (nobel["abstention_count"], nobel["abstention"]) == (2, 0.5)
    lo, hi = cluster_interval([(1, 3), (1, 1)])  # type: ignore[misc]
    assert nobel["abstention_ci"] == [round(lo, 4), round(hi, 4)]
    assert out["domains"]["math"]["abstention"] == 0.25
    mean = out["overall"]["mean"]
    assert mean["abstention"] == pytest.approx((0.5 + 0.25) / 2)
    assert mean["abstention_ci"][0] <= mean["abstention"] <= mean["abstention_ci"][1]
    assert out["overall"]["pooled"]["abstention"] == 3 / 8
    # The built-in figures are untouched by the extra metric.
    plain = summarize(abstention_records())
    with_abstention_keys = {"abstention", "abstention_ci", "abstention_count"}
    unregister_metric("abstention")
    try:
        without = summarize(abstention_records())
    finally:
        register_metric(ABSTENTION)
    assert {k: v for k, v in plain["domains"]["nobel"].items() if k not in with_abstention_keys} == \
        without["domains"]["nobel"]
    assert "abstention" not in without["overall"]["mean"]


def test_gate_judges_the_new_metric(with_abstention: Metric) -> None:
    s = summarize(abstention_records())
    lo, hi = s["domains"]["nobel"]["abstention_ci"]
    t = parse_thresholds({"defaults": {"max_abstention": 0.3}})
    verdicts = check(s, t)
    assert [(v.scope, v.metric, v.status) for v in verdicts] == [
        ("nobel", "abstention", "fail"), ("math", "abstention", "pass"), ("overall", "abstention", "fail")]
    assert verdicts[0] == Verdict(
        "nobel", "abstention", "fail", 0.5, 0.3,
        f"nobel: abstention 0.50 > max_abstention 0.30 (95% CI {lo:.2f}-{hi:.2f}, n=4)")
    assert verdicts[1].message.startswith("math: abstention 0.25 <= max_abstention 0.30 (95% CI ")
    assert [v.scope for v in verdicts if v.status == FAIL] == ["nobel", "overall"]
    # min_samples applies to it like to FCH (its denominator is the scored responses).
    short = check(s, parse_thresholds({"domains": {"nobel": {"max_abstention": 0.3, "min_samples": 5}}}))
    assert short[1] == Verdict("nobel", "abstention", "insufficient", 0.5, 0.3,
                               "nobel: abstention not judged: 2 scored groups < min_samples 5")
    # No scored response: n/a, with the declared reason.
    only_errors = summarize([rec("nobel", "q1", 0, error="boom")])
    na = check(only_errors, parse_thresholds({"domains": {"nobel": {"max_abstention": 0.3}}}))
    assert na[0].status == "n/a"
    assert na[0].message == "nobel: abstention n/a (no scored responses): max_abstention 0.30 not judged"


def test_both_tables_show_the_new_metric(with_abstention: Metric) -> None:
    s = summarize(abstention_records())
    t = parse_thresholds({"defaults": {"max_abstention": 0.3}})
    gate_lines = format_gate_table(s, t, check(s, t)).splitlines()
    assert "abstention 95% CI" in gate_lines[0] and gate_lines[0].endswith("max  status")
    nobel = next(ln for ln in gate_lines if ln.startswith("nobel"))
    lo, hi = s["domains"]["nobel"]["abstention_ci"]
    # The figure column is as wide as its title; the limit follows, right-aligned.
    assert re.search(rf" 0\.50 {lo:.2f}-{hi:.2f}! +0\.30  FAIL$", nobel), nobel
    assert gate_lines[-1].endswith("! = outside its threshold")

    plain = format_table(s, {"nobel": t.for_domain("nobel").figure_limits()})
    header = plain.splitlines()[0]
    assert header.rstrip().endswith("error rate  abstention [95% CI]")
    row = next(ln for ln in plain.splitlines() if ln.startswith("nobel"))
    assert row.endswith(f"0.500 [{lo:.3f}, {hi:.3f}]!")
    assert plain.splitlines()[-1] == "! outside its threshold"


def test_higher_is_better_and_asked_based_metrics() -> None:
    # "answered": scored responses with a claim, out of the responses asked. Higher is better,
    # so its key is min_answered; it is asked-based, so like the error rate it is judged on the
    # responses asked even when few were scored.
    def answered(groups: Sequence[Group]) -> Figure:
        return cluster_rate([(sum(1 for r in g.scored_records if r.get("claim") is not None), g.size)
                             for g in groups])

    metric = Metric("answered", "answered", True, answered, count_key="n", denominator=ASKED,
                    missing="no responses", show_interval=False)
    with registered_metric(metric):
        assert metric.threshold_key == "min_answered"
        # min_samples counts groups: ten questions asked, one answered.
        records = [rec("nobel", "q0", 0)] + [rec("nobel", f"q{i}", 0, error="outage") for i in range(1, 10)]
        s = summarize(records)
        t = parse_thresholds({"defaults": {"min_answered": 0.5, "max_fch": 0.5, "min_samples": 5}})
        verdicts = {v.metric: v for v in check(s, t) if v.scope == "nobel"}
        assert verdicts["fch"].status == "insufficient"  # 1 scored group
        assert verdicts["answered"].status == "fail"  # 10 asked, 1 answered
        assert verdicts["answered"].message.startswith("nobel: answered 0.10 < min_answered 0.50 (95% CI ")
        assert verdicts["answered"].message.endswith(", n=10)")
        exact = check(s, parse_thresholds({"defaults": {"min_answered": 0.1}}))
        assert exact[0].status == "pass" and " >= min_answered 0.10 " in exact[0].message
        table = format_gate_table(s, t, check(s, t))
        assert table.splitlines()[0].split()[-3:] == ["answered", "min", "status"]


def test_defan_error_catches_a_bad_new_key() -> None:
    with pytest.raises(DefanError):
        parse_thresholds({"defaults": {"max_abstention": 0.2}})
