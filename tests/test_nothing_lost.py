"""Issue 8, through the plugin: nothing lost, nothing leaked, nothing hangs.

A bad ``--defan-report`` path, an option given empty, a thresholds file that sets nothing, a
misspelt model table: each is a usage error (exit 4) before the model is asked anything.  Text
with invalid code points or escape codes from a data file neither crashes the run nor reaches
the terminal raw; a report that cannot be written at the end is one message and a failed run.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import defan_pytest
from defan_pytest.calls import models
from defan_pytest.run import Run
from defan_pytest.settings import ConfigError, Settings

ROWS = [
    {"question": f"How many moons has planet {g}?", "answer": str(g + 1), "type": "numeric", "domain": "sky",
     "group": f"g{g}"}
    for g in range(3)
]

# A model that notes every prompt it is asked in DEFAN_TEST_CALLS: "asked nothing" is checkable.
CONFTEST = '''
import os
import defan_pytest

@defan_pytest.model("counter", version="1")
def counter(prompt):
    with open(os.environ["DEFAN_TEST_CALLS"], "a", encoding="utf-8") as f:
        f.write("x\\n")
    return "3"
'''


def _rows_file(folder: Path, rows: list[dict[str, str]] = ROWS, name: str = "set.jsonl") -> Path:
    path = folder / name
    # ensure_ascii (the default): a lone surrogate is written as its \\ud800 escape, as JSON has it.
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def session(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.Pytester:
    calls = tmp_path / "calls.txt"
    monkeypatch.setenv("DEFAN_TEST_CALLS", str(calls))
    pytester.makeconftest(CONFTEST)
    _rows_file(pytester.path)
    return pytester


def _asked(tmp_path: Path) -> int:
    calls = tmp_path / "calls.txt"
    return len(calls.read_text(encoding="utf-8").splitlines()) if calls.exists() else 0


BASE = ("--defan-model=counter", "--defan-dataset=set.jsonl", "--defan-cache=off", "--defan-spacy-model=none",
        "-p", "no:cacheprovider")


# --- usage errors before any call -----------------------------------------------------------------


@pytest.mark.parametrize(("args", "message"), [
    (["--defan-report=conftest.py"], "--defan-report */conftest.py: is a .py file, not a report*"),
    (["--defan-report=set.jsonl"], "--defan-report */set.jsonl: would overwrite the dataset*"),
    (["--defan-report=thresholds.toml"], "--defan-report */thresholds.toml: would overwrite the thresholds file*"),
    (["--defan-report=notes.json"], "--defan-report */notes.json: exists and is not a defan report; choose another "
                                    "name or pass --defan-force-output"),
    (["--defan-report=missing/r.json"], "*--defan-report */missing/r.json: directory * does not exist"),
    (["--defan-domain="], "*--defan-domain: given an empty value (an unset variable?)*"),
    (["--defan-thresholds=empty.toml"], "*empty.toml: sets no limit, so the gate would judge nothing*"),
])
def test_a_bad_configuration_is_a_usage_error_before_any_call(
    session: pytest.Pytester, tmp_path: Path, args: list[str], message: str
) -> None:
    (session.path / "thresholds.toml").write_text("[defaults]\nmax_fch = 0.9\n", encoding="utf-8")
    (session.path / "notes.json").write_text('{"mine": 1}', encoding="utf-8")
    (session.path / "empty.toml").write_text("", encoding="utf-8")
    before = {p.name: p.read_bytes() for p in session.path.iterdir() if p.is_file()}
    result = session.runpytest(*BASE, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.lines[-10:] + result.stderr.lines[-10:]
    result.stderr.fnmatch_lines([f"*{message}*"])
    assert "Traceback" not in result.stderr.str() and "INTERNALERROR" not in result.stdout.str()
    assert _asked(tmp_path) == 0
    assert {p.name: p.read_bytes() for p in session.path.iterdir() if p.is_file()} == before


@pytest.mark.parametrize("model", ["", " "])
def test_an_empty_model_is_a_usage_error_not_an_inactive_plugin(session: pytest.Pytester, model: str) -> None:
    result = session.runpytest(f"--defan-model={model}", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--defan-model: given an empty value (an unset variable?)*"])


def test_a_misspelt_model_table_is_a_usage_error(session: pytest.Pytester, tmp_path: Path) -> None:
    (session.path / "thresholds.toml").write_text(
        '[defaults]\nmax_fch = 0.9\n\n[models."countre".defaults]\nmax_fch = 0.1\n', encoding="utf-8"
    )
    result = session.runpytest(*BASE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*thresholds.toml: models.countre: no model of that name is registered; "
                                 "did you mean 'counter'?*"])
    assert _asked(tmp_path) == 0


def test_forced_and_earlier_reports_are_replaced(session: pytest.Pytester, tmp_path: Path) -> None:
    (session.path / "notes.json").write_text('{"mine": 1}', encoding="utf-8")
    result = session.runpytest(*BASE, "--defan-report=notes.json", "--defan-force-output")
    assert result.ret == 0, result.stdout.lines[-15:]
    assert json.loads((session.path / "notes.json").read_text(encoding="utf-8"))["meta"]["model"]["name"] == "counter"
    again = session.runpytest(*BASE, "--defan-report=notes.json")  # an earlier report now: replaced
    assert again.ret == 0


# --- text from the data file ---------------------------------------------------------------------


def test_a_lone_surrogate_in_the_data_does_not_cost_the_report(session: pytest.Pytester, tmp_path: Path) -> None:
    rows = [dict(r, question=r["question"] + "\ud800") for r in ROWS]
    _rows_file(session.path, rows)
    result = session.runpytest(*BASE, "--defan-report=r.json")
    assert result.ret == 0, result.stdout.lines[-15:]
    report = json.loads((session.path / "r.json").read_text(encoding="utf-8"))
    assert len(report["rows"]) == 3
    result.stdout.fnmatch_lines(["*note: *set.jsonl:1: question: invalid characters (lone surrogates) replaced by U+FFFD"])


def test_escape_codes_in_a_question_are_printed_escaped(session: pytest.Pytester) -> None:
    rows = [dict(r, question="\x1b]0;pwned\x07\x1b[2J" + r["question"]) for r in ROWS]
    _rows_file(session.path, rows)
    result = session.runpytest(*BASE, "--defan-strict", "-v")
    out = result.stdout.str()
    assert "(counted in FCH" in out and "question: \\x1b]0;pwned\\x07\\x1b[2J" in out
    assert "\x1b]0" not in out and "\x07" not in out and "\x1b[2J" not in out


# --- a report that cannot be written at the end ----------------------------------------------------


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_a_failed_report_write_is_one_message_and_a_failed_run(session: pytest.Pytester) -> None:
    result = session.runpytest(*BASE, "--defan-report=/dev/full")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*defan-pytest: the report was not written: --defan-report /dev/full: cannot write: No space left on device"
    ])
    assert "INTERNALERROR" not in result.stdout.str()
    assert os.path.exists("/dev/full") and not os.path.isfile("/dev/full")


# --- the same through Run, without pytest -----------------------------------------------------------


@pytest.fixture
def registered() -> object:
    @defan_pytest.model("lost-echo", version="1")
    def echo(prompt: str) -> str:
        return "3"

    yield echo
    models.unregister("lost-echo")


def _settings(root: Path, **values: object) -> Settings:
    base = {"model": "lost-echo", "dataset": "set.jsonl", "cache": "off", "spacy-model": "none"}
    base.update(values)  # type: ignore[arg-type]
    return Settings.from_values(base, root=root, invocation_dir=root)


def test_run_configure_reports_the_output_with_every_other_problem(tmp_path: Path, registered: object) -> None:
    _rows_file(tmp_path)
    (tmp_path / "conftest.py").write_text("", encoding="utf-8")
    (tmp_path / "thresholds.toml").write_text('[defaults]\nmax_fch = 0.5\n[models."lost-ecko".defaults]\nmax_fch = 0.1\n')
    with pytest.raises(ConfigError) as info:
        Run.configure(_settings(tmp_path, report="conftest.py"))
    text = "\n".join(info.value.problems)
    assert f"--defan-report {tmp_path}/conftest.py: is a .py file, not a report" in text
    assert "models.lost-ecko: no model of that name is registered; did you mean 'lost-echo'?" in text


def test_run_write_report_keeps_the_error_for_the_front_end(tmp_path: Path, registered: object) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    _rows_file(tmp_path)
    run = Run.configure(_settings(tmp_path, report="/dev/full"))
    run.summary = {"domains": {}, "overall": {}}
    run.write_report()
    assert run.report_error == "--defan-report /dev/full: cannot write: No space left on device"
    assert run.report_path is None
