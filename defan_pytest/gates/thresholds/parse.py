"""Validating a thresholds file: every problem at once, each naming the file and the dotted key.

:func:`load_thresholds` reads and validates a file, :func:`parse_thresholds` already-parsed TOML.
The whole file is checked and every problem reported in one
:class:`~defan_pytest.gates.thresholds.text.ThresholdsError`
(``thresholds.toml: domains.nobl: unknown domain; ...``), so a user fixes the file in one pass
instead of one error per run.
"""
from __future__ import annotations

import math
import os
import types
from collections.abc import Iterable, Mapping
from typing import Any, Union

from defan_pytest.dataset import DOMAINS, reader
from defan_pytest.gates.thresholds.keys import (
    FIGURES,
    MIN_SAMPLES,
    is_number,
    limit_keys,
    rate_keys,
    tolerance_keys,
    uncompared_tolerance_keys,
)
from defan_pytest.gates.thresholds.limits import NO_LIMITS, Limits
from defan_pytest.gates.thresholds.params import MODEL_PARAM_KEYS, param_problem
from defan_pytest.gates.thresholds.resolve import Thresholds
from defan_pytest.gates.thresholds.tables import NO_REGRESSION, RegressionTable, Section
from defan_pytest.gates.thresholds.text import ThresholdsError, dotted, got, raise_problems, read_toml, show
from defan_pytest.metrics.registry import METRICS
from defan_pytest.stats.flips import NOISES

__all__ = ["MAX_FILE_BYTES", "load_thresholds", "parse_thresholds"]

#: The largest thresholds file read (bytes): a real one is a few hundred bytes.
MAX_FILE_BYTES = 4 * 1024 * 1024

StrPath = Union[str, "os.PathLike[str]"]

# The tables of one section (the top level, or one model).
_SECTION_TABLES: tuple[str, ...] = ("defaults", "domains", "overall", "regression")
_TOP_LEVEL_KEYS: tuple[str, ...] = (*_SECTION_TABLES, "models")


def _bound_of(key: str, threshold: bool) -> float:
    """The largest value a limit (``threshold``) or a tolerance key may take: 1 for a rate's,
    unbounded for an amount's (dollars, seconds)."""
    for metric in METRICS.values():
        if key == (metric.threshold_key if threshold else metric.tolerance_key):
            return metric.bound
    return 1.0


def _range(bound: float) -> str:
    return "[0, 1]" if bound == 1.0 else "the numbers >= 0"


def _expected(bound: float) -> str:
    return "a number in [0, 1]" if bound == 1.0 else "a number >= 0"


class _Checker:
    """Collects every problem of one file instead of stopping at the first."""

    def __init__(self, source: str, valid_domains: tuple[str, ...]) -> None:
        self.source = source
        self.valid_domains = valid_domains
        self.problems: list[str] = []

    def problem(self, path: Iterable[str], what: str) -> None:
        self.problems.append(f"{self.source}: {dotted(path)}: {what}")

    def table(self, value: Any, path: tuple[str, ...]) -> Mapping[str, Any] | None:
        if isinstance(value, Mapping):
            return value
        self.problem(path, f"expected a table, {got(value)}")
        return None

    def limits(
        self, value: Any, path: tuple[str, ...], allow_figure: bool
    ) -> tuple[Limits, str | None]:
        """Parse one threshold table; returns the limits found valid and the figure setting."""
        table = self.table(value, path)
        if table is None:
            return NO_LIMITS, None
        # Read from the metric registry now, not at import: a metric registered by a plugin
        # after this module was loaded has its key too.
        rates = rate_keys()
        allowed = (*rates, MIN_SAMPLES, "figure") if allow_figure else (*rates, MIN_SAMPLES)
        found: dict[str, Any] = {}
        figure: str | None = None
        for key, item in table.items():
            where = (*path, key)
            if key in rates:
                bound = _bound_of(key, threshold=True)
                if not is_number(item):
                    self.problem(where, f"expected {_expected(bound)}, {got(item)}")
                elif not (math.isfinite(item) and 0.0 <= item <= bound):
                    self.problem(where, f"{show(item)} is outside {_range(bound)}")
                else:
                    found[key] = float(item)
            elif key == MIN_SAMPLES:
                if isinstance(item, int) and not isinstance(item, bool):
                    if item < 0:
                        self.problem(where, f"{item} is negative; expected a non-negative integer")
                    else:
                        found[key] = item
                else:
                    self.problem(where, f"expected a non-negative integer, {got(item)}")
            elif key == "figure" and allow_figure:
                if not isinstance(item, str):
                    choices = ", ".join(map(repr, FIGURES))
                    self.problem(where, f"expected one of {choices}, {got(item)}")
                elif item not in FIGURES:
                    self.problem(where, f"{show(item)} is not one of: {', '.join(FIGURES)}")
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
        uncompared = uncompared_tolerance_keys()
        found: dict[str, float] = {}
        for key, item in table.items():
            where = (*path, key)
            if key in extra:
                continue
            if key in uncompared:
                self.problem(where, f"metric {uncompared[key]!r} is not compared between runs (it declares no "
                                    "paired events), so it has no regression tolerance")
            elif key not in keys:
                self.problem(where, f"unknown key; allowed: {', '.join((*extra, *keys))}")
            elif not is_number(item):
                self.problem(where, f"expected {_expected(_bound_of(key, threshold=False))}, {got(item)}")
            elif not (math.isfinite(item) and 0.0 <= item <= _bound_of(key, threshold=False)):
                self.problem(where, f"{show(item)} is outside {_range(_bound_of(key, threshold=False))}")
            else:
                found[keys[key]] = float(item)
        return found

    def regression(self, value: Any, path: tuple[str, ...]) -> RegressionTable:
        """Parse a ``[regression]`` table: ``confidence``, ``noise``, tolerances, ``domains``,
        ``overall``."""
        table = self.table(value, path)
        if table is None:
            return NO_REGRESSION
        confidence: float | None = None
        if "confidence" in table:
            item = table["confidence"]
            if not is_number(item) or not (math.isfinite(item) and 0.5 <= item < 1.0):
                self.problem((*path, "confidence"), f"expected a number in [0.5, 1), {got(item)}")
            else:
                confidence = float(item)
        noise: str | None = None
        if "noise" in table:
            item = table["noise"]
            if item not in NOISES:
                self.problem((*path, "noise"), f"expected one of {', '.join(repr(n) for n in NOISES)}, {got(item)}")
            else:
                noise = str(item)
        defaults = self.tolerances(table, path, extra=("confidence", "noise", "domains", "overall"))
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
            confidence=confidence, noise=noise, defaults=types.MappingProxyType(defaults),
            domains=types.MappingProxyType(domains), overall=types.MappingProxyType(overall),
        )

    def section(self, table: Mapping[str, Any], path: tuple[str, ...], is_model: bool) -> Section:
        """Parse the defaults/domains/overall/regression tables of the top level or of one model."""
        defaults = overall = NO_LIMITS
        domains: dict[str, Limits] = {}
        figure: str | None = None
        params: dict[str, Any] = {}
        regression = NO_REGRESSION
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
            elif is_model and key in MODEL_PARAM_KEYS:
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
        problem = param_problem(key, value)
        if problem is not None:
            self.problem(path, problem)
        return problem is None

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
    raise_problems(source, checker.problems)
    return Thresholds(
        source=source,
        base=base,
        models=types.MappingProxyType(models),
        model=model,
    )


def load_thresholds(
    path: StrPath,
    extra_domains: Iterable[str] = (),
    model: str | None = None,
    required: bool = True,
) -> Thresholds:
    """Read, parse and validate the thresholds file at ``path``.

    A missing file is an error when ``required`` (a file the user named explicitly), and so is
    one that sets no limit (the gate would judge nothing); with ``required=False`` (a default
    location that may simply not exist) a missing file gives empty :class:`Thresholds`. Every
    other problem - unreadable file, bad encoding, TOML syntax (with its line and column),
    invalid contents - raises :class:`ThresholdsError`.
    """
    source = os.fspath(path)
    try:
        # The one reader (a regular file, capped): /dev/zero or a FIFO is refused, not read.
        raw = reader.read_bytes(path, source, limit=MAX_FILE_BYTES)
    except reader.InputError as exc:
        if exc.kind == "missing" and not required:
            return Thresholds.empty(model=model)
        if exc.kind == "missing" and not os.path.islink(source):
            raise ThresholdsError(f"{source}: file not found") from None
        if exc.kind == "directory":
            raise ThresholdsError(f"{source}: is a directory, not a thresholds file") from None
        raise ThresholdsError(str(exc)) from None
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
