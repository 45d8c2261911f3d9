"""One DefAn run, without pytest: the orchestration of the call pool, scoring, figures, gates
and outputs.

The plugin (:mod:`defan_pytest.plugin`) builds a :class:`Run` from its :class:`Settings` in
``pytest_configure`` and drives it from its hooks.  Everything pytest-specific (items, reports,
the terminal, xdist's worker ids) stays in the plugin and reaches this module as plain values;
what the run is to do is loaded and checked before any call by :mod:`defan_pytest.run.plan`,
its report is built by :mod:`defan_pytest.report.builder` and written by the report formats
(:mod:`defan_pytest.report.formats`).

The steps, in the order a run takes them::

    Run.configure(settings)        the Plan: selected rows, thresholds, model, outputs (all checked)
    run.start_pool(rows, worker)   every prompt through one bounded pool (and the cache)
    run.score_all(rows)            claims and verdicts, NER batched with nlp.pipe
    run.record(row, index)         the ScoredRecord an item carries to the controller
    run.finish()                   domain figures and the gate's verdicts (controller only)
    run.compare()                  the regression gate, with a baseline
    run.write_report()             every output asked for, from run.report()

What the run reports (its metadata, usage and the report written in every format) is
:class:`~defan_pytest.run.reporting.RunReport`, a mixin of :class:`Run`.
"""
from __future__ import annotations

import functools
import os
import shutil
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Dict, List, Optional

from defan_pytest.cache.store import ResponseCache
from defan_pytest.calls import redaction
from defan_pytest.calls.prices import Price
from defan_pytest.calls.pool import CallPool
from defan_pytest.calls.protocol import Response
from defan_pytest.gates import level, regression
from defan_pytest.gates.sequential import Judge, where_text
from defan_pytest.metrics.summary import summarize
from defan_pytest.records import ScoredRecord
from defan_pytest.report import builder
from defan_pytest.run import repeats
from defan_pytest.run.sequential import Asking
from defan_pytest.run.plan import PickBackend, Plan, budget, cache_folder, estimate_line, model_price, prepare
from defan_pytest.run.reporting import RunReport
from defan_pytest.run.worker import Worker
from defan_pytest.scoring.scorer import ScoreInput, Scorer
from defan_pytest.settings import Settings

__all__ = ["Run", "Worker"]


class Run(RunReport):
    """Everything one process knows about a DefAn run (see the module docstring).

    From the :class:`~defan_pytest.run.plan.Plan`: ``rows``, ``thresholds`` and their
    ``thresholds_source``, ``baseline`` (the report), ``notes`` and ``gate_skipped`` (which the
    plugin sets too when it ran part of the selection, with ``narrowed``).  Filled as the run
    goes: ``pool``, ``records`` (one per prompt that ran: :class:`ScoredRecord`, or its JSON
    from an xdist worker until :meth:`finish` reads it), ``fatal`` (the failure that stopped
    the run), ``durations``, then ``summary``, ``verdicts``, ``comparison`` and what
    :meth:`write_report` wrote (``written``, ``report_error``).
    """

    def __init__(self, settings: Settings, plan: Plan) -> None:
        self.settings = settings
        self.plan = plan
        self.rows: List[Any] = list(plan.rows)
        self.thresholds = plan.thresholds
        self.thresholds_source = plan.thresholds_source
        self.baseline = plan.baseline.report if plan.baseline is not None else None
        self.notes: List[str] = list(plan.notes)
        self.gate_skipped = plan.gate_skipped
        self.narrowed = False
        self.run_id = uuid.uuid4().hex
        self.pool: Any = None
        self.cache: Optional[ResponseCache] = None
        self.scorer: Optional[Scorer] = None
        self.scores: Dict[str, Any] = {}  # row id -> Score, when scored in one batch
        self.records: List[Any] = []
        self.repeated = frozenset(plan.repeated)
        #: ``--defan-repeat``: each repeated prompt's extra asks (row id -> their JSON), and the
        #: figures of the agreement (controller, :meth:`finish`).
        self.repeats: Dict[str, List[Dict[str, Any]]] = {}
        self.agreement: Optional[Dict[str, Any]] = None
        self.fatal: Optional[str] = None
        self.watch: Optional[ResponseCache] = None  # an xdist controller's view of its workers' progress
        self.paced: Optional[Dict[str, Any]] = None  # what the pace of the calls settled on (finish)
        self.started = time.monotonic()
        self.created = builder.now()
        self.durations: Dict[str, Optional[float]] = {"calls": None, "scoring": None, "total": None}
        self.summary: Optional[Dict[str, Any]] = None
        self.verdicts: List[Any] = []
        self.comparison: Optional[Dict[str, Any]] = None
        self.power: Optional[Dict[str, Any]] = None
        #: Against the model ``--defan-compare-to`` names (a session of several models): the
        #: comparison, as the regression gate's (:meth:`compare_with`).
        self.versus: Optional[Dict[str, Any]] = None
        self.written: Dict[str, Path] = {}
        self.report_error: Optional[str] = None  # an output could not be written: why
        #: ``--defan-sequential``: the batches and the decision between them (the process that
        #: asks), and where the run stopped (``sequential``: the report's block; on an xdist
        #: controller, read from the items the workers did not ask).
        self.asking: Optional[Asking] = None
        self.sequential: Optional[Dict[str, Any]] = None

    @classmethod
    def configure(cls, settings: Settings, problems: Sequence[str] = (),
                  pick_backend: Optional[PickBackend] = None) -> "Run":
        """Load and check everything the run needs (:func:`defan_pytest.run.plan.prepare`);
        raise one :class:`~defan_pytest.settings.ConfigError` with every problem found
        (``problems``: those the caller found already; ``pick_backend``: the plugins' choice of
        model backend)."""
        return cls(settings, prepare(settings, problems, pick_backend))

    @property
    def model_name(self) -> str:
        """The name the run was asked for (``--defan-model``)."""
        return self.settings.model

    @property
    def report_path(self) -> Optional[Path]:
        """Where the JSON report (``--defan-report``) was written."""
        return self.written.get("json")

    @property
    def html_path(self) -> Optional[Path]:
        """Where the HTML report (``--defan-html``) was written."""
        return self.written.get("html")

    # -- calls -----------------------------------------------------------------------------

    def cache_folder(self, shared: bool) -> Optional[Path]:
        """Where this run's cache (and, when shared, its claims and progress) lives, or None."""
        return cache_folder(self.settings, shared, self.run_id)

    @functools.cached_property
    def price(self) -> Optional[Price]:
        """The model's price (:func:`defan_pytest.run.plan.model_price`), or ``None``."""
        return model_price(self.plan.model)

    def start_pool(self, rows: Sequence[Any], worker: Worker, on_fatal: Optional[Callable[[str], None]] = None) -> None:
        """Start asking the model every prompt of ``rows`` through one pool (returns at once).

        Under xdist the controller owns the one pool and runs the prompts' tests itself
        (:meth:`publish_selection`); ``on_fatal``: told the failure that stops the run.
        """
        s, model = self.settings, self.plan.model
        assert self.plan.backend is not None  # prepare() found one, or raised
        caller = self.plan.backend.caller(model, s.timeout)
        identity = dict(caller.identity)
        if identity.get("kind") == "callable" and identity.get("version") is None:
            identity["run"] = self.run_id  # no version: never reused across runs
        folder = self.cache_folder(worker.shared)
        # A worker that asks (a prompt's test run there after all) shares the run's claims; the
        # process that asks alone (serial, an xdist controller) is a session of its own on the
        # cache, which respects other runs' claims.
        shared = worker.shared and worker.is_worker
        store = None
        if folder is not None:
            store = ResponseCache(
                folder, identity, mode="use" if s.cache not in ("refresh", "off") else "refresh",
                run=self.run_id, shared=shared, owner=f"{worker.id}-{os.getpid()}", background=True,
                max_answer=s.max_answer,
            )
        self.cache = store

        def stopped(message: str) -> None:
            self.fatal = self.fatal or message
            if on_fatal is not None:
                on_fatal(message)

        self.pool = CallPool(
            caller, concurrency=self.plan.call_limits.get("concurrency", s.concurrency),
            rpm=self.plan.call_limits.get("rpm", s.rpm), tpm=s.tpm, retries=s.retries, timeout=s.timeout,
            max_backoff=s.max_backoff, store=store,
            secrets=redaction.known_secrets(getattr(model, "params", {}) or {}),
            budget=budget(s, model, self.price, store), max_answer=s.max_answer, on_notice=self.notes.append,
            adaptive=s.pace == "adaptive", processes=max(1, worker.count) if shared else 1,
            on_fatal=stopped if on_fatal is not None else None,
        )
        if not s.sequential:
            self.pool.start(repeats.asks(rows, self.plan.repeated, s.repeat))
            return
        self.asking = self._asking(rows, store)
        rotate = worker.offset_index if shared else 0

        def batch(rows: Sequence[Any]) -> List[Any]:
            asks = repeats.asks(rows, self.plan.repeated, s.repeat)
            offset = (len(asks) * rotate) // max(1, worker.count)
            return list(asks[offset:]) + list(asks[:offset])

        self.pool.start(batch(self.asking.first()), more=lambda: batch(self.asking.next() if self.asking else []))

    def _asking(self, rows: Sequence[Any], store: Any) -> Asking:
        """``--defan-sequential``: the run's batches, its judge and what the cache answers."""
        planned: Dict[str, Any] = {}
        groups: Dict[str, set] = {}
        for r in rows:
            groups.setdefault(r.domain, set()).add(r.group_key)
            g, p = planned.get(r.domain, (0, 0))
            planned[r.domain] = (g, p + 1)
        planned = {d: (len(groups[d]), p) for d, (_, p) in planned.items()}
        base = self.plan.baseline
        judge = Judge(self.thresholds, planned, [r.to_json() if hasattr(r, "to_json") else r for r in base.report.rows]
                      if base is not None else None, self.settings.repeat_reduce)
        cached: set = set()
        uncached = getattr(store, "uncached", None)
        if callable(uncached):
            asks = repeats.asks(rows, self.plan.repeated, self.settings.repeat)
            missing = set(uncached([a.stored for a in asks]))
            group_of = {r.id: r.group_key for r in rows}
            open_groups = {group_of[a.key.split("#repeat")[0]] for a in asks if a.stored in missing}
            cached = set(group_of.values()) - open_groups
        index = {r.id: i for i, r in enumerate(self.rows)}

        def records(batch: Sequence[Any]) -> List[Dict[str, Any]]:
            self.score_all([r for r in batch if r.id not in self.scores], keep=True)
            out = []
            for r in batch:
                made = self.record(r, index.get(r.id, 0)).to_json()
                again = self.repeat_answers(r)
                if again:
                    made["repeats"] = again
                out.append(made)
            return out

        return Asking(rows, self.plan.order, judge, records, cached)

    def publish_selection(self, rows: Sequence[Any], worker: Worker) -> None:
        """An xdist worker: the rows its collection selected (after -k, -m, --deselect ...),
        for the controller, which asks them through its one pool and runs their tests itself."""
        folder = self.cache_folder(shared=True)
        assert folder is not None  # a shared run always has one (a scratch folder without a cache)
        if self.cache is None:
            self.cache = ResponseCache(folder, {}, run=self.run_id, shared=True, owner=f"{worker.id}-{os.getpid()}")
        self.cache.publish_selection([r.id for r in rows])

    def selection(self) -> Optional[List[Any]]:
        """An xdist controller: the rows a worker selected, in the run's order (``None`` while no
        worker has said)."""
        folder = self.cache_folder(shared=True)
        if folder is None:
            return None
        if self.watch is None:
            self.watch = ResponseCache(folder, {}, run=self.run_id, shared=True, owner="controller")
        ids = self.watch.selection()
        if ids is None:
            return None
        wanted = set(ids)
        return [r for r in self.rows if r.id in wanted]

    def wait(self, tick: Callable[[], None] = lambda: None, deadline: Optional[float] = None) -> Optional[str]:
        """Wait for every call of the pool; return the fatal failure that stopped it, if any.

        ``deadline`` (a ``time.time()``): past it, no new prompt is sent and the run stops with
        the answers it has (they are in the cache for a resumed run).
        """
        while not self.pool.join(0.2):
            tick()
            if deadline is not None and time.time() > deadline and self.pool.fatal is None:
                self.pool.stop(
                    "the session timeout (--session-timeout) passed during the model calls; "
                    "every answer received is kept in the cache for the next run"
                )
        return self.pool.fatal  # type: ignore[no-any-return]

    def watch_progress(self) -> Callable[[], Any]:
        """On an xdist controller: a source of the workers' combined progress that also notes
        a fatal failure a worker published (in :attr:`fatal`)."""
        folder = self.cache_folder(shared=True)
        assert folder is not None
        watch = ResponseCache(folder, {}, run=self.run_id, shared=True, owner="controller")
        self.cache = self.watch = watch

        def source() -> Any:
            stats, fatal = watch.run_progress()
            if fatal and self.fatal is None:
                self.fatal = fatal
            return stats

        return source

    def publish_fatal(self) -> None:
        """A worker tells the controller (through the cache) that the run must stop."""
        if self.cache is not None and self.pool is not None:
            self.cache.report_progress(self.pool.stats.snapshot(), fatal=self.pool.fatal)

    def estimate_line(self, rows: Sequence[Any]) -> str:
        """What asking ``rows`` will send and cost, as the line printed before the first call
        (:func:`defan_pytest.run.plan.estimate_line`)."""
        return estimate_line(self.settings, self.plan, rows, model_price(self.plan.model, local=True), self.cache_folder(shared=False))

    # -- scoring ---------------------------------------------------------------------------

    def get_scorer(self) -> Scorer:
        """The scorer (built on first use: spaCy loads only if a response needs it)."""
        if self.scorer is None:
            self.scorer = Scorer(nlp=self.settings.spacy_model)
        return self.scorer

    def score_all(self, rows: Sequence[Any], keep: bool = False) -> None:
        """Score every row's answer in one batch (NER once through ``nlp.pipe``); ``keep``:
        add to the scores already made (a sequential run scores batch by batch)."""
        if not keep and self.asking is not None:
            rows = [r for r in rows if self.asking.was_asked(r.id) and r.id not in self.scores]
        inputs = [ScoreInput(r.question, r.answer, r.type, a.text, a.error, r.domain, a.finish_reason)
                  for r, a in ((r, self.pool.result(r.id)) for r in rows)]
        made = dict(zip((r.id for r in rows), self.get_scorer().score_many(inputs)))
        if keep or self.asking is not None:
            self.scores.update(made)
        else:
            self.scores = made

    def score(self, row: Any, response: Response) -> Any:
        """The :class:`~defan_pytest.scoring.scorer.Score` of one answer to ``row``."""
        return self.get_scorer().score(row.question, row.answer, row.type, response.text, error=response.error,
                                       domain=row.domain, finish_reason=response.finish_reason)

    def repeat_answers(self, row: Any) -> List[Dict[str, Any]]:
        """``--defan-repeat``'s extra asks of ``row``, scored (:func:`repeats.scored`; none for a
        row not repeated)."""
        if self.settings.repeat is None or row.id not in self.repeated:
            return []
        return repeats.scored(row, self.settings.repeat.times, self.pool.result, self.score)

    def record(self, row: Any, index: int) -> ScoredRecord:
        """The record of one row: its answer (waiting for it if need be), scored."""
        response = self.pool.result(row.id)
        score = self.scores.get(row.id) or self.score(row, response)
        # A note of the scorer (a very long response read in a window, NER unavailable), and of
        # the answer changed on its way in (invalid code points).
        note = "; ".join(n for n in (getattr(score, "note", None), response.note) if n) or None
        return ScoredRecord(
            id=row.id, domain=row.domain, group=row.group_key, type=row.type, claim=score.claim,
            aligned=score.aligned, correct=score.correct, error=score.error, note=note, index=index,
            question=row.question, answer=row.answer, response=response.text, via=response.via,
            answered_by=response.answered_by, attempts=response.attempts, prompt_tokens=response.prompt_tokens,
            completion_tokens=response.completion_tokens, latency=response.latency,
            finish_reason=response.finish_reason,
        )

    # -- the end ---------------------------------------------------------------------------

    def finish(self) -> None:
        """Controller: figures from every record, then the gate (not after a fatal stop)."""
        self.records = sorted((ScoredRecord.from_json(r) for r in self.records), key=lambda r: r.index or 0)
        self.paced = self.pace()
        if self.settings.repeat is not None and self.repeats:
            self.agreement = repeats.figures(self.records, self.repeats, self.settings.repeat.times,
                                             repeats.temperature_of(self.plan.model), self.settings.repeat_reduce)
            # Every answer counts: each record carries its extra asks into the figures, the
            # regression gate and the report.
            self.records = repeats.joined(self.records, self.repeats)
        self.records = repeats.priced(self.records, self.repeats, model_price(self.plan.model, local=True))
        self.summary = summarize(self.records, self.settings.repeat_reduce)
        self.verdicts = (
            level.explain_rc(level.check(self.summary, self.thresholds, decide=self.settings.decide), self.records)
            if self.fatal is None and self.records else []
        )
        self.durations["total"] = round(time.monotonic() - self.started, 3)

    def compare(self) -> Optional[Dict[str, Any]]:
        """The regression gate: this run's records against the baseline's rows (after
        :meth:`finish`); the JSON of the comparison, also kept in :attr:`comparison`."""
        base = self.plan.baseline
        if base is None:
            return None
        self.comparison = regression.judge(
            base.report.to_json(), self.records, self.thresholds, baseline_path=str(base.path),
            skipped=self.gate_skipped, forced=base.forced or None, noise=self.agreement, reduce=self.settings.repeat_reduce,
        )
        if self.settings.sequential and self.sequential is not None:
            # A regression found by a run that stopped early says where it stopped.
            where = f" ({where_text(self.sequential)})"
            for changes in self.comparison.get("scopes", {}).values():
                for change in changes.values():
                    if change.get("regressed"):
                        change["message"] = f"{change.get('message')}{where}"
        return self.comparison

    def catchable(self) -> Optional[Dict[str, Any]]:
        """The smallest change each judged scope could catch (:func:`defan_pytest.gates.regression.power`):
        from the comparison with the baseline when there is one, else from this run's own
        prompts (after :meth:`finish` and :meth:`compare`); ``None`` for a run that stopped or
        judged nothing."""
        if self.fatal is not None or not self.records or self.thresholds is None or self.gate_skipped:
            return None
        if self.power is None:
            self.power = regression.power(self.records, self.thresholds, self.settings.repeat_reduce, self.comparison)
        return self.power

    def compare_with(self, other: "Run") -> Dict[str, Any]:
        """This run against ``other``'s (a model of the same session, after both finished):
        the regression gate's paired test with ``other``'s records as the baseline, on the
        prompts both ran; also kept in :attr:`versus`."""
        reference = {"meta": {"model": {"name": other.model_name}, "created": other.created}, "rows": [r.report_row() for r in other.records]}
        skipped = self.gate_skipped or other.gate_skipped
        self.versus = regression.judge(reference, self.records, self.thresholds, baseline_path=f"--defan-compare-to {other.model_name}",
                                       skipped=skipped, noise=self.agreement, reduce=self.settings.repeat_reduce)
        return self.versus

    def thresholds_line(self, scope: str, verdicts: Sequence[Any]) -> int:
        """The 0-based line of the thresholds file a scope's verdict points at
        (:func:`defan_pytest.gates.level.verdict_line`)."""
        return level.verdict_line(self.thresholds, scope, verdicts)

    def regression_line(self, scope: str, changes: Mapping[str, Any]) -> int:
        """The 0-based line of the thresholds file a regression verdict points at
        (:func:`defan_pytest.gates.regression.tolerance_line`)."""
        return regression.tolerance_line(self.thresholds, scope, changes)

    def annotation_lines(self) -> Dict[str, int]:
        """1-based lines of the thresholds file for GitHub annotations (see
        :func:`defan_pytest.gates.regression.annotation_lines`)."""
        return regression.annotation_lines(self.thresholds, self.verdicts, self.comparison)

    def close(self, worker: Worker) -> None:
        """Stop the pool and close the cache; the controller of a shared run drops the run's
        claims, and a run without a cache removes its scratch folder."""
        if self.pool is not None:
            self.pool.close()
        stores = [c for c in (self.cache, self.watch) if c is not None]
        stores = [c for i, c in enumerate(stores) if c not in stores[:i]]
        if stores and not worker.is_worker and worker.shared:
            stores[0].drop_run()
        for store in stores:
            store.close()
        if stores and self.settings.cache == "off" and not worker.is_worker:
            shutil.rmtree(stores[0].folder, ignore_errors=True)
