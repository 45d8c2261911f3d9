"""The keys a thresholds file may hold, derived from the metric registry when they are read.

Every metric of :data:`defan_pytest.metrics.registry.METRICS` has a limit key (``max_<name>``
when lower is better, ``min_<name>`` when higher is better); every metric the regression gate
compares (one that declares :attr:`~defan_pytest.metrics.registry.Metric.paired`) has a
``[regression]`` tolerance key (``max_<name>_rise`` / ``max_<name>_drop``). They are read from the
registry each time, so a metric registered by a plugin after this module was imported has its
keys too.
"""
from __future__ import annotations

from typing import Any

from defan_pytest.metrics.registry import METRICS

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_MAX_ERROR_RATE",
    "DEFAULT_MIN_SHARED_GROUPS",
    "ERROR_RATE_KEY",
    "FIGURES",
    "MIN_SAMPLES",
    "is_number",
    "limit_keys",
    "rate_keys",
    "tolerance_keys",
    "uncompared_tolerance_keys",
]

#: The one limit key that is not a metric's: the least number of paraphrase groups a figure needs.
MIN_SAMPLES = "min_samples"

#: The overall figures the gate can judge (``[overall] figure = ...``).
FIGURES: tuple[str, ...] = ("mean", "pooled")

#: The confidence of the regression gate's paired test when ``[regression] confidence`` is not set.
DEFAULT_CONFIDENCE = 0.95

#: The call-error rate's limit of every scope whose tables set none, also without a thresholds
#: file: the other figures leave failed calls out, so a run of failed calls would otherwise
#: pass unjudged (the shipped thresholds.toml sets the same value).
ERROR_RATE_KEY = "max_error_rate"
DEFAULT_MAX_ERROR_RATE = 0.05

#: The paraphrase groups two runs must share in a scope before the regression gate judges it,
#: when the scope's ``min_samples`` is not set.
DEFAULT_MIN_SHARED_GROUPS = 5


def is_number(value: Any) -> bool:
    """A TOML integer or float (``bool`` is an ``int`` subclass, but ``max_fch = true`` is a
    mistake, not 1.0)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def rate_keys() -> tuple[str, ...]:
    """Threshold keys holding a rate in [0, 1], one per registered metric in registration order
    (``max_*`` upper limits, ``min_*`` lower limits): ``("max_fch", "max_pmh", "min_rc",
    "max_error_rate")`` for the built-in metrics."""
    return tuple(metric.threshold_key for metric in METRICS.values())


def limit_keys() -> tuple[str, ...]:
    """Every key a threshold table may hold, in the order error messages list them: the
    :func:`rate_keys`, then ``min_samples``."""
    return (*rate_keys(), MIN_SAMPLES)


def tolerance_keys() -> dict[str, str]:
    """``{key: metric name}`` of the ``[regression]`` key of every metric the regression gate
    compares, in registration order."""
    return {metric.tolerance_key: metric.name for metric in METRICS.values() if metric.compared}


def uncompared_tolerance_keys() -> dict[str, str]:
    """``{key: metric name}`` of the ``[regression]`` keys registered metrics would have if the
    regression gate compared them (they declare no ``paired``): named in their own message."""
    return {metric.tolerance_key: metric.name for metric in METRICS.values() if not metric.compared}
