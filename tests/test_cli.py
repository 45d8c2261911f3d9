"""Tests of the ``defan score`` command line (defan_pytest.cli).

Validation and plumbing are tested against a fake ``defan_pytest.scoring.scorer`` module, so they pin
what the CLI does, not what the scorer decides. The end-to-end tests use the real scorer
(without a spaCy pipeline, which numeric answers do not need), in-process and through the
installed ``defan`` console script.
"""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

from defan_pytest.cli import main, score
from defan_pytest.metrics.summary import summarize
from defan_pytest.records import ReportMeta, ScoredRecord
from defan_pytest.report.builder import build_report, scorer_meta
from defan_pytest.report.schema import validate_report

DEFAN = Path(sys.executable).with_name("defan")
DATA = Path(__file__).parent / "data"
ROW_KEYS = {"id", "domain", "group", "type", "question", "answer", "response", "claim", "aligned", "correct", "error",
            "error_kind"}
REPORT_KEYS = ["schema", "schema_version", "meta", "thresholds", "gate_status", "gate", "regression", "domains",
               "overall", "rows"]


def line(**fields: Any) -> str:
    base: dict[str, Any] = {"question": "What was the position of Kobe University in the QS rankings for 2022?",
                            "answer": "386", "type": "rank", "response": "386"}
    base.update(fields)
    return json.dumps({k: v for k, v in base.items() if v is not _DROP}, ensure_ascii=False)


_DROP = object()


def write(tmp_path: Path, *lines: str, name: str = "responses.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --- a fake scoring module --------------------------------------------------------------------


@dataclass(frozen=True)
class FakeInput:
    question: str
    answer: str
    type: str
    response: str | None
    error: str | None = None
    domain: str | None = None
    finish_reason: str | None = None


@dataclass(frozen=True)
class FakeScore:
    claim: str | None
    aligned: bool | None
    correct: bool | None
    error: str | None
    note: str | None = None


class FakeScorer:
    """Claim = the stripped response; correct when it equals the stripped gold."""

    made: list["FakeScorer"] = []
    pipeline = None  # as the real Scorer says: rules only

    def __init__(self, nlp: Any = "auto") -> None:
        if nlp == "no_such_pipeline":
            raise ValueError("cannot load spaCy pipeline 'no_such_pipeline'")
        self.nlp = nlp
        self.items: list[FakeInput] = []
        FakeScorer.made.append(self)

    def score_many(self, items: list[FakeInput]) -> list[FakeScore]:
        self.items.extend(items)
        out = []
        for it in items:
            if it.error is not None:
                out.append(FakeScore(None, None, None, it.error))
            else:
                claim = (it.response or "").strip()
                out.append(FakeScore(claim, claim.isdigit(), claim == it.answer.strip(), None))
        return out


@pytest.fixture
def fake_scoring(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[FakeScorer]]:
    monkeypatch.setattr(score, "Scorer", FakeScorer)
    monkeypatch.setattr(score, "ScoreInput", FakeInput)
    FakeScorer.made = []
    yield FakeScorer


@pytest.fixture
def scoring_forbidden(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to score fails the test: bad input must stop the run before scoring."""

    class Forbidden:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise AssertionError("the scorer was constructed despite bad input")

    monkeypatch.setattr(score, "Scorer", Forbidden)
    monkeypatch.setattr(score, "ScoreInput", FakeInput)


# --- usage ------------------------------------------------------------------------------------


def test_missing_file_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       scoring_forbidden: None) -> None:
    missing = tmp_path / "nope.jsonl"
    assert main(["score", str(missing)]) == 2
    err = capsys.readouterr().err
    assert f"{missing}: no such file" in err


def test_directory_instead_of_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   scoring_forbidden: None) -> None:
    assert main(["score", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_no_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "a command is required" in capsys.readouterr().err


def test_help_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--json" in out and "--spacy-model" in out


def test_unknown_option_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", str(write(tmp_path, line())), "--bogus"]) == 2
    assert "unrecognized arguments" in capsys.readouterr().err


def test_empty_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], scoring_forbidden: None) -> None:
    path = write(tmp_path, "", "   ")
    assert main(["score", str(path)]) == 2
    assert "no responses" in capsys.readouterr().err


def test_json_output_directory_must_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          scoring_forbidden: None) -> None:
    path = write(tmp_path, line())
    out = tmp_path / "missing" / "report.json"
    assert main(["score", str(path), "--json", str(out)]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_json_output_must_not_overwrite_the_input(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  scoring_forbidden: None) -> None:
    path = write(tmp_path, line())
    assert main(["score", str(path), "--json", str(path)]) == 2
    assert "would overwrite the responses file" in capsys.readouterr().err
    assert path.read_text(encoding="utf-8") == line() + "\n"


def test_spacy_model_that_cannot_load(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      fake_scoring: type[FakeScorer]) -> None:
    path = write(tmp_path, line())
    assert main(["score", str(path), "--spacy-model", "no_such_pipeline"]) == 2
    assert "defan: error: --spacy-model no_such_pipeline: cannot load spaCy pipeline" in capsys.readouterr().err


# --- validation -------------------------------------------------------------------------------

BAD_LINES = [
    pytest.param("{not json", "invalid JSON", id="not-json"),
    pytest.param('{"question": "q", "answer": "1", ', "invalid JSON", id="truncated-json"),
    pytest.param("[1, 2]", "expected an object with question, answer, type and response, found array", id="array"),
    pytest.param('"just a string"', "expected an object with question, answer, type and response, found string",
                 id="string"),
    pytest.param(line(question=_DROP), "missing 'question'", id="missing-question"),
    pytest.param(line(answer=_DROP), "missing 'answer'", id="missing-answer"),
    pytest.param(line(type=_DROP), "missing 'type'", id="missing-type"),
    pytest.param(line(response=_DROP), "missing 'response'", id="missing-response"),
    pytest.param(line(question=5), "question must be a string, found number", id="question-number"),
    pytest.param(line(question="  "), "empty question", id="question-empty"),
    pytest.param(line(answer=None), "missing 'answer' (use \"\" for an empty gold)", id="answer-null"),
    pytest.param(line(answer=True), "answer must be a string or a finite number, found boolean", id="answer-bool"),
    pytest.param(line(answer=float("nan")), "answer must be a string or a finite number, found number",
                 id="answer-nan"),
    pytest.param(line(answer=[386]), "answer must be a string or a finite number, found array", id="answer-array"),
    pytest.param(line(type="person"), "unknown type 'person' (expected one of name, numeric, date, rank, city)",
                 id="unknown-type"),
    pytest.param(line(type=["rank"]), "type must be a string, found array", id="type-array"),
    pytest.param(line(response=386), "response must be a string, found number", id="response-number"),
    pytest.param(line(response=None), "response is null but there is no 'error'", id="response-null"),
    pytest.param(line(response=None, error=""), "response is null but there is no 'error'",
                 id="response-null-empty-error"),
    pytest.param(line(error=500), "error must be a string or null, found number", id="error-number"),
    pytest.param(line(domain=3), "domain must be a string, found number", id="domain-number"),
    pytest.param(line(group=True), "group must be a string or an integer label, found boolean", id="group-bool"),
    pytest.param(line(group=1.5), "group must be a string or an integer label, found number", id="group-float"),
    pytest.param(line(group=""), "empty group label", id="group-empty"),
    pytest.param(line(finish_reason=3), "finish_reason must be the provider's word (stop, length, ...) or null, "
                 "found number", id="finish-number"),
    pytest.param(line(finish_reason="cut\x1b[2J"), "finish_reason must be the provider's word (stop, length, ...) "
                 "or null, found 'cut\\x1b[2J'", id="finish-escape"),
    pytest.param(line(finish_reason=""), "finish_reason must be the provider's word", id="finish-empty"),
    pytest.param(line(id=7), "id must be a string, found number", id="id-number"),
    pytest.param(line(id="nobel-q0001-p00"), "id 'nobel-q0001-p00' is not a prompt id of domain 'custom' "
                 "(custom-q<group>-p<paraphrase>, as the plugin's report names a row)", id="id-other-domain"),
    pytest.param(line(id="custom-line3"), "id 'custom-line3' is not a prompt id of domain 'custom'", id="id-line"),
    pytest.param(line(id="custom-q0001-p00", group="custom-q0002"),
                 "group 'custom-q0002' is not the group of id 'custom-q0001-p00' ('custom-q0001'): give that group "
                 "or none", id="id-other-group"),
]


@pytest.mark.parametrize(("bad", "message"), BAD_LINES)
def test_every_bad_line_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str], scoring_forbidden: None,
                             bad: str, message: str) -> None:
    # A good line, a blank line (skipped, but it still counts for line numbers), then the bad one.
    path = write(tmp_path, line(), "", bad, line())
    assert main(["score", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:3: {message}" in err
    assert f"{path}:1:" not in err and f"{path}:4:" not in err
    assert "nothing was scored" in err


def test_several_problems_on_one_line_are_all_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       scoring_forbidden: None) -> None:
    path = write(tmp_path, json.dumps({"answer": True, "type": "person"}))
    assert main(["score", str(path)]) == 2
    err = capsys.readouterr().err
    for message in ("missing 'question'", "missing 'response'", "answer must be a string or a finite number",
                    "unknown type 'person'"):
        assert f"  - {path}:1: {message}" in err


def test_all_bad_lines_reported_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        scoring_forbidden: None) -> None:
    path = write(tmp_path, line(), "oops", line(), line(type="person"), "", line(answer=None), "[]", line())
    assert main(["score", str(path)]) == 2
    err_lines = capsys.readouterr().err.splitlines()
    # The one printer of every problem list (errors.format_problems).
    assert err_lines[0] == "defan: nothing was scored: 4 problems:"
    assert all(ln.startswith(f"  - {path}:") for ln in err_lines[1:])
    assert [p[len(f"  - {path}:"):].split(":")[0] for p in err_lines[1:]] == ["2", "4", "6", "7"]


def test_a_long_problem_list_is_capped(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       scoring_forbidden: None) -> None:
    path = write(tmp_path, *[line(type="person")] * 60)
    assert main(["score", str(path)]) == 2
    err_lines = capsys.readouterr().err.splitlines()
    assert err_lines[0] == "defan: nothing was scored: 60 problems:"
    assert len(err_lines) == 1 + 50 + 1
    assert err_lines[50].startswith(f"  - {path}:50: unknown type")
    assert err_lines[-1] == "  ... and 10 more"


def test_invalid_utf8_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], scoring_forbidden: None) -> None:
    path = tmp_path / "responses.jsonl"
    path.write_bytes(line().encode() + b"\n" + b'{"question": "caf\xe9"}\n')
    assert main(["score", str(path)]) == 2
    assert f"{path}:2: not valid UTF-8" in capsys.readouterr().err


def test_group_with_two_types(tmp_path: Path, capsys: pytest.CaptureFixture[str], scoring_forbidden: None) -> None:
    path = write(tmp_path, line(group="g1"), line(group="g1", type="numeric"))
    assert main(["score", str(path)]) == 2
    assert f"{path}:2: type 'numeric' differs from 'rank' of the same group on line 1" in capsys.readouterr().err


# --- plumbing, with the fake scorer -----------------------------------------------------------


def test_rows_groups_and_scorer_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       fake_scoring: type[FakeScorer]) -> None:
    path = tmp_path / "responses.jsonl"
    content = "\n".join([
        "\ufeff" + line(group="kobe"),                       # 1: BOM before the first object
        line(group="kobe", response="334"),                  # 2
        "",                                                  # 3: blank
        line(group="kobe", response=_DROP, error="HTTP 500"),  # 4: failed call, no response
        line(domain="math", question="2+2?", answer="4", type="numeric", response="4"),  # 5
        line(domain="math", question="3+3?", answer="6", type="numeric", response="5", group=7),  # 6
        line(response="386", error=""),                      # 7: "" means no error
        line(response=None, error="timeout"),                # 8
    ]) + "\r\n"
    path.write_text(content, encoding="utf-8")
    out = tmp_path / "report.json"
    assert main(["score", str(path), "--json", str(out)]) == 0
    captured = capsys.readouterr()

    (scorer,) = fake_scoring.made
    assert scorer.nlp == "auto"
    assert [it.error for it in scorer.items] == [None, None, "HTTP 500", None, None, None, "timeout"]
    assert scorer.items[2].response is None
    assert scorer.items[3] == FakeInput("2+2?", "4", "numeric", "4", None, "math")
    assert [it.domain for it in scorer.items] == ["custom"] * 3 + ["math"] * 2 + ["custom"] * 2

    report = json.loads(out.read_text(encoding="utf-8"))
    assert list(report) == REPORT_KEYS
    assert validate_report(report) == []
    assert report["meta"]["producer"] == "defan score" and report["meta"]["model"] is None
    rows = report["rows"]
    assert [r["id"] for r in rows] == ["custom-line1", "custom-line2", "custom-line4", "math-line5",
                                       "math-line6", "custom-line7", "custom-line8"]
    assert [r["group"] for r in rows] == ["custom-group-kobe", "custom-group-kobe", "custom-group-kobe", "math-line5",
                                          "math-group-7", "custom-line7", "custom-line8"]
    for r in rows:
        assert set(r) == ROW_KEYS
    assert {k: rows[0][k] for k in ("id", "domain", "group", "type", "claim", "aligned", "correct", "error")} == {
        "id": "custom-line1", "domain": "custom", "group": "custom-group-kobe", "type": "rank",
        "claim": "386", "aligned": True, "correct": True, "error": None}
    assert rows[2]["error"] == "HTTP 500" and rows[2]["claim"] is None
    assert list(report["domains"]) == ["math", "custom"]
    custom = report["domains"]["custom"]
    # kobe's two answered paraphrases count for RC, its errored one left out (issue 25).
    assert (custom["n"], custom["errors"], custom["groups"], custom["rc_groups"]) == (5, 2, 3, 1)

    # The table goes to stdout, the note about the report to stderr.
    assert captured.out.startswith("domain")
    assert "overall (pooled)" in captured.out
    assert f"wrote {out}" in captured.err


def test_the_plugins_id_group_and_finish_reason_are_kept(tmp_path: Path, fake_scoring: type[FakeScorer]) -> None:
    # A line with the plugin's id keeps it, and the id's group (so the two reports pair row by
    # row); the finish reason goes to the scorer and into the row (null: unknown, no key).
    path = write(
        tmp_path,
        line(domain="qs_ranking", id="qs_ranking-q0042-p03", finish_reason="length", response="Kobe is ranked 38"),
        line(domain="qs_ranking", id="qs_ranking-q0042-p04", group="qs_ranking-q0042", finish_reason="stop"),
        line(domain="qs_ranking", id="qs_ranking-q0043-p00", finish_reason=None),
        line(group="kobe"),
    )
    out = tmp_path / "report.json"
    assert main(["score", str(path), "--json", str(out)]) == 0
    (scorer,) = fake_scoring.made
    assert [it.finish_reason for it in scorer.items] == ["length", "stop", None, None]
    report = json.loads(out.read_text(encoding="utf-8"))
    assert validate_report(report) == []
    rows = report["rows"]
    assert [(r["id"], r["group"], r.get("finish_reason")) for r in rows] == [
        ("qs_ranking-q0042-p03", "qs_ranking-q0042", "length"), ("qs_ranking-q0042-p04", "qs_ranking-q0042", "stop"),
        ("qs_ranking-q0043-p00", "qs_ranking-q0043", None), ("custom-line4", "custom-group-kobe", None)]
    assert "finish_reason" not in rows[2] and set(rows[0]) == ROW_KEYS | {"finish_reason"}
    assert report["domains"]["qs_ranking"]["groups"] == 2


def test_an_id_given_twice_is_a_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        scoring_forbidden: None) -> None:
    path = write(tmp_path, line(id="custom-q0001-p00"), line(id="custom-q0001-p01"), line(id="custom-q0001-p00"))
    assert main(["score", str(path)]) == 2
    assert f"{path}:3: id 'custom-q0001-p00' is given twice (first on line 1)" in capsys.readouterr().err


def test_numeric_gold_type_case_and_empty_domain(tmp_path: Path, fake_scoring: type[FakeScorer]) -> None:
    # The dataset's record validator: a JSON number gold keeps its written form (42.850 keeps
    # three decimals, which the numeric tolerance depends on), a type is matched without case
    # or surrounding space, and an empty domain is the default one.
    path = write(
        tmp_path,
        '{"question": "How long was the fair in days?", "answer": 42.850, "type": "numeric", "response": "42.85"}',
        '{"question": "How many kites flew?", "answer": 7, "type": " Numeric ", "response": "7", "domain": ""}',
    )
    out = tmp_path / "report.json"
    assert main(["score", str(path), "--json", str(out)]) == 0
    (scorer,) = fake_scoring.made
    assert [(it.answer, it.type, it.domain) for it in scorer.items] == [
        ("42.850", "numeric", "custom"), ("7", "numeric", "custom")]
    assert type(scorer.items[0].answer) is str
    assert [r["id"] for r in json.loads(out.read_text(encoding="utf-8"))["rows"]] == ["custom-line1", "custom-line2"]


@pytest.mark.parametrize(("option", "expected"), [(["--spacy-model", "none"], None),
                                                  (["--spacy-model", "en_core_web_sm"], "en_core_web_sm"),
                                                  (["--spacy-model", "/models/ner"], "/models/ner"),
                                                  ([], "auto")])
def test_spacy_model_option(tmp_path: Path, fake_scoring: type[FakeScorer], option: list[str],
                            expected: str | None) -> None:
    assert main(["score", str(write(tmp_path, line())), *option]) == 0
    assert fake_scoring.made[0].nlp == expected


def test_without_json_only_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     fake_scoring: type[FakeScorer]) -> None:
    assert main(["score", str(write(tmp_path, line(), line(response="334")))]) == 0
    captured = capsys.readouterr()
    assert "custom" in captured.out
    assert captured.err.startswith("defan: scorer: ") and captured.err.count("\n") == 1  # which scorer ran, nothing else
    assert sorted(p.name for p in tmp_path.iterdir()) == ["responses.jsonl"]


# --- end to end, with the real scorer ---------------------------------------------------------


def kobe_lines() -> list[str]:
    q = "What was the position of Kobe University in the QS rankings for 2022?"
    return [
        line(question=q, group=1, response="386"),
        line(question=q, group=1, response="386th"),
        line(question=q, group=1, response="601-650"),
        line(question=q, group=2, response="386"),
        line(question=q, group=2, response="386"),
        line(question=q, group=3, response=None, error="HTTP 429"),
        line(domain="math", question="What is 17 + 25?", answer="42", type="numeric", response="42"),
        line(domain="math", question="What is 6 * 7?", answer="42", type="numeric", response="41"),
    ]


def check_report(report: dict[str, Any]) -> None:
    rows = report["rows"]
    assert len(rows) == 8
    for r in rows:
        assert set(r) == ROW_KEYS
    assert [r["correct"] for r in rows] == [True, True, False, True, True, None, True, False]
    assert [r["aligned"] for r in rows] == [True, True, True, True, True, None, True, True]
    assert rows[5]["error"] == "HTTP 429" and rows[5]["claim"] is None
    assert all(r["error"] is None for i, r in enumerate(rows) if i != 5)
    assert [r["group"] for r in rows[:6]] == ["custom-group-1"] * 3 + ["custom-group-2"] * 2 + ["custom-group-3"]

    custom = report["domains"]["custom"]
    assert (custom["n"], custom["scored"], custom["errors"], custom["groups"]) == (6, 5, 1, 3)
    assert custom["fch"] == pytest.approx(1 / 5)
    assert custom["pmh"] == 0.0
    # group 1 (386, 386th, 601-650) is inconsistent, group 2 consistent, group 3 errored.
    assert (custom["rc_groups"], custom["consistent_groups"], custom["rc"]) == (2, 1, 0.5)
    math_ = report["domains"]["math"]
    assert math_["rc"] is None and math_["fch"] == 0.5
    assert list(report["domains"]) == ["math", "custom"]
    assert report["overall"]["pooled"]["fch"] == pytest.approx(2 / 7)
    assert report["overall"]["mean"]["fch"] == pytest.approx((1 / 5 + 1 / 2) / 2)


def test_end_to_end_in_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, *kobe_lines())
    out = tmp_path / "report.json"
    assert main(["score", str(path), "--json", str(out), "--spacy-model", "none"]) == 0
    check_report(json.loads(out.read_text(encoding="utf-8")))
    table = capsys.readouterr().out
    assert "math" in table and "custom" in table and "overall (mean of domains)" in table


def test_console_script(tmp_path: Path) -> None:
    assert DEFAN.exists(), f"console script not installed at {DEFAN}"
    path = write(tmp_path, *kobe_lines())
    out = tmp_path / "report.json"
    proc = subprocess.run([str(DEFAN), "score", str(path), "--json", str(out), "--spacy-model", "none"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("domain")
    check_report(json.loads(out.read_text(encoding="utf-8")))

    bad = write(tmp_path, line(), line(type="person"), name="bad.jsonl")
    proc = subprocess.run([str(DEFAN), "score", str(bad)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert f"{bad}:2: unknown type" in proc.stderr
    assert proc.stdout == ""

    proc = subprocess.run([str(DEFAN), "score", str(tmp_path / "missing.jsonl")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert "no such file" in proc.stderr


def test_end_to_end_numeric_gold_keeps_its_decimals(tmp_path: Path) -> None:
    path = DATA / "responses.jsonl"
    out = tmp_path / "report.json"
    assert main(["score", str(path), "--json", str(out), "--spacy-model", "none"]) == 0
    rows = json.loads(out.read_text(encoding="utf-8"))["rows"]
    assert [(r["id"], r["group"], r["error"]) for r in rows] == [
        ("fairs-line1", "fairs-group-1", None), ("fairs-line2", "fairs-group-1", None),
        ("custom-line3", "custom-line3", "HTTP 503")]
    # The gold 42.850 has three decimals: 42.85 is the same number, 42.9 is not.
    assert [r["correct"] for r in rows] == [True, False, None]


def test_real_scorer_with_a_pipeline_that_is_not_installed(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, line())
    assert main(["score", str(path), "--spacy-model", "no_such_pipeline_xyz"]) == 2
    captured = capsys.readouterr()
    assert "--spacy-model no_such_pipeline_xyz:" in captured.err
    assert captured.out == ""


# --- nothing lost, nothing leaked, nothing hangs (issue 8) ----------------------------------------


@pytest.mark.parametrize("name", ["conftest.py", "thresholds.toml", "pyproject.toml", "set.csv"])
def test_json_never_replaces_a_project_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            scoring_forbidden: None, name: str) -> None:
    path = write(tmp_path, line())
    target = tmp_path / name
    target.write_text("precious\n", encoding="utf-8")
    for extra in ([], ["--force"]):
        assert main(["score", str(path), "--json", str(target), *extra]) == 2
        assert f"defan: error: --json {target}: is a " in capsys.readouterr().err
    assert target.read_text(encoding="utf-8") == "precious\n"


def test_json_replaces_another_file_only_with_force(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    fake_scoring: type[FakeScorer]) -> None:
    path = write(tmp_path, line())
    target = tmp_path / "notes.json"
    target.write_text('{"mine": 1}', encoding="utf-8")
    assert main(["score", str(path), "--json", str(target)]) == 2
    err = capsys.readouterr().err
    assert f"--json {target}: exists and is not a defan report; choose another name or pass --force" in err
    assert FakeScorer.made == []  # refused before anything was scored
    assert target.read_text(encoding="utf-8") == '{"mine": 1}'
    assert main(["score", str(path), "--json", str(target), "--force"]) == 0
    assert json.loads(target.read_text(encoding="utf-8"))["rows"][0]["id"] == "custom-line1"
    assert main(["score", str(path), "--json", str(target)]) == 0  # now an earlier report: replaced


def test_json_through_a_symlink_writes_its_target(tmp_path: Path, fake_scoring: type[FakeScorer]) -> None:
    path = write(tmp_path, line())
    real = tmp_path / "real.json"
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert main(["score", str(path), "--json", str(link)]) == 0
    assert link.is_symlink() and json.loads(real.read_text(encoding="utf-8"))["rows"]


def test_json_to_a_full_device_is_one_message(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              fake_scoring: type[FakeScorer]) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    path = write(tmp_path, line())
    assert main(["score", str(path), "--json", "/dev/full"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == "defan: error: --json /dev/full: cannot write: No space left on device"
    assert len(err.splitlines()) == 2  # the scorer line, then this one message
    assert Path("/dev/full").is_char_device()


def test_json_to_dev_stdout_follows_the_table(tmp_path: Path) -> None:
    path = write(tmp_path, *kobe_lines())
    proc = subprocess.run([str(DEFAN), "score", str(path), "--json", "/dev/stdout", "--spacy-model", "none"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    table, _, report = proc.stdout.partition("{")
    assert table.startswith("domain") and json.loads("{" + report)["rows"]


def test_a_long_output_name_is_written(tmp_path: Path, fake_scoring: type[FakeScorer]) -> None:
    path = write(tmp_path, line())
    out = tmp_path / ("r" * 245 + ".json")  # 250 characters: valid, and once refused
    assert main(["score", str(path), "--json", str(out)]) == 0
    assert json.loads(out.read_text(encoding="utf-8"))["rows"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, out.name])


def test_a_lone_surrogate_is_replaced_and_noted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # json.dumps writes the escape "\ud800", which json.loads turns into a lone surrogate.
    bad = json.loads(line(response="Kobe is 386", domain="dom"))
    bad.update(response="Kobe is 386\ud800", domain="dom\udfff")
    path = write(tmp_path, line(), json.dumps(bad))  # ensure_ascii: the escapes, as a file has them
    out = tmp_path / "report.json"
    assert main(["score", str(path), "--json", str(out), "--spacy-model", "none"]) == 0
    rows = json.loads(out.read_text(encoding="utf-8"))["rows"]
    assert [r["domain"] for r in rows] == ["custom", "dom\ufffd"] and rows[1]["claim"] == "386"
    err = capsys.readouterr().err
    assert f"defan: note: {path}:2: domain, response: invalid characters (lone surrogates) replaced by U+FFFD" in err


def test_deep_nesting_and_huge_numbers_are_bad_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     scoring_forbidden: None) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    huge = line()[:-1] + ', "extra": ' + "9" * 5000 + "}"
    path = write(tmp_path, line(), deep, huge, '{"a": ' + deep + "}")
    assert main(["score", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2: invalid JSON: arrays or objects nested too deeply" in err
    assert f"{path}:3: invalid JSON: Exceeds the limit (4300 digits)" in err
    assert f"{path}:4: invalid JSON: arrays or objects nested too deeply" in err
    assert "Traceback" not in err


def test_huge_numbers_in_responses_are_scored(tmp_path: Path) -> None:
    path = write(tmp_path, line(response="9" * 5000), line(type="numeric", answer="42", response="1/" + "9" * 5000),
                 line(type="numeric", answer="42", response="1" + "0" * 4400 + ".5"))
    out = tmp_path / "report.json"
    assert main(["score", str(path), "--json", str(out), "--spacy-model", "none"]) == 0
    assert [r["correct"] for r in json.loads(out.read_text(encoding="utf-8"))["rows"]] == [False, False, False]


@pytest.mark.parametrize(("text", "looks"), [
    ("questions,answer,type\n" + "Who won?,Ada,name\n" * 500, "a CSV file"),
    ("question\tanswer\ttype\nWho?\tAda\tname\n", "a CSV file"),
    ("[\n" + ",\n".join([line()] * 300) + "\n]\n", "a JSON array"),
])
def test_a_csv_or_json_file_is_one_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        scoring_forbidden: None, text: str, looks: str) -> None:
    path = tmp_path / "responses.jsonl"
    path.write_text(text, encoding="utf-8")
    assert main(["score", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"defan: nothing was scored: 1 problem:\n  - {path}:1: this looks like {looks}; defan score reads JSONL "
        "(one JSON object per line)\n"
    )


def test_a_broken_first_line_is_still_one_problem_among_others(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              scoring_forbidden: None) -> None:
    path = write(tmp_path, '{"question": "Who?", ', line(type="person"))
    assert main(["score", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:1: invalid JSON" in err and f"{path}:2: unknown type 'person'" in err


def test_an_unparseable_gold_is_a_bad_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           scoring_forbidden: None) -> None:
    path = write(tmp_path, line(), line(answer="unranked"), line(type="date", answer="soon"),
                 line(type="numeric", answer="None"), line(type="name", answer="anything at all"))
    assert main(["score", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2: answer 'unranked' holds no rank value" in err
    assert f"{path}:3: answer 'soon' holds no date value" in err
    assert f"{path}:4:" not in err and f"{path}:5:" not in err  # "None": nothing awarded; names: any text


def test_ctrl_c_is_one_line_and_exit_130(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         fake_scoring: type[FakeScorer], monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(self: FakeScorer, items: list[FakeInput]) -> list[FakeScore]:
        raise KeyboardInterrupt

    monkeypatch.setattr(FakeScorer, "score_many", interrupted)
    path = write(tmp_path, line())
    out = tmp_path / "report.json"
    assert main(["score", str(path), "--json", str(out)]) == 130
    assert capsys.readouterr().err.endswith("\ndefan: interrupted\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["responses.jsonl"]  # no partial output


def test_ctrl_c_in_a_real_process(tmp_path: Path) -> None:
    import signal

    # About ten seconds of scoring (long name responses), interrupted once it has begun: the
    # command says which scorer runs just before it scores.
    slow = line(type="name", answer="Ada Lovelace", response="Ada Lovelace said " * 2000)
    path = write(tmp_path, *[slow] * 100)
    proc = subprocess.Popen([str(DEFAN), "score", str(path), "--spacy-model", "none", "--json",
                             str(tmp_path / "r.json")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    before = []
    for said in proc.stderr:
        before.append(said)
        if said.startswith("defan: scorer:"):
            break
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    err = "".join(before) + err
    if proc.returncode == 0:
        pytest.skip("scoring finished before the signal")
    assert proc.returncode == 130 and err.strip().splitlines()[-1] == "defan: interrupted", err
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["responses.jsonl"]


def test_escape_codes_in_problems_are_printed_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      scoring_forbidden: None) -> None:
    path = write(tmp_path, line(domain="\x1b[2J\x1b]0;pwned\x07"))
    assert main(["score", str(path)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    assert "holds control characters" in err


def test_defan_score_says_which_scorer_ran(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "r.jsonl"
    data.write_text('{"question": "Who?", "answer": "Ada Lovelace", "type": "name", "response": "Ada Lovelace"}\n')
    out = tmp_path / "out.json"
    assert main(["score", str(data), "--spacy-model", "none", "--json", str(out)]) == 0
    assert "defan: scorer: rules only" in capsys.readouterr().err
    scorer = json.loads(out.read_text())["meta"]["scorer"]
    assert {k: scorer[k] for k in ("ner", "pipeline", "version")} == {"ner": False, "pipeline": None, "version": None}


# --- defan --version, gate, compare ----------------------------------------------------------


def _report_file(tmp_path: Path, name: str, wrong_groups: int, n_groups: int = 40, **meta: Any) -> Path:
    """A saved report as the plugin writes it: 5 paraphrases a group, the first ``wrong_groups``
    groups answered wrong."""
    rows = []
    for g in range(n_groups):
        for p in range(5):
            wrong = g < wrong_groups
            rows.append({
                "id": f"notes-q{g:04d}-p{p:02d}", "domain": "notes", "group": f"notes-q{g:04d}", "type": "name",
                "question": f"Who wrote note {g} ({p})?", "answer": "Ada Lovelace",
                "response": "Charles Babbage" if wrong else "Ada Lovelace",
                "claim": "Charles Babbage" if wrong else "Ada Lovelace",
                "aligned": True, "correct": not wrong, "error": None, "error_kind": None,
            })
    m = {
        "defan_pytest": "0.1.0", "producer": "pytest", "created": "2026-11-30T00:00:00Z",
        "model": {"name": "my-rag", "kind": "callable", "version": "1", "source": "x"},
        "dataset": {"source": "notes.jsonl", "identity": "file:abc", "commit": None, "sha256": {}},
        "scorer": scorer_meta(None).to_json(),
        "selection": {"domains": ["notes"], "sample": None, "seed": 0, "selected": len(rows), "ran": len(rows),
                      "narrowed": False, "shard": None},
        "calls": {"prompts": len(rows), "errors": 0, "error_kinds": {}}, "durations": {"total": 1.0},
    }
    m.update(meta)
    path = tmp_path / name
    records = [ScoredRecord.from_json(r) for r in rows]
    report = build_report(records, summarize(records), ReportMeta.from_json(m))
    path.write_text(json.dumps(report.to_json()), encoding="utf-8")
    return path


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    import defan_pytest

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"defan-pytest {defan_pytest.__version__}"


def test_gate_rejudges_a_saved_report(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    report = _report_file(tmp_path, "r.json", wrong_groups=10)  # FCH 0.25
    limits = tmp_path / "limits.toml"
    limits.write_text("[defaults]\nmax_fch = 0.2\nmin_samples = 5\n", encoding="utf-8")
    assert main(["gate", str(report), "--thresholds", str(limits)]) == 1
    out = capsys.readouterr().out
    assert "FAILED gate[notes]: notes: FCH 0.25 > max_fch 0.20" in out and "defan: level gate fail" in out
    limits.write_text("[defaults]\nmax_fch = 0.3\nmin_samples = 5\n", encoding="utf-8")
    assert main(["gate", str(report), "--thresholds", str(limits), "--json", str(tmp_path / "judged.json")]) == 0
    judged = json.loads((tmp_path / "judged.json").read_text(encoding="utf-8"))
    assert validate_report(judged) == [] and judged["meta"]["producer"] == "defan gate"
    assert judged["gate_status"] == "pass"
    # No thresholds at all: nothing judged, exit 0.
    assert main(["gate", str(report)]) == 0


def test_gate_with_a_baseline_and_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    old = _report_file(tmp_path, "old.json", wrong_groups=4)
    new = _report_file(tmp_path, "new.json", wrong_groups=16)  # FCH 0.10 -> 0.40 on the same prompts
    (tmp_path / "thresholds.toml").write_text("[defaults]\nmax_fch = 0.9\n", encoding="utf-8")
    assert main(["gate", str(old), "--baseline", str(old)]) == 0  # identical runs never regress
    capsys.readouterr()
    assert main(["gate", str(new), "--baseline", str(old)]) == 1
    out = capsys.readouterr().out
    assert "REGRESSED notes: FCH 0.100 -> 0.400 (+0.300" in out
    assert "right before, wrong now (FCH): 60 prompts" in out
    assert "defan: level gate pass, regression gate fail" in out
    assert main(["compare", str(old), str(new)]) == 1  # REGRESSED is a failure, as in defan gate
    out = capsys.readouterr().out
    assert "notes: FCH 0.100 -> 0.400" in out and "notes-q0004-p00" in out
    assert main(["compare", str(old), str(old)]) == 0


def test_compare_fails_when_it_could_judge_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 33: four groups in common (min_samples is 5) and a 100-point rise: nothing is judged,
    # which --defan-baseline refuses before any call; defan compare exited 0 ("not judged").
    monkeypatch.chdir(tmp_path)
    old = _report_file(tmp_path, "old.json", wrong_groups=0, n_groups=4)
    new = _report_file(tmp_path, "new.json", wrong_groups=4, n_groups=4)
    assert main(["compare", str(old), str(new)]) == 1
    assert "regression gate skipped: the baseline: this run shares 20 prompts in 4 paraphrase groups" in capsys.readouterr().out


def test_gate_refuses_another_data_set_unless_forced(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    old = _report_file(tmp_path, "old.json", wrong_groups=4,
                       dataset={"source": "other.jsonl", "identity": "file:zzz", "commit": None, "sha256": {}})
    new = _report_file(tmp_path, "new.json", wrong_groups=4)
    assert main(["gate", str(new), "--baseline", str(old)]) == 2
    assert "made on another data set" in capsys.readouterr().err
    assert main(["gate", str(new), "--baseline", str(old), "--baseline-force"]) == 0
    assert main(["compare", str(old), str(new)]) == 2
    assert main(["gate", str(tmp_path / "missing.json")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_compare_refuses_a_model_of_new_that_old_has_no_run_of() -> None:
    """Issue 34 (10): `defan compare` passed ("not compared", exit 0) when OLD, a report of
    several models, held no run of a model of NEW; --defan-baseline refuses the same case."""
    import argparse
    import io
    from types import SimpleNamespace

    from defan_pytest.cli import compare
    from defan_pytest.records.models import ModelsReport

    def run(name: str) -> Any:
        return SimpleNamespace(meta=SimpleNamespace(model_name=name))

    old = ModelsReport(runs=(run("steady"), run("worse")))  # type: ignore[arg-type]
    new = ModelsReport(runs=(run("steady"), run("new")))  # type: ignore[arg-type]
    args = argparse.Namespace(old=Path("old.json"), new=Path("new.json"), thresholds=None, baseline_force=False)
    with pytest.raises(compare.UsageError, match=r"OLD old.json: no run of model 'new' of NEW \(it holds steady, worse\)"):
        compare._compare_models(args, old, new, io.StringIO())
