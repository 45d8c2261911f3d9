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


def make_rows(shift: int = 0) -> List[Dict[str, Any]]:
    """Rows of three domains (groups of 5, 5 and 1), one call error, injection strings in
    responses, claims, questions and the error."""
    rows: List[Dict[str, Any]] = []
    k = 0
    for domain, groups, size in (("sports", 4, 5), ("nobel", 6, 5), ("math", 6, 1)):
        for g in range(groups):
            for p in range(size):
                correct = (g + p + shift) % 3 != 0
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


def make_report(shift: int = 0, baseline: Optional[Dict[str, Any]] = None, model: str = "my-rag") -> Dict[str, Any]:
    """The JSON of a v1 report of :func:`make_rows`, judged by :data:`THRESHOLDS` (and against
    ``baseline`` by the regression gate, when given)."""
    rows = [ScoredRecord.from_json(r) for r in make_rows(shift)]
    summary = summarize(rows)
    limits = thresholds.parse_thresholds(thresholds.read_toml(THRESHOLDS, "thresholds.toml"), source="thresholds.toml")
    judged = level.check(summary, limits)
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
        rows, summary, ReportMeta.from_json(meta), thresholds=regression.thresholds_meta(limits, summary, "point"),
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


def test_verdict_codes_flips_and_consistency() -> None:
    base = make_report(shift=1)
    report = make_report()
    got = payload(report, base, "baseline.json")
    cols = got["cols"]
    rows = {r[cols.index("id")]: r for r in got["rows"]}
    # sports-q0000-p00: (0+0+0)%3 == 0 -> wrong now; shift 1 -> right before: a worse FCH flip.
    r = rows["sports-q0000-p00"]
    assert r[cols.index("verdict")] & verdicts.HALLUCINATED.code
    assert r[cols.index("flip")] & html.FCH_WORSE
    assert r[cols.index("old_verdict")] in (0, 2)
    assert rows["sports-q0003-p04"][cols.index("verdict")] == verdicts.CALL_ERROR.code
    assert got["kinds"] == ["RateLimitError"]
    assert got["baseline"]["figures"]["nobel"]["fch"] == base["domains"]["nobel"]["fch"]
    assert got["baseline"]["figures"]["overall"]["fch"] == base["overall"]["mean"]["fch"]
    # RC: a group of 5 with every response scored counts; math's single responses do not.
    assert set(got["consistent"]) == {f"{d}-q{g:04d}" for d, n in (("sports", 3), ("nobel", 6)) for g in range(n)}


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
