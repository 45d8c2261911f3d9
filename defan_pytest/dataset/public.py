"""The public split: the reader of a public-format CSV (``questions, answer, type``) and
:func:`load_public`, which locates and verifies the files (:mod:`.fetch`) and caches the parsed
rows per process."""
from __future__ import annotations

import io
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from defan_pytest.dataset import fetch
from defan_pytest.dataset.checks import check_blocks, gold_problem, type_table
from defan_pytest.dataset.domains import (
    GROUP_SIZE,
    DatasetError,
    Domain,
    Row,
    StrPath,
    get_domain,
    parse_domains,
    raise_problems,
)
from defan_pytest.dataset.textfiles import CsvReadError, csv_records, decode, header_index, required_columns

__all__ = ["clear_caches", "load_public", "read_public_csv"]

# File key (fetch.file_key) -> the parsed rows of a verified public file; rows are frozen, so
# sharing them is safe.
_PUBLIC_ROWS_CACHE: dict[fetch.FileKey, tuple[Row, ...]] = {}
_ROWS_LOCK = threading.Lock()

#: One parsed line of a public file: (line, question, answer, type); ``None`` for a line with
#: a problem (it keeps its position).
_Parsed = tuple[int, str, str, str] | None


def clear_caches() -> None:
    """Forget every digest and parsed file cached by this process."""
    fetch.clear_digests()
    with _ROWS_LOCK:
        _PUBLIC_ROWS_CACHE.clear()


def _public_locate(source: str, parsed: Sequence[_Parsed], i: int) -> tuple[str, str]:
    row = parsed[i]
    if row is None:  # a row with its own problem: name the file only
        return source, f"row {i + 1}"
    return f"{source}:{row[0]}", f"line {row[0]}"


def read_public_csv(path: StrPath, domain: str | Domain) -> list[Row]:
    """Parse one public-format file (``questions, answer, type``) as ``domain``.

    No digest check here (:func:`load_public` does that); this is the parser alone. In a
    paraphrased domain every block of :data:`GROUP_SIZE` consecutive rows is one group
    (by position, never by answer) and must share one answer and type; in ``math`` each row is
    its own group. Raises :class:`DatasetError` listing every problem in the file.
    """
    dom = get_domain(domain)
    source = os.fspath(path)
    problems: list[str] = []
    # newline="": the csv module sees the file's own line ends (quoted fields may hold some).
    with io.StringIO(decode(Path(path), source), newline="") as f:
        parsed = list(_parse_lines(csv_records(f), source, problems))
    if not parsed and not problems:
        problems.append(f"{source}: no rows after the header")
    if dom.paraphrased:
        problems.extend(
            check_blocks(
                [None if r is None else (r[2], r[3]) for r in parsed],
                lambda i: _public_locate(source, parsed, i),
            )
        )
    raise_problems(source, problems)
    return _rows(dom, parsed, source)


def _parse_lines(records: Iterator[tuple[int, list[str]]], source: str, problems: list[str]) -> Iterator[_Parsed]:
    """Each line of a public file after its header, checked: ``None`` (and its problems appended)
    for a line that is not a question with a known type and a gold of that type.  A header
    without the three columns stops the file (a :class:`DatasetError`)."""
    try:
        header_line, header = next(records)
    except StopIteration:
        raise DatasetError(f"{source}: empty file, expected a 'questions,answer,type' header") from None
    except CsvReadError as exc:
        raise DatasetError(f"{source}:{exc}") from exc
    index = header_index(header)
    qcol, what = required_columns(index)
    if qcol is None:
        raise DatasetError(f"{source}:{header_line}: {what} (header: {', '.join(header)})")
    qi, ai, ti = index[qcol], index["answer"], index["type"]
    width = len(header)
    # Built once per file (never at import time: the answer types may change).
    intern = type_table()
    # Each distinct (type, gold) is checked once: a paraphrase block repeats its gold 15 times.
    gold_checked: dict[tuple[str, str], str | None] = {}
    try:
        for line, fields in records:
            if len(fields) != width:
                problems.append(f"{source}:{line}: {len(fields)} fields, the header has {width}")
                yield None
                continue
            question = fields[qi].strip()
            type_ = intern.get(fields[ti])
            if type_ is None:
                type_ = intern.get(fields[ti].strip().lower())
            if type_ is None:
                problems.append(f"{source}:{line}: unknown type {fields[ti]!r} (expected one of {', '.join(intern)})")
            if not question:
                problems.append(f"{source}:{line}: empty question")
            if type_ is None or not question:
                yield None
                continue
            key = (type_, fields[ai])
            if key not in gold_checked:
                gold_checked[key] = gold_problem(type_, fields[ai])
            if gold_checked[key] is not None:
                problems.append(f"{source}:{line}: {gold_checked[key]}")
                yield None
                continue
            yield (line, question, fields[ai], type_)
    except CsvReadError as exc:
        problems.append(f"{source}:{exc}")


def _rows(dom: Domain, parsed: Sequence[_Parsed], source: str) -> list[Row]:
    """The rows of a checked public file: in a paraphrased domain, group and paraphrase by
    position in blocks of :data:`GROUP_SIZE`; in ``math``, a group per row."""
    rows: list[Row] = []
    append = rows.append
    did = dom.id
    if dom.paraphrased:
        answer0 = ""
        for i, r in enumerate(parsed):
            assert r is not None
            group, para = divmod(i, GROUP_SIZE)
            if para == 0:
                answer0 = r[2]
            # Reuse the block's first answer object: equal strings, one copy in memory.
            append(Row(did, group, para, r[1], answer0, r[3], source, r[0]))
    else:
        for i, r in enumerate(parsed):
            assert r is not None
            append(Row(did, i, 0, r[1], r[2], r[3], source, r[0]))
    return rows


def load_public(
    domains: str | Domain | Iterable[str | Domain] | None = None,
    data_dir: StrPath | None = None,
    cache_dir: StrPath | None = None,
    base_url: str | None = None,
) -> list[Row]:
    """Load the public split for ``domains`` (default: all), in registry order.

    The files are located (and downloaded if need be) by :func:`resolve_public_dir` and
    verified against their pinned sha256. Parsed files are cached per process. Raises
    :class:`DatasetError`.
    """
    selected = parse_domains(domains)
    folder = fetch.resolve_public_dir(
        data_dir=data_dir, cache_dir=cache_dir, base_url=base_url, domains=selected
    )
    rows: list[Row] = []
    for domain in selected:
        path = folder / domain.filename
        key = fetch.file_key(path)
        with _ROWS_LOCK:
            cached = _PUBLIC_ROWS_CACHE.get(key)
        if cached is None:
            # resolve_public_dir verified this file; the digest cache makes this check free
            # and guards against the file changing in between.
            fetch.check_public_digest(path, domain)
            cached = tuple(read_public_csv(path, domain))
            with _ROWS_LOCK:
                _PUBLIC_ROWS_CACHE[key] = cached
        rows.extend(cached)
    return rows

