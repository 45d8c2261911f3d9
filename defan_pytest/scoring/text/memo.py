"""A bounded memo for the scorer's pure functions of a short text.

The same short texts come back many times in a run: a bare answer (``1901``, ``Albert
Einstein``) from many models and rows, a refusal, a closing line (``Let me know if you need
more.``), the numbers inside them.  :func:`short_text_memo` remembers what a function made of
each (the function's own arguments are the key: nothing else of the row), for texts up to
:data:`MAX_KEY_CHARS` characters; a longer text is read again each time (its key would hold the
whole text in memory, and a long response seldom comes back).

A memo is bounded in bytes, not only in entries: the texts it keeps weigh their characters
(four bytes each outside ASCII) plus :data:`ENTRY_BYTES` apiece, and a memo holds at most
``max_bytes`` of them (:data:`MAX_MEMO_BYTES` by default) in two generations: when the newer is
full, the older is dropped and the newer becomes the older (a text found in the older comes back
into the newer): close to least-recently-used, at a dict probe a call.

Only functions whose result depends on their arguments alone and is immutable (a string, a
number, a tuple) may be memoized.
"""
from __future__ import annotations

from functools import wraps
from typing import Any, Callable, Dict, Generic, ParamSpec, Protocol, Tuple, TypeVar, cast

__all__ = ["ENTRY_BYTES", "MAX_KEY_CHARS", "MAX_MEMO_BYTES", "Memo", "short_text_memo", "weight"]

#: The longest text (the first argument) a memo keeps.
MAX_KEY_CHARS = 2048
#: What one memo holds at most, its texts weighed as :func:`weight` says.
MAX_MEMO_BYTES = 8 << 20
#: What an entry weighs besides its text: the key tuple, the result, the dict slot.
ENTRY_BYTES = 256

P = ParamSpec("P")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


class Memo(Protocol, Generic[P, R_co]):
    """A memoized function: called as the function, with its memo's ``cache_clear`` and
    ``cache_bytes`` (the weight it holds now)."""

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co: ...

    def cache_clear(self) -> None: ...

    def cache_bytes(self) -> int: ...


def weight(text: str) -> int:
    """What keeping ``text`` costs, in bytes (an upper bound of its characters' storage)."""
    return len(text) if text.isascii() else 4 * len(text)


def short_text_memo(
    maxsize: int, max_bytes: int = MAX_MEMO_BYTES
) -> Callable[[Callable[P, R]], Memo[P, R]]:
    """Memoize a function of hashable positional arguments whose texts are each at most
    :data:`MAX_KEY_CHARS` characters (a call with a longer one, or with keywords, is not
    remembered): at most ``maxsize`` calls and ``max_bytes`` of their texts' weight (the older
    generation first out)."""
    half_entries = max(1, maxsize // 2)
    half_bytes = max(ENTRY_BYTES, max_bytes // 2)

    def decorate(func: Callable[P, R]) -> Memo[P, R]:
        call = cast(Callable[..., R], func)
        newer: Dict[Tuple[Any, ...], Any] = {}
        older: Dict[Tuple[Any, ...], Any] = {}
        used = 0  # the weight of ``newer``

        @wraps(func)
        def memo(*args: P.args, **kwargs: P.kwargs) -> R:
            nonlocal newer, older, used
            if kwargs:
                return func(*args, **kwargs)
            # A hit first (only short texts are ever kept, and a text hashes once in its life).
            try:
                return newer[args]  # type: ignore[no-any-return]
            except KeyError:
                pass
            size = ENTRY_BYTES
            for a in args:
                if isinstance(a, str):
                    if len(a) > MAX_KEY_CHARS:
                        return call(*args)
                    size += weight(a)
            if args in older:
                result = older[args]
            else:
                result = call(*args)
            newer[args] = result
            used += size
            if used > half_bytes or len(newer) > half_entries:
                older, newer, used = newer, {}, 0
            return result  # type: ignore[no-any-return]

        def cache_clear() -> None:
            nonlocal newer, older, used
            newer, older, used = {}, {}, 0

        def cache_bytes() -> int:
            """The weight the memo holds now (both generations)."""
            return sum(ENTRY_BYTES + sum(weight(a) for a in k if isinstance(a, str)) for k in (*older, *newer))

        memo.cache_clear = cache_clear  # type: ignore[attr-defined]
        memo.cache_bytes = cache_bytes  # type: ignore[attr-defined]
        return cast(Memo[P, R], memo)

    return decorate
