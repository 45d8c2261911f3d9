"""DefAn sessions next to the pytest plugins real projects run (README, "Works with").

Each test runs a real pytest session in a subprocess with the plugin active, serial and under
``-n 2`` where the plugin supports xdist, and checks the exit code and the plugin's own output.
The project is self-contained: a user set of invented questions and a callable model, so these
tests need no public data.
"""
from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any, Dict, List

import pytest

from timings import untimed

CONFTEST = '''
import itertools, os, time
import defan_pytest

CALLS = itertools.count()

@defan_pytest.model("oracle", version="1")
def oracle(prompt):
    slow_after = int(os.environ.get("ORACLE_SLOW_AFTER", "-1"))
    if 0 <= slow_after <= next(CALLS):
        time.sleep(1)  # a model that turns slow
    if "group 4" in prompt:
        return "Nobody Special"                       # hallucinated (a bare, wrong name)
    if "group 5" in prompt:
        return "I think it was Ada Lovelace, not sure."  # right, but misaligned
    return "Ada Lovelace"
'''
ROWS = [
    {"question": f"Who won the prize of group {g} (form {p})?", "answer": "Ada Lovelace", "type": "name",
     "domain": "toy", "group": f"g{g}"}
    for g in range(6) for p in range(3)
]
# The breached key, max_fch of [domains.toy], is on line 5.
THRESHOLDS = "[defaults]\nmax_pmh = 0.5\n\n[domains.toy]\nmax_fch = 0.1\n"
BASE = ["--defan-model=oracle", "--defan-dataset=toy.jsonl", "--defan-spacy-model=none", "-p", "no:cacheprovider"]


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.path.joinpath("toy.jsonl").write_text("\n".join(json.dumps(r) for r in ROWS) + "\n")
    pytester.path.joinpath("thresholds.toml").write_text(THRESHOLDS)
    pytester.makeini("[pytest]\n")
    return pytester


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest_subprocess(*BASE, "--defan-cache=off", *args, timeout=240)


def no_internal_error(result: pytest.RunResult) -> None:
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text and "Traceback" not in text, text[-3000:]


XDIST = pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "n2"])


@pytest.mark.slow
@XDIST
def test_rerunfailures_never_reruns_verdicts_and_counts_each_prompt_once(project: pytest.Pytester, xdist: List[str]) -> None:
    result = run(project, "--reruns", "2", "--defan-strict", "--defan-report=r.json", *xdist)
    no_internal_error(result)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "rerun" not in result.parseoutcomes()
    assert result.parseoutcomes()["failed"] == 7  # 6 strict failures and the toy gate
    report = json.loads(project.path.joinpath("r.json").read_text())
    assert report["domains"]["toy"]["n"] == 18
    result.stdout.fnmatch_lines(["*FAILED defan::gate?toy? - toy: FCH 0.17 > max_fch 0.1*"])


@pytest.mark.slow
@XDIST
def test_html_lists_every_prompt_its_verdict_and_the_gate(project: pytest.Pytester, xdist: List[str]) -> None:
    result = run(project, "--html=report.html", "--self-contained-html", *xdist)
    no_internal_error(result)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    page = project.path.joinpath("report.html").read_text()
    blob = re.search(r'data-jsonblob="([^"]*)"', page)
    assert blob is not None
    data = json.loads(html.unescape(blob.group(1)))
    tests: Dict[str, Any] = data["tests"]
    assert len([k for k in tests if k.startswith("defan::toy-")]) == 18
    gate = tests["defan::gate[toy]"][0]
    assert gate["result"] == "Failed" and "FCH 0.17 &gt; max_fch 0.1" in gate["log"]
    assert tests["defan::gate[overall]"][0]["result"] == "Passed"
    row = " ".join(tests["defan::toy-q0004-p00"][0]["resultsTableRow"])
    assert "hallucinated: claim &#x27;Nobody Special&#x27;, gold &#x27;Ada Lovelace&#x27;" in row
    assert "claim:    &#x27;Nobody Special&#x27;" in tests["defan::toy-q0004-p00"][0]["log"]
    assert "DefAn" in page


@pytest.mark.slow
@XDIST
def test_allure_results_have_status_name_labels_and_the_verdict(project: pytest.Pytester, xdist: List[str]) -> None:
    result = run(project, "--alluredir=allure", *xdist)
    no_internal_error(result)
    folder = project.path / "allure"
    results = [json.loads(p.read_text()) for p in folder.glob("*-result.json")]
    by_name: Dict[str, Dict[str, Any]] = {}
    for r in results:
        by_name.setdefault(r["name"], r)
    assert len([n for n in by_name if n.startswith("toy-")]) == 18
    assert by_name["gate[toy]"]["status"] == "failed"
    assert by_name["gate[overall]"]["status"] == "passed"
    assert len({r["historyId"] for r in results if r["name"].startswith("gate[")}) == 2
    wrong = by_name["toy-q0004-p00"]
    assert wrong["status"] == "passed"
    assert {"name": "tag", "value": "hallucinated"} in wrong["labels"]
    [attachment] = [a for a in wrong["attachments"] if a["name"] == "defan verdict"]
    assert "claim:    'Nobody Special'" in (folder / attachment["source"]).read_text()


@pytest.mark.slow
@XDIST
def test_json_report_has_each_prompts_verdict(project: pytest.Pytester, xdist: List[str]) -> None:
    result = run(project, "--json-report", "--json-report-file=out.json", *xdist)
    no_internal_error(result)
    data = json.loads(project.path.joinpath("out.json").read_text())
    tests = {t["nodeid"]: t for t in data["tests"]}
    wrong = tests["defan::toy-q0004-p00"]
    assert wrong["outcome"] == "hallucinated"
    assert wrong["metadata"]["defan"]["claim"] == "Nobody Special"
    assert tests["defan::toy-q0005-p00"]["outcome"] == "misaligned"
    assert tests["defan::gate[toy]"]["outcome"] == "failed"
    assert tests["defan::toy-q0001-p00"]["metadata"]["defan_outcome"] == "right"
    assert wrong["metadata"]["defan_outcome"] == "hallucinated"
    # The prompts counted by outcome, as pytest's line counts them; passed: the overall gate.
    assert (data["summary"]["right"], data["summary"]["hallucinated"], data["summary"]["misaligned"]) == (12, 3, 3)
    assert data["summary"]["passed"] == 1


def test_sugar_shows_items_progress_and_no_hallucinated_passes(project: pytest.Pytester) -> None:
    result = run(project, "--force-sugar")
    no_internal_error(result)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout.str())
    assert re.search(r"^\s+1 passed", out, re.M)  # the overall gate: the prompts are counted by outcome
    assert "outcomes of 18 prompts: 12 right, 3 hallucinated, 3 misaligned" in out
    assert "defan " + "\u2713" * 12 + "HHHMMM" in out  # hallucinated H, misaligned M, not a pass mark
    assert "100%" in out and not re.search(r"\b1[0-9][0-9]%", out.replace("100%", ""))


def test_an_in_process_session_puts_pytest_sugar_back(project: pytest.Pytester) -> None:
    # pytest-sugar's status function is module state: wrapped for a DefAn session, it must be the
    # original again once that session ends (the next session in the process may not be DefAn's).
    import pytest_sugar

    original = pytest_sugar.pytest_report_teststatus
    project.makeconftest(CONFTEST + (
        "\ndef pytest_terminal_summary(terminalreporter):\n"
        "    import pytest_sugar\n"
        "    terminalreporter.write_line('sugar status: ' + pytest_sugar.pytest_report_teststatus.__qualname__)\n"
    ))
    result = project.runpytest_inprocess(*BASE, "--defan-cache=off")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the toy gate
    result.stdout.fnmatch_lines(["sugar status: Sugar.teststatus"])
    assert pytest_sugar.pytest_report_teststatus is original


@pytest.mark.slow
@XDIST
def test_split_keeps_groups_whole_and_skips_the_gate(project: pytest.Pytester, xdist: List[str]) -> None:
    ran: List[str] = []
    for group in ("1", "2"):
        result = run(project, "--splits", "2", "--group", group, "-rs", f"--defan-report=r{group}.json", *xdist)
        no_internal_error(result)
        assert result.ret == pytest.ExitCode.OK
        ids = [r["id"] for r in json.loads(project.path.joinpath(f"r{group}.json").read_text())["rows"]]
        groups = {i[:-4] for i in ids}
        assert ids and len(ids) == 3 * len(groups)  # whole groups only
        ran += ids
        result.stdout.fnmatch_lines(["SKIPPED * thresholds.toml*: the gate judges whole runs: 9 of the 18 *"])
    assert sorted(ran) == sorted(f"toy-q{g:04d}-p{p:02d}" for g in range(6) for p in range(3))


@pytest.mark.slow
def test_timeout_per_test_and_a_session_timeout_during_the_calls(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run(project, "--timeout=30").ret == pytest.ExitCode.TESTS_FAILED  # the toy gate
    # Three quick answers, then a second each: the session timeout (generous, so that a busy
    # machine still gets the quick answers in before it, and well short of the 15 s the slow
    # ones take) ends the calls; the call in flight then finishes and is kept too.
    monkeypatch.setenv("ORACLE_SLOW_AFTER", "3")
    slow = project.runpytest_subprocess(*BASE, "--defan-concurrency=1", "--session-timeout=5", timeout=240)
    no_internal_error(slow)
    assert slow.ret == pytest.ExitCode.INTERRUPTED
    slow.stdout.fnmatch_lines(["*session timeout*every answer received is kept in the cache*"])
    monkeypatch.delenv("ORACLE_SLOW_AFTER")
    again = project.runpytest_subprocess(*BASE, timeout=240)
    m = re.search(r"18 prompts: (\d+) answered by the model, (\d+) from the cache", again.stdout.str())
    assert m is not None and 3 <= int(m.group(2)) < 18, again.stdout.str()[-1500:]


@pytest.mark.slow
@XDIST
def test_github_annotations_point_at_the_breached_key_and_the_test(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory,
    xdist: List[str],
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_WORKSPACE", str(project.path))
    outside = tmp_path_factory.mktemp("elsewhere") / "toy.jsonl"
    outside.write_text(project.path.joinpath("toy.jsonl").read_text())
    for dataset, strict_file in (("toy.jsonl", "toy.jsonl,line=14"), (str(outside), "defan,line=1")):
        result = run(project, "--defan-strict", f"--defan-dataset={dataset}", *xdist)
        no_internal_error(result)
        lines = [ln for ln in (result.stdout.str() + "\n" + result.stderr.str()).splitlines() if ln.startswith("::error")]
        # The gate at the line of the breached key, relative to the repository.
        assert any(ln.startswith("::error file=thresholds.toml,line=5::gate[toy]") and "max_fch" in ln for ln in lines), lines
        # A strict failure at its row when the data is in the repository, else at the test's id.
        [strict] = [ln for ln in lines if "toy-q0004-p01" in ln]
        assert strict.startswith(f"::error file={strict_file}::defan toy-q0004-p01"), strict


@pytest.mark.slow
def test_cov_and_randomly_leave_the_figures_unchanged(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = run(project, "--defan-report=plain.json")
    monkeypatch.setenv("PYTEST_ADDOPTS", "")  # pytest-randomly on
    shuffled = run(project, "-p", "randomly", "-p", "randomly", "--defan-report=shuffled.json", "--cov", "--cov-report=")
    no_internal_error(shuffled)
    assert "Using --randomly-seed" in shuffled.stdout.str()
    assert plain.ret == shuffled.ret == pytest.ExitCode.TESTS_FAILED
    a = json.loads(project.path.joinpath("plain.json").read_text())
    b = json.loads(project.path.joinpath("shuffled.json").read_text())
    assert untimed(a["domains"]) == untimed(b["domains"]) and a["gate"] == b["gate"]
