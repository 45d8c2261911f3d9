"""The HTML report in a real browser: headless Chromium (Debian's ``chromium``, which .ci/run
installs) driven by Playwright for Python.

Checks that the charts and tables show the report's numbers, coloured by their verdict under
either ``--defan-decide`` and marked when they fail or regressed; that a question's paraphrases
are one row that opens to its prompts; that the columns sort and the table's header stays in
view; that the filters, the search and the pages work; that the Run section is a labelled table;
that the console stays clean (a script error or a blocked inline block would show there), and
that text from the model or the data set executes nothing; and the history page of ``defan history``
(three reports, a regression marked).  Saves a screenshot of the page (its
path is printed; ``DEFAN_SCREENSHOT_DIR`` keeps a copy there).
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

from defan_pytest import verdicts
from defan_pytest.gates import level

from test_html_report import INJECTIONS, THRESHOLDS_STATES, make_report, make_rows

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

    def groups(self) -> List[str]:
        """The group rows shown, in order."""
        return list(self.page.eval_on_selector_all("#rows > tbody > tr.group", "rs => rs.map(r => r.dataset.group)"))

    def ids(self) -> List[str]:
        """The prompts of the groups on this page (each opened)."""
        self.page.click("#x-open")
        return list(self.page.eval_on_selector_all("#rows tbody tr[data-id]", "rs => rs.map(r => r.dataset.id)"))

    def close(self) -> None:
        self.page.click("#x-close")


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
    assert page.locator('#chart-rc g.bar-row[data-scope="math"] rect.bar').count() == 0
    # Every gate verdict, with its message.
    assert page.locator("#gate-table tr").count() == len(report["gate"]) + 1
    failing = [v for v in report["gate"] if v["status"] == "fail"]
    assert failing and failing[0]["message"] in view.text("#gate-table")

    # The prompts: one row per question (its paraphrases together), 16 groups of 56 prompts.
    rows = report["rows"]
    keys = list(dict.fromkeys(r["group"] for r in rows))
    assert view.groups() == keys and view.count() == len(rows) == len(view.ids())
    view.close()
    assert view.choose("#f-domain", str(embedded_index(page, "nobel"))) == sum(r["domain"] == "nobel" for r in rows)
    assert view.groups() == [k for k in keys if k.startswith("nobel-")]
    view.choose("#f-domain", "")
    wrong = sum(1 for r in rows if not r["error"] and r["correct"] is not True)
    assert view.choose("#f-verdict", "fch") == wrong
    assert view.choose("#f-verdict", "pmh") == sum(1 for r in rows if not r["error"] and r["aligned"] is not True)
    assert view.choose("#f-verdict", "error") == 1 and view.ids() == ["sports-q0003-p04"]
    assert view.groups() == ["sports-q0003"] and "1 of the group's 5 prompts match" in view.text("#rows tbody")
    assert INJECTIONS[0] in view.text("#rows tbody")  # the error message, as text
    # An outcome of the vocabulary is a filter of its own, named by its word.
    words = page.eval_on_selector_all("#f-verdict option", "os => os.map(o => o.textContent)")
    for o in verdicts.OUTCOMES:
        assert any(w.startswith(o.word + " (") for w in words), o.word
    assert view.choose("#f-verdict", "o:" + str(list(verdicts.OUTCOMES).index(verdicts.RIGHT))) == sum(
        verdicts.outcome_of(r) == verdicts.RIGHT for r in rows)
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
    view.close()

    # A group opens to its prompts, every paraphrase with its answer, claim and outcome, and closes.
    toggle = '#rows tr.group[data-group="nobel-q0002"] button.toggle'
    group = [r for r in rows if r["group"] == "nobel-q0002"]
    row = page.locator('#rows tr.group[data-group="nobel-q0002"]')
    assert "inconsistent" in row.inner_text() and "Answer 2" in row.inner_text()
    assert page.get_attribute(toggle, "aria-expanded") == "false" and page.locator("#rows tr[data-id]").count() == 0
    page.click(toggle)
    assert page.get_attribute(toggle, "aria-expanded") == "true"
    shown = page.eval_on_selector_all("#rows tr.sub tr[data-id]", "rs => rs.map(r => r.dataset.id)")
    assert shown == [r["id"] for r in group]
    table = view.text("#rows tr.sub")
    for r in group:
        assert r["question"] in table
    claims = page.eval_on_selector_all("#rows tr.sub tr[data-id] td.claim", "cs => cs.map(c => c.textContent)")
    assert claims == [r["claim"] for r in group]
    outcomes = page.eval_on_selector_all("#rows tr.sub tr[data-id] td.outcome", "cs => cs.map(c => c.firstChild.textContent)")
    assert outcomes == [verdicts.outcome_of(r).word for r in group]
    page.click(toggle)
    assert page.locator("#rows tr[data-id]").count() == 0

    # Nothing the data holds ran: no flag, no dialog, no element made from it, and a clean console.
    view.ids()
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
    view.close()
    page.click(toggle)
    page.evaluate("window.scrollTo(0, 0)")  # the sticky header at the top of the full-page shot
    page.screenshot(path=str(shot), full_page=True)
    print(f"screenshot of the HTML report: {shot}")
    assert shot.stat().st_size > 10_000
    page.close()


def embedded_index(page: Any, domain: str) -> int:
    domains = page.evaluate("JSON.parse(document.getElementById('defan-data').textContent).domains")
    return int(domains.index(domain))


def test_pages_sort_and_a_header_in_view_of_a_bigger_report_and_a_shard(browser: Any, tmp_path: Path) -> None:
    rows = []
    for k in range(14):  # 784 prompts in 224 groups: three pages of 100 groups
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
    keys = list(dict.fromkeys(r["group"] for r in rows))
    assert len(keys) == 224
    assert view.text("#p-info").startswith(f"1–100 of 224 groups ({len(rows)} prompts)") and view.groups() == keys[:100]
    page.click("#p-next")
    assert view.text("#p-info").startswith("101–200") and view.groups()[0] == keys[100]
    page.click("#p-last")
    assert view.text("#p-info").startswith("201–224") and "page 3 of 3" in view.text("#p-info")
    page.click("#p-first")
    assert view.groups()[0] == keys[0]
    assert "shard 2/3" in view.text("#subtitle") and "defan merge judges the whole run" in view.text("#gate")
    assert view.text("#gate-status") == "level gate: skipped"

    # Sorting: a click on a column's title sorts every group by it (a number worst first), a
    # second click the other way; the page starts over at the first page.
    def fch(key: str) -> float:
        scored = [r for r in rows if r["group"] == key and not r["error"]]
        return sum(not r["correct"] for r in scored) / len(scored)

    page.click("#p-next")
    page.click('#rows thead button[data-col="fch"]')
    by_fch = sorted(keys, key=lambda k: (-fch(k), keys.index(k)))
    assert view.groups() == by_fch[:100] and "page 1 of 3" in view.text("#p-info")
    assert page.get_attribute('#rows thead th[data-col="fch"]', "aria-sort") == "descending"
    assert page.get_attribute('#rows thead th[data-col="group"]', "aria-sort") == "none"
    page.click('#rows thead button[data-col="fch"]')
    assert view.groups() == sorted(keys, key=lambda k: (fch(k), keys.index(k)))[:100]
    assert page.get_attribute('#rows thead th[data-col="fch"]', "aria-sort") == "ascending"
    page.click('#rows thead button[data-col="domain"]')
    domains = page.eval_on_selector_all("#rows > tbody > tr.group > td:nth-child(2)", "cs => cs.map(c => c.textContent)")
    assert domains == sorted(domains) and domains[0] == "math"
    page.click('#rows thead button[data-col="group"]')
    assert view.groups() == keys[:100]

    # The table's header stays in view, right under the page's own, deep in a long table.
    view.ids()  # every group of the page open: a long table
    page.evaluate("window.scrollTo(0, document.getElementById('rows').getBoundingClientRect().top + window.scrollY + 3000)")
    head = page.locator("body > header").bounding_box()
    th = page.locator('#rows thead th[data-col="fch"]').bounding_box()
    assert head and th and abs(th["y"] - (head["y"] + head["height"])) <= 1.5
    assert page.evaluate(
        "p => document.elementFromPoint(p[0], p[1]).closest('th') === document.querySelector('#rows thead th[data-col=fch]')",
        [th["x"] + th["width"] / 2, th["y"] + th["height"] / 2],
    )
    page.click('#rows thead button[data-col="fch"]')  # and it still sorts from there
    assert page.get_attribute('#rows thead th[data-col="fch"]', "aria-sort") == "descending"
    view.close()

    page.fill("#f-search", "__proto__")
    view.wait_count(1)
    assert view.groups() == ["__proto__"] and view.ids() == [rows[-1]["id"]]
    assert page.evaluate("window.__pwned") is None and view.errors == [] and view.dialogs == []
    page.close()


def _family(colour: str) -> str:
    """What a CSS ``rgb(...)`` colour reads as: grey, green, amber or red."""
    r, g, b = (int(float(x)) for x in colour[colour.index("(") + 1:colour.index(")")].split(",")[:3])
    if max(r, g, b) - min(r, g, b) < 8:
        return "grey"
    if g >= r and g > b:
        return "green"
    return "amber" if g - b > r - g else "red"


def _style(page: Any, selector: str, prop: str) -> str:
    return str(page.eval_on_selector(selector, f"e => getComputedStyle(e).{prop}"))


@pytest.mark.parametrize("decide", [level.POINT, level.INTERVAL])
def test_colours_follow_the_verdict(browser: Any, tmp_path: Path, decide: str) -> None:
    report = make_report(limits_text=THRESHOLDS_STATES, decide=decide)
    view = _open(browser, tmp_path, report, name=f"{decide}.html")
    page = view.page
    # nobel's FCH 0.33 > max 0.30 with its interval reaching it, and RC 0.00 < min 0.10 likewise:
    # failures on the figure, not decided on the interval.  overall FCH: its whole interval
    # beyond 0.20, a failure either way.  sports: too few groups, its figures not judged.
    beyond = ("not decided", "amber") if decide == level.INTERVAL else ("fail", "red")
    expect = {("nobel", "fch"): beyond, ("nobel", "rc"): beyond, ("overall", "fch"): ("fail", "red"),
              ("nobel", "pmh"): ("pass", "green"), ("sports", "fch"): ("not judged", "grey"),
              ("sports", "rc"): ("not judged", "grey")}
    for (scope, metric), (state, family) in expect.items():
        bar = f'#chart-{metric} g.bar-row[data-scope="{scope}"]'
        assert page.get_attribute(bar, "data-state") == state, (scope, metric)
        assert _family(_style(page, f"{bar} rect.bar", "fill")) == family, (scope, metric)
        td = f'#figures-table tr[data-scope="{scope}"] td[data-metric="{metric}"]'
        assert page.get_attribute(td, "data-state") == state
        assert _family(_style(page, td, "backgroundColor")) == family, (scope, metric)
        marks = page.eval_on_selector_all(f"{td} span.mark", "ms => ms.map(m => m.textContent)")
        chart_marks = page.eval_on_selector_all(f"{bar} tspan.mark", "ms => ms.map(m => m.textContent)")
        if state == "pass":
            assert marks == chart_marks == []
        else:
            word = "✗ fail" if state == "fail" else "too few" if state == "not judged" else state
            assert marks == chart_marks == [word], (scope, metric)
    # RC 0.000 under its minimum: a bar of its colour all the same, not an empty track.
    rc = '#chart-rc g.bar-row[data-scope="nobel"] rect.bar'
    assert float(page.get_attribute(rc, "width") or 0) >= 4
    assert page.text_content('#chart-rc g.bar-row[data-scope="nobel"] text.v').startswith("0.000")
    # The gate's table says what the chart says, beside the gate's own message.
    cells = page.eval_on_selector_all(
        "#gate-table tr[data-state]", "rs => rs.map(r => [r.cells[0].textContent, r.cells[1].textContent, r.cells[2].textContent])")
    words = {(s, m): w for s, m, w in cells}
    assert words[("nobel", "fch")] == beyond[0] and words[("sports", "samples")] == "too few"
    assert words[("sports", "fch")] == "too few" and words[("math", "rc")] == "n/a" and words[("nobel", "pmh")] == "pass"
    assert _family(_style(page, '#gate-table tr[data-state="fail"] td.verdict', "color")) == "red"
    scope_word = page.inner_text('#figures-table tr[data-scope="sports"] td.verdict')
    assert scope_word == "too few" and _family(_style(page, '#figures-table tr[data-scope="sports"] td.verdict', "color")) == "red"
    # The key names the colours the page uses, and only those.
    keys = page.eval_on_selector_all("#legend .key", "ks => ks.map(k => k.dataset.key)")
    expected = ["st-pass", "st-fail"] + (["st-not-decided"] if decide == level.INTERVAL else []) + ["st-not-judged"]
    assert keys == expected  # (every figure has a limit: the error rate its built-in one)
    assert view.errors == []
    page.close()


def test_a_regressed_figure_is_marked_in_the_chart_and_the_table(browser: Any, tmp_path: Path) -> None:
    base = make_report(right={"nobel": True}, nobel=30)
    report = make_report(baseline=base, right={"nobel": False}, nobel=30)
    view = _open(browser, tmp_path, report, name="regressed.html")
    page = view.page
    assert view.text("#regression-status") == "regression gate: fail"
    for scope in ("nobel", "overall", "sports"):
        regressed = scope != "sports"
        bar = f'#chart-fch g.bar-row[data-scope="{scope}"]'
        td = f'#figures-table tr[data-scope="{scope}"] td[data-metric="fch"]'
        assert page.get_attribute(bar, "data-regressed") == page.get_attribute(td, "data-regressed") == str(int(regressed))
        chart_marks = page.eval_on_selector_all(f"{bar} tspan.m-regressed", "ms => ms.map(m => m.textContent)")
        table_marks = page.eval_on_selector_all(f"{td} span.m-regressed", "ms => ms.map(m => m.textContent)")
        change = report["regression"]["scopes"][scope]["fch"]["change"]
        assert table_marks == ([f"▲ regressed +{change:.3f}"] if regressed else [])
        assert chart_marks == ([f"▲ +{change:.3f}"] if regressed else [])
        if regressed:
            assert _style(page, f"{bar} rect.bar", "strokeWidth") == "2px"
    assert page.locator('#chart-pmh g.bar-row[data-regressed="1"]').count() == 0
    assert "▲ REGRESSED" in view.text("#regression-table")
    assert view.errors == []
    page.close()


def test_the_run_section_is_a_labelled_table(browser: Any, tmp_path: Path) -> None:
    report = make_report()
    report["meta"]["model"]["fingerprint"] = {"digest": "f" * 64, "sources": ["myapp.py"], "inputs": []}
    view = _open(browser, tmp_path, report, name="run.html")
    page = view.page
    labels = page.eval_on_selector_all("#meta tr > th", "hs => hs.map(h => h.textContent)")
    for label in ("model", "fingerprint", "data set", "scorer", "selection", "calls", "timings", "thresholds", "limits"):
        assert label in labels
    assert not any("." in label for label in labels)
    model = page.inner_text('#meta tr[data-label="model"] td')
    assert model.startswith(f"my-rag {INJECTIONS[0]}") and "version 1" in model  # as text
    assert "myapp.py" in page.inner_text('#meta tr[data-label="fingerprint"] td')
    assert page.evaluate("window.__pwned") is None and view.errors == []
    page.close()


def test_the_page_of_several_models_filters_right_in_one_wrong_in_another(browser: Any, tmp_path: Path) -> None:
    from test_html_report import models_report

    both = models_report()
    path = tmp_path / "models.html"
    path.write_text(html.render_models(both), encoding="utf-8")
    page = Page(browser, path)
    a, b = both.models
    runs = {m: {r.id: r for r in run.rows} for m, run in zip(both.models, both.runs)}
    ids = list(runs[a])
    assert page.count() == len(ids)
    right_a_wrong_b = [i for i in ids if verdicts.outcome_of(runs[a][i]) is verdicts.RIGHT
                       and verdicts.outcome_of(runs[b][i]) is not verdicts.RIGHT and not runs[b][i].error]
    assert 0 < len(right_a_wrong_b) < len(ids)
    assert page.choose("#f-pair", a + "\u0000" + b) == len(right_a_wrong_b)
    shown = page.page.eval_on_selector_all("#rows tbody tr", "rs => rs.map(r => r.cells[0].textContent)")
    assert shown == right_a_wrong_b
    page.choose("#f-pair", "")
    assert page.choose("#f-domain", "nobel") == sum(1 for i in ids if runs[a][i].domain == "nobel")
    # The figures table: a row a scope; the models' hostile names and texts ran nothing.
    assert page.page.eval_on_selector_all("#figures-table tbody tr", "rs => rs.length") == len(both.runs[0].domains) + 1
    assert page.page.evaluate("() => window.__pwned === undefined")
    assert not page.dialogs and not page.errors, page.errors


def test_the_history_page_over_three_reports(browser: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # defan history over three reports of a branch (tests/test_history.py): a chart and a table
    # a figure, the reports in their own time order, the regression and the figures beyond
    # their limits marked, the lists below; the model's hostile name runs nothing.
    from defan_pytest.cli import main
    from test_history import THREE, write_history

    monkeypatch.chdir(tmp_path)
    reports = write_history(tmp_path / "reports")
    assert main(["history", "reports", "--html", "history.html"]) == 0
    view = Page(browser, tmp_path / "history.html")
    page = view.page
    assert page.title() == f"DefAn history: my-rag {INJECTIONS[0]}"
    assert view.text("#subtitle") == "3 reports · 2030-01-01 12:00 to 2030-01-01 22:00 · 4 regressions"
    legend = view.text("#legend")
    assert "▲ regressed against the report before" in legend and "✕ beyond its limit in that run" in legend
    for metric in ("fch", "pmh", "rc"):
        rows = page.eval_on_selector_all(f"#table-{metric} tbody tr", "rs => rs.map(r => r.cells[0].textContent)")
        assert rows == [created[:16].replace("T", " ") for _n, created, _r in THREE]
        lines = page.locator(f"#metric-{metric} svg.history-chart polyline.series").count()
        assert lines == (3 if metric == "rc" else 4)  # a line a scope with the figure (math has no RC)
        for i, report in enumerate(reports):
            for scope in ("sports", "nobel"):
                cell = page.inner_text(f'#table-{metric} tbody tr:nth-child({i + 1}) td[data-scope="{scope}"]')
                value = report["domains"][scope][metric]
                assert cell.startswith(_f3(value) if value is not None else "–")
    # The regression of the second report: the cells and the chart's marks, nowhere else in FCH.
    regressed = page.eval_on_selector_all("#table-fch td.regressed", "ts => ts.map(t => t.dataset.scope)")
    assert regressed == ["nobel", "overall"]
    assert page.inner_text('#table-fch tbody tr:nth-child(2) td[data-scope="nobel"]') == "1.000✕▲"
    assert page.get_attribute('#table-fch tbody tr:nth-child(2) td[data-scope="nobel"]', "title") == (
        f"95% CI {_f3(reports[1]['domains']['nobel']['fch_ci'][0])}–{_f3(reports[1]['domains']['nobel']['fch_ci'][1])}"
        " · beyond its limit in this run · regressed against the report before")
    marks = page.eval_on_selector_all("#metric-fch path.reg-mark", "ms => ms.map(m => m.dataset.scope)")
    assert sorted(marks) == ["nobel", "overall"]
    assert page.eval_on_selector_all("#table-rc td.regressed", "ts => ts.map(t => t.dataset.scope)") == ["nobel", "overall"]
    assert page.locator("#metric-fch circle.beyond-mark").count() == page.locator("#table-fch td.beyond").count() > 0
    items = page.eval_on_selector_all("#regression-list li", "ls => ls.map(l => l.textContent)")
    assert len(items) == 4 and items[0].startswith("2030-01-02 01:00: nobel: FCH 0.000 -> 1.000")
    assert view.text("#not-read") == "Every file was read."
    assert page.evaluate("() => window.__pwned === undefined")
    assert not view.dialogs and view.errors == [], view.errors
    shots = os.environ.get("DEFAN_SCREENSHOT_DIR")
    page.screenshot(path=str(tmp_path / "history.png"), full_page=True)
    if shots:
        shutil.copy(tmp_path / "history.png", Path(shots) / "history.png")
    page.close()
