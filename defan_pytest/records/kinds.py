"""What kind of failure a call error is, in one place: :func:`error_kind` and the counts of a
run's errors by kind (:func:`error_kinds`)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

__all__ = ["ErrorKinds", "error_kind", "error_kinds"]


def error_kind(error: Optional[str]) -> Optional[str]:
    """The kind of a call error, for grouping: its exception class (``RateLimitError``), or the
    message's first words when it names none; ``None`` for no error."""
    if not error:
        return None
    head = error.split(":", 1)[0].strip()
    head = head.split(" (HTTP", 1)[0].strip()
    return head[:80] or "error"


@dataclass(frozen=True)
class ErrorKinds:
    """The call errors of a run by kind: ``counts`` (kind -> how many, in the order first met)
    and ``examples`` (kind -> its first error message)."""

    counts: Mapping[str, int]
    examples: Mapping[str, str]

    @property
    def total(self) -> int:
        """Every call error counted."""
        return sum(self.counts.values())

    def most_common(self, limit: int) -> List[Tuple[str, int, str]]:
        """At most ``limit`` kinds, the most frequent first (then by name): (kind, count,
        first message)."""
        ranked = sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
        return [(kind, n, self.examples[kind]) for kind, n in ranked]


def error_kinds(errors: Iterable[Optional[str]]) -> ErrorKinds:
    """Count call errors (``None`` and empty messages are no error) by :func:`error_kind`."""
    counts: Dict[str, int] = {}
    examples: Dict[str, str] = {}
    for error in errors:
        kind = error_kind(error)
        if kind is not None and error is not None:
            counts[kind] = counts.get(kind, 0) + 1
            examples.setdefault(kind, error)
    return ErrorKinds(counts, examples)
