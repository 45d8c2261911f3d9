"""One DefAn run, without pytest: configuration, the call pool, scoring, figures, gate, report.

The plugin (:mod:`defan_pytest.plugin`) builds a :class:`Run` from its :class:`Settings` in
``pytest_configure`` and drives it from its hooks; ``defan score`` uses the same scoring and
report assembly.  Everything pytest-specific (items, reports, the terminal, xdist's worker
ids) stays in the plugin and reaches this module as plain values.

The steps, in the order a run takes them::

    Run.configure(settings)        dataset -> selected rows, thresholds, model (all validated)
    run.start_pool(rows, worker)   every prompt through one bounded pool (and the cache)
    run.score(rows)                claims and verdicts, NER batched with nlp.pipe
    run.record(row, index, ...)    the plain-JSON record an item carries to the controller
    run.finish(records)            domain figures and the gate's verdicts (controller only)
    run.report()                   the JSON report
"""
from __future__ import annotations

import os
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from defan_pytest.errors import problems_of
from defan_pytest.settings import DEFAULT_CACHE, ConfigError, Settings

__all__ = ["REPORT_ROW_KEYS", "Run", "Worker", "build_report", "record_of_score"]

#: The keys of a report row, in order (the plugin's rows also carry the response).
REPORT_ROW_KEYS = ("id", "domain", "group", "type", "claim", "aligned", "correct", "error")


@dataclass(frozen=True)
class Worker:
    """Where this process stands in a run: ``shared`` when several processes (xdist) split the
    calls through the cache; ``id`` and ``count`` of an xdist worker (``main`` otherwise)."""

    shared: bool = False
    id: str = "main"
    count: int = 1
    is_worker: bool = False

    @property
    def offset_index(self) -> int:
        """The worker's number (``gw3`` -> 3), 0 for anything else."""
        return int(self.id[2:]) if self.id.startswith("gw") and self.id[2:].isdigit() else 0


def record_of_score(row: Any, score: Any, **extra: Any) -> Dict[str, Any]:
    """The plain-JSON record of one scored row: what travels to the controller and into the
    figures and the report."""
    rec: Dict[str, Any] = {
        "id": row.id,
        "domain": row.domain,
        "group": row.group_key,
        "type": row.type,
        "claim": score.claim,
        "aligned": score.aligned,
        "correct": score.correct,
        "error": score.error,
    }
    if getattr(score, "note", None):  # a very long response read in a window, NER unavailable
        rec["note"] = score.note
    rec.update(extra)
    return rec


def build_report(
    rows: Sequence[Mapping[str, Any]],
    summary: Mapping[str, Any],
    model: Optional[str] = None,
    verdicts: Optional[Sequence[Any]] = None,
) -> Dict[str, Any]:
    """The JSON report: ``rows``, ``domains``, ``overall``, and with a model its name and the
    gate's verdicts (the plugin's report); ``defan score`` passes neither."""
    from defan_pytest import reports

    report = reports.build_report(rows, summary)
    if model is not None:
        report["model"] = model
        report["gate"] = [
            {"scope": v.scope, "metric": v.metric, "status": v.status, "value": v.value, "limit": v.limit,
             "message": v.message}
            for v in verdicts or ()
        ]
    return report


def _pyproject_models(root: Path, extra_domains: Sequence[str], problems: List[str]) -> Dict[str, Dict[str, Any]]:
    """Model tables from ``[tool.defan.models.<name>]`` in the rootdir's pyproject.toml."""
    from defan_pytest import thresholds

    path = root / "pyproject.toml"
    if not path.is_file():
        return {}
    try:
        data = thresholds.read_toml(path.read_text(encoding="utf-8-sig"), str(path))
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{path}: {exc}")
        return {}
    except thresholds.ThresholdsError as exc:
        problems.extend(problems_of(exc))
        return {}
    tool = data.get("tool")
    tool = tool.get("defan") if isinstance(tool, dict) else None
    if not isinstance(tool, dict):
        return {}
    unknown = sorted(set(tool) - {"models"})
    if unknown:
        problems.append(f"{path}: tool.defan.{unknown[0]}: unknown key; allowed: models")
    try:
        parsed = thresholds.parse_thresholds(
            {"models": tool.get("models", {})}, source=f"{path} [tool.defan]", extra_domains=extra_domains
        )
    except thresholds.ThresholdsError as exc:
        problems.extend(problems_of(exc))
        return {}
    return {n: parsed.model_params(n) for n in parsed.model_names}


class Run:
    """Everything one process knows about a DefAn run (see the module docstring)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.rows: List[Any] = []  # selected rows, dataset order
        self.answers: Dict[str, List[str]] = {}  # every domain's full answer list (gazetteer)
        self.thresholds: Any = None
        self.thresholds_source: Optional[str] = None
        self.model: Any = None
        self.run_id = uuid.uuid4().hex
        self.records: List[Dict[str, Any]] = []
        self.summary: Optional[Dict[str, Any]] = None
        self.verdicts: List[Any] = []
        self.pool: Any = None
        self.scorer: Any = None
        self.scores: Dict[str, Any] = {}  # row id -> Score, when scored in one batch
        self.cache: Any = None
        self.fatal: Optional[str] = None
        self.secrets: List[str] = []
        self.report_path: Optional[Path] = None
        self.report_error: Optional[str] = None  # the report could not be written: why
        self.inputs: List[Any] = []  # (what, path) of every file the run reads: never an output
        self.notes: List[str] = []  # what was read other than as written (invalid characters)
        self.started = time.monotonic()

    @property
    def model_name(self) -> str:
        """The name the run was asked for (``--defan-model``)."""
        return self.settings.model

    # -- configuration ----------------------------------------------------------------------

    @classmethod
    def configure(cls, settings: Settings, problems: Sequence[str] = ()) -> "Run":
        """Load and validate everything the run needs; raise one :class:`ConfigError` with
        every problem found (``problems``: those the caller found already)."""
        from defan_pytest import dataset, models, prompts, thresholds

        run = cls(settings)
        found: List[str] = list(problems)
        s = settings

        rows: Sequence[Any] = []
        user_domains: List[str] = []
        # A bad --defan-dataset or --defan-domain is already a problem: loading the default in
        # its place (the public split, all of it, perhaps downloaded) would be wasted, or wrong.
        if not {"dataset", "domain"} & s.invalid:
            try:
                loaded = dataset.load_dataset(s.dataset, s.domains, root=s.root)
                rows = loaded
                run.notes.extend(loaded.notes)
                # A user's own set: its domains may have thresholds too.
                user_domains = sorted(d for d in loaded.source_domains if d not in dataset.DOMAINS)
            except dataset.DatasetError as exc:
                found.extend(problems_of(exc))
        for r in rows:
            run.answers.setdefault(r.domain, []).append(r.answer)
        run.rows = prompts.select(rows, s.sample, s.seed) if rows else []

        # Thresholds: the file named, else thresholds.toml in the rootdir if there is one.
        tpath = Path(s.thresholds).expanduser() if s.thresholds else s.root / "thresholds.toml"
        if s.thresholds and not tpath.is_absolute():
            tpath = s.invocation_dir / tpath
        try:
            run.thresholds = thresholds.load_thresholds(
                tpath, extra_domains=user_domains, model=s.model, required=bool(s.thresholds)
            )
            run.thresholds_source = str(tpath) if tpath.exists() else None
        except thresholds.ThresholdsError as exc:
            found.extend(problems_of(exc))
            run.thresholds = thresholds.Thresholds.empty(model=s.model)

        # Model: [models.<name>] tables of pyproject.toml's [tool.defan], then of the thresholds
        # file (which wins for a name both define).
        tables = _pyproject_models(s.root, user_domains, found)
        sources = {n: str(s.root / "pyproject.toml") for n in tables}
        tables.update({n: run.thresholds.model_params(n) for n in run.thresholds.model_names})
        sources.update({n: str(tpath) for n in run.thresholds.model_names})
        problem = models.check_name(s.model, tables)
        if problem:
            found.append(f"--defan-model: {problem}")
        else:
            # A misspelt [models."..."] table would be ignored, its limits with it.
            found.extend(thresholds.model_table_typos(
                s.model, tables, sources, models.registered(), lambda n: models.check_name(n, {}) is None,
            ))
            run.model = models.resolve(s.model, tables, s.model_args)
            if isinstance(run.model, models.CallableModel) and s.model_args:
                found.append("--defan-model-arg: parameters apply to litellm models, not to a registered callable")

        # The report's path, checked now so that a bad one is a usage error before any call.
        run.inputs = [("the thresholds file", tpath), ("pyproject.toml", s.root / "pyproject.toml")]
        data_file = dataset.dataset_file(s.dataset, s.root)
        if data_file is not None:
            run.inputs.append(("the dataset", data_file))
        if s.report:
            from defan_pytest import outputs

            try:
                outputs.check_output(
                    s.resolve_output(s.report), inputs=run.inputs, force=s.force_output,
                    force_hint="--defan-force-output",
                )
            except outputs.OutputError as exc:
                found.append(f"--defan-report {exc}")

        # The response cache, before any call: a file in the way, a read-only folder or a corrupt
        # database is a usage error naming the path (--defan-cache=refresh moves a corrupt one
        # aside), never an INTERNALERROR half-way through the calls.
        found.extend(run.check_cache())

        if not run.rows and not found:
            found.append("no DefAn prompt selected: check --defan-domain, --defan-dataset and --defan-sample")
        if found:
            raise ConfigError(problems=found)
        return run

    def check_cache(self) -> List[str]:
        """Problems with the cache folder (see :func:`defan_pytest.cache.check_folder`); also
        removes the scratch folders that runs killed under ``--defan-cache=off`` left behind."""
        from defan_pytest import cache as cache_mod

        if self.settings.cache == "off":
            cache_mod.remove_dead_scratch(self.settings.root / DEFAULT_CACHE / "runs")
            return []
        folder = self.cache_folder(shared=False)
        assert folder is not None
        problem = cache_mod.check_folder(folder, refresh=self.settings.cache == "refresh", notes=self.notes)
        return [problem] if problem else []

    # -- calls -----------------------------------------------------------------------------

    def cache_folder(self, shared: bool) -> Optional[Path]:
        """Where this run's cache (and, when shared, its claims and progress) lives, or None."""
        mode = self.settings.cache
        root = self.settings.root
        if mode == "off":
            # Workers still need a place to share claims: a per-run folder, removed at the end.
            return root / DEFAULT_CACHE / "runs" / self.run_id if shared else None
        if mode == "refresh":
            return root / DEFAULT_CACHE
        folder = Path(mode).expanduser()
        return folder if folder.is_absolute() else root / folder

    def start_pool(self, rows: Sequence[Any], worker: Worker) -> None:
        """Start asking the model every prompt of ``rows`` through one pool (returns at once)."""
        from defan_pytest import cache as cache_mod
        from defan_pytest import calls, redaction

        s = self.settings
        caller = calls.make_caller(self.model, timeout=s.timeout, threads=s.concurrency)
        self.secrets = redaction.known_secrets(getattr(self.model, "params", {}) or {})
        identity = dict(caller.identity)
        if identity.get("kind") == "callable" and identity.get("version") is None:
            identity["run"] = self.run_id  # no version: never reused across runs
        folder = self.cache_folder(worker.shared)
        store = None
        if folder is not None:
            store = cache_mod.ResponseCache(
                folder, identity, mode="use" if s.cache not in ("refresh", "off") else "refresh",
                run=self.run_id, shared=worker.shared, owner=f"{worker.id}-{os.getpid()}", background=True,
            )
        self.cache = store
        if worker.shared:
            # Every worker walks the whole selection (claims keep each prompt to one call), each
            # from its own offset so that workers rarely contend for the same prompt.
            offset = (len(rows) * worker.offset_index) // max(1, worker.count)
            rows = list(rows[offset:]) + list(rows[:offset])
        prompts = [calls.Prompt(r.id, r.question) for r in rows]
        last = [0.0]

        def publish(stats: Any) -> None:
            # Under xdist the controller shows progress from what each worker publishes here.
            now = time.monotonic()
            if store is not None and worker.shared and (now - last[0] >= 0.5 or stats.done >= stats.total):
                last[0] = now
                store.report_progress(stats.snapshot())

        self.pool = calls.CallPool(
            caller, concurrency=s.concurrency, rpm=s.rpm, retries=s.retries, timeout=s.timeout,
            store=store, secrets=self.secrets, on_progress=publish,
        )
        self.pool.start(prompts)

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
        from defan_pytest import cache as cache_mod

        folder = self.cache_folder(shared=True)
        assert folder is not None
        watch = cache_mod.ResponseCache(folder, {}, run=self.run_id, shared=True, owner="controller")
        self.cache = watch

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

    # -- scoring ---------------------------------------------------------------------------

    def get_scorer(self) -> Any:
        """The scorer (built on first use: spaCy loads only if a response needs it)."""
        if self.scorer is None:
            from defan_pytest.scoring import Scorer

            self.scorer = Scorer(nlp=self.settings.spacy_model, answers=self.answers)
        return self.scorer

    def score_all(self, rows: Sequence[Any]) -> None:
        """Score every row's answer in one batch (NER once through ``nlp.pipe``)."""
        from defan_pytest.scoring import ScoreInput

        answers = [self.pool.result(r.id) for r in rows]
        inputs = [ScoreInput(r.question, r.answer, r.type, a.text, a.error, r.domain) for r, a in zip(rows, answers)]
        self.scores = dict(zip((r.id for r in rows), self.get_scorer().score_many(inputs)))

    def verdict(self, row: Any, index: int) -> Dict[str, Any]:
        """The record of one row: its answer (waiting for it if need be), scored."""
        response = self.pool.result(row.id)
        score = self.scores.get(row.id)
        if score is None:
            score = self.get_scorer().score(
                row.question, row.answer, row.type, response.text, error=response.error, domain=row.domain,
            )
        extra: Dict[str, Any] = {}
        if response.note:  # the answer was changed on its way in (invalid code points)
            extra["note"] = "; ".join(n for n in (getattr(score, "note", None), response.note) if n)
        return record_of_score(
            row, score, index=index, question=row.question, answer=row.answer, response=response.text,
            via=response.via, answered_by=response.answered_by, attempts=response.attempts, **extra,
        )

    # -- the end ---------------------------------------------------------------------------

    def finish(self) -> None:
        """Controller: figures from every record, then the gate (not after a fatal stop)."""
        from defan_pytest import gate, metrics

        records = sorted(self.records, key=lambda r: r["index"])
        self.records = records
        self.summary = metrics.summarize(records)
        self.verdicts = gate.check(self.summary, self.thresholds) if self.fatal is None and records else []

    def thresholds_line(self, scope: str, verdicts: Sequence[Any]) -> int:
        """The 0-based line of the thresholds file a scope's verdict points at: the key that
        failed (or, when all passed, the first key judged), 0 when it cannot be told."""
        from defan_pytest import gate, metrics

        if self.thresholds is None or not verdicts:
            return 0
        bad = [v for v in verdicts if v.status in (gate.FAIL, gate.INSUFFICIENT)]
        verdict = (bad or list(verdicts))[0]
        if verdict.metric == "samples":
            key = "min_samples"
        elif verdict.metric in metrics.METRICS:
            key = metrics.METRICS[verdict.metric].threshold_key
        else:
            return 0
        line = self.thresholds.line_of(scope, key)
        return line - 1 if line else 0

    def report(self) -> Dict[str, Any]:
        """The JSON report of the run (after :meth:`finish`)."""
        assert self.summary is not None
        from defan_pytest import ner

        rows = [
            {k: r[k] for k in (*REPORT_ROW_KEYS, "response", "note") if k in r} for r in self.records
        ]
        report = build_report(rows, self.summary, model=self.model_name, verdicts=self.verdicts)
        report["scorer"] = {k: v for k, v in ner.describe(self.settings.spacy_model).items() if k != "text"}
        return report

    def write_report(self) -> None:
        """Write :meth:`report` where ``--defan-report`` says, if it says.

        A write that fails (a full disk, a file that appeared since :meth:`configure` checked the
        path) is not raised: its message is kept in :attr:`report_error` for the front end to
        show, since the run's results are in by then.
        """
        from defan_pytest import outputs, reports

        if not self.settings.report:
            return
        out = self.settings.resolve_output(self.settings.report)
        try:
            reports.write_json(
                out, self.report(), inputs=self.inputs, force=self.settings.force_output,
                force_hint="--defan-force-output",
            )
        except outputs.OutputError as exc:
            self.report_error = f"--defan-report {exc}"
            return
        self.report_path = out

    def call_counts(self) -> Dict[str, Any]:
        """Prompts, answered by the model, from the cache (whichever process of the run read
        it: ``answered_by``, not ``via``), from another worker, retries, call errors; and
        ``cached_from``: the model, version and source the cached answers belong to."""
        recs = self.records

        def by(r: Mapping[str, Any]) -> str:
            return str(r.get("answered_by") or ("cache" if r.get("via") == "cache" else "model"))

        cached = sum(1 for r in recs if by(r) == "cache")
        return {
            "prompts": len(recs),
            "answered": len(recs) - cached,
            "cached": cached,
            "peer": sum(1 for r in recs if r.get("via") == "peer"),
            "retries": sum(max(0, (r.get("attempts") or 1) - 1) for r in recs if by(r) == "model"),
            "errors": sum(1 for r in recs if r.get("error")),
            "cached_from": self.cache_origin(),
        }

    def cache_origin(self) -> str:
        """Which code the cached answers belong to: ``my-rag version 2024-06-01, source
        3f2a9c1b`` for a callable, the model string for litellm."""
        describe = getattr(self.model, "describe", None)
        if callable(describe):
            return str(describe())
        return str(getattr(self.model, "model", self.model_name))

    def close(self, worker: Worker) -> None:
        """Stop the pool and close the cache; the controller of a shared run drops the run's
        claims, and a run without a cache removes its scratch folder."""
        if self.pool is not None:
            self.pool.close()
        if self.cache is not None:
            if not worker.is_worker and worker.shared:
                self.cache.drop_run()
            self.cache.close()
            if self.settings.cache == "off" and not worker.is_worker:
                shutil.rmtree(self.cache.folder, ignore_errors=True)
