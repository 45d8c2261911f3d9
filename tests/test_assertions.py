"""The assertion API for a team's own tests: defan_pytest.score, assert_answer, cases, and the
failure text of ``assert score(...) == "right"`` (the plugin's pytest_assertrepr_compare)."""
from __future__ import annotations

import json
import re

import pytest

import defan_pytest
from defan_pytest.assertions import AnswerScore, assert_answer, score

Q = "Who won the Nobel Prize in Physics in 1921?"


def test_score_gives_the_claim_the_verdicts_and_why() -> None:
    s = score(question=Q, response="It was Albert Einstein.", gold="Albert Einstein", type="name", nlp=None)
    assert isinstance(s, AnswerScore)
    assert (s.claim, s.aligned, s.correct, s.verdict) == ("Albert Einstein", False, True, "misaligned")
    assert s.why[0].startswith("misaligned: not one bare name") and s.why[1].startswith("correct: the claim matches")
    assert s == "misaligned" and s != "right"


def test_a_gold_may_be_a_number_and_the_type_is_checked() -> None:
    assert score(question="How many?", response="1,351,921", gold=1351921, type="numeric", nlp=None) == "right"
    with pytest.raises(ValueError, match="allowed: name, numeric, date, rank, city"):
        score(question="How many?", response="3", gold="3", type="number", nlp=None)


def test_no_claim_and_no_prize_read_as_the_reports_say() -> None:
    s = score(question=Q, response="I don't know.", gold="Albert Einstein", type="name", nlp=None)
    assert s.verdict == "no claim" and "no claim is never correct" in s.why[1]
    none = score(question="Who won the Nobel Prize in Economics in 1950?", response="No prize was awarded.",
                 gold="", type="name", nlp=None)
    assert none.correct and none.claim == "none"


def test_assert_answer_passes_returns_the_score_and_fails_with_the_explanation() -> None:
    assert assert_answer(question=Q, response="Albert Einstein", gold="Albert Einstein", type="name", nlp=None).correct
    with pytest.raises(AssertionError) as info:
        assert_answer(question=Q, response="Niels Bohr", gold="Albert Einstein", type="name", nlp=None)
    text = str(info.value)
    assert text.splitlines()[0] == "hallucinated: claim 'Niels Bohr', gold 'Albert Einstein' (name)"
    assert "the claim matches no accepted answer" in text and f"question: {Q}" in text
    # aligned=True also asks for a bare answer.
    assert_answer(question=Q, response="It was Albert Einstein.", gold="Albert Einstein", type="name", nlp=None)
    with pytest.raises(AssertionError, match="^misaligned: claim 'Albert Einstein'"):
        assert_answer(question=Q, response="It was Albert Einstein.", gold="Albert Einstein", type="name",
                      aligned=True, nlp=None)


def test_the_public_names_are_exported() -> None:
    for name in ("score", "assert_answer", "cases", "AnswerScore", "model"):
        assert name in defan_pytest.__all__ and getattr(defan_pytest, name) is not None
    with pytest.raises(AttributeError):
        defan_pytest.nothing_here  # noqa: B018


# -- in a team's own test suite (real sessions) ---------------------------------------------------

GOLDEN = [
    {"question": "Who won the Nobel Prize in Physics in 1921?", "answer": "Albert Einstein", "type": "name"},
    {"question": "In which year did Ghana join the UN?", "answer": "1957", "type": "date"},
    {"question": "What was the population of Perth in 2016?", "answer": "1,943,858", "type": "numeric"},
]

TESTS = '''
import defan_pytest

APP = {"Who won the Nobel Prize in Physics in 1921?": "Albert Einstein",
       "In which year did Ghana join the UN?": "It joined in 1957.",
       "What was the population of Perth in 2016?": "About 2 million"}

@defan_pytest.cases("golden.FORMAT")
def test_my_app(case):
    defan_pytest.assert_answer(question=case.question, response=APP[case.question], gold=case.answer,
                               type=case.type, nlp=None)

def test_a_verdict_word():
    s = defan_pytest.score(question="Who won the Nobel Prize in Physics in 1921?", response="Niels Bohr",
                           gold="Albert Einstein", type="name", nlp=None)
    assert s == "right"
'''


def _golden(pytester: pytest.Pytester, fmt: str) -> None:
    if fmt == "jsonl":
        text = "\n".join(json.dumps(r) for r in GOLDEN) + "\n"
    elif fmt == "json":
        text = json.dumps(GOLDEN)
    else:
        text = "question,answer,type\n" + "".join(f'"{r["question"]}","{r["answer"]}",{r["type"]}\n' for r in GOLDEN)
    (pytester.path / "tests").mkdir(exist_ok=True)
    (pytester.path / "tests" / f"golden.{fmt}").write_text(text, encoding="utf-8")
    (pytester.path / "tests" / "test_app.py").write_text(TESTS.replace("FORMAT", fmt), encoding="utf-8")


@pytest.mark.parametrize("fmt", ["jsonl", "json", "csv"])
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "n2"])
def test_cases_parametrize_a_teams_test_and_failures_explain_themselves(pytester: pytest.Pytester, fmt: str,
                                                                         workers: list) -> None:
    _golden(pytester, fmt)
    # From another folder: the file is found beside the test module, not in the working folder.
    result = pytester.runpytest_subprocess("tests", "-p", "no:randomly", "-rf", "-v", *workers)
    result.assert_outcomes(passed=2, failed=2)
    out = result.stdout.str()
    for rid in ("golden-q0000-p00", "golden-q0001-p00", "golden-q0002-p00"):
        assert f"test_my_app[{rid}]" in out  # ids are the rows' ids
    assert "misaligned and wrong: claim '2000000', gold '1,943,858' (numeric)" in out
    assert "misaligned: not one bare number; the claim: the first number in reading order" in out
    # assert score(...) == "right": the verdict, the claim, the gold and the rules, not two reprs.
    assert "verdict 'hallucinated' == 'right'" in out
    assert "hallucinated: claim 'Niels Bohr', gold 'Albert Einstein' (name)" in out
    assert "aligned: the whole response is one bare name" in out


def test_a_bad_question_file_fails_collection_with_every_problem_and_no_traceback(pytester: pytest.Pytester,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # Under CI pytest does not cut the short summary's line, which repeats the message: count
    # the message as a local run shows it.
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("BUILD_NUMBER", raising=False)
    (pytester.path / "golden.jsonl").write_text(
        '{"question": "Q1?", "answer": "1", "type": "number"}\n{"question": "Q2?", "type": "name"}\n', encoding="utf-8")
    (pytester.path / "test_app.py").write_text(TESTS.replace("FORMAT", "jsonl"), encoding="utf-8")
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    out = result.stdout.str()
    assert "defan_pytest.cases: " in out and "golden.jsonl" in out
    assert "golden.jsonl:1: unknown type 'number' (expected one of name, numeric, date, rank, city)" in out
    assert "golden.jsonl:2: missing 'answer'" in out
    assert out.count("2 problems:") == 1 and "Traceback" not in out and "load_user_set" not in out


# -- defan_evaluate: a small evaluation inside a test ------------------------------------------------

EVAL_CONFTEST = '''
import defan_pytest

@defan_pytest.model("toy-app", version="1")
def toy_app(prompt):
    with open("calls.txt", "a") as f:
        f.write(prompt + "\\n")
    n = int(prompt.split("#")[1].split()[0])
    return "Ada Lovelace" if n % 10 < 7 else "Charles Babbage"
'''

EVAL_TEST = '''
import json

def test_toy_app(defan_evaluate):
    result = defan_evaluate("toy-app", dataset="notes.jsonl", sample="SAMPLE")
    fch = result["notes"].fch
    with open("evaluated.json", "w") as f:
        json.dump({"fch": fch, "interval": fch.interval, "pmh": result["notes"].pmh, "rc": result["notes"].rc,
                   "n": result["notes"].n, "overall": result["overall"].fch}, f)
    assert result["notes"].fch <= 0.25, result["notes"].fch.interval

def test_a_bad_option_is_one_message(defan_evaluate):
    defan_evaluate("toy-app", dataset="notes.jsonl", concurrency="many")
'''


def _eval_project(pytester: pytest.Pytester) -> None:
    rows = [{"question": f"Who wrote note #{g} (take {p})?", "answer": "Ada Lovelace", "type": "name",
             "domain": "notes", "group": f"g{g}"} for g in range(20) for p in range(3)]
    (pytester.path / "notes.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    pytester.makeconftest(EVAL_CONFTEST)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "n2"])
def test_the_evaluation_fixture_gives_the_figures_of_a_plugin_run(pytester: pytest.Pytester, workers: list) -> None:
    _eval_project(pytester)
    plugin = pytester.runpytest_subprocess("--defan-model=toy-app", "--defan-dataset=notes.jsonl", "--defan-sample=10g",
                                           "--defan-spacy-model=none", "--defan-report=r.json", "-p", "no:randomly",
                                           *workers)
    assert plugin.ret == 0, plugin.stdout.lines[-20:]
    assert len((pytester.path / "calls.txt").read_text(encoding="utf-8").splitlines()) == 30
    domain = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))["domains"]["notes"]

    pytester.makepyfile(test_eval=EVAL_TEST.replace("SAMPLE", "10g"))
    result = pytester.runpytest_subprocess("test_eval.py", "-p", "no:randomly", "-p", "no:cacheprovider", *workers,
                                           "-o", "defan_spacy_model=none")
    result.assert_outcomes(passed=0, failed=2)  # FCH 0.30 > 0.25; and the bad option
    got = json.loads((pytester.path / "evaluated.json").read_text(encoding="utf-8"))
    assert got["fch"] == domain["fch"] and got["interval"] == domain["fch_ci"]
    assert (got["pmh"], got["rc"], got["n"]) == (domain["pmh"], domain["rc"], domain["n"])
    out = result.stdout.str()
    assert "AssertionError: (" in out  # the interval shown with the failed figure
    assert "defan_evaluate: --defan-concurrency: 'many' is not a whole number" in out
    assert "Traceback" not in out
    # The plugin run answered the same 30 prompts: through the session's cache, nothing is asked again.
    assert len((pytester.path / "calls.txt").read_text(encoding="utf-8").splitlines()) == 30


HIDDEN = '''
import defan_pytest

def test_my_app():
    answer = "Niels Bohr"
    defan_pytest.assert_answer(question="Who won the Nobel Prize in Physics in 1921?", response=answer,
                               gold="Albert Einstein", type="name", nlp=None)

def test_a_typo_in_the_type():
    defan_pytest.score(question="How many?", response="3", gold="3", type="number", nlp=None)
'''


@pytest.mark.parametrize("tb", ["auto", "short"])
def test_a_failure_points_at_the_tests_line_and_none_of_the_plugins(pytester: pytest.Pytester, tb: str) -> None:
    pytester.makepyfile(test_hidden=HIDDEN)
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", f"--tb={tb}")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    first = out.split("test_my_app", 2)[2].split("test_a_typo_in_the_type", 1)[0]  # its failure section
    assert "defan_pytest.assert_answer(" in first  # the test's own line ...
    assert re.search(r"^E +AssertionError: hallucinated: claim 'Niels Bohr', gold 'Albert Einstein' \(name\)$", first, re.M)
    source = (pytester.path / "test_hidden.py").read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(source, 1) if "defan_pytest.assert_answer(" in text)
    assert f"test_hidden.py:{line}: AssertionError" in out or f"test_hidden.py:{line}: in test_my_app" in out
    # ... and none of the plugin's: no frame of defan_pytest/assertions, no line of its source.
    assert "defan_pytest/assertions" not in out and "raise AssertionError(s.explain())" not in out
    assert "def assert_answer" not in first and "__tracebackhide__" not in first
    # A mistake in the call (a type that does not exist): the test's line, then the scorer's
    # own check that raised, never the helper's body.
    second = out.split("test_a_typo_in_the_type", 2)[-1]
    assert "defan_pytest.score(" in second and "allowed: name, numeric, date, rank, city" in second
    assert "raw_gold = gold if isinstance" not in second


@pytest.mark.parametrize(
    ("argument", "value"),
    [("response", b"Albert Einstein"), ("response", 42), ("response", ["Albert Einstein"]), ("response", None),
     ("question", None), ("gold", None), ("gold", True), ("gold", [1]), ("type", None), ("domain", 3)],
)
def test_an_argument_of_the_wrong_type_is_one_type_error_naming_it(argument: str, value: object) -> None:
    """Issue 34 (9): bytes, a number or a list for the response, a None question: internal
    errors before ("cannot use a string pattern on a bytes-like object", AttributeError), and
    gold=None was silently "no prize awarded"."""
    kwargs: dict = dict(question=Q, response="Albert Einstein", gold="Albert Einstein", type="name", nlp=None)
    kwargs[argument] = value
    with pytest.raises(TypeError, match=rf"^score\(\): {argument} must be a str"):
        score(**kwargs)
    with pytest.raises(TypeError, match=rf"^score\(\): {argument} must be"):
        assert_answer(**kwargs)
