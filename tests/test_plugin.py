"""The pytest plugin, through real pytest sessions (pytester), serial and under -n 2."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from timings import untimed

import defan_pytest

# A model that answers from a table: right for even question groups, wrong for odd ones.
CONFTEST = '''
import json, os
import defan_pytest
from defan_pytest.dataset import load_public

ROWS = {r.question: r for r in load_public(domains=["nobel", "qs_ranking", "math"])}
CALLS = os.environ.get("DEFAN_TEST_CALLS")

def answer(prompt):
    r = ROWS[prompt]
    if CALLS:
        with open(CALLS, "a") as f:
            f.write(json.dumps(prompt) + "\\n")
    if r.group % 2 == 0:
        return r.answer.split(";")[0].strip() or "No prize was awarded"
    return "Albert Einstein" if r.type == "name" else "99999"

@defan_pytest.model("table")
def table(prompt):
    return answer(prompt)

@defan_pytest.model("async-table", version="1")
async def async_table(prompt):
    return answer(prompt)
'''
FOUR_GROUPS = "nobel-q0000 or nobel-q0001 or nobel-q0002 or nobel-q0003"


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, public_dir: Path) -> pytest.Pytester:
    monkeypatch.setenv("DEFAN_DATA_DIR", str(public_dir))  # the real public split (skips without it)
    pytester.makeconftest(CONFTEST)
    return pytester


def outcomes(result: pytest.RunResult, **expected: int) -> None:
    """Like assert_outcomes, for defan's own categories (hallucinated, misaligned, call-error)."""
    got = {k: v for k, v in result.parseoutcomes().items() if k not in ("deselected", "seconds", "warnings", "warning")}
    assert got == expected, result.stdout.lines[-15:]


def thresholds(pytester: pytest.Pytester, text: str) -> None:
    pytester.path.joinpath("thresholds.toml").write_text(text, encoding="utf-8")


def test_inactive_without_a_model_and_imports_nothing_heavy(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import sys
        def test_light():
            heavy = [m for m in ("litellm", "spacy", "dateparser", "defan_pytest.dataset",
                                 "defan_pytest.scoring.scorer") if m in sys.modules]
            assert heavy == []
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "DefAn" not in result.stdout.str()


def test_help_lists_options_with_defaults(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    out = " ".join(result.stdout.str().split())  # help text is wrapped
    for option in ("--defan-model", "--defan-domain", "--defan-dataset", "--defan-sample", "--defan-seed",
                   "--defan-thresholds", "--defan-report", "--defan-strict", "--defan-concurrency",
                   "--defan-cache", "--defan-retries", "--defan-model-arg"):
        assert option in out
    assert "(default: 16)" in out and "(default: .defan_cache)" in out
    assert "defan_model" in out  # the ini keys


def test_items_ids_markers_and_status_letters(project: pytest.Pytester) -> None:
    result = project.runpytest("--defan-model=table", "--defan-domain=nobel", "-k", FOUR_GROUPS, "--defan-gate-narrowed", "-p", "no:cacheprovider")
    outcomes(result, right=30, hallucinated=30, passed=2)  # + gate[nobel], gate[overall] (the error rate)
    assert result.ret == 0  # hallucinations alone do not fail the run: the gate decides
    result.stdout.fnmatch_lines(["no thresholds file: only the call-error rate is judged (built-in max_error_rate 0.05)*",
                                 "*30 right*30 hallucinated*"])
    ids = project.runpytest("--defan-model=table", "--defan-domain=nobel", "-k", "nobel-q0001", "--collect-only", "-q",
                            "-p", "no:cacheprovider")
    ids.stdout.fnmatch_lines(["defan::nobel-q0001-p00", "defan::nobel-q0001-p14", "15/9795 tests collected*"])
    marked = project.runpytest("--defan-model=table", "--defan-domain=nobel,qs_ranking", "-m", "defan_nobel", "-k",
                               "q0000", "--collect-only", "-q", "-p", "no:cacheprovider")
    marked.stdout.fnmatch_lines(["15/31290 tests collected*"])


def test_verbose_shows_answer_claim_and_verdict(project: pytest.Pytester) -> None:
    result = project.runpytest("--defan-model=table", "--defan-domain=nobel", "-k", "nobel-q0001-p00", "-v",
                               "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(
        ["*defan::nobel-q0001-p00 HALLUCINATED claim 'Albert Einstein', gold *Hoff*; Q: Who was awarded the Nobel Prize*"]
    )


def test_gate_passes_and_fails_on_exact_thresholds(project: pytest.Pytester) -> None:
    args = ["--defan-model=table", "--defan-domain=nobel", "-k", FOUR_GROUPS, "--defan-gate-narrowed", "-p", "no:cacheprovider"]
    thresholds(project, "[defaults]\nmax_fch = 0.5\nmax_pmh = 0.0\nmin_rc = 1.0\n")
    ok = project.runpytest(*args)
    assert ok.ret == 0
    outcomes(ok, passed=2, right=30, hallucinated=30)  # 60 prompts, gate[nobel] and gate[overall]
    thresholds(project, "[defaults]\nmax_fch = 0.49\n")
    bad = project.runpytest(*args)
    assert bad.ret == 1
    outcomes(bad, right=30, hallucinated=30, failed=2)
    bad.stdout.fnmatch_lines([
        "*_ gate?nobel? _*", "nobel: FCH 0.50 > max_fch 0.49 (95% CI 0.00-1.00, n=60)",
        "*_ gate?overall? _*", "overall: FCH 0.50 > max_fch 0.49 (95% CI 0.00-1.00, n=60)",
        "FAILED defan::gate?nobel? - nobel: FCH 0.50 > max_fch 0.49*",
    ])
    assert "nobel" in bad.stdout.str() and "FAIL" in bad.stdout.str()  # the gate table


def test_domain_thresholds_and_rc(project: pytest.Pytester) -> None:
    thresholds(project, "[defaults]\nmin_rc = 0.9\n[domains.nobel]\nmax_fch = 0.2\n")
    result = project.runpytest("--defan-model=table", "--defan-domain=nobel", "-k", FOUR_GROUPS, "--defan-gate-narrowed", "-p", "no:cacheprovider")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["nobel: FCH 0.50 > max_fch 0.20 (95% CI *, n=60)"])
    assert "gate[overall]" not in "".join(l for l in result.stdout.lines if l.startswith("FAILED"))


def test_too_few_samples_say_so_instead_of_passing(project: pytest.Pytester) -> None:
    thresholds(project, "[defaults]\nmax_fch = 0.9\nmin_samples = 100\n")
    result = project.runpytest("--defan-model=table", "--defan-domain=nobel", "-k", FOUR_GROUPS, "--defan-gate-narrowed", "-p", "no:cacheprovider")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*nobel: 4 scored groups < min_samples 100: not judged*"])


def test_strict_fails_each_hallucinated_prompt_and_lf_reruns_them(project: pytest.Pytester) -> None:
    args = ["--defan-model=table", "--defan-domain=nobel", "-k", "nobel-q0000 or nobel-q0001", "--defan-strict"]
    result = project.runpytest(*args)
    outcomes(result, right=15, failed=15, skipped=2)  # the gate judges whole runs
    result.stdout.fnmatch_lines([
        "*nobel-q0001-p00: hallucinated (counted in FCH)*",
        "*question: *Nobel Prize*1901*",
        "*claim:    'Albert Einstein'*",
    ])
    again = project.runpytest(*args, "--lf")
    again.assert_outcomes(failed=15, skipped=2)


def test_deselect_and_async_callable(project: pytest.Pytester) -> None:
    result = project.runpytest("--defan-model=async-table", "--defan-domain=nobel", "-k", "nobel-q0000",
                               "--deselect", "defan::nobel-q0000-p03", "-p", "no:cacheprovider")
    outcomes(result, right=14, skipped=2)


def test_junit_xml_holds_gate_results(project: pytest.Pytester) -> None:
    thresholds(project, "[defaults]\nmax_fch = 0.49\n")
    project.runpytest("--defan-model=table", "--defan-domain=nobel", "-k", FOUR_GROUPS, "--defan-gate-narrowed", "--junitxml=out.xml",
                      "-p", "no:cacheprovider")
    root = ET.parse(project.path / "out.xml").getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert len(cases) == 62
    failure = cases["gate[nobel]"].find("failure")
    assert failure is not None and "nobel: FCH 0.50 > max_fch 0.49" in (failure.get("message") or "")


def test_report_json_same_schema_as_defan_score(project: pytest.Pytester) -> None:
    project.runpytest("--defan-model=table", "--defan-domain=nobel", "-k", FOUR_GROUPS, "--defan-gate-narrowed", "--defan-report=r.json",
                      "-p", "no:cacheprovider")
    report = json.loads((project.path / "r.json").read_text())
    assert set(report) >= {"rows", "domains", "overall"}
    assert len(report["rows"]) == 60 and report["rows"][0]["id"] == "nobel-q0000-p00"
    assert set(report["rows"][0]) >= {"claim", "aligned", "correct", "error"}
    nobel = report["domains"]["nobel"]
    assert (nobel["n"], nobel["fch"], nobel["pmh"], nobel["rc"], nobel["groups"]) == (60, 0.5, 0.0, 1.0, 4)
    assert "fch_ci" in nobel and report["overall"]["pooled"]["n"] == 60


def test_bad_configuration_lists_every_problem_before_any_call(project: pytest.Pytester, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("DEFAN_TEST_CALLS", str(calls))
    thresholds(project, "[defaults]\nmax_fhc = 0.5\nmax_pmh = 1.5\n[domains.nobl]\nmax_fch = 0.3\n")
    result = project.runpytest("--defan-model=no-such-model", "--defan-domain=nobel,sprots", "--defan-sample=abc")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    for expected in (
        "unknown domain", "sprots", "valid",  # --defan-domain (dataset registry)
        "defaults.max_fhc: unknown key", "defaults.max_pmh: 1.5 is outside [0, 1]", "domains.nobl: unknown domain",
        "--defan-sample: 'abc' is not a sample size",
        "unknown model 'no-such-model'", "table",
    ):
        assert expected in err, expected
    assert not calls.exists()


def test_missing_dataset_file_and_bad_numbers(project: pytest.Pytester) -> None:
    result = project.runpytest("--defan-model=table", "--defan-dataset=missing.csv", "--defan-concurrency=0",
                               "--defan-timeout=-1", "--defan-spacy-model=xx_missing")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "dataset 'missing.csv' is not 'public', a folder or a file" in err
    assert "--defan-concurrency: 0 is below the minimum 1" in err
    assert "--defan-timeout: -1 must be above 0" in err
    assert "--defan-spacy-model" in err and "xx_missing" in err


def test_user_dataset_file(project: pytest.Pytester) -> None:
    project.path.joinpath("mine.csv").write_text(
        "question,answer,type,domain,group\n"
        "Who discovered X-rays? (name only),Wilhelm Röntgen,name,physics,xr\n"
        "Which scientist discovered X-rays? (name only),Wilhelm Röntgen,name,physics,xr\n"
        "What is 6 times 7?,42,numeric,arith,m1\n",
        encoding="utf-8",
    )
    project.makeconftest(
        "import defan_pytest\n"
        "@defan_pytest.model('mine')\n"
        "def mine(prompt):\n"
        "    return '42' if 'times' in prompt else 'It was Wilhelm Conrad Röntgen.'\n"
    )
    thresholds(project, "[domains.physics]\nmax_pmh = 0.0\n")
    result = project.runpytest("--defan-model=mine", "--defan-dataset=mine.csv", "-v", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*MISALIGNED*", "physics: PMH 1.00 > max_pmh 0.00 (95% CI *, n=2)"])


def _figures(pytester: pytest.Pytester, *extra: str) -> tuple[dict, list, int]:
    result = pytester.runpytest_subprocess(
        "--defan-model=table", "--defan-domain=nobel,qs_ranking,math", "--defan-sample=2%", "--defan-seed=7",
        "--defan-report=r.json", "-p", "no:cacheprovider", *extra,
    )
    report = json.loads((pytester.path / "r.json").read_text())
    gate = [g["message"] for g in report["gate"]]
    return untimed({"domains": report["domains"], "overall": report["overall"]}), gate, result.ret


@pytest.mark.slow
def test_serial_and_xdist_give_the_same_figures_and_verdicts(project: pytest.Pytester, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    thresholds(project, "[defaults]\nmax_fch = 0.6\nmin_rc = 0.5\n[domains.math]\nmax_fch = 0.4\n")
    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("DEFAN_TEST_CALLS", str(calls))
    serial = _figures(project)
    n_serial = len(calls.read_text().splitlines())
    calls.unlink()
    parallel = _figures(project, "-n", "2")
    sent = [json.loads(line) for line in calls.read_text().splitlines()]
    assert serial == parallel
    assert serial[0]["domains"]["nobel"]["rc_groups"] > 0  # RC from whole groups, wherever they ran
    assert len(sent) == n_serial == len(set(sent))  # each prompt asked once, in both runs


def test_cache_reuses_a_callable_only_with_a_version(project: pytest.Pytester, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("DEFAN_TEST_CALLS", str(calls))
    monkeypatch.setenv("DEFAN_PROGRESS_SECONDS", "60")
    args = ["--defan-domain=nobel", "-k", "nobel-q0000", "-p", "no:cacheprovider"]

    def sent() -> int:
        n = len(calls.read_text().splitlines()) if calls.exists() else 0
        calls.unlink(missing_ok=True)
        return n

    first = project.runpytest("--defan-model=async-table", *args)
    first.stdout.fnmatch_lines(["defan: 15/15 prompts (100%), * 0 cached, 0 retries, 0 errors"])
    assert sent() == 15
    again = project.runpytest("--defan-model=async-table", *args)  # version "1": answers reused
    again.stdout.fnmatch_lines(["*15 prompts: 0 answered by the model, 15 from the cache*"])
    assert sent() == 0
    project.runpytest("--defan-model=table", *args)  # no version: never reused across runs
    project.runpytest("--defan-model=table", *args)
    assert sent() == 30
    project.runpytest("--defan-model=async-table", "--defan-cache=refresh", *args)
    assert sent() == 15
    project.runpytest("--defan-model=async-table", "--defan-cache=off", *args)
    assert sent() == 15


def test_header_and_report_say_which_scorer_ran(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("import defan_pytest\n@defan_pytest.model('echo', version='1')\ndef echo(p):\n    return 'Ada Lovelace'\n")
    rows = [{"question": f"Who won prize {i}?", "answer": "Ada Lovelace", "type": "name", "domain": "toy"} for i in range(3)]
    pytester.path.joinpath("toy.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    result = pytester.runpytest("--defan-model=echo", "--defan-dataset=toy.jsonl", "--defan-cache=off",
                                "--defan-spacy-model=none", "--defan-report=r.json")
    result.stdout.fnmatch_lines(["defan: model echo, 3 prompts", "defan scorer: rules only (no spaCy pipeline*"])
    scorer = json.loads(pytester.path.joinpath("r.json").read_text())["meta"]["scorer"]
    assert scorer == {"rules": defan_pytest.RULES_VERSION, "ner": False, "pipeline": None, "version": None}


# --------------------------------------------------------------------------------------------
# The terminal at scale, call errors, JUnit verdicts, GitHub Actions, deciding on the interval
# --------------------------------------------------------------------------------------------

FLAKY_CONFTEST = CONFTEST + '''
@defan_pytest.model("flaky", version="1")
def flaky(prompt):
    r = ROWS[prompt]
    if r.group % 4 == 3:
        raise RuntimeError("upstream index is down")
    return answer(prompt)
'''


def _percentages(lines: list[str]) -> list[int]:
    import re

    return [int(m.group(1)) for line in lines for m in re.finditer(r"\[\s*(\d+)%\]", line)]


@pytest.mark.slow
@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "n2"])
def test_a_big_run_prints_a_line_per_domain_and_monotonic_progress(project: pytest.Pytester, xdist: list[str]) -> None:
    thresholds(project, "[defaults]\nmax_fch = 0.9\n")
    result = project.runpytest("--defan-model=table", "--defan-domain=nobel,math", "--defan-sample=1200",
                               "-p", "no:cacheprovider", *xdist)
    assert result.ret == 0
    lines = result.stdout.lines
    # No wall of letters: the DefAn prompts print no letter each; the summary counts them by domain.
    assert not [ln for ln in lines if ln.startswith("defan ") and ("H" * 20 in ln or "." * 20 in ln)]
    result.stdout.fnmatch_lines(["  nobel: * right, *", "  math: *"])
    pct = _percentages(lines)
    assert pct and pct == sorted(pct) and pct[-1] == 100, pct
    assert all(word in lines[-1] for word in (" passed", " right", " hallucinated")), lines[-1]


def test_progress_stays_monotonic_through_the_gate_items(project: pytest.Pytester) -> None:
    thresholds(project, "[defaults]\nmax_fch = 0.9\n[domains.nobel]\nmax_fch = 0.1\n")
    result = project.runpytest("--defan-model=table", "--defan-domain=nobel", "--defan-sample=150",
                               "--defan-seed=2", "-p", "no:cacheprovider")  # 10 groups, FCH 0.30
    pct = _percentages(result.stdout.lines)
    assert pct == sorted(pct) and pct[-1] == 100, result.stdout.lines
    result.stdout.fnmatch_lines(["*1 failed*"])  # gate[nobel]


def test_call_errors_show_their_kind_everywhere(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                public_dir: Path) -> None:
    monkeypatch.setenv("DEFAN_DATA_DIR", str(public_dir))
    pytester.makeconftest(FLAKY_CONFTEST)
    args = ["--defan-model=flaky", "--defan-domain=nobel", "-k", FOUR_GROUPS, "--defan-retries=0",
            "-p", "no:cacheprovider"]
    verbose = pytester.runpytest(*args, "-v", "--junitxml=out.xml")
    verbose.stdout.fnmatch_lines(["*defan::nobel-q0003-p00 CALL ERROR RuntimeError: upstream index is down*"])
    verbose.stdout.fnmatch_lines(["  15 x RuntimeError: upstream index is down"])
    # The summary line's counts are those of FCH and PMH.
    verbose.stdout.fnmatch_lines(["outcomes of 60 prompts: 30 right, 15 hallucinated, 15 call error",
                                  "FCH counts 15 (15 hallucinated); PMH counts 0"])
    root = ET.parse(pytester.path / "out.xml").getroot()
    props = {
        c.get("name"): {p.get("name"): p.get("value") for p in c.iter("property")} for c in root.iter("testcase")
    }
    assert props["nobel-q0003-p00"]["defan_verdict"] == "call error: RuntimeError: upstream index is down"
    assert props["nobel-q0001-p00"]["defan_verdict"].startswith("hallucinated: claim 'Albert Einstein', gold")
    assert props["nobel-q0000-p00"]["defan_verdict"].startswith("right: claim ")
    assert props["nobel-q0003-p00"]["defan_outcome"] == "call error" and props["nobel-q0000-p00"]["defan_outcome"] == "right"
    strict = pytester.runpytest(*args, "--defan-strict")
    strict.stdout.fnmatch_lines(["*nobel-q0003-p00: call error: RuntimeError: upstream index is down*"])


def test_github_step_summary_and_annotations(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = project.path / "step-summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    thresholds(project, "[defaults]\nmax_fch = 0.9\n\n[domains.nobel]\nmax_fch = 0.2\n")
    result = project.runpytest("--defan-model=table", "--defan-domain=nobel", "--defan-sample=150", "--defan-seed=2",
                               "-p", "no:cacheprovider", "-p", "no:pytest_github_actions_annotate_failures")
    assert result.ret == 1
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n## ❌ DefAn: table")
    assert "| nobel | 10 | 0.300 [" in text and "### Breaches" in text
    assert [ln for ln in result.stdout.lines if ln.startswith("::error")] == [
        "::error file=thresholds.toml,line=5,title=DefAn gate[nobel]::nobel: FCH 0.30 > max_fch 0.20 (95%25 CI "
        + next(ln for ln in result.stdout.lines if ln.startswith("::error")).split("(95%25 CI ", 1)[1]
    ]


def test_interval_decision_on_a_small_sample(project: pytest.Pytester) -> None:
    thresholds(project, "[defaults]\nmax_fch = 0.25\n")
    args = ["--defan-model=table", "--defan-domain=nobel", "--defan-sample=150", "--defan-seed=2", "-p", "no:cacheprovider"]
    assert project.runpytest(*args).ret == 1  # FCH 0.30 > 0.25 on the point estimate
    result = project.runpytest(*args, "--defan-decide=interval")
    assert result.ret == 0
    # The table says how it decided, and marks the figure the interval passed.
    result.stdout.fnmatch_lines(["nobel *0.30*~ *PASS", "decided by interval (--defan-decide=interval): a figure "
                                 "fails only when its whole 95% interval lies beyond its limit; ~ = beyond its limit, "
                                 "passed because its interval reaches it"])
    bad = project.runpytest(*args, "--defan-decide=median")
    assert bad.ret == 4
    bad.stderr.fnmatch_lines(["*--defan-decide: 'median' is not one of: point, interval*"])


# --------------------------------------------------------------------------------------------
# The regression gate: --defan-baseline
# --------------------------------------------------------------------------------------------

WORSE_CONFTEST = CONFTEST + '''
@defan_pytest.model("table-worse", version="1")
def table_worse(prompt):
    r = ROWS[prompt]
    if r.group % 4 == 2:  # half of the groups it got right, now wrong
        return "Albert Einstein" if r.type == "name" else "99999"
    return answer(prompt)
'''
REG_ARGS = ["--defan-domain=nobel", "--defan-sample=600", "--defan-spacy-model=none", "-p", "no:cacheprovider"]


@pytest.fixture
def reg_project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, public_dir: Path) -> pytest.Pytester:
    monkeypatch.setenv("DEFAN_DATA_DIR", str(public_dir))
    pytester.makeconftest(WORSE_CONFTEST)
    thresholds(pytester, "[defaults]\nmax_fch = 0.9\n\n[regression]\nmax_fch_rise = 0.02\n")
    result = pytester.runpytest("--defan-model=table", *REG_ARGS, "--defan-report=base.json")
    assert result.ret == 0
    return pytester


def _regression_outcomes(result: pytest.RunResult) -> dict[str, str]:
    import re

    out = {}
    for line in result.stdout.lines:
        m = re.match(r"^(?:defan::)?(regression\[\w+\]) (PASSED|FAILED|SKIPPED)", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "n2"])
def test_identical_runs_never_regress(reg_project: pytest.Pytester, xdist: list[str]) -> None:
    result = reg_project.runpytest("--defan-model=table", *REG_ARGS, "--defan-baseline=base.json",
                                   "--defan-report=new.json", "-v", *xdist)
    assert result.ret == 0
    assert _regression_outcomes(result) == {"regression[nobel]": "PASSED", "regression[overall]": "PASSED"}
    report = json.loads((reg_project.path / "new.json").read_text())
    assert report["regression"]["status"] == "pass"
    change = report["regression"]["scopes"]["nobel"]["fch"]
    assert (change["change"], change["worse_flips"], change["better_flips"], change["regressed"]) == (0, 0, 0, False)


@pytest.mark.slow
@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "n2"])
def test_a_worse_model_regresses_with_its_flipped_prompts(reg_project: pytest.Pytester, xdist: list[str]) -> None:
    result = reg_project.runpytest("--defan-model=table-worse", *REG_ARGS, "--defan-baseline=base.json",
                                   "--defan-report=new.json", *xdist)
    assert result.ret == 1
    result.stdout.fnmatch_lines([
        "nobel: FCH 0.475 -> 0.750 (+0.275; flips 165 worse / 0 better in 40 groups, p<0.0001 against noise, needs < "
        "0.0083; 98.33% CI +0.* to +0.*): regressed: worse than the model's own noise and past the tolerance 0.02",
        "*right before, wrong now (FCH): 165 prompts (first 20; all in the report)",
        "FAILED defan::regression?nobel? - nobel: FCH 0.475 -> 0.750*",
    ])
    report = json.loads((reg_project.path / "new.json").read_text())
    flipped = [f for f in report["regression"]["flipped"] if f["direction"] == "worse"]
    assert flipped and all(f["new_response"] == "Albert Einstein" and f["old_response"] != "Albert Einstein"
                           for f in flipped)
    assert report["regression"]["scopes"]["nobel"]["fch"]["regressed"] is True
    # defan gate re-judges the saved report with the run's exit code (1), and passes it against itself.
    from defan_pytest.cli import main as defan

    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(reg_project.path)
        assert defan(["gate", "new.json", "--baseline", "base.json"]) == result.ret == 1
        assert defan(["gate", "new.json", "--baseline", "new.json"]) == 0


def test_a_narrowed_run_skips_the_regression_gate(reg_project: pytest.Pytester) -> None:
    group = json.loads((reg_project.path / "base.json").read_text())["rows"][0]["group"]
    result = reg_project.runpytest("--defan-model=table-worse", *REG_ARGS, "--defan-baseline=base.json", "-k",
                                   group, "-rs")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["SKIPPED * thresholds.toml*: the gate judges whole runs: *"])
    assert "regression gate skipped" in result.stdout.str()


def test_an_incomparable_baseline_is_refused_before_any_call(reg_project: pytest.Pytester) -> None:
    base = json.loads((reg_project.path / "base.json").read_text())
    base["meta"]["scorer"]["rules"] = "1999.1"
    reg_project.path.joinpath("old-rules.json").write_text(json.dumps(base))
    refused = reg_project.runpytest("--defan-model=table", *REG_ARGS, "--defan-baseline=old-rules.json")
    assert refused.ret == 4
    refused.stderr.fnmatch_lines(["*--defan-baseline: scored by another scorer (rules 1999.1*--defan-baseline-force*"])
    forced = reg_project.runpytest("--defan-model=table", *REG_ARGS, "--defan-baseline=old-rules.json",
                                   "--defan-baseline-force")
    assert forced.ret == 0
    other = reg_project.runpytest("--defan-model=table", "--defan-domain=math", "--defan-sample=30",
                                  "--defan-spacy-model=none", "-p", "no:cacheprovider", "--defan-baseline=base.json")
    assert other.ret == 4
    other.stderr.fnmatch_lines(["*--defan-baseline: no prompt in common with this run*"])
    same_file = reg_project.runpytest("--defan-model=table", *REG_ARGS, "--defan-baseline=base.json",
                                      "--defan-report=base.json")
    assert same_file.ret == 4
    same_file.stderr.fnmatch_lines(["*--defan-report*base.json*would overwrite the baseline report*"])
    broken = reg_project.path / "broken.json"
    broken.write_text('{"schema": "defan-pytest-report", "schema_version": 1}')
    bad = reg_project.runpytest("--defan-model=table", *REG_ARGS, "--defan-baseline=broken.json")
    assert bad.ret == 4
    bad.stderr.fnmatch_lines(["*broken.json: (top level): 'meta' is a required property*"])


def _seed_sharing_few_groups(base_ids: set, public_dir: Path) -> int:
    """A seed whose 150-prompt nobel sample shares 1 to 4 paraphrase groups with the baseline's."""
    from defan_pytest.dataset import load_public, sampling

    rows = load_public(domains=["nobel"], data_dir=public_dir)
    for seed in range(1, 200):
        picked = sampling.select(rows, sampling.parse_sample("150"), seed)
        shared = {r.group_key for r in picked if r.id in base_ids}
        if 1 <= len(shared) <= 4:
            return seed
    raise AssertionError("no seed shares 1 to 4 groups")  # pragma: no cover


def test_a_baseline_sharing_too_few_groups_is_refused_before_any_call(
        reg_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, public_dir: Path) -> None:
    # The README's old recipe: another seed than the baseline's shares a handful of prompts, and
    # the paired test said "not worse" from two groups.
    base_ids = {r["id"] for r in json.loads((reg_project.path / "base.json").read_text())["rows"]}
    seed = _seed_sharing_few_groups(base_ids, public_dir)
    calls = reg_project.path / "calls.jsonl"
    monkeypatch.setenv("DEFAN_TEST_CALLS", str(calls))
    result = reg_project.runpytest("--defan-model=table-worse", "--defan-domain=nobel", "--defan-sample=150",
                                   f"--defan-seed={seed}", "--defan-spacy-model=none", "-p", "no:cacheprovider",
                                   "--defan-baseline=base.json")
    assert result.ret == 4
    result.stderr.fnmatch_lines([
        "*--defan-baseline: this run shares * prompts in [1-4] paraphrase groups with the baseline; the regression "
        "gate needs at least 5 (min_samples) in a domain or overall, so it could judge nothing*--defan-seed*",
    ])
    assert not calls.exists()


@pytest.mark.slow
@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "n2"])
def test_a_scope_with_too_few_groups_in_common_is_not_judged(reg_project: pytest.Pytester, xdist: list[str]) -> None:
    args = ["--defan-domain=nobel,qs_ranking", "--defan-sample=10g", "--defan-spacy-model=none", "-p", "no:cacheprovider"]
    assert reg_project.runpytest("--defan-model=table", *args, "--defan-report=two.json").ret == 0
    # An older baseline that asked only two qs_ranking questions.
    base = json.loads((reg_project.path / "two.json").read_text())
    keep = sorted({r["group"] for r in base["rows"] if r["domain"] == "qs_ranking"})[:2]
    base["rows"] = [r for r in base["rows"] if r["domain"] != "qs_ranking" or r["group"] in keep]
    reg_project.path.joinpath("old.json").write_text(json.dumps(base))
    result = reg_project.runpytest("--defan-model=table", *args, "--defan-baseline=old.json",
                                   "--defan-report=new.json", "-v", "-rs", *xdist)
    assert result.ret == 0
    assert _regression_outcomes(result) == {
        "regression[nobel]": "PASSED", "regression[qs_ranking]": "SKIPPED", "regression[overall]": "PASSED",
    }
    result.stdout.fnmatch_lines([
        "SKIPPED * qs_ranking: not judged: 2 paraphrase groups (30 prompts) in common with the baseline < 5 "
        "(min_samples)",
    ])
    report = json.loads((reg_project.path / "new.json").read_text())
    shared = report["regression"]["shared"]
    assert shared["qs_ranking"] == {"prompts": 30, "groups": 2, "needed": 5, "judged": False}
    assert shared["nobel"]["groups"] == 10 and shared["nobel"]["judged"] is True
    assert all(c["regressed"] is False for c in report["regression"]["scopes"]["qs_ranking"].values())


# --------------------------------------------------------------------------------------------
# No silent pass: the call-error rate is judged without a thresholds file
# --------------------------------------------------------------------------------------------

FAILING_CONFTEST = '''
import zlib
import defan_pytest

class BadAnswer(Exception):
    pass

@defan_pytest.model("broken", version="1")
def broken(prompt):
    raise BadAnswer("the application is down")

@defan_pytest.model("flaky", version="1")
def flaky(prompt):
    if zlib.crc32(prompt.encode()) % 10 == 0:
        raise BadAnswer("one call in ten fails")
    return "Ada Lovelace"
'''


@pytest.fixture
def notes_project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(FAILING_CONFTEST)
    rows = [{"question": f"Who wrote note #{g} (take {p})?", "answer": "Ada Lovelace", "type": "name",
             "domain": "notes", "group": f"g{g}"} for g in range(30) for p in range(5)]
    pytester.path.joinpath("notes.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return pytester


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "n2"])
def test_a_run_whose_calls_all_failed_fails_without_a_thresholds_file(notes_project: pytest.Pytester,
                                                                       xdist: list[str]) -> None:
    result = notes_project.runpytest("--defan-model=broken", "--defan-dataset=notes.jsonl", "--defan-spacy-model=none",
                                     "-p", "no:randomly", *xdist)
    assert result.ret == 1
    result.stdout.fnmatch_lines([
        "defan gate: no thresholds file: only the call-error rate is judged (built-in max_error_rate 0.05); "
        "no FCH, PMH or RC limit is set (see --defan-thresholds)",
        "FAILED defan::gate?notes? - notes: every call failed (150 of 150)*",
    ])


def test_a_permissive_error_limit_does_not_pass_a_run_of_failed_calls(notes_project: pytest.Pytester) -> None:
    thresholds(notes_project, "[defaults]\nmax_fch = 0.5\nmax_error_rate = 1.0\n")
    result = notes_project.runpytest("--defan-model=broken", "--defan-dataset=notes.jsonl", "--defan-spacy-model=none")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["FAILED defan::gate?overall? - overall: every call failed (150 of 150)*"])


def test_the_built_in_error_limit_applies_where_the_file_sets_none(notes_project: pytest.Pytester) -> None:
    result = notes_project.runpytest("--defan-model=flaky", "--defan-dataset=notes.jsonl", "--defan-spacy-model=none")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["FAILED defan::gate?notes? - notes: error rate 0.* > max_error_rate 0.05*"])
    thresholds(notes_project, "[defaults]\nmax_fch = 0.5\n")
    again = notes_project.runpytest("--defan-model=flaky", "--defan-dataset=notes.jsonl", "--defan-spacy-model=none")
    assert again.ret == 1
    again.stdout.fnmatch_lines([
        "defan gate: *thresholds.toml (and the built-in max_error_rate 0.05 for every scope: the file sets none)",
    ])
    thresholds(notes_project, "[defaults]\nmax_fch = 0.5\nmax_error_rate = 0.2\n")
    assert notes_project.runpytest("--defan-model=flaky", "--defan-dataset=notes.jsonl",
                                   "--defan-spacy-model=none").ret == 0


# --------------------------------------------------------------------------------------------
# A baseline that failed its own levels is kept, compared with, and said to have failed
# --------------------------------------------------------------------------------------------

NOTES_CONFTEST = '''
import os
import defan_pytest

@defan_pytest.model("notes-app", version=os.environ.get("NOTES_CUT", "6"))
def notes_app(prompt):
    n = int(prompt.split("#")[1].split()[0])
    return "Ada Lovelace" if n % 10 < int(os.environ.get("NOTES_CUT", "6")) else "Charles Babbage"
'''


def test_a_baseline_that_failed_its_levels_is_compared_with_and_said(pytester: pytest.Pytester,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The default branch's run fails a level limit and still keeps its report; a pull request
    compared with it gets its regression verdict, and the terminal, the step summary and the
    report say that the baseline itself failed its levels."""
    rows = [{"question": f"Who wrote note #{g} (take {p})?", "answer": "Ada Lovelace", "type": "name",
             "domain": "notes", "group": f"g{g}"} for g in range(20) for p in range(3)]
    (pytester.path / "notes.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    pytester.makeconftest(NOTES_CONFTEST)
    thresholds(pytester, "[defaults]\nmax_fch = 0.30\nmin_samples = 5\n\n[regression]\nmax_fch_rise = 0.02\n")
    args = ["--defan-model=notes-app", "--defan-dataset=notes.jsonl", "--defan-spacy-model=none", "-p", "no:cacheprovider"]
    main = pytester.runpytest(*args, "--defan-report=main.json")
    assert main.ret == 1  # FCH 0.40 > 0.30: the level gate failed ...
    kept = json.loads((pytester.path / "main.json").read_text(encoding="utf-8"))
    assert kept["gate_status"] == "fail"  # ... and the report, with its verdict, is the next baseline
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("NOTES_CUT", "7")  # the pull request gets one question in ten more right
    pr = pytester.runpytest(*args, "--defan-baseline=main.json", "--defan-report=pr.json", "-rA")
    assert pr.ret == 0, pr.stdout.str()  # FCH 0.30: within the limit, and no regression
    note = "the baseline itself failed its levels (notes: FCH 0.40 > max_fch 0.30"
    pr.stdout.fnmatch_lines([f"note: {note}*: the regression is judged against it all the same, so a pass means "
                             "no worse than that run"])
    assert "PASSED defan::regression[notes]" in pr.stdout.str()
    said = summary.read_text(encoding="utf-8")
    assert "**Note**: the baseline itself failed its levels (notes: FCH 0.40 &gt; max\\_fch 0.30" in said
    base = json.loads((pytester.path / "pr.json").read_text(encoding="utf-8"))["regression"]["baseline"]
    assert [b.split(" (")[0] for b in base["failed_levels"]] == ["notes: FCH 0.40 > max_fch 0.30",
                                                                 "overall: FCH 0.40 > max_fch 0.30"]
