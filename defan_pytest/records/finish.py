"""A model's finish reason, the one word that travels with every answer: why the model stopped,
as the provider said it (``stop``; ``length``: cut by the token limit, SCORING.md clarification
14; ``content_filter``; ``tool_calls``; ...), or ``None`` when unknown (a callable that returned
a bare str, an answer cached before the reason was kept, a provider that said nothing).

Kept as the provider spelled it (litellm already maps other providers' words onto OpenAI's);
only its shape is checked, here, once for every way in (a server's JSON, a callable's return, a
``defan score`` line, the cache, a saved report): a short word, so that a hostile server cannot
put a megabyte or an escape code into reports, terminals and the scorer's input.
"""
from __future__ import annotations

import re
from typing import Any, Optional

__all__ = ["CUT", "finish_reason_of", "is_finish_reason"]

#: The finish reason of an answer cut by the token limit.
CUT = "length"

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")


def is_finish_reason(value: Any) -> bool:
    """Whether ``value`` is a finish reason as kept: a str of 1 to 64 letters, digits and
    ``_.:-``, starting with a letter or digit."""
    return isinstance(value, str) and _WORD.fullmatch(value) is not None


def finish_reason_of(value: Any) -> Optional[str]:
    """``value`` as a finish reason (a plain str), or ``None`` when it is none or not one.

    >>> finish_reason_of("length"), finish_reason_of(None), finish_reason_of(3), finish_reason_of("a b")
    ('length', None, None, None)
    """
    return str(value) if is_finish_reason(value) else None
