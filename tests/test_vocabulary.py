"""One vocabulary (issue 19, point 5): every prompt has one outcome of defan_pytest.verdicts, and
every output of one run - pytest's summary line, -v, the DefAn summary, JUnit XML,
pytest-json-report, the step summary and the JSON report - calls each prompt the same and
counts the same, with FCH's and PMH's counts the sums of the outcomes they count.  Also the
smaller points of 6 that a run shows: a big run prints no per-domain lines, and a regression
verdict is printed once."""
from __future__ import annotations

import csv
import itertools
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Dict, List

import pytest

from defan_pytest import verdicts
from defan_pytest.scoring.types import parse_gold
from defan_pytest.scoring.types.base import NONE_CLAIM
from defan_pytest.verdicts import OUTCOMES, claim_text, count_outcomes, counts_text, figure_parts, gold_text, outcome_of

# -- the vocabulary itself ------------------------------------------------------------------------


def test_outcomes_follow_the_figures_bits() -> None:
    """Whatever a record holds, its outcome is wrong exactly when FCH counts it and misaligned
    exactly when PMH does (SCORING.md: not correct / not aligned, no claim never correct), so
    the counts of the outcomes add up to the figures."""
    values = (True, False, None)
    for correct, aligned, claim in itertools.product(values, values, ("Bob", None, "", NONE_CLAIM)):
        rec = {"correct": correct, "aligned": aligned, "claim": claim, "error": None}
        o = outcome_of(rec)
        assert (o.wrong, o.misaligned, o.errored) == (correct is not True, aligned is not True, False), rec
    assert outcome_of({"correct": False, "aligned": False, "claim": None, "error": None}) is verdicts.NO_CLAIM
    assert outcome_of({"correct": False, "aligned": True, "claim": NONE_CLAIM, "error": None}) is verdicts.NO_PRIZE_CLAIMED
    assert outcome_of({"correct": None, "aligned": None, "error": "TimeoutError"}).errored
    # The HTML report's bits: 1 wrong, 2 misaligned, 4 call error, on every outcome.
    for o in OUTCOMES:
        assert (bool(o.code & 1), bool(o.code & 2), bool(o.code & 4)) == (o.wrong, o.misaligned, o.errored)


def test_the_scorers_no_prize_claim_and_empty_golds_read_as_words(public_dir: Path) -> None:
    """The claim of "no prize was awarded" is the scorer's, and a gold reads ``no prize awarded``
    exactly when the scorer's gold parsing finds it empty, on every gold of the public split."""
    assert verdicts.NO_PRIZE_CLAIM == NONE_CLAIM
    assert claim_text(None) == "no claim" and claim_text(NONE_CLAIM) == "no prize awarded"
    seen = set()
    for path in sorted(public_dir.glob("QA_domain_*_public.csv")):
        with path.open(encoding="utf-8", newline="") as fh:
            for row in csv.DictReader(fh):
                answer, kind = row.get("answer") or "", (row.get("type") or "name").strip()
                if (answer, kind) in seen:
                    continue
                seen.add((answer, kind))
                empty = parse_gold(kind, answer).empty
                assert (gold_text(answer) == "no prize awarded") == empty, (path.name, answer)
    assert any(gold_text(a) == "no prize awarded" for a, _ in seen)


# -- one run, every output ------------------------------------------------------------------------

CONFTEST = '''
import defan_pytest

@defan_pytest.model("mixed", version="1")
def mixed(prompt):
    if "case right" in prompt:
        return "Ada Lovelace"
    if "case hallucinated" in prompt:
        return "Nobody Special"
    if "case misaligned " in prompt:
        return "I think it was Ada Lovelace, not sure."
    if "case misaligned-wrong" in prompt:
        return "I think it was Charles Babbage, not sure."
    if "case no-prize-right" in prompt:
        return "None"
    if "case no-prize-claimed" in prompt:
        return "None"
    if "case error" in prompt:
        raise RuntimeError("upstream index is down")
    return "I don't know."   # case refusal, case refusal-empty-gold
'''
#: Each case a paraphrase group of three: (case, gold, the outcome expected of each prompt).
CASES = [
    ("right", "Ada Lovelace", "right"),
    ("hallucinated", "Ada Lovelace", "hallucinated"),
    ("misaligned", "Ada Lovelace", "misaligned"),
    ("misaligned-wrong", "Ada Lovelace", "misaligned and wrong"),
    ("refusal", "Ada Lovelace", "no claim"),
    ("refusal-empty-gold", "", "no claim"),
    ("no-prize-right", "", "right"),
    ("no-prize-claimed", "Ada Lovelace", "no prize claimed"),
    ("error", "Ada Lovelace", "call error"),
]
ROWS = [
    {"question": f"Who won the prize in case {case} (form {p})?", "answer": gold, "type": "name",
     "domain": "alpha" if i % 2 else "beta", "group": f"g{i}"}
    for i, (case, gold, _) in enumerate(CASES) for p in range(3)
]
ARGS = ["--defan-model=mixed", "--defan-dataset=toy.jsonl", "--defan-spacy-model=none", "--defan-retries=0",
        "-p", "no:cacheprovider", "-p", "no:randomly"]
XDIST = pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "n2"])


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.path.joinpath("toy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    # The run has a call error on purpose (an outcome of its own): above the built-in 0.05.
    pytester.path.joinpath("thresholds.toml").write_text("[defaults]\nmax_error_rate = 0.5\n", encoding="utf-8")
    return pytester


def summary_line_counts(last: str) -> Dict[str, int]:
    """pytest's last line (``== 3 right, 3 no claim, 1 passed in 0.5s ==``), words of any length."""
    body = re.sub(r" in [0-9.]+s( \([^)]*\))? *$", "", last.strip("= ").strip())
    counts = {}
    for part in body.split(", "):
        n, word = part.split(" ", 1)
        counts[word] = int(n)
    return counts


_STATUS = "|".join(sorted((re.escape(o.status) for o in OUTCOMES), key=len, reverse=True))


def verbose_statuses(lines: List[str]) -> Dict[str, str]:
    """Prompt id -> the status word its -v line shows (serial: ``defan::id WORD ...``; xdist:
    ``[gw0] [ 5%] WORD ... defan::id``)."""
    out = {}
    for line in lines:
        m = re.match(rf"^defan::(\S+) ({_STATUS})\b", line) or re.match(rf"^\[gw\d+\] \[ *\d+%\] ({_STATUS})\b.* defan::(\S+) *$", line)
        if m:
            a, b = m.groups()
            prompt, status = (a, b) if line.startswith("defan::") else (b, a)
            out[prompt] = status
    return out


@pytest.mark.slow
@XDIST
def test_every_output_of_one_run_says_the_same_words_and_counts(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: List[str]
) -> None:
    step = project.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    result = project.runpytest(*ARGS, "-v", "--junitxml=junit.xml", "--json-report", "--json-report-file=jr.json",
                               "--defan-report=r.json", *xdist)
    assert result.ret == 0, result.stdout.lines[-30:]
    out = result.stdout.str()
    report = json.loads((project.path / "r.json").read_text(encoding="utf-8"))

    # The JSON report's rows: each case has its expected outcome, and the figures' counts are
    # the sums of the outcomes that FCH and PMH count.
    by_id = {r["id"]: outcome_of(r) for r in report["rows"]}
    expected = {o: 0 for o in OUTCOMES}
    for row in report["rows"]:
        case = next(c for c in CASES if f"case {c[0]} (" in row["question"])
        assert by_id[row["id"]].word == case[2], (row["id"], case)
        expected[by_id[row["id"]]] += 1
    assert all(expected.values())  # every outcome is in this run
    counts = count_outcomes(report["rows"])
    assert counts == expected
    pooled = report["overall"]["pooled"]
    assert pooled["fch_count"] == sum(n for o, n in counts.items() if o.wrong)
    assert pooled["pmh_count"] == sum(n for o, n in counts.items() if o.misaligned)
    fch_part, pmh_part = figure_parts(counts)
    assert fch_part.startswith(f"FCH counts {pooled['fch_count']} = ") and pmh_part.startswith(f"PMH counts {pooled['pmh_count']} = ")

    # pytest's summary line counts the prompts by the outcomes' words.
    line = summary_line_counts(result.stdout.lines[-1])
    assert {o.word: line.get(o.word, 0) for o in OUTCOMES} == {o.word: n for o, n in counts.items()}, line

    # -v: each prompt's line says its outcome.
    statuses = verbose_statuses(result.stdout.lines)
    assert statuses == {i: o.status for i, o in by_id.items()}, statuses

    # The DefAn summary: the same counts in the same words, by domain too, and the sums.
    result.stdout.fnmatch_lines([f"outcomes of 27 prompts: {counts_text(counts)}", "; ".join(figure_parts(counts))])
    for domain in ("alpha", "beta"):
        mine = count_outcomes(r for r in report["rows"] if r["domain"] == domain)
        result.stdout.fnmatch_lines([f"  {domain}: {counts_text(mine)}"])
    # The two refusal groups count for RC and are inconsistent by the contract, in words.
    result.stdout.fnmatch_lines(["RC: 2 of 8 groups inconsistent for want of a claim: a group with no claim is "
                                 "inconsistent by the contract*"])
    # No claim and an empty gold read as words, never as an empty string or None.
    for bad in ("claim ''", "claim None", "gold ''", "claim: None"):
        assert bad not in out, bad
    assert re.search(r"NO CLAIM gold no prize awarded; Q: Who won the prize in case refusal-empty-gold", out)

    # JUnit XML: the outcome and the verdict line of every prompt.
    root = ET.parse(project.path / "junit.xml").getroot()
    props = {c.get("name"): {p.get("name"): p.get("value") for p in c.iter("property")} for c in root.iter("testcase")}
    for prompt, outcome in by_id.items():
        assert props[prompt]["defan_outcome"] == outcome.word
        assert props[prompt]["defan_verdict"].startswith(outcome.word + ":"), props[prompt]

    # pytest-json-report: each test's outcome, and the summary's counts.
    jr = json.loads((project.path / "jr.json").read_text(encoding="utf-8"))
    tests = {t["nodeid"].split("::", 1)[1]: t for t in jr["tests"]}
    for prompt, outcome in by_id.items():
        assert tests[prompt]["outcome"] == outcome.word and tests[prompt]["metadata"]["defan_outcome"] == outcome.word
    assert {o.word: jr["summary"].get(o.word, 0) for o in OUTCOMES} == {o.word: n for o, n in counts.items()}

    # The step summary: the same words and counts.
    text = step.read_text(encoding="utf-8")
    assert f"Outcomes of 27 prompts: {counts_text(counts)}." in text
    assert "; ".join(figure_parts(counts)) + "." in text
    assert "RC: 2 of 8 groups inconsistent for want of a claim" in text


# -- point 6: what a run prints once ---------------------------------------------------------------


@pytest.mark.slow
def test_a_big_run_prints_no_per_domain_or_stray_lines(project: pytest.Pytester) -> None:
    """Above 1,000 prompts no letters, and no line per domain (they came all at once after the
    calls, each after a stray ``defan`` line): the summary counts the outcomes by domain."""
    rows = [dict(r, question=r["question"].replace("(form", f"(batch {b}, form"), group=f"{r['group']}-{b}")
            for b in range(42) for r in ROWS if "error" not in r["question"]]
    project.path.joinpath("toy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = project.runpytest(*ARGS)
    assert result.ret == 0, result.stdout.lines[-20:]
    lines = result.stdout.lines
    assert len(rows) > 1000
    assert not [ln for ln in lines if re.match(r"^defan (alpha|beta): ", ln)], lines
    assert not [ln for ln in lines if ln.strip() == "defan"], lines
    result.stdout.fnmatch_lines([f"outcomes of {len(rows):,} prompts: *", "  beta: *", "  alpha: *"])


REG_CONFTEST = '''
import os
import defan_pytest

@defan_pytest.model("flip", version=os.environ.get("FLIP", "good"))
def flip(prompt):
    return "I don't know." if os.environ.get("FLIP") == "bad" else "Ada Lovelace"
'''


@pytest.mark.slow
def test_each_regression_verdict_is_printed_once(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """A scope that regressed fails its test, which prints its verdicts (FAILURES); the summary
    names the scope and the metrics instead of printing the same lines again."""
    # pytest's own short summary (FAILED ... - message) is not ours, and under CI it is not cut
    # to the terminal's width: counted as pytest prints it on a terminal.
    for name in ("CI", "BUILD_NUMBER"):
        monkeypatch.delenv(name, raising=False)
    project.makeconftest(REG_CONFTEST)
    rows = [dict(r, answer="Ada Lovelace", group=f"{r['group']}-{b}", question=r["question"] + f" #{b}")
            for b in range(4) for r in ROWS]
    project.path.joinpath("toy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    project.path.joinpath("thresholds.toml").write_text(
        "[defaults]\nmax_error_rate = 0.5\n\n[regression]\nmax_fch_rise = 0.02\n", encoding="utf-8")
    args = ["--defan-model=flip", *ARGS[1:]]
    base = project.runpytest(*args, "--defan-report=base.json")
    assert base.ret == 0, base.stdout.lines[-20:]
    monkeypatch.setenv("FLIP", "bad")
    worse = project.runpytest(*args, "--defan-baseline=base.json", "--defan-report=new.json")
    assert worse.ret == 1, worse.stdout.lines[-30:]
    comparison = json.loads((project.path / "new.json").read_text(encoding="utf-8"))["regression"]
    messages = [c["message"] for mets in comparison["scopes"].values() for c in mets.values()]
    regressed = [c["message"] for mets in comparison["scopes"].values() for c in mets.values() if c["regressed"]]
    assert regressed, comparison
    out = worse.stdout.str()
    for message in messages:
        assert out.count(message) == 1, message
    worse.stdout.fnmatch_lines(["REGRESSED overall: FCH, PMH, RC (the failure of defan::regression[overall] above)"])
    # Without tracebacks (--tb=no) the failures are not shown: the summary prints them in full, once.
    quiet = project.runpytest(*args, "--defan-baseline=base.json", "--tb=no")
    for message in regressed:
        assert quiet.stdout.str().count(message) == 1, message
