"""Saved reports as baselines: reading and validating a report.

A report (``--defan-report``, ``defan score --json``) is versioned (``schema_version``) and
published as a JSON Schema (``defan_pytest/report.schema.json``).  :func:`load_report` reads one
through the one reader (:mod:`defan_pytest.dataset.reader`: a regular file, capped, nesting
bounded, no NaN or Infinity, no key twice), checks it against the schema and checks that its rows
are one prompt each (:func:`defan_pytest.records.row_problems`), so that a truncated, hand-edited
or hostile baseline is one clear message naming the file and the first problems, never a
``KeyError`` or a ``RecursionError`` half-way through a run.

Whether two runs can be compared is the gate's question (:mod:`defan_pytest.gates.comparability`).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from defan_pytest.dataset import reader
from defan_pytest.dataset.domains import DOMAINS
from defan_pytest.errors import DefanError
from defan_pytest.records import MODELS_SCHEMA_VERSION, SCHEMA, SCHEMA_VERSION, ModelsReport, Report, row_problems

__all__ = [
    "BaselineError",
    "created_of",
    "load_any",
    "load_report",
    "schema",
    "validate_report",
]

# At most this many schema problems are listed (a report of 70,000 rows with a wrong key in every
# row would otherwise print 70,000 lines).
_SHOWN = 10


class BaselineError(DefanError):
    """A report that cannot be read or compared with."""


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The report's JSON Schema (draft 2020-12), as published in the repository."""
    text = (Path(__file__).parent / "report.schema.json").read_text(encoding="utf-8")
    return json.loads(text)  # type: ignore[no-any-return]


def validate_report(report: Any) -> list[str]:
    """The problems of ``report`` against the schema (empty when it is valid): at most a few,
    each as ``path: message``."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema())
    problems: list[str] = []
    for error in validator.iter_errors(report):
        # "null or a regression block" failing says where inside the block (the alternative
        # that went deepest), not "is not valid under any of the given schemas" with the block.
        while error.context:
            error = max(error.context, key=lambda e: len(e.absolute_path))
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        message = error.message
        if len(message) > 200:
            message = message[:200] + " ..."
        problems.append(f"{where}: {message}")
        if len(problems) >= _SHOWN:
            problems.append("... (more problems not shown)")
            break
    return problems


def _read(p: Path, what: str) -> Any:
    """The JSON of the report at ``p`` by the one reader's rules
    (:mod:`defan_pytest.dataset.reader`: a regular file, capped, nesting bounded, no NaN, no
    key twice); :class:`BaselineError` naming the file otherwise."""
    label = f"{what} {p}"
    try:
        text = reader.decode(reader.read_bytes(p, label), label)
        return reader.parse_json(text, label, unique_keys=True)
    except reader.InputError as exc:
        if exc.kind == "json":
            where = f"line {exc.line}: " if exc.line is not None else ""
            raise BaselineError(f"{label}: not JSON ({where}{exc.reason})") from None
        raise BaselineError(str(exc)) from None


def _identity_problems(data: Mapping[str, Any]) -> list[str]:
    """What the schema cannot say: every row id once, and each row's domain, group and type
    those of its id (:func:`defan_pytest.records.row_problems`); a report of the public split
    holds its domains only."""
    dataset = data["meta"]["dataset"]
    public = dataset.get("source") == "public"
    return row_problems(data["rows"], domains=tuple(DOMAINS) if public else None, one_type_per_group=public,
                        limit=_SHOWN)


def _tagged(p: Path, what: str) -> dict[str, Any]:
    """The JSON of the file at ``p`` when it says it is a report of a version this code reads
    (not yet checked against the schema); :class:`BaselineError` naming the file otherwise."""
    data = _read(p, what)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        if isinstance(data, dict) and {"rows", "domains", "overall"} <= set(data):
            raise BaselineError(
                f"{what} {p}: a report of an earlier defan-pytest without run metadata (no "
                f"'schema' key); make a new one with this version (--defan-report)"
            )
        raise BaselineError(f"{what} {p}: not a defan-pytest report (no \"schema\": \"{SCHEMA}\")")
    version = data.get("schema_version")
    if version not in (SCHEMA_VERSION, MODELS_SCHEMA_VERSION) or isinstance(version, bool):
        raise BaselineError(
            f"{what} {p}: schema version {repr(version)[:40]}; this defan-pytest reads versions "
            f"{SCHEMA_VERSION} (one model) and {MODELS_SCHEMA_VERSION} (several)"
        )
    return data


def created_of(path: str | Path, what: str = "report") -> str:
    """The time the report at ``path`` says it was made (``meta.created``), read by the one
    reader's rules but not yet checked against the schema (:func:`load_report` does that): how
    ``defan history`` orders a folder of reports before it loads the ones it shows.
    :class:`BaselineError` naming the file when it cannot be read, is not a report, or states
    no time."""
    p = Path(path).expanduser()
    meta = _tagged(p, what).get("meta")
    created = meta.get("created") if isinstance(meta, dict) else None
    if not isinstance(created, str):
        raise BaselineError(f"{what} {p}: states no time of its own (meta.created)")
    return created


def _checked(path: str | Path, what: str) -> tuple[Path, dict[str, Any]]:
    """The JSON of the report at ``path`` (either version), checked; :class:`BaselineError`
    naming the file otherwise (see :func:`load_report`)."""
    p = Path(path).expanduser()
    data = _tagged(p, what)
    version = data["schema_version"]
    problems = validate_report(data)
    if problems:
        raise BaselineError(
            f"{what} {p}: does not match the report schema:\n  - " + "\n  - ".join(problems),
            [f"{what} {p}: {x}" for x in problems],
        )
    runs = data["runs"] if version == MODELS_SCHEMA_VERSION else [data]
    problems = _models_problems(data) if version == MODELS_SCHEMA_VERSION else []
    if problems:  # the models it names, not its rows
        raise BaselineError(
            f"{what} {p}: a report of several models whose models do not agree:\n  - " + "\n  - ".join(problems),
            [f"{what} {p}: {x}" for x in problems],
        )
    for i, run in enumerate(runs):
        where = f"runs/{i}: " if version == MODELS_SCHEMA_VERSION else ""
        problems.extend(where + x for x in _identity_problems(run))
    if problems:
        raise BaselineError(
            f"{what} {p}: rows that do not each name one prompt:\n  - " + "\n  - ".join(problems),
            [f"{what} {p}: {x}" for x in problems],
        )
    return p, data


def _models_problems(data: Mapping[str, Any]) -> list[str]:
    """What the schema cannot say of a report of several models: ``models`` names the runs'
    models in order, ``compare_to`` and every comparison name one of them."""
    named = [str(((r.get("meta") or {}).get("model") or {}).get("name") or "") for r in data["runs"]]
    problems = []
    if list(data["models"]) != named:
        problems.append(f"models: {data['models']!r} are not the runs' models {named!r}")
    compare_to = data.get("compare_to")
    if compare_to is not None and compare_to not in named:
        problems.append(f"compare_to: {compare_to!r} is not one of the runs' models ({', '.join(named)})")
    problems.extend(f"comparisons/{k}: not one of the runs' models" for k in data.get("comparisons") or {} if k not in named)
    return problems


def load_any(path: str | Path, what: str = "report") -> Report | ModelsReport:
    """Read the report at ``path`` of either version: a :class:`~defan_pytest.records.Report`
    (one model, version 1) or a :class:`~defan_pytest.records.ModelsReport` (several, version
    2); checked as :func:`load_report` says."""
    _, data = _checked(path, what)
    if data.get("schema_version") == MODELS_SCHEMA_VERSION:
        return ModelsReport.from_json(data)
    return Report.from_json(data)


def load_report(path: str | Path, what: str = "report", model: str | None = None) -> Report:
    """Read the report at ``path``, check it against the schema and read it into a
    :class:`~defan_pytest.records.Report`.

    Raises :class:`BaselineError` naming the file: missing, not a regular file (a FIFO, a
    device), too large, not JSON (nested too deeply, NaN or Infinity, a key twice), not a
    defan-pytest report, a schema version this code does not read, not valid against the
    schema, or rows whose ids are not unique or do not match their domain and group.

    A report of several models (version 2) gives the run of ``model``; without one, or when it
    holds no run of that model, :class:`BaselineError` lists the models it holds.
    """
    p, data = _checked(path, what)
    if data.get("schema_version") != MODELS_SCHEMA_VERSION:
        return Report.from_json(data)
    both = ModelsReport.from_json(data)
    run = both.run_of(model) if model is not None else None
    if run is None:
        wanted = f"no run of model {model!r}" if model is not None else "the runs of several models; name one"
        raise BaselineError(f"{what} {p}: {wanted} (it holds {', '.join(both.models)})")
    return run
