"""A user's own set (CSV, JSON or JSONL) and a file of responses to score (JSONL).

One reader per format and one record validator serve both :func:`load_user_set` and
:func:`load_responses` (``defan score``), so a record means the same thing wherever it is read:
``question`` (or ``questions``), ``answer`` (a string, or a JSON number kept as written),
``type``, and optionally ``domain`` and ``group``; a response record adds ``response`` and
``error``. Every problem of a file is collected and raised as one :class:`DatasetError`.
"""
from __future__ import annotations

import codecs
import io
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from defan_pytest.dataset._text import (
    _csv_records,
    _CsvReadError,
    _decode,
    _header_index,
    _read_text,
    _required_columns,
)
from defan_pytest.dataset.domains import (
    GROUP_SIZE,
    DatasetError,
    Row,
    StrPath,
    _raise_problems,
    gold_problem,
    type_table,
)
from defan_pytest.dataset.public import _check_blocks
from defan_pytest.errors import type_name
from defan_pytest.safetext import printable, sanitize

__all__ = ["Response", "load_responses", "load_user_set"]


@dataclass(slots=True)
class _Item:
    """One validated record before grouping (``response``/``error`` only in a responses file)."""

    where: str
    ref: str
    line: int
    domain: str
    group: str | None
    question: str
    answer: str
    type: str
    response: str | None = None
    error: str | None = None


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


# What the user-set readers yield per record: (where, ref, line, record), where ``where`` prefixes
# messages ("file:12" or "file: item 3 (line 12)") and ``ref`` is the short form ("line 12").
_Located = tuple[str, str, int, Any]


def _iter_user_csv(path: Path, source: str, problems: list[str]) -> Iterator[_Located]:
    """Yield each record of a user CSV; header problems stop the file."""
    with io.StringIO(_decode(path, source), newline="") as f:
        records = _csv_records(f)
        try:
            header_line, header = next(records)
        except StopIteration:
            problems.append(f"{source}: empty file, expected a header row")
            return
        except _CsvReadError as exc:
            problems.append(f"{source}:{exc}")
            return
        index = _header_index(header)
        qcol, what = _required_columns(index)
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
        except _CsvReadError as exc:
            problems.append(f"{source}:{exc}")


_JSON_WS = " \t\n\r"


class _JsonFloat(str):
    """The literal text of a JSON float (``json.loads(parse_float=_JsonFloat)``).

    A gold written as the number ``0.50`` keeps its two decimals, which the numeric tolerance
    depends on (``float`` would make it ``"0.5"``); being a ``str`` subclass, it is told apart
    from real strings wherever only strings are allowed.
    """

    # errors.type_name reports a JSON number, not a string, for messages.
    is_json_number = True


def _is_text(value: object) -> bool:
    return isinstance(value, str) and not isinstance(value, _JsonFloat)


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


def _iter_user_json(path: Path, source: str, problems: list[str]) -> Iterator[_Located]:
    text = _read_text(path, source)
    try:
        data = json.loads(text, parse_float=_JsonFloat)
    except json.JSONDecodeError as exc:
        problems.append(f"{source}:{exc.lineno}: invalid JSON: {exc.msg} (column {exc.colno})")
        return
    except (RecursionError, ValueError) as exc:
        problems.append(f"{source}:1: {_loads_error(exc)}")
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


def _loads(text: str) -> Any:
    """``json.loads`` with floats kept as written; raises ``ValueError`` (with a message for the
    user) for anything it cannot read, nesting too deep for the parser included."""
    try:
        return json.loads(text, parse_float=_JsonFloat)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    except (RecursionError, ValueError) as exc:
        raise ValueError(_loads_error(exc)) from None


def _loads_error(exc: BaseException) -> str:
    """What ``json.loads`` failing other than by syntax means: nesting too deep for the parser,
    or an integer past Python's digit limit (4300 digits)."""
    if isinstance(exc, RecursionError):
        return "invalid JSON: arrays or objects nested too deeply"
    return f"invalid JSON: {exc}"


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


def _iter_user_jsonl(
    path: Path, source: str, problems: list[str], reads: str = "a .jsonl file holds JSONL"
) -> Iterator[_Located]:
    """Yield each object of a JSONL file; blank lines are skipped, a BOM is dropped.

    A file whose first line does not parse and looks like CSV or a JSON array is one problem
    (``reads`` says what was expected), not one per line."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DatasetError(f"{source}: cannot read: {exc}") from exc
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
            item = _loads(stripped)
        except ValueError as exc:
            hint = _not_jsonl(stripped, source, line, reads) if first else None
            if hint is not None:
                problems.append(hint)
                return
            problems.append(f"{source}:{line}: {exc}")
            first = False
            continue
        first = False
        yield f"{source}:{line}", f"line {line}", line, item


def _validate_record(
    where: str,
    ref: str,
    line: int,
    record: Any,
    default_domain: str,
    problems: list[str],
    types: Mapping[str, str],
    responses: bool = False,
    notes: list[str] | None = None,
) -> _Item | None:
    """Check one record; append its problems and return ``None`` if it has any.

    ``types`` maps a normalised answer type to its canonical string (:func:`type_table`,
    built once per file). With ``responses`` the record is a line of a responses file and
    must also carry ``response`` (a string; ``null`` or absent only with an ``error``) and may
    carry ``error`` (a string or ``null``; a blank one means no error).

    Text is sanitised here, where it enters: a lone surrogate (which JSON's ``\\ud800`` escape
    can put in a string, and which no UTF-8 output can hold) becomes U+FFFD, and ``notes`` gets
    a line saying where.  A value-typed gold that holds no value of its type (``abc`` for a
    ``numeric`` row) is a problem: it could never be matched, and every response to it would
    count as a hallucination.
    """
    if not isinstance(record, dict):
        keys = "question, answer, type and response" if responses else "question, answer and type"
        problems.append(f"{where}: expected an object with {keys}, found {type_name(record)}")
        return None
    record = _sanitized(record, where, notes)
    own: list[str] = []

    if "question" in record and "questions" in record:
        own.append("both 'question' and 'questions'; keep one")
        question = None
    else:
        raw_q = record.get("question", record.get("questions"))
        question = None
        if raw_q is None:
            own.append("missing 'question'")
        elif not _is_text(raw_q):
            own.append(f"question must be a string, found {type_name(raw_q)}")
        elif not raw_q.strip():
            own.append("empty question")
        else:
            question = raw_q.strip()

    answer: str | None = None
    if "answer" not in record or record["answer"] is None:
        own.append("missing 'answer' (use \"\" for an empty gold)")
    else:
        raw_a = record["answer"]
        if isinstance(raw_a, str):
            # Raw (gold parsing happens in equivalence); a JSON float keeps its literal text.
            answer = str(raw_a)
        elif isinstance(raw_a, int) and not isinstance(raw_a, bool):
            answer = str(raw_a)
        else:  # booleans, objects, arrays, and NaN/Infinity (which json.loads accepts)
            own.append(f"answer must be a string or a finite number, found {type_name(raw_a)}")

    type_: str | None = None
    raw_t = record.get("type")
    if raw_t is None:
        own.append("missing 'type'")
    elif not _is_text(raw_t):
        own.append(f"type must be a string, found {type_name(raw_t)}")
    else:
        type_ = types.get(raw_t.strip().lower())
        if type_ is None:
            own.append(f"unknown type {raw_t!r} (expected one of {', '.join(types)})")

    domain = default_domain
    raw_d = record.get("domain")
    if raw_d is not None:
        if not _is_text(raw_d):
            own.append(f"domain must be a string, found {type_name(raw_d)}")
        elif raw_d.strip():
            domain = raw_d.strip()
        # An empty domain cell means "the file's default domain", like a missing key.
    if printable(domain) != domain:
        # A domain name is printed everywhere (test ids, tables, gate verdicts): control
        # characters in it would reach the terminal as escape sequences.
        own.append(f"domain {domain!r} holds control characters")

    group: str | None = None
    if "group" in record:
        raw_g = record["group"]
        if isinstance(raw_g, bool) or not (_is_text(raw_g) or isinstance(raw_g, int)):
            own.append(f"group must be a string or an integer label, found {type_name(raw_g)}")
        elif isinstance(raw_g, str) and not raw_g.strip():
            own.append("empty group label")
        else:
            # 7 and "7" are one label: a CSV has only strings, a JSON file may mix.
            group = str(raw_g).strip()

    response: str | None = None
    error: str | None = None
    if responses:
        raw_e = record.get("error")
        if raw_e is not None and not _is_text(raw_e):
            own.append(f"error must be a string or null, found {type_name(raw_e)}")
        elif raw_e is not None and raw_e.strip():
            # "" or blank is what converters write for "no error"; only a message counts.
            error = raw_e
        if "response" not in record:
            if error is None:
                own.append("missing 'response' (only a failed call, with an 'error', may lack one)")
        else:
            raw_r = record["response"]
            if raw_r is None:
                if error is None:
                    own.append(
                        "response is null but there is no 'error' "
                        "(only a failed call may lack a response)"
                    )
            elif not _is_text(raw_r):
                own.append(f"response must be a string, found {type_name(raw_r)}")
            else:
                response = raw_r

    if answer is not None and type_ is not None:
        bad_gold = gold_problem(type_, answer)
        if bad_gold is not None:
            own.append(bad_gold)

    if own:
        problems.extend(f"{where}: {p}" for p in own)
        return None
    assert question is not None and answer is not None and type_ is not None
    return _Item(where, ref, line, domain, group, question, answer, type_, response, error)


# The keys whose text a record's reader uses (others are ignored, and so never sanitised).
_TEXT_KEYS = ("question", "questions", "answer", "type", "domain", "group", "response", "error")


def _sanitized(record: dict[str, Any], where: str, notes: list[str] | None) -> dict[str, Any]:
    """``record`` with lone surrogates in its text replaced by U+FFFD (a copy when any was)."""
    fixed: dict[str, str] = {}
    for key in _TEXT_KEYS:
        value = record.get(key)
        if isinstance(value, str):
            clean, changed = sanitize(value)
            if changed:
                fixed[key] = clean
    if not fixed:
        return record
    if notes is not None:
        notes.append(f"{where}: {', '.join(fixed)}: invalid characters (lone surrogates) replaced by U+FFFD")
    return {**record, **fixed}


def _locator(members: Sequence[_Item]) -> Callable[[int], tuple[str, str]]:
    """Message prefix and short reference of ``members[i]``, for :func:`_check_blocks`."""
    return lambda i: (members[i].where, members[i].ref)


def _check_file(p: Path, source: str) -> None:
    """Raise a DatasetError unless ``p`` is a file (a folder or a typo is named as such)."""
    if p.is_dir():
        raise DatasetError(f"{source}: is a directory, not a file")
    if not p.is_file():
        raise DatasetError(f"{source}: no such file")


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
    keeps its literal text (``0.50`` stays ``"0.50"``). JSON problems name the 0-based item index (``item N``) and its line.
    A gold of a value type (``numeric``, ``date``, ``rank``) must hold a value of its type.
    Invalid characters (lone surrogates) are replaced by U+FFFD, each time with a line in
    ``notes`` (when given). Raises :class:`DatasetError` listing every problem in the file.
    """
    p = Path(path)
    source = os.fspath(path)
    _check_file(p, source)
    suffix = p.suffix.lower()
    readers = {".csv": _iter_user_csv, ".json": _iter_user_json, ".jsonl": _iter_user_jsonl}
    reader = readers.get(suffix)
    if reader is None:
        raise DatasetError(
            f"{source}: unsupported file type {suffix or '(none)'!r}; use .csv, .json or .jsonl"
        )
    fallback = (default_domain or "").strip() or p.stem

    problems: list[str] = []
    items: list[_Item] = []
    types = type_table()
    for where, ref, line, record in reader(p, source, problems):
        item = _validate_record(where, ref, line, record, fallback, problems, types, notes=notes)
        if item is not None:
            items.append(item)

    labelled = [it for it in items if it.group is not None]
    if labelled and len(labelled) != len(items):
        problems.extend(
            f"{it.where}: missing 'group' (other rows of the file have one)"
            for it in items
            if it.group is None
        )
    if not items and not problems:
        problems.append(f"{source}: no rows")

    by_domain: dict[str, list[_Item]] = {}
    for it in items:
        by_domain.setdefault(it.domain, []).append(it)
    if group_by_blocks and not labelled:
        for domain, members in by_domain.items():
            label = f"domain {domain!r}" if len(by_domain) > 1 else ""
            problems.extend(
                _check_blocks(
                    [(it.answer, it.type) for it in members],
                    _locator(members),
                    label,
                )
            )
    _raise_problems(source, problems)

    rows: list[Row] = []
    if labelled:
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
            group = group_ids[key]
            rows.append(
                Row(it.domain, group, para, it.question, it.answer, it.type, source, it.line)
            )
    else:
        position: dict[str, int] = {}
        for it in items:
            n = position.get(it.domain, 0)
            position[it.domain] = n + 1
            group, para = divmod(n, GROUP_SIZE) if group_by_blocks else (n, 0)
            rows.append(
                Row(it.domain, group, para, it.question, it.answer, it.type, source, it.line)
            )
    return rows


# --------------------------------------------------------------------------------------------
# One entry point


def load_responses(
    path: StrPath, default_domain: str | None = None, notes: list[str] | None = None
) -> list[Response]:
    """Load a file of responses to score: JSONL (whatever its suffix), one object per line.

    Each line is a user-set record (see :func:`load_user_set`: ``question``, ``answer``,
    ``type``, optional ``domain`` and ``group``), validated by the same validator, plus
    ``response`` (the model's answer, a string) and optionally ``error`` (the call failed;
    ``response`` may then be missing or null, and a blank ``error`` means no error). A line
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
    for where, ref, line, record in _iter_user_jsonl(p, source, problems, reads="defan score reads JSONL"):
        item = _validate_record(where, ref, line, record, fallback, problems, types, responses=True, notes=notes)
        if item is None:
            continue
        if item.group is not None:
            first_type, first_line = group_types.setdefault((item.domain, item.group), (item.type, line))
            if item.type != first_type:
                problems.append(
                    f"{where}: type {item.type!r} differs from {first_type!r} of the same group "
                    f"on line {first_line}"
                )
                continue
        responses.append(
            Response(
                item.line,
                item.domain,
                item.group,
                item.question,
                item.answer,
                item.type,
                item.response,
                item.error,
            )
        )
    if not responses and not problems:
        problems.append(f"{source}: no responses (the file is empty)")
    _raise_problems(source, problems)
    return responses
