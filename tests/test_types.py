"""The answer-type registry: built-in types, strict look-ups, and a type added from outside."""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Iterator

import pytest
from toy_yesno import YesNo

from defan_pytest.scoring import types
from defan_pytest.scoring.equivalence import claim_correct, group_consistent
from defan_pytest.errors import DefanError
from defan_pytest.metrics.summary import summarize
from defan_pytest.scoring.scorer import Score, Scorer, ScoreInput
from defan_pytest.scoring.types import parse_gold


@pytest.fixture
def yesno() -> Iterator[types.AnswerType]:
    kind = types.register(YesNo())
    yield kind
    types.unregister("yesno")


def test_built_in_types_in_order() -> None:
    assert types.names() == ("name", "numeric", "date", "rank", "city")
    for name in types.names():
        kind = types.get(name)
        assert isinstance(kind, types.AnswerType)
        assert kind.name == name


def test_unknown_type_lists_the_valid_ones() -> None:
    with pytest.raises(types.UnknownAnswerType, match="unknown answer type 'colour'; allowed: name, numeric, date, rank, city"):
        types.get("colour")


@pytest.mark.parametrize(
    "bad, why",
    [("", "its name must be a non-empty string"), (None, "its name must be a non-empty string"),
     ("Yes-No", "expected a lower-case identifier"), ("YESNO", "expected a lower-case identifier"),
     ("2x", "expected a lower-case identifier")],
)
def test_register_rejects_bad_names(bad: object, why: str) -> None:
    class Bad(YesNo):
        name = bad  # type: ignore[assignment]

    with pytest.raises(DefanError, match=why):
        types.register(Bad())
    assert types.names() == ("name", "numeric", "date", "rank", "city")


def test_register_rejects_duplicates_and_non_types(yesno: types.AnswerType) -> None:
    with pytest.raises(DefanError, match="already registered"):
        types.register(YesNo())
    with pytest.raises(DefanError, match="built in"):
        types.unregister("name")

    class NotAType:
        name = "notatype"

    with pytest.raises(DefanError, match="does not implement the AnswerType protocol"):
        types.register(NotAType())  # type: ignore[arg-type]


def test_register_wants_an_instance_not_the_class() -> None:
    with pytest.raises(DefanError, match="is a class; register an instance of it"):
        types.register(YesNo)  # type: ignore[arg-type]


def test_an_installed_package_adds_a_type_through_an_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An installed distribution (its dist-info folder on sys.path) naming the class: the
    # registry calls it for the instance, the first time the types are read.
    info = tmp_path / "defan_yesno-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: defan-yesno\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[defan_pytest]\ntype.yesno = toy_yesno:YesNo\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    # The types were read long before this test: read the entry points again.
    monkeypatch.setattr(types.REGISTRY, "_plugins_loaded", False)
    before = types.REGISTRY.snapshot()
    try:
        assert types.names() == ("name", "numeric", "date", "rank", "city", "yesno")
        assert isinstance(types.get("yesno"), YesNo)
        assert Scorer(nlp=None).score("Is water wet?", "Yes", "yesno", "yes") == Score("yes", True, True)
    finally:
        types.REGISTRY.restore(before)
    assert "yesno" not in types.names()


def test_a_toy_type_scores_end_to_end(yesno: types.AnswerType) -> None:
    assert types.names()[-1] == "yesno"
    assert parse_gold("yesno", "Yes").values == ("yes",)
    scorer = Scorer(nlp=None)
    q = "Was the 1930 final played in Montevideo?"
    items = [
        ScoreInput(q, "Yes", "yesno", "Yes.", domain="toy"),
        ScoreInput(q, "Yes", "yesno", "True", domain="toy"),
        ScoreInput(q, "Yes", "yesno", "I think the answer is no, it was elsewhere.", domain="toy"),
        ScoreInput(q, "Yes", "yesno", "**Yes**, it was.", domain="toy"),
        ScoreInput(q, "Yes", "yesno", "Hard to say.", domain="toy"),
        ScoreInput(q, "Yes", "yesno", None, error="timeout", domain="toy"),
    ]
    got = scorer.score_many(items)
    assert got == [
        Score("yes", True, True),
        Score("yes", True, True),
        Score("no", False, False),
        Score("yes", False, True),
        Score(None, False, False),
        Score(None, None, None, "timeout"),
    ]
    assert claim_correct("yesno", "yes", parse_gold("yesno", "True"))
    assert group_consistent("yesno", ["yes", "yes"]) and not group_consistent("yesno", ["yes", "no"])
    records = [
        {"id": str(i), "domain": "toy", "group": "toy-q0", "type": "yesno", **asdict(s)}
        for i, s in enumerate(got[:4])
    ]
    figures = summarize(records)["domains"]["toy"]
    assert figures["fch"] == 0.25 and figures["pmh"] == 0.5 and figures["rc"] == 0.0


def test_unregistered_type_is_gone(yesno: types.AnswerType) -> None:
    types.unregister("yesno")
    with pytest.raises(types.UnknownAnswerType):
        types.get("yesno")


def test_registering_forgets_parsed_golds(yesno: types.AnswerType) -> None:
    # A gold parsed while no such type existed must not survive under a new type of the name.
    types.unregister("yesno")
    with pytest.raises(types.UnknownAnswerType):
        parse_gold("yesno", "No")
    types.register(YesNo())
    assert parse_gold("yesno", "No").values == ("no",)


def test_the_dataset_loader_and_defan_score_read_the_registry(yesno: types.AnswerType, tmp_path: Path) -> None:
    from defan_pytest.cli import main
    from defan_pytest.dataset import answer_types, load_user_set

    assert answer_types()[-1] == "yesno"
    data = tmp_path / "toy.jsonl"
    data.write_text(
        '{"question": "Is water wet?", "answer": "Yes", "type": "yesno", "response": "yes", "group": "g"}\n'
        '{"question": "Is water wet, really?", "answer": "Yes", "type": "yesno", "response": "No.", "group": "g"}\n',
        encoding="utf-8",
    )
    assert [r.type for r in load_user_set(data)] == ["yesno", "yesno"]
    out = tmp_path / "report.json"
    assert main(["score", str(data), "--json", str(out), "--spacy-model", "none"]) == 0
    report = json.loads(out.read_text())
    assert [(r["claim"], r["correct"]) for r in report["rows"]] == [("yes", True), ("no", False)]
    types.unregister("yesno")
    assert main(["score", str(data), "--spacy-model", "none"]) == 2  # no such type any more


@pytest.mark.slow
def test_a_toy_type_runs_in_a_pytest_session(pytester: pytest.Pytester) -> None:
    # A conftest.py registers the type and a model, as a user's project would; serial and -n 2.
    pytester.makeconftest(
        "import defan_pytest\n"
        "from defan_pytest.scoring import types\n"
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from toy_yesno import YesNo\n"
        "if 'yesno' not in types.names():\n"
        "    types.register(YesNo())\n"
        "@defan_pytest.model('oracle', version='1')\n"
        "def oracle(prompt):\n"
        "    return 'No, it is not.' if 'dry' in prompt else 'Yes'\n"
    )
    rows = [{"question": f"Is water {w} (form {i})?", "answer": "Yes", "type": "yesno", "domain": "toy",
             "group": w} for w in ("wet", "dry") for i in range(3)]
    pytester.path.joinpath("toy.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    pytester.path.joinpath("thresholds.toml").write_text("[domains.toy]\nmax_fch = 0.4\nmax_pmh = 0.6\n")
    _run_toy_sessions(pytester)  # what the sessions' conftest.py registers goes with the test (conftest.py)


def _run_toy_sessions(pytester: pytest.Pytester) -> None:
    for extra in ([], ["-n", "2"]):
        result = pytester.runpytest("--defan-model=oracle", "--defan-dataset=toy.jsonl", "--defan-cache=off",
                                    "--defan-spacy-model=none", "--defan-report=r.json", *extra)
        result.stdout.fnmatch_lines(["*FAILED defan::gate?toy? - toy: FCH 0.50 > max_fch 0.4*"])
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        report = json.loads(pytester.path.joinpath("r.json").read_text())
        assert sorted((r["id"], r["claim"], r["correct"]) for r in report["rows"]) == [
            (f"toy-q{g:04d}-p{p:02d}", claim, claim == "yes") for g, claim in ((0, "yes"), (1, "no")) for p in range(3)
        ]
