"""The TOML text of a thresholds file: reading it, naming its keys and values as the user wrote
them, and finding the line that sets a key.

Every way reading can fail is one :class:`ThresholdsError` naming the file (a syntax error with
its line and column, nesting too deep for the parser). A tiny header scanner
(:func:`line_of_key`) finds where a key is set, for messages and GitHub annotations that point
at the line to change: ``tomllib`` keeps no positions.
"""
from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

from defan_pytest.errors import DefanError, format_problems, type_name

__all__ = [
    "ThresholdsError",
    "dotted",
    "got",
    "line_of_key",
    "raise_problems",
    "read_toml",
    "show",
]


class ThresholdsError(DefanError):
    """A thresholds file is missing, unreadable, not TOML, or not a valid thresholds file.

    ``problems`` holds every individual problem (``"file: dotted.key: what"``); the message
    lists all of them, so one run shows everything that needs fixing.
    """


def raise_problems(source: str, problems: list[str]) -> None:
    """Raise one :class:`ThresholdsError` listing every problem (a no-op when there are none)."""
    if not problems:
        return
    if len(problems) == 1:
        raise ThresholdsError(problems[0], problems)
    raise ThresholdsError(format_problems(problems, source), problems)


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------

# tomllib (3.11-3.13) and older tomli only put the position in the message text.
_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_TOML_AT_END = re.compile(r"\s*\(at end of document\)\s*$")


def read_toml(text: str, source: str) -> dict[str, Any]:
    """Parse TOML ``text``; every way it can fail is one :class:`ThresholdsError` naming
    ``source`` (the syntax error with its line, and nesting too deep for the parser)."""
    try:
        data: dict[str, Any] = tomllib.loads(text)
        return data
    except tomllib.TOMLDecodeError as exc:
        raise _toml_error(source, exc, text) from None
    except RecursionError:
        # tomllib parses nested arrays and inline tables recursively.
        raise ThresholdsError(f"{source}: invalid TOML: arrays or inline tables nested too deeply") from None


def _toml_error(source: str, exc: tomllib.TOMLDecodeError, document: str) -> ThresholdsError:
    """A syntax error as ``file: line L, column C: invalid TOML: what``."""
    text = str(exc)
    lineno = getattr(exc, "lineno", None)
    colno = getattr(exc, "colno", None)
    msg = getattr(exc, "msg", None)
    match = _TOML_POSITION.search(text)
    if match:
        lineno = lineno or int(match.group(1))
        colno = colno or int(match.group(2))
        text = text[: match.start()]
    at_end = _TOML_AT_END.search(text)
    if at_end:
        text = text[: at_end.start()]
    what = msg if isinstance(msg, str) and msg else text
    if lineno:
        where = f"line {lineno}, column {colno}: "
    elif at_end:
        # tomllib gives no position for an error at the very end (an unclosed array, say);
        # the last line is where the user has to look.
        where = f"line {document.rstrip().count(chr(10)) + 1} (end of file): "
    else:
        where = ""
    return ThresholdsError(f"{source}: {where}invalid TOML: {what}")


# --------------------------------------------------------------------------------------------
# Keys and values as the user writes them
# --------------------------------------------------------------------------------------------

# A key TOML accepts without quotes; anything else is shown quoted, as the user must write it.
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_TOML_ESCAPES = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_TOML_ESCAPED = re.compile('[\\\\"\x00-\x1f\x7f]')


def _toml_string(text: str) -> str:
    """``text`` as a TOML basic string, the way the user writes it: quotes, backslashes and
    control characters escaped (a key holding a newline stays on one line of a message)."""
    return '"' + _TOML_ESCAPED.sub(lambda m: _TOML_ESCAPES.get(m.group(), f"\\u{ord(m.group()):04x}"), text) + '"'


def dotted(parts: Iterable[str]) -> str:
    """A key path as the user writes it in TOML: ``models."my rag".domains.nobel``."""
    return ".".join(part if _BARE_KEY.fullmatch(part) else _toml_string(part) for part in parts)


def show(value: Any) -> str:
    """A value as it would appear in the file (strings quoted, booleans lower case; a table or
    an array as nothing: :func:`got` names its type)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, (Mapping, list)):
        return ""
    return str(value)


def got(value: Any) -> str:
    """``got <TOML type> <value>``, the end of an "expected ..." message."""
    shown = show(value)
    kind = type_name(value, toml=True)
    return f"got {kind} {shown}" if shown else f"got {kind}"


# --------------------------------------------------------------------------------------------
# Where a key is set
# --------------------------------------------------------------------------------------------

_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(?:#.*)?$")
_KEY_PART = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|\'([^\']*)\'|([A-Za-z0-9_-]+))\s*(?:\.|$)')


def _key_path(text: str) -> tuple[str, ...] | None:
    """A TOML dotted key (``models."my rag".domains``) as its parts, or None if unreadable."""
    parts: list[str] = []
    pos = 0
    while pos < len(text):
        m = _KEY_PART.match(text, pos)
        if not m or m.end() == pos:
            return None
        quoted, literal, bare = m.groups()
        parts.append(quoted.encode().decode("unicode_escape") if quoted is not None else literal if literal is not None else bare)
        pos = m.end()
    return tuple(parts)


def line_of_key(text: str, table: tuple[str, ...], key: str) -> int | None:
    """Where ``key`` is set in ``[table]`` of the TOML ``text`` (1-based line), else the table's
    header line, else ``None``."""
    current: tuple[str, ...] | None = ()
    header: int | None = None
    assignment = re.compile(rf"^\s*(?:{re.escape(key)}|\"{re.escape(key)}\")\s*=")
    for number, line in enumerate(text.splitlines(), start=1):
        m = _HEADER.match(line)
        if m:
            current = _key_path(m.group(1))
            if current == table:
                header = number
            continue
        if current == table and assignment.match(line):
            return number
    return header
