"""Tests of the metric registry (defan_pytest.metrics.registry): the built-in declarations give
exactly what used to be hard-coded in four modules, and a metric registered from outside the
package is validated, counted, judged by both gates and shown like a built-in one."""
from __future__ import annotations

import copy
import json
import pickle
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from defan_pytest.errors import DefanError
from defan_pytest.gates.level import FAIL, Verdict, check
from defan_pytest.gates.paired import compare
from defan_pytest.gates.table import format_gate_table
from defan_pytest.gates.thresholds import Limits, Thresholds, ThresholdsError, load_thresholds, parse_thresholds
from defan_pytest.gates.thresholds.keys import limit_keys, rate_keys, tolerance_keys
from defan_pytest.metrics.groups import Figure, Group, PairedGroup, per_response
from defan_pytest.metrics.registry import ASKED, METRICS, REGISTRY, Metric, register_metric
from defan_pytest.metrics.summary import cluster_interval, cluster_rate, summarize
from defan_pytest.registry import RegistryError
from defan_pytest.report.tables import format_table

BUILT_IN_ALLOWED = "max_fch, max_pmh, min_rc, max_error_rate, max_cost, max_latency_p95, min_samples"


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


@contextmanager
def registered(metric: Metric) -> Iterator[Metric]:
    """``metric`` registered for a ``with`` block; the registry is left as it was found."""
    before = REGISTRY.snapshot()
    register_metric(metric)
    try:
        yield metric
    finally:
        REGISTRY.restore(before)


@pytest.fixture
def with_abstention() -> Iterator[Metric]:
    with registered(ABSTENTION) as metric:
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
    # The old four, then the amounts of issue 33 (the run's cost, its calls' p95 latency).
    assert rate_keys() == ("max_fch", "max_pmh", "min_rc", "max_error_rate", "max_cost", "max_latency_p95")
    assert limit_keys() == ("max_fch", "max_pmh", "min_rc", "max_error_rate", "max_cost", "max_latency_p95",
                            "min_samples")
    assert tolerance_keys() == {"max_fch_rise": "fch", "max_pmh_rise": "pmh", "max_rc_drop": "rc",
                                "max_error_rate_rise": "error_rate", "max_cost_rise": "cost",
                                "max_latency_p95_rise": "latency_p95"}


def test_gate_checks_equal_the_old_table() -> None:
    # gate._CHECKS was: (metric, key, label, upper, count_key, count_label)
    old = [
        ("fch", "max_fch", "FCH", True, "scored", "n"),
        ("pmh", "max_pmh", "PMH", True, "scored", "n"),
        ("rc", "min_rc", "RC", False, "rc_groups", "groups"),
        ("error_rate", "max_error_rate", "error rate", True, "n", "n"),
    ]
    rates = [m for m in METRICS.values() if not m.unit]
    derived = [(m.name, m.threshold_key, m.label, not m.higher_is_better, m.count_key, m.count_label) for m in rates]
    assert derived == old
    # The error-rate exception of min_samples is a property of the declaration, nothing else.
    assert {m.name: m.denominator for m in rates} == {
        "fch": "scored", "pmh": "scored", "rc": "scored", "error_rate": "asked"}
    # The n/a reasons of the old gate.
    assert {m.name: m.missing for m in rates} == {
        "fch": "no scored responses", "pmh": "no scored responses", "rc": "no paraphrase groups",
        "error_rate": "no responses"}


def test_report_directions_and_intervals_equal_the_old_ones() -> None:
    # reports._MAX_FIGURES / _MIN_FIGURES
    rates = [m for m in METRICS.values() if not m.unit]
    assert tuple(m.name for m in rates if not m.higher_is_better) == ("fch", "pmh", "error_rate")
    assert tuple(m.name for m in rates if m.higher_is_better) == ("rc",)
    # Both tables printed every interval but the error rate's (an amount has none).
    assert [m.name for m in rates if not m.show_interval] == ["error_rate"]


def test_summary_key_order_is_the_saved_report_order() -> None:
    out = summarize([rec("nobel", "q1", 0), rec("nobel", "q1", 1)])
    expected = ["n", "scored", "errors", "groups", "scored_groups", "rc_groups", "consistent_groups", "fch_count", "pmh_count",
                "fch", "fch_ci", "pmh", "pmh_ci", "rc", "rc_ci", "error_rate", "error_rate_ci", "cost", "cost_ci",
                "latency_p95", "latency_p95_ci"]
    assert list(out["domains"]["nobel"]) == expected
    assert list(out["overall"]["pooled"]) == expected
    assert list(out["overall"]["mean"]) == [
        "domains", "rc_domains", "n", "scored", "errors", "groups", "scored_groups",
        "fch", "fch_ci", "pmh", "pmh_ci", "rc", "rc_ci", "error_rate", "error_rate_ci", "cost", "cost_ci",
        "latency_p95", "latency_p95_ci"]


# Both tables of summarize([one correct nobel response]), as the code before the registry
# printed them.
OLD_GATE_TABLE = """\
scope           n  FCH  95% CI    max  PMH  95% CI    max  RC   95% CI min  err   max  status
--------------  -  -------------- ---  -------------- ---  ----------- ---  ---- ----  ------
nobel           1  0.00 0.00-1.00   -  0.00 0.00-1.00   -  -             -  0.00 0.05  -
--------------  -  -------------- ---  -------------- ---  ----------- ---  ---- ----  ------
overall (mean)  1  0.00 0.00-1.00   -  0.00 0.00-1.00   -  -             -  0.00 0.05  -
n = scored responses; max/min = limit (- = not set)
"""  # the error rate's max: the built-in limit, which applies without a file
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
    assert list(METRICS) == ["fch", "pmh", "rc", "error_rate", "cost", "latency_p95"]


def test_built_ins_stay_and_a_test_leaves_the_registry_as_it_found_it() -> None:
    with pytest.raises(RegistryError, match="built in"):
        REGISTRY.unregister("fch")
    before = REGISTRY.snapshot()
    register_metric(ABSTENTION)
    try:
        assert list(METRICS)[-1] == "abstention" and METRICS["abstention"] is ABSTENTION
    finally:
        REGISTRY.restore(before)
    assert "abstention" not in METRICS
    with pytest.raises(KeyError):
        METRICS["abstention"]  # noqa: B018


def test_registry_view_is_read_only() -> None:
    with pytest.raises(TypeError):
        METRICS["abstention"] = ABSTENTION  # type: ignore[index]


def test_a_bad_figure_names_its_metric() -> None:
    def too_big(groups: Sequence[Group]) -> Figure:
        return Figure(2.0, (0.0, 1.0))

    def undeclared_count(groups: Sequence[Group]) -> Figure:
        return Figure(0.5, (0.0, 1.0), {"surprise": 1})

    with registered(Metric("too_big", "x", False, too_big)):
        with pytest.raises(ValueError, match=r"metric 'too_big': value must be a number in \[0, 1\]"):
            summarize([rec("nobel", "q1", 0)])
    with registered(Metric("undeclared", "x", False, undeclared_count)):
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
    with registered(ABSTENTION):
        assert parse_thresholds(data).for_domain("nobel").max_abstention == 0.2
    with pytest.raises(ThresholdsError, match="defaults.max_abstention: unknown key"):
        parse_thresholds(data)


def test_thresholds_file_accepts_the_new_key(tmp_path: Path, with_abstention: Metric) -> None:
    assert with_abstention.threshold_key == "max_abstention"
    path = tmp_path / "thresholds.toml"
    path.write_text("[defaults]\nmax_fch = 0.6\nmax_abstention = 0.25\n[domains.nobel]\nmax_abstention = 0.1\n",
                    encoding="utf-8")
    t = load_thresholds(path)
    # (and the built-in limit of the call-error rate, which the file does not set)
    assert t.for_domain("nobel") == Limits(max_fch=0.6, max_abstention=0.1, max_error_rate=0.05)
    assert t.for_domain("math").max_abstention == 0.25
    assert t.for_overall() == Limits(max_fch=0.6, max_abstention=0.25, max_error_rate=0.05)
    # Validated like every rate, and listed among the allowed keys.
    with pytest.raises(ThresholdsError) as info:
        parse_thresholds({"defaults": {"max_abstention": 1.5, "max_abstain": 0.1}})
    assert info.value.problems == (
        "thresholds.toml: defaults.max_abstention: 1.5 is outside [0, 1]",
        "thresholds.toml: defaults.max_abstain: unknown key; allowed: max_fch, max_pmh, min_rc, "
        "max_error_rate, max_cost, max_latency_p95, max_abstention, min_samples",
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
        "abstention_count", "fch", "fch_ci", "pmh", "pmh_ci", "rc", "rc_ci", "error_rate", "error_rate_ci", "cost", "cost_ci", "latency_p95", "latency_p95_ci",
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
    REGISTRY.unregister("abstention")
    try:
        without = summarize(abstention_records())
    finally:
        register_metric(ABSTENTION)
    assert {k: v for k, v in plain["domains"]["nobel"].items() if k not in with_abstention_keys} == \
        without["domains"]["nobel"]
    assert "abstention" not in without["overall"]["mean"]


def without_error_rate(verdicts: Sequence[Verdict]) -> list[Verdict]:
    """The verdicts but the call-error rate's (its built-in limit applies to every scope)."""
    return [v for v in verdicts if v.metric != "error_rate"]


def test_gate_judges_the_new_metric(with_abstention: Metric) -> None:
    s = summarize(abstention_records())
    lo, hi = s["domains"]["nobel"]["abstention_ci"]
    t = parse_thresholds({"defaults": {"max_abstention": 0.3}})
    verdicts = without_error_rate(check(s, t))
    assert [(v.scope, v.metric, v.status) for v in verdicts] == [
        ("nobel", "abstention", "fail"), ("math", "abstention", "pass"), ("overall", "abstention", "fail")]
    assert verdicts[0] == Verdict(
        "nobel", "abstention", "fail", 0.5, 0.3,
        f"nobel: abstention 0.50 > max_abstention 0.30 (95% CI {lo:.2f}-{hi:.2f}, n=4)")
    assert verdicts[1].message.startswith("math: abstention 0.25 <= max_abstention 0.30 (95% CI ")
    assert [v.scope for v in verdicts if v.status == FAIL] == ["nobel", "overall"]
    # min_samples applies to it like to FCH (its denominator is the scored responses).
    short = without_error_rate(check(s, parse_thresholds({"domains": {"nobel": {"max_abstention": 0.3, "min_samples": 5}}})))
    assert short[1] == Verdict("nobel", "abstention", "insufficient", 0.5, 0.3,
                               "nobel: abstention not judged: 2 scored groups < min_samples 5")
    # No scored response: n/a, with the declared reason.
    only_errors = summarize([rec("nobel", "q1", 0, error="boom")])
    na = without_error_rate(check(only_errors, parse_thresholds({"domains": {"nobel": {"max_abstention": 0.3}}})))
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

    plain = format_table(s, {"nobel": {"abstention": 0.3}})
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
    with registered(metric):
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
        exact = without_error_rate(check(s, parse_thresholds({"defaults": {"min_answered": 0.1}})))
        assert exact[0].status == "pass" and " >= min_answered 0.10 " in exact[0].message
        table = format_gate_table(s, t, check(s, t))
        assert table.splitlines()[0].split()[-3:] == ["answered", "min", "status"]


def test_defan_error_catches_a_bad_new_key() -> None:
    with pytest.raises(DefanError):
        parse_thresholds({"defaults": {"max_abstention": 0.2}})


# --------------------------------------------------------------------------------------------
# The regression gate compares every metric that declares how
# --------------------------------------------------------------------------------------------


def abstains(record: Any) -> bool:
    return bool(record.get("claim") is None)


COMPARED_ABSTENTION = Metric("abstention", "abstention", False, abstention, publishes=("abstention_count",),
                             paired=per_response(abstains))


def test_paired_declarations_are_checked() -> None:
    with pytest.raises(ValueError, match="paired must be a function"):
        Metric("x", "x", False, _rate, paired=0.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"default_tolerance must be a number in \[0, 1\]"):
        Metric("x", "x", False, _rate, paired=per_response(abstains), default_tolerance=2.0)
    with pytest.raises(ValueError, match="default_tolerance needs paired"):
        Metric("x", "x", False, _rate, default_tolerance=0.1)
    assert Metric("x", "x", True, _rate).tolerance_key == "max_x_drop"


def test_per_response_pairs_scored_or_asked_prompts() -> None:
    old = (rec("nobel", "q1", 0), rec("nobel", "q1", 1, None), rec("nobel", "q1", 2))
    new = (rec("nobel", "q1", 0, None), rec("nobel", "q1", 1, error="timeout"), rec("nobel", "q1", 2))
    group = PairedGroup("nobel", "numeric", old, new)
    def values(pairs: Any) -> list[tuple[Any, Any]]:
        return [(v.old, v.new) for v in pairs]

    assert values(per_response(abstains)(group)) == [(0, 1), (0, 0)]  # the errored pair left out
    assert values(per_response(abstains, asked=True)(group)) == [(0, 1), (1, 1), (0, 0)]


def test_a_tolerance_key_exists_only_for_a_compared_metric() -> None:
    data = {"defaults": {"max_fch": 0.5}, "regression": {"max_abstention_rise": 0.1}}
    with registered(ABSTENTION):
        with pytest.raises(ThresholdsError) as info:
            parse_thresholds(data)
        assert info.value.problems == (
            "thresholds.toml: regression.max_abstention_rise: metric 'abstention' is not compared between runs "
            "(it declares no paired events), so it has no regression tolerance",)
    with registered(COMPARED_ABSTENTION):
        t = parse_thresholds(data)
        assert (t.tolerance("nobel", "abstention"), t.tolerance("overall", "abstention")) == (0.1, 0.1)
        assert parse_thresholds({"defaults": {"max_fch": 0.5}}).tolerance("nobel", "abstention") is None
    with pytest.raises(ThresholdsError, match="regression.max_abstention_rise: unknown key"):
        parse_thresholds(data)


def test_the_paired_test_compares_a_registered_metric() -> None:
    old = [rec("nobel", f"q{g}", i) for g in range(40) for i in range(3)]
    # Now every response of half the groups has no claim: abstention +0.5, and FCH with it.
    new = [rec("nobel", f"q{g}", i, None if g % 2 else "1", correct=not g % 2) for g in range(40) for i in range(3)]
    with registered(COMPARED_ABSTENTION):
        result = compare(old, new, tolerances={"abstention": 0.05})
        change = result.scopes["nobel"]["abstention"]
        assert (change.old, change.new, change.worse_flips, change.pairs, change.groups) == (0.0, 0.5, 60, 120, 40)
        assert change.significant_worse and change.regressed and change.tolerance == 0.05
        assert list(result.scopes["nobel"]) == ["fch", "pmh", "rc", "error_rate", "abstention"]
        assert not compare(old, new, tolerances={"abstention": 0.6}).scopes["nobel"]["abstention"].regressed
        # Without a tolerance it is reported and never judged (its default_tolerance is None).
        assert compare(old, new).scopes["nobel"]["abstention"].tolerance is None
    with registered(ABSTENTION):  # not comparable: not compared
        assert "abstention" not in compare(old, new).scopes["nobel"]


ABSTENTION_CONFTEST = '''
import defan_pytest
from defan_pytest.metrics.groups import per_response
from defan_pytest.metrics.registry import METRICS, Metric, register_metric
from defan_pytest.metrics.summary import cluster_rate


def abstains(record):
    return record.get("claim") is None


def abstention(groups):
    return cluster_rate([(sum(1 for r in g.scored_records if abstains(r)), g.scored) for g in groups])


if "abstention" not in METRICS:
    register_metric(Metric("abstention", "abstention", False, abstention, paired=per_response(abstains)))


@defan_pytest.model("answers", version="1")
def answers(prompt):
    return "42"


@defan_pytest.model("abstains", version="1")
def abstains_model(prompt):
    return "I do not know." if "(even)" in prompt else "42"
'''

# The other metrics may change as they like: only abstention's tolerance is under test.
OTHERS_UNJUDGED = "max_fch_rise = 1.0\nmax_pmh_rise = 1.0\nmax_rc_drop = 1.0\n"


def test_the_regression_gate_judges_a_metric_registered_in_a_conftest(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(ABSTENTION_CONFTEST)
    rows = [{"question": f"How many moons does planet {g} ({'even' if g % 2 == 0 else 'odd'}) have, form {i}?",
             "answer": "42", "type": "numeric", "domain": "toy", "group": f"p{g}"}
            for g in range(30) for i in range(3)]
    pytester.path.joinpath("toy.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    args = ["--defan-dataset=toy.jsonl", "--defan-cache=off", "--defan-spacy-model=none", "-p", "no:cacheprovider"]
    before = REGISTRY.snapshot()
    try:
        thresholds = pytester.path / "thresholds.toml"
        thresholds.write_text("[defaults]\nmax_fch = 1.0\n")
        assert pytester.runpytest("--defan-model=answers", "--defan-report=base.json", *args).ret == 0

        thresholds.write_text(f"[defaults]\nmax_fch = 1.0\n\n[regression]\n{OTHERS_UNJUDGED}max_abstention_rise = 0.05\n")
        beyond = pytester.runpytest("--defan-model=abstains", "--defan-baseline=base.json", "--defan-report=new.json",
                                    *args)
        assert beyond.ret == pytest.ExitCode.TESTS_FAILED
        beyond.stdout.fnmatch_lines(["*toy: abstention 0.000 -> 0.500 (+0.500; flips 45 worse / 0 better in 30 groups, "
                                     "p<0.0001 against noise, needs < *; * CI +0.* to +0.*): regressed: worse than the "
                                     "model's own noise and past the tolerance 0.05"])
        report = json.loads((pytester.path / "new.json").read_text())
        change = report["regression"]["scopes"]["toy"]["abstention"]
        assert (change["tolerance"], change["regressed"]) == (0.05, True)
        assert [m for m, c in report["regression"]["scopes"]["toy"].items() if c["regressed"]] == ["abstention"]
        assert report["thresholds"]["regression"]["tolerances"]["toy"]["abstention"] == 0.05

        thresholds.write_text(f"[defaults]\nmax_fch = 1.0\n\n[regression]\n{OTHERS_UNJUDGED}max_abstention_rise = 0.6\n")
        within = pytester.runpytest("--defan-model=abstains", "--defan-baseline=base.json", "--defan-report=new.json",
                                    *args)
        assert within.ret == pytest.ExitCode.OK
        change = json.loads((pytester.path / "new.json").read_text())["regression"]["scopes"]["toy"]["abstention"]
        assert (change["tolerance"], change["significant_worse"], change["regressed"]) == (0.6, True, False)
    finally:
        REGISTRY.restore(before)  # registered by the sessions' conftest.py in this process
