"""Tests of defan_pytest.report.tables: the fixed-width table of a run's figures."""
from __future__ import annotations

from typing import Any

import pytest

from defan_pytest.metrics.summary import summarize
from defan_pytest.report.tables import format_table


def record(domain: str, group: str, i: int, claim: str | None, correct: bool, aligned: bool = True,
           error: str | None = None, type: str = "numeric") -> dict[str, Any]:
    return {
        "id": f"{domain}-{group}-p{i:02d}", "domain": domain, "group": f"{domain}-{group}",
        "type": type, "claim": None if error else claim, "aligned": None if error else aligned,
        "correct": None if error else correct, "error": error,
    }


@pytest.fixture
def rows() -> list[dict[str, Any]]:
    # sports: one group of 3 (386, 334, error); math: two singletons (one right, one wrong);
    # nobel: a name claim with a non-ASCII letter.
    return [
        record("math", "q1", 0, "42", True),
        record("sports", "q1", 0, "386", True),
        record("sports", "q1", 1, "334", False, aligned=False),
        record("sports", "q1", 2, None, False, error="HTTP 429: rate limited"),
        record("math", "q2", 0, "7", False),
        record("nobel", "q1", 0, "Wilhelm Röntgen", True, type="name"),
        record("nobel", "q1", 1, "Röntgen", True, type="name"),
    ]


def test_table_has_one_row_per_domain_and_two_overall_rows(rows: list[dict[str, Any]]) -> None:
    table = format_table(summarize(rows))
    lines = table.rstrip("\n").split("\n")
    header = lines[0]
    for title in ("domain", "n", "errors", "FCH", "PMH", "RC", "error rate"):
        assert title in header
    labels = [ln.split("  ")[0].strip() for ln in lines if ln and not ln.startswith("-")]
    assert labels == ["domain", "sports", "nobel", "math", "overall (mean of domains)", "overall (pooled)"]


def test_table_cells(rows: list[dict[str, Any]]) -> None:
    summary = summarize(rows)
    table = format_table(summary)
    by_label = {ln.split("  ")[0].strip(): ln for ln in table.splitlines()}
    sports = by_label["sports"]
    s = summary["domains"]["sports"]
    # FCH 1/2 with its interval, three decimals.
    assert f"0.500 [{s['fch_ci'][0]:.3f}, {s['fch_ci'][1]:.3f}]" in sports
    # sports' only group has an errored response: RC over its two answered ones (issue 25);
    # error rate 1/3.
    assert sports.split()[1:3] == ["3", "1"]
    assert sports.rstrip().endswith("0.333")
    assert s["rc_groups"] == 1 and " - " not in sports
    # math has singletons only: no RC either.
    assert " - " in by_label["math"]
    # nobel: both claims name the same man -> RC 1.000
    assert f"1.000 [{summary['domains']['nobel']['rc_ci'][0]:.3f}," in by_label["nobel"]
    pooled = by_label["overall (pooled)"]
    assert pooled.split()[2:4] == ["7", "1"]


def test_table_columns_line_up(rows: list[dict[str, Any]]) -> None:
    table = format_table(summarize(rows))
    lines = [ln for ln in table.splitlines() if ln]
    header = lines[0]
    rule = lines[1]
    assert set(rule) <= {"-", " "}
    # Every column starts where its dashes start.
    starts = [i for i, ch in enumerate(rule) if ch == "-" and (i == 0 or rule[i - 1] == " ")]
    assert len(starts) == 7
    for title, start in zip(["domain", "n", "errors", "FCH", "PMH", "RC", "error rate"], starts):
        col = header[start:]
        assert col.lstrip().startswith(title)
    # Left-aligned rate columns: every row's FCH cell starts at the FCH column.
    fch_col = starts[3]
    for ln in lines[2:]:
        if set(ln) <= {"-", " "}:
            continue
        assert ln[fch_col - 2:fch_col] == "  "
        assert ln[fch_col] in "0123456789-"


def test_table_of_empty_summary() -> None:
    table = format_table(summarize([]))
    lines = table.splitlines()
    assert lines[0].startswith("domain")
    assert lines[-2].startswith("overall (mean of domains)")
    assert lines[-1].startswith("overall (pooled)")
    assert lines[-1].split()[2:] == ["0", "0", "-", "-", "-", "-"]


def test_table_marks_figures_outside_thresholds(rows: list[dict[str, Any]]) -> None:
    summary = summarize(rows)
    plain = format_table(summary)
    assert "!" not in plain
    marked = format_table(summary, {"sports": {"fch": 0.4, "error_rate": 0.5}, "nobel": {"rc": 0.9},
                                    "overall": {"pmh": 0.0}})
    by_label = {ln.split("  ")[0].strip(): ln for ln in marked.splitlines()}
    assert by_label["sports"].count("!") == 1  # FCH 0.5 > 0.4; error rate 1/3 <= 0.5
    assert "]!" in by_label["sports"]
    assert "!" not in by_label["nobel"]  # RC 1.0 >= 0.9
    assert "!" in by_label["overall (mean of domains)"]
    assert "!" not in by_label["overall (pooled)"]
    assert marked.splitlines()[-1] == "! outside its threshold"


def test_table_prints_domain_names_safely() -> None:
    rows = [{"id": "a", "domain": "evil\x1b]0;title\x07", "group": "g", "type": "numeric", "claim": "1",
             "aligned": True, "correct": True, "error": None}]
    table = format_table(summarize(rows))
    assert "\x1b" not in table and "\x07" not in table
    assert "evil\\x1b]0;title\\x07" in table


def test_the_table_of_several_models_has_a_row_a_scope_and_columns_a_model() -> None:
    from defan_pytest.report.models import comparison_lines, text_table
    from test_html_report import models_report

    both = models_report()
    lines = text_table(both)
    assert lines[0].split()[0] == "scope"
    assert [line.split()[0] for line in lines[1:]] == [*both.runs[0].domains, "overall"]
    # Every row as wide as the header: the columns line up.
    assert len({len(line.rstrip()) for line in lines[1:]}) == 1
    assert all(line.isprintable() for line in lines)
    said = comparison_lines(both)
    assert said[0].startswith(f"{both.models[1].split('<')[0]}")
    assert comparison_lines(models_report(compare=False)) == []
