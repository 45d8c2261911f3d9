"""Tests for defan_pytest.dataset.user: a user's own set (CSV, JSON, JSONL) and a file of
responses (load_responses), read and validated by one reader per format and one validator."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from defan_pytest.dataset import DatasetError, Response, load_responses, load_user_set

pytestmark = pytest.mark.usefixtures("dataset_env")

DATA = Path(__file__).parent / "data"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8", newline="")
    return path


def _block(question: str, answer: str, type_: str = "name", n: int = 15) -> str:
    return "".join(f"{question} #{i},{answer},{type_}\n" for i in range(n))


def test_fixture_sets_read_alike_in_every_format() -> None:
    by_format = {suffix: load_user_set(DATA / f"user_set.{suffix}") for suffix in ("csv", "json", "jsonl")}
    key = lambda rows: [(r.id, r.question, r.answer, r.type) for r in rows]  # noqa: E731
    assert key(by_format["csv"]) == key(by_format["json"]) == key(by_format["jsonl"])
    rows = by_format["jsonl"]
    assert [r.id for r in rows] == ["kites-q0000-p00", "kites-q0000-p01", "kites-q0001-p00",
                                    "fairs-q0000-p00", "fairs-q0001-p00"]
    # The JSON number 42.850 keeps its written form, as the CSV cell does.
    assert rows[2].answer == "42.850" and type(rows[2].answer) is str
    assert [r.line for r in by_format["json"]] == [2, 3, 4, 5, 6]


# ------------------------------------------------------------------------------------------
# User sets: happy paths
# ------------------------------------------------------------------------------------------


def test_user_csv_minimal(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "hidden_split.csv",
        "\ufeffquestions,answer,type,notes\n"
        " Who? ,  Ada  ,name,x\n"
        "\n"
        "How many?,,numeric,y\n"
        '"Where\nexactly?","Seattle, WA",city,z\n'
        "When?,1/2/2003,Date,\n",
    )
    rows = load_user_set(path)
    assert [(r.id, r.question, r.answer, r.type, r.line) for r in rows] == [
        ("hidden_split-q0000-p00", "Who?", "  Ada  ", "name", 2),
        ("hidden_split-q0001-p00", "How many?", "", "numeric", 4),
        ("hidden_split-q0002-p00", "Where\nexactly?", "Seattle, WA", "city", 5),
        ("hidden_split-q0003-p00", "When?", "1/2/2003", "date", 7),
    ]
    assert {r.source for r in rows} == {str(path)}
    assert [r.domain for r in load_user_set(path, default_domain="private")] == ["private"] * 4


def test_user_csv_domain_and_group_labels(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "set.csv",
        "question,answer,type,domain,group\n"
        "a1,A,name,x,g-a\n"
        "b1,B,name,x,g-b\n"
        "a2,A,name,x,g-a\n"
        "c1,3,numeric,y,g-a\n"
        "d1,D,name,,7\n"  # empty domain: the file's default domain
        "b2,B,name,x,g-b\n",
    )
    rows = load_user_set(path, group_by_blocks=True)  # labels win over blocks
    assert [r.id for r in rows] == [
        "x-q0000-p00",
        "x-q0001-p00",
        "x-q0000-p01",
        "y-q0000-p00",
        "set-q0000-p00",
        "x-q0001-p01",
    ]
    assert rows[3].group_key == "y-q0000"


def test_user_csv_group_by_blocks(tmp_path: Path) -> None:
    text = "question,answer,type\n" + _block("q", "A") + _block("r", "7", "numeric")
    path = _write(tmp_path / "blocks.csv", text)
    rows = load_user_set(path, group_by_blocks=True)
    assert [r.group for r in rows] == [0] * 15 + [1] * 15
    assert [r.para for r in rows] == list(range(15)) * 2
    assert [r.group for r in load_user_set(path)] == list(range(30))


def test_user_json_list_and_rows_object(tmp_path: Path) -> None:
    items = [
        {"question": "Q1", "answer": 42, "type": "numeric", "group": 1},
        {"questions": "Q2", "answer": 42.85, "type": "numeric", "group": "1"},
        {"question": "Q2b", "answer": 0.5, "type": "numeric", "group": 1},
        {"question": "Q3", "answer": "", "type": "name", "group": "other", "domain": "nob"},
    ]
    path = tmp_path / "set.json"
    # A JSON float keeps its literal text: 0.50 stays "0.50" (two decimals matter to scoring).
    path.write_text(json.dumps(items, indent=2).replace("0.5,", "0.50,"), encoding="utf-8")
    rows = load_user_set(path)
    assert [(r.id, r.answer) for r in rows] == [
        ("set-q0000-p00", "42"),
        ("set-q0000-p01", "42.85"),
        ("set-q0000-p02", "0.50"),
        ("nob-q0000-p00", ""),
    ]
    assert all(type(r.answer) is str for r in rows)
    text = path.read_text(encoding="utf-8").split("\n")
    assert [text[r.line - 1].strip() for r in rows] == ["{"] * 4
    assert [r.line for r in rows] == [2, 8, 14, 20]

    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(
        '{"name": "mine", "rows": [\n{"question": "Q", "answer": "A", "type": "name"},\n'
        '  {"question": "R", "answer": "B", "type": "city"}]}',
        encoding="utf-8",
    )
    rows = load_user_set(wrapped, default_domain="d")
    assert [(r.id, r.line, r.type) for r in rows] == [("d-q0000-p00", 2, "name"), ("d-q0001-p00", 3, "city")]


def test_user_jsonl(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "set.jsonl",
        '{"question": "Q1", "answer": "A", "type": "name", "domain": "x"}\n'
        "\n"
        '{"question": "Q2", "answer": "A", "type": "name", "domain": "x"}\r\n'
        '{"question": "Q3\\u2028more", "answer": "5", "type": "rank"}\n',
    )
    rows = load_user_set(path)
    assert [(r.id, r.line) for r in rows] == [("x-q0000-p00", 1), ("x-q0001-p00", 3), ("set-q0000-p00", 4)]
    assert rows[2].question == "Q3\u2028more"


# ------------------------------------------------------------------------------------------
# User sets: malformed input, always with file and line
# ------------------------------------------------------------------------------------------


def test_user_csv_missing_header_column(tmp_path: Path) -> None:
    path = _write(tmp_path / "nocol.csv", "question,answer\nq,a\n")
    with pytest.raises(DatasetError) as info:
        load_user_set(path)
    assert f"{path}:1: no 'type' column" in str(info.value)


def test_user_csv_several_problems_at_once(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "bad.csv",
        "question,answer,type,group\n"
        "ok,A,name,1\n"
        "q2,A,person,1\n"  # line 3: unknown type
        '"",A,name,1\n'  # line 4: empty question
        "q4,A\n"  # line 5: missing columns
        "q5,A,name,\n"  # line 6: empty group
        "q6,A,name,1,extra\n",  # line 7: too many fields
    )
    with pytest.raises(DatasetError) as info:
        load_user_set(path)
    message = str(info.value)
    assert f"{path}: 5 problems:" in message
    assert f"{path}:3: unknown type 'person' (expected one of name, numeric, date, rank, city)" in message
    assert f"{path}:4: empty question" in message
    assert f"{path}:5: missing columns type, group" in message
    assert f"{path}:6: empty group label" in message
    assert f"{path}:7: 5 fields, the header has 4" in message
    assert len(info.value.problems) == 5


def test_user_csv_blocks_validated(tmp_path: Path) -> None:
    text = "question,answer,type,domain\n" + "".join(f"q{i},A,name,d\n" for i in range(16))
    text = text.replace("q3,A,name", "q3,B,name")
    path = _write(tmp_path / "blocks.csv", text)
    with pytest.raises(DatasetError) as info:
        load_user_set(path, group_by_blocks=True)
    message = str(info.value)
    assert f"{path}:5: answer 'B' differs from 'A' at line 2" in message
    assert f"{path}:17: 16 rows is not a multiple of 15" in message


def test_user_problem_cap(tmp_path: Path) -> None:
    # The one printer (errors.format_problems) lists 50 problems and counts the rest.
    path = _write(tmp_path / "many.csv", "question,answer,type\n" + "q,a,bogus\n" * 60)
    with pytest.raises(DatasetError) as info:
        load_user_set(path)
    message = str(info.value)
    assert len(info.value.problems) == 60
    assert message.startswith(f"{path}: 60 problems:\n")
    assert f"  - {path}:51: unknown type" in message
    assert f"{path}:52: unknown type" not in message
    assert message.endswith("\n  ... and 10 more")


def test_user_json_problems_name_the_item(tmp_path: Path) -> None:
    items = [
        {"question": "Q0", "answer": "A", "type": "name"},
        {"question": "Q1", "type": "name"},
        {"question": "Q2", "answer": None, "type": "name"},
        {"question": "Q3", "answer": True, "type": "name"},
        ["not", "an", "object"],
        {"question": " ", "answer": "A", "type": "colour", "group": 1.5},
        {"question": "Q6", "answer": float("nan"), "type": "numeric", "domain": 3},
    ]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(items, indent=1), encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_user_set(path)
    message = str(info.value)
    assert f"{path}: item 1 (line 7): missing 'answer'" in message
    assert f"{path}: item 2 (line 11): missing 'answer'" in message
    assert f"{path}: item 3 (line 16): answer must be a string or a finite number, found boolean" in message
    assert f"{path}: item 4 (line 21): expected an object" in message
    assert f"{path}: item 5 (line 26): empty question" in message
    assert f"{path}: item 5 (line 26): unknown type 'colour'" in message
    assert f"{path}: item 5 (line 26): group must be a string or an integer label, found number" in message
    assert f"{path}: item 6 (line 32): answer must be a string or a finite number, found number" in message
    assert f"{path}: item 6 (line 32): domain must be a string, found number" in message
    assert len(info.value.problems) == 9


def test_user_json_invalid_and_wrong_shape(tmp_path: Path) -> None:
    broken = _write(tmp_path / "broken.json", '[\n{"question": "Q", "answer": "A", "type": "name"},\n{oops}\n]')
    with pytest.raises(DatasetError, match=rf"{re.escape(str(broken))}:3: invalid JSON"):
        load_user_set(broken)
    shape = _write(tmp_path / "shape.json", '{"questions": []}')
    with pytest.raises(DatasetError, match="'rows' key"):
        load_user_set(shape)
    mixed = _write(
        tmp_path / "mixed.json",
        json.dumps([{"question": "Q", "answer": "A", "type": "name", "group": 1},
                    {"question": "R", "answer": "A", "type": "name"}]),
    )
    with pytest.raises(DatasetError, match=r"item 1 \(line 1\): missing 'group'"):
        load_user_set(mixed)


def test_user_jsonl_bad_lines_all_reported(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "bad.jsonl",
        '{"question": "Q1", "answer": "A", "type": "name"}\n'
        '{"question": "Q2", "answer": "A", "type": "name"\n'  # line 2: bad JSON
        '{"question": "Q3", "type": "name"}\n'  # line 3: no answer
        "[1, 2]\n",  # line 4: not an object
    )
    with pytest.raises(DatasetError) as info:
        load_user_set(path)
    message = str(info.value)
    assert f"{path}:2: invalid JSON" in message
    assert f"{path}:3: missing 'answer'" in message
    assert f"{path}:4: expected an object" in message
    assert len(info.value.problems) == 3


def test_user_set_unsupported_and_empty(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="unsupported file type '.txt'"):
        load_user_set(_write(tmp_path / "set.txt", "x"))
    with pytest.raises(DatasetError, match="no rows"):
        load_user_set(_write(tmp_path / "empty.jsonl", "\n\n"))
    with pytest.raises(DatasetError, match="empty file"):
        load_user_set(_write(tmp_path / "empty.csv", ""))
    with pytest.raises(DatasetError, match="no such file"):
        load_user_set(tmp_path / "absent.csv")
    with pytest.raises(DatasetError, match="is a directory"):
        load_user_set(tmp_path)


def test_user_set_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    jsonl = tmp_path / "latin1.jsonl"
    jsonl.write_bytes(
        b'{"question": "Q", "answer": "A", "type": "name"}\n'
        b'{"question": "R\xf6ntgen?", "answer": "A", "type": "name"}\n'
    )
    with pytest.raises(DatasetError, match=rf"{re.escape(str(jsonl))}:2: not valid UTF-8"):
        load_user_set(jsonl)
    # JSONL lines are decoded one by one: every bad line is named, the others still checked.
    jsonl.write_bytes(
        b'{"question": "Q", "answer": "A", "type": "nom"}\n'
        b'{"question": "R\xf6ntgen?", "answer": "A", "type": "name"}\n'
        b'{"question": "M\xfcller?", "answer": "A", "type": "name"}\n'
    )
    with pytest.raises(DatasetError) as info:
        load_user_set(jsonl)
    assert [p.split(": ", 1)[0] for p in info.value.problems] == [f"{jsonl}:1", f"{jsonl}:2", f"{jsonl}:3"]
    csv_path = tmp_path / "latin1.csv"
    csv_path.write_bytes(b"question,answer,type\nQ,A,name\nR\xf6ntgen?,A,name\n")
    with pytest.raises(DatasetError, match=rf"{re.escape(str(csv_path))}:3: not valid UTF-8"):
        load_user_set(csv_path)


def test_user_csv_unparseable_field_names_the_line(tmp_path: Path) -> None:
    huge = "x" * 200_000  # over the csv module's field size limit
    path = _write(tmp_path / "huge.csv", f"question,answer,type\nq,a,name\n{huge},a,name\n")
    with pytest.raises(DatasetError, match=rf"{re.escape(str(path))}:3: cannot parse: field larger"):
        load_user_set(path)


# ------------------------------------------------------------------------------------------
# Responses (``defan score`` input): the same reader and validator, plus response and error
# ------------------------------------------------------------------------------------------


def _line(**fields: object) -> str:
    base: dict[str, object] = {"question": "How long was the 2037 Windmere fair in days?", "answer": "43",
                               "type": "numeric", "response": "43 days"}
    base.update(fields)
    return json.dumps({k: v for k, v in base.items() if v is not _DROP})


_DROP = object()


def test_load_responses_fixture() -> None:
    got = load_responses(DATA / "responses.jsonl", default_domain="custom")
    assert got == [
        Response(1, "fairs", "1", "How long was the 2037 Windmere fair in days?", "42.850", "numeric",
                 "It lasted 42.85 days.", None),
        Response(2, "fairs", "1", "For how many days did the 2037 Windmere fair run?", "42.850", "numeric",
                 "42.9 days", None),
        Response(3, "custom", None, "Which kite flew highest at the 2037 Windmere fair?", "Blue Heron", "name",
                 None, "HTTP 503"),
    ]
    # Without a default domain, the file stem, as for a user set.
    assert load_responses(DATA / "responses.jsonl")[2].domain == "responses"


def test_load_responses_blank_lines_bom_crlf_and_empty_error(tmp_path: Path) -> None:
    path = tmp_path / "r.txt"  # JSONL whatever the suffix
    path.write_bytes(
        ("\ufeff" + _line(group=7) + "\r\n\r\n" + _line(response=_DROP, error="timeout", group="7") + "\n"
         + _line(error="", answer=42.0) + "\n   \n").encode("utf-8")
    )
    got = load_responses(path)
    assert [(r.line, r.group, r.response, r.error, r.answer) for r in got] == [
        (1, "7", "43 days", None, "43"),
        (3, "7", None, "timeout", "43"),
        (4, None, "43 days", None, "42.0"),  # "" means no error; 42.0 keeps its written form
    ]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        pytest.param("{not json", "invalid JSON", id="not-json"),
        pytest.param("[1, 2]", "expected an object with question, answer, type and response, found array",
                     id="array"),
        pytest.param(_line(response=_DROP), "missing 'response' (only a failed call, with an 'error', may lack one)",
                     id="missing-response"),
        pytest.param(_line(response=None), "response is null but there is no 'error'", id="response-null"),
        pytest.param(_line(response=None, error="  "), "response is null but there is no 'error'",
                     id="response-null-blank-error"),
        pytest.param(_line(response=43), "response must be a string, found number", id="response-number"),
        pytest.param(_line(response=4.5), "response must be a string, found number", id="response-float"),
        pytest.param(_line(error=500), "error must be a string or null, found number", id="error-number"),
        pytest.param(_line(error=1.5), "error must be a string or null, found number", id="error-float"),
        pytest.param(_line(answer=None), "missing 'answer'", id="answer-null"),
        pytest.param(_line(answer=True), "answer must be a string or a finite number, found boolean",
                     id="answer-bool"),
        pytest.param(_line(type="person"), "unknown type 'person' (expected one of name, numeric, date, rank, city)",
                     id="unknown-type"),
        pytest.param(_line(question="  "), "empty question", id="question-empty"),
        pytest.param(_line(group=1.5), "group must be a string or an integer label, found number", id="group-float"),
    ],
)
def test_load_responses_every_bad_line_kind(tmp_path: Path, bad: str, message: str) -> None:
    path = _write(tmp_path / "r.jsonl", "\n".join([_line(), "", bad, _line()]) + "\n")
    with pytest.raises(DatasetError) as info:
        load_responses(path)
    assert len(info.value.problems) == 1
    assert info.value.problems[0].startswith(f"{path}:3: {message}")


def test_load_responses_one_type_per_group(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "r.jsonl",
        "\n".join([
            _line(group="g", type="numeric"),
            _line(group="g", type="rank", domain="other"),  # another domain: another group
            _line(group="g", type="Rank"),
            _line(type="rank"),  # no label: its own group
        ]) + "\n",
    )
    with pytest.raises(DatasetError) as info:
        load_responses(path)
    assert info.value.problems == (f"{path}:3: type 'rank' differs from 'numeric' of the same group on line 1",)


def test_load_responses_empty_missing_and_folder(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no responses"):
        load_responses(_write(tmp_path / "empty.jsonl", "\n  \n"))
    with pytest.raises(DatasetError, match="no such file"):
        load_responses(tmp_path / "absent.jsonl")
    with pytest.raises(DatasetError, match="is a directory"):
        load_responses(tmp_path)


# ------------------------------------------------------------------------------------------
# Issue 8: golds that cannot be compared, text sanitised where it enters, not-JSONL files
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["csv", "json", "jsonl"])
def test_a_value_gold_that_does_not_parse_is_a_problem_naming_its_line(tmp_path: Path, suffix: str) -> None:
    rows = [
        {"question": "How many?", "answer": "1,351,921", "type": "numeric"},
        {"question": "How many now?", "answer": "lots", "type": "numeric"},
        {"question": "When?", "answer": "the day after", "type": "date"},
        {"question": "Which position?", "answer": "top", "type": "rank"},
        {"question": "Which position then?", "answer": "601-650", "type": "rank"},
        {"question": "Who?", "answer": "any text at all", "type": "name"},
        {"question": "How many awarded?", "answer": "None", "type": "numeric"},
        {"question": "How many left?", "answer": "", "type": "numeric"},
    ]
    if suffix == "csv":
        text = "question,answer,type\n" + "".join(f"{r['question']},\"{r['answer']}\",{r['type']}\n" for r in rows)
        where = {2: f"{tmp_path}/set.csv:3", 3: f"{tmp_path}/set.csv:4", 4: f"{tmp_path}/set.csv:5"}
    elif suffix == "json":
        text = "[\n" + ",\n".join(json.dumps(r) for r in rows) + "\n]\n"
        where = {n: f"{tmp_path}/set.json: item {n - 1} (line {n + 1})" for n in (2, 3, 4)}
    else:
        text = "".join(json.dumps(r) + "\n" for r in rows)
        where = {n: f"{tmp_path}/set.jsonl:{n}" for n in (2, 3, 4)}
    path = _write(tmp_path / f"set.{suffix}", text)
    with pytest.raises(DatasetError) as info:
        load_user_set(path)
    assert list(info.value.problems) == [
        f"{where[2]}: answer 'lots' holds no numeric value (a numeric gold is compared as one; fix the answer or the type)",
        f"{where[3]}: answer 'the day after' holds no date value (a date gold is compared as one; fix the answer or the type)",
        f"{where[4]}: answer 'top' holds no rank value (a rank gold is compared as one; fix the answer or the type)",
    ]


def test_the_public_reader_checks_golds_too(tmp_path: Path) -> None:
    from defan_pytest.dataset import read_public_csv

    path = _write(tmp_path / "m.csv", "questions,answer,type\nHow many?,12,numeric\nHow many more?,a lot,numeric\n")
    with pytest.raises(DatasetError, match=re.escape(f"{path}:3: answer 'a lot' holds no numeric value")):
        read_public_csv(path, "math")


def test_lone_surrogates_become_replacement_characters_with_a_note(tmp_path: Path) -> None:
    from defan_pytest.dataset import load_dataset

    # The \ud800 escapes, as a JSON file holds them (json.dumps escapes non-ASCII by default).
    rec = {"question": "Who\ud800?", "answer": "Ada\udc00", "type": "name", "domain": "d"}
    path = _write(tmp_path / "set.jsonl", json.dumps(rec) + "\n" + json.dumps(dict(rec, question="Fine?")) + "\n")
    notes: list[str] = []
    rows = load_user_set(path, notes=notes)
    assert [(r.question, r.answer) for r in rows] == [("Who\ufffd?", "Ada\ufffd"), ("Fine?", "Ada\ufffd")]
    assert notes == [
        f"{path}:1: question, answer: invalid characters (lone surrogates) replaced by U+FFFD",
        f"{path}:2: answer: invalid characters (lone surrogates) replaced by U+FFFD",
    ]
    assert load_dataset(path).notes == tuple(notes)
    json.dumps([r.question for r in rows], ensure_ascii=False).encode("utf-8")  # encodable now


def test_a_domain_with_control_characters_is_a_problem(tmp_path: Path) -> None:
    path = _write(tmp_path / "set.csv", "question,answer,type,domain\nWho?,Ada,name,\x1b[31mred\n")
    with pytest.raises(DatasetError, match=re.escape(r"domain '\x1b[31mred' holds control characters")):
        load_user_set(path)


def test_deep_nesting_and_huge_numbers_are_problems_not_crashes(tmp_path: Path) -> None:
    deep = _write(tmp_path / "deep.json", "[" * 100_000 + "]" * 100_000)
    with pytest.raises(DatasetError, match="deep.json:1: invalid JSON: arrays or objects nested too deeply"):
        load_user_set(deep)
    huge = _write(tmp_path / "huge.jsonl", '{"question": "Q", "answer": ' + "9" * 5000 + ', "type": "numeric"}\n')
    with pytest.raises(DatasetError, match=r"huge.jsonl:1: invalid JSON: Exceeds the limit \(4300 digits\)"):
        load_user_set(huge)


def test_a_csv_named_jsonl_is_one_problem(tmp_path: Path) -> None:
    path = _write(tmp_path / "set.jsonl", "question,answer,type\n" + "Who?,Ada,name\n" * 1000)
    with pytest.raises(DatasetError) as info:
        load_user_set(path)
    assert info.value.problems == (
        f"{path}:1: this looks like a CSV file; a .jsonl file holds JSONL (one JSON object per line)",
    )


# ------------------------------------------------------------------------------------------
# The file is read by the one reader (issue 20)
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".csv", ".json", ".jsonl"])
def test_a_fifo_a_loop_or_a_dangling_link_is_said(tmp_path: Path, suffix: str) -> None:
    from test_hostile_reports import fed_fifo

    fifo = tmp_path / f"fifo{suffix}"
    release = fed_fifo(fifo, b'question,answer,type\nQ,A,name\n')
    try:
        for load in (load_user_set, load_responses):
            with pytest.raises(DatasetError, match=r"is a FIFO \(a named pipe\), not a file"):
                load(fifo)
    finally:
        release()
    loop = tmp_path / f"loop{suffix}"
    loop.symlink_to(loop.name)
    dangling = tmp_path / f"moved{suffix}"
    dangling.symlink_to(tmp_path / f"elsewhere{suffix}")
    for load in (load_user_set, load_responses):
        with pytest.raises(DatasetError, match="a symbolic link loop"):
            load(loop)
        with pytest.raises(DatasetError, match=f"a symbolic link to .*elsewhere{suffix}, which does not exist"):
            load(dangling)


def test_a_dataset_spec_that_is_a_loop_is_said(tmp_path: Path) -> None:
    from defan_pytest.dataset import load_dataset

    (tmp_path / "set.csv").symlink_to("set.csv")
    with pytest.raises(DatasetError, match="set.csv: a symbolic link loop"):
        load_dataset("set.csv", root=tmp_path)
