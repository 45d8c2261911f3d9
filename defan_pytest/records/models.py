"""Several models' runs of one session: :class:`ModelsReport`, the report of schema version 2.

A session given ``--defan-model`` more than once asks every prompt of every model; each model's
run is a whole report of version 1 (:class:`~defan_pytest.records.Report`, with its own figures,
gate and regression), and with ``--defan-compare-to`` every other model is compared with one of
them by the regression gate's paired test (``comparisons``: model -> the comparison's JSON, as
:func:`defan_pytest.gates.regression.judge` gives it).

>>> from defan_pytest.records import ModelsReport
>>> ModelsReport.VERSION
2
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, Optional, Tuple

from defan_pytest.records.common import Json, extra_of
from defan_pytest.records.report import SCHEMA, Report

__all__ = ["MODELS_SCHEMA_VERSION", "ModelsReport", "model_of"]

#: The schema version of a report of several models.
MODELS_SCHEMA_VERSION = 2

_KEYS = ("schema", "schema_version", "models", "compare_to", "comparisons", "runs")


def model_of(report: Report) -> str:
    """The name a run's model was asked by (``--defan-model``), ``""`` when it records none."""
    return report.meta.model_name or ""


@dataclass(frozen=True)
class ModelsReport:
    """The runs of several models (``runs``, in the order they were given), the model every
    other was compared with (``compare_to``) and those comparisons (model -> comparison JSON)."""

    VERSION: ClassVar[int] = MODELS_SCHEMA_VERSION

    runs: Tuple[Report, ...]
    compare_to: Optional[str] = None
    comparisons: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def models(self) -> Tuple[str, ...]:
        """The models' names, in the order of :attr:`runs`."""
        return tuple(model_of(r) for r in self.runs)

    def run_of(self, model: str) -> Optional[Report]:
        """The run of ``model``, or ``None``."""
        return next((r for r in self.runs if model_of(r) == model), None)

    @property
    def failed(self) -> bool:
        """A model's gate or regression gate failed, or a comparison found a regression."""
        return any(r.gate_status == "fail" or (r.regression or {}).get("status") == "fail" for r in self.runs) or any(
            c.get("status") == "fail" for c in self.comparisons.values())

    def to_json(self, rows: bool = True) -> Json:
        """The report's JSON: each run a version 1 report (``rows=False``: without the rows)."""
        out: Json = {
            "schema": SCHEMA, "schema_version": MODELS_SCHEMA_VERSION, "models": list(self.models),
            "compare_to": self.compare_to, "comparisons": {k: dict(v) for k, v in self.comparisons.items()},
            "runs": [r.to_json(rows=rows) for r in self.runs],
        }
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ModelsReport":
        """A report of several models from its JSON (as :func:`defan_pytest.report.schema.load_any` checked it)."""
        comparisons: Dict[str, Mapping[str, Any]] = {str(k): dict(v) for k, v in (data.get("comparisons") or {}).items()}
        return cls(
            runs=tuple(Report.from_json(r) for r in data["runs"]), compare_to=data.get("compare_to"),
            comparisons=comparisons, extra=extra_of(data, _KEYS),
        )
