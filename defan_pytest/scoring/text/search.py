"""Searching text fast: a regex alternation of many words built as a trie, and sets of spans
queried by binary search (so that long responses stay linear)."""
from __future__ import annotations

import bisect
import itertools
import re
from typing import Dict, Iterable, List, Tuple


def word_alternation(words: Iterable[str]) -> str:
    """A regex alternation of many words, built as a trie (``f(?:ive|our|irst)``): the regex
    engine then follows one branch per letter instead of trying every word at every position
    (month names of six languages, number words).  Longer words win over their prefixes.

    >>> word_alternation(["four", "fourth", "five"])
    'f(?:ive|our(?:th)?)'
    """
    trie: Dict[str, Dict] = {}
    for w in words:
        node = trie
        for c in w:
            node = node.setdefault(c, {})
        node[""] = {}

    def walk(node: Dict[str, Dict]) -> str:
        alts = [re.escape(c) + walk(sub) for c, sub in sorted(node.items()) if c]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        if "" in node:  # a word ends here: what follows is optional
            body = ("(?:" + body + ")" if len(alts) == 1 and len(body) > 1 else body) + "?"
        return body

    return walk(trie)


class SpanIndex:
    """Which positions lie inside any of a fixed set of spans ``[start, end)``: a binary search
    a query instead of a scan of every span, so that long responses stay linear."""

    def __init__(self, spans: Iterable[Tuple[int, int]]) -> None:
        ordered = sorted(spans)
        self._starts = [s for s, _ in ordered]
        self._reach = list(itertools.accumulate((e for _, e in ordered), max))  # furthest end so far

    def __contains__(self, pos: int) -> bool:
        i = bisect.bisect_right(self._starts, pos) - 1
        return i >= 0 and self._reach[i] > pos


class DisjointSpans:
    """A growing set of disjoint spans ``[start, end)`` that answers "does this span overlap
    one of them?" by binary search."""

    def __init__(self) -> None:
        self._starts: List[int] = []
        self._ends: List[int] = []

    def overlaps(self, start: int, end: int) -> bool:
        i = bisect.bisect_left(self._starts, end)  # spans starting before ``end``
        return i > 0 and self._ends[i - 1] > start  # disjoint and ordered: the last reaches furthest

    def add(self, start: int, end: int) -> None:
        i = bisect.bisect_left(self._starts, start)
        self._starts.insert(i, start)
        self._ends.insert(i, end)
