"""Tests of defan_pytest.gates.comparability: when a baseline report and a run can be compared."""
from __future__ import annotations

from typing import Any

from defan_pytest.gates.comparability import comparability


def rows(n_groups: int = 3, question: str = "Who won the {g}?") -> list[dict[str, Any]]:
    return [
        {"id": f"sports-q{g:04d}-p{p:02d}", "question": question.format(g=g), "answer": "Brazil"}
        for g in range(n_groups) for p in range(3)
    ]


def meta(identity: str = "DefAn-public@3fcefd0ee774", rules: str = "2026.11.1", ner: bool = False) -> dict[str, Any]:
    return {
        "dataset": {"source": "public", "identity": identity},
        "scorer": {"rules": rules, "ner": ner, "pipeline": "en_core_web_sm" if ner else None,
                   "version": "3.8.0" if ner else None},
    }


def report(**kw: Any) -> dict[str, Any]:
    """A baseline report, as far as comparability reads one: its meta and its rows."""
    return {"meta": meta(**kw), "rows": rows()}


def test_same_data_and_scorer_compare() -> None:
    assert comparability(report(), meta(), rows()) == []


def test_another_data_set_is_refused() -> None:
    problems = comparability(report(identity="file:0123"), meta(), rows())
    assert problems == [
        "--defan-baseline: made on another data set (public file:0123; this run: public DefAn-public@3fcefd0ee774)"
    ]


def test_the_same_id_with_another_question_is_another_data_set() -> None:
    problems = comparability(report(), meta(), rows(question="Who lost the {g}?"))
    assert len(problems) == 1 and "hold another question or gold" in problems[0]
    assert "sports-q0000-p00" in problems[0]
    # Reported once when the data set's identity differs too.
    assert len(comparability(report(identity="file:0123"), meta(), rows(question="Who lost the {g}?"))) == 1


def test_another_scorer_is_refused() -> None:
    problems = comparability(report(rules="2020.1"), meta(), rows())
    assert problems == [
        "--defan-baseline: scored by another scorer (rules 2020.1, no spaCy pipeline; this run: rules 2026.11.1, "
        "no spaCy pipeline)"
    ]
    assert comparability(report(ner=True), meta(), rows())  # another pipeline too


def test_disjoint_prompts_are_refused_and_where_names_the_baseline() -> None:
    other = [dict(r, id=r["id"].replace("sports", "nobel")) for r in rows()]
    problems = comparability(report(), meta(), other, where="--baseline")
    assert len(problems) == 1 and problems[0].startswith("--baseline: no prompt in common with this run (9 prompts")
