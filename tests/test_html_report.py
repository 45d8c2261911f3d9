"""The HTML report (defan_pytest.report.html): what it embeds, how it escapes, and its writers
(``defan html``, ``--defan-html``).  tests/test_browser.py opens it in a real browser."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from defan_pytest import verdicts
from defan_pytest.cli import main
from defan_pytest.gates import level, regression, thresholds
from defan_pytest.metrics.summary import summarize
from defan_pytest.records import Report, ReportMeta, ScoredRecord, error_kind
from defan_pytest.report import builder, html, writer

#: Text that would run if it were ever put into the page as markup.  Each sets window.__pwned.
INJECTIONS = [
    "<script>window.__pwned=1</script>",
    "</script><script>window.__pwned=2</script>",
    '<img src=x onerror="window.__pwned=3;alert(3)">',
    '<a href="javascript:window.__pwned=4">click me</a>',
    "<!--<script>window.__pwned=5</script>",
    '<svg onload="window.__pwned=6"></svg>',
]

THRESHOLDS = """\
[defaults]
max_fch = 0.40
max_pmh = 0.50
min_rc = 0.10
min_samples = 3

[regression]
max_fch_rise = 0.01
"""


def make_rows(shift: int = 0, right: Optional[Dict[str, bool]] = None, nobel: int = 6) -> List[Dict[str, Any]]:
    """Rows of three domains (groups of 5, 5 and 1), one call error, injection strings in
    responses, claims, questions and the error (``right``: domain -> every answer right, or
    every answer wrong; ``nobel``: its number of groups)."""
    rows: List[Dict[str, Any]] = []
    k = 0
    for domain, groups, size in (("sports", 4, 5), ("nobel", nobel, 5), ("math", 6, 1)):
        for g in range(groups):
            for p in range(size):
                correct = (g + p + shift) % 3 != 0 if domain not in (right or {}) else (right or {})[domain]
                aligned = (g * 7 + p) % 5 != 0
                err = f"RateLimitError: 429 {INJECTIONS[0]}" if (domain == "sports" and g == 3 and p == 4) else None
                response = INJECTIONS[(k // 4) % len(INJECTIONS)] if k % 4 == 0 else f"The answer is Answer {g}."
                k += 1
                rows.append({
                    "id": f"{domain}-q{g:04d}-p{p:02d}", "domain": domain, "group": f"{domain}-q{g:04d}",
                    "type": "name", "question": f"Who won event {g} (take {p}) <i>{domain}</i>?",
                    "answer": f"Answer {g}", "response": None if err else response,
                    "claim": None if err else (f"Answer {g}" if correct else INJECTIONS[2]),
                    "aligned": None if err else aligned, "correct": None if err else correct,
                    "error": err, "error_kind": error_kind(err),
                })
    return rows


def make_report(shift: int = 0, baseline: Optional[Dict[str, Any]] = None, model: str = "my-rag", *,
                limits_text: str = THRESHOLDS, decide: str = level.POINT,
                right: Optional[Dict[str, bool]] = None, nobel: int = 6) -> Dict[str, Any]:
    """The JSON of a v1 report of :func:`make_rows`, judged by ``limits_text`` (:data:`THRESHOLDS`)
    deciding by ``decide`` (and against ``baseline`` by the regression gate, when given)."""
    rows = [ScoredRecord.from_json(r) for r in make_rows(shift, right, nobel)]
    summary = summarize(rows)
    limits = thresholds.parse_thresholds(thresholds.read_toml(limits_text, "thresholds.toml"), source="thresholds.toml")
    judged = level.check(summary, limits, decide)
    meta = {
        "defan_pytest": "0.1.0", "producer": "pytest", "created": "2030-01-01T00:00:00Z",
        "model": {"name": f"{model} {INJECTIONS[0]}", "kind": "callable", "version": "1", "source": "abc"},
        "dataset": {"source": "toy.jsonl", "identity": "file:0123456789abcdef", "commit": None},
        "scorer": {"rules": "1", "ner": False, "pipeline": None, "version": None},
        "selection": {"domains": ["math", "nobel", "sports"], "sample": None, "seed": 0, "selected": len(rows),
                      "ran": len(rows), "narrowed": False, "shard": None},
        "calls": {"prompts": len(rows), "errors": 1}, "durations": {"total": 1.5},
    }
    comparison = None
    if baseline is not None:
        comparison = regression.judge(baseline, rows, limits, baseline_path="baseline.json")
    return builder.build_report(
        rows, summary, ReportMeta.from_json(meta), thresholds=regression.thresholds_meta(limits, summary, decide),
        verdicts=judged, gate_status=builder.gate_status(judged), regression=comparison,
    ).to_json()


def render(report: Dict[str, Any]) -> str:
    return html.render(Report.from_json(report))


def payload(report: Dict[str, Any], baseline: Optional[Dict[str, Any]] = None, path: Optional[str] = None) -> Dict[str, Any]:
    return html.payload(Report.from_json(report), Report.from_json(baseline) if baseline else None, path)


def embedded(page: str) -> Dict[str, Any]:
    """The JSON the page embeds."""
    m = re.search(r'<script type="application/json" id="defan-data">(.*?)</script>', page, re.S)
    assert m is not None
    return json.loads(m.group(1))  # type: ignore[no-any-return]


def test_the_page_is_self_contained_and_its_data_inert() -> None:
    report = make_report()
    page = render(report)
    assert page.startswith("<!DOCTYPE html>\n" + html.MARK)
    # Nothing fetched at view time: no URL to load, and a policy that allows only the two inline blocks.
    assert not re.search(r'\b(?:src|href)\s*=\s*"(?:https?:)?//', page)
    assert "http://" not in page.split('id="defan-data">')[0] and "cdn" not in page.lower()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert policy and "default-src 'none'" in policy.group(1) and "'unsafe-inline'" not in policy.group(1)
    # The data cannot close its element or open a comment: every "<" in it is \u003c.
    data = page.split('<script type="application/json" id="defan-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in data and "\\u003c/script>" in data
    assert page.count("</script>") == 2  # the data's and the code's own
    # ... and it is the report, whole: every text as it was.
    got = embedded(page)
    cols = got["cols"]
    by_id = {r[cols.index("id")]: r for r in got["rows"]}
    for row in report["rows"]:
        mine = by_id[row["id"]]
        assert mine[cols.index("response")] == row["response"]
        assert mine[cols.index("claim")] == row["claim"]
        assert mine[cols.index("question")] == row["question"]
    assert got["report"]["domains"] == json.loads(json.dumps(report["domains"]))
    assert got["report"]["meta"]["model"]["name"].endswith(INJECTIONS[0])


def test_the_scripts_hash_matches_the_policy() -> None:
    import base64
    import hashlib

    page = render(make_report())
    script = page.rsplit("<script>", 1)[1].split("</script>", 1)[0]
    style = page.split("<style>", 1)[1].split("</style>", 1)[0]
    for text in (script, style):
        digest = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in page


def test_outcomes_flips_and_consistency() -> None:
    base = make_report(shift=1)
    report = make_report()
    got = payload(report, base, "baseline.json")
    cols, outcomes = got["cols"], got["outcomes"]
    rows = {r[cols.index("id")]: r for r in got["rows"]}
    # Each row's outcome is an index into the page's outcomes, which are verdicts.OUTCOMES.
    assert [(o["name"], o["word"]) for o in outcomes] == [(o.name, o.word) for o in verdicts.OUTCOMES]
    by_name = {o["name"]: i for i, o in enumerate(outcomes)}
    for row in report["rows"]:
        assert outcomes[rows[row["id"]][cols.index("outcome")]]["name"] == verdicts.outcome_of(row).name
    # sports-q0000-p00: (0+0+0)%3 == 0 -> wrong now; shift 1 -> right before: a worse FCH flip.
    r = rows["sports-q0000-p00"]
    assert outcomes[r[cols.index("outcome")]]["wrong"]
    assert r[cols.index("flip")] & html.FCH_WORSE
    assert not outcomes[r[cols.index("old_outcome")]]["wrong"]
    assert rows["sports-q0003-p04"][cols.index("outcome")] == by_name[verdicts.CALL_ERROR.name]
    assert outcomes[by_name[verdicts.CALL_ERROR.name]]["error"] and not outcomes[by_name[verdicts.RIGHT.name]]["error"]
    assert got["kinds"] == ["RateLimitError"]
    assert got["baseline"]["figures"]["nobel"]["fch"] == base["domains"]["nobel"]["fch"]
    assert got["baseline"]["figures"]["overall"]["fch"] == base["overall"]["mean"]["fch"]
    # RC: a group of 5 with every response scored counts; math's single responses do not.
    assert set(got["consistent"]) == {f"{d}-q{g:04d}" for d, n in (("sports", 3), ("nobel", 6)) for g in range(n)}


def test_an_outcome_added_to_the_vocabulary_reaches_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    # What another outcome (say, a response with no claim at all) needs: an entry in
    # verdicts.OUTCOMES and outcome_of returning it; the page takes both when it is made.
    no_claim = verdicts.Outcome("vague_claim", "vague claim", "V", "red", 3 | 64, "a claim too vague to judge")
    monkeypatch.setattr(verdicts, "OUTCOMES", (*verdicts.OUTCOMES, no_claim))
    plain = verdicts.outcome_of
    monkeypatch.setattr(verdicts, "outcome_of", lambda r: no_claim if r.get("claim") is None and not r.get("error") else plain(r))
    report = make_report()
    report["rows"][1]["claim"] = None
    got = payload(report)
    assert got["outcomes"][-1] == {"name": "vague_claim", "word": "vague claim", "status": "VAGUE CLAIM", "code": 67,
                                   "wrong": True, "misaligned": True, "error": False}
    assert got["rows"][1][got["cols"].index("outcome")] == len(got["outcomes"]) - 1
    # ... and the page's script names no outcome of its own: every word it shows is the data's.
    script = (Path(html.__file__).parent / "report.js").read_text(encoding="utf-8")
    for o in verdicts.OUTCOMES:
        assert f'"{o.word}"' not in script and f'"{o.name}"' not in script


THRESHOLDS_STATES = THRESHOLDS + """
[domains.nobel]
max_fch = 0.30

[domains.sports]
min_samples = 5

[overall]
max_fch = 0.15
"""


@pytest.mark.parametrize("decide", [level.POINT, level.INTERVAL])
def test_each_figure_has_the_state_of_its_verdict(decide: str) -> None:
    report = make_report(limits_text=THRESHOLDS_STATES, decide=decide)
    judged = payload(report)["judged"]

    def state(scope: str, metric: str) -> Any:
        return judged[scope]["metrics"][metric]["state"], judged[scope]["metrics"][metric]["word"]

    beyond = ("not decided", "not decided") if decide == level.INTERVAL else ("fail", "fail")
    # nobel: FCH 0.33 > 0.30, its interval 0.10-0.64 reaches the limit; RC 0.00 < 0.10, interval 0.00-0.46.
    assert state("nobel", "fch") == beyond and state("nobel", "rc") == beyond
    assert state("nobel", "pmh") == ("pass", "pass") and state("nobel", "samples") == ("pass", "pass")
    # overall: FCH 0.35 > 0.15 with its whole interval (0.17-0.55, stratified over the domains'
    # groups) beyond: fails either way.
    assert state("overall", "fch") == ("fail", "fail")
    # sports: 4 groups < min_samples 5: the samples check fails the gate, its figures are not judged
    # (FCH 0.37 would pass 0.40: it is not shown as a failure).
    assert state("sports", "samples") == ("fail", "too few")
    assert state("sports", "fch") == ("not judged", "too few") and state("sports", "rc") == ("not judged", "too few")
    assert judged["sports"]["state"] == "fail" and judged["sports"]["word"] == "too few"
    assert state("math", "rc") == ("not judged", "n/a")
    assert judged["nobel"]["state"] == ("not decided" if decide == level.INTERVAL else "fail")
    # The gate table's rows carry the same words; the gate's own status is kept.
    rows = {(v["scope"], v["metric"]): v for v in payload(report)["report"]["gate"]}
    assert rows[("nobel", "fch")]["status"] == ("undecided" if decide == level.INTERVAL else "fail")
    assert (rows[("nobel", "fch")]["state"], rows[("nobel", "fch")]["word"]) == beyond


def test_a_regressed_figure_is_marked() -> None:
    base = make_report(right={"nobel": True}, nobel=30)
    report = make_report(baseline=base, right={"nobel": False}, nobel=30)
    judged = payload(report)["judged"]
    regressed = {(s, m) for s, mets in report["regression"]["scopes"].items() for m, c in mets.items() if c["regressed"]}
    assert regressed == {("nobel", "fch"), ("overall", "fch")}
    marked = {(s, m) for s, e in judged.items() for m, j in e["metrics"].items() if j["regressed"]}
    assert marked == regressed
    assert judged["nobel"]["metrics"]["fch"]["change"] == pytest.approx(1.0)
    assert judged["nobel"]["regressed"] and not judged["sports"]["regressed"]


def test_the_run_is_a_table_of_labelled_rows() -> None:
    report = make_report()
    report["meta"]["model"]["fingerprint"] = {"digest": "f" * 64, "sources": ["myapp.py"], "inputs": ["prompts/"]}
    report["meta"]["calls"].update(answered=54, cached=1, retries=2, error_kinds={"RateLimitError": 1})
    report["meta"]["durations"] = {"calls": 12.25, "scoring": 0.4, "total": 13.0}
    report["meta"]["later_key"] = {"a_b": 1}
    rows = dict(payload(report)["run"])
    for label in ("model", "fingerprint", "data set", "scorer", "selection", "calls", "timings", "thresholds", "limits",
                  "produced"):
        assert label in rows, label
    assert rows["model"].startswith("my-rag ") and "version 1" in rows["model"]
    assert "myapp.py" in rows["fingerprint"] and "1 declared input: prompts/" in rows["fingerprint"]
    assert rows["data set"] == "toy.jsonl · file:0123456789abcdef"
    assert "3 domains: math, nobel, sports" in rows["selection"] and "56 prompts selected" in rows["selection"]
    assert rows["calls"] == "56 prompts: 54 answered, 1 from the cache, 2 retries, 1 call errors, errors by kind: RateLimitError 1"
    assert rows["timings"] == "calls 12.2 s · scoring 400 ms · total 13.0 s"
    assert "decide point" in rows["thresholds"] and "regression confidence 95%" in rows["thresholds"]
    assert rows["later key"] == "a b 1"  # a key of a later version still shows
    assert not any("." in label for label in rows)  # labels, not dotted keys


def test_without_a_baseline_file_the_reports_own_regression_is_shown() -> None:
    pytest.importorskip("defan_pytest.gates.paired", reason="the regression gate's statistics are not there yet")
    report = make_report(baseline=make_report(shift=1))
    got = payload(report)
    cols = got["cols"]
    assert got["baseline"]["from"] == "regression"
    assert got["baseline"]["figures"]["nobel"]["fch"] == report["regression"]["scopes"]["nobel"]["fch"]["old"]
    worse = {f["id"] for f in report["regression"]["flipped"] if f["direction"] == "worse" and f["metric"] == "fch"}
    assert worse and worse == {r[cols.index("id")] for r in got["rows"] if r[cols.index("flip")] & html.FCH_WORSE}
    assert "flipped" not in got["regression"] and got["regression"]["flipped_counts"]["worse"] >= len(worse)


def test_each_row_carries_its_finish_reason_to_the_page() -> None:
    report = make_report()
    report["rows"][1]["finish_reason"] = "length"
    data = embedded(render(report))
    col = data["cols"].index("finish_reason")
    assert [r[col] for r in data["rows"][:3]] == [None, "length", None]
    # the page says it beside the response, where it is not the ordinary "stop"
    assert 'fin !== "stop"' in html._asset("report.js") and "cut by the token limit" in html._asset("report.js")


def test_long_texts_are_cut_in_the_page_only() -> None:
    report = make_report()
    report["rows"][1]["response"] = "x" * (html.MAX_TEXT + 500)
    got = payload(report)
    text = got["rows"][1][got["cols"].index("response")]
    assert text.startswith("x" * html.MAX_TEXT) and "500 more characters in the JSON report" in text
    assert got["truncated"] == 1


def test_a_lone_surrogate_does_not_cost_the_page() -> None:
    report = make_report()
    report["rows"][1]["response"] = "bad \ud800 text"
    page = render(report)
    page.encode("utf-8")
    assert "bad \ufffd text" in json.dumps(embedded(page), ensure_ascii=False)


def test_defan_html_writes_and_may_replace_only_its_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report_path, base_path, out = tmp_path / "r.json", tmp_path / "b.json", tmp_path / "r.html"
    base = make_report(shift=1)
    base_path.write_text(json.dumps(base), encoding="utf-8")
    report_path.write_text(json.dumps(make_report()), encoding="utf-8")
    assert main(["html", str(report_path), "--baseline", str(base_path), "-o", str(out)]) == 0
    assert "56 prompts" in capsys.readouterr().err
    assert writer.is_report(out)
    assert embedded(out.read_text(encoding="utf-8"))["baseline"]["from"] == "file"
    assert main(["html", str(report_path), "-o", str(out)]) == 0  # an earlier HTML report: replaced
    other = tmp_path / "notes.html"
    other.write_text("<html>mine</html>", encoding="utf-8")
    assert main(["html", str(report_path), "-o", str(other)]) == 2
    assert "is not a defan report" in capsys.readouterr().err and other.read_text() == "<html>mine</html>"
    assert main(["html", str(report_path), "-o", str(report_path)]) == 2  # never over its input
    assert "would overwrite the report" in capsys.readouterr().err
    assert main(["html", str(tmp_path / "missing.json"), "-o", str(tmp_path / "m.html")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_defan_html_refuses_a_baseline_of_another_data_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = make_report(shift=1)
    base["meta"]["dataset"]["identity"] = "file:ffffffffffffffff"
    (tmp_path / "b.json").write_text(json.dumps(base), encoding="utf-8")
    (tmp_path / "r.json").write_text(json.dumps(make_report()), encoding="utf-8")
    args = ["html", str(tmp_path / "r.json"), "--baseline", str(tmp_path / "b.json"), "-o", str(tmp_path / "r.html")]
    assert main(args) == 2
    assert "another data set" in capsys.readouterr().err
    assert main([*args, "--baseline-force"]) == 0


CONFTEST = '''
import defan_pytest

@defan_pytest.model("echo", version="1")
def echo(prompt):
    return "Ada Lovelace" if "even" in prompt else "<script>window.__pwned=1</script> Charles Babbage"
'''


def test_a_run_writes_its_html_report(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    rows = [{"question": f"Who wrote note {g} ({'even' if g % 2 == 0 else 'odd'}, take {p})?", "answer": "Ada Lovelace",
             "type": "name", "domain": "notes", "group": f"g{g}"} for g in range(4) for p in range(3)]
    pytester.path.joinpath("toy.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    args = ["--defan-model=echo", "--defan-dataset=toy.jsonl", "--defan-spacy-model=none", "--defan-cache=off",
            "-p", "no:cacheprovider"]
    result = pytester.runpytest(*args, "--defan-html=out/r.html")
    assert result.ret == 4 and "--defan-html" in "\n".join(result.stderr.lines + result.stdout.lines)  # no folder
    pytester.path.joinpath("out").mkdir()
    result = pytester.runpytest(*args, "--defan-html=out/r.html", "--defan-report=out/r.json")
    assert result.ret == 0, result.stdout.lines[-20:]
    result.stdout.fnmatch_lines(["html report: *r.html"])
    page = pytester.path.joinpath("out", "r.html").read_text(encoding="utf-8")
    report = json.loads(pytester.path.joinpath("out", "r.json").read_text(encoding="utf-8"))
    got = embedded(page)
    assert got["report"]["domains"] == report["domains"] and len(got["rows"]) == 12
    same = pytester.runpytest(*args, "--defan-html=out/r.json", "--defan-report=out/r.json")
    assert same.ret == 4 and "the same file as --defan-report" in "\n".join(same.stderr.lines + same.stdout.lines)
    assert pytester.runpytest(*args, "--defan-html=toy.jsonl").ret == 4  # never over the data set


def test_the_run_says_how_often_the_model_agreed_with_itself() -> None:
    from defan_pytest.metrics.repeats import agreement
    from defan_pytest.report.schema import validate_report

    right = {"response": "Paris", "correct": True, "aligned": True, "claim": "paris"}
    wrong = {"response": "Lyon", "correct": False, "aligned": True, "claim": "lyon"}
    report = make_report()
    report["meta"]["repeat"] = agreement([("nobel", [right, wrong, right]), ("nobel", [right] * 3)], 3, temperature=0)
    assert validate_report(report) == []  # an optional key of schema version 1
    rows = dict(payload(report)["run"])
    assert rows["repeats"] == ("3 asks of 2 prompts at temperature 0 · answers identical 1 of 2 · verdicts agree 1 of 2 · "
                               "FCH verdict flip rate 33.3% (2 of 6 pairs of asks)")
    assert "repeats" not in dict(payload(make_report())["run"])
    report["meta"]["repeat"]["overall"]["flip_rate"] = 2  # a flip rate is a probability
    assert any("flip_rate" in p for p in validate_report(report))


# -- several models side by side (a report of schema version 2) --------------------------------

def models_report(compare: bool = True) -> "ModelsReport":
    from defan_pytest.gates import regression
    from defan_pytest.records import ModelsReport

    old, new = make_report(model="old"), make_report(shift=1, model="new")
    runs = (Report.from_json(old), Report.from_json(new))
    limits = thresholds.parse_thresholds(thresholds.read_toml(THRESHOLDS, "thresholds.toml"), source="thresholds.toml")
    comparisons = {runs[1].meta.model_name: regression.judge(old, runs[1].rows, limits)} if compare else {}
    return ModelsReport(runs=runs, compare_to=runs[0].meta.model_name if compare else None, comparisons=comparisons)


def test_the_page_of_several_models_embeds_them_inertly() -> None:
    from defan_pytest.report.html import models

    both = models_report()
    page = html.render_models(both)
    assert page.count(html.MARK) == 1
    data = page.split('<script type="application/json" id="defan-data">', 1)[1].split("</script>", 1)[0]
    # No text of a model or a data set can close the script or open a comment.
    assert "<" not in data
    payload = json.loads(data)
    assert payload == json.loads(json.dumps(models.models_payload(both)))
    assert payload["models"] == list(both.models) and payload["compare_to"] == both.compare_to
    # Every prompt once, with each model's outcome; the figures of every scope by model.
    assert len(payload["prompts"]) == len({r.id for r in both.runs[0].rows})
    first = payload["prompts"][0]
    assert set(first["by"]) == set(both.models)
    assert set(payload["figures"][both.models[0]]) == {*both.runs[0].domains, "overall"}
    assert payload["comparisons"][both.models[1]]["status"] in ("pass", "fail", "skipped")
    # The page's policy allows its own inline style and script only.
    csp = page.split('http-equiv="Content-Security-Policy" content="', 1)[1].split('"', 1)[0]
    assert "script-src 'sha256-" in csp and "unsafe-inline" not in csp
