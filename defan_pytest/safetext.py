"""Text at the edges of a run: what enters (:func:`sanitize`) and what goes out, inert: to a
terminal or a CI log (:func:`printable` for whole lines, :func:`inline` for a value inside one)
and to a Markdown table or line (:func:`markdown_cell`).

Inert means that text from outside (a data set, the model's answers, a baseline, a report judged
again) is shown, never acted on: no escape sequence reaches the terminal, no value breaks a line,
no line starts a GitHub workflow command (``::error::``, ``::add-mask::``, the legacy
``##[error]``) unless we wrote it, and no Markdown image, link, HTML or table break is made.

The base layer: every part of the package may use it, it uses nothing of the package.
"""
from __future__ import annotations

import re
from typing import Optional, Tuple

__all__ = ["has_controls", "inline", "markdown_cell", "printable", "sanitize"]

# A lone surrogate is the one code point a Python str can hold that no UTF-8 text can: JSON's
# "\ud800" escape puts one in, and writing it out (the report, the cache, the terminal) fails.
_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 controls but tab and newline, DEL, and C1 controls: the ones a terminal acts on (ESC starts
# colour, cursor and title sequences; CR rewrites the line; CSI is U+009B on some terminals).
# Lone surrogates too: printing one to a UTF-8 stream raises UnicodeEncodeError.
# The line and paragraph separators too (some log viewers, and Python's splitlines, break lines
# there), and the bidirectional overrides and isolates, which reorder what a line shows.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
# What ends a line for the Actions runner, a terminal or a log viewer, and the tab: a value is
# one line, so each run of them becomes one space.
_BREAKS = re.compile("[\t\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]+")
# A workflow command: the runner reads ``::name ...::`` at a line's start after white space
# (actions/runner ActionCommand.TryParseV2 trims the line first), and the legacy ``##[name]``
# anywhere in it (TryParse).  The first colon, or the bracket, is shown escaped instead.
_COMMAND_START = re.compile(r"^([^\S\n]*):(?=:)", re.MULTILINE)
_LEGACY_COMMAND = "##["


def sanitize(text: str) -> Tuple[str, bool]:
    """``text`` with every invalid code point (a lone surrogate) replaced by U+FFFD, and
    whether anything was replaced.

    Called once where text enters (data files, responses files, model answers), so that
    everything downstream - scoring, the cache, the JSON report - holds only text that UTF-8
    can encode.  Valid text is returned as is (the same object).

    >>> sanitize("Paris")
    ('Paris', False)
    >>> sanitize("Par\\ud800is")
    ('Par\\ufffdis', True)
    """
    if _SURROGATE.search(text) is None:
        return text, False
    return _SURROGATE.sub("\ufffd", text), True


def _escape(m: "re.Match[str]") -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c <= 0xFF else f"\\u{c:04x}"


def has_controls(text: str) -> bool:
    """Does ``text`` hold a control character, tab and newline included (or a line separator,
    a bidirectional override, a lone surrogate)?  What a name that must print as one plain line
    (a domain's) may not hold.

    >>> has_controls("sports"), has_controls("a\\tb"), has_controls("a\\nb"), has_controls("::x")
    (False, True, True, False)
    """
    return _UNPRINTABLE.search(text) is not None or _BREAKS.search(text) is not None


def _escaped(text: str) -> str:
    """``text`` with the control characters a terminal acts on shown as escapes."""
    return text if _UNPRINTABLE.search(text) is None else _UNPRINTABLE.sub(_escape, text)


def printable(text: str) -> str:
    """``text`` safe to print to a terminal or a CI log, its lines kept: control characters
    other than tab and newline (ESC and its sequences, CR, BEL, the C1 range), the line and
    paragraph separators, the bidirectional overrides and lone surrogates are shown as escapes
    (``\\x1b``) instead of being acted on, and no line starts a workflow command: a line that
    starts (after white space) with ``::`` shows its first colon as ``\\x3a``, and ``##[``
    shows as ``##\\x5b``.  Everything else, non-ASCII letters included, is kept as is.

    For text on its way to the terminal (the last step: our own annotations are printed
    without it); a value from outside placed in a line goes through :func:`inline` first, so
    that it cannot break the line.  Not for files, which keep the text itself.

    >>> printable("Who won? \\x1b[31mRED\\x1b[0m")
    'Who won? \\\\x1b[31mRED\\\\x1b[0m'
    >>> printable("Röntgen\\tline\\n")
    'Röntgen\\tline\\n'
    >>> print(printable("table\\n  ::error::pwned ##[error]x"))
    table
      \\x3a:error::pwned ##\\x5berror]x
    """
    text = _escaped(text)
    if "::" in text:
        text = _COMMAND_START.sub(r"\1\\x3a", text)
    return text.replace(_LEGACY_COMMAND, "##\\x5b")


def inline(value: object) -> str:
    """``value`` (any object, as ``str`` shows it) as part of one line of terminal or CI-log
    text: each run of newlines, carriage returns, tabs and other line breaks becomes one space,
    then :func:`printable` (escapes for the other control characters, no workflow command at
    the value's start or anywhere in legacy form).

    For every value from outside in a line we print: a domain name, a model name, a date, a
    path, a message built from them.  Wherever the value lands in the line, the line stays one
    line and starts no command.

    >>> inline("2026-01-01\\n::error::pwned")
    '2026-01-01 ::error::pwned'
    >>> print(inline("\\n::add-mask::s3cret \\x1b[2J"))
     \\x3a:add-mask::s3cret \\x1b[2J
    """
    return printable(_BREAKS.sub(" ", str(value)))


# What Markdown or HTML makes something of inside a line: escapes, table cells, code spans,
# emphasis, strikethrough, links and images, math; ``<``, ``>`` and ``&`` as entities (so that an
# entity in the data shows as written).  At a cell's start also what starts a block (a heading,
# a list item, a quote), for a cell that is a whole line (a list item's text).
_MARKDOWN = {c: "\\" + c for c in "\\|`*_[]!$~"}
_MARKDOWN.update({"<": "&lt;", ">": "&gt;", "&": "&amp;"})
_MARKDOWN_TABLE = str.maketrans(_MARKDOWN)
_BLOCK_START = re.compile(r"\A(?:[#+=-]|\d+(?=[.)]))")


def markdown_cell(value: object, limit: Optional[int] = None) -> str:
    """``value`` as the text of a Markdown table cell or of a line of a Markdown document
    (GitHub's step summary): one line (each run of white space, line breaks included, one
    space; control characters escaped as :func:`printable` does), cut to ``limit`` characters
    (with ``…``), then every character Markdown or HTML acts on escaped: ``|`` cannot end the
    cell, ``![x](url)`` is no image nor ``[x](url)`` a link, ``<img>`` is no element, a
    backtick opens no code span.

    >>> print(markdown_cell("![x](http://e/p.png) <b>|"))
    \\!\\[x\\](http://e/p.png) &lt;b&gt;\\|
    """
    # The summary is a file, not a log: no workflow command to defuse, only controls to show.
    text = _escaped(" ".join(str(value).split()))
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return _BLOCK_START.sub(lambda m: "\\" + m.group(), text.translate(_MARKDOWN_TABLE))
