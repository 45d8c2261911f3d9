"""The one reader of every input (defan_pytest.dataset.reader): what it refuses and how it says
so, its nesting scan against a plain count, and the readers that use it for digests (the public
split's check, the fingerprint of a model's declared inputs)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from defan_pytest.calls.fingerprint import FingerprintError, fingerprint
from defan_pytest.dataset import reader

from test_hostile_reports import fed_fifo


def _depth(text: str) -> int:
    """The nesting depth of JSON ``text``, counted one character at a time (strings skipped)."""
    depth = top = 0
    for token in re.findall(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', text, re.S):
        if token in "[{":
            depth += 1
            top = max(top, depth)
        elif token in "]}":
            depth -= 1
    return top


json_values = st.recursive(
    st.none() | st.integers() | st.text(alphabet='ab[]{}"\\,: ', max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet="[]{}\"k", max_size=3), inner,
                                                                 max_size=3),
    max_leaves=30,
)


@settings(max_examples=300, derandomize=True, deadline=None, database=None)
@given(value=json_values, limit=st.integers(0, 12))
def test_the_nesting_scan_agrees_with_a_plain_count(value: object, limit: int) -> None:
    text = json.dumps(value)
    assert reader.too_deep(text, limit) == (_depth(text) > limit)


def test_deep_nesting_is_refused_at_any_width_without_recursion() -> None:
    for text in ("[" * 100_000 + "]" * 100_000, '{"a": ' * 65 + "1" + "}" * 65,
                 "[" + ",".join(["[" * 60 + "]" * 60] * 1000 + ["[" * 64 + "]" * 64]) + "]",  # one of them
                 "[" * 65):  # not even closed: still too deep, never a RecursionError
        with pytest.raises(reader.InputError, match="nested too deeply") as info:
            reader.parse_json(text, "f.json")
        assert info.value.kind == "json"
    assert reader.parse_json("[" * 64 + "]" * 64, "f.json") is not None


@pytest.mark.parametrize("text, message, line", [
    ('{"a":\n NaN}', "NaN is not a JSON number", 2),
    ('["Infinity",\n\n -Infinity]', "-Infinity is not a JSON number", 3),
    ('{"a": 1e400}', "the number 1e400 is too large for a float", 1),
    ("[1,\n]", "Expecting value (column 1)", 2),
    ("9" * 5000, "Exceeds the limit (4300 digits)", None),
])
def test_what_json_has_not_is_refused_with_its_line(text: str, message: str, line: int | None) -> None:
    with pytest.raises(reader.InputError) as info:
        reader.parse_json(text, "r.json")
    assert message in info.value.reason and info.value.line == line
    assert str(info.value).startswith("r.json: " + (f"line {line}: " if line else "") + "invalid JSON: ")


def test_a_key_twice_is_refused_where_asked() -> None:
    assert reader.parse_json('{"rows": 1, "rows": 2}', "r.json") == {"rows": 2}
    with pytest.raises(reader.InputError, match="the key 'rows' is given twice in one object"):
        reader.parse_json('{"rows": 1, "rows": 2}', "r.json", unique_keys=True)


def test_allow_nan_keeps_them_for_a_validator() -> None:
    value = reader.parse_json('[NaN, 1.50]', "d.json", allow_nan=True, parse_float=str)
    assert value[0] != value[0] and value[1] == "1.50"


def test_only_regular_files_are_read(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    release = fed_fifo(fifo, b"[]")
    try:
        for read in (reader.read_bytes, reader.sha256_of, reader.check_file):
            with pytest.raises(reader.InputError, match="is a FIFO") as info:
                read(fifo)
            assert info.value.kind == "special"
    finally:
        release()
    with pytest.raises(reader.InputError, match="is a device, not a file"):
        reader.read_bytes("/dev/zero")
    with pytest.raises(reader.InputError, match="is a directory"):
        reader.read_bytes(tmp_path)
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    with pytest.raises(reader.InputError, match="a symbolic link loop") as info:
        reader.sha256_of(tmp_path / "a")
    assert info.value.kind == "loop"


def test_the_size_cap_holds_whatever_the_file_says(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(b"x" * 100)
    assert reader.read_bytes(path, limit=100) == b"x" * 100
    with pytest.raises(reader.InputError, match="r.json: larger than 99 bytes") as info:
        reader.read_bytes(path, limit=99)
    assert info.value.kind == "too large"
    # A /proc file says it holds 0 bytes: it is read, and capped all the same.
    assert b"Name:" in reader.read_bytes("/proc/self/status")
    with pytest.raises(reader.InputError, match="larger than 10 bytes"):
        reader.read_bytes("/proc/self/status", limit=10)


def test_a_bad_byte_names_its_line() -> None:
    with pytest.raises(reader.InputError, match=r"r.json: line 3: not valid UTF-8") as info:
        reader.decode(b"{\n\n\xff}", "r.json")
    assert info.value.kind == "encoding" and reader.decode(b"\xef\xbb\xbf[]", "r.json") == "[]"


def test_a_fifo_in_a_declared_input_folder_is_an_error_not_a_hang(tmp_path: Path) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "doc.txt").write_text("facts", encoding="utf-8")
    release = fed_fifo(tmp_path / "kb" / "pipe")
    try:
        with pytest.raises(FingerprintError, match=r"input kb/pipe: is a FIFO \(a named pipe\), not a file"):
            fingerprint(tmp_path, ["kb"], {})
    finally:
        release()
