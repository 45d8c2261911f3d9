"""The DefAn data: domain registry, the public split, and a user's own set.

Everything that reads questions from disk lives here, so that the rest of the package only
ever sees :class:`Row` objects with stable ids.

* :data:`DOMAINS` / :func:`get_domain` / :func:`parse_domains`: the eight public domains.
* :func:`resolve_public_dir` / :func:`load_public`: the public split, from an explicit folder,
  ``DEFAN_DATA_DIR``, or a user cache filled on first use from the pinned upstream commit.
  Every file is checked against its sha256, wherever it comes from.
* :func:`load_user_set`: a user's own ("hidden") set as CSV, JSON or JSONL.
* :func:`load_dataset`: one entry point for ``"public"`` or a path.

Malformed input is never skipped: all problems of a file are collected and raised as one
:class:`DatasetError` that names the file and the line of each problem.
"""
from __future__ import annotations

import csv
import hashlib
import http.client
import io
import json
import os
import tempfile
import threading
import types
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from defan_pytest import __version__

__all__ = [
    "ANSWER_TYPES",
    "DEFAULT_BASE_URL",
    "DOMAINS",
    "GROUP_SIZE",
    "PUBLIC_COMMIT",
    "PUBLIC_SHA256",
    "DatasetError",
    "Domain",
    "Row",
    "clear_caches",
    "default_cache_dir",
    "get_domain",
    "load_dataset",
    "load_public",
    "load_user_set",
    "parse_domains",
    "read_public_csv",
    "resolve_public_dir",
]

StrPath = Union[str, "os.PathLike[str]"]

# --------------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------------

#: Upstream commit of github.com/ashikiut/DefAn whose ``DefAn-public/`` folder is the public
#: split. Pinned so every user scores against byte-identical questions and golds.
PUBLIC_COMMIT = "3fcefd0ee77435f214eff79860f5f4c48f184960"

#: Where the public files are fetched from; ``{base}/QA_domain_N_public.csv``.
DEFAULT_BASE_URL = (
    f"https://raw.githubusercontent.com/ashikiut/DefAn/{PUBLIC_COMMIT}/DefAn-public"
)

#: sha256 of each public file at :data:`PUBLIC_COMMIT` (from ``defan-public/SOURCE.md``).
PUBLIC_SHA256: Mapping[str, str] = types.MappingProxyType(
    {
        "QA_domain_1_public.csv": "992a3e1f5061c4ada8663b9a7f95ceb61ade6166d2fc4699c525828d825a0d10",
        "QA_domain_2_public.csv": "8f922d2aabb32c7dcd9954be54ded710ba22348133ab5e9371ebe1142bf73243",
        "QA_domain_3_public.csv": "c8fb6f346de998070983a8ed17e9eeb255fdf4941615f14d73eb6e843960939d",
        "QA_domain_4_public.csv": "1f41941183ea4f689ebaf27d2a237312a299548908b3bd1fa9f4066be6906231",
        "QA_domain_5_public.csv": "963e7fdf1415dce70f0d6290b83714579b5afe92ca7744244af5cf2fbf5b7e70",
        "QA_domain_6_public.csv": "9cd8a218912bb357f04cbdf2a84088647e461346eceff4fd51290b9896b64ecf",
        "QA_domain_7_public.csv": "ac63800c4ab19d2edc1dcc08bd12f8fbf96982e91008ec6438030c301d1c0016",
        "QA_domain_8_public.csv": "9f899e95bbbc81d38417a63c3814b4bc11efa4e4c3e0836e81e76a398a766717",
    }
)

#: Rows per paraphrase group in the paraphrased public files (one question asked 15 ways).
GROUP_SIZE = 15

#: The answer types a row may carry.
ANSWER_TYPES: tuple[str, ...] = ("name", "numeric", "date", "rank", "city")

#: Seconds to wait on the network before a download counts as failed.
DOWNLOAD_TIMEOUT = 60.0

#: How many problems one :class:`DatasetError` lists before summarising the rest as a count.
MAX_REPORTED_PROBLEMS = 20

ENV_DATA_DIR = "DEFAN_DATA_DIR"
ENV_CACHE_DIR = "DEFAN_CACHE_DIR"
ENV_BASE_URL = "DEFAN_BASE_URL"

# The same str object for every row of a type keeps 68k rows from holding 68k copies.
_TYPE_INTERN: dict[str, str] = {t: t for t in ANSWER_TYPES}

# A pandas index column written by ``DataFrame.to_csv`` (files 2 and 5 carry one). It carries
# no information, so it is ignored rather than reported as unexpected.
_INDEX_COLUMN_PREFIX = "unnamed:"

_LOCAL_FILES_HINT = (
    "point defan-pytest at local copies of the files: set "
    f"{ENV_DATA_DIR}=/path/to/DefAn-public, or pass data_dir=... "
    "(the --defan-dataset option also takes a folder path)"
)


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


class DatasetError(Exception):
    """The data could not be found, downloaded, verified or parsed.

    ``problems`` holds every individual problem (``"file:line: what"``) when the error
    summarises several; the message lists the first :data:`MAX_REPORTED_PROBLEMS`.
    """

    def __init__(self, message: str, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.problems: tuple[str, ...] = tuple(problems)


def _raise_problems(path: StrPath, problems: Sequence[str]) -> None:
    """Raise one DatasetError listing ``problems`` (a no-op when there are none)."""
    if not problems:
        return
    shown = list(problems[:MAX_REPORTED_PROBLEMS])
    more = len(problems) - len(shown)
    noun = "problem" if len(problems) == 1 else "problems"
    lines = [f"{os.fspath(path)}: {len(problems)} {noun}:"]
    lines.extend(f"  {p}" for p in shown)
    if more:
        lines.append(f"  ... and {more} more")
    raise DatasetError("\n".join(lines), problems)


# --------------------------------------------------------------------------------------------
# Domains
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Domain:
    """One public DefAn domain: its id, its file number (1..8), a title, and whether its file
    holds paraphrase groups of :data:`GROUP_SIZE` rows (all but ``math``)."""

    id: str
    file_index: int
    title: str
    paraphrased: bool

    @property
    def filename(self) -> str:
        """The public file's name, e.g. ``QA_domain_3_public.csv``."""
        return f"QA_domain_{self.file_index}_public.csv"

    @property
    def sha256(self) -> str:
        """The pinned sha256 of the public file."""
        return PUBLIC_SHA256[self.filename]


#: Domain id -> :class:`Domain`, in file order 1..8 (read-only).
DOMAINS: Mapping[str, Domain] = types.MappingProxyType(
    {
        d.id: d
        for d in (
            Domain("sports", 1, "FIFA World Cup finals", True),
            Domain("census", 2, "Australian census", True),
            Domain("nobel", 3, "Nobel Prizes", True),
            Domain("entertainment", 4, "Oscars", True),
            Domain("world_org", 5, "UN and OIC membership", True),
            Domain("qs_ranking", 6, "QS World University Rankings", True),
            Domain("conference_venue", 7, "Conference venues", True),
            Domain("math", 8, "Math word problems (AQuA-style)", False),
        )
    }
)


def get_domain(name: str | Domain) -> Domain:
    """Return the public domain called ``name`` (case and surrounding space ignored).

    Raises :class:`DatasetError` listing the valid ids when there is no such domain.
    """
    if isinstance(name, Domain):
        return name
    key = name.strip().lower()
    try:
        return DOMAINS[key]
    except KeyError:
        raise DatasetError(
            f"unknown DefAn domain {name!r}; valid domains: {', '.join(DOMAINS)}"
        ) from None


def _split_names(values: str | Domain | Iterable[str | Domain] | None) -> list[str | Domain]:
    """Flatten repeatable and comma-separated values into single names (blanks skipped)."""
    if values is None:
        return []
    if isinstance(values, (str, Domain)):
        values = [values]
    names: list[str | Domain] = []
    for value in values:
        if isinstance(value, Domain):
            names.append(value)
            continue
        names.extend(part.strip() for part in value.split(",") if part.strip())
    return names


def parse_domains(values: str | Domain | Iterable[str | Domain] | None) -> tuple[Domain, ...]:
    """Parse domain selections such as ``["sports,nobel", "math"]``.

    Accepts one string, or an iterable of strings (a repeatable command-line option), each of
    which may hold comma-separated names. Returns the selected domains once each, in registry
    (file) order. ``None`` or no names at all selects every domain. An unknown name raises
    :class:`DatasetError` listing the valid ids.
    """
    names = _split_names(values)
    if not names:
        return tuple(DOMAINS.values())
    unknown = [
        n for n in names if not isinstance(n, Domain) and n.strip().lower() not in DOMAINS
    ]
    if unknown:
        shown = ", ".join(repr(str(n)) for n in unknown)
        raise DatasetError(f"unknown DefAn domain {shown}; valid domains: {', '.join(DOMAINS)}")
    wanted = {get_domain(n).id for n in names}
    return tuple(d for d in DOMAINS.values() if d.id in wanted)


# --------------------------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Row:
    """One question of the benchmark.

    ``group`` is the 0-based paraphrase group within the domain and ``para`` the 0-based
    paraphrase index within the group. ``answer`` is the raw gold string exactly as in the file
    (gold parsing happens in ``equivalence``). ``source`` is the file path and ``line`` the
    1-based physical line where the row starts in it.
    """

    domain: str
    group: int
    para: int
    question: str
    answer: str
    type: str
    source: str
    line: int

    @property
    def id(self) -> str:
        """Stable id, e.g. ``nobel-q0042-p03``."""
        return f"{self.domain}-q{self.group:04d}-p{self.para:02d}"

    @property
    def group_key(self) -> str:
        """Id of the paraphrase group, unique across domains, e.g. ``nobel-q0042``."""
        return f"{self.domain}-q{self.group:04d}"


# --------------------------------------------------------------------------------------------
# Digests (cached per process)
# --------------------------------------------------------------------------------------------

# (resolved path, size, mtime_ns, inode) -> sha256 hex. Hashing ~9 MB on every load would be
# waste; any rewrite of a file (os.replace gives a new inode, an edit a new mtime) misses.
_DIGEST_CACHE: dict[tuple[str, int, int, int], str] = {}
# Same key -> the parsed rows of a verified public file; rows are frozen, so sharing is safe.
_PUBLIC_ROWS_CACHE: dict[tuple[str, int, int, int], tuple[Row, ...]] = {}
_CACHE_LOCK = threading.Lock()


def clear_caches() -> None:
    """Forget every digest and parsed file cached by this process."""
    with _CACHE_LOCK:
        _DIGEST_CACHE.clear()
        _PUBLIC_ROWS_CACHE.clear()


def _stat_key(path: Path) -> tuple[str, int, int, int]:
    st = path.stat()
    return (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)


def _sha256_file(path: Path) -> str:
    """The sha256 of ``path``, computed once per process per (path, size, mtime, inode)."""
    key = _stat_key(path)
    with _CACHE_LOCK:
        cached = _DIGEST_CACHE.get(key)
    if cached is not None:
        return cached
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    value = digest.hexdigest()
    with _CACHE_LOCK:
        _DIGEST_CACHE[key] = value
    return value


def _check_public_digest(path: Path, domain: Domain) -> None:
    actual = _sha256_file(path)
    if actual != domain.sha256:
        raise DatasetError(
            f"{path}: sha256 mismatch for {domain.filename} (domain {domain.id!r}): "
            f"expected {domain.sha256}, got {actual}. The public split must be the files of "
            f"DefAn commit {PUBLIC_COMMIT}; to evaluate your own questions, pass the file "
            "with --defan-dataset=PATH (a .csv, .json or .jsonl file) instead"
        )


# --------------------------------------------------------------------------------------------
# Locating and downloading the public split
# --------------------------------------------------------------------------------------------


def _env(name: str) -> str | None:
    """An environment variable, with an empty value treated as unset."""
    value = os.environ.get(name, "").strip()
    return value or None


def default_cache_dir() -> Path:
    """The user cache folder for the public split:
    ``$XDG_CACHE_HOME/defan-pytest/<commit>``, else ``~/.cache/defan-pytest/<commit>``."""
    base = _env("XDG_CACHE_HOME")
    root = Path(base).expanduser() if base else Path.home() / ".cache"
    return root / "defan-pytest" / PUBLIC_COMMIT


def _download(url: str, dest: Path, domain: Domain) -> None:
    """Fetch ``url`` into ``dest`` atomically, keeping it only if its sha256 is the pinned one.

    The bytes go to a temp file in the destination folder (so ``os.replace`` is an atomic
    rename, never a cross-device copy) and are hashed while written; a mismatch or any failure
    removes the temp file, so the cache never holds a half-written or wrong file.
    """
    try:
        request = urllib.request.Request(url, headers={"User-Agent": f"defan-pytest/{__version__}"})
    except ValueError as exc:  # no scheme, e.g. a DEFAN_BASE_URL without http://
        raise DatasetError(f"invalid download URL {url!r}: {exc}; {_LOCAL_FILES_HINT}") from exc
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    except OSError as exc:
        raise DatasetError(
            f"cannot write to the DefAn cache folder {dest.parent}: {exc}; set "
            f"{ENV_CACHE_DIR} to a writable folder, or {_LOCAL_FILES_HINT}"
        ) from exc
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()
        try:
            with os.fdopen(fd, "wb") as out:
                with urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT) as response:
                    for chunk in iter(lambda: response.read(1 << 16), b""):
                        digest.update(chunk)
                        out.write(chunk)
        except (
            urllib.error.URLError,
            http.client.HTTPException,
            TimeoutError,
            ConnectionError,
            ValueError,
        ) as exc:
            if isinstance(exc, urllib.error.HTTPError):
                reason: object = f"HTTP {exc.code} {exc.reason}"
            else:
                reason = getattr(exc, "reason", None) or exc
            raise DatasetError(
                f"could not download {dest.name} (domain {domain.id!r}) from {url}: {reason}. "
                f"The DefAn public split is downloaded on first use; without network access, "
                f"{_LOCAL_FILES_HINT}"
            ) from exc
        except OSError as exc:  # local: disk full, permissions
            raise DatasetError(f"could not write {tmp}: {exc}") from exc
        actual = digest.hexdigest()
        if actual != domain.sha256:
            raise DatasetError(
                f"downloaded {dest.name} (domain {domain.id!r}) from {url} has the wrong "
                f"sha256: expected {domain.sha256}, got {actual}; the file was not kept"
            )
        os.replace(tmp, dest)
    except BaseException:
        # Also on KeyboardInterrupt: nothing half-written may stay in the cache.
        try:
            tmp.unlink()
        except FileNotFoundError:
            pass
        raise
    # We just hashed these bytes: seed the digest cache so the first load does not hash again.
    key = _stat_key(dest)
    with _CACHE_LOCK:
        _DIGEST_CACHE[key] = actual


def resolve_public_dir(
    data_dir: StrPath | None = None,
    cache_dir: StrPath | None = None,
    base_url: str | None = None,
    domains: str | Iterable[str | Domain] | None = None,
) -> Path:
    """Return a folder holding verified public files for ``domains`` (default: all).

    Where the files come from, first match wins:

    1. ``data_dir`` (a folder with ``QA_domain_N_public.csv`` files);
    2. the ``DEFAN_DATA_DIR`` environment variable;
    3. a user cache folder: ``cache_dir``, else ``DEFAN_CACHE_DIR``, else
       :func:`default_cache_dir`. Missing files are downloaded there from ``base_url``, else
       ``DEFAN_BASE_URL``, else :data:`DEFAULT_BASE_URL`.

    Every requested file is checked against its pinned sha256. A mismatch in a folder the user
    named (1, 2) is an error; a mismatching cached file is downloaded again. Only the files of
    the requested domains are looked at or downloaded. Raises :class:`DatasetError`.
    """
    selected = parse_domains(domains)
    explicit = data_dir if data_dir is not None else _env(ENV_DATA_DIR)
    if explicit is not None:
        folder = Path(explicit).expanduser()
        origin = "data_dir" if data_dir is not None else ENV_DATA_DIR
        if not folder.is_dir():
            raise DatasetError(f"{origin}: {folder} is not a folder with the DefAn public files")
        for domain in selected:
            path = folder / domain.filename
            if not path.is_file():
                raise DatasetError(
                    f"{path} not found ({origin} {folder} lacks {domain.filename} for domain "
                    f"{domain.id!r}); expected the files of DefAn-public at commit {PUBLIC_COMMIT}"
                )
            _check_public_digest(path, domain)
        return folder

    if cache_dir is not None:
        folder = Path(cache_dir).expanduser()
    else:
        env_cache = _env(ENV_CACHE_DIR)
        folder = Path(env_cache).expanduser() if env_cache else default_cache_dir()
    base = (base_url or _env(ENV_BASE_URL) or DEFAULT_BASE_URL).rstrip("/")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatasetError(
            f"cannot create the DefAn cache folder {folder}: {exc}; set {ENV_CACHE_DIR} to a "
            f"writable folder, or {_LOCAL_FILES_HINT}"
        ) from exc
    for domain in selected:
        path = folder / domain.filename
        if path.is_file():
            if _sha256_file(path) == domain.sha256:
                continue
            # Our own cache holds a wrong file (a crash before data hit the disk, a manual
            # edit): it is ours to replace, so fetch a fresh copy rather than fail.
        _download(f"{base}/{domain.filename}", path, domain)
    return folder


# --------------------------------------------------------------------------------------------
# CSV helpers
# --------------------------------------------------------------------------------------------


def _decode(path: Path, source: str) -> str:
    """The whole file as text (utf-8, a BOM dropped), newlines left as they are.

    Decoding it all at once, rather than through a text-mode file that decodes in chunks, lets
    an encoding error name its line.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DatasetError(f"{source}: cannot read: {exc}") from exc
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DatasetError(f"{source}:{line}: not valid UTF-8 ({exc.reason})") from exc


def _read_text(path: Path, source: str) -> str:
    """The file as text, newlines normalised to ``\n`` as universal newlines would."""
    return _decode(path, source).replace("\r\n", "\n").replace("\r", "\n")


def _csv_records(f: Iterable[str]) -> Iterator[tuple[int, list[str]]]:
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
        raise _CsvReadError(max(reader.line_num, previous_end + 1), exc) from exc


class _CsvReadError(Exception):
    """A CSV file could not be parsed at ``line`` (e.g. a field over the csv size limit)."""

    def __init__(self, line: int, cause: Exception) -> None:
        super().__init__(f"{line}: cannot parse: {cause}")
        self.line = line
        self.cause = cause


def _header_index(header: Sequence[str]) -> dict[str, int]:
    """Map lower-cased, stripped column names to their position (first occurrence wins)."""
    index: dict[str, int] = {}
    for i, name in enumerate(header):
        index.setdefault(name.strip().lower(), i)
    return index


def _required_columns(index: Mapping[str, int]) -> tuple[str | None, str]:
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


# --------------------------------------------------------------------------------------------
# The public split
# --------------------------------------------------------------------------------------------


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
        intern = _TYPE_INTERN
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
                        f"(expected one of {', '.join(ANSWER_TYPES)})"
                    )
                if not question:
                    problems.append(f"{source}:{line}: empty question")
                if type_ is None or not question:
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
    domains: str | Iterable[str | Domain] | None = None,
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
    folder = resolve_public_dir(
        data_dir=data_dir, cache_dir=cache_dir, base_url=base_url, domains=selected
    )
    rows: list[Row] = []
    for domain in selected:
        path = folder / domain.filename
        key = _stat_key(path)
        with _CACHE_LOCK:
            cached = _PUBLIC_ROWS_CACHE.get(key)
        if cached is None:
            # resolve_public_dir verified this file; the digest cache makes this check free
            # and guards against the file changing in between.
            _check_public_digest(path, domain)
            cached = tuple(read_public_csv(path, domain))
            with _CACHE_LOCK:
                _PUBLIC_ROWS_CACHE[key] = cached
        rows.extend(cached)
    return rows


# --------------------------------------------------------------------------------------------
# A user's own set
# --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Item:
    """One validated user record before grouping."""

    where: str
    ref: str
    line: int
    domain: str
    group: str | None
    question: str
    answer: str
    type: str


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


def _is_text(value: object) -> bool:
    return isinstance(value, str) and not isinstance(value, _JsonFloat)


def _kind(value: object) -> str:
    """A JSON-ish name for a value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float, _JsonFloat)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


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
    except (ValueError, IndexError):
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
    if isinstance(data, dict):
        if "rows" not in data:
            problems.append(f"{source}:1: a JSON object must hold the rows under a 'rows' key")
            return
        data = data["rows"]
    if not isinstance(data, list):
        problems.append(
            f"{source}:1: expected a JSON list of rows or {{\"rows\": [...]}}, "
            f"found {_kind(data)}"
        )
        return
    lines = _json_array_lines(text) or []
    for n, item in enumerate(data):
        line = lines[n] if n < len(lines) else n + 1
        yield f"{source}: item {n} (line {line})", f"item {n}", line, item


def _iter_user_jsonl(path: Path, source: str, problems: list[str]) -> Iterator[_Located]:
    text = _read_text(path, source)
    # split("\n"), not splitlines(): JSON strings may legally hold U+2028 and friends, which
    # splitlines() would treat as line ends.
    for line, raw in enumerate(text.split("\n"), start=1):
        stripped = raw.strip()
        if not stripped:
            continue
        try:
            item = json.loads(stripped, parse_float=_JsonFloat)
        except json.JSONDecodeError as exc:
            problems.append(f"{source}:{line}: invalid JSON: {exc.msg} (column {exc.colno})")
            continue
        yield f"{source}:{line}", f"line {line}", line, item


def _validate_user_record(
    where: str, ref: str, line: int, record: Any, default_domain: str, problems: list[str]
) -> _Item | None:
    """Check one user record; append its problems and return ``None`` if it has any."""
    if not isinstance(record, dict):
        problems.append(
            f"{where}: expected an object with question, answer and type, found {_kind(record)}"
        )
        return None
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
            own.append(f"question must be a string, found {_kind(raw_q)}")
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
            own.append(f"answer must be a string or a finite number, found {_kind(raw_a)}")

    type_: str | None = None
    raw_t = record.get("type")
    if raw_t is None:
        own.append("missing 'type'")
    elif not _is_text(raw_t):
        own.append(f"type must be a string, found {_kind(raw_t)}")
    else:
        type_ = _TYPE_INTERN.get(raw_t.strip().lower())
        if type_ is None:
            own.append(f"unknown type {raw_t!r} (expected one of {', '.join(ANSWER_TYPES)})")

    domain = default_domain
    raw_d = record.get("domain")
    if raw_d is not None:
        if not _is_text(raw_d):
            own.append(f"domain must be a string, found {_kind(raw_d)}")
        elif raw_d.strip():
            domain = raw_d.strip()
        # An empty domain cell means "the file's default domain", like a missing key.

    group: str | None = None
    if "group" in record:
        raw_g = record["group"]
        if isinstance(raw_g, bool) or not (_is_text(raw_g) or isinstance(raw_g, int)):
            own.append(f"group must be a string or an integer label, found {_kind(raw_g)}")
        elif isinstance(raw_g, str) and not raw_g.strip():
            own.append("empty group label")
        else:
            # 7 and "7" are one label: a CSV has only strings, a JSON file may mix.
            group = str(raw_g).strip()

    if own:
        problems.extend(f"{where}: {p}" for p in own)
        return None
    assert question is not None and answer is not None and type_ is not None
    return _Item(where, ref, line, domain, group, question, answer, type_)


def load_user_set(
    path: StrPath,
    group_by_blocks: bool = False,
    default_domain: str | None = None,
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
    becomes its ``str``. JSON problems name the 0-based item index (``item N``) and its line.
    Raises :class:`DatasetError` listing every problem in the file.
    """
    p = Path(path)
    source = os.fspath(path)
    if not p.is_file():
        raise DatasetError(f"{source}: no such file")
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
    for where, ref, line, record in reader(p, source, problems):
        item = _validate_user_record(where, ref, line, record, fallback, problems)
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
                    lambda i, m=members: (m[i].where, m[i].ref),
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
# --------------------------------------------------------------------------------------------


def load_dataset(
    spec: StrPath = "public",
    domains: str | Iterable[str] | None = None,
    *,
    data_dir: StrPath | None = None,
    cache_dir: StrPath | None = None,
    base_url: str | None = None,
    group_by_blocks: bool = False,
    default_domain: str | None = None,
) -> list[Row]:
    """Load ``spec``: ``"public"``, a folder (the public split from there), or a user set file.

    ``domains`` selects domains (repeatable and comma-separated names). For the public split
    they must be registry ids; for a user set they must be domains the file has, else
    :class:`DatasetError` lists the ones it has. (A folder literally named ``public`` is
    reachable as ``./public``.)
    """
    if isinstance(spec, str) and spec.strip() == "public":
        return load_public(domains, data_dir=data_dir, cache_dir=cache_dir, base_url=base_url)
    path = Path(spec).expanduser()
    if path.is_dir():
        return load_public(domains, data_dir=path, cache_dir=cache_dir, base_url=base_url)
    if not path.exists():
        raise DatasetError(
            f"dataset {os.fspath(spec)!r} not found: use 'public', a folder holding the DefAn "
            "public files, or a .csv/.json/.jsonl file"
        )
    rows = load_user_set(path, group_by_blocks=group_by_blocks, default_domain=default_domain)
    names = [str(n) for n in _split_names(domains)]
    if not names:
        return rows
    have = list(dict.fromkeys(r.domain for r in rows))
    unknown = [n for n in names if n not in have]
    if unknown:
        raise DatasetError(
            f"{os.fspath(spec)}: no domain {', '.join(map(repr, unknown))} in this file; "
            f"its domains: {', '.join(have)}"
        )
    wanted = set(names)
    return [r for r in rows if r.domain in wanted]
