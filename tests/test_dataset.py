"""Tests for defan_pytest.dataset: registry, public split, downloader, user sets."""
from __future__ import annotations

import collections
import hashlib
import csv
import dataclasses
import json
import re
from pathlib import Path

import pytest

from dataset_httpserver import LoopbackFileServer, closed_port_url
from defan_pytest import dataset
from defan_pytest.dataset import (
    DOMAINS,
    DatasetError,
    Row,
    get_domain,
    load_dataset,
    load_public,
    load_user_set,
    parse_domains,
    read_public_csv,
    resolve_public_dir,
)

# The public files are read in place from the shared folder next to the project; never copied
# into the repository.
PUBLIC_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "defan-public"

ALL_IDS = [
    "sports",
    "census",
    "nobel",
    "entertainment",
    "world_org",
    "qs_ranking",
    "conference_venue",
    "math",
]

EXPECTED = {  # domain: (rows, groups, answer types)
    "sports": (1305, 87, {"name", "numeric"}),
    "census": (7905, 527, {"numeric"}),
    "nobel": (9795, 653, {"name"}),
    "entertainment": (11415, 761, {"name", "date"}),
    "world_org": (2745, 183, {"date", "numeric"}),
    "qs_ranking": (21495, 1433, {"rank"}),
    "conference_venue": (915, 61, {"city"}),
    "math": (15218, 15218, {"numeric"}),
}


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test sees the developer's DEFAN_* settings or writes to the real user cache."""
    for name in ("DEFAN_DATA_DIR", "DEFAN_CACHE_DIR", "DEFAN_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
    # Loopback requests must never go through a proxy configured on the machine.
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def public_rows() -> list[Row]:
    return load_public(data_dir=PUBLIC_DIR)


def _by_domain(rows: list[Row]) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = collections.defaultdict(list)
    for r in rows:
        out[r.domain].append(r)
    return out


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8", newline="")
    return path


# ------------------------------------------------------------------------------------------
# Registry
# ------------------------------------------------------------------------------------------


def test_registry_order_and_fields() -> None:
    assert list(DOMAINS) == ALL_IDS
    assert [d.file_index for d in DOMAINS.values()] == list(range(1, 9))
    assert [d.paraphrased for d in DOMAINS.values()] == [True] * 7 + [False]
    assert DOMAINS["nobel"].filename == "QA_domain_3_public.csv"
    assert DOMAINS["sports"].title == "FIFA World Cup finals"
    assert DOMAINS["world_org"].title == "UN and OIC membership"
    assert set(dataset.PUBLIC_SHA256) == {d.filename for d in DOMAINS.values()}
    with pytest.raises(dataclasses.FrozenInstanceError):
        DOMAINS["math"].paraphrased = True  # type: ignore[misc]
    with pytest.raises(TypeError):
        DOMAINS["extra"] = DOMAINS["math"]  # type: ignore[index]


def test_get_domain() -> None:
    assert get_domain("nobel") is DOMAINS["nobel"]
    assert get_domain(" QS_Ranking ") is DOMAINS["qs_ranking"]
    assert get_domain(DOMAINS["math"]) is DOMAINS["math"]
    with pytest.raises(DatasetError) as info:
        get_domain("oscars")
    message = str(info.value)
    assert "'oscars'" in message
    for domain_id in ALL_IDS:
        assert domain_id in message


def test_parse_domains_repeatable_comma_separated_registry_order() -> None:
    got = parse_domains(["math,sports", " nobel ", "sports"])
    assert [d.id for d in got] == ["sports", "nobel", "math"]
    assert [d.id for d in parse_domains("census , world_org")] == ["census", "world_org"]
    assert parse_domains(None) == tuple(DOMAINS.values())
    assert parse_domains([]) == tuple(DOMAINS.values())
    with pytest.raises(DatasetError) as info:
        parse_domains(["sports,nobles", "chess"])
    message = str(info.value)
    assert "'nobles'" in message and "'chess'" in message
    assert ", ".join(ALL_IDS) in message


# ------------------------------------------------------------------------------------------
# Row
# ------------------------------------------------------------------------------------------


def test_row_contract() -> None:
    row = Row("nobel", 42, 3, "q?", " a ", "name", "f.csv", 7)
    assert row.id == "nobel-q0042-p03"
    assert row.group_key == "nobel-q0042"
    assert not hasattr(row, "__dict__")  # slots: small rows
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.answer = "b"  # type: ignore[misc]
    assert [f.name for f in dataclasses.fields(Row)] == [
        "domain", "group", "para", "question", "answer", "type", "source", "line",
    ]


# ------------------------------------------------------------------------------------------
# The public split
# ------------------------------------------------------------------------------------------


def test_public_counts(public_rows: list[Row]) -> None:
    assert len(public_rows) == 70793  # sum of the per-domain counts below
    by_domain = _by_domain(public_rows)
    assert list(by_domain) == ALL_IDS  # registry order
    for domain_id, (n_rows, n_groups, types) in EXPECTED.items():
        rows = by_domain[domain_id]
        assert len(rows) == n_rows, domain_id
        assert len({r.group for r in rows}) == n_groups, domain_id
        assert {r.type for r in rows} == types, domain_id


def test_public_groups_are_blocks_of_15(public_rows: list[Row]) -> None:
    for domain_id, rows in _by_domain(public_rows).items():
        if domain_id == "math":
            assert all(r.para == 0 for r in rows)
            assert [r.group for r in rows] == list(range(len(rows)))
            continue
        for i, r in enumerate(rows):
            assert (r.group, r.para) == divmod(i, 15)
        groups: dict[int, list[Row]] = collections.defaultdict(list)
        for r in rows:
            groups[r.group].append(r)
        for members in groups.values():
            assert len(members) == 15
            assert len({(r.answer, r.type) for r in members}) == 1


def test_public_ids_unique_and_stable(public_rows: list[Row]) -> None:
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
    again = load_public(["nobel"], data_dir=PUBLIC_DIR)
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


def test_public_line_points_at_the_physical_line(public_rows: list[Row]) -> None:
    # No public field spans lines, so every row's line holds its question verbatim; the
    # multi-line case is covered with synthetic files below.
    for domain in DOMAINS.values():
        path = PUBLIC_DIR / domain.filename
        lines = path.read_text(encoding="utf-8").split("\n")
        rows = [r for r in public_rows if r.domain == domain.id]
        assert {r.source for r in rows} == {str(path)}
        assert [r.line for r in rows] == list(range(2, len(rows) + 2))
        for r in rows:
            # Parse the one physical line alone: quotes ("Tor Vergata") are doubled in the file.
            fields = next(csv.reader([lines[r.line - 1]]))
            assert fields[-3].strip() == r.question and fields[-2] == r.answer, (domain.id, r.line)


def test_public_load_is_fast_when_cached(public_rows: list[Row]) -> None:
    import time

    start = time.perf_counter()
    rows = load_public(data_dir=PUBLIC_DIR)
    assert time.perf_counter() - start < 0.5
    assert len(rows) == len(public_rows)


def test_load_public_domain_selection(public_rows: list[Row]) -> None:
    rows = load_public(["math,sports"], data_dir=PUBLIC_DIR)
    assert [d for d in dict.fromkeys(r.domain for r in rows)] == ["sports", "math"]
    assert len(rows) == 1305 + 15218


# ------------------------------------------------------------------------------------------
# Public-format parser (no digest) on synthetic files
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


def test_read_public_csv_block_validation(tmp_path: Path) -> None:
    text = "questions,answer,type\n" + _block("q", "A") + _block("r", "B", n=14) + "r #14,C,name\n"
    text += "s,S,name\n"  # 31 rows: not a multiple of 15
    path = _write(tmp_path / "blocks.csv", text)
    with pytest.raises(DatasetError) as info:
        read_public_csv(path, "nobel")
    message = str(info.value)
    assert f"{path}:31: answer 'C' differs from 'B' at line 17" in message
    assert f"{path}:32: 31 rows is not a multiple of 15" in message
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
    assert f"{path}:4: unknown type 'person'" in message
    assert f"{path}:7: empty question" in message
    assert f"{path}:10: 2 fields, the header has 3" in message
    assert len(info.value.problems) == 3


def test_read_public_csv_bad_header(tmp_path: Path) -> None:
    path = _write(tmp_path / "h.csv", "question_text,answer,kind\nq,a,name\n")
    with pytest.raises(DatasetError, match=r"h\.csv:1: no 'question' .*no 'type' column"):
        read_public_csv(path, "sports")


# ------------------------------------------------------------------------------------------
# Local folders: data_dir, DEFAN_DATA_DIR, digests
# ------------------------------------------------------------------------------------------


def test_data_dir_argument_beats_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DEFAN_DATA_DIR", str(tmp_path / "nowhere"))
    assert resolve_public_dir(data_dir=PUBLIC_DIR, domains="sports") == PUBLIC_DIR


def test_defan_data_dir_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DEFAN_DATA_DIR", str(PUBLIC_DIR))
    # The env folder wins over the cache: nothing may be downloaded from this dead URL.
    rows = load_public("conference_venue", cache_dir=tmp_path / "cache", base_url=closed_port_url())
    assert len(rows) == 915
    assert rows[0].source == str(PUBLIC_DIR / "QA_domain_7_public.csv")
    assert not (tmp_path / "cache").exists()


def test_local_digest_mismatch_is_refused(tmp_path: Path) -> None:
    name = "QA_domain_7_public.csv"
    data = bytearray((PUBLIC_DIR / name).read_bytes())
    data[200] ^= 0x01
    (tmp_path / name).write_bytes(bytes(data))
    with pytest.raises(DatasetError) as info:
        load_public("conference_venue", data_dir=tmp_path)
    message = str(info.value)
    assert name in message
    assert dataset.PUBLIC_SHA256[name] in message
    assert hashlib.sha256(bytes(data)).hexdigest() in message
    assert "--defan-dataset" in message


def test_local_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"QA_domain_3_public\.csv not found"):
        load_public("nobel", data_dir=tmp_path)
    with pytest.raises(DatasetError, match="is not a folder"):
        load_public("nobel", data_dir=tmp_path / "missing")


def test_digest_is_computed_once_per_file(monkeypatch: pytest.MonkeyPatch) -> None:
    dataset.clear_caches()
    opened: list[str] = []
    real_sha256 = dataset.hashlib.sha256

    def counting_sha256(*args: object) -> object:
        opened.append("x")
        return real_sha256(*args)

    monkeypatch.setattr(dataset.hashlib, "sha256", counting_sha256)
    for _ in range(3):
        resolve_public_dir(data_dir=PUBLIC_DIR, domains="sports,math")
        load_public("sports,math", data_dir=PUBLIC_DIR)
    assert len(opened) == 2


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert dataset.default_cache_dir() == tmp_path / "defan-pytest" / dataset.PUBLIC_COMMIT
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert dataset.default_cache_dir() == Path.home() / ".cache" / "defan-pytest" / dataset.PUBLIC_COMMIT


# ------------------------------------------------------------------------------------------
# Downloader against a real loopback HTTP server
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def file_server():
    routes: dict[str, bytes] = {}
    for domain in DOMAINS.values():
        data = (PUBLIC_DIR / domain.filename).read_bytes()
        routes[f"/good/{domain.filename}"] = data
        bad = bytearray(data)
        bad[len(bad) // 2] ^= 0x20  # one flipped bit
        routes[f"/bad/{domain.filename}"] = bytes(bad)
    hang = frozenset({f"/hang/{DOMAINS['sports'].filename}"})
    with LoopbackFileServer(routes, hang=hang) as server:
        yield server


def _new_requests(server: LoopbackFileServer, before: int) -> list[str]:
    return server.requests[before:]


def test_download_then_cache_hit(file_server: LoopbackFileServer, tmp_path: Path, public_rows: list[Row]) -> None:
    cache = tmp_path / "cache"
    before = len(file_server.requests)
    rows = load_public(cache_dir=cache, base_url=f"{file_server.url}/good")
    assert sorted(_new_requests(file_server, before)) == sorted(
        f"/good/{d.filename}" for d in DOMAINS.values()
    )
    assert len(rows) == 70793
    assert [(r.id, r.question, r.answer, r.type, r.line) for r in rows] == [
        (r.id, r.question, r.answer, r.type, r.line) for r in public_rows
    ]
    assert sorted(p.name for p in cache.iterdir()) == sorted(d.filename for d in DOMAINS.values())

    # Second use, even with caches of this process forgotten: the files are there, no request.
    dataset.clear_caches()
    before = len(file_server.requests)
    again = load_public(cache_dir=cache, base_url=f"{file_server.url}/good")
    assert _new_requests(file_server, before) == []
    assert len(again) == 70793
    # The server being gone does not matter once the files are cached.
    assert len(load_public("math", cache_dir=cache, base_url=closed_port_url())) == 15218


def test_download_only_requested_domains(
    file_server: LoopbackFileServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Cache folder and base URL from the environment this time.
    monkeypatch.setenv("DEFAN_CACHE_DIR", str(tmp_path / "envcache"))
    monkeypatch.setenv("DEFAN_BASE_URL", f"{file_server.url}/good/")
    before = len(file_server.requests)
    rows = load_dataset("public", ["conference_venue,sports"])
    assert sorted(_new_requests(file_server, before)) == [
        "/good/QA_domain_1_public.csv",
        "/good/QA_domain_7_public.csv",
    ]
    assert len(rows) == 1305 + 915
    assert sorted(p.name for p in (tmp_path / "envcache").iterdir()) == [
        "QA_domain_1_public.csv",
        "QA_domain_7_public.csv",
    ]


def test_default_cache_location_is_used(file_server: LoopbackFileServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = resolve_public_dir(base_url=f"{file_server.url}/good", domains="conference_venue")
    assert folder == tmp_path / "defan-pytest" / dataset.PUBLIC_COMMIT
    assert [p.name for p in folder.iterdir()] == ["QA_domain_7_public.csv"]


def test_corrupted_download_is_refused_and_not_kept(file_server: LoopbackFileServer, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    name = "QA_domain_7_public.csv"
    with pytest.raises(DatasetError) as info:
        load_public("conference_venue", cache_dir=cache, base_url=f"{file_server.url}/bad")
    message = str(info.value)
    assert name in message
    assert dataset.PUBLIC_SHA256[name] in message
    bad = file_server.routes[f"/bad/{name}"]
    assert hashlib.sha256(bad).hexdigest() in message
    assert list(cache.iterdir()) == []  # no temp file, no wrong file


def test_wrong_file_in_cache_is_downloaded_again(file_server: LoopbackFileServer, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    name = "QA_domain_7_public.csv"
    (cache / name).write_bytes(b"questions,answer,type\ntruncated")
    before = len(file_server.requests)
    rows = load_public("conference_venue", cache_dir=cache, base_url=f"{file_server.url}/good")
    assert _new_requests(file_server, before) == [f"/good/{name}"]
    assert len(rows) == 915
    assert (cache / name).read_bytes() == (PUBLIC_DIR / name).read_bytes()


def test_server_down_gives_the_local_files_hint(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with pytest.raises(DatasetError) as info:
        load_public("nobel", cache_dir=cache, base_url=closed_port_url())
    message = str(info.value)
    assert "could not download QA_domain_3_public.csv" in message
    assert "DEFAN_DATA_DIR=/path/to/DefAn-public" in message
    assert "--defan-dataset" in message
    assert list(cache.iterdir()) == []


def test_http_error_and_timeout(file_server: LoopbackFileServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with pytest.raises(DatasetError, match=r"could not download QA_domain_2_public\.csv .*Not Found"):
        load_public("census", cache_dir=cache, base_url=f"{file_server.url}/missing")
    monkeypatch.setattr(dataset, "DOWNLOAD_TIMEOUT", 0.3)
    with pytest.raises(DatasetError, match=r"could not download QA_domain_1_public\.csv .*timed out"):
        load_public("sports", cache_dir=cache, base_url=f"{file_server.url}/hang")
    assert list(cache.iterdir()) == []


# ------------------------------------------------------------------------------------------
# load_dataset
# ------------------------------------------------------------------------------------------


def test_load_dataset_public_folder_and_missing(tmp_path: Path) -> None:
    rows = load_dataset(PUBLIC_DIR, "world_org")
    assert len(rows) == 2745 and rows[0].domain == "world_org"
    rows = load_dataset("public", ["sports"], data_dir=PUBLIC_DIR)
    assert len(rows) == 1305
    with pytest.raises(DatasetError, match="not found: use 'public'"):
        load_dataset(tmp_path / "nope.csv")
    with pytest.raises(DatasetError, match="valid domains: sports, census"):
        load_dataset(PUBLIC_DIR, "oscars")


def test_load_dataset_user_set_domain_filter(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "mine.csv",
        "question,answer,type,domain\nq1,a,name,alpha\nq2,2,numeric,beta\nq3,b,name,alpha\n",
    )
    assert [r.id for r in load_dataset(path, "alpha")] == ["alpha-q0000-p00", "alpha-q0001-p00"]
    assert len(load_dataset(str(path))) == 3
    with pytest.raises(DatasetError) as info:
        load_dataset(path, ["alpha,gamma"])
    assert "'gamma'" in str(info.value) and "its domains: alpha, beta" in str(info.value)


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
    path = _write(tmp_path / "many.csv", "question,answer,type\n" + "q,a,bogus\n" * 30)
    with pytest.raises(DatasetError) as info:
        load_user_set(path)
    message = str(info.value)
    assert len(info.value.problems) == 30
    assert f"{path}:21: unknown type" in message
    assert f"{path}:22: unknown type" not in message
    assert "... and 10 more" in message


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


def test_user_set_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    jsonl = tmp_path / "latin1.jsonl"
    jsonl.write_bytes(
        b'{"question": "Q", "answer": "A", "type": "name"}\n'
        b'{"question": "R\xf6ntgen?", "answer": "A", "type": "name"}\n'
    )
    with pytest.raises(DatasetError, match=rf"{re.escape(str(jsonl))}:2: not valid UTF-8"):
        load_user_set(jsonl)
    csv_path = tmp_path / "latin1.csv"
    csv_path.write_bytes(b"question,answer,type\nQ,A,name\nR\xf6ntgen?,A,name\n")
    with pytest.raises(DatasetError, match=rf"{re.escape(str(csv_path))}:3: not valid UTF-8"):
        load_user_set(csv_path)


def test_user_csv_unparseable_field_names_the_line(tmp_path: Path) -> None:
    huge = "x" * 200_000  # over the csv module's field size limit
    path = _write(tmp_path / "huge.csv", f"question,answer,type\nq,a,name\n{huge},a,name\n")
    with pytest.raises(DatasetError, match=rf"{re.escape(str(path))}:3: cannot parse: field larger"):
        load_user_set(path)
