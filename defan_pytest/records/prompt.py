"""One prompt, asked and scored: :class:`ScoredRecord`, the record an item carries to the
controller and a row of the report."""
from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from defan_pytest.records.common import Json, extra_of
from defan_pytest.records.finish import finish_reason_of
from defan_pytest.records.kinds import error_kind

__all__ = ["RECORD_KEYS", "REPEAT_KEYS", "ScoredRecord"]


#: The keys of a record as it travels, in order (``note`` only when there is one; ``extra``
#: after them).
RECORD_KEYS = (
    "id", "domain", "group", "type", "claim", "aligned", "correct", "error", "note", "index", "question", "answer",
    "response", "via", "answered_by", "attempts", "prompt_tokens", "completion_tokens", "latency", "finish_reason",
    "cost", "repeats",
)
#: The keys a record has only when they are set (``note``: a note; ``repeats``: extra asks).
_WHEN_SET = ("note", "repeats")
#: What a report keeps of each extra ask of ``--defan-repeat``: its verdict and its answer.
REPEAT_KEYS = ("repeat", "claim", "aligned", "correct", "error", "response")
_RECORD_KEYSET = frozenset(RECORD_KEYS)
#: The keys of a report row, in order (the optional ones only when set).
_ROW_HEAD = ("id", "domain", "group", "type", "claim", "aligned", "correct", "error", "question", "answer", "response")
_ROW_OPTIONAL = ("note", "attempts", "answered_by", "finish_reason", "latency", "cost")


@dataclass(frozen=True, slots=True)
class ScoredRecord(Mapping[str, Any]):
    """One prompt, asked and scored.

    ``id``, ``domain``, ``group`` (the paraphrase group's key, unique across domains) and
    ``type`` name the prompt; ``claim``, ``aligned``, ``correct`` and ``error`` are its score
    (all ``None`` but ``error`` for a failed call); ``question``, ``answer`` (the gold) and
    ``response`` its text; ``note`` what was read other than as written.  A record of a run
    also has its ``index`` in the selection and how it was answered: ``via`` (``model``,
    ``cache``, ``peer``), ``answered_by`` (which process of the run asked the model, or the
    cache), ``attempts``, the tokens and the ``latency``.  ``finish_reason``: why the model
    stopped, as the provider said it (``stop``, ``length``: cut by the token limit, ...;
    ``None``: unknown), which the scorer read.  ``repeats``: the extra asks of
    ``--defan-repeat`` (each its ``repeat`` number, ``claim``, ``aligned``, ``correct``,
    ``error`` and ``response``), which count in every figure; ``cost``: the dollars its calls
    cost in this run (0 for a cached answer; ``None`` when no price or no token count is known).
    ``extra``: keys of a saved row this version does not know.
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
    finish_reason: Optional[str] = None
    cost: Optional[float] = None
    repeats: tuple[Mapping[str, Any], ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def error_kind(self) -> Optional[str]:
        """The kind of its call error (:func:`error_kind`), or ``None``."""
        return error_kind(self.error)

    # The mapping a record reads as: the keys it travels with.
    def __getitem__(self, key: str) -> Any:
        if key in _RECORD_KEYSET:
            value = getattr(self, key)
            if key in _WHEN_SET and not value:
                raise KeyError(key)
            return value
        return self.extra[key]

    def __iter__(self) -> Iterator[str]:
        for key in RECORD_KEYS:
            if key not in _WHEN_SET or getattr(self, key):
                yield key
        yield from self.extra

    def __len__(self) -> int:
        return len(RECORD_KEYS) - sum(1 for key in _WHEN_SET if not getattr(self, key)) + len(self.extra)

    def to_json(self) -> Json:
        """The record as it travels (to the controller, into the figures): a plain dict."""
        out = dict(self)
        if self.repeats:
            out["repeats"] = [dict(a) for a in self.repeats]
        return out

    def report_row(self) -> Json:
        """The record as a row of the report: the score, the texts, the error's kind, and
        ``note``, ``attempts``, ``answered_by`` and ``finish_reason`` when set."""
        row = {k: getattr(self, k) for k in _ROW_HEAD}
        row["error_kind"] = self.error_kind
        for k in _ROW_OPTIONAL:
            value = getattr(self, k)
            if value is not None:
                row[k] = value
        if self.repeats:
            row["repeats"] = [{k: a.get(k) for k in REPEAT_KEYS} for a in self.repeats]
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
            finish_reason=finish_reason_of(get("finish_reason")),
            cost=_number_of(get("cost")), repeats=_repeats_of(get("repeats")),
            extra=extra_of(data, (*RECORD_KEYS, "error_kind")),
        )


def _number_of(value: Any) -> Optional[float]:
    """A number >= 0 read back, or ``None``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0:
        return float(value)
    return None


def _repeats_of(value: Any) -> tuple[Mapping[str, Any], ...]:
    """A record's extra asks as read back (a report's row, an item's JSON): each a mapping of
    :data:`REPEAT_KEYS`, in ``repeat`` order; anything else is no extra ask."""
    if not isinstance(value, (list, tuple)):
        return ()
    asks = [{k: a.get(k) for k in REPEAT_KEYS} for a in value if isinstance(a, Mapping)]
    return tuple(sorted(asks, key=lambda a: a["repeat"] if isinstance(a["repeat"], int) else 0))
