"""A small DefAn evaluation inside a team's own test: :func:`evaluate`, the engine of the
``defan_evaluate`` fixture.

The same steps as a plugin run (:class:`defan_pytest.run.Run`: the plan, one bounded call pool
through the answer cache, one scoring batch, the figures with their group-level intervals),
returned as values instead of pytest items::

    result = evaluate("my-rag", domain="nobel", sample="5g")
    assert result["nobel"].fch <= 0.30
    result["nobel"].fch.interval     # (lo, hi), 95%, paraphrase groups as the unit

No gate decides and no report is written: the test's own assertions are the gate.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

from defan_pytest.errors import DefanError
from defan_pytest.metrics.registry import METRICS
from defan_pytest.metrics.summary import OVERALL
from defan_pytest.records import ScoredRecord
from defan_pytest.run import Run, Worker
from defan_pytest.settings import ConfigError, Settings

__all__ = ["EvaluationError", "Evaluation", "Figure", "ScopeFigures", "evaluate"]


class EvaluationError(DefanError):
    """The evaluation could not run: a bad option, or a failure that stopped every call."""


class Figure(float):
    """A rate (FCH, PMH, RC, error rate) that compares as a number and carries its 95%
    ``interval`` (``(lo, hi)``) and ``count`` (the events it counts, where the metric says)."""

    interval: Tuple[float, float]
    count: Optional[int]

    def __new__(cls, value: float, interval: Sequence[float], count: Optional[int] = None) -> "Figure":
        figure = super().__new__(cls, value)
        figure.interval = (float(interval[0]), float(interval[1]))
        figure.count = count
        return figure

    def __repr__(self) -> str:
        return f"{float(self):.4f} [{self.interval[0]:.4f}, {self.interval[1]:.4f}]"


@dataclass(frozen=True)
class ScopeFigures:
    """One domain's figures (or the overall mean of the domains): ``fch``, ``pmh``, ``rc``,
    ``error_rate`` (each a :class:`Figure`, ``None`` where it cannot be computed, e.g. RC of
    math), and the counts ``n`` (prompts asked), ``scored``, ``errors``, ``groups``."""

    scope: str
    n: int
    scored: int
    errors: int
    groups: int
    fch: Optional[Figure]
    pmh: Optional[Figure]
    rc: Optional[Figure]
    error_rate: Optional[Figure]
    figures: Mapping[str, Optional[Figure]]

    def __getitem__(self, metric: str) -> Optional[Figure]:
        """Any registered metric's figure by name (``result["nobel"]["fch"]``)."""
        __tracebackhide__ = True  # a team's test calls this: its traceback points at the test's line
        try:
            return self.figures[metric]
        except KeyError:
            raise KeyError(f"no metric {metric!r}; this evaluation has: {', '.join(self.figures)}") from None


def _figure(figs: Mapping[str, Any], name: str) -> Optional[Figure]:
    value, ci = figs.get(name), figs.get(f"{name}_ci")
    if value is None or ci is None:
        return None
    count = figs.get(f"{name}_count")
    return Figure(value, ci, count if isinstance(count, int) else None)


def _scope(scope: str, figs: Mapping[str, Any], metrics: Sequence[str]) -> ScopeFigures:
    by_name = {m: _figure(figs, m) for m in metrics}
    return ScopeFigures(
        scope=scope, n=int(figs.get("n") or 0), scored=int(figs.get("scored") or 0),
        errors=int(figs.get("errors") or 0), groups=int(figs.get("groups") or 0),
        fch=by_name.get("fch"), pmh=by_name.get("pmh"), rc=by_name.get("rc"), error_rate=by_name.get("error_rate"),
        figures=by_name,
    )


class Evaluation(Mapping[str, ScopeFigures]):
    """The figures by domain, and ``"overall"`` (the mean of the domains, as the paper reports);
    ``records`` holds every prompt's scored record (claim, verdicts, response)."""

    def __init__(self, summary: Mapping[str, Any], records: Sequence[ScoredRecord], metrics: Sequence[str]) -> None:
        self._scopes: Dict[str, ScopeFigures] = {
            d: _scope(d, figs, metrics) for d, figs in summary["domains"].items()
        }
        self._scopes[OVERALL] = _scope(OVERALL, summary[OVERALL]["mean"], metrics)
        self.records: List[ScoredRecord] = list(records)

    def __getitem__(self, scope: str) -> ScopeFigures:
        __tracebackhide__ = True  # a team's test calls this: its traceback points at the test's line
        try:
            return self._scopes[scope]
        except KeyError:
            raise KeyError(f"no figures for {scope!r}; this evaluation has: {', '.join(self._scopes)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._scopes)

    def __len__(self) -> int:
        return len(self._scopes)

    def __repr__(self) -> str:
        return f"Evaluation({', '.join(f'{k}: FCH {v.fch!r}' for k, v in self._scopes.items())})"


def evaluate(
    model: str,
    *,
    domain: Union[str, Sequence[str], None] = None,
    sample: Union[str, int, None] = None,
    seed: Union[int, str, None] = None,
    dataset: Optional[str] = None,
    root: Optional[Path] = None,
    defaults: Optional[Mapping[str, Any]] = None,
    **options: Any,
) -> Evaluation:
    """Ask ``model`` (a registered name or a litellm model string) the selected prompts and
    return their figures.

    ``domain``: one domain or several (default: every domain of the data set); ``sample``: as
    ``--defan-sample`` (``300``, ``10%``, ``5g``); ``seed``, ``dataset``: as their options;
    ``options``: any other ``--defan-<noun>`` by its noun with ``_`` for ``-`` (``cache``,
    ``concurrency``, ``spacy_model``, ``timeout``, ``model_arg``, ...).  ``defaults``: option
    values (``{noun: value}``) under the given ones, e.g. the session's own.  Raises
    :class:`EvaluationError` with every problem of the options, or the failure that stopped the
    calls (a bad key, say); a prompt whose call failed counts in ``error_rate``.
    """
    values: Dict[str, Any] = dict(defaults or {})
    values.update(model=model, baseline=None, report=None, html=None, thresholds=None)
    if domain is not None:
        values["domain"] = [domain] if isinstance(domain, str) else list(domain)
    for noun, value in (("sample", sample), ("seed", seed), ("dataset", dataset)):
        if value is not None:
            values[noun] = str(value)
    for key, value in options.items():
        values[key.replace("_", "-")] = value
    settings, problems = Settings.parse(values, root=root)
    try:
        run = Run.configure(settings, problems)
    except ConfigError as exc:
        raise EvaluationError("defan_evaluate: " + "; ".join(exc.problems)) from None
    rows = run.rows
    run.start_pool(rows, Worker())
    try:
        fatal = run.wait()
        if fatal is not None:
            raise EvaluationError(f"defan_evaluate: {fatal}")
        run.score_all(rows)
        run.records = [run.record(r, i).to_json() for i, r in enumerate(rows)]
        run.finish()
    finally:
        run.close(Worker())
    assert run.summary is not None
    return Evaluation(run.summary, run.records, tuple(METRICS))
