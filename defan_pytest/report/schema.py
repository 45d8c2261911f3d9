"""Saved reports as baselines: reading and validating a report, and deciding whether two runs
can be compared.

A report (``--defan-report``, ``defan score --json``) is versioned (``schema_version``) and
published as a JSON Schema (``defan_pytest/report.schema.json``).  :func:`load_report` reads one
and checks it against the schema, so that a truncated or hand-edited baseline is one clear
message naming the file and the first problems, never a ``KeyError`` half-way through a run.

:func:`comparability` says why two runs cannot be compared: another data set (its identity, or
a prompt both hold asked with another question or gold), another scorer (rules version or spaCy
pipeline), or no prompt in common.  The regression gate refuses such a baseline unless forced
(``--defan-baseline-force``).  Nothing here imports pytest.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from defan_pytest.errors import DefanError
from defan_pytest.records import SCHEMA, SCHEMA_VERSION, DatasetMeta, Report, ScorerMeta

__all__ = [
    "BaselineError",
    "Prompt",
    "comparability",
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
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        message = error.message
        if len(message) > 200:
            message = message[:200] + " ..."
        problems.append(f"{where}: {message}")
        if len(problems) >= _SHOWN:
            problems.append("... (more problems not shown)")
            break
    return problems


def load_report(path: str | Path, what: str = "report") -> Report:
    """Read the report at ``path``, check it against the schema and read it into a
    :class:`~defan_pytest.records.Report`.

    Raises :class:`BaselineError` naming the file: missing, not JSON, not a defan-pytest report,
    a schema version this code does not read, or not valid against the schema.
    """
    p = Path(path).expanduser()
    if not p.exists():
        raise BaselineError(f"{what} {p}: no such file")
    if p.is_dir():
        raise BaselineError(f"{what} {p}: is a directory, not a report")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{what} {p}: cannot be read: {exc}") from None
    except ValueError as exc:
        raise BaselineError(f"{what} {p}: not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        if isinstance(data, dict) and {"rows", "domains", "overall"} <= set(data):
            raise BaselineError(
                f"{what} {p}: a report of an earlier defan-pytest without run metadata (no "
                f"'schema' key); make a new one with this version (--defan-report)"
            )
        raise BaselineError(f"{what} {p}: not a defan-pytest report (no \"schema\": \"{SCHEMA}\")")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise BaselineError(
            f"{what} {p}: schema version {version!r}; this defan-pytest reads version {SCHEMA_VERSION}"
        )
    problems = validate_report(data)
    if problems:
        raise BaselineError(
            f"{what} {p}: does not match the report schema:\n  - " + "\n  - ".join(problems),
            [f"{what} {p}: {x}" for x in problems],
        )
    return Report.from_json(data)


class Prompt(Protocol):
    """What a prompt is compared by: a dataset row or a record (its id, question and gold)."""

    @property
    def id(self) -> str: ...

    @property
    def question(self) -> str: ...

    @property
    def answer(self) -> str: ...


def comparability(
    baseline: Report,
    dataset: DatasetMeta,
    scorer: ScorerMeta,
    prompts: Sequence[Prompt],
    *,
    where: str = "--defan-baseline",
) -> list[str]:
    """Why a run of ``dataset`` scored by ``scorer`` with ``prompts`` cannot be compared with
    ``baseline`` (a loaded report); empty when it can.  ``where`` names the baseline in the
    messages."""
    problems: list[str] = []
    b_data, b_scorer = baseline.meta.dataset, baseline.meta.scorer
    if b_data.identity != dataset.identity:
        problems.append(
            f"{where}: made on another data set ({b_data.describe()}; this run: {dataset.describe()})"
        )
    if b_scorer.key != scorer.key:
        problems.append(f"{where}: scored by another scorer ({b_scorer.describe()}; this run: {scorer.describe()})")
    old = {r.id: r for r in baseline.rows}
    common = [p for p in prompts if p.id in old]
    if not common:
        problems.append(
            f"{where}: no prompt in common with this run ({len(old)} prompts there, {len(prompts)} here): "
            "select the same domains and sample (--defan-domain, --defan-sample, --defan-seed)"
        )
    else:
        differ = [
            p for p in common
            if (old[p.id].question, str(old[p.id].answer).strip()) != (p.question, str(p.answer).strip())
        ]
        if differ and not any("another data set" in p for p in problems):
            problems.append(
                f"{where}: {len(differ)} prompt(s) with the same id hold another question or gold "
                f"(first: {differ[0].id}): made on another data set"
            )
    return problems
