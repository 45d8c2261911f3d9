"""The public split: the reader of a public-format CSV (``questions, answer, type``) and
:func:`load_public`, which locates and verifies the files (:mod:`.fetch`) and caches the parsed
rows per process."""
from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from defan_pytest.dataset import fetch
from defan_pytest.dataset._text import _csv_records, _CsvReadError, _decode, _header_index, _required_columns
from defan_pytest.dataset.domains import (
    GROUP_SIZE,
    DatasetError,
    Domain,
    Row,
    StrPath,
    _raise_problems,
    get_domain,
    gold_problem,
    parse_domains,
    type_table,
)

__all__ = ["clear_caches", "load_public", "read_public_csv"]

# (resolved path, size, mtime_ns, inode) -> the parsed rows of a verified public file; rows are
# frozen, so sharing them is safe. Guarded by fetch._CACHE_LOCK, like the digest cache.
_PUBLIC_ROWS_CACHE: dict[tuple[str, int, int, int], tuple[Row, ...]] = {}


def clear_caches() -> None:
    """Forget every digest and parsed file cached by this process."""
    fetch._clear_digests()
    with fetch._CACHE_LOCK:
        _PUBLIC_ROWS_CACHE.clear()


def _check_blocks(
    rows: Sequence[tuple[str, str] | None],
    locate: Callable[[int], tuple[str, str]],
    label: str = "",
) -> list[str]:
    """Validate 15-row paraphrase blocks: a whole number of blocks, one answer and type each.

    ``rows`` are ``(answer, type)`` in position order, ``None`` for a row that already has a
    problem (it keeps its position but is not compared). ``locate(i)`` gives row ``i``'s
    location prefix (``"file:12"``) and short reference (``"line 12"``); it is only called to
    build messages, so the happy path formats no strings.
    """
    problems: list[str] = []
    where = f" of {label}" if label else ""
    for start in range(0, len(rows), GROUP_SIZE):
        window = enumerate(rows[start : start + GROUP_SIZE], start)
        block = [(i, r) for i, r in window if r is not None]
        if not block:
            continue
        i0, (answer0, type0) = block[0]
        for i, (answer, type_) in block[1:]:
            for what, value, first in (("answer", answer, answer0), ("type", type_, type0)):
                if value != first:
                    problems.append(
                        f"{locate(i)[0]}: {what} {value!r} differs from {first!r} at "
                        f"{locate(i0)[1]}, the first row of its {GROUP_SIZE}-row paraphrase "
                        f"block{where}"
                    )
    rest = len(rows) % GROUP_SIZE
    if rest:
        first_of_last = len(rows) - rest
        problems.append(
            f"{locate(first_of_last)[0]}: {len(rows)} rows{where} is not a multiple of "
            f"{GROUP_SIZE}: the last paraphrase block, starting here, has only {rest} rows"
        )
    return problems


def _public_locate(
    source: str, parsed: Sequence[tuple[int, str, str, str] | None], i: int
) -> tuple[str, str]:
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
    p = Path(path)
    source = os.fspath(path)
    problems: list[str] = []
    parsed: list[tuple[int, str, str, str] | None] = []
    # newline="": the csv module sees the file's own line ends (quoted fields may hold some).
    with io.StringIO(_decode(p, source), newline="") as f:
        records = _csv_records(f)
        try:
            header_line, header = next(records)
        except StopIteration:
            raise DatasetError(
                f"{source}: empty file, expected a 'questions,answer,type' header"
            ) from None
        except _CsvReadError as exc:
            raise DatasetError(f"{source}:{exc}") from exc
        index = _header_index(header)
        qcol, what = _required_columns(index)
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
                    problems.append(
                        f"{source}:{line}: {len(fields)} fields, the header has {width}"
                    )
                    parsed.append(None)
                    continue
                question = fields[qi].strip()
                type_ = intern.get(fields[ti])
                if type_ is None:
                    type_ = intern.get(fields[ti].strip().lower())
                if type_ is None:
                    problems.append(
                        f"{source}:{line}: unknown type {fields[ti]!r} "
                        f"(expected one of {', '.join(intern)})"
                    )
                if not question:
                    problems.append(f"{source}:{line}: empty question")
                if type_ is None or not question:
                    parsed.append(None)
                    continue
                key = (type_, fields[ai])
                if key not in gold_checked:
                    gold_checked[key] = gold_problem(type_, fields[ai])
                if gold_checked[key] is not None:
                    problems.append(f"{source}:{line}: {gold_checked[key]}")
                    parsed.append(None)
                    continue
                parsed.append((line, question, fields[ai], type_))
        except _CsvReadError as exc:
            problems.append(f"{source}:{exc}")

    if not parsed and not problems:
        problems.append(f"{source}: no rows after the header")
    if dom.paraphrased:
        problems.extend(
            _check_blocks(
                [None if r is None else (r[2], r[3]) for r in parsed],
                lambda i: _public_locate(source, parsed, i),
            )
        )
    _raise_problems(source, problems)

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
        key = fetch._stat_key(path)
        with fetch._CACHE_LOCK:
            cached = _PUBLIC_ROWS_CACHE.get(key)
        if cached is None:
            # resolve_public_dir verified this file; the digest cache makes this check free
            # and guards against the file changing in between.
            fetch._check_public_digest(path, domain)
            cached = tuple(read_public_csv(path, domain))
            with fetch._CACHE_LOCK:
                _PUBLIC_ROWS_CACHE[key] = cached
        rows.extend(cached)
    return rows

