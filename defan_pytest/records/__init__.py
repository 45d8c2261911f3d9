"""Typed records: what flows between the parts of a run, and the report they make.

* :class:`ScoredRecord`: one prompt asked and scored, the record an item carries to the
  controller and a row of the report.  It reads as the plain-JSON record it travels as (a
  read-only mapping: ``rec["claim"]``, ``rec.get("error")``), so the figures, the metrics a user
  registers and the paired test read it as they read any record.
* :class:`ReportMeta` and its parts (:class:`ModelMeta`, :class:`DatasetMeta`,
  :class:`ScorerMeta`, :class:`Selection`, :class:`Calls`, :class:`Merged`): who made a report,
  from what, and how.
* :class:`ModelsReport`: several models' runs of one session (schema version 2), each a
  :class:`Report`.
* :class:`Report`: the whole report (schema ``defan_pytest/report/report.schema.json``, the
  contract), built by :mod:`defan_pytest.report.builder` and read back by
  :func:`defan_pytest.report.schema.load_report`.

Each has ``to_json()`` (the report's JSON, keys in the report's order) and ``from_json()``
(reading that JSON back); keys this version does not know are kept (``extra``) and written back
after the known ones.  :func:`error_kind` and :func:`error_kinds` say what kind of failure a call
error is, in one place; :func:`row_problems` what makes a saved report's rows other than one
prompt each (an id twice, a domain or group that is not its id's).  The base layer: imports nothing of the package.  A module a concern:
``kinds``, ``prompt``, ``rows``, ``report``, ``models`` (and ``common``, what they share).

>>> rec = ScoredRecord("nobel-q0001-p00", "nobel", "nobel-q0001", "name", claim="Marie Curie",
...                    aligned=True, correct=True)
>>> rec["claim"], rec.get("error"), rec.error_kind
('Marie Curie', None, None)
>>> ScoredRecord.from_json(rec.to_json()) == rec
True
>>> error_kind("RateLimitError: 429 Too Many Requests (HTTP 429)")
'RateLimitError'
"""
from __future__ import annotations

from defan_pytest.records.kinds import ErrorKinds, error_kind, error_kinds
from defan_pytest.records.models import MODELS_SCHEMA_VERSION, ModelsReport, model_of
from defan_pytest.records.prompt import ScoredRecord
from defan_pytest.records.report import (
    SCHEMA, SCHEMA_VERSION, Calls, DatasetMeta, Merged, ModelMeta, Report, ReportMeta, ScorerMeta, Selection,
)
from defan_pytest.records.rows import row_problems

__all__ = [
    "MODELS_SCHEMA_VERSION",
    "SCHEMA",
    "SCHEMA_VERSION",
    "Calls",
    "DatasetMeta",
    "ErrorKinds",
    "Merged",
    "ModelMeta",
    "ModelsReport",
    "Report",
    "ReportMeta",
    "ScoredRecord",
    "ScorerMeta",
    "Selection",
    "error_kind",
    "error_kinds",
    "model_of",
    "row_problems",
]
