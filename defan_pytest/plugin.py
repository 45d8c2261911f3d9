"""The pytest plugin: every hook of defan-pytest, and only hooks (plus the item classes).

Without ``--defan-model`` the plugin registers its options and does nothing else: no dataset,
no spaCy, no litellm is imported.  With it, each selected DefAn prompt becomes a test item;
all model calls of the process go through one pool; each item scores its answer and puts the
verdict on ``report.user_properties``; the controller (the only process that aggregates, with
or without xdist) computes the domain figures, runs the gate and writes the reports.
"""
from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

PROPERTY = "defan"

# (noun, ini type, default, help).  Each is an option ``--defan-<noun>`` and an ini key
# ``defan_<noun>``; the option wins.
_OPTIONS: List[Tuple[str, str, Any, str]] = [
    ("model", "string", None,
     "model to evaluate: a name registered with @defan_pytest.model, a [models.<name>] table, "
     "or a litellm model string such as openai/gpt-4o-mini (default: none, plugin inactive)"),
    ("domain", "linelist", None,
     "DefAn domain(s) to run, repeatable and comma-separated: sports, census, nobel, "
     "entertainment, world_org, qs_ranking, conference_venue, math (default: all)"),
    ("dataset", "string", "public",
     "'public' (the DefAn public split, downloaded and sha256-checked on first use, or read "
     "from DEFAN_DATA_DIR), a folder holding the public CSV files, or a CSV/JSON/JSONL file of "
     "your own (default: public)"),
    ("sample", "string", None,
     "run a stratified sample: N prompts or P%% of each domain's paraphrase groups, whole "
     "groups only (default: every prompt)"),
    ("seed", "string", "0", "seed of --defan-sample (default: 0)"),
    ("thresholds", "string", None,
     "thresholds file of the gate (default: thresholds.toml in the rootdir, if present)"),
    ("report", "string", None,
     "write the JSON report (same schema as 'defan score --json') to this file (default: none)"),
    ("strict", "bool", False,
     "fail each hallucinated or misaligned prompt on its own (default: off; the gate decides)"),
    ("spacy-model", "string", "auto",
     "spaCy pipeline for names and places: a package name, a folder, 'auto' (first installed "
     "English pipeline) or 'none' (default: auto)"),
    ("concurrency", "string", "16", "requests in flight at once (default: 16)"),
    ("rpm", "string", None, "at most this many requests per minute (default: no limit)"),
    ("retries", "string", "4",
     "retries of a call after 429, 5xx, a timeout or a dropped connection (default: 4)"),
    ("timeout", "string", "60", "seconds one call may take (default: 60)"),
    ("model-arg", "args", None,
     "KEY=VALUE call parameter for a litellm model, repeatable: temperature=0.2, "
     "api_base=http://..., max_tokens=64 (values are JSON where they parse; default: none)"),
    ("cache", "string", ".defan_cache",
     "response cache: a folder (relative to the rootdir), 'off', or 'refresh' (call again and "
     "overwrite) (default: .defan_cache)"),
]


def _dest(noun: str) -> str:
    return "defan_" + noun.replace("-", "_")


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from defan_pytest import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("defan", "DefAn hallucination benchmark (defan-pytest)")
    for noun, ini_type, default, help_text in _OPTIONS:
        flag = f"--defan-{noun}"
        if ini_type == "bool":
            group.addoption(flag, action="store_true", dest=_dest(noun), default=None, help=help_text)
        elif ini_type in ("linelist", "args"):
            group.addoption(flag, action="append", dest=_dest(noun), default=None, metavar="VALUE", help=help_text)
        else:
            group.addoption(flag, action="store", dest=_dest(noun), default=None, metavar="VALUE", help=help_text)
        parser.addini(_dest(noun), help=help_text.replace("%%", "%"), type=ini_type, default=default)


def _setting(config: pytest.Config, noun: str) -> Any:
    value = config.getoption(_dest(noun))
    if value is None or value == []:
        value = config.getini(_dest(noun))
    return value


def _active(config: pytest.Config) -> bool:
    return bool(_setting(config, "model"))


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _uses_xdist(config: pytest.Config) -> bool:
    return bool(getattr(config.option, "numprocesses", None)) or _is_worker(config) or bool(
        getattr(config.option, "tx", None)
    )


run_key = pytest.StashKey["DefanRun"]()


# --------------------------------------------------------------------------------------------
# configuration: validate everything, report every problem at once
# --------------------------------------------------------------------------------------------


class DefanRun:
    """Everything one pytest process knows about the DefAn run."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.rows: List[Any] = []  # selected rows, dataset order
        self.answers: Dict[str, List[str]] = {}  # every domain's full answer list (gazetteer)
        self.thresholds: Any = None
        self.thresholds_source: Optional[str] = None
        self.model_name = ""
        self.model: Any = None
        self.settings: Dict[str, Any] = {}
        self.run_id = ""
        self.records: List[Dict[str, Any]] = []
        self.summary: Optional[Dict[str, Any]] = None
        self.verdicts: List[Any] = []
        self.pool: Any = None
        self.scorer: Any = None
        self.scores: Dict[str, Any] = {}  # row id -> Score, when scored in one batch
        self.cache: Any = None
        self.fatal: Optional[str] = None
        self.secrets: List[str] = []
        self.started = time.monotonic()


def _problems_of(exc: BaseException) -> List[str]:
    problems = getattr(exc, "problems", None)
    if problems:
        return [str(p) for p in problems]
    return [str(exc)]


def _parse_int(value: Any, name: str, low: int, problems: List[str]) -> int:
    try:
        n = int(str(value).strip())
    except ValueError:
        problems.append(f"--defan-{name}: {value!r} is not a whole number")
        return low
    if n < low:
        problems.append(f"--defan-{name}: {n} is below the minimum {low}")
    return n


def _parse_float(value: Any, name: str, problems: List[str]) -> Optional[float]:
    if value in (None, ""):
        return None
    try:
        x = float(str(value).strip())
    except ValueError:
        problems.append(f"--defan-{name}: {value!r} is not a number")
        return None
    if not x > 0:
        problems.append(f"--defan-{name}: {x:g} must be above 0")
    return x


def _pyproject_models(rootdir: Path, extra_domains: List[str], problems: List[str]) -> Dict[str, Dict[str, Any]]:
    """Model tables from ``[tool.defan.models.<name>]`` in the rootdir's pyproject.toml."""
    from defan_pytest import thresholds

    path = rootdir / "pyproject.toml"
    if not path.is_file():
        return {}
    try:
        data = thresholds.tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, thresholds.tomllib.TOMLDecodeError) as exc:
        problems.append(f"{path}: {exc}")
        return {}
    tool = data.get("tool", {}).get("defan")
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
        problems.extend(_problems_of(exc))
        return {}
    return {n: parsed.model_params(n) for n in parsed.model_names}


def _configure_run(config: pytest.Config) -> DefanRun:
    from defan_pytest import dataset, models, ner, prompts, thresholds

    run = DefanRun(config)
    problems: List[str] = []
    rootdir = Path(str(config.rootpath))
    run.model_name = str(_setting(config, "model")).strip()

    # Domains.
    domain_values = [v for v in (_setting(config, "domain") or []) if str(v).strip()]
    names: List[str] = []
    for v in domain_values:
        names.extend(x.strip() for x in str(v).split(",") if x.strip())

    # Dataset.
    spec = str(_setting(config, "dataset") or "public").strip()
    rows: List[Any] = []
    user_domains: List[str] = []
    try:
        if spec == "public":
            wanted = dataset.parse_domains(names) if names else None
            rows = dataset.load_public(domains=[d.id for d in wanted] if wanted else None)
        else:
            path = Path(spec).expanduser()
            if not path.is_absolute():
                path = (rootdir / path) if (rootdir / path).exists() else path
            if path.is_dir():
                wanted = dataset.parse_domains(names) if names else None
                rows = dataset.load_public(domains=[d.id for d in wanted] if wanted else None, data_dir=path)
            elif path.exists():
                rows = dataset.load_user_set(path)
                user_domains = sorted({r.domain for r in rows})
                if names:
                    unknown = [n for n in names if n not in user_domains]
                    if unknown:
                        problems.append(
                            f"--defan-domain: {', '.join(unknown)} not in {path}; its domains: {', '.join(user_domains)}"
                        )
                    rows = [r for r in rows if r.domain in names]
            else:
                problems.append(f"--defan-dataset: {spec!r} is not 'public', a folder or a file (no such path)")
    except dataset.DatasetError as exc:
        problems.extend(_problems_of(exc))
    except ValueError as exc:
        problems.append(str(exc))
    for r in rows:
        run.answers.setdefault(r.domain, []).append(r.answer)

    # Sampling.
    sample = None
    raw_sample = _setting(config, "sample")
    if raw_sample not in (None, ""):
        try:
            sample = prompts.parse_sample(str(raw_sample))
        except prompts.SampleError as exc:
            problems.append(f"--defan-sample: {exc}")
    seed = _parse_int(_setting(config, "seed"), "seed", -(2**63), problems)
    run.rows = prompts.select(rows, sample, seed) if rows else []

    # Thresholds.
    explicit = _setting(config, "thresholds")
    tpath = Path(explicit).expanduser() if explicit else rootdir / "thresholds.toml"
    if explicit and not tpath.is_absolute():
        tpath = Path(config.invocation_params.dir) / tpath
    try:
        run.thresholds = thresholds.load_thresholds(
            tpath, extra_domains=user_domains, model=run.model_name, required=bool(explicit)
        )
        run.thresholds_source = str(tpath) if tpath.exists() else None
    except thresholds.ThresholdsError as exc:
        problems.extend(_problems_of(exc))
        run.thresholds = thresholds.Thresholds.empty(model=run.model_name)

    # Model: [models.<name>] tables of pyproject.toml's [tool.defan], then of the thresholds
    # file (which wins for a name both define).
    tables = _pyproject_models(rootdir, user_domains, problems)
    tables.update({n: run.thresholds.model_params(n) for n in run.thresholds.model_names})
    overrides, arg_problems = models.parse_model_args(_setting(config, "model-arg"))
    problems.extend(arg_problems)
    problem = models.check_name(run.model_name, tables)
    if problem:
        problems.append(f"--defan-model: {problem}")
    else:
        run.model = models.resolve(run.model_name, tables, overrides)
        if isinstance(run.model, models.CallableModel) and overrides:
            problems.append("--defan-model-arg: parameters apply to litellm models, not to a registered callable")

    # Calls.
    s = run.settings
    s["concurrency"] = _parse_int(_setting(config, "concurrency"), "concurrency", 1, problems)
    s["rpm"] = _parse_float(_setting(config, "rpm"), "rpm", problems)
    s["retries"] = _parse_int(_setting(config, "retries"), "retries", 0, problems)
    s["timeout"] = _parse_float(_setting(config, "timeout"), "timeout", problems) or 60.0
    cache = str(_setting(config, "cache") or ".defan_cache").strip()
    s["cache"] = cache
    s["strict"] = bool(_setting(config, "strict"))
    s["sample"] = str(sample) if sample else None
    s["seed"] = seed
    s["dataset"] = spec
    s["report"] = _setting(config, "report")

    # spaCy.
    spacy_spec = ner.resolve_spec(_setting(config, "spacy-model"))
    if spacy_spec is not None:
        try:
            ner.check(spacy_spec)
        except ner.NerError as exc:
            problems.append(f"--defan-spacy-model: {exc}")
    s["spacy_model"] = spacy_spec

    if not run.rows and not problems:
        problems.append("no DefAn prompt selected: check --defan-domain, --defan-dataset and --defan-sample")
    if problems:
        listing = "\n".join(f"  - {p}" for p in problems)
        raise pytest.UsageError(f"defan-pytest: {len(problems)} configuration problem(s):\n{listing}")
    return run


def pytest_configure(config: pytest.Config) -> None:
    if not _active(config):
        return
    from defan_pytest.dataset import DOMAINS

    config.addinivalue_line("markers", "defan: a DefAn prompt")
    run = _configure_run(config)
    for d in sorted(set(DOMAINS) | {r.domain for r in run.rows}):
        config.addinivalue_line("markers", f"defan_{d}: DefAn prompts of the {d} domain")
    if _is_worker(config):
        run.run_id = config.workerinput.get("defan_run_id", "")  # type: ignore[attr-defined]
    else:
        run.run_id = uuid.uuid4().hex
        config.pluginmanager.register(_Collector(run), "defan-collector")
    config.stash[run_key] = run


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist (controller): every worker of the run shares the run id (claims in the cache)."""
    run = node.config.stash.get(run_key, None)
    if run is not None:
        node.workerinput["defan_run_id"] = run.run_id


def _run(config: pytest.Config) -> Optional[DefanRun]:
    return config.stash.get(run_key, None)


# --------------------------------------------------------------------------------------------
# items
# --------------------------------------------------------------------------------------------


class DefanFailure(Exception):
    """A prompt that hallucinated or was misaligned, under --defan-strict."""


class DefanCollector(pytest.Collector):
    """The parent of every DefAn item (node id ``defan``)."""

    def collect(self) -> List[pytest.Item]:  # pragma: no cover - items are made by the plugin
        return []


class DefanItem(pytest.Item):
    """One DefAn prompt: asks the model, scores the answer, reports the verdict."""

    def __init__(self, *, row: Any, index: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.row = row
        self.index = index
        self.record: Optional[Dict[str, Any]] = None

    def runtest(self) -> None:
        run = _run(self.config)
        assert run is not None
        if run.fatal is not None:
            # The run stopped on a failure every call would share (bad key, unknown model):
            # the remaining prompts are not asked, and not counted as failures either.
            pytest.skip(f"not asked: the run stopped ({run.fatal})")
        response = _response_for(run, self)
        score = run.scores.get(self.row.id)
        if score is None:
            score = _scorer(run).score(
                self.row.question, self.row.answer, self.row.type, response.text, error=response.error,
                domain=self.row.domain,
            )
        rec = {
            "id": self.row.id,
            "index": self.index,
            "domain": self.row.domain,
            "group": self.row.group_key,
            "type": self.row.type,
            "claim": score.claim,
            "aligned": score.aligned,
            "correct": score.correct,
            "error": score.error,
            "question": self.row.question,
            "answer": self.row.answer,
            "response": response.text,
            "via": response.via,
            "attempts": response.attempts,
        }
        self.record = rec
        self.user_properties.append((PROPERTY, rec))
        if run.settings["strict"] and score.error is None and not (score.correct and score.aligned):
            raise DefanFailure(rec)

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        if isinstance(excinfo.value, DefanFailure):
            return _describe_record(excinfo.value.args[0])
        from defan_pytest.calls import FatalCallError

        if isinstance(excinfo.value, FatalCallError):
            return f"the run stopped: {excinfo.value}"
        return super().repr_failure(excinfo)

    def reportinfo(self) -> Tuple[Any, Optional[int], str]:
        return self.path, max(0, self.row.line - 1), f"defan {self.row.id}"


def _describe_record(rec: Dict[str, Any]) -> str:
    verdict = []
    if not rec["correct"]:
        verdict.append("hallucinated (FCH)")
    if not rec["aligned"]:
        verdict.append("misaligned (PMH)")
    response = rec["response"] or ""
    if len(response) > 600:
        response = response[:600] + " ..."
    return "\n".join([
        f"{rec['id']}: {' and '.join(verdict) or 'ok'}",
        f"  question: {rec['question']}",
        f"  gold:     {rec['answer'].strip()!r}",
        f"  response: {response!r}",
        f"  claim:    {rec['claim']!r}",
        f"  aligned:  {rec['aligned']}   correct: {rec['correct']}",
    ])


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Optional[pytest.Item]) -> Optional[bool]:
    """A DefAn item has no fixtures and nothing to set up or tear down: report its one call
    phase only.  pytest's own cost per item (about 1 ms here) is most of a cached run, and this
    removes two of its three reports."""
    if not isinstance(item, DefanItem):
        return None
    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    call = pytest.CallInfo.from_call(item.runtest, when="call", reraise=(pytest.exit.Exception, KeyboardInterrupt))
    report = ihook.pytest_runtest_makereport(item=item, call=call)
    ihook.pytest_runtest_logreport(report=report)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: List[pytest.Item]) -> None:
    """Add one item per selected prompt before -k, -m, --deselect and --lf filter the list."""
    run = _run(config)
    if run is None:
        return
    parent = DefanCollector.from_parent(session, name="defan", nodeid="defan")
    made = []
    for i, row in enumerate(run.rows):
        item = DefanItem.from_parent(parent, name=row.id, row=row, index=i)
        item.path = Path(row.source)
        item.add_marker("defan")
        item.add_marker(f"defan_{row.domain}")
        made.append(item)
    items.extend(made)
    # Report the items as collected, so the terminal's counts and progress include them.
    config.hook.pytest_collectreport(report=pytest.CollectReport(parent.nodeid, "passed", None, made))


# --------------------------------------------------------------------------------------------
# calls and scoring (lazy: nothing heavy until the first DefAn item runs)
# --------------------------------------------------------------------------------------------


def _scorer(run: DefanRun) -> Any:
    if run.scorer is None:
        from defan_pytest.scoring import Scorer

        run.scorer = Scorer(nlp=run.settings["spacy_model"], answers=run.answers)
    return run.scorer


def _response_for(run: DefanRun, item: DefanItem) -> Any:
    from defan_pytest.calls import FatalCallError

    if run.pool is None:  # not prefetched (a plugin ran the item outside the loop): start now
        _start_pool(run, [it for it in item.session.items if isinstance(it, DefanItem)])
    try:
        return run.pool.result(item.row.id)
    except FatalCallError as exc:
        run.fatal = str(exc)
        pytest.skip(f"not asked: the run stopped ({exc})")


def _cache_folder(run: DefanRun) -> Optional[Path]:
    """Where this run's cache (and, under xdist, its claims and progress) lives, or None."""
    mode = run.settings["cache"]
    root = Path(str(run.config.rootpath))
    if mode == "off":
        # Workers still need a place to share claims: a per-run folder, removed at the end.
        return root / ".defan_cache" / "runs" / run.run_id if _uses_xdist(run.config) else None
    if mode == "refresh":
        return root / ".defan_cache"
    folder = Path(mode).expanduser()
    return folder if folder.is_absolute() else root / folder


def _start_pool(run: DefanRun, selected: List[DefanItem]) -> None:
    from defan_pytest import cache as cache_mod
    from defan_pytest import calls

    s = run.settings
    caller = calls.make_caller(run.model, timeout=s["timeout"], threads=s["concurrency"])
    run.secrets = calls.known_secrets(getattr(run.model, "params", {}) or {})
    identity = dict(caller.identity)
    if identity.get("kind") == "callable" and identity.get("version") is None:
        identity["run"] = run.run_id  # no version: never reused across runs
    shared = _uses_xdist(run.config)
    folder = _cache_folder(run)
    store = None
    if folder is not None:
        worker = getattr(run.config, "workerinput", {}).get("workerid", "main")
        store = cache_mod.ResponseCache(
            folder, identity, mode="use" if s["cache"] not in ("refresh", "off") else "refresh",
            run=run.run_id, shared=shared, owner=f"{worker}-{os.getpid()}", background=True,
        )
    run.cache = store
    if shared:
        # Every worker walks the whole selection (claims keep each prompt to one call), each
        # from its own offset so that workers rarely contend for the same prompt.
        wid = str(getattr(run.config, "workerinput", {}).get("workerid", "gw0"))
        n = int(getattr(run.config, "workerinput", {}).get("workercount", 1) or 1)
        k = int(wid[2:]) if wid.startswith("gw") and wid[2:].isdigit() else 0
        offset = (len(selected) * k) // max(1, n)
        selected = selected[offset:] + selected[:offset]
    prompts = [calls.Prompt(it.row.id, it.row.question) for it in selected]
    last = [0.0]

    def publish(stats: Any) -> None:
        # Under xdist the controller shows progress from what each worker publishes here.
        now = time.monotonic()
        if store is not None and shared and (now - last[0] >= 0.5 or stats.done >= stats.total):
            last[0] = now
            store.report_progress(stats.snapshot())

    pool = calls.CallPool(
        caller, concurrency=s["concurrency"], rpm=s["rpm"], retries=s["retries"], timeout=s["timeout"],
        store=store, secrets=run.secrets, on_progress=publish,
    )
    run.pool = pool
    pool.start(prompts)


def _terminal(config: pytest.Config) -> Any:
    return config.pluginmanager.get_plugin("terminalreporter")


def _printer(config: pytest.Config, source: Any) -> Any:
    from defan_pytest.progress import ProgressPrinter

    tr = _terminal(config)
    if tr is None:
        return None
    interval = float(os.environ.get("DEFAN_PROGRESS_SECONDS", "10") or 10)
    return ProgressPrinter(
        write=lambda text: tr.write(text, flush=True), source=source, live=bool(tr.isatty), interval=interval,
    ).start()


def _prefetch(run: DefanRun, session: pytest.Session) -> None:
    """Ask the model every selected prompt before the items run, through one pool.

    Items then only score.  A serial run shows the progress itself; a worker publishes it in
    the cache for the controller.
    """
    selected = [it for it in session.items if isinstance(it, DefanItem)]
    if not selected:
        return
    _start_pool(run, selected)
    pool = run.pool
    printer = None if _is_worker(run.config) else _printer(run.config, pool.stats.snapshot)
    try:
        while not pool.join(0.2):
            pass
    finally:
        if printer is not None:
            printer.stop()
    if pool.fatal is None and not _is_worker(run.config):
        # One process runs every item: score them all in one batch, so that spaCy NER (for the
        # few names the rules leave open) runs once through nlp.pipe.  An xdist worker scores
        # item by item instead, so the workers split the scoring between them.
        from defan_pytest.scoring import ScoreInput

        rows = [it.row for it in selected]
        answers = [pool.result(r.id) for r in rows]
        inputs = [ScoreInput(r.question, r.answer, r.type, a.text, a.error, r.domain) for r, a in zip(rows, answers)]
        run.scores = dict(zip((r.id for r in rows), _scorer(run).score_many(inputs)))
    if pool.fatal is not None:
        run.fatal = pool.fatal
        if run.cache is not None and _uses_xdist(run.config):
            run.cache.report_progress(pool.stats.snapshot(), fatal=pool.fatal)
        if not _is_worker(run.config):
            raise session.Interrupted(f"defan-pytest: {pool.fatal}")


def _watch_workers(run: DefanRun, session: pytest.Session) -> Any:
    """xdist controller: show the workers' call progress, and stop the run on a fatal failure."""
    from defan_pytest import cache as cache_mod

    folder = _cache_folder(run)
    if folder is None:
        return None
    watch = cache_mod.ResponseCache(folder, {}, run=run.run_id, shared=True, owner="controller")
    run.cache = watch
    dsession = run.config.pluginmanager.get_plugin("dsession")

    def source() -> Any:
        stats, fatal = watch.run_progress()
        if fatal and run.fatal is None:
            run.fatal = fatal
            if dsession is not None:
                dsession.shouldstop = f"defan-pytest: {fatal}"
        return stats

    return _printer(run.config, source)


def pytest_sessionfinish(session: pytest.Session) -> None:
    run = _run(session.config)
    if run is None:
        return
    if run.pool is not None:
        run.pool.close()
    if run.cache is not None:
        if not _is_worker(session.config) and _uses_xdist(session.config):
            run.cache.drop_run()
        run.cache.close()
        if run.settings["cache"] == "off" and not _is_worker(session.config):
            import shutil

            shutil.rmtree(run.cache.folder, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# results: collected on the controller only, then the gate
# --------------------------------------------------------------------------------------------


def _record_of(report: pytest.TestReport) -> Optional[Dict[str, Any]]:
    for name, value in getattr(report, "user_properties", ()) or ():
        if name == PROPERTY and isinstance(value, dict):
            return value
    return None


class _Collector:
    """Registered on the controller (or the only process): keeps every item's verdict.

    ``pytest_runtest_logreport`` gets no config, so the run it belongs to is held here.
    """

    def __init__(self, run: DefanRun) -> None:
        self.run = run
        self.watcher: Any = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        # The first item result ends the call phase: close the progress line before the
        # terminal prints anything else.
        if self.watcher is not None:
            watcher, self.watcher = self.watcher, None
            watcher.stop()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        rec = _record_of(report)
        if rec is not None:
            self.run.records.append(rec)


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Iterator[None]:
    run = _run(session.config)
    watcher = None
    if run is not None and not session.config.option.collectonly:
        if session.config.pluginmanager.has_plugin("dsession"):
            watcher = _watch_workers(run, session)  # xdist controller: workers make the calls
            collector = session.config.pluginmanager.get_plugin("defan-collector")
            if collector is not None:
                collector.watcher = watcher
        else:
            _prefetch(run, session)  # serial run, or an xdist worker
    try:
        result = yield
    finally:
        if watcher is not None:
            watcher.stop()
    if run is not None and not _is_worker(session.config):
        _finish(run, session)
    return result


def _finish(run: DefanRun, session: pytest.Session) -> None:
    from defan_pytest import gate, metrics, reports

    config = session.config
    records = sorted(run.records, key=lambda r: r["index"])
    run.summary = metrics.summarize(records)
    if run.fatal is None and records:
        run.verdicts = gate.check(run.summary, run.thresholds)
    else:
        run.verdicts = []
    # The gate's verdicts are test reports of their own: in the terminal, in --junitxml and in
    # the exit code, like any test.
    source = run.thresholds_source or "thresholds.toml"
    by_scope: Dict[str, List[Any]] = {}
    for v in run.verdicts:
        by_scope.setdefault(v.scope, []).append(v)
    judged_scopes = [
        scope for scope, vs in by_scope.items() if any(v.status in (gate.FAIL, gate.INSUFFICIENT, gate.PASS) for v in vs)
    ]
    # The gate's reports count as tests of this session (progress stays within 100%).
    session.testscollected += len(judged_scopes)
    for scope, verdicts in by_scope.items():
        bad = [v for v in verdicts if v.status in (gate.FAIL, gate.INSUFFICIENT)]
        judged = [v for v in verdicts if v.status == gate.PASS]
        if not bad and not judged:
            continue
        outcome = "failed" if bad else "passed"
        text = "\n".join(v.message for v in (bad or judged))
        nodeid = f"defan::gate[{scope}]"
        rep = pytest.TestReport(
            nodeid=nodeid,
            location=(source, 0, f"gate[{scope}]"),
            keywords={"defan": 1, "gate": 1},
            outcome=outcome,  # type: ignore[arg-type]
            longrepr=text if bad else None,
            when="call",
            sections=[] if bad else [("defan gate", text)],
            user_properties=[("defan_gate", [v.message for v in verdicts])],
        )
        config.hook.pytest_runtest_logstart(nodeid=nodeid, location=rep.location)
        config.hook.pytest_runtest_logreport(report=rep)
        config.hook.pytest_runtest_logfinish(nodeid=nodeid, location=rep.location)
    config.hook.pytest_defan_summary(config=config, summary=run.summary, verdicts=run.verdicts)
    path = run.settings.get("report")
    if path:
        rows = [{k: r[k] for k in ("id", "domain", "group", "type", "claim", "aligned", "correct", "error", "response")}
                for r in records]
        report = reports.build_report(rows, run.summary)
        report["model"] = run.model_name
        report["gate"] = [
            {"scope": v.scope, "metric": v.metric, "status": v.status, "value": v.value, "limit": v.limit,
             "message": v.message}
            for v in run.verdicts
        ]
        out = Path(path).expanduser()
        if not out.is_absolute():
            out = Path(config.invocation_params.dir) / out
        reports.write_json(out, report)
        run.settings["report_path"] = str(out)


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Optional[Tuple[str, str, Any]]:
    """Hallucinated and misaligned prompts have their own letters and counts; they do not fail
    the run unless --defan-strict (the gate decides)."""
    if report.when != "call" or not report.passed:
        return None
    rec = _record_of(report)
    if rec is None:
        return None
    if rec["error"] is not None:
        return "call-error", "C", ("CALL-ERROR", {"yellow": True})
    detail = f" (claim {rec['claim']!r}, gold {rec['answer'].strip()!r})"
    if not rec["correct"]:
        return "hallucinated", "H", ("HALLUCINATED" + detail, {"red": True})
    if not rec["aligned"]:
        return "misaligned", "M", ("MISALIGNED" + detail, {"yellow": True})
    return None


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    run = _run(config)
    if run is None or _is_worker(config) or run.summary is None:
        return
    from defan_pytest import gate, reports

    tr = terminalreporter
    tr.write_sep("=", f"DefAn: {run.model_name}")
    if run.fatal:
        tr.write_line(f"the run stopped: {run.fatal}", red=True)
    if run.thresholds is not None and not run.thresholds.is_empty:
        tr.write_line(gate.format_gate_table(run.summary, run.thresholds, run.verdicts))
    else:
        tr.write_line(reports.format_table(run.summary))
        tr.write_line("no thresholds file: nothing was gated (see --defan-thresholds)")
    recs = run.records
    if recs:
        cached = sum(1 for r in recs if r.get("via") == "cache")
        errors = sum(1 for r in recs if r.get("error"))
        retries = sum(max(0, (r.get("attempts") or 1) - 1) for r in recs if r.get("via") == "call")
        tr.write_line(
            f"{len(recs)} prompts: {len(recs) - cached} answered by the model, {cached} from the cache, "
            f"{retries} retries, {errors} call errors"
        )
    if run.settings.get("report_path"):
        tr.write_line(f"report: {run.settings['report_path']}")


@pytest.fixture(scope="session")
def defan_scorer() -> Any:
    """A :class:`defan_pytest.scoring.Scorer` (rules plus the installed spaCy pipeline, if any)
    for tests that score answers of their own."""
    from defan_pytest.scoring import Scorer

    return Scorer(nlp="auto")
