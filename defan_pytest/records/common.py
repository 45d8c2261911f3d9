"""What the typed records share: their JSON's type, and the keys of a record this version does
not know (kept, and written back after the known ones)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Dict

__all__ = ["Json", "extra_of"]

Json = Dict[str, Any]


def extra_of(data: Mapping[str, Any], known: Iterable[str]) -> Json:
    """The keys of ``data`` that are not ``known``, in their order."""
    names = set(known)
    return {k: v for k, v in data.items() if k not in names}
