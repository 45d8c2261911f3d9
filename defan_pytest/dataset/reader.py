"""The one reader of every file defan-pytest reads, as :mod:`defan_pytest.report.writer` is the
one writer: saved reports and baselines, thresholds files, the public split and a user's own
data set, ``defan score``'s responses, the files a model declares as its inputs.

Every input is hostile.  Whatever the path is, reading it ends in its bytes or in one
:class:`InputError` whose message names the path and says what is wrong, never a traceback,
a hang or a machine out of memory:

* Only a **regular file** is read.  A FIFO (which would hang until someone writes to it), a
  device (``/dev/zero`` never ends, ``/dev/stdin`` waits for a terminal), a socket or a
  directory is refused by what the path *is* (``stat``, links followed, so a symbolic link to
  one is refused too), before it is opened and again once it is (``fstat``: it may have been
  swapped in between).  The file is opened non-blocking, so even then a FIFO cannot hang.
* A **symbolic link loop** is said to be one, and a link to a missing file names its target
  (``os.path.exists`` says "no such file" to both).
* The size is **capped** (:data:`MAX_BYTES`, or the caller's ``limit``): at most ``limit + 1``
  bytes are read, whatever the file says its size is (a ``/proc`` file says 0).
* JSON (:func:`parse_json`, :func:`read_json`) is parsed only after its **nesting** is known to
  be at most :data:`MAX_DEPTH` levels (:func:`too_deep`, a scan that never recurses), so
  neither the parser nor any code that walks the result meets a ``RecursionError``; ``NaN``,
  ``Infinity`` and numbers too large for a float (``1e400``) are refused (JSON has no such
  numbers, and ``json.dumps(allow_nan=False)`` would fail on them when the report is written
  again); so, for reports, is a key given twice in one object (two readers would read two
  different files).

A digest (:func:`sha256_of`) reads by the same rules, in blocks, without the size cap.
"""
from __future__ import annotations

import errno
import hashlib
import itertools
import json
import math
import operator
import os
import re
import stat
from collections.abc import Callable, Iterator
from typing import Any, NoReturn, Optional, Union

from defan_pytest.errors import DefanError

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "InputError",
    "StrPath",
    "check_file",
    "decode",
    "parse_json",
    "read_bytes",
    "read_json",
    "sha256_of",
    "too_deep",
]

StrPath = Union[str, "os.PathLike[str]"]

#: The largest input read (bytes): 512 MiB.  A report of every public prompt with long
#: responses is a few tens of MiB; what is larger is not a file of ours (and would take many
#: times its size in memory once parsed).
MAX_BYTES = 512 * 1024 * 1024
#: How deeply arrays and objects may nest in a JSON input.  A report nests 6 levels deep, a data
#: set file 3; the margin is for the keys a later version or another tool adds.
MAX_DEPTH = 64

_BLOCK = 1 << 20


class InputError(DefanError):
    """An input that cannot be read: the message is ``"<label>: <reason>"``.

    ``kind`` says which problem it is, for callers that word some of them their own way:
    ``missing``, ``directory``, ``loop``, ``special`` (a FIFO, a device, a socket),
    ``too large``, ``unreadable``, ``encoding`` or ``json``; ``line`` is the 1-based line of an
    encoding or JSON problem when it is known.
    """

    def __init__(self, label: str, reason: str, kind: str, line: Optional[int] = None) -> None:
        super().__init__(f"{label}: line {line}: {reason}" if line is not None else f"{label}: {reason}")
        self.label = label
        self.reason = reason
        self.kind = kind
        self.line = line


def _size_text(n: int) -> str:
    return f"{n / (1024 * 1024):,.0f} MiB" if n >= 1024 * 1024 else f"{n:,} bytes"


def _open_failed(path: str, label: str, exc: OSError) -> NoReturn:
    code = exc.errno
    if code == errno.ENOENT:
        if os.path.islink(path):
            try:
                target = os.readlink(path)
            except OSError:  # gone in between
                target = "?"
            raise InputError(label, f"a symbolic link to {target}, which does not exist", "missing") from None
        raise InputError(label, "no such file", "missing") from None
    if code == errno.ELOOP:
        raise InputError(label, "a symbolic link loop (too many levels of symbolic links)", "loop") from None
    if code == errno.EISDIR:
        raise InputError(label, "is a directory, not a file", "directory") from None
    if code == errno.ENOTDIR:
        raise InputError(label, "no such file (a part of the path is not a directory)", "missing") from None
    raise InputError(label, f"cannot be read: {exc.strerror or exc}", "unreadable") from None


def _what_it_is(mode: int) -> Optional[str]:
    """Why a file of ``mode`` is not read (``None``: a regular file, which is)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory, not a file"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (a named pipe), not a file: it may never end; save what it holds to a file and give that"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a file: it may never end; save what it holds to a file and give that"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a file"
    return "is not a regular file"


def _open(path: StrPath, label: str, limit: Optional[int] = None) -> int:
    """A descriptor of the regular file at ``path`` (links followed), opened for reading; one
    that says it holds more than ``limit`` bytes is refused before a byte is read."""
    p = os.fspath(path)
    try:
        # What the path is, before it is opened: opening a device can act (a tape rewinds).
        _refuse(os.stat(p), label, limit)
    except OSError as exc:
        _open_failed(p, label, exc)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(p, flags | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        _open_failed(p, label, exc)
    try:
        _refuse(os.fstat(fd), label, limit)  # and what was opened (it may have changed since)
    except OSError as exc:
        os.close(fd)
        raise InputError(label, f"cannot be read: {exc.strerror or exc}", "unreadable") from None
    except InputError:
        os.close(fd)
        raise
    return fd


def _refuse(st: os.stat_result, label: str, limit: Optional[int]) -> None:
    """Raise :class:`InputError` unless ``st`` is a regular file of at most ``limit`` bytes."""
    why = _what_it_is(st.st_mode)
    if why is not None:
        raise InputError(label, why, "directory" if why.startswith("is a directory") else "special")
    if limit is not None and st.st_size > limit:
        raise _too_large(label, limit)


def _too_large(label: str, limit: int) -> InputError:
    return InputError(label, f"larger than {_size_text(limit)}, the most an input may be", "too large")


def check_file(path: StrPath, label: Optional[str] = None) -> None:
    """Raise :class:`InputError` unless ``path`` is a regular file that can be opened for
    reading (links followed): the check a front end makes before anything costs time."""
    label = os.fspath(path) if label is None else label
    os.close(_open(path, label))


def read_bytes(path: StrPath, label: Optional[str] = None, limit: Optional[int] = None) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them (default
    :data:`MAX_BYTES`).

    ``label`` names the file in messages (default: the path).  Raises :class:`InputError` for
    anything else (see the module docstring).
    """
    label = os.fspath(path) if label is None else label
    limit = MAX_BYTES if limit is None else limit
    fd = _open(path, label, limit)
    chunks: list[bytes] = []
    total = 0
    try:
        while True:
            chunk = os.read(fd, min(_BLOCK, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:  # a file that grows, or one whose size says 0 (/proc)
                raise _too_large(label, limit)
    except OSError as exc:
        raise InputError(label, f"cannot be read: {exc.strerror or exc}", "unreadable") from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def sha256_of(path: StrPath, label: Optional[str] = None) -> str:
    """The sha256 (hex) of the regular file at ``path``, read in blocks (no size cap: nothing
    is kept); :class:`InputError` as :func:`read_bytes`."""
    label = os.fspath(path) if label is None else label
    fd = _open(path, label)
    digest = hashlib.sha256()
    try:
        while True:
            chunk = os.read(fd, _BLOCK)
            if not chunk:
                break
            digest.update(chunk)
    except OSError as exc:
        raise InputError(label, f"cannot be read: {exc.strerror or exc}", "unreadable") from None
    finally:
        os.close(fd)
    return digest.hexdigest()


# -- JSON --------------------------------------------------------------------------------------

# Every byte but a quote and the four brackets, for bytes.translate to delete.
_NOT_STRUCTURE = bytes(sorted(set(range(256)) - set(b'"[]{}')))
_AS_SQUARE = bytes.maketrans(b"{}", b"[]")
_RUNS = re.compile(rb"\[+|\]+")
# Passes of removing the innermost pairs (one level each, C speed) before the runs are added
# up: most reports need no more; a pass is slow on a long run of "[" (the search for "[]").
_PASSES = 4


def too_deep(text: str, max_depth: int) -> bool:
    """Do arrays and objects in the JSON ``text`` nest more than ``max_depth`` levels deep?

    Told without recursing and at C speed: the escaped backslashes and quotes go first, so that
    every quote left opens or closes a string; then every byte but the quotes and brackets; then
    what is between quotes (a bracket in a string does not nest).  A few passes remove the
    innermost pairs, one level each; the depth of what is left is added up run by run (a run of
    ``[`` or of ``]``).  Unbalanced brackets are not too deep unless they leave too many open
    (the parser says what is wrong).

    >>> too_deep('{"a": [[1], "]]]]"]}', 3), too_deep('[[[]]]', 2), too_deep('[{}]]]', 2)
    (False, True, False)
    """
    plain = text.replace("\\\\", "").replace('\\"', "")
    structure = plain.encode("utf-8", "surrogatepass").translate(None, _NOT_STRUCTURE)
    brackets = b"".join(structure.split(b'"')[::2]).translate(_AS_SQUARE)
    allowed = max_depth
    for _ in range(_PASSES):
        fewer = brackets.replace(b"[]", b"")
        if len(fewer) == len(brackets):
            break  # no pair left: unbalanced
        brackets, allowed = fewer, allowed - 1  # every pair left was one level deeper
        if allowed < 0:
            return True
    if not brackets:
        return False
    # The depth after each run of "["s or "]"s (they alternate), added up at C speed.
    signs = itertools.cycle((1, -1) if brackets.startswith(b"[") else (-1, 1))
    runs: list[bytes] = _RUNS.findall(brackets)
    depths: Iterator[int] = itertools.accumulate(map(operator.mul, map(len, runs), signs))
    return max(depths) > allowed


class _NotJson(ValueError):
    """What a parse hook found that JSON has not (``NaN``, ``1e400``, a key twice)."""

    def __init__(self, message: str, token: Optional[str] = None) -> None:
        super().__init__(message)
        self.token = token


def _no_constant(name: str) -> NoReturn:
    raise _NotJson(f"{name} is not a JSON number (JSON has no NaN or Infinity)", name)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotJson(f"the number {text[:40]} is too large for a float", text)
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _value in pairs:
            if key in seen:
                raise _NotJson(f"the key {key[:60]!r} is given twice in one object")
            seen.add(key)
    return out


def _line_of(text: str, token: Optional[str]) -> Optional[int]:
    """The line of the first ``token`` outside a string (``None`` if not found)."""
    if not token:
        return None
    for m in re.finditer(r'"[^"\\]*(?:\\.[^"\\]*)*"|' + re.escape(token), text, re.S):
        if not m.group(0).startswith('"'):
            return text.count("\n", 0, m.start()) + 1
    return None


def parse_json(
    text: str,
    label: str,
    *,
    parse_float: Optional[Callable[[str], Any]] = None,
    allow_nan: bool = False,
    unique_keys: bool = False,
    max_depth: Optional[int] = None,
) -> Any:
    """The JSON value of ``text``; :class:`InputError` (kind ``json``, with its ``line`` when
    known) for anything that is not JSON or nests more than ``max_depth`` levels.

    ``parse_float``: how a JSON float is read (default: a finite ``float``, ``1e400`` refused);
    ``allow_nan``: keep ``NaN`` and ``Infinity`` (for a reader whose validator names the field
    that holds one); ``unique_keys``: refuse a key given twice in one object.
    """
    def fail(reason: str, line: Optional[int] = None) -> NoReturn:
        raise InputError(label, f"invalid JSON: {reason}", "json", line)

    max_depth = MAX_DEPTH if max_depth is None else max_depth
    if too_deep(text, max_depth):
        fail(f"arrays or objects nested too deeply (more than {max_depth} levels)")
    hooks: dict[str, Any] = {"parse_float": parse_float or _finite}
    if not allow_nan:
        hooks["parse_constant"] = _no_constant
    if unique_keys:
        hooks["object_pairs_hook"] = _unique_keys
    try:
        return json.loads(text, **hooks)
    except json.JSONDecodeError as exc:
        fail(f"{exc.msg} (column {exc.colno})", exc.lineno)
    except _NotJson as exc:
        fail(str(exc), _line_of(text, exc.token))
    except RecursionError:  # not reached after too_deep(); kept so that it can never be a traceback
        fail("arrays or objects nested too deeply")
    except ValueError as exc:  # an integer past Python's digit limit (4300 digits)
        fail(str(exc))


def decode(data: bytes, label: str) -> str:
    """``data`` as UTF-8 text (a BOM dropped); :class:`InputError` (kind ``encoding``) naming
    the line of the first bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(label, f"not valid UTF-8 ({exc.reason})", "encoding", line) from None


def read_json(path: StrPath, label: Optional[str] = None, *, limit: Optional[int] = None, **options: Any) -> Any:
    """The JSON value of the file at ``path``: :func:`read_bytes`, UTF-8, then
    :func:`parse_json` with ``options``."""
    label = os.fspath(path) if label is None else label
    return parse_json(decode(read_bytes(path, label, limit), label), label, **options)
