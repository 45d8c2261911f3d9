"""Where a process stands in a run (:class:`Worker`), as the front end tells the run."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Worker"]


@dataclass(frozen=True)
class Worker:
    """Where this process stands in a run: ``shared`` when several processes (xdist) split the
    calls through the cache; ``id`` and ``count`` of an xdist worker (``main`` otherwise)."""

    shared: bool = False
    id: str = "main"
    count: int = 1
    is_worker: bool = False

    @property
    def offset_index(self) -> int:
        """The worker's number (``gw3`` -> 3), 0 for anything else."""
        return int(self.id[2:]) if self.id.startswith("gw") and self.id[2:].isdigit() else 0
