"""Tests for defan_pytest.dataset.public: the public-format reader and load_public.

The reader and the loader run on synthetic files (tests/data/synthetic, and files written per
test); the checks of the real split's contents need the real files (fixture ``public_dir``)
and skip without them.
"""
from __future__ import annotations

import collections
import csv
import re
from pathlib import Path

import pytest

from conftest import synthetic_dir

from defan_pytest.dataset import DOMAINS, DatasetError, Row, load_public, read_public_csv

pytestmark = pytest.mark.usefixtures("dataset_env")

ALL_IDS = list(DOMAINS)

EXPECTED = {  # domain: (rows, groups, answer types) of the real public split
    "sports": (1305, 87, {"name", "numeric"}),
    "census": (7905, 527, {"numeric"}),
    "nobel": (9795, 653, {"name"}),
    "entertainment": (11415, 761, {"name", "date"}),
    "world_org": (2745, 183, {"date", "numeric"}),
    "qs_ranking": (21495, 1433, {"rank"}),
    "conference_venue": (915, 61, {"city"}),
    "math": (15218, 15218, {"numeric"}),
}

SYNTHETIC = {  # the same for tests/data/synthetic
    "sports": (30, 2, {"name", "numeric"}),
    "census": (30, 2, {"numeric"}),
    "nobel": (30, 2, {"name"}),
    "entertainment": (30, 2, {"name", "date"}),
    "world_org": (30, 2, {"date", "numeric"}),
    "qs_ranking": (30, 2, {"rank"}),
    "conference_venue": (30, 2, {"city"}),
    "math": (6, 6, {"numeric"}),
}


def _by_domain(rows: list[Row]) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = collections.defaultdict(list)
    for r in rows:
        out[r.domain].append(r)
    return out


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8", newline="")
    return path


def _check_counts(rows: list[Row], expected: dict[str, tuple[int, int, set[str]]]) -> None:
    assert len(rows) == sum(n for n, _, _ in expected.values())
    by_domain = _by_domain(rows)
    assert list(by_domain) == ALL_IDS  # registry order
    for domain_id, (n_rows, n_groups, types) in expected.items():
        members = by_domain[domain_id]
        assert len(members) == n_rows, domain_id
        assert len({r.group for r in members}) == n_groups, domain_id
        assert {r.type for r in members} == types, domain_id


def _check_blocks_of_15(rows: list[Row]) -> None:
    for domain_id, members in _by_domain(rows).items():
        if domain_id == "math":
            assert all(r.para == 0 for r in members)
            assert [r.group for r in members] == list(range(len(members)))
            continue
        for i, r in enumerate(members):
            assert (r.group, r.para) == divmod(i, 15)
        groups: dict[int, list[Row]] = collections.defaultdict(list)
        for r in members:
            groups[r.group].append(r)
        for group in groups.values():
            assert len(group) == 15
            assert len({(r.answer, r.type) for r in group}) == 1


def _check_physical_lines(rows: list[Row], folder: Path) -> None:
    # No field of these files spans lines, so every row's line holds its question verbatim;
    # the multi-line case is covered with files written per test below.
    for domain in DOMAINS.values():
        path = folder / domain.filename
        lines = path.read_text(encoding="utf-8").split("\n")
        members = [r for r in rows if r.domain == domain.id]
        assert {r.source for r in members} == {str(path)}
        assert [r.line for r in members] == list(range(2, len(members) + 2))
        for r in members:
            # Parse the one physical line alone: quotes are doubled in the file.
            fields = next(csv.reader([lines[r.line - 1]]))
            assert fields[-3].strip() == r.question and fields[-2] == r.answer, (domain.id, r.line)


# ------------------------------------------------------------------------------------------
# load_public on the synthetic split
# ------------------------------------------------------------------------------------------


def test_synthetic_public_counts_groups_and_lines(synthetic_public: Path) -> None:
    rows = load_public(data_dir=synthetic_public)
    _check_counts(rows, SYNTHETIC)
    _check_blocks_of_15(rows)
    _check_physical_lines(rows, synthetic_public)
    ids = [r.id for r in rows]
    assert len(set(ids)) == len(ids)


def test_synthetic_public_rows_are_raw_and_stripped(synthetic_public: Path) -> None:
    by_id = {r.id: r for r in load_public(data_dir=synthetic_public)}
    # A leading space before the question (as in the real sports file) is stripped.
    assert by_id["sports-q0000-p00"].question == (
        "Which club won the 2031 Lunar Harbour Cup?(Give me the name only)"
    )
    assert by_id["sports-q0000-p00"].line == 2
    assert by_id["census-q0000-p00"].answer == "2,468,013"  # index column ignored
    assert by_id["census-q0001-p00"].answer == "  90,210 "  # answers stay raw
    assert by_id["nobel-q0001-p03"].answer == ""
    assert by_id["entertainment-q0000-p14"].answer == "Mira Solace "
    assert by_id["qs_ranking-q0001-p00"].answer == "  41=  "
    assert by_id["conference_venue-q0000-p00"].question == 'Where was the 2038 "Tor" Symposium on Kites held?'
    assert by_id["conference_venue-q0000-p00"].answer == "Porto Vela, Brazil"
    assert [by_id[f"math-q{i:04d}-p00"].answer for i in range(6)] == ["36", "2.5", "0.50", "½", "1,200", "0"]


def test_load_public_domain_selection_and_cache(synthetic_public: Path) -> None:
    rows = load_public(["math,sports"], data_dir=synthetic_public)
    assert list(dict.fromkeys(r.domain for r in rows)) == ["sports", "math"]
    assert len(rows) == 30 + 6
    again = load_public(["math,sports"], data_dir=synthetic_public)
    assert again == rows
    # Parsed once per process: the second load hands out the very same row objects.
    assert all(a is b for a, b in zip(again, rows))


def test_load_public_refuses_the_real_digest_for_a_synthetic_file(tmp_path: Path) -> None:
    # Without the synthetic_public fixture the pinned digests apply, and these files are not
    # the pinned ones: load_public must refuse them, even though read_public_csv parses them.
    with pytest.raises(DatasetError, match="sha256 mismatch for QA_domain_8_public.csv"):
        load_public("math", data_dir=synthetic_dir())
    assert len(read_public_csv(synthetic_dir() / "QA_domain_8_public.csv", "math")) == 6


# ------------------------------------------------------------------------------------------
# Public-format parser (no digest) on files written per test
# ------------------------------------------------------------------------------------------


def _block(question: str, answer: str, type_: str = "name", n: int = 15) -> str:
    return "".join(f"{question} #{i},{answer},{type_}\n" for i in range(n))


def test_read_public_csv_multiline_field_bom_and_index_column(tmp_path: Path) -> None:
    body = "\ufeffUnnamed: 0,questions,answer,type\r\n"
    body += '0,"Who won\r\nthe first?",A,name\r\n'
    body += "".join(f"{i},Who won #{i}?,A,name\r\n" for i in range(1, 15))
    body += '15," Multi\nline\nquestion ","  B  ",name\r\n'
    body += "".join(f"{i},Who lost #{i}?,  B  ,name\r\n" for i in range(16, 30))
    path = _write(tmp_path / "QA_domain_1_public.csv", body)
    rows = read_public_csv(path, "sports")
    assert len(rows) == 30
    assert rows[0].line == 2 and rows[0].question == "Who won\r\nthe first?"
    assert rows[1].line == 4  # the quoted field took lines 2 and 3
    assert rows[1].question == "Who won #1?"
    assert rows[15].line == 18 and rows[15].question == "Multi\nline\nquestion"
    assert rows[15].answer == "  B  " and rows[15].id == "sports-q0001-p00"
    assert rows[16].line == 21
    physical = path.read_text(encoding="utf-8").splitlines()
    assert "Who lost #16?" in physical[rows[16].line - 1]


def test_read_public_csv_math_rows_are_groups_of_one(tmp_path: Path) -> None:
    path = _write(tmp_path / "m.csv", "questions,answer,type\nq1,1,numeric\nq2,2.5,numeric\n")
    rows = read_public_csv(path, "math")
    assert [(r.id, r.answer, r.line) for r in rows] == [
        ("math-q0000-p00", "1", 2),
        ("math-q0001-p00", "2.5", 3),
    ]


def test_read_public_csv_types_are_normalised_and_shared(tmp_path: Path) -> None:
    path = _write(tmp_path / "m.csv", "questions,answer,type\nq1,1,numeric\nq2,2, Numeric \n")
    rows = read_public_csv(path, "math")
    assert [r.type for r in rows] == ["numeric", "numeric"]
    assert rows[0].type is rows[1].type  # one str object per type, not one per row


def test_read_public_csv_block_validation(tmp_path: Path) -> None:
    text = "questions,answer,type\n" + _block("q", "A") + _block("r", "B", n=14) + "r #14,C,name\n"
    text += "s,S,name\n"  # 31 rows: not a multiple of 15
    path = _write(tmp_path / "blocks.csv", text)
    with pytest.raises(DatasetError) as info:
        read_public_csv(path, "nobel")
    message = str(info.value)
    assert message.startswith(f"{path}: 2 problems:\n")
    assert f"  - {path}:31: answer 'C' differs from 'B' at line 17" in message
    assert f"  - {path}:32: 31 rows is not a multiple of 15" in message
    assert len(info.value.problems) == 2


def test_read_public_csv_reports_every_problem(tmp_path: Path) -> None:
    text = "questions,answer,type\n" + _block("q", "A", n=15)
    lines = text.splitlines(keepends=True)
    lines[3] = "q #2,A,person\n"  # unknown type, line 4
    lines[6] = "   ,A,name\n"  # empty question, line 7
    lines[9] = "q #8,A\n"  # missing column, line 10
    path = _write(tmp_path / "bad.csv", "".join(lines))
    with pytest.raises(DatasetError) as info:
        read_public_csv(path, "sports")
    message = str(info.value)
    assert f"{path}:4: unknown type 'person' (expected one of name, numeric, date, rank, city)" in message
    assert f"{path}:7: empty question" in message
    assert f"{path}:10: 2 fields, the header has 3" in message
    assert len(info.value.problems) == 3


def test_read_public_csv_bad_header(tmp_path: Path) -> None:
    path = _write(tmp_path / "h.csv", "question_text,answer,kind\nq,a,name\n")
    with pytest.raises(DatasetError, match=r"h\.csv:1: no 'question' .*no 'type' column"):
        read_public_csv(path, "sports")
    with pytest.raises(DatasetError, match="empty file"):
        read_public_csv(_write(tmp_path / "e.csv", ""), "sports")
    with pytest.raises(DatasetError, match="no rows after the header"):
        read_public_csv(_write(tmp_path / "only.csv", "questions,answer,type\n"), "sports")


# ------------------------------------------------------------------------------------------
# The real public split (skipped without it)
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def public_rows(public_dir: Path) -> list[Row]:
    return load_public(data_dir=public_dir)


def test_public_counts(public_rows: list[Row]) -> None:
    assert len(public_rows) == 70793  # sum of the per-domain counts
    _check_counts(public_rows, EXPECTED)


def test_public_groups_are_blocks_of_15(public_rows: list[Row]) -> None:
    _check_blocks_of_15(public_rows)


def test_public_ids_unique_and_stable(public_rows: list[Row], public_dir: Path) -> None:
    ids = [r.id for r in public_rows]
    assert len(set(ids)) == len(ids)
    by_id = {r.id: r for r in public_rows}
    nobel = by_id["nobel-q0042-p03"]
    assert nobel.question.startswith("Who claimed the Nobel Prize for Physics in the year 1908?")
    assert nobel.answer == "Gabriel Lippmann"
    assert nobel.group_key == "nobel-q0042"
    assert by_id["sports-q0000-p00"].question == (
        "Which team won the 1930 FIFA World Cup?(Give me the name only)"  # leading space stripped
    )
    assert by_id["math-q14743-p00"].line == 14745
    # A second load gives equal rows with equal ids.
    again = load_public(["nobel"], data_dir=public_dir)
    assert [r.id for r in again] == [r.id for r in public_rows if r.domain == "nobel"]
    assert again == [r for r in public_rows if r.domain == "nobel"]


def test_public_answers_are_raw(public_rows: list[Row]) -> None:
    by_domain = _by_domain(public_rows)
    assert sum(r.answer == "" for r in by_domain["nobel"]) == 1080
    band = [r for r in by_domain["qs_ranking"] if "269=" in r.answer]
    assert {r.answer for r in band} == {"  269=  "}
    assert {r.group_key for r in band} == {"qs_ranking-q0203"}
    assert by_domain["qs_ranking"][0].answer == "  1  "
    assert by_domain["census"][0].answer == "1,351,921"
    assert by_domain["world_org"][0].answer == "11/19/1946"
    assert any(r.answer == "Julianne Moore " for r in by_domain["entertainment"])
    # SCORING.md says 1,702 decimals; the pinned file has 1,701 answers with a '.', all of the
    # form digits.digits (plus one '½').
    math = by_domain["math"]
    dotted = [r.answer for r in math if "." in r.answer]
    assert len(dotted) == 1701
    assert all(re.fullmatch(r"\d+\.\d+", a) for a in dotted)
    assert [r.answer for r in math if not re.fullmatch(r"[\d.,]+", r.answer)] == ["½"]


def test_public_line_points_at_the_physical_line(public_rows: list[Row], public_dir: Path) -> None:
    _check_physical_lines(public_rows, public_dir)


def test_a_cached_public_load_parses_nothing_again(public_rows: list[Row], public_dir: Path) -> None:
    rows = load_public(data_dir=public_dir)
    again = load_public(data_dir=public_dir)
    assert len(again) == len(rows) == len(public_rows)
    assert all(a is b for a, b in zip(again, rows))  # the rows parsed once, not read again


def test_load_public_domain_selection(public_rows: list[Row], public_dir: Path) -> None:
    rows = load_public(["math,sports"], data_dir=public_dir)
    assert list(dict.fromkeys(r.domain for r in rows)) == ["sports", "math"]
    assert len(rows) == 1305 + 15218


def test_every_public_row_loads(public_dir: Path) -> None:
    # Golds are checked against their type at load (issue 8): all 70,793 public rows pass when
    # the split is read from scratch (digests, parsing, gold checks).  How long that takes is
    # bench/'s business (bench/collect_speed.py loads the split).
    from defan_pytest.dataset import clear_caches

    clear_caches()
    rows = load_public(data_dir=public_dir)
    assert len(rows) == 70793
