"""Settings: one table of options, each default stated once, every problem reported at once."""
from __future__ import annotations

from pathlib import Path

import pytest

from defan_pytest.calls.protocol import DEFAULT_CONCURRENCY, DEFAULT_RETRIES, DEFAULT_TIMEOUT
from defan_pytest.settings import ConfigError, Settings
from defan_pytest.settings.options import DEFAULT_CACHE, OPTIONS


def test_defaults_come_from_the_one_table() -> None:
    s = Settings.from_values({"model": "m"}, root=Path("/r"), invocation_dir=Path("/i"))
    assert (s.concurrency, s.retries, s.timeout, s.cache, s.dataset, s.seed) == (
        DEFAULT_CONCURRENCY, DEFAULT_RETRIES, DEFAULT_TIMEOUT, DEFAULT_CACHE, "public", 0,
    )
    assert s.domains == () and s.sample is None and s.rpm is None and not s.strict
    by_noun = {o.noun: o for o in OPTIONS}
    assert by_noun["timeout"].help_text.endswith("(default: 60)")
    assert by_noun["cache"].help_text.endswith("(default: .defan_cache)")
    assert by_noun["model"].help_text.endswith("(default: none, plugin inactive)")
    assert all(o.flag == f"--defan-{o.noun}" and o.dest == "defan_" + o.noun.replace("-", "_") for o in OPTIONS)


def test_values_are_parsed() -> None:
    s = Settings.from_values({
        "model": " my-rag ", "domain": ["nobel, math", "", "sports"], "sample": "25", "seed": "7",
        "concurrency": "3", "rpm": "120", "retries": "0", "timeout": "2.5", "strict": True,
        "model-arg": ["temperature=0.5", "api_base=http://x"], "cache": "off", "spacy-model": "none",
    })
    assert s.model == "my-rag" and s.domains == ("nobel", "math", "sports")
    assert s.sample is not None and s.sample.count == 25 and s.seed == 7
    assert (s.concurrency, s.rpm, s.retries, s.timeout, s.strict) == (3, 120.0, 0, 2.5, True)
    assert dict(s.model_args) == {"temperature": 0.5, "api_base": "http://x"}
    assert s.cache == "off" and s.spacy_model is None


def test_every_problem_at_once() -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_values({
            "model": "m", "sample": "lots", "seed": "x", "concurrency": "0", "rpm": "-1",
            "retries": "-2", "timeout": "soon", "model-arg": ["novalue"], "spacy-model": "xx_missing_pipeline",
        })
    problems = info.value.problems
    assert len(problems) == 8
    assert any(p.startswith("--defan-sample: ") for p in problems)
    assert "--defan-seed: 'x' is not a whole number" in problems
    assert "--defan-concurrency: 0 is below the minimum 1" in problems
    assert "--defan-rpm: -1 must be above 0" in problems
    assert "--defan-retries: -2 is below the minimum 0" in problems
    assert "--defan-timeout: 'soon' is not a number" in problems
    assert any(p.startswith("--defan-model-arg 'novalue'") for p in problems)
    assert any(p.startswith("--defan-spacy-model: ") for p in problems)
    assert str(info.value).startswith("8 problems:\n  - ")


def test_unknown_setting_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown settings colour; known: model, domain"):
        Settings.from_values({"model": "m", "colour": "red"})


def test_settings_are_frozen_and_outputs_resolve_from_the_invocation_dir(tmp_path: Path) -> None:
    s = Settings.from_values({"model": "m"}, root=tmp_path / "root", invocation_dir=tmp_path)
    with pytest.raises(AttributeError):
        s.model = "other"  # type: ignore[misc]
    assert s.resolve_output("out/r.json") == tmp_path / "out" / "r.json"
    assert s.resolve_output("/abs/r.json") == Path("/abs/r.json")
    asked = Settings.from_values({"model": "m", "report": "out/r.json", "html": "/abs/r.html"}, invocation_dir=tmp_path)
    assert {name: (o.flag, o.given, o.path) for name, o in asked.outputs.items()} == {
        "json": ("--defan-report", "out/r.json", tmp_path / "out" / "r.json"),
        "html": ("--defan-html", "/abs/r.html", Path("/abs/r.html")),
    }
    assert s.outputs == {}


@pytest.mark.parametrize(("noun", "value"), [
    ("domain", [""]), ("domain", ["", " , "]), ("dataset", ""), ("sample", " "), ("seed", ""),
    ("thresholds", ""), ("report", ""), ("spacy-model", ""), ("concurrency", ""), ("rpm", ""),
    ("retries", ""), ("timeout", ""), ("model-arg", [""]), ("cache", ""),
])
def test_an_option_given_empty_is_a_problem_not_its_default(noun: str, value: object) -> None:
    # "--defan-domain=$DOMAINS" with the variable unset must not run all 8 domains (or, for the
    # others, quietly drop the report, take another file, ...): given but empty is an error.
    settings, problems = Settings.parse({"model": "m", noun: value})
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"--defan-{noun}: given an empty value (an unset variable?)")
    assert "leave the option out for its default" in problems[0]


def test_blank_entries_among_others_are_fine() -> None:
    settings, problems = Settings.parse({"model": "m", "domain": ["nobel", ""], "model-arg": ["a=1", " "]})
    assert problems == [] and settings.domains == ("nobel",) and dict(settings.model_args) == {"a": 1}


@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "1e999"])
def test_timeouts_and_rates_must_be_finite(value: str) -> None:
    # An infinite timeout would let a call hang the run for ever.
    for noun in ("timeout", "rpm"):
        _, problems = Settings.parse({"model": "m", noun: value})
        assert problems and f"--defan-{noun}:" in problems[0], problems


def test_force_output_is_an_option() -> None:
    assert Settings.from_values({"model": "m", "force-output": True}).force_output
    assert not Settings.from_values({"model": "m"}).force_output


@pytest.mark.parametrize("noun", ["dataset", "thresholds", "report", "cache", "model", "sample"])
def test_a_value_with_lone_surrogates_is_a_problem_and_not_acted_on(noun: str) -> None:
    # A path no file system can name: opening it would raise UnicodeEncodeError, not fail cleanly.
    settings, problems = Settings.parse({"model": "m", noun: "a\udd00b"})
    assert problems == [f"--defan-{noun}: 'a\\udd00b' holds invalid characters (lone surrogates)"]
    assert settings.invalid == {noun}
    # What the command line makes of bytes that are not UTF-8 (surrogateescape) is a usable path.
    _, problems = Settings.parse({"model": "m", noun: "a\udcffb"})
    assert not [p for p in problems if "invalid characters" in p]


def test_options_given_empty_are_marked_invalid() -> None:
    settings, _ = Settings.parse({"model": "m", "domain": [""], "dataset": ""})
    assert settings.invalid == {"domain", "dataset"} and settings.domains == ()


def test_repeat_is_parsed_and_a_bad_one_is_one_problem() -> None:
    from defan_pytest.dataset.sampling import Repeat

    assert Settings.from_values({"model": "m"}).repeat is None
    assert Settings.from_values({"model": "m", "repeat": "3:50"}).repeat == Repeat(3, 50)
    with pytest.raises(ConfigError) as info:
        Settings.from_values({"model": "m", "repeat": "1", "seed": "x"})
    assert len(info.value.problems) == 2
    assert info.value.problems[1] == (
        "--defan-repeat: '1' is not a repeat; use K (every selected prompt asked K times) or K:N (a sample of about N "
        "prompts, whole paraphrase groups, asked K times), with K from 2 to 20 and N at least 1, e.g. 3 or 3:200")


def test_models_are_repeatable_comma_separated_and_each_once() -> None:
    from defan_pytest.settings import model_names

    assert model_names(["a, b", "c", "a", " "]) == ["a", "b", "c"]
    assert model_names("openai/gpt-4o-mini") == ["openai/gpt-4o-mini"]
    assert model_names(None) == [] and model_names([",", ""]) == []
    s, problems = Settings.parse({"model": ["a,b"], "compare-to": "b"})
    assert (s.model, s.models, s.compare_to, problems) == ("a", ("a", "b"), "b", [])
    assert s.for_model("b").model == "b" and s.for_model("b").models == ("a", "b")


@pytest.mark.parametrize("models, target, message", [
    (["a"], "a", "--defan-compare-to a: compares models of one run; give two or more with --defan-model"),
    (["a,b"], "c", "--defan-compare-to c: not one of the models given (--defan-model): a, b"),
])
def test_compare_to_names_one_of_several_models(models: list, target: str, message: str) -> None:
    _, problems = Settings.parse({"model": models, "compare-to": target})
    assert problems == [message]
