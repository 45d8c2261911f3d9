"""The cap on one answer's size (``--defan-max-answer``): how it is written, and the check of
the text a model returned.  The callers that read from the wire stop reading at the cap
themselves (:attr:`defan_pytest.calls.protocol.Caller.max_answer`), so that a server's endless
body ends there; the pool checks every answer's text against it, whoever made it, before
anything keeps it.

>>> parse_size("1M"), parse_size("512 KiB"), parse_size("4096")
(1048576, 524288, 4096)
>>> format_size(1 << 20), format_size(1536), format_size(1000)
('1 MiB', '1.5 KiB', '1,000 bytes')
"""
from __future__ import annotations

import math
import re
from typing import Optional

from defan_pytest.calls.protocol import AnswerTooLarge

__all__ = ["MIN_MAX_ANSWER", "answer_size_over", "check_answer", "format_size", "parse_size", "too_large"]

#: The smallest cap (bytes): below it not even a short answer's response envelope would fit.
MIN_MAX_ANSWER = 1024
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmg]?)(?:i?b)?\s*$", re.I)


def parse_size(text: str) -> int:
    """A size in bytes from ``4096``, ``512k``, ``1M``, ``1.5 MiB`` (``k``, ``M``, ``G`` are
    powers of 1024, with or without ``B``/``iB``); ``ValueError`` saying why otherwise."""
    m = _SIZE.match(str(text))
    if m is None:
        raise ValueError(f"{text!r} is not a size (bytes, or with a unit: 512k, 1M, 2MiB)")
    value = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if not math.isfinite(value) or value > 1 << 50:
        raise ValueError(f"{text!r} is too large a size")
    size = int(value)
    if size < MIN_MAX_ANSWER:
        raise ValueError(f"{text!r} is below the minimum of {MIN_MAX_ANSWER} bytes")
    return size


def format_size(n: int) -> str:
    """``n`` bytes as a person reads it: ``1 MiB``, ``1.5 KiB``, ``1,000 bytes``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and (n * 10) % scale == 0:
            return f"{n / scale:g} {unit}"
    return f"{n:,} bytes"


def too_large(limit: int, what: str) -> AnswerTooLarge:
    """The failure of an answer over ``limit`` bytes; ``what`` says how much came."""
    return AnswerTooLarge(
        f"the answer is larger than {format_size(limit)} ({what}): not kept, and not retried "
        "(--defan-max-answer sets the cap)"
    )


def answer_size_over(text: str, limit: int) -> Optional[str]:
    """How large ``text`` is when it is over ``limit`` bytes of UTF-8 (``"5,242,880
    characters"``), else ``None`` -- without encoding a text that is surely within (or surely
    over) the cap."""
    if len(text) > limit:
        return f"{len(text):,} characters"  # a code point is one byte or more
    if 4 * len(text) <= limit:
        return None  # a code point is at most four bytes
    size = len(text.encode("utf-8", "surrogatepass"))
    return f"{size:,} bytes of text" if size > limit else None


def check_answer(text: str, limit: int) -> None:
    """Raise :class:`~defan_pytest.calls.protocol.AnswerTooLarge` when ``text`` is over
    ``limit`` bytes of UTF-8."""
    size = answer_size_over(text, limit)
    if size is not None:
        raise too_large(limit, size)
