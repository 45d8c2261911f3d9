"""What the ``defan`` commands do with a report of several models (schema version 2,
:class:`~defan_pytest.records.ModelsReport`): each model's run judged as a report of one model
is (its own thresholds table, its baseline: the same model's run of a baseline of several
models), the models compared again with ``compare_to``, and the domains-by-models table.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, TextIO, Tuple, Union

from defan_pytest.cli.common import PROG, Judged, UsageError, judge, thresholds_for, write
from defan_pytest.gates import regression
from defan_pytest.gates.comparability import comparability
from defan_pytest.metrics.repeats import reduce_of
from defan_pytest.records import ModelsReport, Report, model_of
from defan_pytest.report import builder, formats, schema
from defan_pytest.report.models import comparison_lines, text_table
from defan_pytest.report.writer import Input
from defan_pytest.safetext import inline, printable

__all__ = ["baseline_of", "compared", "judge_and_write", "load_any", "rejudge", "verdicts_line"]


def load_any(path: Path, what: str) -> Union[Report, ModelsReport]:
    """A saved report of either version; a bad one is a usage error."""
    try:
        return schema.load_any(path, what=what)
    except schema.BaselineError as exc:
        raise UsageError(str(exc)) from None


def baseline_of(path: Optional[Path], run: Report, force: bool, flag: str = "--baseline") -> Optional[Report]:
    """The baseline of one model's run: ``path``'s report, or its run of the same model when
    it holds several; checked to be comparable (unless ``force``)."""
    if path is None:
        return None
    try:
        old = schema.load_report(path, what=flag, model=model_of(run))
    except schema.BaselineError as exc:
        raise UsageError(str(exc)) from None
    problems = comparability(old, run.meta.dataset, run.meta.scorer, run.rows, where=flag)
    if problems and not force:
        raise UsageError("; ".join(problems) + f"; {flag}-force compares anyway")
    return old


def compared(runs: Sequence[Tuple[Report, Any]], compare_to: Optional[str]) -> Dict[str, Dict[str, Any]]:
    """Every model of ``runs`` (each with its thresholds) against ``compare_to``'s run, by the
    regression gate's paired test."""
    reference = next((r for r, _ in runs if model_of(r) == compare_to), None)
    if reference is None:
        return {}
    out: Dict[str, Dict[str, Any]] = {}
    for run, limits in runs:
        if run is reference:
            continue
        skipped = "a run of a narrowed selection" if run.meta.selection.narrowed or reference.meta.selection.narrowed else None
        out[model_of(run)] = regression.judge(reference.to_json(), run.rows, limits, baseline_path=f"--defan-compare-to {compare_to}",
                                              skipped=skipped, noise=run.meta.repeat, reduce=reduce_of(run.meta.repeat))
    return out


def rejudge(runs: Sequence[Report], args: argparse.Namespace, compare_to: Optional[str], producer: str,
            stdout: TextIO, created: Optional[str] = None) -> Tuple[ModelsReport, bool, Dict[str, int]]:
    """Each model's run judged again as ``defan gate`` judges one (``args``: its thresholds,
    baseline and decision), then the comparisons with ``compare_to``; the report of them all,
    whether anything failed, and the first model's lines of the thresholds file."""
    judged: List[Tuple[Judged, Any]] = []
    for run in runs:
        name = model_of(run)
        stdout.write(printable(f"== {inline(name)} ==") + "\n")
        limits = thresholds_for(args.thresholds, run, name, sorted({r.domain for r in run.rows}), label=f"the run of {name}")
        old = baseline_of(getattr(args, "baseline", None), run, bool(getattr(args, "baseline_force", False)))
        decide = getattr(args, "decide", None) or (run.thresholds or {}).get("decide") or "point"
        skipped = "the report is of a narrowed selection (part of the selected prompts ran)" if run.meta.selection.narrowed else None
        meta = builder.rejudged(run.meta, producer, created=created) if created else builder.rejudged(run.meta, producer)
        judged.append((judge(run.rows, meta, limits, decide, old, getattr(args, "baseline", None), skipped, run.usage, stdout),
                       limits))
    comparisons = compared([(j.report, limits) for j, limits in judged], compare_to)
    report = ModelsReport(runs=tuple(j.report for j, _ in judged), compare_to=compare_to, comparisons=comparisons)
    stdout.write(printable(f"== {len(runs)} models ==") + "\n")
    for line in text_table(report) + comparison_lines(report, flipped=50):
        stdout.write(printable(line) + "\n")
    failed = any(j.failed for j, _ in judged) or any(c.get("status") == "fail" for c in comparisons.values())
    return report, failed, judged[0][0].lines


def judge_and_write(runs: Sequence[Report], args: argparse.Namespace, compare_to: Optional[str], producer: str,
                    outputs: Mapping[str, formats.Output], inputs: Sequence[Input], said: str, stdout: TextIO,
                    stderr: TextIO, created: Optional[str] = None) -> int:
    """:func:`rejudge`, then the report of every model written in each format asked for (in
    GitHub Actions the step summary and annotations, on ``stdout``) and the verdicts' line after
    ``said``: exit 0 when everything passed, 1 when something failed, 2 when a write failed."""
    both, failed, lines = rejudge(runs, args, compare_to, producer, stdout, created=created)
    context = formats.Context(inputs=tuple(inputs), force=args.force, force_hint="--force", annotation_lines=lines,
                              annotate=lambda line: print(line, file=stdout), environ=os.environ)
    if write(both, outputs, context, stderr) is None:
        return 2
    stdout.write(f"{PROG}: {said}{verdicts_line(both)}\n")
    return 1 if failed else 0


def verdicts_line(report: ModelsReport) -> str:
    """``good: level gate pass; bad: level gate fail; bad against good: fail``."""
    parts = [f"{inline(model_of(r))}: level gate {r.gate_status}"
             + (f", regression gate {(r.regression or {}).get('status')}" if r.regression else "") for r in report.runs]
    parts += [f"{inline(m)} against {inline(report.compare_to)}: {c.get('status')}" for m, c in report.comparisons.items()]
    return "; ".join(parts)
