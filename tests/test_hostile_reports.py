"""Hostile saved reports and input files (issue 20): every one is refused by the one reader
(:mod:`defan_pytest.dataset.reader`) and the report loader, with one message and exit 2 (the
plugin: a usage error, exit 4), before anything is written or any model is called.

Each ``defan`` command is run in-process (``main``); ``--defan-baseline`` and ``/dev/zero`` in
real sessions and processes.  "Nothing half written": no ``--json``/``-o`` file and no GitHub
step summary (``GITHUB_STEP_SUMMARY`` points at a file of the test's own).
"""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Dict, List

import pytest

from defan_pytest.cli import main

from test_html_report import THRESHOLDS, make_report

OUTPUTS = ("out.json", "out.html", "summary.md")


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder to work in, with a good report (``good.json``) and a GitHub step summary file
    that must stay unwritten whenever the input is bad."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    (tmp_path / "good.json").write_text(json.dumps(make_report()), encoding="utf-8")
    return tmp_path


def fed_fifo(path: Path, data: bytes = b'{"schema": "defan-pytest-report"}') -> Callable[[], None]:
    """Make ``path`` a FIFO that a thread writes ``data`` to once someone opens it (so that code
    which reads FIFOs gets an answer instead of hanging); returns the clean-up, which releases
    the thread if nobody ever read."""
    os.mkfifo(path)

    def feed() -> None:
        try:
            with open(path, "wb") as fh:
                fh.write(data)
        except OSError:  # the reader closed at once (refused it): nothing to say
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()

    def release() -> None:
        if writer.is_alive():
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # lets the writer's open return
            writer.join(5)
            os.close(fd)

    return release


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    """A FIFO with a writer waiting (see :func:`fed_fifo`)."""
    path = tmp_path / "pipe.json"
    release = fed_fifo(path)
    yield path
    release()


def refused(capsys: pytest.CaptureFixture[str], argv: List[str], *words: str) -> str:
    """``defan argv`` exits 2 with one message holding ``words``, and writes nothing."""
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 2, (out[-2000:], err[-2000:])
    for word in words:
        assert word in err, err[-3000:]
    assert "Traceback" not in err
    for name in OUTPUTS:
        assert not Path(name).exists(), f"{name} was written for bad input"
    return err


def _text(data: Any) -> str:
    return json.dumps(data)  # NaN and Infinity as Python writes them (JSON has neither)


def _deep() -> str:
    return '{"schema": "defan-pytest-report", "schema_version": 1, "x": ' + "[" * 100_000 + "]" * 100_000 + "}"


def _change(edit: Callable[[Dict[str, Any]], None], base: Callable[[], Dict[str, Any]] = make_report) -> str:
    data = base()
    edit(data)
    return _text(data)


def _with_regression() -> Dict[str, Any]:
    return make_report(baseline=make_report(shift=1))


def _public_type_mixed(r: Dict[str, Any]) -> None:
    r["meta"]["dataset"]["source"] = "public"
    r["rows"][1]["type"] = "date"  # the first group's second paraphrase


#: Hostile reports: (text, what the message says).
HOSTILE = {
    "nested 100,000 deep": (_deep, "nested too deeply"),
    "NaN in a figure": (lambda: _change(lambda r: r["overall"]["mean"].update(fch=float("nan"))), "NaN"),
    "Infinity in a limit": (lambda: _change(lambda r: r["thresholds"]["limits"]["sports"].update(max_fch=float("inf"))),
                            "Infinity"),
    "NaN in usage": (lambda: _change(lambda r: r.update(usage={"cost": float("nan")})), "NaN"),
    "-Infinity in a duration": (lambda: _change(lambda r: r["meta"]["durations"].update(total=float("-inf"))),
                                "Infinity"),
    "1e400 in a duration": (lambda: _change(lambda r: r["meta"]["durations"].update(total=1.5)).replace(
        '"total": 1.5', '"total": 1e400'), "1e400 is too large"),
    "a duplicate row": (lambda: _change(lambda r: r["rows"].append(copy.deepcopy(r["rows"][0]))),
                        "id 'sports-q0000-p00' is given twice"),
    "a null regression scope": (lambda: _change(lambda r: r["regression"]["scopes"].update(sports=None), _with_regression),
                                "regression/scopes/sports"),
    "a null flipped prompt": (lambda: _change(lambda r: r["regression"]["flipped"].append(None), _with_regression),
                              "regression/flipped/"),
    "a row of another domain": (lambda: _change(lambda r: r["rows"][0].update(domain="nobel")),
                                "id 'sports-q0000-p00' is not an id of its domain 'nobel'"),
    "a row of another group": (lambda: _change(lambda r: r["rows"][0].update(group="sports-q0003")),
                               "is of group 'sports-q0000'"),
    "two types in a public group": (lambda: _change(_public_type_mixed), "differs from 'name' of its group"),
    "a key given twice": (lambda: _text(make_report()).replace('"gate_status":', '"rows": [], "gate_status":', 1),
                          "the key 'rows' is given twice"),
    "a merged block without its files": (lambda: _change(lambda r: r["meta"].update(merged={})), "meta/merged"),
}

#: Every command that reads a report, with the hostile file in each place it can be.
COMMANDS = {
    "gate": lambda f: ["gate", f, "--json", "out.json"],
    "gate --baseline": lambda f: ["gate", "good.json", "--baseline", f, "--json", "out.json"],
    "compare NEW": lambda f: ["compare", "good.json", f],
    "compare OLD": lambda f: ["compare", f, "good.json"],
    "html": lambda f: ["html", f, "-o", "out.html"],
    "html --baseline": lambda f: ["html", "good.json", "--baseline", f, "-o", "out.html"],
    "merge": lambda f: ["merge", f, "-o", "out.json"],
}


#: The report each case starts from, by case (the plain report unless listed).
BASES: Dict[str, Callable[[], Dict[str, Any]]] = {"a null regression scope": _with_regression,
                                                 "a null flipped prompt": _with_regression}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_report_is_refused_by_every_command(here: Path, capsys: pytest.CaptureFixture[str], case: str,
                                                     command: str) -> None:
    # The report the case starts from passes (as a public one too: its rows are of DefAn's
    # domains): what is refused is what the case changes.
    base = BASES.get(case, make_report)()
    if case == "two types in a public group":
        base["meta"]["dataset"]["source"] = "public"
    (here / "bad.json").write_text(_text(base), encoding="utf-8")
    # (merge refuses one whole report as not a shard: the case must be refused before that.)
    assert main(COMMANDS[command]("bad.json")) in ((2,) if command == "merge" else (0, 1))
    for name in OUTPUTS:
        Path(name).unlink(missing_ok=True)
    capsys.readouterr()
    make, message = HOSTILE[case]
    (here / "bad.json").write_text(make(), encoding="utf-8")
    err = refused(capsys, COMMANDS[command]("bad.json"), "bad.json", message)
    assert err.startswith("defan: error: "), err


def test_defan_history_says_each_hostile_report_once_and_shows_the_others(here: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    # Every hostile report at once in the folder a history reads, beside two good ones (and a
    # FIFO, a symbolic link loop and a dangling link): one message naming each bad file, the
    # good ones drawn (their texts inert), exit 0.
    folder = here / "artefacts"
    folder.mkdir()
    (folder / "good.json").write_text(_text(make_report()), encoding="utf-8")
    later = make_report(shift=1)
    later["meta"]["created"] = "2030-01-02T00:00:00Z"
    (folder / "later.json").write_text(_text(later), encoding="utf-8")
    bad = {}
    for i, (make, message) in enumerate(HOSTILE.values()):
        name = f"hostile-{i:02d}.json"
        (folder / name).write_text(make(), encoding="utf-8")
        bad[name] = message
    _loop(folder, "loop.json")
    (folder / "gone.json").symlink_to(folder / "moved-away.json")
    release = fed_fifo(folder / "pipe.json")
    try:
        assert main(["history", str(folder), "--html", "out.html", "--summary", "summary.md"]) == 0
    finally:
        release()
    out, err = capsys.readouterr()
    said = [line for line in err.splitlines() if line.startswith("defan: history: not read: ")]
    for name, message in {**bad, "loop.json": "a symbolic link loop", "gone.json": "does not exist",
                          "pipe.json": "is a FIFO (a named pipe), not a file"}.items():
        mine = [line for line in said if f"/{name}" in line]
        assert len(mine) == 1 and message in mine[0], (name, message, said)
    assert len(said) == len(bad) + 3 and "Traceback" not in err
    assert out.startswith("history: 2 reports, 2030-01-01T00:00:00Z to 2030-01-02T00:00:00Z")
    page = Path("out.html").read_text(encoding="utf-8")
    data = page.split('id="defan-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in data and "<script>window" not in page  # inert: every "<" of the data escaped
    assert len(json.loads(data)["skipped"]) == len(bad) + 3 and len(json.loads(data)["points"]) == 2
    summary = Path("summary.md").read_text(encoding="utf-8")
    assert "<script>" not in summary and summary.count("\n- report ") == len(bad) + 3


# -- files that are not files ------------------------------------------------------------------


def _loop(folder: Path, name: str) -> Path:
    a, b = folder / name, folder / f"{name}.other"
    a.symlink_to(b.name)
    b.symlink_to(a.name)
    return a


def test_a_symlink_loop_says_it_is_one(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    loop = str(_loop(here, "loop.json"))
    for argv in (["gate", loop], ["html", loop, "-o", "out.html"], ["compare", "good.json", loop],
                 ["merge", loop], ["gate", "good.json", "--baseline", loop], ["gate", "good.json", "--thresholds", loop],
                 ["score", str(_loop(here, "loop.jsonl"))]):
        refused(capsys, argv, "a symbolic link loop")


def test_a_symlink_loop_as_thresholds_toml_here_is_said(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Not passed over as if there were no thresholds.toml here.
    _loop(here, "thresholds.toml")
    refused(capsys, ["gate", "good.json", "--json", "out.json"], "thresholds.toml: a symbolic link loop")


def test_a_dangling_link_names_its_target(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (here / "gone.json").symlink_to(here / "moved-away.json")
    refused(capsys, ["gate", "gone.json"], f"a symbolic link to {here / 'moved-away.json'}, which does not exist")


@pytest.mark.parametrize("argv", [
    ["gate", "{}"], ["html", "{}", "-o", "out.html"], ["compare", "good.json", "{}"], ["merge", "{}"],
    ["gate", "good.json", "--thresholds", "{}"], ["score", "{}"],
])
def test_a_fifo_is_refused_not_waited_for(here: Path, fifo: Path, capsys: pytest.CaptureFixture[str],
                                         argv: List[str]) -> None:
    refused(capsys, [a.replace("{}", str(fifo)) for a in argv], "is a FIFO (a named pipe), not a file")


def test_an_oversized_report_is_refused_unread(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = here / "big.json"
    with open(big, "wb") as fh:  # sparse: 600 MiB said, nothing on disk, nothing read
        fh.truncate(600 * 1024 * 1024)
    refused(capsys, ["gate", str(big)], "larger than 512 MiB")


@pytest.mark.skipif(not Path("/dev/zero").exists() or sys.platform == "win32", reason="needs /dev/zero")
def test_dev_zero_is_refused_in_a_real_process(tmp_path: Path) -> None:
    # Under a memory limit, so that a reader that reads it (the old one did, until memory ran
    # out) fails this test with a MemoryError instead of taking the machine down.
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    (tmp_path / "zero.json").symlink_to("/dev/zero")
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    code = "import sys; from defan_pytest.cli import main; sys.exit(main())"
    for argv in (["gate", "/dev/zero"], ["gate", str(tmp_path / "zero.json")], ["score", "/dev/zero"]):
        proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env,
                              timeout=300, preexec_fn=limit, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert "is a device, not a file" in proc.stderr and "Traceback" not in proc.stderr
        assert not (tmp_path / "summary.md").exists()


# -- thresholds.source is information ------------------------------------------------------------


def test_thresholds_source_in_a_report_is_never_read(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    secret = here.parent / f"{here.name}-secret.toml"
    secret.write_text("[defaults]\nmax_fch = 0.123456\nmax_pmh = 0.654321\n", encoding="utf-8")
    report = make_report()
    report["thresholds"]["source"] = str(secret)
    (here / "r.json").write_text(_text(report), encoding="utf-8")
    rc = main(["gate", "r.json", "--json", "out.json"])
    out, err = capsys.readouterr()
    assert "0.123456" not in out + err and "0.654321" not in out + err
    # Judged by the limits the report records: the verdicts it had.
    written = json.loads(Path("out.json").read_text(encoding="utf-8"))
    assert written["thresholds"]["limits"] == report["thresholds"]["limits"]
    assert [(v["scope"], v["metric"], v["status"]) for v in written["gate"]] == \
        [(v["scope"], v["metric"], v["status"]) for v in report["gate"]]
    assert rc == (1 if report["gate_status"] == "fail" else 0)
    assert written["thresholds"]["source"] is None  # no file judged it


def test_recorded_limits_are_checked_as_a_file_is(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = make_report()
    report["thresholds"]["limits"]["sports"]["max_fch"] = 7
    (here / "r.json").write_text(_text(report), encoding="utf-8")
    refused(capsys, ["gate", "r.json", "--json", "out.json"], "report r.json (the limits it records)",
            "domains.sports.max_fch: 7 is outside [0, 1]")


# -- --defan-baseline: refused before any model is called ----------------------------------------

CONFTEST = '''
import os
import defan_pytest

@defan_pytest.model("counter", version="1")
def counter(prompt):
    with open(os.environ["CALLS_FILE"], "a") as fh:
        fh.write("call\\n")
    return "42"
'''


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CALLS_FILE", str(pytester.path / "calls.txt"))
    pytester.makeconftest(CONFTEST)
    rows = [{"question": f"How many moons has planet {g} (take {p})?", "answer": str(g), "type": "numeric",
             "domain": "moons", "group": f"g{g}"} for g in range(4) for p in range(3)]
    pytester.path.joinpath("toy.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return pytester


def _baseline_of(project: pytest.Pytester) -> Dict[str, Any]:
    result = project.runpytest("--defan-model=counter", "--defan-dataset=toy.jsonl", "--defan-spacy-model=none",
                               "--defan-report=base.json", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.lines[-20:]
    (project.path / "calls.txt").unlink()
    return json.loads((project.path / "base.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
@pytest.mark.parametrize("case", ["a duplicate row", "nested 100,000 deep", "NaN in a figure"])
def test_a_hostile_baseline_is_a_usage_error_before_any_call(project: pytest.Pytester, case: str,
                                                            xdist: List[str]) -> None:
    base = _baseline_of(project)
    if case == "a duplicate row":
        base["rows"].append(dict(base["rows"][0]))
        text, message = _text(base), "is given twice"
    elif case == "NaN in a figure":
        base["overall"]["mean"]["fch"] = float("nan")
        text, message = _text(base), "NaN is not a JSON number"
    else:
        text, message = _deep(), "nested too deeply"
    project.path.joinpath("bad.json").write_text(text, encoding="utf-8")
    result = project.runpytest("--defan-model=counter", "--defan-dataset=toy.jsonl", "--defan-spacy-model=none",
                               "--defan-baseline=bad.json", "--defan-report=new.json", "-p", "no:cacheprovider", *xdist)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.lines[-30:] + result.stderr.lines[-30:]
    err = "\n".join(result.stderr.lines)
    assert "--defan-baseline" in err and message in err, err[-3000:]
    assert "INTERNALERROR" not in err + "\n".join(result.stdout.lines)
    assert not (project.path / "calls.txt").exists(), "the model was called"
    assert not (project.path / "new.json").exists()
