"""A parsed thresholds file, and what it sets for each scope of a run of one model.

:class:`Thresholds` answers every question the gates ask - the limits of a scope, the tolerance
of a metric's change, the paired test's confidence, the overall figure, the line of the file
that set a value - through the one order of :func:`~defan_pytest.gates.thresholds.precedence.precedence`.
"""
from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from defan_pytest.dataset import reader
from defan_pytest.gates.thresholds.keys import DEFAULT_CONFIDENCE, DEFAULT_MAX_ERROR_RATE, ERROR_RATE_KEY
from defan_pytest.gates.thresholds.limits import NO_LIMITS, Limits
from defan_pytest.gates.thresholds.precedence import Layer, precedence
from defan_pytest.gates.thresholds.tables import EMPTY_SECTION, Section
from defan_pytest.gates.thresholds.text import line_of_key
from defan_pytest.metrics.registry import METRICS
from defan_pytest.metrics.summary import OVERALL

__all__ = ["Thresholds"]

T = TypeVar("T")

# The largest file whose lines are looked up (as parse.MAX_FILE_BYTES, which read it first).
MAX_LINES_BYTES = 4 * 1024 * 1024


def _empty_models() -> Mapping[str, Section]:
    return {}


@dataclass(frozen=True)
class Thresholds:
    """A parsed thresholds file, with one model's overrides selected (or none).

    ``source`` is the file the thresholds came from (``None`` for an absent optional file).
    ``base`` is the top level of the file, ``models`` every ``[models.<name>]`` table, and
    ``model`` the name whose overrides apply (``dataclasses.replace(t, model=...)`` judges
    another model with the same file; a model without a table of its own gets the top level's).
    """

    source: str | None = None
    base: Section = EMPTY_SECTION
    models: Mapping[str, Section] = field(default_factory=_empty_models)
    model: str | None = None

    @classmethod
    def empty(cls, model: str | None = None) -> Thresholds:
        """Thresholds that set nothing (the gate then judges nothing)."""
        return cls(model=model)

    @property
    def is_empty(self) -> bool:
        """True when the file sets nothing at all (no limit in any table, no model table)."""
        return self.base.is_empty and not self.models

    @property
    def sets_limits(self) -> bool:
        """True when some table of the file, a model's included, sets a limit: a file that
        sets none lets the gate judge nothing."""
        return self.base.sets_limits or any(m.sets_limits for m in self.models.values())

    @property
    def model_names(self) -> tuple[str, ...]:
        """The names of the ``[models.<name>]`` tables, in file order."""
        return tuple(self.models)

    def model_params(self, name: str | None = None) -> dict[str, Any]:
        """The call parameters of ``[models.<name>]`` (default: the selected model) as a new
        dict; ``{}`` when there is no such table. Nested tables (``litellm``) are copied too, so
        a caller may change the result freely."""
        key = self.model if name is None else name
        if key is None or key not in self.models:
            return {}
        return copy.deepcopy(dict(self.models[key].params))

    # -- the precedence ----------------------------------------------------------------------

    def _layers(self, scope: str) -> list[tuple[Layer, Section]]:
        """Each layer of ``scope`` with its section, lowest precedence first."""
        model_section = EMPTY_SECTION if self.model is None else self.models.get(self.model, EMPTY_SECTION)
        return [(layer, model_section if layer.is_model else self.base)
                for layer in precedence(scope, self.model)]

    def _winner(self, scope: str, read: Callable[[Layer, Section], T | None]) -> tuple[Layer, T] | None:
        """The layer of highest precedence for which ``read`` gives a value, with the value."""
        found: tuple[Layer, T] | None = None
        for layer, section in self._layers(scope):
            value = read(layer, section)
            if value is not None:
                found = (layer, value)
        return found

    # -- the level gate ----------------------------------------------------------------------

    def limits(self, scope: str) -> Limits:
        """The limits of ``scope`` (a domain or ``"overall"``): per key, the layer of highest
        precedence that sets it."""
        merged = NO_LIMITS
        for layer, section in self._layers(scope):
            merged = section.limits_of(layer.scope).over(merged)
        if merged.get(ERROR_RATE_KEY) is None:
            # No silent pass: a run whose calls fail is never judged on its other figures
            # alone (they leave the failed calls out), nor passed for want of a file.
            merged = merged.over(Limits(**{ERROR_RATE_KEY: DEFAULT_MAX_ERROR_RATE}))
        return merged

    def describe(self, scopes: Sequence[str]) -> str:
        """What judges ``scopes``, for the run's header: the file, and where the built-in
        ``max_error_rate`` applies (every scope, without a file)."""
        default = f"max_error_rate {DEFAULT_MAX_ERROR_RATE:g}"
        if self.source is None:
            return (f"no thresholds file: only the call-error rate is judged (built-in {default}); "
                    "no FCH, PMH or RC limit is set (see --defan-thresholds)")
        builtin = [s for s in scopes if self.builtin(s, ERROR_RATE_KEY)]
        if not builtin:
            return self.source
        where = "every scope" if len(builtin) == len(scopes) else ", ".join(builtin)
        return f"{self.source} (and the built-in {default} for {where}: the file sets none)"

    def builtin(self, scope: str, key: str) -> bool:
        """Whether ``key``'s limit for ``scope`` is the built-in default (no table sets it)."""
        return key == ERROR_RATE_KEY and self.table_of(scope, key) is None

    def for_domain(self, domain: str) -> Limits:
        """The limits for ``domain``: model override > domain > defaults, per key."""
        return self.limits(domain)

    def for_overall(self) -> Limits:
        """The limits for the overall figure: model override > ``[overall]`` > defaults."""
        return self.limits(OVERALL)

    @property
    def overall_figure(self) -> str:
        """Which overall figure the gate judges: ``"mean"`` (the default, as the paper reports
        it) or ``"pooled"``; a model's ``[overall] figure`` overrides the top-level one."""
        found = self._winner(OVERALL, lambda layer, section: section.figure if layer.scope else None)
        return "mean" if found is None else found[1]

    def table_of(self, scope: str, key: str) -> tuple[str, ...] | None:
        """The table that sets ``key`` for ``scope`` (a domain or ``"overall"``), as a key path
        (``("models", "my-rag", "domains", "nobel")``), or ``None`` when no table sets it."""
        found = self._winner(scope, lambda layer, section: section.limits_of(layer.scope).get(key))
        return None if found is None else found[0].limits_path

    def line_of(self, scope: str, key: str) -> int | None:
        """The 1-based line of the file where ``key`` is set for ``scope`` (the header of its
        table when the key itself cannot be found), or ``None``."""
        table = self.table_of(scope, key)
        return None if table is None else self._line(table, key)

    # -- the regression gate -----------------------------------------------------------------

    def regression_confidence(self) -> float:
        """The confidence of the regression gate's paired test: the model's ``[regression]``,
        else the top level's, else :data:`~defan_pytest.gates.thresholds.keys.DEFAULT_CONFIDENCE`."""
        found = self._winner(OVERALL, lambda layer, section: None if layer.scope else section.regression.confidence)
        return DEFAULT_CONFIDENCE if found is None else found[1]

    def regression_noise(self) -> str:
        """What the model's own noise is made of where no repeat measured it (``[regression]
        noise``): ``"answer"`` (each call its own draw; the default) or ``"question"`` (a
        question's paraphrases share it); a model's table overrides the top level's."""
        found = self._winner(OVERALL, lambda layer, section: None if layer.scope else section.regression.noise)
        return "answer" if found is None else str(found[1])

    def _tolerance(self, scope: str, metric: str) -> tuple[Layer, float] | None:
        return self._winner(scope, lambda layer, section: section.regression.tolerances_of(layer.scope).get(metric))

    def tolerance(self, scope: str, metric: str) -> float | None:
        """The largest change for the worse of ``metric`` in ``scope`` (a domain or
        ``"overall"``) that is not a regression; ``None``: the metric's change is not judged.
        The layer of highest precedence that sets it, else the metric's
        :attr:`~defan_pytest.metrics.registry.Metric.default_tolerance`."""
        found = self._tolerance(scope, metric)
        if found is not None:
            return found[1]
        return METRICS[metric].default_tolerance if metric in METRICS else None

    def tolerance_line(self, scope: str, metric: str) -> int | None:
        """The 1-based line of the file that sets ``metric``'s tolerance for ``scope`` (when
        only the default applies, the top level's ``[regression] confidence`` or the table's
        header), or ``None``."""
        found = self._tolerance(scope, metric)
        if found is None:
            return self._line(("regression",), "confidence")
        return self._line(found[0].tolerances_path, METRICS[metric].tolerance_key)

    def _line(self, table: tuple[str, ...], key: str) -> int | None:
        if self.source is None:
            return None
        try:
            text = reader.read_bytes(self.source, limit=MAX_LINES_BYTES).decode("utf-8-sig")
        except (reader.InputError, UnicodeDecodeError):
            return None
        return line_of_key(text, table, key)
