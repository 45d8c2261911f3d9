"""A user's own set (CSV, JSON or JSONL) and a file of responses to score (JSONL).

One reader per format (:mod:`.formats`) and one record validator (:mod:`.validate`) serve both
:func:`load_user_set` and :func:`load_responses` (``defan score``), so a record means the same
thing wherever it is read: ``question`` (or ``questions``), ``answer`` (a string, or a JSON
number kept as written), ``type``, and optionally ``domain`` and ``group``; a response record
adds ``response`` and ``error``. Every problem of a file is collected and raised as one
:class:`DatasetError`.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from defan_pytest.dataset import reader
from defan_pytest.dataset.checks import check_blocks, type_table
from defan_pytest.dataset.domains import GROUP_SIZE, DatasetError, Row, StrPath, raise_problems
from defan_pytest.dataset.formats import Located, read_csv_records, read_json_records, read_jsonl_records
from defan_pytest.dataset.validate import Record, validate_record

__all__ = ["Response", "load_responses", "load_user_set"]

#: A reader of one format: (path, source, problems) -> the file's located records.
_Reader = Callable[[Path, str, list[str]], Iterator[Located]]
_READERS: dict[str, _Reader] = {".csv": read_csv_records, ".json": read_json_records, ".jsonl": read_jsonl_records}


@dataclass(frozen=True, slots=True)
class Response:
    """One validated line of a responses file (see :func:`load_responses`).

    ``group`` is the line's group label (``None`` without one; an integer label is its text),
    ``answer`` the raw gold, ``response`` ``None`` only for a failed call, and ``error`` the
    failed call's message (``None`` when the call did not fail).
    """

    line: int
    domain: str
    group: str | None
    question: str
    answer: str
    type: str
    response: str | None
    error: str | None
    #: The line's prompt id as the plugin names it (``None``: not given; the group is then its).
    id: str | None = None
    #: The provider's finish reason (``length``: cut by the token limit; ``None``: unknown).
    finish_reason: str | None = None


def _locator(members: Sequence[Record]) -> Callable[[int], tuple[str, str]]:
    """Message prefix and short reference of ``members[i]``, for :func:`check_blocks`."""
    return lambda i: (members[i].where, members[i].ref)


def _check_file(p: Path, source: str) -> None:
    """Raise a DatasetError unless ``p`` is a regular file that can be read (a folder, a typo, a
    symbolic link loop, a FIFO or a device is named as such: :func:`reader.check_file`)."""
    try:
        reader.check_file(p, source)
    except reader.InputError as exc:
        raise DatasetError(str(exc)) from None


def load_user_set(
    path: StrPath,
    group_by_blocks: bool = False,
    default_domain: str | None = None,
    notes: list[str] | None = None,
) -> list[Row]:
    """Load a user's own set from a ``.csv``, ``.json`` or ``.jsonl`` file, in file order.

    Columns / keys: ``question`` (or ``questions``), ``answer``, ``type``; optional ``domain``
    and ``group``. Extra columns are ignored.

    * Without a domain (missing or empty), a row belongs to ``default_domain``, else the file
      stem.
    * With ``group`` labels (strings or integers; every row must have one), rows group by
      (domain, label); groups are numbered per domain in first-seen order and paraphrases in
      file order.
    * Without labels each row is its own group, unless ``group_by_blocks`` is true: then every
      :data:`GROUP_SIZE` consecutive rows of a domain are one group, as in the public split
      (one answer and type per block, a whole number of blocks).

    Answers are kept raw and may be empty strings, but must be present; a JSON number answer
    keeps its literal text (``0.50`` stays ``"0.50"``). JSON problems name the 0-based item
    index (``item N``) and its line. A gold of a value type (``numeric``, ``date``, ``rank``) must hold a value of its type.
    Invalid characters (lone surrogates) are replaced by U+FFFD, each time with a line in
    ``notes`` (when given). Raises :class:`DatasetError` listing every problem in the file.
    """
    p = Path(path)
    source = os.fspath(path)
    _check_file(p, source)
    suffix = p.suffix.lower()
    reader = _READERS.get(suffix)
    if reader is None:
        raise DatasetError(
            f"{source}: unsupported file type {suffix or '(none)'!r}; use .csv, .json or .jsonl"
        )
    fallback = (default_domain or "").strip() or p.stem
    problems: list[str] = []
    types = type_table()
    items: list[Record] = []
    for where, ref, line, record in reader(p, source, problems):
        item = validate_record(where, ref, line, record, fallback, problems, types, notes=notes)
        if item is not None:
            items.append(item)
    if not items and not problems:
        problems.append(f"{source}: no rows")
    labelled = [it for it in items if it.group is not None]
    problems.extend(_grouping_problems(items, labelled, group_by_blocks))
    raise_problems(source, problems)
    if labelled:
        return _rows_by_label(items, source)
    return _rows_by_position(items, source, group_by_blocks)


def _grouping_problems(items: Sequence[Record], labelled: Sequence[Record], group_by_blocks: bool) -> list[str]:
    """What keeps ``items`` from making groups: some rows with a label and some without, or
    (with ``group_by_blocks`` and no labels) a domain that is not whole paraphrase blocks."""
    problems: list[str] = []
    if labelled and len(labelled) != len(items):
        problems.extend(
            f"{it.where}: missing 'group' (other rows of the file have one)"
            for it in items
            if it.group is None
        )
    if group_by_blocks and not labelled:
        by_domain: dict[str, list[Record]] = {}
        for it in items:
            by_domain.setdefault(it.domain, []).append(it)
        for domain, members in by_domain.items():
            label = f"domain {domain!r}" if len(by_domain) > 1 else ""
            problems.extend(check_blocks([(it.answer, it.type) for it in members], _locator(members), label))
    return problems


def _rows_by_label(items: Sequence[Record], source: str) -> list[Row]:
    """Rows grouped by (domain, label): groups numbered per domain in first-seen order,
    paraphrases in file order."""
    rows: list[Row] = []
    group_ids: dict[tuple[str, str], int] = {}
    next_group: dict[str, int] = {}
    para_count: dict[tuple[str, str], int] = {}
    for it in items:
        key = (it.domain, it.group or "")
        if key not in group_ids:
            group_ids[key] = next_group.get(it.domain, 0)
            next_group[it.domain] = group_ids[key] + 1
        para = para_count.get(key, 0)
        para_count[key] = para + 1
        rows.append(Row(it.domain, group_ids[key], para, it.question, it.answer, it.type, source, it.line))
    return rows


def _rows_by_position(items: Sequence[Record], source: str, group_by_blocks: bool) -> list[Row]:
    """Rows grouped by position in their domain: blocks of :data:`GROUP_SIZE` with
    ``group_by_blocks``, else a group per row."""
    rows: list[Row] = []
    position: dict[str, int] = {}
    for it in items:
        n = position.get(it.domain, 0)
        position[it.domain] = n + 1
        group, para = divmod(n, GROUP_SIZE) if group_by_blocks else (n, 0)
        rows.append(Row(it.domain, group, para, it.question, it.answer, it.type, source, it.line))
    return rows


def _clash(item: Record, line: int, group_types: dict[tuple[str, str], tuple[str, int]],
           id_lines: dict[str, int]) -> str | None:
    """What makes a valid responses line clash with an earlier one (an id given twice, a group
    of two types), recording its id and group for the lines after it."""
    if item.id is not None:
        first = id_lines.setdefault(item.id, line)
        if first != line:
            return f"id {item.id!r} is given twice (first on line {first})"
    if item.group is not None:
        first_type, first_line = group_types.setdefault((item.domain, item.group), (item.type, line))
        if item.type != first_type:
            return f"type {item.type!r} differs from {first_type!r} of the same group on line {first_line}"
    return None


def load_responses(
    path: StrPath, default_domain: str | None = None, notes: list[str] | None = None
) -> list[Response]:
    """Load a file of responses to score: JSONL (whatever its suffix), one object per line.

    Each line is a user-set record (see :func:`load_user_set`: ``question``, ``answer``,
    ``type``, optional ``domain`` and ``group``), validated by the same validator, plus
    ``response`` (the model's answer, a string) and optionally ``error`` (the call failed;
    ``response`` may then be missing or null, and a blank ``error`` means no error),
    ``finish_reason`` (``length``: cut by the token limit) and ``id`` (the plugin's prompt id,
    given once in a file: the line's group is then the id's). A line
    without a domain belongs to ``default_domain``, else the file stem. Lines with one group
    label in one domain must share one answer type, since response consistency compares their
    claims under it. Blank lines are skipped and a BOM is dropped; problems name ``FILE:LINE``.
    A CSV file or a JSON array is one problem, not one per line.  Invalid characters (lone
    surrogates) are replaced by U+FFFD, each time with a line in ``notes`` (when given).

    Returns the responses in file order. Raises :class:`DatasetError` listing every problem.
    """
    p = Path(path)
    source = os.fspath(path)
    _check_file(p, source)
    fallback = (default_domain or "").strip() or p.stem
    types = type_table()
    problems: list[str] = []
    responses: list[Response] = []
    # (domain, group label) -> (type, line) of the group's first line.
    group_types: dict[tuple[str, str], tuple[str, int]] = {}
    id_lines: dict[str, int] = {}  # a line's given id -> the line that gave it first
    for where, ref, line, record in read_jsonl_records(p, source, problems, reads="defan score reads JSONL"):
        item = validate_record(where, ref, line, record, fallback, problems, types, responses=True, notes=notes)
        if item is None:
            continue
        problem = _clash(item, line, group_types, id_lines)
        if problem is not None:
            problems.append(f"{where}: {problem}")
            continue
        responses.append(Response(item.line, item.domain, item.group, item.question, item.answer, item.type,
                                  item.response, item.error, item.id, item.finish_reason))
    if not responses and not problems:
        problems.append(f"{source}: no responses (the file is empty)")
    raise_problems(source, problems)
    return responses
