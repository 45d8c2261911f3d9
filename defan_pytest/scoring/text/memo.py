"""A bounded memo for the scorer's pure functions of a short text.

The same short texts come back many times in a run: a bare answer (``1901``, ``Albert
Einstein``) from many models and rows, a refusal, a closing line (``Let me know if you need
more.``), the numbers inside them.  :func:`short_text_memo` remembers what a function made of
each (the function's own arguments are the key: nothing else of the row), for texts up to
:data:`MAX_KEY_CHARS` characters; a longer text is read again each time (its key would hold the
whole text in memory, and a long response seldom comes back).

Only functions whose result depends on their arguments alone and is immutable (a string, a
number, a tuple) may be memoized.
"""
from __future__ import annotations

from functools import lru_cache, wraps
from typing import Callable, ParamSpec, TypeVar, cast

__all__ = ["MAX_KEY_CHARS", "short_text_memo"]

#: The longest text (the first argument) a memo keeps.
MAX_KEY_CHARS = 2048

P = ParamSpec("P")
R = TypeVar("R")


def short_text_memo(maxsize: int) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Memoize a function of a text (its first argument) and other hashable arguments, for
    texts up to :data:`MAX_KEY_CHARS` characters, at most ``maxsize`` of them (least recently
    used first out)."""

    def decorate(func: Callable[P, R]) -> Callable[P, R]:
        wrapper = lru_cache(maxsize=maxsize)(func)
        cached = cast(Callable[P, R], wrapper)  # (its arguments are hashable: the caller's promise)

        @wraps(func)
        def memo(*args: P.args, **kwargs: P.kwargs) -> R:
            text = args[0] if args else None
            if isinstance(text, str) and len(text) <= MAX_KEY_CHARS:
                return cached(*args, **kwargs)
            return func(*args, **kwargs)

        memo.cache_clear = wrapper.cache_clear  # type: ignore[attr-defined]
        return memo

    return decorate
