"""The readers of a user's file, one per format (CSV, JSON, JSONL): each yields the file's
records, with where each one is, for the one validator (:mod:`.validate`) to check.

Problems of the file itself (a missing header column, invalid JSON, a CSV file where JSONL is
expected) are appended to the caller's ``problems``; a JSON number keeps its literal text
(:class:`JsonFloat`).
"""
from __future__ import annotations

import codecs
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from defan_pytest.dataset import reader
from defan_pytest.dataset.textfiles import (
    CsvReadError, csv_records, decode, header_index, read_input, read_text, required_columns,
)
from defan_pytest.errors import type_name

__all__ = ["JsonFloat", "Located", "is_text", "read_csv_records", "read_json_records", "read_jsonl_records"]

#: What the readers yield per record: (where, ref, line, record), where ``where`` prefixes
#: messages ("file:12" or "file: item 3 (line 12)") and ``ref`` is the short form ("line 12").
Located = tuple[str, str, int, Any]


def read_csv_records(path: Path, source: str, problems: list[str]) -> Iterator[Located]:
    """Yield each record of a user CSV; header problems stop the file."""
    with io.StringIO(decode(path, source), newline="") as f:
        records = csv_records(f)
        try:
            header_line, header = next(records)
        except StopIteration:
            problems.append(f"{source}: empty file, expected a header row")
            return
        except CsvReadError as exc:
            problems.append(f"{source}:{exc}")
            return
        index = header_index(header)
        qcol, what = required_columns(index)
        if qcol is None:
            problems.append(f"{source}:{header_line}: {what} (header: {', '.join(header)})")
            return
        wanted = {"question": index[qcol], "answer": index["answer"], "type": index["type"]}
        for optional in ("domain", "group"):
            if optional in index:
                wanted[optional] = index[optional]
        try:
            for line, fields in records:
                where = f"{source}:{line}"
                if len(fields) > len(header):
                    problems.append(f"{where}: {len(fields)} fields, the header has {len(header)}")
                    continue
                short = [name for name, i in wanted.items() if i >= len(fields)]
                if short:
                    problems.append(
                        f"{where}: missing column{'s' if len(short) > 1 else ''} "
                        f"{', '.join(short)} ({len(fields)} fields, the header has {len(header)})"
                    )
                    continue
                record = {name: fields[i] for name, i in wanted.items()}
                yield where, f"line {line}", line, record
        except CsvReadError as exc:
            problems.append(f"{source}:{exc}")


_JSON_WS = " \t\n\r"


class JsonFloat(str):
    """The literal text of a JSON float (``json.loads(parse_float=JsonFloat)``).

    A gold written as the number ``0.50`` keeps its two decimals, which the numeric tolerance
    depends on (``float`` would make it ``"0.5"``); being a ``str`` subclass, it is told apart
    from real strings wherever only strings are allowed.
    """

    # errors.type_name reports a JSON number, not a string, for messages.
    is_json_number = True


def is_text(value: object) -> bool:
    return isinstance(value, str) and not isinstance(value, JsonFloat)


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in _JSON_WS:
        i += 1
    return i


def _json_array_lines(text: str) -> list[int] | None:
    """1-based line where each item of the top-level rows array starts.

    ``json.loads`` gives no positions, so the top level (``[...]`` or ``{"rows": [...]}``) is
    walked again with ``raw_decode``. Only called on text that already parsed; returns ``None``
    if the walk fails anyway (then lines fall back to the array's position).
    """
    decoder = json.JSONDecoder()
    try:
        i = _skip_ws(text, 0)
        start: int | None = None
        if text[i] == "[":
            start = i
        elif text[i] == "{":
            i = _skip_ws(text, i + 1)
            while text[i] != "}":
                key, i = decoder.raw_decode(text, i)
                i = _skip_ws(text, i)
                i = _skip_ws(text, i + 1)  # past ':'
                if key == "rows" and text[i] == "[":
                    start = i  # the last "rows" wins, as in json.loads
                _, i = decoder.raw_decode(text, i)
                i = _skip_ws(text, i)
                if text[i] == ",":
                    i = _skip_ws(text, i + 1)
        if start is None:
            return None
        offsets: list[int] = []
        i = _skip_ws(text, start + 1)
        while text[i] != "]":
            offsets.append(i)
            _, i = decoder.raw_decode(text, i)
            i = _skip_ws(text, i)
            if text[i] == ",":
                i = _skip_ws(text, i + 1)
    except (ValueError, IndexError, RecursionError):
        return None
    lines: list[int] = []
    line, pos = 1, 0
    for off in offsets:
        line += text.count("\n", pos, off)
        pos = off
        lines.append(line)
    return lines


def read_json_records(path: Path, source: str, problems: list[str]) -> Iterator[Located]:
    text = read_text(path, source)
    try:
        data = _loads(text, source)
    except reader.InputError as exc:
        problems.append(f"{source}:{exc.line or 1}: {exc.reason}")
        return
    if isinstance(data, dict):
        if "rows" not in data:
            problems.append(f"{source}:1: a JSON object must hold the rows under a 'rows' key")
            return
        data = data["rows"]
    if not isinstance(data, list):
        problems.append(
            f"{source}:1: expected a JSON list of rows or {{\"rows\": [...]}}, "
            f"found {type_name(data)}"
        )
        return
    lines = _json_array_lines(text) or []
    for n, item in enumerate(data):
        line = lines[n] if n < len(lines) else n + 1
        yield f"{source}: item {n} (line {line})", f"item {n}", line, item


def _loads(text: str, source: str) -> Any:
    """The one reader's JSON (:func:`defan_pytest.dataset.reader.parse_json`: nesting bounded,
    so never a ``RecursionError``) with floats kept as written; ``NaN`` and ``Infinity`` are
    kept for the validator, which names the field that holds one.  Raises
    :class:`~defan_pytest.dataset.reader.InputError` for anything it cannot read."""
    return reader.parse_json(text, source, parse_float=JsonFloat, allow_nan=True)


def _not_jsonl(first: str, source: str, line: int, reads: str) -> str | None:
    """One problem for a file that is plainly not JSONL, judged by its first line (which did not
    parse), instead of one problem per line: a CSV file (9,796 lines) or a JSON array."""
    head = first.lstrip()
    if head.startswith("{"):
        return None  # a broken JSONL line: reported as one, with the others
    if head.startswith("["):
        return f"{source}:{line}: this looks like a JSON array; {reads} (one JSON object per line)"
    if any(sep in head for sep in (",", "\t", ";")):
        return f"{source}:{line}: this looks like a CSV file; {reads} (one JSON object per line)"
    return None


def read_jsonl_records(
    path: Path, source: str, problems: list[str], reads: str = "a .jsonl file holds JSONL"
) -> Iterator[Located]:
    """Yield each object of a JSONL file; blank lines are skipped, a BOM is dropped.

    A file whose first line does not parse and looks like CSV or a JSON array is one problem
    (``reads`` says what was expected), not one per line."""
    data = read_input(path, source)
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    # Newlines as universal newlines would see them (a CR byte is never part of a UTF-8
    # sequence); split on "\n" only, not splitlines(): JSON strings may legally hold U+2028
    # and friends, which splitlines() would treat as line ends. Each line is decoded alone so
    # that every undecodable line is reported, and the others still checked.
    data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    first = True
    for line, chunk in enumerate(data.split(b"\n"), start=1):
        try:
            raw = chunk.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(f"{source}:{line}: not valid UTF-8 ({exc.reason})")
            first = False
            continue
        stripped = raw.strip()
        if not stripped:
            continue
        try:
            item = _loads(stripped, source)
        except reader.InputError as exc:
            hint = _not_jsonl(stripped, source, line, reads) if first else None
            if hint is not None:
                problems.append(hint)
                return
            problems.append(f"{source}:{line}: {exc.reason}")
            first = False
            continue
        first = False
        yield f"{source}:{line}", f"line {line}", line, item
