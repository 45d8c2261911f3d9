"""Text at the edges of a run: what enters (:func:`sanitize`) and what is printed
(:func:`printable`).

The base layer: every part of the package may use it, it uses nothing of the package.
"""
from __future__ import annotations

import re
from typing import Tuple
# A lone surrogate is the one code point a Python str can hold that no UTF-8 text can: JSON's
# "\ud800" escape puts one in, and writing it out (the report, the cache, the terminal) fails.
_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 controls but tab and newline, DEL, and C1 controls: the ones a terminal acts on (ESC starts
# colour, cursor and title sequences; CR rewrites the line; CSI is U+009B on some terminals).
# Lone surrogates too: printing one to a UTF-8 stream raises UnicodeEncodeError.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


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


def printable(text: str) -> str:
    """``text`` safe to print to a terminal: control characters other than tab and newline
    (ESC and its sequences, CR, BEL, the C1 range) and lone surrogates are shown as escapes
    (``\\x1b``) instead of being acted on.  Everything else, non-ASCII letters included, is
    kept as is.

    For text from outside (questions, golds, responses, domain names of a user's file) on
    its way to the terminal; not for files, which keep the text itself.

    >>> printable("Who won? \\x1b[31mRED\\x1b[0m")
    'Who won? \\\\x1b[31mRED\\\\x1b[0m'
    >>> printable("Röntgen\\tline\\n")
    'Röntgen\\tline\\n'
    """
    if _UNPRINTABLE.search(text) is None:
        return text
    return _UNPRINTABLE.sub(_escape, text)
