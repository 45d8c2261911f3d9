"""``defan history`` (defan_pytest.cli.history, report.history, report.html.history): a folder of
a branch's reports as FCH, PMH and RC per domain over time, in the reports' own time order, the
regressions between consecutive reports marked; the page, the Markdown summary, the messages of
files it cannot read.  tests/test_browser.py opens the page in Chromium, tests/test_hostile_reports.py
feeds it every hostile report."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List

import pytest

from defan_pytest.cli import main

from test_html_report import INJECTIONS, make_report

#: Three reports of one branch: where each lies, when it says it was made, and what it holds.
#: The folders' order is not the time order, and the second's time, written with its offset,
#: sorts after the third's as text though it is earlier (20:00Z against 22:00Z).
THREE = (
    ("c-run", "2030-01-01T12:00:00Z", {"nobel": True}),    # nobel right
    ("a-run", "2030-01-02T01:00:00+05:00", {"nobel": False}),  # nobel wrong: a regression
    ("b-run", "2030-01-01T22:00:00Z", None),                # as usual: FCH better again, RC worse
)


def write_history(folder: Path) -> List[Dict[str, Any]]:
    """The three reports of :data:`THREE` under ``folder`` (each in its own folder, as the
    workflow downloads them), in time order."""
    reports = []
    for name, created, right in THREE:
        report = make_report(right=right, nobel=20)
        report["meta"]["created"] = created
        (folder / name).mkdir(parents=True)
        (folder / name / "defan-report.json").write_text(json.dumps(report), encoding="utf-8")
        reports.append(report)
    return reports


def embedded(page: Path) -> Dict[str, Any]:
    """The history a page draws (its inert JSON)."""
    text = page.read_text(encoding="utf-8")
    data = re.search(r'<script type="application/json" id="defan-data">(.*?)</script>', text, re.S)
    assert data is not None
    return json.loads(data.group(1))  # type: ignore[no-any-return]


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_history_is_in_the_reports_own_time_with_the_regression_marked(here: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    reports = write_history(here / "reports")
    assert main(["history", "reports", "--html", "history.html", "--summary", "summary.md"]) == 0
    out, err = capsys.readouterr()
    data = embedded(here / "history.html")
    points = data["points"]
    assert [p["path"].split("/")[1] for p in points] == ["c-run", "a-run", "b-run"]  # by time, not by name
    assert [p["created"] for p in points] == [created for _n, created, _r in THREE]
    assert data["scopes"] == ["sports", "nobel", "math", "overall"]
    assert [m["name"] for m in data["metrics"]] == ["fch", "pmh", "rc"]
    for point, report in zip(points, reports):
        assert point["figures"]["nobel"]["fch"] == report["domains"]["nobel"]["fch"]
        assert point["figures"]["overall"]["fch_ci"] == report["overall"]["mean"]["fch_ci"]
    first, worse, better = points
    assert first["compared"] is None and first["regressed"] == {}
    assert worse["regressed"] == {"nobel": ["fch"], "overall": ["fch"]} and worse["compared"] is None
    assert worse["beyond"]["nobel"] == ["fch"]  # beyond max_fch 0.40 in its own run too
    # Every wrong answer was the same claim (consistent groups); as usual, nobel's RC falls.
    assert better["regressed"] == {"nobel": ["rc"], "overall": ["rc"]}  # the mean of two domains falls past 0.02 too
    assert out.splitlines()[0] == ("history: 3 reports, 2030-01-01T12:00:00Z to 2030-01-01T22:00:00Z, 4 regressions")
    assert sum(1 for line in out.splitlines() if line.startswith("2030-01-02T01:00:00+05:00: REGRESSED nobel: FCH")) == 1
    assert "not read" not in err and err.startswith("defan: wrote ") and "history.html (3 reports)" in err
    summary = (here / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("## DefAn history: my-rag &lt;script&gt;")  # the model's name, inert
    fch = summary.split("### FCH", 1)[1].split("###", 1)[0]
    rows = [line for line in fch.splitlines() if line.startswith("| 2030")]
    assert [r.split(" | ")[0] for r in rows] == ["| 2030-01-01 12:00", "| 2030-01-02 01:00", "| 2030-01-01 22:00"]
    assert "| **1.000** 🔺 ✗ |" in rows[1] and "🔺" not in rows[0] + rows[2]
    rc = summary.split("### RC", 1)[1].split("###", 1)[0]
    assert "🔺" in [line for line in rc.splitlines() if line.startswith("| 2030-01-01 22:00")][0]
    assert "### Regressions" in summary and "<script>" not in summary


def test_last_keeps_the_newest_reports_and_a_tolerance_file_decides(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_history(here / "reports")
    assert main(["history", "reports", "--last", "2", "--html", "h.html"]) == 0
    points = embedded(here / "h.html")["points"]
    assert [p["path"].split("/")[1] for p in points] == ["a-run", "b-run"]
    assert points[0]["compared"] is None and points[0]["regressed"] == {}  # the first shown: nothing before it
    assert points[1]["regressed"] == {"nobel": ["rc"], "overall": ["rc"]}
    (here / "loose.toml").write_text("[defaults]\nmax_fch = 0.9\n\n[regression]\nmax_fch_rise = 1.0\nmax_pmh_rise = 1.0\nmax_rc_drop = 1.0\n",
                                    encoding="utf-8")
    assert main(["history", "reports", "--thresholds", "loose.toml", "--html", "h.html"]) == 0
    assert all(p["regressed"] == {} for p in embedded(here / "h.html")["points"])
    capsys.readouterr()
    (here / "bad.toml").write_text("[regression]\nmax_fch_rise = 'a lot'\n", encoding="utf-8")
    assert main(["history", "reports", "--thresholds", "bad.toml", "--html", "h.html"]) == 2
    assert "bad.toml" in capsys.readouterr().err


def test_reports_that_cannot_be_compared_are_said_and_the_rest_is_judged(here: Path) -> None:
    reports = write_history(here / "reports")
    other = json.loads(json.dumps(reports[0]))
    other["meta"]["dataset"]["identity"] = "file:ffffffffffffffff"
    other["meta"]["created"] = "2030-01-01T13:00:00Z"
    (here / "reports" / "other.json").write_text(json.dumps(other), encoding="utf-8")
    assert main(["history", "reports", "--html", "h.html"]) == 0
    points = embedded(here / "h.html")["points"]
    assert [p["path"].rsplit("/", 2)[-2:] for p in points][1] == ["reports", "other.json"]
    assert points[1]["compared"].startswith("the report before: made on another data set")
    assert points[2]["compared"].startswith("the report before: made on another data set")  # and back
    assert points[2]["regressed"] == {}  # not judged against a report of another data set


def test_each_file_it_cannot_read_is_one_message_and_no_report_is_an_error(here: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    write_history(here / "reports")
    (here / "reports" / "notes.json").write_text('{"not": "a report"}', encoding="utf-8")
    (here / "reports" / "broken.json").write_text("{", encoding="utf-8")
    timeless = make_report()
    timeless["meta"]["created"] = "last Tuesday"
    (here / "reports" / "timeless.json").write_text(json.dumps(timeless), encoding="utf-8")
    assert main(["history", "reports", "--html", "h.html", "--summary", "s.md"]) == 0
    out, err = capsys.readouterr()
    said = [line for line in err.splitlines() if line.startswith("defan: history: not read: ")]
    assert len(said) == 3
    assert any("notes.json: not a defan-pytest report" in s for s in said)
    assert any("broken.json: not JSON" in s for s in said)
    assert any("timeless.json: its time (meta.created 'last Tuesday') is not an ISO 8601 date and time" in s for s in said)
    assert len(embedded(here / "h.html")["skipped"]) == 3 and "### Not read" in (here / "s.md").read_text("utf-8")
    (here / "empty").mkdir()
    (here / "empty" / "x.json").write_text("[]", encoding="utf-8")
    assert main(["history", "empty", "--html", "e.html"]) == 2
    assert "history: empty: no report could be read (1 *.json files)" in capsys.readouterr().err
    assert not (here / "e.html").exists()
    assert main(["history", "nowhere"]) == 2
    assert "history: nowhere: not a folder (it does not exist)" in capsys.readouterr().err
    assert main(["history", "reports", "--last", "0"]) == 2


def test_the_page_replaces_an_earlier_page_and_nothing_else(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_history(here / "reports")
    (here / "notes.html").write_text("<p>my notes</p>", encoding="utf-8")
    assert main(["history", "reports", "--html", "notes.html"]) == 2
    assert "--html notes.html" in capsys.readouterr().err and (here / "notes.html").read_text() == "<p>my notes</p>"
    assert main(["history", "reports", "--html", "h.html"]) == 0
    first = (here / "h.html").read_text(encoding="utf-8")
    assert first.startswith("<!DOCTYPE html>\n<!-- defan-pytest-report (HTML history) -->")
    assert main(["history", "reports", "--last", "1", "--html", "h.html"]) == 0  # its own earlier page: replaced
    assert len(embedded(here / "h.html")["points"]) == 1
    # The page allows its own style and script only (the run's page's policy) and embeds the
    # data inert: no "<" of a report reaches the markup.
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', first)
    assert policy is not None and policy.group(1).startswith("default-src 'none'; base-uri 'none'; form-action 'none';")
    assert "script-src 'sha256-" in policy.group(1) and "unsafe" not in policy.group(1)
    payload = first.split('id="defan-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in payload and INJECTIONS[0] not in first
