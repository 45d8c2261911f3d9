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

The file is validated as a whole and every problem is reported in one :class:`ThresholdsError`,
each naming the file and the dotted key (``thresholds.toml: domains.nobl: unknown domain; ...``),
so a user fixes the file in one pass instead of one error per run.

Precedence, per key, lowest first: ``[defaults]``, ``[domains.<d>]`` (or ``[overall]``),
``[models.<m>.defaults]``, ``[models.<m>.domains.<d>]`` (or ``[models.<m>.overall]``). A model
section therefore overrides everything at the top level: it describes a different system under
test, whose limits are chosen for that system.
"""
from __future__ import annotations

import copy
import math
import os
import re
import sys
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Union

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

from defan_pytest.dataset import DOMAINS

__all__ = [
    "FIGURES",
    "LIMIT_KEYS",
    "MODEL_PARAM_KEYS",
    "RATE_KEYS",
    "Limits",
    "Section",
    "ThresholdFile",
    "Thresholds",
    "ThresholdsError",
    "load_thresholds",
    "parse_thresholds",
]

StrPath = Union[str, "os.PathLike[str]"]

#: Threshold keys holding a rate in [0, 1]; ``max_*`` are upper limits, ``min_*`` lower limits.
RATE_KEYS: tuple[str, ...] = ("max_fch", "max_pmh", "min_rc", "max_error_rate")

#: Every key a threshold table may hold, in the order error messages list them.
LIMIT_KEYS: tuple[str, ...] = (*RATE_KEYS, "min_samples")

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
)

# The tables of one section (the top level, or one model).
_SECTION_TABLES: tuple[str, ...] = ("defaults", "domains", "overall")
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


class ThresholdsError(ValueError):
    """A thresholds file is missing, unreadable, not TOML, or not a valid thresholds file.

    ``problems`` holds every individual problem (``"file: dotted.key: what"``); the message
    lists all of them, so one run shows everything that needs fixing.
    """

    def __init__(self, message: str, problems: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.problems: tuple[str, ...] = tuple(problems) or (message,)


def _raise_problems(source: str, problems: list[str]) -> None:
    """Raise one ThresholdsError listing every problem (a no-op when there are none)."""
    if not problems:
        return
    if len(problems) == 1:
        raise ThresholdsError(problems[0], problems)
    lines = [f"{source}: {len(problems)} problems:"]
    lines.extend(f"  {p}" for p in problems)
    raise ThresholdsError("\n".join(lines), problems)


# --------------------------------------------------------------------------------------------
# Data model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    """The limits that apply to one scope (a domain, or the overall figure).

    ``None`` means "not set": nothing is checked for that key. Rates are in [0, 1]; a ``max_*``
    limit passes when the figure is ``<=`` it, a ``min_*`` limit when the figure is ``>=`` it.
    """

    max_fch: float | None = None
    max_pmh: float | None = None
    min_rc: float | None = None
    max_error_rate: float | None = None
    min_samples: int | None = None

    def over(self, base: Limits) -> Limits:
        """These limits laid over ``base``: per key, a value set here wins."""
        changes = self.as_dict()
        return replace(base, **changes) if changes else base

    @property
    def is_empty(self) -> bool:
        """True when no key is set."""
        return all(getattr(self, f.name) is None for f in fields(self))

    def as_dict(self) -> dict[str, float | int]:
        """The keys that are set, as in the file (``{"max_fch": 0.35, ...}``)."""
        values = ((f.name, getattr(self, f.name)) for f in fields(self))
        return {name: value for name, value in values if value is not None}

    def figure_limits(self) -> dict[str, float]:
        """The rate limits keyed by figure (``{"fch": 0.35, "rc": 0.3, ...}``), the shape
        :func:`defan_pytest.reports.format_table` takes to mark figures outside their limits."""
        pairs = (("fch", self.max_fch), ("pmh", self.max_pmh), ("rc", self.min_rc),
                 ("error_rate", self.max_error_rate))
        return {figure: limit for figure, limit in pairs if limit is not None}


_NO_LIMITS = Limits()


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

    @property
    def is_empty(self) -> bool:
        """True when the section sets no limit, figure or parameter."""
        return (
            self.defaults.is_empty
            and self.overall.is_empty
            and all(lim.is_empty for lim in self.domains.values())
            and self.figure is None
            and not self.params
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


#: The name the model registry's issue refers to; the same class.
ThresholdFile = Thresholds


def _merge(layers: Iterable[Limits]) -> Limits:
    merged = _NO_LIMITS
    for layer in layers:
        merged = layer.over(merged)
    return merged


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


def _dotted(parts: Iterable[str]) -> str:
    """A key path as the user writes it in TOML: ``models."my rag".domains.nobel``."""
    out = []
    for part in parts:
        if _BARE_KEY.fullmatch(part):
            out.append(part)
        else:
            escaped = part.replace("\\", "\\\\").replace('"', '\\"')
            out.append(f'"{escaped}"')
    return ".".join(out)


def _kind(value: Any) -> str:
    """The TOML name of a parsed value's type, for "expected X, got Y" messages."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "table"
    if isinstance(value, list):
        return "array"
    return type(value).__name__  # datetime, date, time


def _show(value: Any) -> str:
    """A value as it would appear in the file (strings quoted, booleans lower case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (Mapping, list)):
        return ""
    return str(value)


def _got(value: Any) -> str:
    shown = _show(value)
    return f"got {_kind(value)} {shown}" if shown else f"got {_kind(value)}"


def _is_number(value: Any) -> bool:
    # bool is an int subclass; `max_fch = true` is a mistake, not 1.0.
    return isinstance(value, (int, float)) and not isinstance(value, bool)


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
        allowed = (*LIMIT_KEYS, "figure") if allow_figure else LIMIT_KEYS
        found: dict[str, Any] = {}
        figure: str | None = None
        for key, item in table.items():
            where = (*path, key)
            if key in RATE_KEYS:
                if not _is_number(item):
                    self.problem(where, f"expected a number in [0, 1], {_got(item)}")
                elif not (math.isfinite(item) and 0.0 <= item <= 1.0):
                    self.problem(where, f"{_show(item)} is outside [0, 1]")
                else:
                    found[key] = float(item)
            elif key == "min_samples":
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

    def section(self, table: Mapping[str, Any], path: tuple[str, ...], is_model: bool) -> Section:
        """Parse the defaults/domains/overall tables of the top level or of one model."""
        defaults = overall = _NO_LIMITS
        domains: dict[str, Limits] = {}
        figure: str | None = None
        params: dict[str, Any] = {}
        for key, item in table.items():
            where = (*path, key)
            if key == "defaults":
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
            elif key in LIMIT_KEYS:
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

    A missing file is an error when ``required`` (a file the user named explicitly); with
    ``required=False`` (a default location that may simply not exist) it gives empty
    :class:`Thresholds`. Every other problem - unreadable file, bad encoding, TOML syntax
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
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _toml_error(source, exc, text) from None
    return parse_thresholds(data, source, extra_domains=extra_domains, model=model)
