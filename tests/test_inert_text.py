"""Text from outside is inert in every output (issue 20, point 4).

A data set's questions and golds, the model's answers, a baseline's metadata and a report
judged again may hold newlines, GitHub workflow commands (``::error::``, ``::add-mask::``, the
legacy ``##[error]``), terminal escapes (ESC, BEL), Markdown images and HTML.  None of it may
act: no line of a terminal or CI log starts with a workflow command but our own annotations, no
ESC or BEL byte is printed, the step summary shows no image, no HTML and no broken table row,
the HTML report inserts the data as text, and the step summary is never written over an input
of the run (nor waits on a FIFO).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from defan_pytest.dataset import DatasetError
from defan_pytest.dataset.user import load_user_set
from defan_pytest.report import github
from defan_pytest.report.writer import OutputError
from defan_pytest.safetext import inline, markdown_cell, printable

DEFAN = Path(sys.executable).with_name("defan")

#: Everything that must stay inert: workflow commands at a line's start (after a newline, a CR,
#: indented), the legacy form anywhere, escape sequences, BEL, a Markdown image, HTML, a table
#: cell's end, a code span.
HOSTILE = ("\n::error::pwned\n::add-mask::hunter2\n  ::warning::indented\r::error::after-cr\n##[error]legacy "
           "\x1b[31mRED\x1b[0m\x07\x1b]0;title\x07 ![i](http://evil.example/phone.png) "
           "<img src=x onerror=alert(1)> | cell | `tick`\u2028::error::after-ls")

CONFTEST = '''
import os
import defan_pytest

HOSTILE = {hostile!r}

@defan_pytest.model("hostile", version=os.environ.get("FLIP", "good"))
def hostile(prompt):
    if os.environ.get("FLIP") == "bad":
        return "Nobody Special" + HOSTILE
    return "Ada Lovelace"
'''.format(hostile=HOSTILE)

#: Two domains, one whose name would start a line of the gate table with a workflow command.
DOMAINS = ("::warning::dom <img src=d> |![d](http://evil.example/d.png)", "plain")
ROWS = [
    {"question": f"Who won prize {g} {HOSTILE} (form {p})?", "answer": "Ada Lovelace", "type": "name",
     "domain": domain, "group": f"g{g}"}
    for domain in DOMAINS for g in range(6) for p in range(3)
]
ARGS = ["--defan-model=hostile", "--defan-dataset=toy.jsonl", "--defan-spacy-model=none", "--defan-retries=0",
        "-p", "no:cacheprovider", "-p", "no:randomly"]
THRESHOLDS = "[defaults]\nmax_fch = 0.1\n\n[regression]\nmax_fch_rise = 0.02\n"
#: Serial with pytest-github-actions-annotate-failures, which annotates the failed tests; under -n 2
#: without it, so with our own ``::error`` annotations.
XDIST = pytest.mark.parametrize("xdist", [[], ["-n", "2", "-p", "no:pytest_github_actions_annotate_failures"]],
                                ids=["serial", "n2"])

# An annotation of ours (or of pytest-github-actions-annotate-failures): ``::error file=F,line=N,
# title=T::message`` (or ``::warning``) at the line's very start, with properties escaped (no ``:`` in them) so that the
# command ends where its writer says.  The attack's commands have no properties.
_OUR_ANNOTATION = re.compile(r"::(?:error|warning) [a-z]+=[^:\n]*::")
# A ``|`` that ends a Markdown table cell: one not escaped by a backslash (itself unescaped).
_CELL_END = re.compile(r"(?<!\\)(?:\\\\)*\|")


def assert_inert_log(text: str, annotations: bool = False) -> None:
    """No ESC, BEL or CR; no line (as the runner reads lines) starts with ``::`` but our own
    annotations (``annotations``: there must be some), and no legacy ``##[`` anywhere."""
    for byte in ("\x1b", "\x07", "\r", "\u2028"):
        assert byte not in text, (byte, text[max(0, text.find(byte) - 200):text.find(byte) + 80])
    assert "##[" not in text, text[text.find("##[") - 200:text.find("##[") + 80]
    ours = 0
    for line in text.split("\n"):
        if line.lstrip().startswith("::"):
            assert _OUR_ANNOTATION.match(line), line  # at the start: not indented
            ours += 1
    if annotations:
        assert ours, text[-3000:]


def assert_inert_markdown(text: str) -> None:
    """No control character, no image, no HTML tag, and every row of a table has its header's
    cells."""
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]", text), repr(text)
    assert "![" not in text, text
    assert not re.search(r"<[A-Za-z/!?]", text), text
    header_cells = None
    for line in text.split("\n"):
        if line.startswith("|"):
            cells = len(_CELL_END.findall(line))
            if header_cells is None:
                header_cells = cells
            assert cells == header_cells, line
        else:
            header_cells = None


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: List[Tuple[str, Dict[str, Any]]] = []

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Any]]) -> None:
        self.tags.append((tag, dict(attrs)))


def assert_inert_html(text: str) -> None:
    """The page holds no element the data made (its ``<img src=x onerror=...>``, its links and
    images to evil.example), and no raw ESC/BEL."""
    parser = _Tags()
    parser.feed(text)
    made = [t for t in parser.tags if "onerror" in t[1] or t[1].get("src") in ("x", "d")
            or "evil" in str(t[1].get("href", "")) + str(t[1].get("src", ""))]
    assert not made, made
    assert "\x1b" not in text and "\x07" not in text


def defan(*args: str, cwd: Path, env: Dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(DEFAN), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "FLIP"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.path.joinpath("toy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    pytester.path.joinpath("thresholds.toml").write_text(THRESHOLDS, encoding="utf-8")
    return pytester


def hostile_baseline(project: pytest.Pytester) -> Path:
    """A baseline of the good model, its metadata and answers made hostile."""
    result = project.runpytest(*ARGS, "--defan-report=base.json")
    assert result.ret == 0, result.stdout.lines[-30:]
    path = project.path / "base.json"
    base = json.loads(path.read_text(encoding="utf-8"))
    base["meta"]["created"] = "2026-01-01" + HOSTILE
    base["meta"]["model"]["name"] = "good" + HOSTILE
    for row in base["rows"]:
        row["response"] = "Ada Lovelace" + HOSTILE
    path.write_text(json.dumps(base), encoding="utf-8")
    return path


@pytest.mark.slow
@XDIST
def test_every_output_of_a_hostile_run_is_inert(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: List[str]
) -> None:
    hostile_baseline(project)
    monkeypatch.setenv("FLIP", "bad")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(project.path / "step.md"))
    result = project.runpytest(*ARGS, "-v", "--defan-strict", "--junitxml=junit.xml", "--defan-report=new.json",
                               "--defan-html=new.html", "--defan-baseline=base.json", "--html=pytest.html",
                               "--self-contained-html", *xdist)
    assert result.ret == 1, result.stdout.lines[-30:]
    out = result.stdout.str()
    report = json.loads((project.path / "new.json").read_text(encoding="utf-8"))
    assert report["regression"]["status"] == "fail" and report["gate_status"] == "fail"
    assert "pwned" in out and "hunter2" in out  # the data is shown ...
    # ... and inert (pytest-github-actions-annotate-failures prints its annotations to stderr)
    assert_inert_log(out + "\n" + result.stderr.str(), annotations=True)

    step = (project.path / "step.md").read_text(encoding="utf-8")
    assert "pwned" in step
    assert_inert_markdown(step)

    junit = (project.path / "junit.xml").read_bytes()
    assert b"\x1b" not in junit and b"\x07" not in junit
    ET.fromstring(junit)  # well-formed
    assert_inert_html((project.path / "new.html").read_text(encoding="utf-8"))
    assert_inert_html((project.path / "pytest.html").read_text(encoding="utf-8"))

    # The same reports through the commands: defan compare, and defan gate --baseline in GitHub Actions.
    env = dict(os.environ, GITHUB_STEP_SUMMARY=str(project.path / "step-cli.md"))
    compared = defan("compare", "base.json", "new.json", cwd=project.path, env=env)
    assert compared.returncode == 1, compared.stderr
    assert "pwned" in compared.stdout
    assert_inert_log(compared.stdout)
    assert_inert_log(compared.stderr)
    gated = defan("gate", "new.json", "--baseline", "base.json", cwd=project.path, env=env)
    assert gated.returncode == 1, gated.stderr
    assert "pwned" in gated.stdout
    assert_inert_log(gated.stdout, annotations=True)
    assert_inert_log(gated.stderr)
    assert_inert_markdown((project.path / "step-cli.md").read_text(encoding="utf-8"))


def hostile_report(tmp_path: Path) -> Path:
    """A saved report (of ``defan score``) whose every text is made hostile afterwards: nothing
    in a report is checked like a data set's rows."""
    responses = tmp_path / "responses.jsonl"
    responses.write_text("".join(
        json.dumps({"question": f"Who won prize {g} (form {p})?", "answer": "Ada Lovelace", "type": "name",
                    "domain": "d", "group": f"g{g}", "response": "Bob"}) + "\n"
        for g in range(6) for p in range(3)), encoding="utf-8")
    path = tmp_path / "hostile.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    scored = defan("score", str(responses), "--json", str(path), "--spacy-model", "none", cwd=tmp_path, env=env)
    assert scored.returncode == 0, scored.stderr
    report = json.loads(path.read_text(encoding="utf-8"))
    dom = f"d\x1b[31m\n::error::dom{HOSTILE}"
    for row in report["rows"]:
        # The id names its domain (the reader checks that), so the domain's text is in it too.
        group = str(row.get("group"))
        row.update(id=dom + row["id"][1:], domain=dom, group=dom + group[1:] if group.startswith("d") else group, question=f"Who {HOSTILE} {row['question']}",
                   answer="Ada" + HOSTILE, response="Bob" + HOSTILE, claim="Bob" + HOSTILE)
    report["domains"] = {dom: figures for figures in report["domains"].values()}
    meta = report["meta"]
    meta["created"] = "2026" + HOSTILE
    meta["model"] = {"name": "m" + HOSTILE, "kind": "callable", "version": None, "source": "ab"}
    meta["selection"]["sample"] = "![x](http://evil.example/phone.png) <img src=x>" + HOSTILE
    path.write_text(json.dumps(report), encoding="utf-8")
    return path


def test_a_hostile_report_judged_again_is_inert(tmp_path: Path) -> None:
    """defan gate (its table, its messages, its annotations and the step summary) and defan
    compare of a report whose domain names, model name, date and sample hold the attack."""
    path = hostile_report(tmp_path)
    (tmp_path / "thresholds.toml").write_text(THRESHOLDS, encoding="utf-8")
    env = dict(os.environ, GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(tmp_path / "step.md"))
    gated = defan("gate", str(path), "--baseline", str(path), cwd=tmp_path, env=env)
    assert gated.returncode == 1, gated.stderr
    assert "pwned" in gated.stdout
    assert_inert_log(gated.stdout, annotations=True)
    assert_inert_log(gated.stderr)
    step = (tmp_path / "step.md").read_text(encoding="utf-8")
    assert "phone.png" in step
    assert_inert_markdown(step)
    bare = tmp_path / "bare"  # no thresholds file: the plain figures table
    bare.mkdir()
    plain = defan("gate", str(path), cwd=bare, env=env)
    assert "pwned" in plain.stdout and "FCH [95% CI]" in plain.stdout, plain.stdout
    assert_inert_log(plain.stdout)
    assert_inert_log(plain.stderr)
    compared = defan("compare", str(path), str(path), cwd=tmp_path, env=env)
    assert compared.returncode == 0, compared.stderr
    assert "pwned" in compared.stdout
    assert_inert_log(compared.stdout)
    assert_inert_log(compared.stderr)


# -- the functions ---------------------------------------------------------------------------------


def test_inline_collapses_lines_and_defuses_commands() -> None:
    assert inline("a\n::error::x\r\n\tb") == "a ::error::x b"
    assert inline("\n::add-mask::s") == r" \x3a:add-mask::s"
    assert inline("  ::error::s") == r"  \x3a:error::s"
    assert inline("x ##[error]y") == r"x ##\x5berror]y"
    assert inline("\x1b[31mred\x07") == r"\x1b[31mred\x07"
    assert inline("a\u2028::error::b") == "a ::error::b"
    assert inline(None) == "None" and inline(0.5) == "0.5"
    assert inline("Röntgen: 1::2") == "Röntgen: 1::2"  # a colon pair inside a value is just text


def test_printable_keeps_lines_and_defuses_each_one() -> None:
    assert printable("table\n::error::x\n  ::warning::y\nok ##[x]") == "table\n\\x3a:error::x\n  \\x3a:warning::y\nok ##\\x5bx]"
    assert printable("Röntgen\tline\n") == "Röntgen\tline\n"


def test_markdown_cell_escapes_everything_markdown_acts_on() -> None:
    cell = markdown_cell("![i](http://e/p.png) <img src=x> a|b `c` *d* _e_ $f$ \x1b[31m\x07 g\nh")
    assert "![" not in cell and "<" not in cell and "\x1b" not in cell and "\x07" not in cell and "\n" not in cell
    assert len(_CELL_END.findall(f"| {cell} |")) == 2
    assert cell.startswith(r"\!\[i\]") and r"a\|b" in cell and r"\`c\`" in cell and r"\$f\$" in cell
    assert markdown_cell("x" * 50, 10) == "x" * 9 + "…"


# -- domain names ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a\nb", "a\tb", "a\u2028b"], ids=["newline", "tab", "line-separator"])
def test_a_domain_name_with_a_control_character_is_refused_at_load(tmp_path: Path, name: str) -> None:
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps({"question": "Who?", "answer": "Ada", "type": "name", "domain": name}) + "\n",
                    encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_user_set(path)
    message = str(info.value)
    assert "domain" in message and "control characters" in message and "\n" not in message.split(": ", 1)[1].split(
        "holds")[0], message


def test_a_csv_domain_cell_with_a_newline_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "mine.csv"
    path.write_text('question,answer,type,domain\nWho?,Ada,name,"sports\n::error::x"\n', encoding="utf-8")
    with pytest.raises(DatasetError, match="holds control characters"):
        load_user_set(path)


def test_a_session_on_a_data_set_with_such_a_domain_stops_with_one_message(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.path.joinpath("toy.jsonl").write_text(
        json.dumps({"question": "Who?", "answer": "Ada", "type": "name", "domain": "a\n::error::x"}) + "\n",
        encoding="utf-8")
    result = pytester.runpytest(*ARGS)
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*domain 'a\\n::error::x' holds control characters*"])
    assert_inert_log(result.stdout.str() + result.stderr.str())


# -- the step summary goes through the safe writer -----------------------------------------------


def _with_timeout(fn: Any, seconds: float = 30) -> Any:
    """Run ``fn`` in a thread; fail (rather than hang the suite) when it does not return."""
    box: Dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the test
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    return thread.is_alive(), box


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_the_step_summary_refuses_a_fifo_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "summary"
    os.mkfifo(fifo)
    hung, box = _with_timeout(lambda: github.append_step_summary("## x\n", fifo))
    if hung:  # free the thread that waits for a reader
        with open(fifo, "rb"):
            pass
    assert not hung, "appending to a FIFO nobody reads hangs"
    assert isinstance(box.get("error"), OutputError) and "FIFO" in str(box["error"]), box


def test_the_step_summary_refuses_an_input_of_the_run(tmp_path: Path) -> None:
    thresholds = tmp_path / "thresholds.toml"
    thresholds.write_text(THRESHOLDS, encoding="utf-8")
    data = tmp_path / "data.txt"
    data.write_text("mine", encoding="utf-8")
    link = tmp_path / "link.md"
    link.symlink_to(data)
    for target in (thresholds, data, link):
        with pytest.raises(OutputError, match="input of the run"):
            github.append_step_summary("## x\n", target, inputs=[("the thresholds file", thresholds), ("the data set", data)])
    assert thresholds.read_text(encoding="utf-8") == THRESHOLDS and data.read_text(encoding="utf-8") == "mine"


def _judged_report(tmp_path: Path) -> Path:
    path = hostile_report(tmp_path)
    (tmp_path / "thresholds.toml").write_text(THRESHOLDS, encoding="utf-8")
    return path


@pytest.mark.parametrize("target", ["report", "thresholds"])
def test_defan_gate_never_appends_the_summary_to_what_it_judges(tmp_path: Path, target: str) -> None:
    path = _judged_report(tmp_path)
    summary = path if target == "report" else tmp_path / "thresholds.toml"
    before = summary.read_bytes()
    env = dict(os.environ, GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(summary))
    gated = defan("gate", str(path), "--thresholds", str(tmp_path / "thresholds.toml"), cwd=tmp_path, env=env)
    assert summary.read_bytes() == before
    json.loads(path.read_text(encoding="utf-8"))  # still a report
    assert gated.returncode == 2, gated.stderr
    assert "GITHUB_STEP_SUMMARY" in gated.stderr and "input of the run" in gated.stderr, gated.stderr
    assert "Traceback" not in gated.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_defan_gate_with_the_summary_on_a_fifo_ends(tmp_path: Path) -> None:
    path = _judged_report(tmp_path)
    fifo = tmp_path / "summary"
    os.mkfifo(fifo)
    env = dict(os.environ, GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(fifo))
    try:
        gated = subprocess.run([str(DEFAN), "gate", str(path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("defan gate hangs on a step summary FIFO nobody reads")
    assert gated.returncode == 2 and "FIFO" in gated.stderr, gated.stderr


@pytest.mark.parametrize("target", ["thresholds.toml", "toy.jsonl", "base.json"])
def test_a_session_never_appends_the_summary_to_its_inputs(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    result = project.runpytest(*ARGS, "--defan-report=base.json")
    assert result.ret == 0
    path = project.path / target
    before = path.read_bytes()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(path))
    result = project.runpytest(*ARGS, "--defan-baseline=base.json")
    assert path.read_bytes() == before
    assert result.ret == 1, result.stdout.lines[-20:]
    result.stdout.fnmatch_lines(["*GITHUB_STEP_SUMMARY*input of the run*"])
