"""Report formats (defan_pytest.report.formats): the built-in ones, the two functions every front
end writes through, and a format added from outside the package (one module, one option),
written by a real pytest session and by the ``defan`` commands."""
from __future__ import annotations

import json
import os
import types
from pathlib import Path
from typing import Any, Iterator, List

import pytest

from defan_pytest.cli import main
from defan_pytest.records import Report
from defan_pytest.registry import RegistryError
from defan_pytest.report import formats, writer
from defan_pytest.report.writer import OutputError

from test_html_report import make_report

#: A format of another package: the rows as CSV, asked for by its own option.
TOY_FORMAT = '''
from defan_pytest.report import formats
from defan_pytest.verdicts import outcome_of


class Csv(formats.FileFormat):
    name = "csv"
    option = "csv"
    help = "write the prompts' verdicts as CSV to this file"

    def render(self, report, context):
        return "id,domain,verdict\\n" + "".join(f"{r.id},{r.domain},{outcome_of(r).name}\\n" for r in report.rows)


CSV = Csv()
'''


def _toy_module(folder: Path) -> None:
    """The toy format as an installed package: its module and a dist-info naming it as a
    ``format.csv`` entry point of the ``defan_pytest`` group."""
    (folder / "toy_csv_format.py").write_text(TOY_FORMAT, encoding="utf-8")
    info = folder / "toy_csv_format-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-csv-format\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[defan_pytest]\nformat.csv = toy_csv_format:CSV\n", encoding="utf-8")


@pytest.fixture
def toy_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[formats.ReportFormat]:
    """The toy format registered in this process (and removed afterwards)."""
    _toy_module(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    import toy_csv_format

    saved = formats.FORMATS.snapshot()
    yield formats.FORMATS.register(toy_csv_format.CSV)
    formats.FORMATS.restore(saved)


def _report() -> Report:
    return Report.from_json(make_report())


def _out(path: Path, flag: str = "--out") -> formats.Output:
    return formats.Output(flag, str(path), path)


# -- the built-in formats ------------------------------------------------------------------------


def test_the_built_in_formats_and_their_options() -> None:
    assert formats.BUILT_IN == ("json", "html", "github")
    assert [(f.name, f.option) for f in formats.FORMATS][:3] == [("json", "report"), ("html", "html"), ("github", None)]
    assert formats.added_formats() == []


def test_the_json_report_round_trips_as_utf8(tmp_path: Path) -> None:
    report = _report()
    out = tmp_path / "r.json"
    assert formats.FORMATS.get("json").write(report, _out(out), formats.Context()) == out
    raw = out.read_bytes()
    assert raw.startswith(b'{\n "schema": "defan-pytest-report"') and raw.endswith(b"\n")
    assert json.loads(raw) == report.to_json() and Report.from_json(json.loads(raw)) == report
    assert os.listdir(tmp_path) == ["r.json"]  # no temporary file left behind


def test_a_lone_surrogate_does_not_cost_the_json_report(tmp_path: Path) -> None:
    data = make_report()
    data["rows"][0]["response"] = "Par\ud800is"
    out = tmp_path / "r.json"
    formats.FORMATS.get("json").write(Report.from_json(data), _out(out), formats.Context())
    assert json.loads(out.read_text(encoding="utf-8"))["rows"][0]["response"] == "Par\ufffdis"


def test_a_failed_write_keeps_the_old_file(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    out.write_text('{"old": true}', encoding="utf-8")
    broken = Report.from_json(dict(make_report(), usage={"x": object()}))
    with pytest.raises(TypeError):
        formats.FORMATS.get("json").write(broken, _out(out), formats.Context(force=True))
    assert out.read_text(encoding="utf-8") == '{"old": true}' and os.listdir(tmp_path) == ["r.json"]


def test_check_all_finds_every_problem_before_anything_runs(tmp_path: Path) -> None:
    mine = tmp_path / "notes.txt"
    mine.write_text("mine", encoding="utf-8")
    outputs = {"json": _out(tmp_path / "r.json", "--defan-report"), "html": _out(tmp_path / "r.json", "--defan-html")}
    context = formats.Context(force_hint="--defan-force-output")
    assert formats.check_all(outputs, context) == [
        f"--defan-html {tmp_path / 'r.json'}: the same file as --defan-report; give each its own"
    ]
    problems = formats.check_all({"json": _out(mine, "-o"), "html": _out(tmp_path / "no" / "r.html", "--html")}, context)
    assert problems[0].startswith(f"-o {mine}: exists and is not a defan report") and "--defan-force-output" in problems[0]
    assert problems[1].startswith("--html ") and "does not exist" in problems[1]
    assert formats.check_all({"json": _out(mine)}, formats.Context(inputs=(("the data set", mine),), force=True))


def test_write_all_writes_every_format_and_says_what_failed(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    lines: List[str] = []
    context = formats.Context(environ={"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_ACTIONS": "true"},
                              annotate=lines.append, annotation_lines={"sports/rc": 4})
    outputs = {"json": _out(Path("/dev/full") if os.path.exists("/dev/full") else tmp_path / "no" / "r.json", "-o"),
               "html": _out(tmp_path / "r.html", "--html")}
    written = formats.write_all(_report(), outputs, context)
    assert set(written.paths) == {"html", "github"} and written.paths["github"] == summary
    assert len(written.problems) == 1 and written.problems[0].startswith("-o ")
    assert writer.is_report(tmp_path / "r.html") and summary.read_text(encoding="utf-8").startswith("## ")
    assert lines and all(line.startswith("::error ") for line in lines)
    # Outside GitHub Actions (no environment given), the github format writes nothing.
    assert formats.write_all(_report(), {}, formats.Context()).paths == {}


def test_the_registry_takes_report_formats_only() -> None:
    with pytest.raises(RegistryError, match="not a report format"):
        formats.FORMATS.register(types.SimpleNamespace(name="csv", option="csv"))  # type: ignore[arg-type]
    with pytest.raises(RegistryError, match="already registered"):
        formats.FORMATS.register(formats.FORMATS.get("json"))
    with pytest.raises(RegistryError, match="built in"):
        formats.FORMATS.unregister("html")
    with pytest.raises(OutputError):
        formats.FORMATS.get("html").write(_report(), _out(Path("/")), formats.Context())


# -- a format from outside the package -----------------------------------------------------------


def test_an_added_format_is_written_by_the_commands(
    toy_format: formats.ReportFormat, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS"):
        monkeypatch.delenv(name, raising=False)
    assert [f.name for f in formats.added_formats()] == ["csv"]
    report = tmp_path / "r.json"
    report.write_text(json.dumps(make_report()), encoding="utf-8")
    assert main(["gate", str(report), "--csv", "gate.csv"]) in (0, 1)
    rows = (tmp_path / "gate.csv").read_text(encoding="utf-8").splitlines()
    assert rows[0] == "id,domain,verdict" and len(rows) == 1 + len(make_report()["rows"])
    assert rows[1].startswith("sports-q0000-p00,sports,")
    # Checked before anything is read, like every output.
    assert main(["gate", str(report), "--csv", str(tmp_path / "no" / "x.csv")]) == 2
    assert "--csv " in capsys.readouterr().err
    assert "--csv PATH" in _help(["merge", "--help"], capsys) and "--csv PATH" in _help(["score", "--help"], capsys)


def _help(argv: List[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 0
    return capsys.readouterr().out


CONFTEST = '''
import defan_pytest

@defan_pytest.model("echo", version="1")
def echo(prompt):
    return "Ada Lovelace" if "even" in prompt else "Charles Babbage"
'''


def test_an_added_format_is_written_by_a_pytest_session(pytester: pytest.Pytester) -> None:
    # Installed the way a package installs it (an entry point), in a fresh process.
    _toy_module(pytester.path)
    pytester.makeconftest(CONFTEST)
    rows = [{"question": f"Who wrote note {g} ({'even' if g % 2 == 0 else 'odd'}, take {p})?", "answer": "Ada Lovelace",
             "type": "name", "domain": "notes", "group": f"g{g}"} for g in range(4) for p in range(3)]
    pytester.path.joinpath("toy.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    args = ["--defan-model=echo", "--defan-dataset=toy.jsonl", "--defan-spacy-model=none", "--defan-cache=off",
            "-p", "no:cacheprovider", "-p", "no:randomly"]
    assert "--defan-csv=VALUE" in pytester.runpytest_subprocess("--help").stdout.str()
    bad = pytester.runpytest_subprocess(*args, "--defan-csv=missing/rows.csv")
    assert bad.ret == 4 and "--defan-csv " in bad.stderr.str() + bad.stdout.str()  # before any call
    result = pytester.runpytest_subprocess(*args, "--defan-csv=rows.csv", "--defan-report=r.json")
    assert result.ret == 0, result.stdout.lines[-20:]
    lines = pytester.path.joinpath("rows.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "id,domain,verdict" and len(lines) == 13
    assert "notes-q0000-p00,notes,right" in lines and "notes-q0001-p00,notes,hallucinated" in lines
    assert len(json.loads(pytester.path.joinpath("r.json").read_text(encoding="utf-8"))["rows"]) == 12
