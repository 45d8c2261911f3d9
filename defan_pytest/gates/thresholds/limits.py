"""The limits that apply to one scope of the gate (a domain, or the overall figure)."""
from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import FrozenInstanceError
from typing import Any, NoReturn

from defan_pytest.gates.thresholds.keys import MIN_SAMPLES, is_number, limit_keys, rate_keys

__all__ = ["NO_LIMITS", "Limits"]


def _ordered(values: Mapping[str, float | int]) -> dict[str, float | int]:
    """``values`` in the order of :func:`limit_keys`; keys of a metric unregistered since come
    last, in their own order."""
    keys = limit_keys()
    known = [key for key in keys if key in values]
    return {key: values[key] for key in (*known, *(k for k in values if k not in keys))}


class Limits:
    """The limits that apply to one scope (a domain, or the overall figure).

    One optional limit per registered metric, under its threshold key (``max_fch``, ``min_rc``,
    ... see :attr:`defan_pytest.metrics.registry.Metric.threshold_key`), plus ``min_samples``. A key that
    is not set means "nothing is checked". Rates are in [0, 1]; a ``max_*`` limit passes when the
    figure is ``<=`` it, a ``min_*`` limit when the figure is ``>=`` it.

    Build with keywords, ``Limits(max_fch=0.35, min_samples=30)`` (``None`` counts as not set);
    read ``limits.max_fch`` (``None`` when not set) or ``limits.get(key)``. Limits are immutable,
    hashable and compare equal when they set the same keys to the same values.
    """

    __slots__ = ("_values",)
    _values: Mapping[str, float | int]

    def __init__(self, **limits: float | int | None) -> None:
        allowed = limit_keys()
        values: dict[str, float | int] = {}
        for key, value in limits.items():
            if key not in allowed:
                raise TypeError(f"Limits got an unknown key {key!r}; allowed: {', '.join(allowed)}")
            if value is None:
                continue
            if key == MIN_SAMPLES:
                if not isinstance(value, int) or isinstance(value, bool):
                    raise TypeError(f"Limits: min_samples must be an integer, got {value!r}")
                values[key] = value
            elif is_number(value):
                values[key] = float(value)
            else:
                raise TypeError(f"Limits: {key} must be a number, got {value!r}")
        object.__setattr__(self, "_values", types.MappingProxyType(_ordered(values)))

    @classmethod
    def _of(cls, values: Mapping[str, float | int]) -> Limits:
        """Limits holding ``values`` as they are: no key check, for values that were already
        accepted once (merging, unpickling), perhaps under a metric unregistered since."""
        made = cls.__new__(cls)
        object.__setattr__(made, "_values", types.MappingProxyType(_ordered(values)))
        return made

    def __getattr__(self, name: str) -> float | None:
        # Only called when normal lookup fails: ``limits.max_fch`` and the like.
        if name.startswith("_"):
            # Never look a private name up in _values: during unpickling or copying _values
            # may not be set yet, and asking for it here would recurse.
            raise AttributeError(name)
        if name in self._values:
            return float(self._values[name])
        if name in rate_keys():
            return None
        raise AttributeError(
            f"{type(self).__name__!r} object has no attribute {name!r}; "
            f"limit keys: {', '.join(limit_keys())}"
        )

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> NoReturn:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Limits):
            return NotImplemented
        return dict(self._values) == dict(other._values)

    def __hash__(self) -> int:
        return hash(frozenset(self._values.items()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{key}={value!r}" for key, value in self._values.items())
        return f"{type(self).__name__}({inner})"

    def __reduce__(self) -> tuple[Any, ...]:
        # The default protocol would restore _values through __setattr__, which refuses.
        return (Limits._of, (dict(self._values),))

    @property
    def min_samples(self) -> int | None:
        """The least number of responses a figure needs to be judged, ``None`` when not set."""
        value = self._values.get(MIN_SAMPLES)
        return None if value is None else int(value)

    def get(self, key: str) -> float | int | None:
        """The limit set for ``key`` (a threshold key or ``min_samples``), ``None`` when not set."""
        return self._values.get(key)

    def over(self, base: Limits) -> Limits:
        """These limits laid over ``base``: per key, a value set here wins."""
        if not self._values:
            return base
        return Limits._of({**base._values, **self._values})

    @property
    def is_empty(self) -> bool:
        """True when no key is set."""
        return not self._values

    def as_dict(self) -> dict[str, float | int]:
        """The keys that are set, as in the file (``{"max_fch": 0.35, ...}``)."""
        return dict(self._values)


#: Limits that set nothing.
NO_LIMITS = Limits()
