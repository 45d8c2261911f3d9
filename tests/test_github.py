"""Tests of defan_pytest.report.github: the Markdown step summary and the ::error annotations."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from defan_pytest.records import Report
from defan_pytest.report import github

META = {
    "defan_pytest": "0.1.0", "producer": "pytest", "created": "2026-11-30T00:00:00Z",
    "model": {"name": "my-rag", "kind": "callable", "version": None, "source": "ab"},
    "dataset": {"source": "public", "identity": "DefAn-public@3fcefd0ee774"},
    "scorer": {"rules": "2026.11.1", "ner": False, "pipeline": None, "version": None},
    "selection": {"domains": ["nobel"], "ran": 30, "sample": "30", "seed": 1, "selected": 30},
    "calls": {}, "durations": {},
}


def report(regression: dict[str, Any] | None = None, **over: Any) -> Report:
    base: dict[str, Any] = {
        "schema": "defan-pytest-report", "schema_version": 1,
        "meta": META,
        "thresholds": {"source": "thresholds.toml", "decide": "point", "figure": "mean",
                       "limits": {"nobel": {"max_fch": 0.35}, "overall": {"max_fch": 0.9}}},
        "gate_status": "fail",
        "gate": [
            {"scope": "nobel", "metric": "fch", "status": "fail", "value": 0.41, "limit": 0.35,
             "message": "nobel: FCH 0.41 > max_fch 0.35 (95% CI 0.38-0.44, n=30)"},
            {"scope": "overall", "metric": "fch", "status": "pass", "value": 0.41, "limit": 0.9, "message": "ok"},
        ],
        "regression": regression,
        "domains": {"nobel": {"n": 30, "scored": 30, "errors": 0, "groups": 2, "scored_groups": 2, "fch": 0.41,
                              "fch_ci": [0.38, 0.44], "pmh": 0.1, "pmh_ci": [0.05, 0.2], "rc": 0.5, "rc_ci": [0.1, 0.9]}},
        "overall": {"mean": {"n": 30, "scored": 30, "errors": 0, "groups": 2, "fch": 0.41}, "pooled": {}},
        "rows": [],
    }
    base.update(over)
    return Report.from_json(base)


REGRESSION = {
    "status": "fail", "reason": None, "confidence": 0.95,
    "baseline": {"path": "base.json", "created": "2026-11-29T00:00:00Z", "model": "my-rag"},
    "pairs": {"paired": 30, "groups": 2},
    "scopes": {"nobel": {"fch": {"old": 0.2, "new": 0.41, "change": 0.21, "interval": [0.1, 0.3], "tolerance": 0.02,
                                 "worse_flips": 7, "better_flips": 1, "regressed": True,
                                 "message": "nobel: FCH 0.200 -> 0.410 (+0.210): worse"}}},
    "flipped": [{"id": "nobel-q0001-p00", "question": "Who won | <b>x</b>?", "answer": "Marie Curie",
                 "direction": "worse", "old_response": "Marie Curie", "new_response": "<script>alert(1)</script>"}],
}


def test_summary_has_the_table_breaches_regressions_and_flips() -> None:
    text = github.step_summary(report(REGRESSION))
    assert text.startswith("## ❌ DefAn: my-rag")
    assert "level gate: **fail**" in text and "regression gate: **fail**" in text
    assert "| nobel | 2 | 0.410 [0.380, 0.440] | 0.35 |" in text
    assert "- nobel: FCH 0.41 &gt; max\\_fch 0.35 (95% CI 0.38-0.44, n=30)" in text
    assert "| nobel | FCH | 0.200 | 0.410 | +0.210 | [+0.100, +0.300] | 0.02 | 7 / 1 | **REGRESSED** |" in text
    # Model text cannot break the table or inject HTML.
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert "Who won \\| &lt;b&gt;x&lt;/b&gt;?" in text


def test_summary_of_a_passing_run_without_baseline() -> None:
    r = report(gate_status="pass", gate=[])
    text = github.step_summary(r)
    assert text.startswith("## ✅") and "regression gate: no baseline" in text and "Breaches" not in text


def test_annotations_point_at_the_thresholds_lines() -> None:
    lines = github.error_annotations(report(REGRESSION), {"nobel/fch": 12, "regression/nobel/fch": 30})
    assert lines == [
        "::error file=thresholds.toml,line=12,title=DefAn gate[nobel]::nobel: FCH 0.41 > max_fch 0.35 (95%25 CI "
        "0.38-0.44, n=30)",
        "::error file=thresholds.toml,line=30,title=DefAn regression[nobel]::nobel: FCH 0.200 -> 0.410 (+0.210): worse",
    ]


def test_workflow_command_escaping() -> None:
    assert github.escape_data("50%\nnext\r") == "50%25%0Anext%0D"
    assert github.escape_property("a:b,c") == "a%3Ab%2Cc"


def test_step_summary_file_is_appended(tmp_path: Path, monkeypatch: Any) -> None:
    path = tmp_path / "summary.md"
    path.write_text("# earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(path))
    assert github.append_step_summary("## ours") == path
    assert path.read_text(encoding="utf-8") == "# earlier step\n## ours\n"
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    assert github.append_step_summary("x") is None


def rows(*specs: tuple[str, str | None, bool, bool]) -> list[dict[str, Any]]:
    """Report rows of group ``nobel-q1``: (id suffix, claim, aligned, correct) each."""
    return [{"id": f"nobel-q1-p{i}", "domain": "nobel", "group": "nobel-q1", "type": "name", "claim": claim,
             "aligned": aligned, "correct": correct, "error": None, "question": "Who won in 1940?", "answer": "",
             "response": "I don't know."} for i, (claim, aligned, correct) in enumerate(specs)]


def test_summary_counts_the_outcomes_in_the_words_of_every_output() -> None:
    """Fifteen refusals of a no-prize question: fifteen 'no claim' (FCH's and PMH's 15), and the
    group said to be inconsistent by the contract, not left at 'RC 0'."""
    text = github.step_summary(report(rows=rows(*[(None, False, False)] * 15)))
    assert "Outcomes of 15 prompts: 15 no claim." in text
    assert "FCH counts 15 (15 no claim); PMH counts 15 (15 no claim)." in text
    assert "RC: 1 of 1 groups inconsistent for want of a claim: a group with no claim is inconsistent by the contract" in text
    mixed = github.step_summary(report(rows=rows(("none", True, True), ("Bob", True, False), (None, False, False))))
    assert "Outcomes of 3 prompts: 1 right, 1 hallucinated, 1 no claim." in mixed
    assert "FCH counts 2 = 1 hallucinated + 1 no claim; PMH counts 1 (1 no claim)." in mixed


def test_a_shards_gate_is_not_judged_and_breaches_nothing() -> None:
    """A shard's gates are skipped: the summary says they were not judged (not 'skipped' beside
    a list of breaches), and no ::error annotation points at a limit."""
    meta = dict(META, selection=dict(META["selection"], shard="1/2"))
    shard = report(REGRESSION, meta=meta, gate_status="skipped")
    text = github.step_summary(shard)
    assert "level gate: **not judged** (shard 1/2: a shard's gates are skipped; `defan merge` judges" in text
    assert "Breaches" not in text and "max\\_fch 0.35 (95% CI" not in text
    assert [a for a in github.error_annotations(shard) if "gate[" in a] == []


# -- text from outside is inert ------------------------------------------------------------------

EVIL = "\n::error::pwned\x1b[31m\x07 ![i](http://evil.example/phone.png) <img src=x onerror=alert(1)> | `x` $y$"


def test_a_hostile_reports_summary_shows_its_text_and_makes_nothing_of_it() -> None:
    """The model's name, the sample, the baseline's date and model, a domain name, a breach and
    a flipped prompt's answers hold newlines, ESC, BEL, an image, HTML and a cell's end: the
    summary shows each as text, in its own cell."""
    meta = dict(META, model=dict(META["model"], name="m" + EVIL),
                selection=dict(META["selection"], sample="![x](http://evil.example/phone.png)<img src=y>"))
    regression = dict(REGRESSION, baseline={"path": "b.json", "created": "2026" + EVIL, "model": "old" + EVIL})
    regression["flipped"] = [dict(REGRESSION["flipped"][0], question="Who" + EVIL, new_response="Bob" + EVIL)]
    domains = {"nobel" + EVIL: report().domains["nobel"]}
    gate = [{"scope": "nobel", "metric": "fch", "status": "fail", "message": "nobel" + EVIL}]
    text = github.step_summary(report(regression, meta=meta, domains=domains, gate=gate))
    assert "pwned" in text and "phone.png" in text  # shown...
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", text)  # ...with no control character,
    assert "![" not in text and "<img" not in text and "$y$" not in text  # no image, no HTML, no math,
    assert "`x`" not in text
    for table in re.findall(r"(?:^\|.*\n)+", text, re.MULTILINE):  # and no row with a cell too many
        widths = {len(re.findall(r"(?<!\\)(?:\\\\)*\|", row)) for row in table.splitlines()}
        assert len(widths) == 1, table
    assert "sample \\!\\[x\\](http://evil.example/phone.png)&lt;img src=y&gt;" in text


def test_annotations_of_a_hostile_report_are_one_line_each() -> None:
    gate = [{"scope": "nobel" + EVIL, "metric": "fch", "status": "fail", "message": "nobel" + EVIL}]
    lines = github.error_annotations(report(gate=gate))
    assert len(lines) == 1 and "\n" not in lines[0] and "\x1b" not in lines[0] and "\x07" not in lines[0]
    # The title's colons are escaped: the command ends where we say, the data is its message.
    assert lines[0].startswith("::error file=thresholds.toml,title=DefAn gate[nobel %3A%3Aerror%3A%3Apwned")


def test_the_summary_states_the_model_s_agreement_with_itself_and_the_gate_s_noise() -> None:
    from defan_pytest.metrics.repeats import agreement, noise_sentence

    right = {"response": "Marie Curie", "correct": True, "aligned": True, "claim": "marie curie"}
    wrong = {"response": "Pierre Curie", "correct": False, "aligned": True, "claim": "pierre curie"}
    measured = agreement([("nobel", [right, wrong]), ("nobel", [right, right])], 2, temperature=0)
    text = github.step_summary(report({**REGRESSION, "noise": noise_sentence(measured)},
                                      meta={**META, "repeat": measured}))
    assert ("defan repeat: 2 asks of 2 prompts: answers identical 1 of 2 (50%), verdicts agree 1 of 2 (50%), FCH verdict "
            "flip rate 50.0% (1 of 2 pairs)") in text
    assert ("Noise: the model's own verdict flip rate at temperature 0 is 50.0% (2 repeats of 2 prompts): changes below "
            "\\~that are noise.") in text  # Markdown-escaped
    assert "repeat" not in github.step_summary(report(REGRESSION)).lower()


def test_the_summary_of_several_models_is_one_table_then_each_model() -> None:
    from test_html_report import models_report

    both = models_report()
    text = github.models_step_summary(both)
    lines = text.splitlines()
    assert lines[0].startswith("## ") and "DefAn: 2 models" in lines[0]
    header = next(line for line in lines if line.startswith("| scope |"))
    # A model's name (hostile here: it holds markup) is one escaped cell: the table keeps its columns.
    assert header.count(" | ") == 2 and "<script>" not in header
    table = lines[:lines.index("<details>")]
    rows = [line for line in table if line.startswith("| ") and not line.startswith("| scope")]
    assert [r.split(" | ")[0][2:] for r in rows] == [*both.runs[0].domains, "overall"]
    assert text.count("<details>") == 2 and "### Against" in text
    assert all(not line.startswith("::") for line in lines)


def test_a_summary_decided_by_interval_says_so_and_marks_what_the_interval_passed() -> None:
    thresholds = {"source": "thresholds.toml", "decide": "interval", "figure": "mean",
                  "limits": {"nobel": {"max_fch": 0.35}, "overall": {"max_fch": 0.9}}}
    passed = [{"scope": "nobel", "metric": "fch", "status": "pass", "value": 0.41, "limit": 0.35,
               "message": "nobel: FCH 0.41 > max_fch 0.35 (95% CI 0.30-0.52, n=30); not decided: the interval reaches the limit"},
              {"scope": "overall", "metric": "fch", "status": "pass", "value": 0.41, "limit": 0.9, "message": "ok"}]
    text = github.step_summary(report(thresholds=thresholds, gate_status="pass", gate=passed))
    assert "| nobel | 2 | 0.410 [0.380, 0.440] ~ | 0.35 |" in text
    assert ("Decided by interval (`--defan-decide=interval`): a figure fails only when its whole 95% interval lies "
            "beyond its limit; ~ = beyond its limit, passed because its interval reaches it.") in text
    assert "0.410 ~ | 0.9" not in text  # the overall figure is within its limit
    within = [dict(passed[1])]
    quiet = github.step_summary(report(thresholds=thresholds, gate_status="pass", gate=within))
    assert "Decided by interval" in quiet and " ~ |" not in quiet and "~ = beyond" not in quiet
    assert "Decided by interval" not in github.step_summary(report())  # decided on the point


POWER = {"power": 0.9, "level": 0.0025, "basis": "comparison", "noise": "answers",
         "scopes": {"nobel": {"fch": 0.032, "pmh": 0.03, "rc": None}, "overall": {"fch": 0.011}}}


def test_the_summary_says_what_the_run_could_catch() -> None:
    # Issue 33: the smallest change each judged scope catches, in the pull-request comment too.
    text = github.step_summary(report(REGRESSION, power=POWER))
    part = text.split("### What this run could catch", 1)[1]
    assert "Smallest change this sample catches (90% power, one-sided level 0.0025," in part
    assert "- nobel FCH +3.2 PMH +3.0 RC none points\n- overall FCH +1.1 points\n\n(\\* more than twice" in part
    assert "What this run could catch" not in github.step_summary(report(REGRESSION))


def test_a_hostile_power_block_says_nothing_or_text() -> None:
    for hostile in ({"scopes": [1, 2]}, {"scopes": {"nobel": "x"}}, {"scopes": {"nobel": {"fch": "1e9"}}, "power": "all"},
                    {"scopes": {"nobel" + EVIL: {"fch" + EVIL: float("inf")}}, "level": "?", "noise": EVIL}):
        text = github.step_summary(report(REGRESSION, power=hostile))
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", text) and "<img" not in text
