"""The one writer of every file defan-pytest produces (every report format: ``--defan-report``,
``--defan-html``, ``defan score --json``, ...).

Writing a report must never cost the user a file they had, never leave half a file behind and
never hang.  The rules, decided from what the path is *now*:

* A **regular file** (or a new one) is written atomically: a short-named temporary file in the
  same directory, then :func:`os.replace`.  A reader, or a crash mid-write, sees the old file or
  the whole new one, never a part; a failed write removes the temporary file.
* A **symbolic link** is followed: its target is written (atomically, next to the target), and
  the link stays a link.
* A **FIFO** or a **character device** (``/dev/null``, ``/dev/stdout``, a terminal) is written in
  place, never replaced: replacing ``/dev/full`` with a regular file, as root, is how the old
  writer broke a machine.  A FIFO nobody reads is an error after a while, not a hang.  A path
  that reaches an open descriptor (``/dev/stdout`` redirected to a file) is appended to, like a
  shell's ``>>``.  Block devices, sockets and directories are refused.
* An **input of the run** (the responses file, the dataset, the thresholds file, the
  ``pyproject.toml``) and **source or data files** (``*.py``, ``*.toml``, ``*.cfg``, ``*.ini``,
  ``*.csv``, ``*.jsonl``) are never replaced, forced or not: nothing a report holds is worth one.
* Any other **existing file** is replaced only when it is an earlier report of ours (its text
  starts as a report does, ``{"schema": "defan-pytest-report"`` or, before version 1,
  ``{"rows": [``, or an HTML report's ``<!-- defan-pytest-report`` mark), when it is empty, or when the user forces it
  (``--defan-force-output``, ``defan score --force``).

GitHub's step summary is appended to, not replaced: :func:`append_output` appends only to a
regular file (or makes one) that is no input of the run, no source, data or structured file and
no report of ours; a FIFO, a device or a directory is refused without being opened, so an append
never waits.

:func:`check_output` applies the rules (and tries the directory) without writing, so that a front
end can reject a bad path before any model is asked or anything scored; :func:`write_output`
applies them again when it writes, since the file may have changed in between.  Every refusal
and every failed write is one :class:`OutputError` whose message names the path.
"""
from __future__ import annotations

import errno
import os
import re
import secrets
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Tuple, Union

from defan_pytest.errors import DefanError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no FIFOs to wait for
    fcntl = None  # type: ignore[assignment]

__all__ = ["Input", "OutputError", "Target", "append_output", "check_output", "is_report", "write_output"]

StrPath = Union[str, "os.PathLike[str]"]

#: What a run reads, for messages: ``("the thresholds file", path)``.
Input = Tuple[str, StrPath]

#: File names and suffixes that are never replaced by a report, forced or not: a project's
#: sources, its configuration and its data.
PROTECTED_NAMES = frozenset({"conftest.py", "pyproject.toml", "setup.py", "setup.cfg", "tox.ini", "pytest.ini"})
PROTECTED_SUFFIXES = frozenset({".py", ".pyi", ".toml", ".cfg", ".ini", ".csv", ".jsonl"})

#: Suffixes of the files nothing is appended to besides: Markdown after a JSON, HTML, XML or YAML
#: file breaks it (a workflow file, a JUnit report, someone's data).
NO_APPEND_SUFFIXES = PROTECTED_SUFFIXES | {".json", ".html", ".htm", ".xml", ".yml", ".yaml"}

# How our JSON reports start (the json report format; before version 1 ``{"rows": [...], ...}``),
# indented or not.  The HTML report (report.html.render) starts with its own mark.
_REPORT_START = re.compile(
    rb'\A\s*(?:\{\s*(?:"rows"\s*:\s*\[|"schema"\s*:\s*"defan-pytest-report")|<!DOCTYPE html>\s*<!-- defan-pytest-report )'
)
# A path that names an open file descriptor: writing it in place is writing to that stream.
_DESCRIPTOR = re.compile(r"\A/(?:proc/[^/]+|dev)/fd/\d+\Z")
#: Seconds a FIFO may go without a reader before the write gives up.
FIFO_WAIT = 10.0


class OutputError(DefanError):
    """An output that must not or cannot be written; the message names the path."""


@dataclass(frozen=True)
class Target:
    """Where a write goes: ``kind`` ``"file"`` (atomic replace of ``path``, the symlink's real
    target) or ``"stream"`` (written in place: a FIFO, a character device, a descriptor);
    ``exists``: a file is there now."""

    path: Path
    kind: Literal["file", "stream"]
    exists: bool
    append: bool = False


def is_report(path: StrPath) -> bool:
    """Is the file at ``path`` an earlier JSON report of ours (by the way its text starts)?"""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return _REPORT_START.match(head) is not None


def _through_descriptor(path: str) -> bool:
    """Does ``path`` name, or link to, an open descriptor (``/dev/stdout``, ``/dev/fd/1``)?"""
    p = os.path.abspath(path)
    for _ in range(40):  # the kernel's own limit on links followed
        if _DESCRIPTOR.match(p):
            return True
        if not os.path.islink(p):
            return False
        p = os.path.normpath(os.path.join(os.path.dirname(p), os.readlink(p)))
    return False


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # gone since it was seen: nothing to lose


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _resolve(path: str) -> Target:
    """What ``path`` is now (symlinks followed); raises OutputError for what is never written."""
    try:
        st = os.stat(path)  # follows links, /proc's descriptor links included
    except FileNotFoundError:
        st = None
    except OSError as exc:  # ELOOP, ENAMETOOLONG, ENOTDIR, EACCES
        raise OutputError(f"{path}: {_why(exc)}") from None
    if st is not None:
        mode = st.st_mode
        if stat.S_ISDIR(mode):
            raise OutputError(f"{path}: is a directory")
        if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
            return Target(Path(path), "stream", True)
        if not stat.S_ISREG(mode):
            raise OutputError(f"{path}: is not a regular file, a FIFO or a character device")
        if _through_descriptor(path):
            return Target(Path(path), "stream", True, append=True)
    # A regular file, or none yet (perhaps a dangling link: its target is what gets created).
    real = Path(os.path.realpath(path))
    return Target(real, "file", st is not None)


def _check_file(path: str, target: Target, inputs: Iterable[Input], force: bool, force_hint: str) -> None:
    real = target.path
    for what, source in inputs:
        if _same_file(os.fspath(source), os.fspath(real)):
            raise OutputError(f"{path}: would overwrite {what}; a report never replaces an input of the run")
    if target.exists:
        if real.name in PROTECTED_NAMES or real.suffix.lower() in PROTECTED_SUFFIXES:
            raise OutputError(
                f"{path}: is a {real.suffix or real.name} file, not a report; a report never replaces one"
            )
        if not force and not is_report(real) and _size(real) > 0:
            hint = f" or pass {force_hint}" if force_hint else ""
            raise OutputError(f"{path}: exists and is not a defan report; choose another name{hint}")
    folder = real.parent
    if not folder.is_dir():
        raise OutputError(f"{path}: directory {folder} does not exist")
    try:
        name_max = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):  # AttributeError: no pathconf (Windows)
        name_max = 255
    if len(os.fsencode(real.name)) > name_max:
        raise OutputError(f"{path}: file name too long ({len(os.fsencode(real.name))} bytes, at most {name_max})")


def _temp_name(folder: Path) -> Path:
    # Short whatever the target's name: a name near NAME_MAX must not make the temporary one
    # too long (a 250-character report name was once refused for that).
    return folder / f".defan-{secrets.token_hex(6)}.tmp"


def check_output(
    path: StrPath, *, inputs: Iterable[Input] = (), force: bool = False, force_hint: str = ""
) -> Target:
    """Raise :class:`OutputError` unless ``path`` may and can be written by :func:`write_output`.

    Writes nothing the user would see: for a file it creates and removes a temporary file in the
    target's directory (the one check that answers for permissions, read-only file systems and
    the like).  ``inputs`` are the files the run reads, which are never replaced; ``force``
    allows replacing an existing file that is not a report of ours; ``force_hint`` is how the
    user says so (named in the message).
    """
    p = os.fspath(path)
    target = _resolve(p)
    if target.kind == "stream":
        if not os.access(p, os.W_OK):
            raise OutputError(f"{p}: not writable")
        return target
    inputs = list(inputs)
    _check_file(p, target, inputs, force, force_hint)
    probe = _temp_name(target.path.parent)
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise OutputError(f"{p}: cannot write in {target.path.parent}: {_why(exc)}") from None
    os.close(fd)
    os.unlink(probe)
    return target


def _open_stream(path: str, append: bool) -> int:
    """Open a FIFO or device for writing without blocking forever on a FIFO nobody reads."""
    nonblock = getattr(os, "O_NONBLOCK", 0) if fcntl is not None else 0
    flags = os.O_WRONLY | nonblock | (os.O_APPEND if append else 0)
    deadline = time.monotonic() + FIFO_WAIT
    while True:
        try:
            fd = os.open(path, flags)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                if exc.errno == errno.ENXIO:
                    raise OutputError(f"{path}: no process is reading this FIFO") from None
                raise OutputError(f"{path}: cannot write: {_why(exc)}") from None
            time.sleep(0.05)  # a FIFO whose reader has not opened it yet
    if nonblock:
        # Blocking from now on: a slow reader is waited for, not an error.
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~nonblock)
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _write_and_close(fd: int, data: bytes, p: str, check: Callable[[int], None] = lambda fd: None) -> Path:
    """Write ``data`` to the open ``fd`` (after ``check(fd)``, which may refuse it) and close it;
    a failure is one :class:`OutputError` naming ``p``."""
    try:
        check(fd)
        _write_all(fd, data)
    except OSError as exc:
        raise OutputError(f"{p}: cannot write: {_why(exc)}") from None
    finally:
        os.close(fd)
    return Path(p)


def write_output(
    path: StrPath,
    text: str,
    *,
    inputs: Iterable[Input] = (),
    force: bool = False,
    force_hint: str = "",
) -> Path:
    """Write ``text`` (UTF-8) to ``path`` by the rules of this module; return where it went.

    Raises :class:`OutputError` (naming the path) for a refused path and for a failed write;
    no temporary file is left behind either way.  Text that UTF-8 cannot encode (a lone
    surrogate) is an error of the caller: it should have been sanitised where it entered.
    """
    p = os.fspath(path)
    data = text.encode("utf-8")
    target = _resolve(p)
    if target.kind == "stream":
        return _write_and_close(_open_stream(p, target.append), data, p)

    _check_file(p, target, list(inputs), force, force_hint)
    real = target.path
    tmp = _temp_name(real.parent)
    try:
        # os.open with 0o666 (not tempfile.mkstemp, which forces 0o600) so the report gets the
        # same permissions under the user's umask as any file they write themselves; a file
        # being replaced keeps its own.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise OutputError(f"{p}: cannot write in {real.parent}: {_why(exc)}") from None
    try:
        try:
            if target.exists:
                os.fchmod(fd, stat.S_IMODE(os.stat(real).st_mode))
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, real)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):
            raise OutputError(f"{p}: cannot write: {_why(exc)}") from None
        raise
    return real


def _append_refusal(path: str, st: "os.stat_result | None", inputs: Iterable[Input]) -> str | None:
    """Why nothing may be appended to ``path`` (``st``: what it is now, ``None``: missing)."""
    if st is None:
        return None
    if stat.S_ISDIR(st.st_mode):
        return "is a directory"
    if not stat.S_ISREG(st.st_mode):
        kind = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(
            st.st_mode) else "a socket or another special file"
        return f"is {kind}, not a regular file; nothing is appended to one (it could wait for ever)"
    real = os.path.realpath(path)
    for what, source in inputs:
        if _same_file(os.fspath(source), real):
            return f"is {what}; nothing is appended to an input of the run"
    name = Path(real)
    if name.name in PROTECTED_NAMES or name.suffix.lower() in NO_APPEND_SUFFIXES:
        return f"is a {name.suffix or name.name} file; appending Markdown to it would break it"
    if is_report(real):
        return "is a defan report; appending to it would break it"
    return None


def append_output(path: StrPath, text: str, *, inputs: Iterable[Input] = ()) -> Path:
    """Append ``text`` (UTF-8) to the regular file at ``path`` (made when missing), as GitHub's
    step summary is written; return its path.

    The append mode of this module's rules: appended to only when ``path`` is a regular file
    (a symbolic link is followed) that is none of the run's ``inputs``, no source, data or
    structured file (:data:`NO_APPEND_SUFFIXES`, :data:`PROTECTED_NAMES`) and no report of
    ours; a FIFO, a device, a socket and a directory are refused, never opened, so that nothing
    waits for a reader.  The open itself does not block either (``O_NONBLOCK``), and what it
    opened is checked to be the file that was checked.  Raises :class:`OutputError` naming the
    path for a refusal and for a failed write.
    """
    p = os.fspath(path)
    data = text.encode("utf-8")
    try:
        st: os.stat_result | None = os.stat(p)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputError(f"{p}: {_why(exc)}") from None
    why = _append_refusal(p, st, inputs)
    if why is not None:
        raise OutputError(f"{p}: {why}")
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
    for name in ("O_NONBLOCK", "O_NOCTTY", "O_CLOEXEC"):
        flags |= getattr(os, name, 0)
    try:
        fd = os.open(p, flags, 0o666)
    except OSError as exc:
        raise OutputError(f"{p}: cannot write: {_why(exc)}") from None

    def unchanged(fd: int) -> None:
        now = os.fstat(fd)
        # Swapped for something else between the check and the open: refused, not written.
        if not stat.S_ISREG(now.st_mode) or (st is not None and (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino)):
            raise OutputError(f"{p}: changed while it was opened; nothing was appended")

    return _write_and_close(fd, data, p, unchanged)
