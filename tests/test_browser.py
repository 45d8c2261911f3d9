"""The HTML report in a real browser: headless Chromium (Debian's ``chromium``, which .ci/run
installs) driven by Playwright for Python.

Checks that the charts and tables show the report's numbers, that the filters, the search, the
pages and the group view work, that the console stays clean (a script error or a blocked inline
block would show there), and that text from the model or the data set executes nothing.  Saves a
screenshot of the page (its path is printed; ``DEFAN_SCREENSHOT_DIR`` keeps a copy there).
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

from defan_pytest.metrics.summary import summarize
from defan_pytest.records import Report
from defan_pytest.report import html
from defan_pytest.report.builder import gate_status

from test_html_report import INJECTIONS, make_report, make_rows

pytestmark = pytest.mark.slow  # a real Chromium
sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed (the test extras)")


def _chromium() -> str | None:
    for candidate in (os.environ.get("DEFAN_CHROMIUM"), shutil.which("chromium"), shutil.which("chromium-browser"),
                      "/usr/bin/chromium"):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    path = _chromium()
    if path is None:
        pytest.skip("no Chromium: install Debian's chromium package (.ci/run does), or set DEFAN_CHROMIUM")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


class Page:
    """A page with the report open, and what the browser said while it was open."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.errors: List[str] = []
        self.dialogs: List[str] = []
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.page.on("console", lambda m: self.errors.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.goto(path.as_uri())
        self.page.wait_for_selector("body[data-ready='1']", state="attached", timeout=60_000)

    def text(self, selector: str) -> str:
        return str(self.page.inner_text(selector))

    def count(self) -> int:
        return int(self.page.get_attribute("#p-info", "data-count") or -1)

    def choose(self, select: str, value: str) -> int:
        self.page.select_option(select, value)
        return self.count()

    def wait_count(self, n: int) -> None:
        """Wait for the table to show ``n`` prompts (the search waits for typing to stop).  A
        selector wait: the page's policy forbids the string evaluation wait_for_function uses."""
        self.page.wait_for_selector(f"#p-info[data-count='{n}']", state="attached", timeout=60_000)

    def ids(self) -> List[str]:
        return list(self.page.eval_on_selector_all("#rows tbody tr[data-id]", "rs => rs.map(r => r.dataset.id)"))


def _open(browser: Any, tmp_path: Path, report: Dict[str, Any], baseline: Any = None, name: str = "r.html") -> Page:
    path = tmp_path / name
    base = Report.from_json(baseline) if baseline else None
    path.write_text(html.render(Report.from_json(report), baseline=base, baseline_path="baseline.json" if base else None),
                    encoding="utf-8")
    return Page(browser, path)


def _f3(x: float) -> str:
    return f"{x:.3f}"


def test_charts_tables_filters_groups_and_nothing_runs(browser: Any, tmp_path: Path) -> None:
    base = make_report(shift=1)
    report = make_report()
    view = _open(browser, tmp_path, report, baseline=base)
    page = view.page

    # The header: the model's name as text (an injection string in it), the gates' words.
    assert page.title() == f"DefAn: my-rag {INJECTIONS[0]}"
    assert INJECTIONS[0] in view.text("#title")
    assert view.text("#gate-status") == f"level gate: {report['gate_status']}"

    # A chart per metric, each domain's figure with its interval, the limit and the baseline.
    for metric in ("fch", "pmh", "rc", "error_rate"):
        assert page.locator(f"#chart-{metric} g.bar-row").count() == 4  # three domains and overall
    for domain in ("sports", "nobel", "math"):
        figs = report["domains"][domain]
        row = f'#chart-fch g.bar-row[data-scope="{domain}"]'
        lo, hi = figs["fch_ci"]
        assert page.text_content(f"{row} text.v") == f"{_f3(figs['fch'])} [{_f3(lo)}, {_f3(hi)}]"
        assert page.text_content(f"{row} tspan.lim") == "max 0.4"
        assert page.text_content(f"{row} tspan.was") == f"baseline {_f3(base['domains'][domain]['fch'])}"
        assert page.locator(f"{row} line.limit").count() == 1 and page.locator(f"{row} path.base").count() == 1
        assert page.locator(f"{row} line.ci").count() == 3
        cell = page.inner_text(f'#figures-table tr[data-scope="{domain}"] td[data-metric="pmh"]')
        assert cell.startswith(_f3(figs["pmh"]))
    overall = report["overall"]["mean"]
    assert page.text_content('#chart-pmh g.bar-row[data-scope="overall"] text.v').startswith(_f3(overall["pmh"]))
    # math has no RC (groups of one): a dash, no bar.
    assert page.text_content('#chart-rc g.bar-row[data-scope="math"] text.v') == "–"
    # Every gate verdict, with its message.
    assert page.locator("#gate-table tr").count() == len(report["gate"]) + 1
    failing = [v for v in report["gate"] if v["status"] == "fail"]
    assert failing and failing[0]["message"] in view.text("#gate-table")

    # The prompts: 56, one page; each filter against what the report says.
    rows = report["rows"]
    assert view.count() == len(rows) == len(view.ids())
    assert view.choose("#f-domain", str(embedded_index(page, "nobel"))) == sum(r["domain"] == "nobel" for r in rows)
    view.choose("#f-domain", "")
    wrong = sum(1 for r in rows if not r["error"] and r["correct"] is not True)
    assert view.choose("#f-verdict", "fch") == wrong
    assert view.choose("#f-verdict", "pmh") == sum(1 for r in rows if not r["error"] and r["aligned"] is not True)
    assert view.choose("#f-verdict", "error") == 1 and view.ids() == ["sports-q0003-p04"]
    assert INJECTIONS[0] in view.text("#rows tbody")  # the error message, as text
    view.choose("#f-verdict", "")
    old = {r["id"]: r for r in base["rows"]}
    worse = sorted(r["id"] for r in rows if not r["error"] and old[r["id"]]["correct"] and not r["correct"])
    assert view.choose("#f-flip", "worse") == len(worse) and sorted(view.ids()) == worse
    view.choose("#f-flip", "")
    assert view.choose("#f-kind", "any") == 1
    view.choose("#f-kind", "")
    page.fill("#f-search", "EVENT 5 (take")
    view.wait_count(6)
    assert sorted(view.ids()) == sorted(r["id"] for r in rows if "event 5 (take" in r["question"])
    page.fill("#f-search", INJECTIONS[1])  # searching for markup finds it as text
    view.wait_count(sum(r["response"] == INJECTIONS[1] for r in rows))
    page.fill("#f-search", "")
    view.wait_count(len(rows))

    # The group view: a group's key in the table opens it; every paraphrase side by side.
    page.click('#rows button[data-group="nobel-q0002"]')
    group = [r for r in rows if r["group"] == "nobel-q0002"]
    assert page.locator("#group-table tr[data-id]").count() == len(group) == 5
    info = view.text("#group-info")
    assert "nobel-q0002" in info and "gold Answer 2" in info and "RC: inconsistent" in info
    table = view.text("#group-table")
    for r in group:
        assert r["question"] in table
    claims = page.eval_on_selector_all("#group-table tr[data-id] td.claim", "cs => cs.map(c => c.textContent)")
    assert claims == [r["claim"] for r in group]
    page.click("#g-next")
    assert page.input_value("#g-key") == "nobel-q0003"
    page.fill("#g-key", "math-q0004")
    page.dispatch_event("#g-key", "change")
    assert page.locator("#group-table tr[data-id]").count() == 1 and "RC: not counted" in view.text("#group-info")

    # Nothing the data holds ran: no flag, no dialog, no element made from it, and a clean console.
    assert page.evaluate("window.__pwned") is None
    assert view.dialogs == []
    assert page.locator("main img, main script, main iframe, main a[href^='javascript'], #rows svg").count() == 0
    shown = page.eval_on_selector_all("#rows td.response", "cs => cs.map(c => c.textContent)")
    for injection in INJECTIONS:
        assert injection in shown
    assert view.errors == []

    # The artefact: what a user sees (the top of the page: header, charts, figures, verdicts).
    shot = Path(os.environ.get("DEFAN_SCREENSHOT_DIR") or tmp_path) / "defan-report.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    page.fill("#g-key", "nobel-q0002")
    page.dispatch_event("#g-key", "change")
    page.evaluate("window.scrollTo(0, 0)")  # the sticky header at the top of the full-page shot
    page.screenshot(path=str(shot), full_page=True)
    print(f"screenshot of the HTML report: {shot}")
    assert shot.stat().st_size > 10_000
    page.close()


def embedded_index(page: Any, domain: str) -> int:
    domains = page.evaluate("JSON.parse(document.getElementById('defan-data').textContent).domains")
    return int(domains.index(domain))


def test_pages_of_a_bigger_report_and_a_shard(browser: Any, tmp_path: Path) -> None:
    rows = []
    for k in range(9):  # 450 prompts: three pages of 200
        for r in make_rows(shift=k):
            rows.append({**r, "id": f"{r['id']}-{k}", "group": f"{r['group']}-{k}"})
    rows[-1]["group"] = "__proto__"  # a group key is data, whatever it says
    report = make_report()
    report["rows"] = rows
    summary = summarize(rows)
    report["domains"], report["overall"] = summary["domains"], summary["overall"]
    report["meta"]["selection"]["shard"] = "2/3"
    report["gate_status"] = gate_status([], skipped=True)
    view = _open(browser, tmp_path, json.loads(json.dumps(report)), name="big.html")
    page = view.page
    assert view.text("#p-info").startswith(f"1–200 of {len(rows)} prompts") and len(view.ids()) == 200
    page.click("#p-next")
    assert view.text("#p-info").startswith("201–400") and view.ids()[0] == rows[200]["id"]
    page.click("#p-last")
    assert view.text("#p-info").startswith(f"401–{len(rows)}") and "page 3 of 3" in view.text("#p-info")
    page.click("#p-first")
    assert view.ids()[0] == rows[0]["id"]
    assert "shard 2/3" in view.text("#subtitle") and "defan merge judges the whole run" in view.text("#gate")
    assert view.text("#gate-status") == "level gate: skipped"
    page.fill("#g-key", "__proto__")
    page.dispatch_event("#g-key", "change")
    assert page.eval_on_selector_all("#group-table tr[data-id]", "rs => rs.map(r => r.dataset.id)") == [rows[-1]["id"]]
    assert page.evaluate("window.__pwned") is None and view.errors == [] and view.dialogs == []
    page.close()
