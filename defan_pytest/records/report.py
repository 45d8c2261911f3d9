"""A report and who made it: :class:`ReportMeta` and its parts (:class:`ModelMeta`,
:class:`DatasetMeta`, :class:`ScorerMeta`, :class:`Selection`, :class:`Calls`, :class:`Merged`)
and the whole :class:`Report` (schema ``defan_pytest/report/report.schema.json``), each read
both ways."""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, FrozenSet, List, Optional, Tuple

from defan_pytest.records.common import Json, extra_of
from defan_pytest.records.prompt import ScoredRecord

__all__ = [
    "SCHEMA", "SCHEMA_VERSION", "Calls", "DatasetMeta", "Merged", "ModelMeta", "Report", "ReportMeta", "ScorerMeta",
    "Selection",
]

#: The value of every report's ``schema`` key, and the version this code writes and reads.
SCHEMA = "defan-pytest-report"
SCHEMA_VERSION = 1


# -- the report's metadata -----------------------------------------------------------------------

_MODEL_KEYS = {
    "callable": ("name", "kind", "version", "source"),
    "litellm": ("name", "kind", "model", "system_prompt", "version", "params"),
}


class _Fields:
    """``to_json``/``from_json`` of a record whose JSON is its fields in their order: tuples as
    lists, mappings copied, the fields in ``_omitted`` left out when ``None``, ``extra`` last."""

    _omitted: ClassVar[FrozenSet[str]] = frozenset()

    def to_json(self) -> Json:
        out: Json = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if f.name == "extra" or (value is None and f.name in self._omitted):
                continue
            out[f.name] = list(value) if isinstance(value, tuple) else dict(value) if isinstance(value, Mapping) else value
        out.update(getattr(self, "extra", {}))
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Any:
        """The record of ``data`` (a key without a default is required); unknown keys kept."""
        values: Dict[str, Any] = {}
        names = []
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if f.name == "extra":
                continue
            names.append(f.name)
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            value = data[f.name] if required else data.get(f.name, f.default)
            values[f.name] = tuple(value) if isinstance(value, list) else value
        values["extra"] = extra_of(data, names)
        return cls(**values)


@dataclass(frozen=True)
class ModelMeta(_Fields):
    """The model a run asked, without a secret: a registered callable's ``name``, ``version``
    and ``source`` digest; a litellm model's ``name``, ``model`` string, ``system_prompt``,
    ``version`` and public call ``params``."""

    name: str
    kind: str
    version: Optional[str] = None
    source: Optional[str] = None
    model: Optional[str] = None
    system_prompt: Optional[str] = None
    params: Optional[Mapping[str, Any]] = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        """One line: the name, the model string when it differs, the version and the source."""
        parts = [self.name]
        if self.model and self.model != self.name:
            parts.append(self.model)
        if self.version is not None:
            parts.append(f"version {self.version}")
        if self.source:
            parts.append(f"source {self.source}")
        return " ".join(parts)

    def to_json(self) -> Json:
        """The keys a model of its kind has, in that kind's order (what it has, for another kind)."""
        every = super().to_json()
        keys = _MODEL_KEYS.get(self.kind) or [k for k, v in every.items() if v is not None or k in ("name", "kind")]
        out = {k: every[k] for k in keys}
        out.update(self.extra)
        return out


@dataclass(frozen=True)
class DatasetMeta(_Fields):
    """The identity of a data set: the public split at its pinned commit, a file of one's own
    by its sha256, or the questions of a responses file (``identity`` is what two runs must
    share to be compared)."""

    _omitted = frozenset({"sha256"})

    source: str
    identity: str
    commit: Optional[str] = None
    sha256: Optional[Mapping[str, str]] = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        return f"{self.source} {self.identity}"


@dataclass(frozen=True)
class ScorerMeta(_Fields):
    """Which scorer ran: the ``rules`` version, and the spaCy pipeline if any (``ner``,
    ``pipeline``, ``version``)."""

    rules: str
    ner: bool
    pipeline: Optional[str] = None
    version: Optional[str] = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> Tuple[Any, ...]:
        """What two runs' scorers must share to be compared."""
        return (self.rules, self.ner, self.pipeline, self.version)

    def describe(self) -> str:
        if self.ner:
            return f"rules {self.rules} with spaCy {self.pipeline} {self.version or ''}".rstrip()
        return f"rules {self.rules}, no spaCy pipeline"


@dataclass(frozen=True)
class Selection(_Fields):
    """Which prompts a run selected: its ``domains``, ``sample`` and ``seed``, how many were
    ``selected`` and how many ``ran``, whether ``-k`` and the like ``narrowed`` it, and its
    ``shard`` (``"I/N"``)."""

    domains: Tuple[str, ...]
    sample: Optional[str]
    seed: int
    selected: int
    ran: int
    narrowed: bool = False
    shard: Optional[str] = None
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Calls(_Fields):
    """How a run's prompts were answered: ``prompts``, ``answered`` by the model, ``cached``,
    through a ``peer`` worker, ``retries`` and call ``errors``, with the errors' kinds
    (``defan score`` asks nothing: prompts and errors only)."""

    _omitted = frozenset({"prompts", "answered", "cached", "peer", "retries", "errors", "error_kinds"})

    prompts: Optional[int] = None
    answered: Optional[int] = None
    cached: Optional[int] = None
    peer: Optional[int] = None
    retries: Optional[int] = None
    errors: Optional[int] = None
    error_kinds: Optional[Mapping[str, int]] = None
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Merged(_Fields):
    """What ``defan merge`` joined: the number of ``shards``, their ``files`` and when each was
    ``created``."""

    shards: int
    files: Tuple[str, ...]
    created: Tuple[Optional[str], ...]
    extra: Mapping[str, Any] = field(default_factory=dict)


_META_KEYS = ("defan_pytest", "producer", "created", "model", "dataset", "scorer", "selection", "calls", "durations",
              "merged", "repeat")


@dataclass(frozen=True)
class ReportMeta:
    """A report's ``meta``: the ``version`` of defan-pytest (``defan_pytest`` in the JSON), the
    ``producer`` (``pytest``, ``defan score``, ``defan gate``, ``defan merge``), when it was
    ``created``, and what ran: model, data set, scorer, selection, calls and durations (seconds);
    ``repeat``, when the run asked prompts more than once (``--defan-repeat``), how often their
    answers and verdicts agreed (optional: a reader that predates it keeps it in ``extra``)."""

    version: str
    producer: str
    created: str
    model: Optional[ModelMeta]
    dataset: DatasetMeta
    scorer: ScorerMeta
    selection: Selection
    calls: Calls
    durations: Mapping[str, Optional[float]]
    merged: Optional[Merged] = None
    repeat: Optional[Mapping[str, Any]] = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def model_name(self) -> Optional[str]:
        """The model's name, ``None`` for ``defan score``'s responses."""
        return self.model.name if self.model is not None else None

    def to_json(self) -> Json:
        out: Json = {
            "defan_pytest": self.version, "producer": self.producer, "created": self.created,
            "model": self.model.to_json() if self.model is not None else None,
            "dataset": self.dataset.to_json(), "scorer": self.scorer.to_json(), "selection": self.selection.to_json(),
            "calls": self.calls.to_json(), "durations": dict(self.durations),
        }
        if self.merged is not None:
            out["merged"] = self.merged.to_json()
        if self.repeat is not None:
            out["repeat"] = dict(self.repeat)
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ReportMeta":
        model, merged = data.get("model"), data.get("merged")
        return cls(
            version=str(data["defan_pytest"]), producer=str(data["producer"]), created=str(data["created"]),
            model=ModelMeta.from_json(model) if model is not None else None,
            dataset=DatasetMeta.from_json(data["dataset"]), scorer=ScorerMeta.from_json(data["scorer"]),
            selection=Selection.from_json(data["selection"]), calls=Calls.from_json(data["calls"]),
            durations=dict(data["durations"]), merged=Merged.from_json(merged) if merged is not None else None,
            repeat=dict(data["repeat"]) if isinstance(data.get("repeat"), Mapping) else None,
            extra=extra_of(data, _META_KEYS),
        )


# -- the report ----------------------------------------------------------------------------------

_REPORT_KEYS = ("schema", "schema_version", "meta", "thresholds", "gate_status", "gate", "regression", "power",
                "domains", "overall", "usage", "rows")


@dataclass(frozen=True)
class Report:
    """A report: its metadata, the limits that judged it (``thresholds``) and the level gate's
    verdicts (``gate``, ``gate_status``), the regression gate's comparison (``regression``), the
    figures (``domains``, ``overall``: :func:`defan_pytest.metrics.summary.summarize`), the
    usage block and the per-prompt rows.  The figures, verdicts and comparison are the JSON their
    makers give (gates, metrics, usage), kept as they are."""

    meta: ReportMeta
    rows: Tuple[ScoredRecord, ...]
    domains: Mapping[str, Any]
    overall: Mapping[str, Any]
    thresholds: Optional[Mapping[str, Any]] = None
    gate_status: str = "not judged"
    gate: Tuple[Mapping[str, Any], ...] = ()
    regression: Optional[Mapping[str, Any]] = None
    usage: Optional[Mapping[str, Any]] = None
    #: The smallest change each judged scope could catch (:func:`defan_pytest.gates.regression.power`).
    power: Optional[Mapping[str, Any]] = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def figure(self) -> str:
        """Which overall figure the limits apply to: ``mean`` (of domains) or ``pooled``."""
        return str((self.thresholds or {}).get("figure") or "mean")

    @property
    def breaches(self) -> List[Mapping[str, Any]]:
        """The level gate's verdicts that failed it (a limit breached, too few samples)."""
        return [v for v in self.gate if v.get("status") in ("fail", "insufficient")]

    def to_json(self, rows: bool = True) -> Json:
        """The report's JSON (``rows=False``: all of it but the rows)."""
        out: Json = {
            "schema": SCHEMA, "schema_version": SCHEMA_VERSION, "meta": self.meta.to_json(),
            "thresholds": dict(self.thresholds) if self.thresholds is not None else None,
            "gate_status": self.gate_status, "gate": [dict(v) for v in self.gate],
            "regression": dict(self.regression) if self.regression is not None else None,
            "domains": dict(self.domains), "overall": dict(self.overall),
        }
        if self.power is not None:
            out["power"] = dict(self.power)
        if self.usage is not None:
            out["usage"] = dict(self.usage)
        out.update(self.extra)
        if rows:
            out["rows"] = [r.report_row() for r in self.rows]
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Report":
        """A report from its JSON (as :func:`defan_pytest.report.schema.load_report` checked it)."""
        thresholds, regression, usage = data.get("thresholds"), data.get("regression"), data.get("usage")
        power = data.get("power")
        return cls(
            meta=ReportMeta.from_json(data["meta"]),
            rows=tuple(ScoredRecord.from_json(r) for r in data["rows"]),
            domains=dict(data["domains"]), overall=dict(data["overall"]),
            thresholds=dict(thresholds) if thresholds is not None else None,
            gate_status=str(data.get("gate_status", "not judged")), gate=tuple(data.get("gate") or ()),
            regression=dict(regression) if regression is not None else None,
            usage=dict(usage) if usage is not None else None,
            power=dict(power) if isinstance(power, Mapping) else None,
            extra=extra_of(data, _REPORT_KEYS),
        )
