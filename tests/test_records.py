"""Tests of defan_pytest.records: the typed records, read back from the JSON they write."""
from __future__ import annotations

import json
from typing import Any, Dict

import pytest

from defan_pytest.records import (
    Calls, DatasetMeta, ModelMeta, Report, ReportMeta, ScoredRecord, ScorerMeta, Selection, error_kind, error_kinds,
    row_problems,
)


def _record(**kw: Any) -> ScoredRecord:
    base: Dict[str, Any] = dict(id="nobel-q0001-p00", domain="nobel", group="nobel-q0001", type="name",
                                claim="Marie Curie", aligned=True, correct=True, question="Who?", answer="Marie Curie",
                                response="Marie Curie.")
    base.update(kw)
    return ScoredRecord(**base)


def _meta(**kw: Any) -> ReportMeta:
    base: Dict[str, Any] = dict(
        version="0.1.0", producer="pytest", created="2030-01-01T00:00:00Z",
        model=ModelMeta("m", "litellm", model="openai/gpt-4o-mini", params={"temperature": 0}),
        dataset=DatasetMeta("public", "DefAn-public@3fcefd0ee774", "3fcefd0e", {"nobel": "ab"}),
        scorer=ScorerMeta("2026.11.1", False), selection=Selection(("nobel",), None, 0, 1, 1),
        calls=Calls(prompts=1, errors=0, error_kinds={}), durations={"total": 1.5},
    )
    base.update(kw)
    return ReportMeta(**base)


def test_a_record_reads_as_the_mapping_it_travels_as() -> None:
    rec = _record(index=3, via="model", attempts=2)
    assert rec["claim"] == "Marie Curie" and rec.get("error") is None and rec.get("no such key") is None
    assert "note" not in rec and list(rec)[:8] == ["id", "domain", "group", "type", "claim", "aligned", "correct", "error"]
    noted = _record(note="read in a window")
    assert list(noted)[8] == "note" and noted["note"] == "read in a window"
    assert dict(rec) == rec.to_json() and len(rec) == len(rec.to_json())
    assert ScoredRecord.from_json(json.loads(json.dumps(rec.to_json()))) == rec


def test_a_report_row_has_the_report_keys_only() -> None:
    row = _record(error="TimeoutError: slow", claim=None, aligned=None, correct=None, attempts=3,
                  answered_by="gw1", index=0, via="model", latency=0.5).report_row()
    assert list(row) == ["id", "domain", "group", "type", "claim", "aligned", "correct", "error", "question", "answer",
                         "response", "error_kind", "attempts", "answered_by", "latency"]
    assert row["error_kind"] == "TimeoutError"
    back = ScoredRecord.from_json(row)
    assert back.report_row() == row and back.index is None


def test_unknown_keys_are_kept_after_the_known_ones() -> None:
    row = dict(_record().report_row(), later_field=[1, 2])
    rec = ScoredRecord.from_json(row)
    assert rec.extra == {"later_field": [1, 2]} and rec["later_field"] == [1, 2]
    assert list(rec.report_row())[-1] == "later_field"


def test_error_kinds_are_counted_once_by_kind() -> None:
    assert error_kind(None) is None and error_kind("") is None
    assert error_kind("RateLimitError: slow down (HTTP 429)") == "RateLimitError"
    assert error_kind("HTTP 503 (HTTP 503): busy") == "HTTP 503"
    kinds = error_kinds(["A: one", None, "B: two", "A: three", ""])
    assert kinds.counts == {"A": 2, "B": 1} and kinds.total == 3
    assert kinds.most_common(1) == [("A", 2, "A: one")]


@pytest.mark.parametrize("model", [
    ModelMeta("my-rag", "callable", version="1", source="ab" * 8),
    ModelMeta("m", "litellm", model="openai/x", system_prompt=None, version=None, params={}),
    None,
])
def test_the_metadata_round_trips_in_the_report_order(model: ModelMeta | None) -> None:
    meta = _meta(model=model)
    data = meta.to_json()
    assert list(data) == ["defan_pytest", "producer", "created", "model", "dataset", "scorer", "selection", "calls",
                          "durations"]
    assert ReportMeta.from_json(json.loads(json.dumps(data))) == meta
    assert meta.model_name == (model.name if model else None)
    if model is not None and model.kind == "callable":
        assert list(data["model"]) == ["name", "kind", "version", "source"]


def test_a_report_round_trips_byte_for_byte() -> None:
    report = Report(
        meta=_meta(extra={"bench_source": "x"}), rows=(_record(), _record(id="nobel-q0001-p01", correct=False)),
        domains={"nobel": {"n": 2}}, overall={"mean": {}, "pooled": {}}, usage={"tokens": 1},
    )
    text = json.dumps(report.to_json(), indent=1)
    assert list(report.to_json()) == ["schema", "schema_version", "meta", "thresholds", "gate_status", "gate",
                                      "regression", "domains", "overall", "usage", "rows"]
    assert json.dumps(Report.from_json(json.loads(text)).to_json(), indent=1) == text
    assert "rows" not in report.to_json(rows=False)


# -- a saved report's rows, each one prompt (issue 20) ---------------------------------------------


def _row(rid: str, domain: str, group: str, type_: str = "name") -> Dict[str, Any]:
    return {"id": rid, "domain": domain, "group": group, "type": type_}


def test_rows_that_name_one_prompt_each_have_no_problem() -> None:
    rows = [
        _row("nobel-q0001-p00", "nobel", "nobel-q0001"), _row("nobel-q0001-p01", "nobel", "nobel-q0001"),
        _row("big-set-q12345-p100", "big-set", "big-set-q12345"),  # a domain with a hyphen, group 12,345
        _row("custom-line1", "custom", "custom-line1"), _row("custom-line2", "custom", "custom-group-kobe"),
    ]
    assert row_problems(rows) == []
    assert row_problems(rows[:2], domains=("nobel",), one_type_per_group=True) == []


@pytest.mark.parametrize("rows, found", [
    ([_row("nobel-q0001-p00", "nobel", "nobel-q0001"), _row("nobel-q0001-p00", "nobel", "nobel-q0001")],
     ["rows/1: id 'nobel-q0001-p00' is given twice (first: rows/0)"]),
    ([_row("nobel-q0001-p00", "math", "nobel-q0001")], ["rows/0: id 'nobel-q0001-p00' is not an id of its domain 'math'"]),
    ([_row("nobel-q0001-p00", "nobel", "nobel-q0002")],
     ["rows/0: id 'nobel-q0001-p00' is of group 'nobel-q0001', the row says 'nobel-q0002'"]),
    ([_row("custom-line3", "custom", "custom-line4")],
     ["rows/0: id 'custom-line3' is of group 'custom-line3' or 'custom-group-'<label>, the row says 'custom-line4'"]),
    ([_row("nobel-x", "nobel", "nobel-x")],
     ["rows/0: id 'nobel-x' is not a prompt id (nobel-q<group>-p<paraphrase>, or nobel-line<N>)"]),
    ([_row("nobel-line0", "nobel", "nobel-line0")],
     ["rows/0: id 'nobel-line0' is not a prompt id (nobel-q<group>-p<paraphrase>, or nobel-line<N>)"]),
])
def test_rows_that_do_not_name_one_prompt_each_are_named(rows: Any, found: Any) -> None:
    assert row_problems(rows) == found


def test_a_public_report_holds_its_domains_and_one_type_a_group() -> None:
    rows = [_row("nobel-q0001-p00", "nobel", "nobel-q0001"), _row("nobel-q0001-p01", "nobel", "nobel-q0001", "date"),
            _row("kites-q0000-p00", "kites", "kites-q0000")]
    assert row_problems(rows, domains=("nobel", "math"), one_type_per_group=True) == [
        "rows/1: type 'date' differs from 'name' of its group (rows/0)",
        "rows/2: domain 'kites' is not a domain of the data set",
    ]
    assert row_problems(rows) == []  # a user's own set may label groups of two types


def test_row_problems_are_capped() -> None:
    rows = [_row("a-q0001-p00", "a", "a-q0001")] * 50
    found = row_problems(rows, limit=5)
    assert len(found) == 6 and found[-1] == "... (more problems not shown)"


# -- the finish reason (issue 21) ----------------------------------------------------------------


def test_the_finish_reason_travels_and_is_a_report_row_key_only_when_known() -> None:
    cut = _record(finish_reason="length", attempts=1)
    assert cut["finish_reason"] == "length" and cut.to_json()["finish_reason"] == "length"
    assert list(cut.report_row())[-2:] == ["attempts", "finish_reason"]
    assert ScoredRecord.from_json(json.loads(json.dumps(cut.to_json()))) == cut
    assert ScoredRecord.from_json(cut.report_row()).finish_reason == "length"
    unknown = _record()
    assert unknown["finish_reason"] is None and "finish_reason" not in unknown.report_row()
    # A row saved before the field existed reads as unknown; one a hand has spoiled, too.
    old = {k: v for k, v in unknown.report_row().items()}
    assert ScoredRecord.from_json(old).finish_reason is None
    assert ScoredRecord.from_json(dict(old, finish_reason="\x1b[2J" * 3)).finish_reason is None


def test_a_report_row_with_a_finish_reason_is_valid_and_a_bad_one_is_named() -> None:
    from defan_pytest.report.schema import validate_report

    report = Report(meta=_meta(), rows=(_record(finish_reason="length"), _record(id="nobel-q0001-p01")),
                    domains={}, overall={"mean": {}, "pooled": {}})
    data = report.to_json()
    problems = validate_report(data)
    # the figures are not those of a real run: only what the rows say is looked at here
    assert not [p for p in problems if p.startswith("rows")]
    assert data["schema_version"] == 1  # an optional field: the version stays
    data["rows"][0]["finish_reason"] = "cut off\n"
    assert [p for p in validate_report(data) if p.startswith("rows/0/finish_reason")]


def test_the_repeat_figures_are_an_optional_meta_key_an_older_reader_keeps_as_extra() -> None:
    repeat = {"times": 3, "temperature": 0.0, "domains": {}, "overall": {"prompts": 0, "identical": 0,
              "verdicts_agree": 0, "flipped_pairs": 0, "pairs": 0}}
    meta = _meta(repeat=repeat)
    data = meta.to_json()
    assert list(data)[-1] == "repeat" and data["repeat"] == repeat
    assert ReportMeta.from_json(json.loads(json.dumps(data))) == meta
    assert "repeat" not in _meta().to_json()  # a run without --defan-repeat writes what it always wrote
    # The report schema before the key (version 1 too) reads a report that has it.
    import jsonschema

    from defan_pytest.report import schema

    older = json.loads(json.dumps(schema.schema()))
    del older["$defs"]["meta"]["properties"]["repeat"]
    older["$defs"].pop("agreement")
    assert "repeat" not in older["$defs"]["meta"]["required"]
    jsonschema.Draft202012Validator({**older["$defs"]["meta"], "$defs": older["$defs"]}).validate(data)


def test_a_report_of_several_models_reads_both_ways_and_says_whether_one_failed() -> None:
    from test_html_report import models_report

    from defan_pytest.records import ModelsReport

    both = models_report()
    data = both.to_json()
    assert data["schema_version"] == 2 and data["models"] == list(both.models)
    assert all(run["schema_version"] == 1 for run in data["runs"])
    again = ModelsReport.from_json({**data, "later": 1})
    assert again.to_json() == {**data, "later": 1} and again.run_of(both.models[1]) == both.runs[1]
    assert again.run_of("nobody") is None
    failed = any(r.gate_status == "fail" for r in both.runs) or any(
        c.get("status") == "fail" for c in both.comparisons.values())
    assert both.failed is failed
    assert "rows" not in both.to_json(rows=False)["runs"][0]
