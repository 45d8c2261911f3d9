"""One set of rows and responses scored two ways must give the same claims: through a real
plugin session (pytester, serial and under ``-n 2``; the answers of a registered callable, one
of them cut by the token limit) and through ``defan score`` on a responses file of the same
rows, responses and finish reasons.  Every row's ``claim``, ``aligned`` and ``correct`` are
compared, aligned by id (``defan score`` keeps the plugin's id and group when the input gives
them), with its finish reason.

The rows are public-split rows of seven domains, and the responses of the name-like rows name
other golds of their own domain (the plugin knows every gold of a loaded domain; a claim must
not depend on which other rows were loaded or how the scorer was built), cut answers
(``finish_reason: length``), wrong values and approximations.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest

from conftest import find_public_dir
from defan_pytest.cli import main
from defan_pytest.dataset import load_public

PUBLIC = find_public_dir()
#: The domains and how many paraphrases of their first group are asked (math: one a group).
DOMAINS = {"sports": 5, "nobel": 5, "entertainment": 5, "conference_venue": 5, "census": 4, "world_org": 4}
MATH_GROUPS = 4
#: What is compared, row by row.
COMPARED = ("domain", "group", "type", "claim", "aligned", "correct", "error", "finish_reason")


def _first_alternative(gold: str) -> str:
    return gold.split(";")[0].strip()


def _name_responses(gold: str, other: str) -> List[Any]:
    """Answers to a name-like row (a gazetteer type): the gold, another gold of the domain, both
    (in either order), and one cut by the token limit in the middle of the gold."""
    return [
        gold,
        f"{other} won it.",
        f"Not {other}: it was {gold}.",
        f"Many expected {gold}, but the answer is {other}.",
        {"text": f"The answer to this question is {other}, or rather {gold[: max(2, len(gold) // 2)]}",
         "finish_reason": "length"},
    ]


def _value_responses(gold: str, other: str) -> List[Any]:
    return [
        gold,
        f"I believe it is {other}.",
        f"About {gold}.",
        {"text": f"It is {gold}, though some sources say {other[:2]}", "finish_reason": "length"},
    ]


MATH_RESPONSES = [
    "The answer is 240.",
    "Let the age be x; then 40 + 120 = 160, so the answer is 270.",
    {"text": "Step one gives 122, and then we get 3", "finish_reason": "length"},
    {"text": "Let the book have T pages. She read 2/3 T, so T = 27", "finish_reason": "stop"},
]


def chosen() -> List[Dict[str, Any]]:
    """The rows, each with its response (a str, or ``{"text", "finish_reason"}``)."""
    if PUBLIC is None:
        return []
    rows = load_public(domains=[*DOMAINS, "math"], data_dir=PUBLIC)
    out: List[Dict[str, Any]] = []
    for domain, n in DOMAINS.items():
        mine = [r for r in rows if r.domain == domain and r.group == 0][:n]
        gold = _first_alternative(mine[0].answer)
        # Another gold of the same domain, of a later group (what the plugin's gazetteer holds).
        other = next(_first_alternative(r.answer) for r in rows
                     if r.domain == domain and r.group > 0 and _first_alternative(r.answer) not in ("", gold))
        make = _name_responses if mine[0].type in ("name", "city") else _value_responses
        out += [{"row": r, "response": resp} for r, resp in zip(mine, make(gold, other))]
    maths = [r for r in rows if r.domain == "math" and r.group < MATH_GROUPS]
    out += [{"row": r, "response": resp} for r, resp in zip(maths, MATH_RESPONSES)]
    return out


CHOSEN = chosen()

PARITY_CONFTEST = """
import json
import defan_pytest

with open("responses.json", encoding="utf-8") as f:
    TABLE = json.load(f)

@defan_pytest.model("parity", version="1")
def parity(prompt):
    return TABLE[prompt]
"""


def _text(response: Any) -> str:
    return response if isinstance(response, str) else response["text"]


def _finish(response: Any) -> Any:
    return None if isinstance(response, str) else response["finish_reason"]


def responses_file(path: Path) -> Path:
    """The ``defan score`` input of the chosen rows: the plugin's id, group, gold as in the
    file, the same response and finish reason."""
    lines = []
    for c in CHOSEN:
        r = c["row"]
        line = {"id": r.id, "domain": r.domain, "group": r.group_key, "question": r.question, "answer": r.answer,
                "type": r.type, "response": _text(c["response"])}
        if _finish(c["response"]) is not None:
            line["finish_reason"] = _finish(c["response"])
        lines.append(json.dumps(line, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def by_id(rows: List[Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    return {r["id"]: {k: r.get(k) for k in COMPARED} for r in rows}


def test_the_rows_are_the_ones_meant() -> None:
    if PUBLIC is None:
        pytest.skip("no public split")
    assert 30 <= len(CHOSEN) <= 50
    assert sum(_finish(c["response"]) == "length" for c in CHOSEN) == len(DOMAINS) + 1
    assert len({c["row"].question for c in CHOSEN}) == len(CHOSEN)  # the callable answers by question


@pytest.mark.slow
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_the_plugin_and_defan_score_give_the_same_claims(pytester: pytest.Pytester, public_dir: Path,
                                                         monkeypatch: pytest.MonkeyPatch, workers: list,
                                                         tmp_path: Path) -> None:
    monkeypatch.setenv("DEFAN_DATA_DIR", str(public_dir))
    pytester.path.joinpath("responses.json").write_text(
        json.dumps({c["row"].question: c["response"] for c in CHOSEN}, ensure_ascii=False), encoding="utf-8")
    pytester.makeconftest(PARITY_CONFTEST)
    ids = " or ".join(c["row"].id for c in CHOSEN)
    result = pytester.runpytest_subprocess(
        "--defan-model=parity", *[f"--defan-domain={d}" for d in [*DOMAINS, "math"]], "-k", ids,
        "--defan-gate-narrowed", "--defan-spacy-model=none", "--defan-cache=off", "--defan-report=plugin.json",
        "-p", "no:cacheprovider", *workers)
    assert result.ret == 0, result.stdout.lines[-30:]
    plugin = by_id(json.loads((pytester.path / "plugin.json").read_text(encoding="utf-8"))["rows"])
    assert sorted(plugin) == sorted(c["row"].id for c in CHOSEN)

    out = tmp_path / "score.json"
    assert main(["score", str(responses_file(tmp_path / "responses.jsonl")), "--spacy-model=none",
                 "--json", str(out)]) == 0
    scored = by_id(json.loads(out.read_text(encoding="utf-8"))["rows"])

    assert sorted(scored) == sorted(plugin)
    # What differs, row by row: {id: {field: [the plugin's, defan score's]}}.
    differ = {i: {k: [plugin[i][k], scored[i][k]] for k in COMPARED if plugin[i][k] != scored[i][k]}
              for i in plugin if plugin[i] != scored[i]}
    assert not differ, "\n".join(f"{i}: {json.dumps(d, ensure_ascii=False)}" for i, d in differ.items())
    # The finish reasons reached both: the cut answers are said so in both reports.
    assert sorted(i for i, r in plugin.items() if r["finish_reason"] == "length") == sorted(
        c["row"].id for c in CHOSEN if _finish(c["response"]) == "length")
