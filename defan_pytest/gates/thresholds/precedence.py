"""Which tables of a thresholds file can set a limit or a tolerance of a scope, and which wins.

Per key, lowest precedence first: the section's defaults (``[defaults]``; ``[regression]`` for a
tolerance), the scope's own table (``[domains.<d>]`` or ``[overall]``;
``[regression.domains.<d>]`` or ``[regression.overall]``), then the same two of the run's model
(``[models.<m>.defaults]``, ``[models.<m>.domains.<d>]``, ...). A model section therefore
overrides everything at the top level: it describes a different system under test, whose limits
are chosen for that system. :func:`precedence` is the one place that says so; every limit,
tolerance, confidence, overall figure and line number is resolved through it.

>>> [layer.limits_path for layer in precedence("nobel", "my-rag")]
[('defaults',), ('domains', 'nobel'), ('models', 'my-rag', 'defaults'), ('models', 'my-rag', 'domains', 'nobel')]
>>> [layer.tolerances_path for layer in precedence("overall", None)]
[('regression',), ('regression', 'overall')]
"""
from __future__ import annotations

from dataclasses import dataclass

from defan_pytest.metrics.summary import OVERALL

__all__ = ["Layer", "precedence"]


@dataclass(frozen=True)
class Layer:
    """One level of the precedence: ``section`` is the key path of its section (``()`` for the
    top level, ``("models", <name>)`` for the run's model), ``scope`` the scope's own table in
    it (``("domains", <d>)`` or ``("overall",)``), or ``None`` for the section's defaults."""

    section: tuple[str, ...]
    scope: tuple[str, ...] | None

    @property
    def is_model(self) -> bool:
        """Whether the layer is in the run's model's section."""
        return bool(self.section)

    @property
    def limits_path(self) -> tuple[str, ...]:
        """The key path of the table holding this layer's limits (``("domains", "nobel")``)."""
        return (*self.section, *(self.scope or ("defaults",)))

    @property
    def tolerances_path(self) -> tuple[str, ...]:
        """The key path of the table holding this layer's tolerances
        (``("regression", "domains", "nobel")``)."""
        return (*self.section, "regression", *(self.scope or ()))


def precedence(scope: str, model: str | None) -> tuple[Layer, ...]:
    """The layers that can set a value for ``scope`` (a domain, or ``"overall"``), lowest
    precedence first: the top level's defaults and scope table, then, when ``model`` is given,
    the model's."""
    own = (OVERALL,) if scope == OVERALL else ("domains", scope)
    sections: tuple[tuple[str, ...], ...] = ((),) if model is None else ((), ("models", model))
    return tuple(Layer(section, part) for section in sections for part in (None, own))
