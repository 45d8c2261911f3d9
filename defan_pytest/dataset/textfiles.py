"""Reading helpers shared by the public reader and the user-set readers: a file's bytes (through
the one reader, :mod:`defan_pytest.dataset.reader`), whole-file UTF-8 decoding that names the bad
line, and CSV records that know the physical line they start on."""
from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from defan_pytest.dataset import reader
from defan_pytest.dataset.domains import DatasetError

__all__ = ["CsvReadError", "csv_records", "decode", "header_index", "read_input", "read_text", "required_columns"]


def read_input(path: Path, source: str) -> bytes:
    """The bytes of a data file by the one reader's rules (:mod:`defan_pytest.dataset.reader`: a
    regular file, capped in size); a :class:`DatasetError` naming ``source`` otherwise."""
    try:
        return reader.read_bytes(path, source)
    except reader.InputError as exc:
        raise DatasetError(str(exc)) from None


def decode(path: Path, source: str) -> str:
    """The whole file as text (utf-8, a BOM dropped), newlines left as they are.

    Decoding it all at once, rather than through a text-mode file that decodes in chunks, lets
    an encoding error name its line.
    """
    raw = read_input(path, source)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DatasetError(f"{source}:{line}: not valid UTF-8 ({exc.reason})") from exc


def read_text(path: Path, source: str) -> str:
    """The file as text, newlines normalised to ``\n`` as universal newlines would."""
    return decode(path, source).replace("\r\n", "\n").replace("\r", "\n")


def csv_records(f: Iterable[str]) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(first physical line, fields)`` for each CSV record, skipping blank lines.

    ``reader.line_num`` counts source lines read so far, so after a record it is the record's
    *last* line; the record starts one line after where the previous one ended (a quoted field
    may span several lines).
    """
    reader = csv.reader(f)
    previous_end = 0
    try:
        for fields in reader:
            start = previous_end + 1
            previous_end = reader.line_num
            if fields:
                yield start, fields
    except csv.Error as exc:
        raise CsvReadError(max(reader.line_num, previous_end + 1), exc) from exc


class CsvReadError(Exception):
    """A CSV file could not be parsed at ``line`` (e.g. a field over the csv size limit)."""

    def __init__(self, line: int, cause: Exception) -> None:
        super().__init__(f"{line}: cannot parse: {cause}")
        self.line = line
        self.cause = cause


def header_index(header: Sequence[str]) -> dict[str, int]:
    """Map lower-cased, stripped column names to their position (first occurrence wins)."""
    index: dict[str, int] = {}
    for i, name in enumerate(header):
        index.setdefault(name.strip().lower(), i)
    return index


def required_columns(index: Mapping[str, int]) -> tuple[str | None, str]:
    """Check a header for the question (``question`` or ``questions``), answer and type
    columns. Returns (question column name, "") or (None, what is wrong)."""
    problems: list[str] = []
    has = [c for c in ("question", "questions") if c in index]
    if len(has) == 2:
        problems.append("both 'question' and 'questions' columns; keep one")
    elif not has:
        problems.append("no 'question' (or 'questions') column")
    problems.extend(f"no {c!r} column" for c in ("answer", "type") if c not in index)
    if problems:
        return None, "; ".join(problems)
    return has[0], ""
