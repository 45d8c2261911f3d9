"""The parsed tables of a thresholds file: one :class:`Section` for the top level and one per
``[models.<name>]`` table, each with its :class:`RegressionTable`."""
from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from defan_pytest.gates.thresholds.limits import NO_LIMITS, Limits
from defan_pytest.metrics.summary import OVERALL

__all__ = ["EMPTY_SECTION", "NO_REGRESSION", "RegressionTable", "Section"]


def _empty_mapping() -> Mapping[str, Any]:
    return types.MappingProxyType({})


@dataclass(frozen=True)
class RegressionTable:
    """One ``[regression]`` table (of the top level or of a model): the paired test's
    ``confidence``, what the model's own ``noise`` is made of (``"answer"`` or ``"question"``)
    and the tolerances (by metric name) for every scope, each domain and the overall figure.
    Unset values are absent."""

    confidence: float | None = None
    noise: str | None = None
    defaults: Mapping[str, float] = field(default_factory=_empty_mapping)
    domains: Mapping[str, Mapping[str, float]] = field(default_factory=_empty_mapping)
    overall: Mapping[str, float] = field(default_factory=_empty_mapping)

    @property
    def is_empty(self) -> bool:
        """True when the table sets nothing."""
        return self.confidence is None and self.noise is None and not self.defaults and not self.overall and not any(self.domains.values())

    def tolerances_of(self, scope: tuple[str, ...] | None) -> Mapping[str, float]:
        """The tolerances of one :class:`~defan_pytest.gates.thresholds.precedence.Layer`'s
        scope: the defaults (``None``), ``("domains", <d>)`` or ``("overall",)``."""
        if scope is None:
            return self.defaults
        if scope == (OVERALL,):
            return self.overall
        return self.domains.get(scope[-1], _empty_mapping())


#: A ``[regression]`` table that sets nothing.
NO_REGRESSION = RegressionTable()


@dataclass(frozen=True)
class Section:
    """One set of ``defaults`` / ``domains`` / ``overall`` / ``regression`` tables: the top level
    of the file, or one ``[models.<name>]`` table (which also carries the model's call
    ``params``).

    ``figure`` is the ``[overall] figure`` setting, ``None`` when not given.
    """

    defaults: Limits = NO_LIMITS
    domains: Mapping[str, Limits] = field(default_factory=_empty_mapping)
    overall: Limits = NO_LIMITS
    figure: str | None = None
    params: Mapping[str, Any] = field(default_factory=_empty_mapping)
    regression: RegressionTable = NO_REGRESSION

    def limits_of(self, scope: tuple[str, ...] | None) -> Limits:
        """The limits of one :class:`~defan_pytest.gates.thresholds.precedence.Layer`'s scope:
        the defaults (``None``), ``("domains", <d>)`` or ``("overall",)``."""
        if scope is None:
            return self.defaults
        if scope == (OVERALL,):
            return self.overall
        return self.domains.get(scope[-1], NO_LIMITS)

    @property
    def sets_limits(self) -> bool:
        """True when the section sets at least one limit (a figure or a parameter is none)."""
        return not (
            self.defaults.is_empty
            and self.overall.is_empty
            and all(lim.is_empty for lim in self.domains.values())
        )

    @property
    def is_empty(self) -> bool:
        """True when the section sets no limit, figure, parameter or regression setting."""
        return not self.sets_limits and self.figure is None and not self.params and self.regression.is_empty


#: A section that sets nothing (a model without a table of its own).
EMPTY_SECTION = Section()
