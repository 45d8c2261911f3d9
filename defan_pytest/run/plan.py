"""What a run is to do, loaded and checked before any model is called: :func:`prepare`.

From the :class:`~defan_pytest.settings.Settings`: the data set and the selected rows (sample,
shard), the thresholds, the model (``[models.<name>]`` tables of ``pyproject.toml`` and of the
thresholds file) and how calls reach it, the baseline of the regression gate, the outputs asked
for and the response cache.  Every problem of all of them is collected and raised as one
:class:`~defan_pytest.settings.ConfigError`, so that a user fixes everything in one pass and
nothing is asked of a model a bad option would waste.  The result is a frozen :class:`Plan`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from defan_pytest import dataset
from defan_pytest.cache import folder
from defan_pytest.cache.store import ResponseCache, uncached_in
from defan_pytest.calls import backends, estimate, models, prices
from defan_pytest.calls.local import local_server
from defan_pytest.calls.budget import Budget
from defan_pytest.calls.fingerprint import FingerprintError, fingerprint
from defan_pytest.calls.protocol import Backend
from defan_pytest.run import repeats, selection
from defan_pytest.errors import problems_of
from defan_pytest.gates import regression, thresholds
from defan_pytest.gates.comparability import comparability
from defan_pytest.metrics.registry import METRICS
from defan_pytest.records import Report
from defan_pytest.report import builder, formats, schema
from defan_pytest.report.writer import Input
from defan_pytest.settings import ConfigError, Settings
from defan_pytest.settings.options import DEFAULT_CACHE

#: A front end's way to let plugins pick the model backend: ``(model, call_path)`` -> a
#: backend, or ``None`` for no opinion (the plugin's ``pytest_defan_backend`` hook).
PickBackend = Callable[[Any, str], Optional[Backend]]

__all__ = [
    "Baseline", "Plan", "budget", "cache_folder", "check_cache", "check_calls", "estimate_line", "model_price", "output_context",
    "prepare", "still_to_ask",
]


@dataclass(frozen=True)
class Baseline:
    """The regression gate's baseline (``--defan-baseline``): the report, where it was read,
    and what ``--defan-baseline-force`` compared anyway."""

    report: Report
    path: Path
    forced: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    """A run, ready: ``rows`` (this process's selection, dataset order), the whole selection's
    domains (a shard's
    too), the ``shard`` (``"I/N"``) and why the gates are skipped (``gate_skipped``), the
    thresholds and their file, the ``model``, its ``backend`` and ``call_path`` (the backend's name: ``callable``,
    ``litellm``, ``openai`` or one a plugin added), the files the run reads (``inputs``: never an output), the baseline, and what
    was read other than as written (``notes``)."""

    rows: Tuple[Any, ...]
    selection_domains: Tuple[str, ...]
    thresholds: Any
    thresholds_source: Optional[str]
    model: Any
    shard: Optional[str] = None
    gate_skipped: Optional[str] = None
    call_path: str = ""
    backend: Optional[Backend] = None
    inputs: Tuple[Input, ...] = ()
    baseline: Optional[Baseline] = None
    notes: Tuple[str, ...] = ()
    header: Tuple[str, ...] = ()
    #: The ids of the rows ``--defan-repeat`` asks again (``settings.repeat.times`` asks in all).
    repeated: Tuple[str, ...] = ()
    #: The model's own ``concurrency`` and ``rpm`` (its ``[models.<name>]`` table), which win
    #: over the options for its calls.
    call_limits: Mapping[str, Any] = field(default_factory=dict)
    #: The selected paraphrase groups in the seed's order (each domain's): the order
    #: ``--defan-sequential`` asks them in.
    order: Tuple[str, ...] = ()


def _sequential_problems(s: Settings, baseline: Any, limits: Any, rows: Sequence[Any]) -> List[str]:
    """``--defan-sequential`` settles a gate: the regression gate (a baseline), or limits a
    thresholds file sets (the built-in error rate alone would stop a run on its calls, not on
    its answers)."""
    if not s.sequential or baseline is not None or s.baseline or limits is None:
        return []
    scopes = [*dict.fromkeys(r.domain for r in rows), "overall"]
    for scope in scopes:
        own = limits.for_overall() if scope == "overall" else limits.for_domain(scope)
        for metric in METRICS.values():
            if own.get(metric.threshold_key) is not None and not limits.builtin(scope, metric.threshold_key):
                return []
    return ["--defan-sequential stops asking once the gates' verdicts are settled, but this run judges no "
            "answers: give it --defan-baseline (the regression gate) or a thresholds file with limits "
            "(e.g. max_fch)"]


def cache_folder(settings: Settings, shared: bool, run_id: str) -> Optional[Path]:
    """Where a run's cache (and, when ``shared`` by xdist workers, its claims and progress)
    lives, or None (``--defan-cache=off`` in one process)."""
    mode, root = settings.cache, settings.root
    if mode == "off":
        # Workers still need a place to share claims: a per-run folder, removed at the end.
        return root / DEFAULT_CACHE / "runs" / run_id if shared else None
    if mode == "refresh":
        return root / DEFAULT_CACHE
    path = Path(mode).expanduser()
    return path if path.is_absolute() else root / path


def model_price(model: Any, local: bool = False) -> Optional[prices.Price]:
    """A litellm model's price (its table's ``price_in``/``price_out``, else litellm's price
    table), or ``None``; with ``local``, a model on the user's own server that neither prices
    costs 0 (:func:`defan_pytest.calls.prices.local_price`: what the run says and reports; not
    for ``--defan-budget``, which needs a price to limit)."""
    if not isinstance(model, models.LitellmModel):
        return None
    found = prices.find_price(model.model, model.price_in, model.price_out, where=prices.model_table(model.name))
    host = local_server(model) if local and found is None else None
    return prices.local_price(host) if host else found


def _thresholds_path(s: Settings) -> Path:
    """The file named, else ``thresholds.toml`` in the rootdir (perhaps absent)."""
    path = Path(s.thresholds).expanduser() if s.thresholds else s.root / "thresholds.toml"
    if s.thresholds and not path.is_absolute():
        path = s.invocation_dir / path
    return path


def _load_thresholds(s: Settings, path: Path, user_domains: List[str], found: List[str]) -> Any:
    try:
        return thresholds.load_thresholds(path, extra_domains=user_domains, model=s.model, required=bool(s.thresholds))
    except thresholds.ThresholdsError as exc:
        found.extend(problems_of(exc))
        return thresholds.Thresholds.empty(model=s.model)


def _pyproject_models(root: Path, extra_domains: Sequence[str], problems: List[str]) -> Dict[str, Dict[str, Any]]:
    """Model tables from ``[tool.defan.models.<name>]`` in the rootdir's pyproject.toml."""
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


def check_calls(
    s: Settings, model: Any, tables: Mapping[str, Mapping[str, Any]], pick_backend: Optional[PickBackend] = None,
) -> Tuple[Optional[Backend], List[str]]:
    """The backend that calls the model (a plugin's ``pytest_defan_backend`` choice through
    ``pick_backend``, else :func:`defan_pytest.calls.backends.choose` under
    ``--defan-call-path``), and the problems with it, with ``--defan-budget`` and with the
    model's prices: before any call."""
    problems = models.price_problems(s.model, tables, s.model_args)
    backend: Optional[Backend] = None
    try:
        picked = pick_backend(model, s.call_path) if pick_backend is not None else None
        backend = backends.choose(model, s.call_path, s.timeout, picked=picked)[0]
    except ValueError as exc:
        problems.append(str(exc))
    call_path = backend.name if backend is not None else ""
    if s.budget is not None and not problems:
        if call_path == "callable":
            problems.append("--defan-budget: a registered callable reports no tokens, so its spending cannot be "
                            "counted")
        elif model_price(model) is None:
            problems.append(f"--defan-budget: no price for {model.model!r}: set price_in and price_out (USD per "
                            f"million tokens) in {prices.model_table(s.model)}")
    return backend, problems


def _model(s: Settings, limits: Any, tpath: Path, user_domains: List[str], found: List[str],
           pick_backend: Optional[PickBackend], own: Dict[str, Any]) -> Tuple[Any, Optional[Backend]]:
    """The model (``[models.<name>]`` tables of pyproject.toml's ``[tool.defan]``, then of the
    thresholds file, which wins for a name both define) and its call path; the model's own
    pool limits go into ``own``."""
    tables = _pyproject_models(s.root, user_domains, found)
    sources = {n: str(s.root / "pyproject.toml") for n in tables}
    tables.update({n: limits.model_params(n) for n in limits.model_names})
    sources.update({n: str(tpath) for n in limits.model_names})
    problem = backends.check_name(s.model, tables)
    if problem:
        found.append(f"--defan-model: {problem}")
        return None, None
    # A misspelt [models."..."] table would be ignored, its limits with it.
    found.extend(thresholds.model_table_typos(
        s.model, tables, sources, models.registered(), lambda n: backends.check_name(n, {}) is None,
    ))
    model = models.resolve(s.model, tables, s.model_args)
    limits_of_model, problems = models.call_limits(s.model, tables)
    own.update(limits_of_model)
    found.extend(problems)
    if isinstance(model, models.CallableModel):
        # The application's identity is its code: the project's imported sources and declared
        # inputs, as they are now (before any call), folded into the cache key.
        try:
            model = model.fingerprinted(fingerprint(s.root, model.inputs))
        except FingerprintError as exc:
            found.append(f"--defan-model {s.model}: {exc}")
    if isinstance(model, models.CallableModel) and s.model_args:
        found.append("--defan-model-arg: parameters apply to litellm models, not to a registered callable")
    backend, problems = check_calls(s, model, tables, pick_backend)
    found.extend(problems)
    return model, backend


def _baseline(s: Settings, rows: Sequence[Any], limits: Any, notes: List[str], found: List[str]) -> Optional[Baseline]:
    """``--defan-baseline``, read and checked to be comparable with this run (a report of
    another data set, scorer or selection is a problem, unless ``--defan-baseline-force``)."""
    assert s.baseline is not None
    path = Path(s.baseline).expanduser()
    if not path.is_absolute():
        path = s.invocation_dir / path
    try:
        report = schema.load_report(path, what="--defan-baseline", model=s.model)
    except schema.BaselineError as exc:
        found.extend(problems_of(exc))
        return None
    problems = comparability(
        report, builder.dataset_meta(s.dataset, s.root, s.domains), builder.scorer_meta(s.spacy_model), rows,
    )
    # A baseline sharing too few paraphrase groups with this run could judge nothing: refused
    # before any call (never "not worse" from two groups), forced or not.
    # (No prompt in common at all is comparability's problem, said above.)
    shared = regression.shared_groups(
        [{"id": r.id} for r in report.rows], [(r.id, r.domain, r.group_key) for r in rows], limits,
    )
    if shared["overall"]["prompts"]:
        found.extend(regression.unjudgeable(shared))
    if problems and s.baseline_force:
        # Forced: compared anyway, and the report says what was forced.
        notes.extend(f"{p} (compared anyway: --defan-baseline-force)" for p in problems)
        return Baseline(report, path, tuple(problems))
    found.extend(f"{p}; --defan-baseline-force compares anyway" for p in problems)
    return Baseline(report, path)


def check_cache(s: Settings, notes: List[str]) -> List[str]:
    """Problems with the cache folder (:func:`defan_pytest.cache.folder.check_folder`: a file in
    the way, a read-only folder, a corrupt database, which ``refresh`` moves aside); also
    removes the scratch folders that runs killed under ``--defan-cache=off`` left behind."""
    if s.cache == "off":
        folder.remove_dead_scratch(s.root / DEFAULT_CACHE / "runs")
        return []
    path = cache_folder(s, shared=False, run_id="")
    assert path is not None
    problem = folder.check_folder(path, refresh=s.cache == "refresh", notes=notes)
    return [problem] if problem else []


def budget(s: Settings, model: Any, price: Optional[prices.Price], store: Optional[ResponseCache]) -> Optional[Budget]:
    """The pool's :class:`~defan_pytest.calls.budget.Budget` (``--defan-budget`` at ``price``), or
    ``None``; under xdist the workers share their spending through the cache (``store``), so
    that together they stay within the one budget."""
    if s.budget is None or price is None:
        return None
    ledger = store.spending_ledger() if store is not None and store.shared else None
    return Budget(s.budget, price, max_tokens=estimate.completion_cap(model.params), system_prompt=model.system_prompt,
                  ledger=ledger, cache=s.cache)


def estimate_line(
    s: Settings, plan: Plan, rows: Sequence[Any], price: Optional[prices.Price], folder: Optional[Path],
) -> str:
    """What asking ``rows`` will send (the prompts already in the cache ``folder`` excluded) and
    cost at ``price``, ``--defan-repeat``'s extra asks included: the line printed before the
    first call (:func:`defan_pytest.calls.estimate.format_estimate`)."""
    model = plan.model
    every = repeats.asks(rows, plan.repeated, s.repeat)
    # Prompts of one text are asked once through the cache's claims (without a cache, each).
    asks = list({a.stored: a for a in every}.values()) if folder is not None else every
    missing = set(still_to_ask(s, plan, [a.stored for a in asks], folder))
    to_send = [a for a in asks if a.stored in missing]
    params = getattr(model, "params", {}) or {}
    estimated = estimate.estimate(
        [a.text for a in to_send], len(asks) - len(to_send), system_prompt=getattr(model, "system_prompt", None),
        completion_tokens=estimate.typical_completion(params.get("max_tokens")), price=price,
        path=plan.call_path, model=str(getattr(model, "model", s.model)), duplicates=len(every) - len(asks),
        repeats=len(every) - len(rows),
    )
    return estimate.format_estimate(estimated, model_table=prices.model_table(s.model))


def still_to_ask(s: Settings, plan: Plan, texts: Sequence[str], folder: Optional[Path]) -> List[str]:
    """The prompts of ``texts`` the cache in ``folder`` holds no answer to for the run's model
    (all of them without a cache, with ``--defan-cache=off`` or ``refresh``, and for a callable
    without a version, whose answers are never reused)."""
    model = plan.model
    versionless = isinstance(model, models.CallableModel) and model.version is None
    if folder is None or plan.backend is None or s.cache in ("off", "refresh") or versionless:
        return list(texts)
    return uncached_in(folder, plan.backend.caller(model, s.timeout).identity, texts)


def output_context(s: Settings, inputs: Sequence[Input], baseline: Optional[Baseline] = None) -> formats.Context:
    """How the run's outputs are written: never over its ``inputs``, over a file that is not a
    report only with ``--defan-force-output``; the HTML report shows the baseline."""
    return formats.Context(
        inputs=tuple(inputs), force=s.force_output, force_hint="--defan-force-output",
        baseline=baseline.report if baseline is not None else None,
        baseline_path=str(baseline.path) if baseline is not None else None,
    )


def prepare(settings: Settings, problems: Sequence[str] = (), pick_backend: Optional[PickBackend] = None) -> Plan:
    """Load and check everything a run needs; raise one :class:`ConfigError` with every
    problem found (``problems``: those the caller found already; ``pick_backend``: a front
    end's way to let plugins pick the model backend, ``(model, call_path) -> Backend | None``)."""
    s = settings
    found: List[str] = list(problems)
    notes: List[str] = []
    selected = selection.load(s, found, notes)
    tpath = _thresholds_path(s)
    limits = _load_thresholds(s, tpath, selected.user_domains, found)
    selection.sample(s, selected, limits, found)
    own: Dict[str, Any] = {}
    model, backend = _model(s, limits, tpath, selected.user_domains, found, pick_backend, own)
    inputs: List[Input] = [("the thresholds file", tpath), ("pyproject.toml", s.root / "pyproject.toml")]
    data_file = dataset.dataset_file(s.dataset, s.root)
    if data_file is not None:
        inputs.append(("the dataset", data_file))
    # The baseline before the outputs: the new report must never replace its own baseline.
    baseline = None
    if s.baseline and not {"dataset", "domain"} & s.invalid:
        baseline = _baseline(s, selected.rows, limits, notes, found)
        if baseline is not None:
            inputs.append(("the baseline report", baseline.path))
    # The outputs' paths, checked now so that a bad one is a usage error before any call.
    found.extend(formats.check_all(s.outputs, output_context(s, inputs)))
    # The response cache, before any call: a file in the way, a read-only folder or a corrupt
    # database is a usage error naming the path, never an INTERNALERROR half-way through.
    found.extend(check_cache(s, notes))
    found.extend(_sequential_problems(s, baseline, limits, selected.rows))
    if not selected.rows and not found:
        found.append("no DefAn prompt selected: check --defan-domain, --defan-dataset and --defan-sample")
    if found:
        raise ConfigError(problems=found)
    return Plan(
        rows=tuple(selected.rows), selection_domains=selected.domains,
        thresholds=limits, thresholds_source=str(tpath) if tpath.exists() else None, model=model,
        shard=selected.shard, gate_skipped=selected.gate_skipped,
        call_path=backend.name if backend is not None else "", backend=backend, inputs=tuple(inputs),
        baseline=baseline, notes=tuple(notes), header=tuple(selected.header), repeated=tuple(selected.repeated),
        call_limits=own, order=tuple(selected.order),
    )
