"""The one builder of a report and its metadata, for the plugin's run and every ``defan`` command.

A report is made of typed records (:mod:`defan_pytest.records`): :func:`build_meta` states who
made it and from what (the package version and the time are added here, once), from the parts
this module describes the same way for every producer: :func:`model_meta`, :func:`dataset_meta`
(the public split, or a file by its sha256), :func:`questions_meta` (the questions of a
``defan score`` responses file), :func:`scorer_meta` and :func:`call_counts` (with the call
errors by kind).  :func:`build_report` joins the metadata, the figures, the verdicts and the
rows into a :class:`~defan_pytest.records.Report`; :func:`gate_status` is the level gate's word.
Nothing here imports pytest.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

from defan_pytest import dataset
from defan_pytest.calls import budget, models, redaction
from defan_pytest.dataset import reader
from defan_pytest.report.cut import count_cut
from defan_pytest.records import Calls, DatasetMeta, ModelMeta, Report, ReportMeta, ScoredRecord, ScorerMeta
from defan_pytest.records import Selection, error_kinds
from defan_pytest.scoring import ner
from defan_pytest.version import RULES_VERSION, __version__

__all__ = [
    "build_meta",
    "build_report",
    "call_counts",
    "dataset_meta",
    "gate_status",
    "model_meta",
    "now",
    "questions_meta",
    "rejudged",
    "scorer_meta",
]


def now() -> str:
    """The time a report is created: UTC, to the second (``2030-01-01T12:00:00Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def model_meta(model: Any) -> Optional[ModelMeta]:
    """The model's identity, without a secret: a callable's name, version and source digest; a
    litellm model's string, system prompt and public call parameters (``None`` for anything
    else)."""
    if isinstance(model, models.CallableModel):
        covered = {"fingerprint": model.fingerprint.to_json()} if model.fingerprint is not None else {}
        return ModelMeta(model.name, "callable", version=model.version, source=model.source, extra=covered)
    if isinstance(model, models.LitellmModel):
        params = dict(model.params)
        secrets = redaction.known_secrets(params)
        version = params.get("version")
        return ModelMeta(
            model.name, "litellm", model=model.model, system_prompt=model.system_prompt,
            version=version if isinstance(version, str) else None,
            params=redaction.public_identity(params, secrets, hide_headers=True),
        )
    return None


def dataset_meta(spec: str, root: Optional[Path], domains: Sequence[str]) -> DatasetMeta:
    """The identity of a data set: the public split at its pinned commit (its files are checked
    against their sha256 wherever they are read from), or a file of one's own by its sha256."""
    path = dataset.dataset_file(spec, root)
    if path is None or path.is_dir():
        wanted = [d for d in dataset.DOMAINS if d in set(domains)] if domains else list(dataset.DOMAINS)
        return DatasetMeta(
            "public", f"DefAn-public@{dataset.PUBLIC_COMMIT[:12]}", dataset.PUBLIC_COMMIT,
            {d: dataset.get_domain(d).sha256 for d in wanted},
        )
    try:
        sha = reader.sha256_of(path)  # the one reader: never a FIFO or a device read forever
    except reader.InputError:
        sha = "unreadable"
    return DatasetMeta(path.name, f"file:{sha[:16]}", None, {path.name: sha})


def questions_meta(name: str, records: Sequence[ScoredRecord]) -> DatasetMeta:
    """A responses file's data set (``defan score``): the digest of its ids, questions, golds
    and types (not of the responses), so that two models' responses to the same questions can
    be compared."""
    digest = hashlib.sha256()
    for r in records:
        digest.update(json.dumps([r.id, r.question, r.answer, r.type], ensure_ascii=False).encode("utf-8"))
        digest.update(b"\n")
    sha = digest.hexdigest()
    return DatasetMeta(name, f"questions:{sha[:16]}", None, {"questions": sha})


def scorer_meta(pipeline: Optional[str]) -> ScorerMeta:
    """Which scorer ran: the rules version and the spaCy pipeline (:func:`ner.describe`)."""
    info = ner.describe(pipeline)
    return ScorerMeta(RULES_VERSION, info["ner"], info["pipeline"], info["version"])


def call_counts(records: Sequence[ScoredRecord], *, asked: bool = True) -> Calls:
    """How the prompts were answered, with the call errors by kind.

    ``asked``: the records' answers came from model calls (a run of the plugin): prompts,
    answered by the model, from the cache (whichever process of the run read it:
    ``answered_by``, not ``via``), ``not_sent`` (the budget, or the run stopped first:
    :func:`defan_pytest.calls.budget.not_sent`) and ``failed`` (sent, no answer) -- which add
    up to the prompts --, through another worker, retries and call errors (not sent and
    failed); ``cut``: the answers cut by the token limit (:mod:`defan_pytest.report.cut`).  Otherwise (``defan score``'s responses) prompts and errors only.
    """
    kinds = error_kinds(r.error for r in records)
    if not asked:
        return Calls(prompts=len(records), errors=kinds.total, error_kinds=dict(kinds.counts),
                     extra={"cut": cut} if (cut := count_cut(records)) else {})
    if not records:
        return Calls(error_kinds={})

    def by(r: ScoredRecord) -> str:
        return str(r.answered_by or ("cache" if r.via == "cache" else "model"))

    answers = [r for r in records if not r.error]
    cached = sum(1 for r in answers if by(r) == "cache")
    unsent = sum(1 for r in records if r.error and budget.not_sent(r.error))
    return Calls(
        prompts=len(records), answered=len(answers) - cached, cached=cached,
        peer=sum(1 for r in records if r.via == "peer"),
        retries=sum(max(0, (r.attempts or 1) - 1) for r in records if by(r) == "model"),
        errors=kinds.total, error_kinds=dict(kinds.counts),
        extra={"not_sent": unsent, "failed": len(records) - len(answers) - unsent, "cut": count_cut(answers)},
    )


def with_pace(calls: Calls, pace: Optional[Mapping[str, Any]]) -> Calls:
    """``calls`` with the pace of the requests (:mod:`defan_pytest.calls.pace`) when it was
    adaptive."""
    if not pace or not pace.get("adaptive", True):
        return calls
    return dataclasses.replace(calls, extra={**calls.extra, "pace": dict(pace)})


def build_meta(
    *,
    producer: str,
    model: Optional[ModelMeta],
    dataset: DatasetMeta,
    scorer: ScorerMeta,
    selection: Selection,
    calls: Calls,
    durations: Mapping[str, Optional[float]],
    created: Optional[str] = None,
    repeat: Optional[Mapping[str, Any]] = None,
    extra: Optional[Mapping[str, Any]] = None,
) -> ReportMeta:
    """A report's metadata (``meta``): this version of defan-pytest, the time (``created``, or
    now), and what ran; ``repeat``: the agreement of the prompts asked more than once
    (``--defan-repeat``, :func:`defan_pytest.metrics.repeats.agreement`); ``extra``: further
    blocks (``sequential``: where a ``--defan-sequential`` run stopped)."""
    return ReportMeta(
        version=__version__, producer=producer, created=created or now(), model=model, dataset=dataset,
        scorer=scorer, selection=selection, calls=calls, durations=dict(durations),
        repeat=dict(repeat) if repeat is not None else None, extra=dict(extra or {}),
    )


def rejudged(meta: ReportMeta, producer: str, *, created: Optional[str] = None) -> ReportMeta:
    """The metadata of a saved run judged again by ``producer`` (``defan gate``, ``defan
    merge``): the same run, said to be judged by it (and made ``created``, when given)."""
    return dataclasses.replace(meta, producer=producer, created=created or meta.created)


def gate_status(verdicts: Sequence[Any], skipped: bool = False) -> str:
    """One word for the level gate: ``skipped`` (a narrowed selection), ``fail`` (a limit
    breached or a figure not judged for want of samples), ``pass``, or ``not judged``."""
    if skipped:
        return "skipped"
    statuses = {v.status for v in verdicts}
    if statuses & {"fail", "insufficient"}:
        return "fail"
    return "pass" if statuses & {"pass", "undecided"} else "not judged"


def build_report(
    rows: Sequence[ScoredRecord],
    summary: Mapping[str, Any],
    meta: ReportMeta,
    *,
    thresholds: Optional[Mapping[str, Any]] = None,
    verdicts: Sequence[Any] = (),
    gate_status: str = "not judged",
    regression: Optional[Mapping[str, Any]] = None,
    usage: Optional[Mapping[str, Any]] = None,
    power: Optional[Mapping[str, Any]] = None,
) -> Report:
    """The report (``report.schema.json``, version 1): ``meta``, the thresholds and the level
    gate's ``verdicts`` (:class:`defan_pytest.gates.level.Verdict`), the regression gate's
    comparison, the figures (:func:`defan_pytest.metrics.summary.summarize` of ``rows``), the
    usage block and the rows."""
    return Report(
        meta=meta, rows=tuple(rows),
        domains=dict(summary.get("domains") or {}), overall=dict(summary.get("overall") or {}),
        thresholds=dict(thresholds) if thresholds is not None else None, gate_status=gate_status,
        gate=tuple(
            {"scope": v.scope, "metric": v.metric, "status": v.status, "value": v.value, "limit": v.limit,
             "message": v.message}
            for v in verdicts
        ),
        regression=dict(regression) if regression is not None else None,
        usage=dict(usage) if usage is not None else None,
        power=dict(power) if power is not None else None,
    )
