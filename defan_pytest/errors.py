"""One error model for every problem a user must fix: :class:`DefanError` and its printer.

Every module that validates input (options, ``thresholds.toml``, data files, model names, a
spaCy pipeline) raises a subclass of :class:`DefanError` carrying *every* problem it found, each
naming the file and line or the key, so a user fixes everything in one pass.  The plugin and the
``defan`` command print them with the same :func:`format_problems`.

>>> err = DefanError(problems=["a.toml: defaults.max_fch: 2 is outside [0, 1]", "a.toml: x: unknown key"])
>>> print(format_problems(err.problems, "defan-pytest"))
defan-pytest: 2 problems:
  - a.toml: defaults.max_fch: 2 is outside [0, 1]
  - a.toml: x: unknown key
"""
from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence

from defan_pytest.safetext import printable

__all__ = ["MAX_SHOWN", "DefanError", "format_problems", "problems_of", "type_name"]

#: How many problems a printed list shows before it sums up the rest as a count.  A file with
#: thousands of bad lines (a CSV given where JSONL is expected) must not flood a CI log.
MAX_SHOWN = 50


class DefanError(ValueError):
    """A problem (or several) the user must fix before anything can run.

    ``problems`` holds each problem as one line (``"file:line: what"``, ``"file: key: what"``);
    the message is the single problem, or the printed list.  A subclass per source
    (:class:`~defan_pytest.dataset.DatasetError`, :class:`~defan_pytest.gates.thresholds.ThresholdsError`,
    ...) lets a caller catch one kind; catching :class:`DefanError` catches them all.
    """

    def __init__(self, message: str | None = None, problems: Iterable[str] = ()) -> None:
        found = tuple(str(p) for p in problems)
        if not found and message is not None:
            found = (message,)
        if message is None:
            message = found[0] if len(found) == 1 else format_problems(found)
        super().__init__(message)
        self.problems: tuple[str, ...] = found


def problems_of(exc: BaseException) -> list[str]:
    """The problems an exception carries (a :class:`DefanError`'s list, else its text)."""
    problems = getattr(exc, "problems", None)
    if problems:
        return [str(p) for p in problems]
    return [str(exc)]


def format_problems(problems: Sequence[str], heading: str = "", limit: int = MAX_SHOWN) -> str:
    """The one way problems are printed: a heading with the count, then one line each.

    At most ``limit`` problems are listed; the rest are summed up as ``... and N more``.
    Control characters in a problem (from a user's file) are shown escaped
    (:func:`defan_pytest.safetext.printable`).
    """
    count = len(problems)
    noun = "problem" if count == 1 else "problems"
    lines = [f"{heading}: {count} {noun}:" if heading else f"{count} {noun}:"]
    shown = list(problems[:limit])
    # A problem may quote a user's file: what a terminal would act on is shown escaped.
    lines.extend(f"  - {printable(p)}" for p in shown)
    if count > len(shown):
        lines.append(f"  ... and {count - len(shown)} more")
    return "\n".join(lines)


def type_name(value: object, toml: bool = False) -> str:
    """How the user's file names ``value``'s type, for "expected X, found Y" messages.

    JSON names by default (``number``, ``object``, ``array``); with ``toml`` the TOML names
    (``integer``, ``float``, ``table``, ``datetime``), since a thresholds file is TOML.

    >>> type_name(1.5), type_name(True), type_name({}), type_name(1.5, toml=True)
    ('number', 'boolean', 'object', 'float')
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer" if toml else "number"
    if isinstance(value, float):
        return "float" if toml else "number"
    if isinstance(value, str):
        # A str subclass that stands for a JSON number's literal text is still a number.
        return "number" if getattr(value, "is_json_number", False) else "string"
    if isinstance(value, Mapping):
        return "table" if toml else "object"
    if isinstance(value, (list, tuple)):
        return "array"
    if toml and isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return type(value).__name__
    return type(value).__name__
