"""Reading and validating a ``thresholds.toml`` file.

A thresholds file says how bad a model may be before the DefAn gate fails a run::

    [defaults]            # every domain and the overall figure, unless overridden
    max_fch = 0.60
    max_pmh = 0.50
    min_rc = 0.30
    max_error_rate = 0.02
    min_samples = 30

    [domains.nobel]       # one domain
    max_fch = 0.35

    [overall]             # the overall figure; figure = "mean" (default) or "pooled"
    max_fch = 0.55

    [models."my-rag"]     # per-model overrides: the same defaults/domains/overall tables, plus
    temperature = 0.0     # model call parameters that the model registry interprets
    [models."my-rag".domains.nobel]
    max_fch = 0.20

    [regression]          # the regression gate (--defan-baseline): paired test's confidence
    confidence = 0.95     # and the largest change for the worse that is not a regression
    max_fch_rise = 0.02
    [regression.domains.nobel]
    max_fch_rise = 0.01   # also [regression.overall] and [models."my-rag".regression...]

The limit keys are not a fixed list: every metric of :data:`defan_pytest.metrics.summary.METRICS` has
one (``max_<name>`` when lower is better, ``min_<name>`` when higher is better), read from the
registry when a file is parsed, so a metric registered by a plugin can be limited like FCH.

The file is validated as a whole and every problem is reported in one :class:`ThresholdsError`,
each naming the file and the dotted key (``thresholds.toml: domains.nobl: unknown domain; ...``),
so a user fixes the file in one pass instead of one error per run.

Precedence, per key, lowest first: ``[defaults]``, ``[domains.<d>]`` (or ``[overall]``),
``[models.<m>.defaults]``, ``[models.<m>.domains.<d>]`` (or ``[models.<m>.overall]``). A model
section therefore overrides everything at the top level: it describes a different system under
test, whose limits are chosen for that system.

Two mistakes that would otherwise judge a run by the wrong limits without a word are errors:

* a file named explicitly (``--defan-thresholds``) that sets no limit at all;
* a ``[models."<name>"]`` table whose name looks like a typo (:func:`model_table_typos`): when
  the run's model is a registered callable or has a table, a table within two edits (letters
  inserted, deleted, replaced or swapped, ignoring case) of the run's model or of a registered
  model, that names no model itself (not registered, no ``model`` key, not a litellm model
  string) gets "did you mean ...?".
"""
from __future__ import annotations

import copy
import math
import os
import re
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import FrozenInstanceError, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Union

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

from defan_pytest.dataset import DOMAINS
from defan_pytest.errors import DefanError, format_problems, type_name
from defan_pytest.metrics.summary import METRICS

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_TOLERANCES",
    "RegressionTable",
    "tolerance_key",
    "tolerance_keys",
    "FIGURES",
    "LIMIT_KEYS",
    "MIN_SAMPLES",
    "MODEL_PARAM_KEYS",
    "RATE_KEYS",
    "Limits",
    "Section",
    "Thresholds",
    "ThresholdsError",
    "limit_keys",
    "load_thresholds",
    "model_table_typos",
    "parse_thresholds",
    "rate_keys",
    "read_toml",
]

StrPath = Union[str, "os.PathLike[str]"]

#: The one limit key that is not a metric's: the least number of responses a figure needs.
MIN_SAMPLES = "min_samples"


def rate_keys() -> tuple[str, ...]:
    """Threshold keys holding a rate in [0, 1], one per registered metric in registration order
    (``max_*`` upper limits, ``min_*`` lower limits): ``("max_fch", "max_pmh", "min_rc",
    "max_error_rate")`` for the built-in metrics."""
    return tuple(metric.threshold_key for metric in METRICS.values())


def limit_keys() -> tuple[str, ...]:
    """Every key a threshold table may hold, in the order error messages list them: the
    :func:`rate_keys`, then ``min_samples``."""
    return (*rate_keys(), MIN_SAMPLES)


# RATE_KEYS and LIMIT_KEYS were constants; they are now read from the registry on every access
# (PEP 562), so a metric registered after this module was imported is included. Type checkers
# see them as plain tuples; the module __getattr__ is hidden from them so a misspelt attribute
# of this module is still an error.
if TYPE_CHECKING:
    RATE_KEYS: tuple[str, ...]
    LIMIT_KEYS: tuple[str, ...]
else:

    def __getattr__(name: str) -> tuple[str, ...]:
        if name == "RATE_KEYS":
            return rate_keys()
        if name == "LIMIT_KEYS":
            return limit_keys()
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: How many edits apart a ``[models."<name>"]`` table and a model's name may be to count as a
#: typo (see :func:`model_table_typos`).
TYPO_EDITS = 2

#: How deeply a model's ``litellm`` table may nest (tables and arrays).
MAX_NESTING = 32

#: The overall figures the gate can judge (``[overall] figure = ...``).
FIGURES: tuple[str, ...] = ("mean", "pooled")

#: Model call parameters a ``[models.<name>]`` table may carry. They are only type-checked
#: here; the model registry gives them meaning.
MODEL_PARAM_KEYS: tuple[str, ...] = (
    "model",
    "api_base",
    "temperature",
    "max_tokens",
    "system_prompt",
    "timeout",
    "litellm",
    "version",
    "price_in",
    "price_out",
)

#: The regression gate's defaults (``[regression]``): the confidence of the paired test, and the
#: largest change for the worse that is not a regression, per metric.  The error rate is not
#: judged unless a tolerance is set for it: an outage is the level gate's business.
DEFAULT_CONFIDENCE = 0.95
DEFAULT_TOLERANCES: Mapping[str, float] = types.MappingProxyType({"fch": 0.02, "pmh": 0.02, "rc": 0.02})


def tolerance_key(metric_name: str) -> str:
    """The ``[regression]`` key of a metric: ``max_<name>_rise`` when lower is better (FCH,
    PMH, error rate), ``max_<name>_drop`` when higher is better (RC)."""
    metric = METRICS[metric_name]
    return f"max_{metric.name}_{'drop' if metric.higher_is_better else 'rise'}"


def tolerance_keys() -> dict[str, str]:
    """``{key: metric name}`` of every registered metric's ``[regression]`` key."""
    return {tolerance_key(name): name for name in METRICS}


# The tables of one section (the top level, or one model).
_SECTION_TABLES: tuple[str, ...] = ("defaults", "domains", "overall", "regression")
_TOP_LEVEL_KEYS: tuple[str, ...] = (*_SECTION_TABLES, "models")

# How each model parameter is checked: (accepted kind, wording for the error message).
_STRING = "string"
_NUMBER = "number"
_INTEGER = "integer"
_TABLE = "table"
_MODEL_PARAM_KINDS: Mapping[str, str] = types.MappingProxyType(
    {
        "model": _STRING,
        "api_base": _STRING,
        "temperature": _NUMBER,
        "max_tokens": _INTEGER,
        "system_prompt": _STRING,
        "timeout": _NUMBER,
        "litellm": _TABLE,
        # A string, not a number: TOML would read ``version = 1.10`` as the float 1.1.
        "version": _STRING,
        # USD per million prompt / completion tokens (usage, --defan-budget); never sent.
        "price_in": _NUMBER,
        "price_out": _NUMBER,
    }
)

# A key TOML accepts without quotes; anything else is shown quoted, as the user must write it.
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
# tomllib (3.11-3.13) and older tomli only put the position in the message text.
_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_TOML_AT_END = re.compile(r"\s*\(at end of document\)\s*$")


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


class ThresholdsError(DefanError):
    """A thresholds file is missing, unreadable, not TOML, or not a valid thresholds file.

    ``problems`` holds every individual problem (``"file: dotted.key: what"``); the message
    lists all of them, so one run shows everything that needs fixing.
    """


def _raise_problems(source: str, problems: list[str]) -> None:
    """Raise one ThresholdsError listing every problem (a no-op when there are none)."""
    if not problems:
        return
    if len(problems) == 1:
        raise ThresholdsError(problems[0], problems)
    raise ThresholdsError(format_problems(problems, source), problems)


# --------------------------------------------------------------------------------------------
# Data model
# --------------------------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    # bool is an int subclass; `max_fch = true` is a mistake, not 1.0.
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _ordered(values: Mapping[str, float | int]) -> dict[str, float | int]:
    """``values`` in the order of :func:`limit_keys`; keys of a metric unregistered since come
    last, in their own order."""
    keys = limit_keys()
    known = [key for key in keys if key in values]
    return {key: values[key] for key in (*known, *(k for k in values if k not in keys))}


class Limits:
    """The limits that apply to one scope (a domain, or the overall figure).

    One optional limit per registered metric, under its threshold key (``max_fch``, ``min_rc``,
    ... see :attr:`defan_pytest.metrics.summary.Metric.threshold_key`), plus ``min_samples``. A key that
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
            elif _is_number(value):
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

    def figure_limits(self) -> dict[str, float]:
        """The rate limits keyed by figure (``{"fch": 0.35, "rc": 0.3, ...}``), the shape
        :func:`defan_pytest.report.tables.format_table` takes to mark figures outside their limits."""
        out: dict[str, float] = {}
        for metric in METRICS.values():
            limit = self._values.get(metric.threshold_key)
            if limit is not None:
                out[metric.name] = float(limit)
        return out


_NO_LIMITS = Limits()


@dataclass(frozen=True)
class RegressionTable:
    """One ``[regression]`` table (of the top level or of a model): the paired test's
    ``confidence`` and the tolerances (by metric name) for every scope, each domain and the
    overall figure.  Unset values are absent."""

    confidence: float | None = None
    defaults: Mapping[str, float] = field(default_factory=lambda: types.MappingProxyType({}))
    domains: Mapping[str, Mapping[str, float]] = field(default_factory=lambda: types.MappingProxyType({}))
    overall: Mapping[str, float] = field(default_factory=lambda: types.MappingProxyType({}))

    @property
    def is_empty(self) -> bool:
        """True when the table sets nothing."""
        return self.confidence is None and not self.defaults and not self.overall and not any(self.domains.values())


_NO_REGRESSION = RegressionTable()


def _empty_mapping() -> Mapping[str, Any]:
    return types.MappingProxyType({})


@dataclass(frozen=True)
class Section:
    """One set of ``defaults`` / ``domains`` / ``overall`` tables: the top level of the file,
    or one ``[models.<name>]`` table (which also carries the model's call ``params``).

    ``figure`` is the ``[overall] figure`` setting, ``None`` when not given.
    """

    defaults: Limits = _NO_LIMITS
    domains: Mapping[str, Limits] = field(default_factory=_empty_mapping)
    overall: Limits = _NO_LIMITS
    figure: str | None = None
    params: Mapping[str, Any] = field(default_factory=_empty_mapping)
    regression: RegressionTable = _NO_REGRESSION

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
        """True when the section sets no limit, figure or parameter."""
        return (
            self.defaults.is_empty
            and self.overall.is_empty
            and all(lim.is_empty for lim in self.domains.values())
            and self.figure is None
            and not self.params
            and self.regression.is_empty
        )


_EMPTY_SECTION = Section()


@dataclass(frozen=True)
class Thresholds:
    """A parsed thresholds file, with one model's overrides selected (or none).

    ``source`` is the file the thresholds came from (``None`` for an absent optional file).
    ``base`` is the top level of the file, ``models`` every ``[models.<name>]`` table, and
    ``model`` the name whose overrides :meth:`for_domain` and :meth:`for_overall` apply.
    Use :meth:`with_model` to judge another model with the same file.
    """

    source: str | None = None
    base: Section = _EMPTY_SECTION
    models: Mapping[str, Section] = field(default_factory=_empty_mapping)
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

    def with_model(self, model: str | None) -> Thresholds:
        """The same file with ``model``'s overrides selected (``None``: no model overrides).

        A model without a ``[models.<name>]`` table is not an error: only some of the models a
        run judges need their own limits.
        """
        return replace(self, model=model)

    def _model_section(self) -> Section:
        if self.model is None:
            return _EMPTY_SECTION
        return self.models.get(self.model, _EMPTY_SECTION)

    def for_domain(self, domain: str) -> Limits:
        """The limits for ``domain``: model override > domain > defaults, per key."""
        m = self._model_section()
        layers = (
            self.base.defaults,
            self.base.domains.get(domain, _NO_LIMITS),
            m.defaults,
            m.domains.get(domain, _NO_LIMITS),
        )
        return _merge(layers)

    def for_overall(self) -> Limits:
        """The limits for the overall figure: model override > ``[overall]`` > defaults."""
        m = self._model_section()
        return _merge((self.base.defaults, self.base.overall, m.defaults, m.overall))

    def table_of(self, scope: str, key: str) -> tuple[str, ...] | None:
        """The table that sets ``key`` for ``scope`` (a domain or ``"overall"``), as a key path
        (``("models", "my-rag", "domains", "nobel")``), or ``None`` when no table sets it."""
        m = self._model_section()
        inner = ("overall",) if scope == "overall" else ("domains", scope)
        layers: list[tuple[tuple[str, ...], Limits]] = [
            (("defaults",), self.base.defaults),
            (inner, self.base.overall if scope == "overall" else self.base.domains.get(scope, _NO_LIMITS)),
        ]
        if self.model is not None:
            model_inner = m.overall if scope == "overall" else m.domains.get(scope, _NO_LIMITS)
            layers += [(("models", self.model, "defaults"), m.defaults), (("models", self.model, *inner), model_inner)]
        found = None
        for path, limits in layers:  # lowest precedence first: the last one that sets it wins
            if limits.get(key) is not None:
                found = path
        return found

    def line_of(self, scope: str, key: str) -> int | None:
        """The 1-based line of the file where ``key`` is set for ``scope`` (the header of its
        table when the key itself cannot be found), or ``None``."""
        table = self.table_of(scope, key)
        if table is None or self.source is None:
            return None
        try:
            text = Path(self.source).read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError):
            return None
        return _line_of_key(text, table, key)

    def regression_confidence(self) -> float:
        """The confidence of the regression gate's paired test: the model's ``[regression]``,
        else the top level's, else :data:`DEFAULT_CONFIDENCE`."""
        for table in (self._model_section().regression, self.base.regression):
            if table.confidence is not None:
                return table.confidence
        return DEFAULT_CONFIDENCE

    def _regression_layers(self, scope: str) -> list[tuple[tuple[str, ...], Mapping[str, float]]]:
        m = self._model_section().regression
        b = self.base.regression
        inner = ("overall",) if scope == "overall" else ("domains", scope)
        layers: list[tuple[tuple[str, ...], Mapping[str, float]]] = [
            (("regression",), b.defaults),
            (("regression", *inner), b.overall if scope == "overall" else b.domains.get(scope, {})),
        ]
        if self.model is not None:
            layers += [
                (("models", self.model, "regression"), m.defaults),
                (("models", self.model, "regression", *inner), m.overall if scope == "overall" else m.domains.get(scope, {})),
            ]
        return layers

    def tolerance(self, scope: str, metric: str) -> float | None:
        """The largest change for the worse of ``metric`` in ``scope`` (a domain or
        ``"overall"``) that is not a regression; ``None``: the metric's change is not judged.
        Most specific first: the model's ``[regression.domains.<d>]``, its ``[regression]``,
        the top level's ``[regression.domains.<d>]``, ``[regression]``, then
        :data:`DEFAULT_TOLERANCES`."""
        found: float | None = DEFAULT_TOLERANCES.get(metric)
        for _path, table in self._regression_layers(scope):
            if metric in table:
                found = table[metric]
        return found

    def tolerance_line(self, scope: str, metric: str) -> int | None:
        """The 1-based line of the file that sets ``metric``'s tolerance for ``scope`` (the
        ``[regression]`` header, or ``None`` when only the default applies)."""
        if self.source is None:
            return None
        table: tuple[str, ...] | None = None
        for path, values in self._regression_layers(scope):
            if metric in values:
                table = path
        try:
            text = Path(self.source).read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError):
            return None
        if table is None:
            return _line_of_key(text, ("regression",), "confidence")
        return _line_of_key(text, table, tolerance_key(metric))

    def regression_dict(self) -> dict[str, Any]:
        """The regression gate's settings for every scope, for the report."""
        return {"confidence": self.regression_confidence()}

    @property
    def overall_figure(self) -> str:
        """Which overall figure the gate judges: ``"mean"`` (the default, as the paper reports
        it) or ``"pooled"``; a model's ``[overall] figure`` overrides the top-level one."""
        return self._model_section().figure or self.base.figure or "mean"

    def model_params(self, name: str | None = None) -> dict[str, Any]:
        """The call parameters of ``[models.<name>]`` (default: the selected model) as a new
        dict; ``{}`` when there is no such table. Nested tables (``litellm``) are copied too, so
        a caller may change the result freely."""
        key = self.model if name is None else name
        if key is None or key not in self.models:
            return {}
        return copy.deepcopy(dict(self.models[key].params))


_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(?:#.*)?$")
_KEY_PART = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|\'([^\']*)\'|([A-Za-z0-9_-]+))\s*(?:\.|$)')


def _key_path(text: str) -> tuple[str, ...] | None:
    """A TOML dotted key (``models."my rag".domains``) as its parts, or None if unreadable."""
    parts: list[str] = []
    pos = 0
    while pos < len(text):
        m = _KEY_PART.match(text, pos)
        if not m or m.end() == pos:
            return None
        quoted, literal, bare = m.groups()
        parts.append(quoted.encode().decode("unicode_escape") if quoted is not None else literal if literal is not None else bare)
        pos = m.end()
    return tuple(parts)


def _line_of_key(text: str, table: tuple[str, ...], key: str) -> int | None:
    """Where ``key`` is set in ``[table]`` (1-based line), else the table's header line."""
    current: tuple[str, ...] | None = ()
    header: int | None = None
    assignment = re.compile(rf"^\s*(?:{re.escape(key)}|\"{re.escape(key)}\")\s*=")
    for number, line in enumerate(text.splitlines(), start=1):
        m = _HEADER.match(line)
        if m:
            current = _key_path(m.group(1))
            if current == table:
                header = number
            continue
        if current == table and assignment.match(line):
            return number
    return header


def _merge(layers: Iterable[Limits]) -> Limits:
    merged = _NO_LIMITS
    for layer in layers:
        merged = layer.over(merged)
    return merged


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


_TOML_ESCAPES = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_TOML_ESCAPED = re.compile('[\\\\"\x00-\x1f\x7f]')


def _toml_string(text: str) -> str:
    """``text`` as a TOML basic string, the way the user writes it: quotes, backslashes and
    control characters escaped (a key holding a newline stays on one line of a message)."""
    return '"' + _TOML_ESCAPED.sub(lambda m: _TOML_ESCAPES.get(m.group(), f"\\u{ord(m.group()):04x}"), text) + '"'


def _dotted(parts: Iterable[str]) -> str:
    """A key path as the user writes it in TOML: ``models."my rag".domains.nobel``."""
    return ".".join(part if _BARE_KEY.fullmatch(part) else _toml_string(part) for part in parts)


def _show(value: Any) -> str:
    """A value as it would appear in the file (strings quoted, booleans lower case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, (Mapping, list)):
        return ""
    return str(value)


def _got(value: Any) -> str:
    shown = _show(value)
    kind = type_name(value, toml=True)
    return f"got {kind} {shown}" if shown else f"got {kind}"


class _Checker:
    """Collects every problem of one file instead of stopping at the first."""

    def __init__(self, source: str, valid_domains: tuple[str, ...]) -> None:
        self.source = source
        self.valid_domains = valid_domains
        self.problems: list[str] = []

    def problem(self, path: Iterable[str], what: str) -> None:
        self.problems.append(f"{self.source}: {_dotted(path)}: {what}")

    def table(self, value: Any, path: tuple[str, ...]) -> Mapping[str, Any] | None:
        if isinstance(value, Mapping):
            return value
        self.problem(path, f"expected a table, {_got(value)}")
        return None

    def limits(
        self, value: Any, path: tuple[str, ...], allow_figure: bool
    ) -> tuple[Limits, str | None]:
        """Parse one threshold table; returns the limits found valid and the figure setting."""
        table = self.table(value, path)
        if table is None:
            return _NO_LIMITS, None
        # Read from the metric registry now, not at import: a metric registered by a plugin
        # after this module was loaded has its key too.
        rates = rate_keys()
        allowed = (*rates, MIN_SAMPLES, "figure") if allow_figure else (*rates, MIN_SAMPLES)
        found: dict[str, Any] = {}
        figure: str | None = None
        for key, item in table.items():
            where = (*path, key)
            if key in rates:
                if not _is_number(item):
                    self.problem(where, f"expected a number in [0, 1], {_got(item)}")
                elif not (math.isfinite(item) and 0.0 <= item <= 1.0):
                    self.problem(where, f"{_show(item)} is outside [0, 1]")
                else:
                    found[key] = float(item)
            elif key == MIN_SAMPLES:
                if isinstance(item, int) and not isinstance(item, bool):
                    if item < 0:
                        self.problem(where, f"{item} is negative; expected a non-negative integer")
                    else:
                        found[key] = item
                else:
                    self.problem(where, f"expected a non-negative integer, {_got(item)}")
            elif key == "figure" and allow_figure:
                if not isinstance(item, str):
                    choices = ", ".join(map(repr, FIGURES))
                    self.problem(where, f"expected one of {choices}, {_got(item)}")
                elif item not in FIGURES:
                    self.problem(where, f"{_show(item)} is not one of: {', '.join(FIGURES)}")
                else:
                    figure = item
            else:
                self.problem(where, f"unknown key; allowed: {', '.join(allowed)}")
        return Limits(**found), figure

    def domains(self, value: Any, path: tuple[str, ...]) -> dict[str, Limits]:
        table = self.table(value, path)
        if table is None:
            return {}
        out: dict[str, Limits] = {}
        for name, item in table.items():
            where = (*path, name)
            limits, _ = self.limits(item, where, allow_figure=False)
            # The table's contents are still checked for an unknown domain, so a typo in the
            # name and a typo in a key show up in the same run.
            if name not in self.valid_domains:
                self.problem(where, f"unknown domain; valid: {', '.join(self.valid_domains)}")
            else:
                out[name] = limits
        return out

    def tolerances(self, value: Any, path: tuple[str, ...], extra: tuple[str, ...] = ()) -> dict[str, float]:
        """The tolerance keys of one ``[regression...]`` table (``extra``: other keys allowed
        there, checked by the caller)."""
        table = self.table(value, path)
        if table is None:
            return {}
        keys = tolerance_keys()
        found: dict[str, float] = {}
        for key, item in table.items():
            where = (*path, key)
            if key in extra:
                continue
            if key not in keys:
                self.problem(where, f"unknown key; allowed: {', '.join((*extra, *keys))}")
            elif not _is_number(item):
                self.problem(where, f"expected a number in [0, 1], {_got(item)}")
            elif not (math.isfinite(item) and 0.0 <= item <= 1.0):
                self.problem(where, f"{_show(item)} is outside [0, 1]")
            else:
                found[keys[key]] = float(item)
        return found

    def regression(self, value: Any, path: tuple[str, ...]) -> RegressionTable:
        """Parse a ``[regression]`` table: ``confidence``, tolerances, ``domains``, ``overall``."""
        table = self.table(value, path)
        if table is None:
            return _NO_REGRESSION
        confidence: float | None = None
        if "confidence" in table:
            item = table["confidence"]
            if not _is_number(item) or not (math.isfinite(item) and 0.5 <= item < 1.0):
                self.problem((*path, "confidence"), f"expected a number in [0.5, 1), {_got(item)}")
            else:
                confidence = float(item)
        defaults = self.tolerances(table, path, extra=("confidence", "domains", "overall"))
        domains: dict[str, Mapping[str, float]] = {}
        if "domains" in table:
            dtable = self.table(table["domains"], (*path, "domains"))
            for name, item in (dtable or {}).items():
                where = (*path, "domains", name)
                tol = self.tolerances(item, where)
                if name not in self.valid_domains:
                    self.problem(where, f"unknown domain; valid: {', '.join(self.valid_domains)}")
                else:
                    domains[name] = types.MappingProxyType(tol)
        overall = self.tolerances(table["overall"], (*path, "overall")) if "overall" in table else {}
        return RegressionTable(
            confidence=confidence, defaults=types.MappingProxyType(defaults),
            domains=types.MappingProxyType(domains), overall=types.MappingProxyType(overall),
        )

    def section(self, table: Mapping[str, Any], path: tuple[str, ...], is_model: bool) -> Section:
        """Parse the defaults/domains/overall/regression tables of the top level or of one model."""
        defaults = overall = _NO_LIMITS
        domains: dict[str, Limits] = {}
        figure: str | None = None
        params: dict[str, Any] = {}
        regression = _NO_REGRESSION
        for key, item in table.items():
            where = (*path, key)
            if key == "regression":
                regression = self.regression(item, where)
            elif key == "defaults":
                defaults, _ = self.limits(item, where, allow_figure=False)
            elif key == "overall":
                overall, figure = self.limits(item, where, allow_figure=True)
            elif key == "domains":
                domains = self.domains(item, where)
            elif is_model and key in _MODEL_PARAM_KINDS:
                if self.param(key, item, where):
                    params[key] = item
            elif not is_model and key == "models":
                continue  # handled by the caller
            elif is_model:
                allowed = (*_SECTION_TABLES, *MODEL_PARAM_KEYS)
                self.problem(where, f"unknown key; allowed: {', '.join(allowed)}")
            elif key in limit_keys():
                # The commonest slip: a limit written above the first table header.
                self.problem(
                    where,
                    "unknown top-level key; put limits in a table such as [defaults]; "
                    f"allowed: {', '.join(_TOP_LEVEL_KEYS)}",
                )
            else:
                self.problem(where, f"unknown key; allowed: {', '.join(_TOP_LEVEL_KEYS)}")
        return Section(
            defaults=defaults,
            domains=types.MappingProxyType(domains),
            overall=overall,
            figure=figure,
            params=types.MappingProxyType(params),
            regression=regression,
        )

    def param(self, key: str, value: Any, path: tuple[str, ...]) -> bool:
        """Type-check one model call parameter; True when it is acceptable."""
        kind = _MODEL_PARAM_KINDS[key]
        ok = {
            _STRING: isinstance(value, str),
            _NUMBER: _is_number(value),
            _INTEGER: isinstance(value, int) and not isinstance(value, bool),
            _TABLE: isinstance(value, Mapping),
        }[kind]
        if not ok:
            article = "an" if kind == _INTEGER else "a"
            self.problem(path, f"expected {article} {kind}, {_got(value)}")
        elif kind == _TABLE and _depth(value) > MAX_NESTING:
            # Dotted table headers nest without limit in TOML; copying or hashing such a table
            # (the model's identity in the cache) would overflow the stack.
            self.problem(path, f"nested more than {MAX_NESTING} levels deep")
            return False
        return ok

    def models(self, value: Any, path: tuple[str, ...]) -> dict[str, Section]:
        table = self.table(value, path)
        if table is None:
            return {}
        out: dict[str, Section] = {}
        for name, item in table.items():
            where = (*path, name)
            if not name.strip():
                self.problem(where, "empty model name")
                continue
            model_table = self.table(item, where)
            if model_table is None:
                continue
            out[name] = self.section(model_table, where, is_model=True)
        return out


def _depth(value: Any) -> int:
    """How deeply tables and arrays nest in ``value`` (0 for a scalar), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, Mapping):
            children: Iterable[Any] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level + 1)
        if deepest > MAX_NESTING:
            break
        stack.extend((child, level + 1) for child in children)
    return deepest


def _valid_domains(extra_domains: Iterable[str]) -> tuple[str, ...]:
    names = list(DOMAINS)
    for name in extra_domains:
        if name not in names:
            names.append(str(name))
    return tuple(names)


def parse_thresholds(
    data: Mapping[str, Any],
    source: str = "thresholds.toml",
    extra_domains: Iterable[str] = (),
    model: str | None = None,
) -> Thresholds:
    """Validate already-parsed TOML ``data`` and return :class:`Thresholds`.

    ``source`` names the file in error messages. Domain names must be DefAn ids or one of
    ``extra_domains`` (the domains of a user's own data set). ``model`` selects whose
    ``[models.<name>]`` overrides apply. Raises :class:`ThresholdsError` listing every problem.
    """
    if not isinstance(data, Mapping):
        raise TypeError(f"parse_thresholds needs a mapping, got {type(data).__name__}")
    checker = _Checker(source, _valid_domains(extra_domains))
    base = checker.section(data, (), is_model=False)
    models = checker.models(data["models"], ("models",)) if "models" in data else {}
    _raise_problems(source, checker.problems)
    return Thresholds(
        source=source,
        base=base,
        models=types.MappingProxyType(models),
        model=model,
    )


def _toml_error(source: str, exc: tomllib.TOMLDecodeError, document: str) -> ThresholdsError:
    """A syntax error as ``file: line L, column C: invalid TOML: what``."""
    text = str(exc)
    lineno = getattr(exc, "lineno", None)
    colno = getattr(exc, "colno", None)
    msg = getattr(exc, "msg", None)
    match = _TOML_POSITION.search(text)
    if match:
        lineno = lineno or int(match.group(1))
        colno = colno or int(match.group(2))
        text = text[: match.start()]
    at_end = _TOML_AT_END.search(text)
    if at_end:
        text = text[: at_end.start()]
    what = msg if isinstance(msg, str) and msg else text
    if lineno:
        where = f"line {lineno}, column {colno}: "
    elif at_end:
        # tomllib gives no position for an error at the very end (an unclosed array, say);
        # the last line is where the user has to look.
        where = f"line {document.rstrip().count(chr(10)) + 1} (end of file): "
    else:
        where = ""
    return ThresholdsError(f"{source}: {where}invalid TOML: {what}")


def load_thresholds(
    path: StrPath,
    extra_domains: Iterable[str] = (),
    model: str | None = None,
    required: bool = True,
) -> Thresholds:
    """Read, parse and validate the thresholds file at ``path``.

    A missing file is an error when ``required`` (a file the user named explicitly), and so is
    one that sets no limit (the gate would judge nothing); with ``required=False`` (a default
    location that may simply not exist) a missing file gives empty :class:`Thresholds`. Every other problem - unreadable file, bad encoding, TOML syntax
    (with its line and column), invalid contents - raises :class:`ThresholdsError`.
    """
    source = os.fspath(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        if not required:
            return Thresholds.empty(model=model)
        raise ThresholdsError(f"{source}: file not found") from None
    except IsADirectoryError:
        raise ThresholdsError(f"{source}: is a directory, not a thresholds file") from None
    except OSError as exc:
        raise ThresholdsError(f"{source}: cannot read: {exc.strerror or exc}") from None
    try:
        # utf-8-sig: Windows editors like to save UTF-8 with a BOM, which TOML itself rejects.
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ThresholdsError(
            f"{source}: line {line}: not valid UTF-8 (TOML files are UTF-8)"
        ) from None
    data = read_toml(text, source)
    parsed = parse_thresholds(data, source, extra_domains=extra_domains, model=model)
    if required and not parsed.sets_limits:
        # A file the user named is meant to gate the run: one that sets nothing would turn the
        # gate off without a word (exit 0 whatever the figures), e.g. an empty file from a CI
        # step that failed to write it.
        raise ThresholdsError(
            f"{source}: sets no limit, so the gate would judge nothing; add limits such as "
            "[defaults] max_fch = 0.5 (keys: " + ", ".join(limit_keys()) + ")"
        )
    return parsed


def _near(a: str, b: str) -> bool:
    """Within :data:`TYPO_EDITS` edits of each other (ignoring case), and by fewer than half the
    shorter name's length (``ab``/``ba`` are two names, ``my-rag``/``my-rga`` one)."""
    from rapidfuzz.distance import OSA  # letters inserted, deleted, replaced or swapped

    d = OSA.distance(a.casefold(), b.casefold())
    return d <= TYPO_EDITS and 2 * d < min(len(a), len(b))


def model_table_typos(
    model: str,
    tables: Mapping[str, Mapping[str, Any]],
    sources: Mapping[str, str],
    registered: Iterable[str],
    is_model_string: Callable[[str], bool],
) -> list[str]:
    """Problems for ``[models."<name>"]`` tables whose name looks like a typo of a model's.

    A table applies only to the model of its exact name, so a misspelt one is silently ignored
    and its limits with it.  The rule, when the run's ``model`` is a registered callable or a
    table: a table is reported when its name is within two edits (:func:`_near`) of ``model`` or
    of a registered model's name, and it names no model of its own - it is not ``model``, not
    registered, has no ``model`` key and is not a litellm model string (``is_model_string``).
    ``tables`` maps each table's name to its parameters, ``sources`` to the file it is in.
    """
    names = set(registered)
    if model not in names and model not in tables:
        return []  # a bare litellm string: any table may describe another model
    targets = sorted({model, *names})
    problems: list[str] = []
    for name, params in tables.items():
        if name == model or name in names or "model" in params or is_model_string(name):
            continue
        close = [t for t in targets if _near(name, t)]
        if close:
            problems.append(
                f"{sources.get(name, 'thresholds.toml')}: {_dotted(('models', name))}: no model of "
                f"that name is registered; did you mean {close[0]!r}? (a table applies only to the "
                "model of its exact name, so its limits are ignored)"
            )
    return problems


def read_toml(text: str, source: str) -> dict[str, Any]:
    """Parse TOML ``text``; every way it can fail is one :class:`ThresholdsError` naming
    ``source`` (the syntax error with its line, and nesting too deep for the parser)."""
    try:
        data: dict[str, Any] = tomllib.loads(text)
        return data
    except tomllib.TOMLDecodeError as exc:
        raise _toml_error(source, exc, text) from None
    except RecursionError:
        # tomllib parses nested arrays and inline tables recursively.
        raise ThresholdsError(f"{source}: invalid TOML: arrays or inline tables nested too deeply") from None
