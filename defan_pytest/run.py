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
    meta: Mapping[str, Any],
    *,
    thresholds: Optional[Mapping[str, Any]] = None,
    verdicts: Optional[Sequence[Any]] = None,
    gate_status: str = "not judged",
    regression: Optional[Mapping[str, Any]] = None,
    usage: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """The JSON report (schema ``defan_pytest/report.schema.json``, version 1): ``meta``
    (:meth:`Run.meta`, or ``defan score``'s), the thresholds and the gate's verdicts, the
    regression gate's comparison, the figures and the per-prompt rows."""
    from defan_pytest.report import schema as baseline, tables as reports

    body = reports.build_report(rows, summary)
    report: Dict[str, Any] = {
        "schema": baseline.SCHEMA,
        "schema_version": baseline.SCHEMA_VERSION,
        "meta": dict(meta),
        "thresholds": dict(thresholds) if thresholds is not None else None,
        "gate_status": gate_status,
        "gate": [
            {"scope": v.scope, "metric": v.metric, "status": v.status, "value": v.value, "limit": v.limit,
             "message": v.message}
            for v in verdicts or ()
        ],
        "regression": dict(regression) if regression is not None else None,
        "domains": body["domains"],
        "overall": body["overall"],
    }
    if usage is not None:
        report["usage"] = dict(usage)
    report["rows"] = body["rows"]
    return report


def gate_status(verdicts: Sequence[Any], skipped: bool = False) -> str:
    """One word for the level gate: ``skipped`` (a narrowed selection), ``fail`` (a limit
    breached or a figure not judged for want of samples), ``pass``, or ``not judged``."""
    if skipped:
        return "skipped"
    statuses = {v.status for v in verdicts}
    if statuses & {"fail", "insufficient"}:
        return "fail"
    return "pass" if "pass" in statuses else "not judged"


def error_kind(error: Optional[str]) -> Optional[str]:
    """The kind of a call error, for grouping: its exception class (``RateLimitError``), or the
    message's first words when it names none."""
    if not error:
        return None
    head = error.split(":", 1)[0].strip()
    head = head.split(" (HTTP", 1)[0].strip()
    return head[:80] or "error"


def scorer_meta(pipeline: Optional[str]) -> Dict[str, Any]:
    """Which scorer ran: the rules version and the spaCy pipeline (``ner.describe``)."""
    from defan_pytest.version import RULES_VERSION
    from defan_pytest.scoring import ner

    info = ner.describe(pipeline)
    return {"rules": RULES_VERSION, "ner": info["ner"], "pipeline": info["pipeline"], "version": info["version"]}


def dataset_meta(spec: str, root: Optional[Path], domains: Sequence[str]) -> Dict[str, Any]:
    """The identity of a data set: the public split at its pinned commit (its files are checked
    against their sha256 wherever they are read from), or a file of one's own by its sha256."""
    import hashlib

    from defan_pytest import dataset

    path = dataset.dataset_file(spec, root)
    if path is None or path.is_dir():
        wanted = [d for d in dataset.DOMAINS if d in set(domains)] if domains else list(dataset.DOMAINS)
        digests = {d: dataset.get_domain(d).sha256 for d in wanted}
        return {
            "source": "public", "identity": f"DefAn-public@{dataset.PUBLIC_COMMIT[:12]}",
            "commit": dataset.PUBLIC_COMMIT, "sha256": digests,
        }
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        sha = digest.hexdigest()
    except OSError:
        sha = "unreadable"
    return {"source": path.name, "identity": f"file:{sha[:16]}", "commit": None, "sha256": {path.name: sha}}


def _now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _pyproject_models(root: Path, extra_domains: Sequence[str], problems: List[str]) -> Dict[str, Dict[str, Any]]:
    """Model tables from ``[tool.defan.models.<name>]`` in the rootdir's pyproject.toml."""
    from defan_pytest.gates import thresholds

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
        self.created = _now_iso()
        self.durations: Dict[str, Optional[float]] = {"calls": None, "scoring": None, "total": None}
        self.narrowed = False  # part of the selection ran (-k, -m, --deselect, --lf, a path)
        self.gate_skipped: Optional[str] = None  # why the gates were skipped, if they were
        self.baseline: Optional[Dict[str, Any]] = None  # --defan-baseline, loaded and checked
        self.comparison: Optional[Dict[str, Any]] = None  # the regression gate's result (JSON)
        self.shard: Optional[str] = None  # --defan-shard, as "I/N"
        self.selection_domains: List[str] = []  # the whole selection's domains (a shard's too)
        self.html_path: Optional[Path] = None  # where --defan-html was written
        self.call_path = ""  # how calls reach the model: callable, litellm or openai (check_calls)

    @property
    def model_name(self) -> str:
        """The name the run was asked for (``--defan-model``)."""
        return self.settings.model

    # -- configuration ----------------------------------------------------------------------

    @classmethod
    def configure(cls, settings: Settings, problems: Sequence[str] = ()) -> "Run":
        """Load and validate everything the run needs; raise one :class:`ConfigError` with
        every problem found (``problems``: those the caller found already)."""
        from defan_pytest import dataset
        from defan_pytest.calls import backends, models
        from defan_pytest.dataset import sampling as prompts
        from defan_pytest.gates import thresholds

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
        # --defan-shard: this job's share of the selection (whole groups); the report names the
        # whole selection's domains, so that every shard of one run says the same.
        run.selection_domains = sorted({r.domain for r in run.rows})
        if s.shard is not None and run.rows:
            from defan_pytest.dataset import shards

            run.shard = str(s.shard)
            groups = len({r.group_key for r in run.rows})
            run.rows = shards.select(run.rows, s.shard)
            if not run.rows:
                found.append(
                    f"--defan-shard {s.shard}: this shard has no paraphrase group (the selection has {groups}); "
                    f"use at most {groups} shards"
                )
            if not s.gate_narrowed:
                run.gate_skipped = (
                    f"shard {s.shard} ran part of the selection: its gates are skipped; 'defan merge' judges "
                    "the reports of all the shards together (--defan-gate-narrowed judges this shard anyway)"
                )

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
        problem = backends.check_name(s.model, tables)
        if problem:
            found.append(f"--defan-model: {problem}")
        else:
            # A misspelt [models."..."] table would be ignored, its limits with it.
            found.extend(thresholds.model_table_typos(
                s.model, tables, sources, models.registered(), lambda n: backends.check_name(n, {}) is None,
            ))
            run.model = models.resolve(s.model, tables, s.model_args)
            if isinstance(run.model, models.CallableModel) and s.model_args:
                found.append("--defan-model-arg: parameters apply to litellm models, not to a registered callable")
            found.extend(run.check_calls(tables))

        # The report's path, checked now so that a bad one is a usage error before any call.
        run.inputs = [("the thresholds file", tpath), ("pyproject.toml", s.root / "pyproject.toml")]
        data_file = dataset.dataset_file(s.dataset, s.root)
        if data_file is not None:
            run.inputs.append(("the dataset", data_file))
        # The baseline of the regression gate, read and checked before any call: a report that
        # cannot be read, or one of another data set, scorer or selection, is a usage error.  (Before the
        # report's path is checked: the new report must never replace its own baseline.)
        if s.baseline and not {"dataset", "domain"} & s.invalid:
            found.extend(run.load_baseline())

        if s.report:
            from defan_pytest.report import writer as outputs

            try:
                outputs.check_output(
                    s.resolve_output(s.report), inputs=run.inputs, force=s.force_output,
                    force_hint="--defan-force-output",
                )
            except outputs.OutputError as exc:
                found.append(f"--defan-report {exc}")
        if s.html:
            from defan_pytest.report import writer as outputs

            html_out = s.resolve_output(s.html)
            if s.report and os.path.abspath(html_out) == os.path.abspath(s.resolve_output(s.report)):
                found.append(f"--defan-html {s.html}: the same file as --defan-report; give each its own")
            else:
                try:
                    outputs.check_output(html_out, inputs=run.inputs, force=s.force_output,
                                         force_hint="--defan-force-output")
                except outputs.OutputError as exc:
                    found.append(f"--defan-html {exc}")

        # The response cache, before any call: a file in the way, a read-only folder or a corrupt
        # database is a usage error naming the path (--defan-cache=refresh moves a corrupt one
        # aside), never an INTERNALERROR half-way through the calls.
        found.extend(run.check_cache())

        if not run.rows and not found:
            found.append("no DefAn prompt selected: check --defan-domain, --defan-dataset and --defan-sample")
        if found:
            raise ConfigError(problems=found)
        return run

    def load_baseline(self) -> List[str]:
        """Read ``--defan-baseline`` and check that this run can be compared with it; the
        problems (none when it can, or when ``--defan-baseline-force`` is given and the report
        itself is readable)."""
        from defan_pytest.gates.comparability import comparability
        from defan_pytest.report import schema as baseline

        s = self.settings
        assert s.baseline is not None
        path = Path(s.baseline).expanduser()
        if not path.is_absolute():
            path = s.invocation_dir / path
        try:
            self.baseline = baseline.load_report(path, what="--defan-baseline")
        except baseline.BaselineError as exc:
            return problems_of(exc)
        self.baseline_path = path
        self.inputs.append(("the baseline report", path))
        meta = {"dataset": dataset_meta(s.dataset, s.root, s.domains), "scorer": scorer_meta(s.spacy_model)}
        rows = [{"id": r.id, "question": r.question, "answer": r.answer} for r in self.rows]
        problems = comparability(self.baseline, meta, rows)
        if problems and s.baseline_force:
            # Forced: compared anyway, and the report says what was forced.
            self.notes.extend(f"{p} (compared anyway: --defan-baseline-force)" for p in problems)
            self.baseline_forced = problems
            return []
        if problems:
            return [f"{p}; --defan-baseline-force compares anyway" for p in problems]
        return []

    def compare(self) -> Optional[Dict[str, Any]]:
        """The regression gate: this run's records against the baseline's rows (after
        :meth:`finish`); the JSON of the comparison, also kept in :attr:`comparison`."""
        if self.baseline is None:
            return None
        from defan_pytest.gates import regression as regression_gate

        self.comparison = regression_gate.judge(
            self.baseline, self.records, self.thresholds, baseline_path=str(getattr(self, "baseline_path", "")),
            skipped=self.gate_skipped, forced=getattr(self, "baseline_forced", None),
        )
        return self.comparison

    def check_cache(self) -> List[str]:
        """Problems with the cache folder (see :func:`defan_pytest.cache.folder.check_folder`); also
        removes the scratch folders that runs killed under ``--defan-cache=off`` left behind."""
        from defan_pytest.cache import folder as folder_check

        if self.settings.cache == "off":
            folder_check.remove_dead_scratch(self.settings.root / DEFAULT_CACHE / "runs")
            return []
        folder = self.cache_folder(shared=False)
        assert folder is not None
        problem = folder_check.check_folder(folder, refresh=self.settings.cache == "refresh", notes=self.notes)
        return [problem] if problem else []

    # -- usage: tokens, latency, cost, budget (defan_pytest.calls.usage, .estimate, .prices, .budget)

    def check_calls(self, tables: Mapping[str, Mapping[str, Any]]) -> List[str]:
        """Problems with ``--defan-call-path``, ``--defan-budget`` and the model's prices (and
        :attr:`call_path` set): before any call."""
        from defan_pytest.calls import backends, models, prices

        s = self.settings
        problems = models.price_problems(s.model, tables, s.model_args)
        try:
            self.call_path = backends.choose(self.model, s.call_path, s.timeout)[0].name
        except ValueError as exc:
            problems.append(str(exc))
        if s.budget is not None and not problems:
            if self.call_path == "callable":
                problems.append("--defan-budget: a registered callable reports no tokens, so its spending cannot be "
                                "counted")
            elif self.price() is None:
                problems.append(f"--defan-budget: no price for {self.model.model!r}: set price_in and price_out (USD per "
                                f"million tokens) in {prices.model_table(s.model)}")
        return problems

    def price(self) -> Any:
        """The model's :class:`defan_pytest.calls.prices.Price` (its table's ``price_in``/``price_out``,
        else litellm's price table), or ``None``."""
        from defan_pytest.calls import models, prices

        m = self.model
        if not isinstance(m, models.LitellmModel):
            return None
        if not hasattr(self, "_price"):
            self._price = prices.find_price(m.model, m.price_in, m.price_out, where=prices.model_table(m.name))
        return self._price

    def budget(self, store: Any) -> Any:
        """The pool's :class:`defan_pytest.calls.budget.Budget`, or ``None``; under xdist the workers
        share their spending through the cache (``store``), so that together they stay within
        the one ``--defan-budget``."""
        from defan_pytest.calls.budget import Budget
        from defan_pytest.calls.estimate import typical_completion

        s = self.settings
        price = self.price()
        if s.budget is None or price is None:
            return None
        ledger = None
        if store is not None and getattr(store, "shared", False):
            import types

            ledger = types.SimpleNamespace(others=store.others_spending, publish=store.publish_spending)
        return Budget(s.budget, price, completion_tokens=typical_completion(self.model.params.get("max_tokens")),
                      system_prompt=self.model.system_prompt, ledger=ledger)

    def estimate(self, rows: Sequence[Any]) -> Any:
        """What asking ``rows`` will send (the prompts already in the cache excluded) and
        cost: a :class:`defan_pytest.calls.estimate.Estimate`, before any call."""
        from defan_pytest.cache import store as cache_mod
        from defan_pytest.calls import backends, estimate, models

        s = self.settings
        texts = list(dict.fromkeys(r.question for r in rows))
        to_send = texts
        folder = self.cache_folder(shared=False) if s.cache not in ("off", "refresh") else None
        model = self.model
        versionless = isinstance(model, models.CallableModel) and model.version is None
        if folder is not None and not versionless:  # a callable without a version is never reused
            identity = backends.make_caller(model, timeout=s.timeout, path=s.call_path).identity
            to_send = cache_mod.uncached_in(folder, identity, texts)
        params = getattr(model, "params", {}) or {}
        return estimate.estimate(
            to_send, len(texts) - len(to_send), system_prompt=getattr(model, "system_prompt", None),
            completion_tokens=estimate.typical_completion(params.get("max_tokens")), price=self.price(),
            path=self.call_path, model=str(getattr(model, "model", s.model)),
        )

    def estimate_line(self, rows: Sequence[Any]) -> str:
        """The line printed before the first call (:func:`defan_pytest.calls.estimate.format_estimate`)."""
        from defan_pytest.calls.estimate import format_estimate
        from defan_pytest.calls.prices import model_table

        return format_estimate(self.estimate(rows), model_table=model_table(self.settings.model))

    def usage(self) -> Dict[str, Any]:
        """The run's usage block (plain JSON, :func:`defan_pytest.calls.usage.summarize`): tokens,
        latency percentiles, cost and the budget, from the records (after the calls)."""
        from defan_pytest.calls import usage

        return usage.summarize(self.records, price=self.price(), path=self.call_path, budget=self.settings.budget)

    def usage_lines(self) -> List[str]:
        """The usage lines of the terminal summary."""
        from defan_pytest.calls import usage

        return usage.format_summary(self.usage())

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
        from defan_pytest.cache import store as cache_mod
        from defan_pytest.calls import backends, redaction
        from defan_pytest.calls.pool import CallPool
        from defan_pytest.calls.protocol import Prompt

        s = self.settings
        caller = backends.make_caller(self.model, timeout=s.timeout, path=s.call_path)
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
        prompts = [Prompt(r.id, r.question) for r in rows]
        last = [0.0]

        def publish(stats: Any) -> None:
            # Under xdist the controller shows progress from what each worker publishes here.
            now = time.monotonic()
            if store is not None and worker.shared and (now - last[0] >= 0.5 or stats.done >= stats.total):
                last[0] = now
                store.report_progress(stats.snapshot())

        self.pool = CallPool(
            caller, concurrency=s.concurrency, rpm=s.rpm, retries=s.retries, timeout=s.timeout,
            store=store, secrets=self.secrets, on_progress=publish, budget=self.budget(store),
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
        from defan_pytest.cache import store as cache_mod

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
            from defan_pytest.scoring.scorer import Scorer

            self.scorer = Scorer(nlp=self.settings.spacy_model, answers=self.answers)
        return self.scorer

    def score_all(self, rows: Sequence[Any]) -> None:
        """Score every row's answer in one batch (NER once through ``nlp.pipe``)."""
        from defan_pytest.scoring.scorer import ScoreInput

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
            via=response.via, answered_by=response.answered_by, attempts=response.attempts,
            prompt_tokens=response.prompt_tokens, completion_tokens=response.completion_tokens,
            latency=response.latency, **extra,
        )

    # -- the end ---------------------------------------------------------------------------

    def finish(self) -> None:
        """Controller: figures from every record, then the gate (not after a fatal stop)."""
        from defan_pytest.gates import level as gate
        from defan_pytest.metrics import summary as metrics

        records = sorted(self.records, key=lambda r: r["index"])
        self.records = records
        self.summary = metrics.summarize(records)
        self.verdicts = (
            gate.check(self.summary, self.thresholds, decide=self.settings.decide)
            if self.fatal is None and records else []
        )
        self.durations["total"] = round(time.monotonic() - self.started, 3)

    def thresholds_line(self, scope: str, verdicts: Sequence[Any]) -> int:
        """The 0-based line of the thresholds file a scope's verdict points at: the key that
        failed (or, when all passed, the first key judged), 0 when it cannot be told."""
        from defan_pytest.gates import level as gate
        from defan_pytest.metrics.registry import METRICS

        if self.thresholds is None or not verdicts:
            return 0
        bad = [v for v in verdicts if v.status in (gate.FAIL, gate.INSUFFICIENT)]
        verdict = (bad or list(verdicts))[0]
        if verdict.metric == "samples":
            key = "min_samples"
        elif verdict.metric in METRICS:
            key = METRICS[verdict.metric].threshold_key
        else:
            return 0
        line = self.thresholds.line_of(scope, key)
        return line - 1 if line else 0

    def model_meta(self) -> Optional[Dict[str, Any]]:
        """The model's identity, without a secret: a callable's name, version and source
        digest; a litellm model's string, system prompt and call parameters."""
        from defan_pytest.calls import models, redaction

        m = self.model
        if isinstance(m, models.CallableModel):
            return {"name": m.name, "kind": "callable", "version": m.version, "source": m.source}
        if isinstance(m, models.LitellmModel):
            params = dict(m.params)
            secrets = redaction.known_secrets(params)
            return {
                "name": m.name, "kind": "litellm", "model": m.model, "system_prompt": m.system_prompt,
                "version": params.get("version") if isinstance(params.get("version"), str) else None,
                "params": redaction.public_identity(params, secrets),
            }
        return None

    def meta(self) -> Dict[str, Any]:
        """The run's metadata for the report (see ``report.schema.json``)."""
        import defan_pytest

        s = self.settings
        counts = self.call_counts() if self.records else {}
        kinds: Dict[str, int] = {}
        for r in self.records:
            kind = error_kind(r.get("error"))
            if kind:
                kinds[kind] = kinds.get(kind, 0) + 1
        calls = {k: v for k, v in counts.items() if k != "cached_from"}
        calls["error_kinds"] = kinds
        return {
            "defan_pytest": defan_pytest.__version__,
            "producer": "pytest",
            "created": self.created,
            "model": self.model_meta(),
            "dataset": dataset_meta(s.dataset, s.root, s.domains),
            "scorer": scorer_meta(s.spacy_model),
            "selection": {
                "domains": self.selection_domains or sorted({r.domain for r in self.rows}),
                "sample": str(s.sample) if s.sample is not None else None,
                "seed": s.seed,
                "selected": len(self.rows),
                "ran": len(self.records),
                "narrowed": self.narrowed,
                "shard": self.shard,
            },
            "calls": calls,
            "durations": dict(self.durations),
        }

    def thresholds_meta(self) -> Optional[Dict[str, Any]]:
        """The limits and regression tolerances that judged each scope of the run."""
        from defan_pytest.gates import regression as regression_gate

        meta = regression_gate.thresholds_meta(self.thresholds, self.summary, self.settings.decide)
        if meta is not None:
            meta["source"] = self.thresholds_source
        return meta

    def regression_line(self, scope: str, changes: Mapping[str, Any]) -> int:
        """The 0-based line of the thresholds file a regression verdict points at: the tolerance
        of the first metric that regressed (or of the first judged), 0 when it cannot be told."""
        if self.thresholds is None or not changes:
            return 0
        bad = [m for m, c in changes.items() if c.get("regressed")] or list(changes)
        line = self.thresholds.tolerance_line(scope, bad[0])
        return line - 1 if line else 0

    def annotation_lines(self) -> Dict[str, int]:
        """1-based lines of the thresholds file for GitHub annotations (see
        :func:`defan_pytest.gates.regression.annotation_lines`)."""
        from defan_pytest.gates import regression as regression_gate

        return regression_gate.annotation_lines(self.thresholds, self.verdicts, self.comparison)

    def report(self) -> Dict[str, Any]:
        """The JSON report of the run (after :meth:`finish`)."""
        assert self.summary is not None
        rows = []
        for r in self.records:
            row = {k: r.get(k) for k in REPORT_ROW_KEYS}
            row["question"] = r.get("question", "")
            row["answer"] = r.get("answer", "")
            row["response"] = r.get("response")
            row["error_kind"] = error_kind(r.get("error"))
            for k in ("note", "attempts", "answered_by"):
                if r.get(k) is not None:
                    row[k] = r[k]
            rows.append(row)
        usage = None
        usage_of = getattr(self, "usage", None)
        if callable(usage_of):
            usage = usage_of()
        return build_report(
            rows, self.summary, self.meta(), thresholds=self.thresholds_meta(), verdicts=self.verdicts,
            gate_status=gate_status(self.verdicts, skipped=self.gate_skipped is not None),
            regression=self.comparison, usage=usage,
        )

    def write_report(self) -> None:
        """Write :meth:`report` where ``--defan-report`` says, if it says.

        A write that fails (a full disk, a file that appeared since :meth:`configure` checked the
        path) is not raised: its message is kept in :attr:`report_error` for the front end to
        show, since the run's results are in by then.
        """
        from defan_pytest.report import writer as outputs, tables as reports

        s = self.settings
        if not s.report and not s.html:
            return
        report = self.report()
        if s.report:
            out = s.resolve_output(s.report)
            try:
                reports.write_json(
                    out, report, inputs=self.inputs, force=s.force_output, force_hint="--defan-force-output",
                )
            except outputs.OutputError as exc:
                self.report_error = f"--defan-report {exc}"
            else:
                self.report_path = out
        if s.html:
            from defan_pytest.report import html as html_report

            out = s.resolve_output(s.html)
            try:
                html_report.write_html(
                    out, report, baseline=self.baseline, baseline_path=str(getattr(self, "baseline_path", "")) or None,
                    inputs=self.inputs, force=s.force_output, force_hint="--defan-force-output",
                )
            except outputs.OutputError as exc:
                self.report_error = "; ".join(filter(None, (self.report_error, f"--defan-html {exc}")))
            else:
                self.html_path = out

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
