"""Tests of defan_pytest.report.schema: the report schema, reading a baseline, and when two runs can
be compared."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from defan_pytest.dataset import DOMAINS
from defan_pytest.metrics.summary import summarize
from defan_pytest.records import Report, ReportMeta, ScoredRecord
from defan_pytest.gates.comparability import comparability
from defan_pytest.report import schema
from defan_pytest.report.builder import build_report


def rows(n_groups: int = 3, wrong: int = 0, question: str = "Who won the {g}?") -> list[dict[str, Any]]:
    out = []
    for g in range(n_groups):
        for p in range(3):
            out.append({
                "id": f"sports-q{g:04d}-p{p:02d}", "domain": "sports", "group": f"sports-q{g:04d}", "type": "name",
                "question": question.format(g=g), "answer": "Brazil", "response": "Brazil", "claim": "Brazil",
                "aligned": True, "correct": g >= wrong, "error": None, "error_kind": None,
            })
    return out


def meta(identity: str = "DefAn-public@3fcefd0ee774", rules: str = "2026.11.1", ner: bool = False) -> dict[str, Any]:
    return {
        "defan_pytest": "0.1.0", "producer": "pytest", "created": "2026-11-30T00:00:00Z",
        "model": {"name": "my-rag", "kind": "callable", "version": "1", "source": "abc"},
        "dataset": {"source": "public", "identity": identity, "commit": "3fcefd0e", "sha256": {}},
        "scorer": {"rules": rules, "ner": ner, "pipeline": "en_core_web_sm" if ner else None,
                   "version": "3.8.0" if ner else None},
        "selection": {"domains": ["sports"], "sample": None, "seed": 0, "selected": 9, "ran": 9, "narrowed": False,
                      "shard": None},
        "calls": {"prompts": 9, "errors": 0, "error_kinds": {}},
        "durations": {"total": 1.0},
    }


def report(**kw: Any) -> dict[str, Any]:
    rs = [ScoredRecord.from_json(r) for r in kw.pop("rows", None) or rows()]
    return build_report(rs, summarize(rs), ReportMeta.from_json(meta(**kw))).to_json()


def records(rs: list[dict[str, Any]]) -> list[ScoredRecord]:
    return [ScoredRecord.from_json(r) for r in rs]


def comparable(base: dict[str, Any], meta: dict[str, Any], rs: list[dict[str, Any]]) -> list[str]:
    m = ReportMeta.from_json(meta)
    return comparability(Report.from_json(base), m.dataset, m.scorer, records(rs))


def write(tmp_path: Path, data: Any, name: str = "base.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_built_report_validates_and_loads(tmp_path: Path) -> None:
    r = report()
    assert schema.validate_report(r) == []
    loaded = schema.load_report(write(tmp_path, r))
    assert loaded.to_json() == r and loaded.meta.model_name == "my-rag"


def test_the_schema_is_a_valid_json_schema() -> None:
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(schema.schema())


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON"),
        ("[]", "not a defan-pytest report"),
        ('{"rows": [], "domains": {}, "overall": {}}', "earlier defan-pytest without run metadata"),
        ('{"schema": "defan-pytest-report", "schema_version": 99}', "schema version 99"),
    ],
)
def test_unreadable_reports_are_one_clear_error(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "b.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(schema.BaselineError, match=message) as info:
        schema.load_report(path, what="--defan-baseline")
    assert str(path) in str(info.value)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(schema.BaselineError, match="no such file"):
        schema.load_report(tmp_path / "nope.json")
    with pytest.raises(schema.BaselineError, match="is a directory"):
        schema.load_report(tmp_path)


def test_a_report_that_breaks_the_schema_names_the_place(tmp_path: Path) -> None:
    r = report()
    del r["rows"][4]["claim"]
    r["rows"][5]["aligned"] = "yes"
    with pytest.raises(schema.BaselineError) as info:
        schema.load_report(write(tmp_path, r))
    text = str(info.value)
    assert "rows/4" in text and "'claim' is a required property" in text
    assert "rows/5/aligned" in text


def test_schema_problems_are_capped(tmp_path: Path) -> None:
    r = report(rows=rows(n_groups=20))
    for row in r["rows"]:
        row["correct"] = "no"
    problems = schema.validate_report(r)
    assert len(problems) == 11 and problems[-1].startswith("...")


def test_same_data_and_scorer_compare() -> None:
    assert comparable(report(), meta(), rows()) == []


def test_another_data_set_is_refused() -> None:
    problems = comparable(report(identity="file:0123"), meta(), rows())
    assert len(problems) == 1 and "another data set" in problems[0]


def test_the_same_id_with_another_question_is_another_data_set() -> None:
    problems = comparable(report(), meta(), rows(question="Who lost the {g}?"))
    assert len(problems) == 1 and "hold another question or gold" in problems[0]
    assert "sports-q0000-p00" in problems[0]


def test_another_scorer_is_refused() -> None:
    problems = comparable(report(rules="2020.1"), meta(), rows())
    assert problems == [
        "--defan-baseline: scored by another scorer (rules 2020.1, no spaCy pipeline; this run: rules 2026.11.1, "
        "no spaCy pipeline)"
    ]
    assert comparable(report(ner=True), meta(), rows())  # another pipeline too


def test_disjoint_prompts_are_refused() -> None:
    other = [dict(r, id=r["id"].replace("sports", "nobel")) for r in rows()]
    problems = comparable(report(), meta(), other)
    assert len(problems) == 1 and "no prompt in common" in problems[0]


def _two_domain_rows(changed: bool) -> list[dict[str, Any]]:
    out = []
    # sports: two groups (too few to be judged, still in the overall mean); seven more of sixty (narrow intervals).
    others = ("census", "nobel", "entertainment", "world_org", "qs_ranking", "conference_venue", "math")
    for domain, groups in (("sports", 2), *((d, 60) for d in others)):
        for g in range(groups):
            for p in range(3):
                claim = "Chile" if changed and domain == "sports" and g == 0 and p == 2 else "Brazil"
                out.append({
                    "id": f"{domain}-q{g:04d}-p{p:02d}", "domain": domain, "group": f"{domain}-q{g:04d}",
                    "type": "name", "question": f"Who won the {g}?", "answer": "Brazil", "response": claim,
                    "claim": claim, "aligned": True, "correct": claim == "Brazil", "error": None, "error_kind": None,
                })
    return out


def test_one_group_changing_consistency_passes_defan_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 25's CLI reproduction: one group of one domain turning inconsistent failed
    # `defan gate --baseline` with "REGRESSED overall: RC 1.000 -> 0.938 (99.81% CI -0.067 to
    # -0.057)": the overall interval was rebuilt from the domains' intervals clipped to [-1, 1].
    from defan_pytest.cli import main

    sel = {"domains": sorted(DOMAINS), "sample": None, "seed": 0, "selected": 1266, "ran": 1266, "narrowed": False,
           "shard": None}
    docs = []
    for changed in (False, True):
        rs = [ScoredRecord.from_json(r) for r in _two_domain_rows(changed)]
        m = meta()
        m["selection"] = sel
        m["calls"]["prompts"] = 1266
        data = build_report(rs, summarize(rs), ReportMeta.from_json(m)).to_json()
        assert schema.validate_report(data) == []
        docs.append(write(tmp_path, data, f"{'new' if changed else 'old'}.json"))
    old, new = docs
    judged = tmp_path / "judged.json"
    # (The level gate fails sports' min_samples: two groups; the regression gate is the point.)
    main(["gate", str(new), "--baseline", str(old), "--json", str(judged)])
    out = capsys.readouterr().out
    assert "REGRESSED" not in out and "overall: RC 1.000 -> 0.938" in out
    regression = json.loads(judged.read_text(encoding="utf-8"))["regression"]
    assert regression["status"] == "pass"
    assert regression["scopes"]["overall"]["rc"]["interval"][1] > 0.0


# -- reports of several models (schema version 2) ----------------------------------------------

def models_report(*names: str, compare_to: str | None = None) -> dict[str, Any]:
    runs = []
    for k, name in enumerate(names):
        r = report(rows=rows(wrong=k))
        r["meta"]["model"]["name"] = name
        runs.append(r)
    return {"schema": "defan-pytest-report", "schema_version": 2, "models": list(names), "runs": runs,
            "compare_to": compare_to, "comparisons": {}}


def test_a_report_of_several_models_validates_and_loads_both_ways(tmp_path: Path) -> None:
    data = models_report("old", "new", compare_to="old")
    assert schema.validate_report(data) == []
    path = write(tmp_path, data)
    both = schema.load_any(path)
    assert both.models == ("old", "new") and both.compare_to == "old"
    assert both.to_json() == data
    # A baseline of several models gives the run of the model asked for ...
    assert schema.load_report(path, model="new").meta.model_name == "new"
    assert schema.load_report(path, model="new").to_json() == data["runs"][1]
    # ... and names the models it holds otherwise.
    with pytest.raises(schema.BaselineError, match=r"no run of model 'other' \(it holds old, new\)"):
        schema.load_report(path, model="other")
    with pytest.raises(schema.BaselineError, match="the runs of several models; name one"):
        schema.load_report(path)
    # A report of one model loads as before, whichever model is asked for.
    one = write(tmp_path, report(), "one.json")
    assert schema.load_report(one, model="anything").meta.model_name == "my-rag"


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(models=["old", "newer"]), "are not the runs' models"),
    (lambda d: d.update(compare_to="nobody"), "compare_to: 'nobody' is not one of the runs' models"),
    (lambda d: d.update(comparisons={"ghost": {"status": "pass"}}), "comparisons"),
    (lambda d: d["runs"][1]["rows"].append(dict(d["runs"][1]["rows"][0])), "runs/1: "),
    (lambda d: d.update(runs=d["runs"][:1], models=["old"]), "runs"),
    (lambda d: d.update(schema_version=3), "reads versions 1 (one model) and 2 (several)"),
    (lambda d: d["runs"][0].update(schema_version=2), "schema"),
])
def test_a_broken_report_of_several_models_is_one_clear_error(tmp_path: Path, change: Any, message: str) -> None:
    data = models_report("old", "new", compare_to="old")
    change(data)
    with pytest.raises(schema.BaselineError, match=message.replace("(", r"\(").replace(")", r"\)")):
        schema.load_any(write(tmp_path, data))


@pytest.mark.parametrize("change", [
    lambda d: d.update(models=["old", "newer"]),
    lambda d: d.update(compare_to="nobody"),
])
def test_a_models_mismatch_is_not_called_a_rows_problem(tmp_path: Path, change: Any) -> None:
    """Issue 34 (10): a version-2 report whose models disagree was reported under "rows that do
    not each name one prompt"."""
    data = models_report("old", "new", compare_to="old")
    change(data)
    with pytest.raises(schema.BaselineError) as info:
        schema.load_any(write(tmp_path, data))
    assert "rows that do not each name one prompt" not in str(info.value)
    assert "a report of several models whose models do not agree" in str(info.value)
