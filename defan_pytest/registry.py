"""One registry helper for every extension point: answer types, metrics, model backends and
report formats (the base layer: imports nothing of the package but its errors).

A :class:`Registry` is strict and typed: an unknown name fails with the list of valid ones, a
name is registered once, the built-in entries cannot be removed, and :meth:`Registry.snapshot`
/ :meth:`Registry.restore` let a test session leave it as it found it.  Third-party packages
add entries through the ``defan_pytest`` entry-point group: an entry point named
``<kind>.<anything>`` (``type.colour``, ``metric.abstention``, ``backend.bedrock``,
``format.csv``) whose object is the entry itself, or a callable returning it; they are loaded
once, the first time a registry of that kind is read.

>>> colours = Registry("colour", lambda c: isinstance(c, str) or "not a string", key=str.lower)
>>> colours.register("Red")
'Red'
>>> colours.get("blue")
Traceback (most recent call last):
...
defan_pytest.registry.UnknownEntry: unknown colour 'blue'; allowed: red
"""
from __future__ import annotations

import threading
from importlib import metadata
from typing import Any, Callable, Dict, Generic, Iterator, List, Optional, Tuple, TypeVar, Union

from defan_pytest.errors import DefanError

__all__ = ["ENTRY_POINT_GROUP", "Registry", "RegistryError", "UnknownEntry"]

#: The entry-point group third-party packages register extensions in.
ENTRY_POINT_GROUP = "defan_pytest"

T = TypeVar("T")
#: A check of a new entry: ``True`` (or ``None``) when it is acceptable, else the reason.
Check = Callable[[Any], Union[bool, str, None]]


class RegistryError(DefanError):
    """An entry that cannot be registered or removed (a taken name, a wrong kind of object)."""


class UnknownEntry(RegistryError):
    """A name that is not registered; the message lists the registered ones."""


class Registry(Generic[T]):
    """Named entries of one kind, in registration order (built-in ones first).

    ``kind`` names the entries in messages (``"answer type"``); ``check`` validates a new
    entry; ``key`` gives an entry's name (by default its ``name`` attribute).  ``on_change``
    is called after every registration or removal (a cache to drop).  ``entry_point_prefix``
    (``"type"``) names the entry points of :data:`ENTRY_POINT_GROUP` that add entries; without
    one, none are loaded.  ``unknown`` is the error :meth:`get` raises (a subclass of
    :class:`UnknownEntry` that callers of one registry catch).
    """

    def __init__(
        self,
        kind: str,
        check: Optional[Check] = None,
        *,
        key: Callable[[T], str] = lambda entry: getattr(entry, "name"),
        on_change: Optional[Callable[[], None]] = None,
        entry_point_prefix: Optional[str] = None,
        unknown: type[UnknownEntry] = UnknownEntry,
    ) -> None:
        self.kind = kind
        self._check = check
        self._key = key
        self._on_change = on_change
        self._unknown = unknown
        self._entries: Dict[str, T] = {}
        self._built_in: Tuple[str, ...] = ()
        self._lock = threading.RLock()
        self._prefix = entry_point_prefix
        self._plugins_loaded = entry_point_prefix is None

    # -- registration ----------------------------------------------------------------------

    def register(self, entry: T) -> T:
        """Add ``entry`` (returned, so that it can decorate); a taken name is an error."""
        name = self._key(entry)
        if not isinstance(name, str) or not name:
            raise RegistryError(f"{self.kind} {entry!r}: its name must be a non-empty string")
        if self._check is not None:
            verdict = self._check(entry)
            if verdict is not True and verdict is not None:
                raise RegistryError(f"{self.kind} {name!r}: {verdict or 'not acceptable'}")
        with self._lock:
            if name in self._entries:
                raise RegistryError(f"{self.kind} {name!r} is already registered")
            self._entries[name] = entry
        self._changed()
        return entry

    def unregister(self, name: str) -> None:
        """Remove an entry added by :meth:`register` (built-in entries stay; unknown: nothing)."""
        if name in self._built_in:
            raise RegistryError(f"{self.kind} {name!r} is built in and cannot be removed")
        with self._lock:
            removed = self._entries.pop(name, None)
        if removed is not None:
            self._changed()

    def seal_built_ins(self) -> None:
        """Mark every entry registered so far as built in (called once by the owning module)."""
        self._built_in = tuple(self._entries)

    # -- reading ---------------------------------------------------------------------------

    def get(self, name: str) -> T:
        """The entry called ``name``; an :class:`UnknownEntry` (the registry's ``unknown``) lists
        the valid names."""
        self._load_plugins()
        try:
            return self._entries[name]
        except KeyError:
            raise self._unknown(f"unknown {self.kind} {name!r}; allowed: {', '.join(self._entries)}") from None

    def names(self) -> Tuple[str, ...]:
        """The registered names, built-in ones first, in registration order."""
        self._load_plugins()
        return tuple(self._entries)

    def values(self) -> Tuple[T, ...]:
        """The registered entries, in registration order."""
        self._load_plugins()
        return tuple(self._entries.values())

    def __contains__(self, name: object) -> bool:
        self._load_plugins()
        return name in self._entries

    def __iter__(self) -> Iterator[T]:
        return iter(self.values())

    def __len__(self) -> int:
        return len(self.values())

    # -- tests -----------------------------------------------------------------------------

    def snapshot(self) -> Dict[str, T]:
        """The entries as they are now (for :meth:`restore`)."""
        with self._lock:
            return dict(self._entries)

    def restore(self, snapshot: Dict[str, T]) -> None:
        """Put the entries back as :meth:`snapshot` found them (a test's registrations go)."""
        with self._lock:
            if snapshot == self._entries:
                return
            self._entries = dict(snapshot)
        self._changed()

    # -- internals -------------------------------------------------------------------------

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change()

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        with self._lock:
            if self._plugins_loaded:
                return
            self._plugins_loaded = True  # first: an entry point that reads this registry
            problems: List[str] = []
            for ep in _entry_points(f"{self._prefix}."):
                try:
                    obj = ep.load()
                    entry = obj() if callable(obj) and not _is_entry(obj, self._check) else obj
                    if self._key(entry) not in self._entries:
                        self.register(entry)
                except Exception as exc:  # a broken third-party package: say which
                    problems.append(f"entry point {ep.name!r} ({ep.value}): {type(exc).__name__}: {exc}")
            if problems:
                raise RegistryError(f"{self.kind}: " + "; ".join(problems))


def _is_entry(obj: Any, check: Optional[Check]) -> bool:
    if check is None:
        return False
    try:
        verdict = check(obj)
    except Exception:
        return False
    return verdict is True or verdict is None


def _entry_points(prefix: str) -> List[Any]:
    """The entry points of :data:`ENTRY_POINT_GROUP` whose name starts with ``prefix``."""
    found = metadata.entry_points(group=ENTRY_POINT_GROUP)  # Python >= 3.10: selectable
    return sorted((ep for ep in found if ep.name.startswith(prefix)), key=lambda ep: ep.name)
