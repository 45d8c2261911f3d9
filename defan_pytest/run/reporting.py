"""What a run reports (a mixin of :class:`~defan_pytest.run.Run`): how its prompts were
answered, its usage, its metadata, how many requests were in flight, and its report, written in
every format asked for.  Read on the controller after :meth:`~defan_pytest.run.Run.finish`."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from defan_pytest.calls import pace, usage
from defan_pytest.gates import regression
from defan_pytest.records import Report, ReportMeta, ScoredRecord, Selection
from defan_pytest.report import builder, formats
from defan_pytest.run import repeats, sequential
from defan_pytest.run.plan import model_price, output_context

if TYPE_CHECKING:
    from defan_pytest.cache.store import ResponseCache
    from defan_pytest.run.plan import Plan
    from defan_pytest.settings import Settings

__all__ = ["RunReport"]


class RunReport:
    """The report of a :class:`~defan_pytest.run.Run` (whose state it reads)."""

    settings: "Settings"
    plan: "Plan"
    records: List[Any]
    rows: List[Any]
    repeats: Dict[str, List[Dict[str, Any]]]
    created: str
    narrowed: bool
    durations: Dict[str, Optional[float]]
    agreement: Optional[Dict[str, Any]]
    paced: Optional[Dict[str, Any]]
    pool: Any
    watch: Optional["ResponseCache"]
    summary: Optional[Dict[str, Any]]
    thresholds: Any
    thresholds_source: Optional[str]
    verdicts: List[Any]
    gate_skipped: Optional[str]
    comparison: Optional[Dict[str, Any]]
    sequential: Optional[Dict[str, Any]]
    written: Dict[str, Path]
    report_error: Optional[str]

    @property
    def model_name(self) -> str:
        raise NotImplementedError

    def annotation_lines(self) -> Dict[str, int]:
        raise NotImplementedError

    def catchable(self) -> Optional[Dict[str, Any]]:
        raise NotImplementedError

    def call_counts(self) -> Dict[str, Any]:
        """How the prompts were answered (:func:`defan_pytest.report.builder.call_counts`,
        without the error kinds) and ``cached_from``: the model, version and source the cached
        answers belong to."""
        counts = builder.call_counts([ScoredRecord.from_json(r) for r in self.records]).to_json()
        counts.pop("error_kinds")
        return {**counts, "cached_from": self.cache_origin()}

    def cache_origin(self) -> str:
        """Which code the cached answers belong to: ``my-rag version 2024-06-01, source
        3f2a9c1b`` for a callable, the model string for litellm."""
        describe = getattr(self.plan.model, "describe", None)
        if callable(describe):
            return str(describe())
        return str(getattr(self.plan.model, "model", self.model_name))

    def usage(self) -> Dict[str, Any]:
        """The run's usage block (plain JSON, :func:`defan_pytest.calls.usage.summarize`): tokens,
        latency percentiles, cost and the budget, from the records and the extra asks."""
        return usage.summarize(repeats.usage_records(self.records, self.repeats), budget=self.settings.budget,
                               price=model_price(self.plan.model, local=True), path=self.plan.call_path)

    def usage_lines(self) -> List[str]:
        """The usage lines of the terminal summary."""
        return usage.format_summary(self.usage())

    def meta(self) -> ReportMeta:
        """The run's metadata (:func:`defan_pytest.report.builder.build_meta`)."""
        s, records = self.settings, self.records
        return builder.build_meta(
            producer="pytest", created=self.created, model=builder.model_meta(self.plan.model),
            dataset=builder.dataset_meta(s.dataset, s.root, s.domains), scorer=builder.scorer_meta(s.spacy_model),
            selection=Selection(
                domains=self.plan.selection_domains or tuple(sorted({r.domain for r in self.rows})),
                sample=str(s.sample) if s.sample is not None else None, seed=s.seed, selected=len(self.rows),
                ran=len(records), narrowed=self.narrowed, shard=self.plan.shard,
            ),
            calls=builder.with_pace(builder.call_counts(records), self.pace()), durations=self.durations,
            repeat=self.agreement, extra=self.sequential_block(),
        )

    def sequential_block(self) -> Dict[str, Any]:
        """``--defan-sequential``: the report's ``meta.sequential`` (where the run stopped and
        what it saved), else nothing."""
        if not self.settings.sequential or self.sequential is None:
            return {}
        return {"sequential": sequential.block(self.sequential, self.records, model_price(self.plan.model, local=True))}

    def pace(self) -> Optional[Dict[str, Any]]:
        """How many requests were in flight (:meth:`defan_pytest.calls.pace.Pace.snapshot`; an
        xdist run's workers combined; read by :meth:`finish`, before the workers' progress goes),
        or ``None`` (no call was made here)."""
        if self.paced is not None:
            return self.paced
        if self.pool is not None:
            snap: Dict[str, Any] = dict(self.pool.pace.snapshot())
            rates = getattr(getattr(self.pool, "asker", None), "rates", None)
            if rates is not None and rates.active:
                snap["rates"] = rates.snapshot()  # the rate limits kept (calls.ratelimits)
            return snap
        stats = self.watch.run_progress()[0] if self.watch is not None else None
        return pace.combined((stats or {}).get("paces") or []) or None

    def report(self) -> Report:
        """The report of the run (after :meth:`finish`)."""
        assert self.summary is not None
        limits = regression.thresholds_meta(self.thresholds, self.summary, self.settings.decide)
        if limits is not None:
            limits["source"] = self.thresholds_source
        return builder.build_report(
            self.records, self.summary, self.meta(), thresholds=limits, verdicts=self.verdicts, gate_status=builder.gate_status(self.verdicts, skipped=self.gate_skipped is not None),
            regression=self.comparison, usage=self.usage(), power=self.catchable(),
        )

    def write_context(
        self, environ: Optional[Mapping[str, str]] = None, annotate: Optional[Callable[[str], None]] = None,
    ) -> formats.Context:
        """How the run's outputs are written (:func:`defan_pytest.run.plan.output_context`),
        with the lines of the thresholds file for annotations; ``environ`` and ``annotate``
        for the formats the environment asks for (GitHub Actions)."""
        context = output_context(self.settings, self.plan.inputs, self.plan.baseline)
        return formats.Context(
            inputs=context.inputs, force=context.force, force_hint=context.force_hint, baseline=context.baseline,
            baseline_path=context.baseline_path, annotation_lines=self.annotation_lines(), annotate=annotate,
            environ=environ or {},
        )

    def write_report(
        self, report: Optional[Report] = None, environ: Optional[Mapping[str, str]] = None,
        annotate: Optional[Callable[[str], None]] = None,
    ) -> None:
        """Write ``report`` (by default :meth:`report`) in every format asked for (:func:`defan_pytest.report.formats.write_all`):
        each output option given, and those the ``environ`` asks for (empty: none).

        A write that fails (a full disk, a file that appeared since the run was configured) is
        not raised: its message is kept in :attr:`report_error` for the front end to show, since
        the run's results are in by then.
        """
        if not self.settings.outputs and not environ:
            return
        report = self.report() if report is None else report
        written = formats.write_all(report, self.settings.outputs, self.write_context(environ, annotate))
        self.written = written.paths
        self.report_error = "; ".join(written.problems) or None
