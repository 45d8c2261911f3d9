"""Typed records: what flows between the parts of a run, and the report they make.

* :class:`ScoredRecord`: one prompt asked and scored, the record an item carries to the
  controller and a row of the report.  It reads as the plain-JSON record it travels as (a
  read-only mapping: ``rec["claim"]``, ``rec.get("error")``), so the figures, the metrics a user
  registers and the paired test read it as they read any record.
* :class:`ReportMeta` and its parts (:class:`ModelMeta`, :class:`DatasetMeta`,
  :class:`ScorerMeta`, :class:`Selection`, :class:`Calls`, :class:`Merged`): who made a report,
  from what, and how.
* :class:`Report`: the whole report (schema ``defan_pytest/report/report.schema.json``, the
  contract), built by :mod:`defan_pytest.report.builder` and read back by
  :func:`defan_pytest.report.schema.load_report`.

Each has ``to_json()`` (the report's JSON, keys in the report's order) and ``from_json()``
(reading that JSON back); keys this version does not know are kept (``extra``) and written back
after the known ones.  :func:`error_kind` and :func:`error_kinds` say what kind of failure a call
error is, in one place; :func:`row_problems` what makes a saved report's rows other than one
prompt each (an id twice, a domain or group that is not its id's).  The base layer: imports nothing of the package.  (Long because every
record of the report is here, each read both ways: the one place the report's JSON is written
and read.)

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

import dataclasses
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, FrozenSet, List, Optional, Tuple

__all__ = [
    "SCHEMA",
    "SCHEMA_VERSION",
    "Calls",
    "DatasetMeta",
    "ErrorKinds",
    "Merged",
    "ModelMeta",
    "Report",
    "ReportMeta",
    "ScoredRecord",
    "ScorerMeta",
    "Selection",
    "error_kind",
    "error_kinds",
    "row_problems",
]

#: The value of every report's ``schema`` key, and the version this code writes and reads.
SCHEMA = "defan-pytest-report"
SCHEMA_VERSION = 1

Json = Dict[str, Any]


def _extra(data: Mapping[str, Any], known: Iterable[str]) -> Json:
    """The keys of ``data`` that are not ``known``, in their order."""
    names = set(known)
    return {k: v for k, v in data.items() if k not in names}


# -- call errors ---------------------------------------------------------------------------------


def error_kind(error: Optional[str]) -> Optional[str]:
    """The kind of a call error, for grouping: its exception class (``RateLimitError``), or the
    message's first words when it names none; ``None`` for no error."""
    if not error:
        return None
    head = error.split(":", 1)[0].strip()
    head = head.split(" (HTTP", 1)[0].strip()
    return head[:80] or "error"


@dataclass(frozen=True)
class ErrorKinds:
    """The call errors of a run by kind: ``counts`` (kind -> how many, in the order first met)
    and ``examples`` (kind -> its first error message)."""

    counts: Mapping[str, int]
    examples: Mapping[str, str]

    @property
    def total(self) -> int:
        """Every call error counted."""
        return sum(self.counts.values())

    def most_common(self, limit: int) -> List[Tuple[str, int, str]]:
        """At most ``limit`` kinds, the most frequent first (then by name): (kind, count,
        first message)."""
        ranked = sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
        return [(kind, n, self.examples[kind]) for kind, n in ranked]


def error_kinds(errors: Iterable[Optional[str]]) -> ErrorKinds:
    """Count call errors (``None`` and empty messages are no error) by :func:`error_kind`."""
    counts: Dict[str, int] = {}
    examples: Dict[str, str] = {}
    for error in errors:
        kind = error_kind(error)
        if kind is not None and error is not None:
            counts[kind] = counts.get(kind, 0) + 1
            examples.setdefault(kind, error)
    return ErrorKinds(counts, examples)


# -- one prompt ----------------------------------------------------------------------------------

#: The keys of a record as it travels, in order (``note`` only when there is one; ``extra``
#: after them).
RECORD_KEYS = (
    "id", "domain", "group", "type", "claim", "aligned", "correct", "error", "note", "index", "question", "answer",
    "response", "via", "answered_by", "attempts", "prompt_tokens", "completion_tokens", "latency",
)
_RECORD_KEYSET = frozenset(RECORD_KEYS)
#: The keys of a report row, in order (the optional ones only when set).
_ROW_HEAD = ("id", "domain", "group", "type", "claim", "aligned", "correct", "error", "question", "answer", "response")
_ROW_OPTIONAL = ("note", "attempts", "answered_by")


@dataclass(frozen=True, slots=True)
class ScoredRecord(Mapping[str, Any]):
    """One prompt, asked and scored.

    ``id``, ``domain``, ``group`` (the paraphrase group's key, unique across domains) and
    ``type`` name the prompt; ``claim``, ``aligned``, ``correct`` and ``error`` are its score
    (all ``None`` but ``error`` for a failed call); ``question``, ``answer`` (the gold) and
    ``response`` its text; ``note`` what was read other than as written.  A record of a run
    also has its ``index`` in the selection and how it was answered: ``via`` (``model``,
    ``cache``, ``peer``), ``answered_by`` (which process of the run asked the model, or the
    cache), ``attempts``, the tokens and the ``latency``.  ``extra``: keys of a saved row this
    version does not know.
    """

    id: str
    domain: str
    group: str
    type: str
    claim: Optional[str] = None
    aligned: Optional[bool] = None
    correct: Optional[bool] = None
    error: Optional[str] = None
    note: Optional[str] = None
    index: Optional[int] = None
    question: str = ""
    answer: str = ""
    response: Optional[str] = None
    via: Optional[str] = None
    answered_by: Optional[str] = None
    attempts: Optional[int] = None
    prompt_tokens: Optional[int] = None
    completion_tokens: Optional[int] = None
    latency: Optional[float] = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def error_kind(self) -> Optional[str]:
        """The kind of its call error (:func:`error_kind`), or ``None``."""
        return error_kind(self.error)

    # The mapping a record reads as: the keys it travels with.
    def __getitem__(self, key: str) -> Any:
        if key in _RECORD_KEYSET:
            value = getattr(self, key)
            if value is None and key == "note":
                raise KeyError(key)
            return value
        return self.extra[key]

    def __iter__(self) -> Iterator[str]:
        for key in RECORD_KEYS:
            if key != "note" or self.note is not None:
                yield key
        yield from self.extra

    def __len__(self) -> int:
        return len(RECORD_KEYS) - (self.note is None) + len(self.extra)

    def to_json(self) -> Json:
        """The record as it travels (to the controller, into the figures): a plain dict."""
        return dict(self)

    def report_row(self) -> Json:
        """The record as a row of the report: the score, the texts, the error's kind, and
        ``note``, ``attempts`` and ``answered_by`` when set."""
        row = {k: getattr(self, k) for k in _ROW_HEAD}
        row["error_kind"] = self.error_kind
        for k in _ROW_OPTIONAL:
            value = getattr(self, k)
            if value is not None:
                row[k] = value
        row.update(self.extra)
        return row

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ScoredRecord":
        """A record from its JSON: as it travels (:meth:`to_json`) or a report's row
        (:meth:`report_row`; its ``error_kind`` is derived again, not read)."""
        if isinstance(data, ScoredRecord):
            return data
        get = data.get
        return cls(
            id=str(data["id"]), domain=str(data["domain"]), group=str(get("group") or ""), type=str(get("type") or ""),
            claim=get("claim"), aligned=get("aligned"), correct=get("correct"), error=get("error"),
            note=get("note"), index=get("index"), question=get("question") or "", answer=get("answer") or "",
            response=get("response"), via=get("via"), answered_by=get("answered_by"), attempts=get("attempts"),
            prompt_tokens=get("prompt_tokens"), completion_tokens=get("completion_tokens"), latency=get("latency"),
            extra=_extra(data, (*RECORD_KEYS, "error_kind")),
        )


# -- a report's rows, read back -----------------------------------------------------------------

# The two forms of a prompt id (after "<domain>-"): a data set's row, ``q<group>-p<paraphrase>``
# (defan_pytest.dataset.Row.id, group key ``<domain>-q<group>``), and a line of ``defan score``'s
# responses file, ``line<N>`` (group: the id itself, or ``<domain>-group-<label>``).
_ROW_ID = re.compile(r"(q[0-9]{4,})-p[0-9]{2,}\Z")
_LINE_ID = re.compile(r"line[1-9][0-9]*\Z")


def _id_problem(row: Mapping[str, Any]) -> Optional[str]:
    """Why ``row``'s domain or group is not the one its id names (``None``: they are)."""
    rid, domain, group = row["id"], row["domain"], row["group"]
    if not rid.startswith(f"{domain}-"):
        return f"id {rid!r} is not an id of its domain {domain!r}"
    rest = rid[len(domain) + 1:]
    m = _ROW_ID.match(rest)
    if m is not None:
        expected = f"{domain}-{m.group(1)}"
        return None if group == expected else f"id {rid!r} is of group {expected!r}, the row says {group!r}"
    if _LINE_ID.match(rest):
        if group == rid or group.startswith(f"{domain}-group-"):
            return None
        return f"id {rid!r} is of group {rid!r} or {domain + '-group-'!r}<label>, the row says {group!r}"
    return f"id {rid!r} is not a prompt id ({domain}-q<group>-p<paraphrase>, or {domain}-line<N>)"


def row_problems(
    rows: Sequence[Mapping[str, Any]],
    domains: Optional[Collection[str]] = None,
    one_type_per_group: bool = False,
    limit: int = 10,
) -> List[str]:
    """What makes saved report rows (their JSON, ``id``, ``domain``, ``group`` and ``type``
    strings) other than one prompt each: an id given twice, a domain or group that is not the
    one its id names, a domain not among ``domains`` (when given), and with
    ``one_type_per_group`` (the public split: one answer type a paraphrase group) a group of two
    types.  At most ``limit`` problems, each ``rows/<i>: what``.

    >>> row_problems([{"id": "nobel-q0001-p00", "domain": "nobel", "group": "nobel-q0001", "type": "name"},
    ...               {"id": "nobel-q0001-p00", "domain": "math", "group": "nobel-q0001", "type": "date"}],
    ...              one_type_per_group=True)  # doctest: +NORMALIZE_WHITESPACE
    ["rows/1: id 'nobel-q0001-p00' is given twice (first: rows/0)",
     "rows/1: id 'nobel-q0001-p00' is not an id of its domain 'math'"]
    """
    problems: List[str] = []
    first: Dict[str, int] = {}
    types: Dict[str, Tuple[str, int]] = {}
    for i, row in enumerate(rows):
        found = []
        rid = row["id"]
        if rid in first:
            found.append(f"id {rid!r} is given twice (first: rows/{first[rid]})")
        else:
            first[rid] = i
        if domains is not None and row["domain"] not in domains:
            found.append(f"domain {row['domain']!r} is not a domain of the data set")
        wrong = _id_problem(row)
        if wrong is not None:
            found.append(wrong)
        elif one_type_per_group:
            type0, i0 = types.setdefault(row["group"], (row["type"], i))
            if row["type"] != type0:
                found.append(f"type {row['type']!r} differs from {type0!r} of its group (rows/{i0})")
        problems.extend(f"rows/{i}: {text[:300]}" for text in found)
        if len(problems) >= limit:
            return problems[:limit] + ["... (more problems not shown)"]
    return problems


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
        values["extra"] = _extra(data, names)
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
              "merged")


@dataclass(frozen=True)
class ReportMeta:
    """A report's ``meta``: the ``version`` of defan-pytest (``defan_pytest`` in the JSON), the
    ``producer`` (``pytest``, ``defan score``, ``defan gate``, ``defan merge``), when it was
    ``created``, and what ran: model, data set, scorer, selection, calls and durations (seconds)."""

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
            extra=_extra(data, _META_KEYS),
        )


# -- the report ----------------------------------------------------------------------------------

_REPORT_KEYS = ("schema", "schema_version", "meta", "thresholds", "gate_status", "gate", "regression", "domains",
                "overall", "usage", "rows")


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
        return cls(
            meta=ReportMeta.from_json(data["meta"]),
            rows=tuple(ScoredRecord.from_json(r) for r in data["rows"]),
            domains=dict(data["domains"]), overall=dict(data["overall"]),
            thresholds=dict(thresholds) if thresholds is not None else None,
            gate_status=str(data.get("gate_status", "not judged")), gate=tuple(data.get("gate") or ()),
            regression=dict(regression) if regression is not None else None,
            usage=dict(usage) if usage is not None else None,
            extra=_extra(data, _REPORT_KEYS),
        )

