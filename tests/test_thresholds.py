"""Tests of defan_pytest.gates.thresholds: parsing, validation (every problem in one error), the
per-key precedence of limits and tolerances, and the lines that set them."""
from __future__ import annotations

import itertools
import math
from dataclasses import FrozenInstanceError, replace
from pathlib import Path
from typing import Any

import pytest

from defan_pytest.dataset import DOMAINS
from defan_pytest.errors import DefanError
from defan_pytest.gates.thresholds import (
    Limits,
    Thresholds,
    ThresholdsError,
    load_thresholds,
    model_table_typos,
    parse_thresholds,
)
from defan_pytest.gates.thresholds.keys import DEFAULT_CONFIDENCE, limit_keys

REPO_EXAMPLE = Path(__file__).resolve().parents[1] / "thresholds.toml"
VALID_IDS = ", ".join(DOMAINS)
ALLOWED = "max_fch, max_pmh, min_rc, max_error_rate, max_cost, max_latency_p95, min_samples"

SPEC_EXAMPLE = """\
[defaults]            # apply to every domain and to the overall figure unless overridden
max_fch = 0.60
max_pmh = 0.50
min_rc = 0.30
max_error_rate = 0.02
min_samples = 30

[domains.nobel]
max_fch = 0.35

[overall]
max_fch = 0.55

[models."my-rag"]
[models."my-rag".domains.nobel]
max_fch = 0.20
"""


def write(tmp_path: Path, text: str, name: str = "thresholds.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def problems_of(data: dict[str, Any], **kwargs: Any) -> tuple[str, ...]:
    with pytest.raises(ThresholdsError) as info:
        parse_thresholds(data, "thresholds.toml", **kwargs)
    return info.value.problems


def only_problem(data: dict[str, Any], **kwargs: Any) -> str:
    problems = problems_of(data, **kwargs)
    assert len(problems) == 1, problems
    return problems[0]


# --------------------------------------------------------------------------------------------
# Parsing valid files
# --------------------------------------------------------------------------------------------


def test_spec_example_parses(tmp_path: Path) -> None:
    t = load_thresholds(write(tmp_path, SPEC_EXAMPLE))
    assert t.source == str(tmp_path / "thresholds.toml")
    assert t.for_domain("sports") == Limits(max_fch=0.60, max_pmh=0.50, min_rc=0.30, max_error_rate=0.02, min_samples=30)
    assert t.for_domain("nobel") == Limits(max_fch=0.35, max_pmh=0.50, min_rc=0.30, max_error_rate=0.02, min_samples=30)
    assert t.for_overall() == Limits(max_fch=0.55, max_pmh=0.50, min_rc=0.30, max_error_rate=0.02, min_samples=30)
    assert t.overall_figure == "mean"
    assert t.model_names == ("my-rag",)
    assert replace(t, model="my-rag").for_domain("nobel").max_fch == 0.20


def test_repo_example_file_validates() -> None:
    # The example users copy must itself be a valid file.
    t = load_thresholds(REPO_EXAMPLE)
    assert not t.is_empty
    for domain in DOMAINS:
        limits = t.for_domain(domain)
        assert limits.max_fch is not None and limits.min_samples is not None
    assert t.overall_figure in ("mean", "pooled")


def test_rate_bounds_are_inclusive_and_integers_are_accepted() -> None:
    t = parse_thresholds({"defaults": {"max_fch": 0, "max_pmh": 1, "min_rc": 0.0, "max_error_rate": 1.0}})
    limits = t.for_domain("nobel")
    assert limits == Limits(max_fch=0.0, max_pmh=1.0, min_rc=0.0, max_error_rate=1.0)
    assert isinstance(limits.max_fch, float) and isinstance(limits.max_pmh, float)


def test_min_samples_zero_is_allowed() -> None:
    assert parse_thresholds({"defaults": {"min_samples": 0}}).for_overall().min_samples == 0


def test_empty_file_at_the_default_place_sets_nothing(tmp_path: Path) -> None:
    t = load_thresholds(write(tmp_path, "# nothing yet\n"), required=False)
    assert t.is_empty
    # Only the built-in limit of the call-error rate applies (no silent pass).
    assert t.for_domain("nobel") == Limits(max_error_rate=0.05) == t.for_overall()
    assert t.builtin("nobel", "max_error_rate") and not t.builtin("nobel", "max_fch")


@pytest.mark.parametrize("text", [
    "",
    "# nothing yet\n",
    "[defaults]\n",
    "[overall]\nfigure = \"pooled\"\n",
    '[models."my-rag"]\nmodel = "openai/gpt-4o-mini"\n',
])
def test_a_named_file_that_sets_no_limit_is_an_error(tmp_path: Path, text: str) -> None:
    # Named explicitly (--defan-thresholds), it is meant to gate the run: setting nothing would
    # turn the gate off without a word, and the run would pass whatever its figures.
    path = write(tmp_path, text)
    with pytest.raises(ThresholdsError) as info:
        load_thresholds(path)
    assert info.value.problems == (
        f"{path}: sets no limit, so the gate would judge nothing; add limits such as [defaults] "
        "max_fch = 0.5 (keys: max_fch, max_pmh, min_rc, max_error_rate, max_cost, max_latency_p95, min_samples)",
    )


@pytest.mark.parametrize("text", [
    "[defaults]\nmin_samples = 0\n",
    "[domains.nobel]\nmax_fch = 0.4\n",
    '[models."my-rag".overall]\nmin_rc = 0.1\n',
])
def test_a_named_file_with_one_limit_anywhere_is_enough(tmp_path: Path, text: str) -> None:
    assert load_thresholds(write(tmp_path, text)).sets_limits


def test_extra_domains_are_accepted_and_listed() -> None:
    t = parse_thresholds({"domains": {"tickets": {"max_fch": 0.1}}}, extra_domains=["tickets"])
    assert t.for_domain("tickets").max_fch == 0.1
    message = only_problem({"domains": {"ticket": {}}}, extra_domains=["tickets", "nobel"])
    assert message == f"thresholds.toml: domains.ticket: unknown domain; valid: {VALID_IDS}, tickets"


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "thresholds.toml"
    path.write_bytes("\ufeff[defaults]\nmax_fch = 0.5\n".encode())
    assert load_thresholds(path).for_overall().max_fch == 0.5


def test_limits_and_thresholds_are_immutable() -> None:
    t = parse_thresholds({"domains": {"nobel": {"max_fch": 0.3}}})
    with pytest.raises(FrozenInstanceError):
        t.for_domain("nobel").max_fch = 0.9  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        t.model = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        t.base.domains["nobel"] = Limits()  # type: ignore[index]


def test_thresholds_error_is_a_defan_error() -> None:
    # Catching DefanError catches a bad thresholds file with every other input problem.
    assert issubclass(ThresholdsError, DefanError) and issubclass(ThresholdsError, ValueError)
    with pytest.raises(DefanError) as info:
        parse_thresholds({"defaults": {"max_fch": 2, "min_rc": "x"}})
    assert info.value.problems == (
        "thresholds.toml: defaults.max_fch: 2 is outside [0, 1]",
        'thresholds.toml: defaults.min_rc: expected a number in [0, 1], got string "x"',
    )


# --------------------------------------------------------------------------------------------
# Validation: one kind of problem at a time
# --------------------------------------------------------------------------------------------


def test_unknown_key_in_a_domain_table() -> None:
    message = only_problem({"domains": {"nobel": {"max_fhc": 0.3}}})
    assert message == f"thresholds.toml: domains.nobel.max_fhc: unknown key; allowed: {ALLOWED}"


def test_unknown_key_in_defaults_and_overall() -> None:
    assert only_problem({"defaults": {"figure": "mean"}}) == (
        f"thresholds.toml: defaults.figure: unknown key; allowed: {ALLOWED}"
    )
    # [overall] also takes `figure`, and says so.
    assert only_problem({"overall": {"max_rc": 0.3}}) == (
        f"thresholds.toml: overall.max_rc: unknown key; allowed: {ALLOWED}, figure"
    )


def test_unknown_domain_lists_valid_ids() -> None:
    message = only_problem({"domains": {"nobl": {"max_fch": 0.3}}})
    assert message == (
        "thresholds.toml: domains.nobl: unknown domain; valid: sports, census, nobel, "
        "entertainment, world_org, qs_ranking, conference_venue, math"
    )


def test_domain_names_are_case_sensitive() -> None:
    # The summary's domain keys are the exact ids; "Nobel" would silently never match.
    assert "domains.Nobel: unknown domain" in only_problem({"domains": {"Nobel": {}}})


@pytest.mark.parametrize("value, shown", [(1.5, "1.5"), (-0.1, "-0.1"), (math.inf, "inf"), (math.nan, "nan"), (2, "2")])
def test_rate_outside_unit_interval(value: float, shown: str) -> None:
    assert only_problem({"defaults": {"max_fch": value}}) == (
        f"thresholds.toml: defaults.max_fch: {shown} is outside [0, 1]"
    )


@pytest.mark.parametrize(
    "value, got",
    [("0.5", 'string "0.5"'), (True, "boolean true"), ([0.5], "array"), ({"a": 1}, "table")],
)
def test_rate_of_the_wrong_type(value: Any, got: str) -> None:
    assert only_problem({"domains": {"math": {"min_rc": value}}}) == (
        f"thresholds.toml: domains.math.min_rc: expected a number in [0, 1], got {got}"
    )


def test_negative_min_samples() -> None:
    assert only_problem({"defaults": {"min_samples": -1}}) == (
        "thresholds.toml: defaults.min_samples: -1 is negative; expected a non-negative integer"
    )


@pytest.mark.parametrize("value, got", [(30.0, "float 30.0"), ("30", 'string "30"'), (True, "boolean true")])
def test_min_samples_must_be_an_integer(value: Any, got: str) -> None:
    assert only_problem({"overall": {"min_samples": value}}) == (
        f"thresholds.toml: overall.min_samples: expected a non-negative integer, got {got}"
    )


def test_figure_must_be_mean_or_pooled() -> None:
    assert only_problem({"overall": {"figure": "median"}}) == (
        'thresholds.toml: overall.figure: "median" is not one of: mean, pooled'
    )
    assert only_problem({"overall": {"figure": 1}}) == (
        "thresholds.toml: overall.figure: expected one of 'mean', 'pooled', got integer 1"
    )


def test_tables_must_be_tables() -> None:
    assert only_problem({"defaults": 0.5}) == "thresholds.toml: defaults: expected a table, got float 0.5"
    assert only_problem({"domains": {"nobel": 0.3}}) == (
        "thresholds.toml: domains.nobel: expected a table, got float 0.3"
    )
    assert only_problem({"models": {"x": "gpt"}}) == (
        'thresholds.toml: models.x: expected a table, got string "gpt"'
    )


def test_limit_at_top_level_gets_a_hint() -> None:
    message = only_problem({"max_fch": 0.5})
    assert message.startswith("thresholds.toml: max_fch: unknown top-level key; put limits in a table")
    assert "[defaults]" in message


def test_unknown_top_level_table() -> None:
    assert only_problem({"defan": {}}) == (
        "thresholds.toml: defan: unknown key; allowed: defaults, domains, overall, regression, models"
    )


def test_toml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "[defaults]\nmax_fch = 0.5\nmax_pmh = \n")
    with pytest.raises(ThresholdsError) as info:
        load_thresholds(path)
    message = str(info.value)
    assert message.startswith(f"{path}: line 3, column ")
    assert "invalid TOML" in message
    assert "(at line" not in message  # the position is said once, up front


def test_duplicate_key_is_a_toml_error(tmp_path: Path) -> None:
    path = write(tmp_path, "[defaults]\nmax_fch = 0.5\nmax_fch = 0.6\n")
    with pytest.raises(ThresholdsError, match=r": line 3, column \d+: invalid TOML"):
        load_thresholds(path)


def test_error_at_end_of_file_names_the_last_line(tmp_path: Path) -> None:
    path = write(tmp_path, "[defaults]\nmax_fch = [0.5,\n\n")
    # tomllib gives no position here (we name the last line); tomli on 3.10 names the end itself.
    with pytest.raises(ThresholdsError, match=r"thresholds\.toml: line (2 \(end of file\)|4, column 1): invalid TOML: "):
        load_thresholds(path)


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "thresholds.toml"
    path.write_bytes(b"[defaults]\n# caf\xe9\n")
    with pytest.raises(ThresholdsError, match=r"thresholds\.toml: line 2: not valid UTF-8"):
        load_thresholds(path)


def test_several_problems_are_reported_at_once(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
max_fch = 0.5
[defaults]
max_fch = 1.5
min_samples = 2.5
[domains.nobl]
max_fch = 0.3
[domains.nobel]
max_fhc = 0.3
[overall]
figure = "median"
[models."my rag".domains.sport]
max_pmh = "high"
""",
    )
    with pytest.raises(ThresholdsError) as info:
        load_thresholds(path)
    src = str(path)
    expected = [
        f"{src}: max_fch: unknown top-level key; put limits in a table such as [defaults]; "
        "allowed: defaults, domains, overall, regression, models",
        f"{src}: defaults.max_fch: 1.5 is outside [0, 1]",
        f"{src}: defaults.min_samples: expected a non-negative integer, got float 2.5",
        f"{src}: domains.nobl: unknown domain; valid: {VALID_IDS}",
        f"{src}: domains.nobel.max_fhc: unknown key; allowed: {ALLOWED}",
        f'{src}: overall.figure: "median" is not one of: mean, pooled',
        f'{src}: models."my rag".domains.sport.max_pmh: expected a number in [0, 1], got string "high"',
        f'{src}: models."my rag".domains.sport: unknown domain; valid: {VALID_IDS}',
    ]
    assert list(info.value.problems) == expected
    assert str(info.value) == "\n".join([f"{src}: {len(expected)} problems:", *(f"  - {p}" for p in expected)])


# --------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------


def test_missing_file_is_an_error_when_required(tmp_path: Path) -> None:
    path = tmp_path / "nope.toml"
    with pytest.raises(ThresholdsError, match="nope.toml: file not found"):
        load_thresholds(path)


def test_missing_file_is_empty_when_optional(tmp_path: Path) -> None:
    t = load_thresholds(tmp_path / "nope.toml", required=False, model="my-rag")
    assert t.is_empty and t.source is None and t.model == "my-rag"
    assert t.for_domain("nobel") == Limits(max_error_rate=0.05)
    assert t.describe(["nobel", "overall"]).startswith("no thresholds file: only the call-error rate is judged")


def test_optional_file_that_exists_is_still_validated(tmp_path: Path) -> None:
    path = write(tmp_path, "[defaults]\nmax_fch = 2\n")
    with pytest.raises(ThresholdsError, match="defaults.max_fch: 2 is outside"):
        load_thresholds(path, required=False)


def test_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ThresholdsError, match="is a directory"):
        load_thresholds(tmp_path)


def test_parse_needs_a_mapping() -> None:
    with pytest.raises(TypeError):
        parse_thresholds([("defaults", {})])  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------

MODEL_FILE = """\
[models."my-rag"]
model = "openai/gpt-4o-mini"
api_base = "http://localhost:8000/v1"
temperature = 0
max_tokens = 64
system_prompt = "Answer with the answer only."
timeout = 12.5
version = "2024-07-18"
litellm = { seed = 1, extra = { top_p = 0.9 } }
"""


def test_model_params_are_exposed_as_a_copy(tmp_path: Path) -> None:
    t = load_thresholds(write(tmp_path, MODEL_FILE), required=False)  # no limit: only optional
    params = t.model_params("my-rag")
    assert params == {
        "model": "openai/gpt-4o-mini",
        "api_base": "http://localhost:8000/v1",
        "temperature": 0,
        "max_tokens": 64,
        "system_prompt": "Answer with the answer only.",
        "timeout": 12.5,
        "version": "2024-07-18",
        "litellm": {"seed": 1, "extra": {"top_p": 0.9}},
    }
    params["litellm"]["extra"]["top_p"] = 0.1
    assert t.model_params("my-rag")["litellm"]["extra"]["top_p"] == 0.9
    assert t.model_params("other") == {}
    assert t.model_params() == {}  # no model selected
    assert replace(t, model="my-rag").model_params() == t.model_params("my-rag")
    # Parameters alone set no limit (but the built-in one of the call-error rate).
    assert replace(t, model="my-rag").for_domain("nobel") == Limits(max_error_rate=0.05)


@pytest.mark.parametrize(
    "key, value, expected",
    [
        ("model", 3, "expected a string, got integer 3"),
        ("api_base", True, "expected a string, got boolean true"),
        ("temperature", "0.2", 'expected a number, got string "0.2"'),
        ("temperature", False, "expected a number, got boolean false"),
        ("max_tokens", 64.0, "expected an integer, got float 64.0"),
        ("system_prompt", ["a"], "expected a string, got array"),
        ("timeout", "30s", 'expected a number, got string "30s"'),
        ("litellm", "seed=1", 'expected a table, got string "seed=1"'),
        ("version", 1.1, "expected a string, got float 1.1"),
    ],
)
def test_model_param_types(key: str, value: Any, expected: str) -> None:
    assert only_problem({"models": {"m": {key: value}}}) == f"thresholds.toml: models.m.{key}: {expected}"


def test_unknown_key_in_a_model_table() -> None:
    assert only_problem({"models": {"m": {"temprature": 0}}}) == (
        "thresholds.toml: models.m.temprature: unknown key; allowed: defaults, domains, overall, regression, "
        "model, api_base, temperature, max_tokens, system_prompt, timeout, litellm, version, price_in, price_out, "
        "concurrency, rpm"
    )


def test_model_tables_are_validated_like_the_top_level() -> None:
    problems = problems_of({"models": {"my-rag": {"defaults": {"max_fch": 7}, "overall": {"figure": "x"}}}})
    assert problems == (
        "thresholds.toml: models.my-rag.defaults.max_fch: 7 is outside [0, 1]",
        'thresholds.toml: models.my-rag.overall.figure: "x" is not one of: mean, pooled',
    )


def test_empty_model_name() -> None:
    assert only_problem({"models": {"": {}}}) == 'thresholds.toml: models."": empty model name'


def test_model_without_a_table_uses_the_top_level() -> None:
    t = parse_thresholds({"defaults": {"max_fch": 0.5}}, model="not-in-the-file")
    assert t.for_domain("nobel").max_fch == 0.5


# --------------------------------------------------------------------------------------------
# Merge order
# --------------------------------------------------------------------------------------------

LAYERS = ("defaults", "domain", "model_defaults", "model_domain")


@pytest.mark.parametrize("present", list(itertools.product([False, True], repeat=4)))
def test_domain_merge_order_per_key(present: tuple[bool, ...]) -> None:
    # Every combination of the four layers setting max_fch (to a value naming the layer): the
    # most specific layer present wins, and a layer that is absent never masks one below it.
    value = {layer: 0.1 * (i + 1) for i, layer in enumerate(LAYERS)}
    data: dict[str, Any] = {"defaults": {}, "domains": {"nobel": {}},
                            "models": {"m": {"defaults": {}, "domains": {"nobel": {}}}}}
    tables = {
        "defaults": data["defaults"],
        "domain": data["domains"]["nobel"],
        "model_defaults": data["models"]["m"]["defaults"],
        "model_domain": data["models"]["m"]["domains"]["nobel"],
    }
    for layer, on in zip(LAYERS, present):
        if on:
            tables[layer]["max_fch"] = value[layer]
    got = parse_thresholds(data, model="m").for_domain("nobel").max_fch
    winners = [value[layer] for layer, on in zip(LAYERS, present) if on]
    assert got == (winners[-1] if winners else None)


def test_merge_is_per_key() -> None:
    t = parse_thresholds(
        {
            "defaults": {"max_fch": 0.6, "max_pmh": 0.5, "min_rc": 0.3, "max_error_rate": 0.02, "min_samples": 30},
            "domains": {"nobel": {"max_fch": 0.35, "min_samples": 10}},
            "overall": {"max_pmh": 0.4},
            "models": {"m": {"defaults": {"min_rc": 0.5}, "domains": {"nobel": {"max_pmh": 0.1}},
                             "overall": {"max_error_rate": 0.0}}},
        },
        model="m",
    )
    assert t.for_domain("nobel") == Limits(max_fch=0.35, max_pmh=0.1, min_rc=0.5, max_error_rate=0.02, min_samples=10)
    assert t.for_domain("sports") == Limits(max_fch=0.6, max_pmh=0.5, min_rc=0.5, max_error_rate=0.02, min_samples=30)
    # Domain tables never reach the overall figure.
    assert t.for_overall() == Limits(max_fch=0.6, max_pmh=0.4, min_rc=0.5, max_error_rate=0.0, min_samples=30)
    # Without the model, only the top level applies.
    base = replace(t, model=None)
    assert base.for_domain("nobel") == Limits(max_fch=0.35, max_pmh=0.5, min_rc=0.3, max_error_rate=0.02, min_samples=10)
    assert base.for_overall() == Limits(max_fch=0.6, max_pmh=0.4, min_rc=0.3, max_error_rate=0.02, min_samples=30)


def test_overall_figure_precedence() -> None:
    assert parse_thresholds({}).overall_figure == "mean"
    t = parse_thresholds({"overall": {"figure": "pooled"}, "models": {"a": {"overall": {"figure": "mean"}}, "b": {}}})
    assert t.overall_figure == "pooled"
    assert replace(t, model="a").overall_figure == "mean"
    assert replace(t, model="b").overall_figure == "pooled"


def test_limits_helpers() -> None:
    limits = Limits(max_fch=0.3, min_rc=0.5, min_samples=30)
    assert limits.as_dict() == {"max_fch": 0.3, "min_rc": 0.5, "min_samples": 30}
    assert Limits(max_pmh=0.2).over(limits) == Limits(max_fch=0.3, max_pmh=0.2, min_rc=0.5, min_samples=30)
    assert Limits().over(limits) is limits
    assert Limits().is_empty and not limits.is_empty
    # Every limit key reads as an attribute: None when not set.
    assert [getattr(Limits(), key) for key in limit_keys()] == [None] * len(limit_keys())
    assert [getattr(limits, key) for key in limit_keys()] == [0.3, None, 0.5, None, None, None, 30]


# --------------------------------------------------------------------------------------------
# Issue 8: what would otherwise be silently wrong or crash
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["a = " + "[" * 5000 + "]" * 5000, "a = " + "{b = " * 3000 + "1" + "}" * 3000])
def test_toml_nested_too_deep_for_the_parser_is_one_problem(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ThresholdsError) as info:
        load_thresholds(path)
    assert info.value.problems == (f"{path}: invalid TOML: arrays or inline tables nested too deeply",)


def test_a_litellm_table_nested_without_limit_is_refused(tmp_path: Path) -> None:
    # Dotted headers nest tables without recursion in the parser; copying one would not.
    path = write(tmp_path, "[defaults]\nmax_fch = 0.5\n[models.m.litellm" + ".a" * 2000 + "]\nx = 1\n")
    with pytest.raises(ThresholdsError, match=r"models\.m\.litellm: nested more than 32 levels deep"):
        load_thresholds(path)


def _typos(model: str, tables: dict[str, dict[str, Any]], registered: tuple[str, ...] = (),
           litellm: tuple[str, ...] = ()) -> list[str]:
    return model_table_typos(model, tables, {n: "t.toml" for n in tables}, registered, lambda n: n in litellm)


def test_a_misspelt_model_table_gets_did_you_mean() -> None:
    assert _typos("my-rag", {"my-rga": {}}, registered=("my-rag",)) == [
        't.toml: models.my-rga: no model of that name is registered; did you mean \'my-rag\'? (a table applies '
        "only to the model of its exact name, so its limits are ignored)"
    ]
    # Near a registered model other than the one run, or the run's own table; case is ignored.
    assert len(_typos("my-rag", {"othr-rag": {}}, registered=("my-rag", "other-rag"))) == 1
    assert len(_typos("gpt-fast", {"gpt-fast": {"model": "openai/x"}, "GPT-fats": {}})) == 1


@pytest.mark.parametrize(("model", "tables", "registered", "litellm"), [
    ("my-rag", {"my-rag": {}}, ("my-rag",), ()),                       # the table of the model run
    ("my-rag", {"my-rga": {"model": "openai/x"}}, ("my-rag",), ()),    # names a model of its own
    ("my-rag", {"gpt-4": {}}, ("gpt-4o",), ("gpt-4",)),                # a litellm model string
    ("my-rag", {"my-rag2": {}}, ("my-rag", "my-rag2"), ()),            # registered itself
    ("my-rag", {"summarizer": {}}, ("my-rag",), ()),                   # far from every name
    ("ab", {"ba": {}}, ("ab",), ()),                                   # too short to call a typo
    ("openai/gpt-4o", {"openai/gpt-4": {}}, (), ()),                   # a bare litellm string is run
])
def test_tables_that_are_not_typos(model: str, tables: dict[str, dict[str, Any]], registered: tuple[str, ...],
                                   litellm: tuple[str, ...]) -> None:
    assert _typos(model, tables, registered, litellm) == []


def test_a_key_with_control_characters_is_named_on_one_line(tmp_path: Path) -> None:
    # Found by tests/test_fuzz.py: the key was printed raw, its newline splitting the message.
    path = write(tmp_path, '[defaults]\nmax_fch = 0.5\n"a\\nb\\u001b" = 1\n')
    with pytest.raises(ThresholdsError) as info:
        load_thresholds(path)
    assert info.value.problems == (f'{path}: defaults."a\\nb\\u001b": unknown key; allowed: {ALLOWED}',)


# --------------------------------------------------------------------------------------------
# [regression]: the regression gate's confidence and tolerances
# --------------------------------------------------------------------------------------------


def test_regression_defaults_without_a_table() -> None:
    t = parse_thresholds({"defaults": {"max_fch": 0.5}})
    assert t.regression_confidence() == DEFAULT_CONFIDENCE == 0.95
    assert (t.tolerance("nobel", "fch"), t.tolerance("nobel", "pmh"), t.tolerance("nobel", "rc")) == (0.02, 0.02, 0.02)
    assert t.tolerance("nobel", "error_rate") is None  # not judged unless set


def test_regression_precedence_per_domain_overall_and_model() -> None:
    data = {
        "regression": {"confidence": 0.9, "max_fch_rise": 0.03, "max_rc_drop": 0.1,
                       "domains": {"nobel": {"max_fch_rise": 0.01}}, "overall": {"max_pmh_rise": 0.04}},
        "models": {"m": {"regression": {"max_pmh_rise": 0.5, "confidence": 0.99,
                                        "domains": {"nobel": {"max_error_rate_rise": 0.0}}}}},
    }
    t = parse_thresholds(data)
    assert t.regression_confidence() == 0.9
    assert (t.tolerance("nobel", "fch"), t.tolerance("sports", "fch"), t.tolerance("overall", "pmh")) == (0.01, 0.03, 0.04)
    assert t.tolerance("nobel", "rc") == 0.1
    m = replace(t, model="m")
    assert m.regression_confidence() == 0.99
    assert (m.tolerance("nobel", "pmh"), m.tolerance("overall", "pmh"), m.tolerance("nobel", "error_rate")) == (0.5, 0.5, 0.0)


def test_regression_table_problems_all_at_once() -> None:
    data = {"regression": {"confidence": 1.5, "max_fch_rise": "a bit", "max_fch": 0.3,
                           "domains": {"nobl": {"max_pmh_rise": 2}}}}
    with pytest.raises(ThresholdsError) as info:
        parse_thresholds(data, "t.toml")
    problems = list(info.value.problems)
    assert "t.toml: regression.confidence: expected a number in [0.5, 1), got float 1.5" in problems
    assert 't.toml: regression.max_fch_rise: expected a number in [0, 1], got string "a bit"' in problems
    assert any(p.startswith("t.toml: regression.max_fch: unknown key; allowed: confidence, noise, domains, overall, "
                            "max_fch_rise, max_pmh_rise, max_rc_drop, max_error_rate_rise") for p in problems)
    assert "t.toml: regression.domains.nobl.max_pmh_rise: 2 is outside [0, 1]" in problems
    assert any(p.startswith("t.toml: regression.domains.nobl: unknown domain; valid: ") for p in problems)


def test_tolerance_line_points_at_the_key(tmp_path: Path) -> None:
    path = tmp_path / "thresholds.toml"
    path.write_text("[defaults]\nmax_fch = 0.5\n\n[regression]\nconfidence = 0.9\nmax_fch_rise = 0.03\n\n"
                    "[regression.domains.nobel]\nmax_fch_rise = 0.01\n", encoding="utf-8")
    t = load_thresholds(path)
    assert t.tolerance_line("nobel", "fch") == 9
    assert t.tolerance_line("sports", "fch") == 6
    assert t.tolerance_line("sports", "pmh") == 5  # only the default: the [regression] table


def test_line_of_follows_the_precedence(tmp_path: Path) -> None:
    path = write(tmp_path, SPEC_EXAMPLE)
    t = load_thresholds(path, model="my-rag")
    # [models."my-rag".domains.nobel] max_fch (line 16) wins over [domains.nobel] (line 9).
    assert t.table_of("nobel", "max_fch") == ("models", "my-rag", "domains", "nobel")
    assert t.line_of("nobel", "max_fch") == 16
    assert replace(t, model=None).line_of("nobel", "max_fch") == 9
    assert (t.line_of("sports", "max_fch"), t.line_of("overall", "max_fch"), t.line_of("overall", "min_rc")) == (2, 12, 4)
    assert t.table_of("nobel", "max_error_rate") == ("defaults",) and t.table_of("nobel", "min_rc") == ("defaults",)
    gone = parse_thresholds({"defaults": {"max_fch": 0.5}}, str(tmp_path / "gone.toml"))
    assert gone.line_of("nobel", "max_fch") is None  # the file cannot be read


def test_a_tolerance_for_a_metric_that_is_not_compared_is_named() -> None:
    assert only_problem({"regression": {"max_nothing_rise": 0.1}}).startswith(
        "thresholds.toml: regression.max_nothing_rise: unknown key; allowed: confidence, noise, domains, overall, max_fch_rise")


# -- the file is read by the one reader (issue 20) -------------------------------------------------


def test_a_fifo_a_loop_or_an_oversized_file_is_one_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from test_hostile_reports import fed_fifo

    fifo = tmp_path / "fifo.toml"
    release = fed_fifo(fifo, b"[defaults]\nmax_fch = 0.5\n")
    try:
        with pytest.raises(ThresholdsError, match=r"fifo.toml: is a FIFO \(a named pipe\), not a file"):
            load_thresholds(fifo)
    finally:
        release()
    loop = tmp_path / "loop.toml"
    loop.symlink_to("loop.toml")
    with pytest.raises(ThresholdsError, match="loop.toml: a symbolic link loop"):
        load_thresholds(loop, required=False)  # not taken for a missing optional file
    dangling = tmp_path / "moved.toml"
    dangling.symlink_to(tmp_path / "elsewhere.toml")
    with pytest.raises(ThresholdsError, match="moved.toml: a symbolic link to .*elsewhere.toml, which does not exist"):
        load_thresholds(dangling)
    big = tmp_path / "big.toml"
    with open(big, "wb") as fh:
        fh.truncate(64 * 1024 * 1024)  # sparse: nothing read
    with pytest.raises(ThresholdsError, match="big.toml: larger than 4 MiB"):
        load_thresholds(big)
