"""What the ``defan`` commands share: reading reports, the thresholds and a baseline, judging a
saved run as the plugin does, and writing outputs through the report formats.

A problem the user must fix is a :class:`UsageError` (exit 2): the command line
(:mod:`defan_pytest.cli`) prints it.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, TextIO, Tuple, Union

from defan_pytest.errors import DefanError
from defan_pytest.gates import level, regression, thresholds
from defan_pytest.gates.comparability import comparability
from defan_pytest.gates.table import format_gate_table
from defan_pytest.metrics.registry import METRICS
from defan_pytest.metrics.repeats import reduce_of
from defan_pytest.metrics.summary import summarize
from defan_pytest.records import DatasetMeta, ModelsReport, Report, ReportMeta, ScoredRecord, ScorerMeta
from defan_pytest.report import builder, formats, schema
from defan_pytest.report.tables import format_table
from defan_pytest.report.writer import Input
from defan_pytest.safetext import inline, printable

__all__ = [
    "PROG",
    "Judged",
    "UsageError",
    "add_format_options",
    "baseline_for",
    "check_outputs",
    "inputs_of",
    "judge",
    "judged_context",
    "load",
    "outputs_of",
    "thresholds_for",
    "verdicts_line",
    "write",
]

#: The command's name, in every message.
PROG = "defan"


class UsageError(DefanError):
    """A problem with the command line the user must fix before anything can run (exit 2)."""


def load(path: Path, what: str) -> Report:
    """A saved report (:func:`defan_pytest.report.schema.load_report`); a bad one is a usage error."""
    try:
        return schema.load_report(path, what=what)
    except schema.BaselineError as exc:
        raise UsageError(str(exc)) from None


def _recorded_limits(recorded: Mapping[str, Any], label: str, model: Optional[str], domains: Sequence[str]) -> Any:
    """The limits, figure and regression tolerances a report records (its ``thresholds``), as
    thresholds; checked as a thresholds file's would be (``label`` names them)."""
    limits = recorded.get("limits") or {}
    data: Dict[str, Any] = {}
    if any(scope != "overall" for scope in limits):
        data["domains"] = {scope: dict(keys) for scope, keys in limits.items() if scope != "overall"}
    overall = dict(limits.get("overall") or {})
    if recorded.get("figure"):
        overall["figure"] = recorded["figure"]
    if overall:
        data["overall"] = overall
    reg = recorded.get("regression")
    if isinstance(reg, Mapping):
        table: Dict[str, Any] = {"confidence": reg.get("confidence")}
        for scope, tolerances in (reg.get("tolerances") or {}).items():
            # A metric this process does not know keeps its name: the check says it is unknown.
            keys = {(METRICS[m].tolerance_key if m in METRICS else m): v for m, v in tolerances.items()}
            if scope == "overall":
                table["overall"] = keys
            else:
                table.setdefault("domains", {})[scope] = keys
        data["regression"] = table
    try:
        parsed = thresholds.parse_thresholds(data, source=label, extra_domains=list(domains), model=model)
    except thresholds.ThresholdsError as exc:
        raise UsageError(str(exc)) from None
    # No file: nothing to read the lines of annotations from (``source`` is what is read).
    return dataclasses.replace(parsed, source=None)


def thresholds_for(
    arg: Optional[Path], report: Optional[Report], model: Optional[str], domains: Sequence[str],
    label: str = "the report",
) -> Any:
    """The thresholds a saved report is judged by: the file named (``arg``), else
    ``thresholds.toml`` here, else the limits ``report`` records, else none.

    The file a report says its run read (``thresholds.source``) is never opened: what a report
    holds is information, not a path to follow (a hostile report would make ``defan gate`` read
    and echo any file); the limits it recorded are what that run was judged by.
    """
    for candidate, required in ((arg, True), (Path("thresholds.toml"), False)):
        # lexists: a thresholds.toml here that is a dangling link, a loop or a FIFO is an error
        # said as one, not a file silently passed over.
        if candidate is None or not (required or os.path.lexists(candidate)):
            continue
        try:
            return thresholds.load_thresholds(candidate, extra_domains=list(domains), model=model, required=True)
        except thresholds.ThresholdsError as exc:
            raise UsageError(str(exc)) from None
    if report is not None and report.thresholds is not None:
        return _recorded_limits(report.thresholds, f"{label} (the limits it records)", model, domains)
    return thresholds.Thresholds.empty(model=model)


def baseline_for(
    path: Optional[Path], dataset: DatasetMeta, scorer: ScorerMeta, rows: Sequence[ScoredRecord], force: bool,
) -> Optional[Report]:
    """``--baseline``, read and checked to be comparable with the run judged (unless ``force``)."""
    if path is None:
        return None
    old = load(path, "--baseline")
    problems = comparability(old, dataset, scorer, rows, where="--baseline")
    if problems and not force:
        raise UsageError("; ".join(problems) + "; --baseline-force compares anyway")
    return old


def add_format_options(parser: argparse.ArgumentParser) -> None:
    """``--<option> PATH`` for each report format another package added
    (:func:`defan_pytest.report.formats.added_formats`)."""
    for fmt in formats.added_formats():
        try:
            parser.add_argument(f"--{fmt.option}", metavar="PATH", type=Path, default=None, dest=f"format_{fmt.name}",
                                help=fmt.help)
        except argparse.ArgumentError:  # its option is one of the command's own: not offered here
            continue


def outputs_of(args: argparse.Namespace, own: Mapping[str, Tuple[str, Optional[Path]]]) -> Dict[str, formats.Output]:
    """The outputs a command was asked for: its ``own`` flags (format name -> (flag, path)) and
    the added formats' options (:func:`add_format_options`)."""
    asked = dict(own)
    for fmt in formats.added_formats():
        asked.setdefault(fmt.name, (f"--{fmt.option}", getattr(args, f"format_{fmt.name}", None)))
    return {name: formats.Output(flag, str(path), path) for name, (flag, path) in asked.items() if path is not None}


def check_outputs(outputs: Mapping[str, formats.Output], inputs: Sequence[Input], force: bool) -> None:
    """Every output checked before anything is read (and no two the same file); the first
    problem is a usage error."""
    problems = formats.check_all(outputs, formats.Context(inputs=tuple(inputs), force=force, force_hint="--force"))
    if problems:
        raise UsageError(problems[0])


def write(
    report: Union[Report, ModelsReport], outputs: Mapping[str, formats.Output], context: formats.Context, stderr: TextIO,
) -> Optional[Dict[str, Path]]:
    """Write ``report`` in every format asked for; print what could not be written and return
    ``None`` then, else where each went."""
    written = formats.write_all(report, outputs, context)
    for problem in written.problems:
        print(f"{PROG}: error: {printable(problem)}", file=stderr)
    return None if written.problems else written.paths


def verdicts_line(report: Report) -> str:
    """``level gate fail, regression gate pass``."""
    comparison = report.regression
    return f"level gate {report.gate_status}" + (
        f", regression gate {comparison.get('status')}" if comparison is not None else ""
    )


def _width() -> int:
    try:
        return os.get_terminal_size().columns
    except OSError:
        return 80


@dataclass(frozen=True)
class Judged:
    """A saved run judged again: its ``report``, whether a gate ``failed``, and the lines of the
    thresholds file that set each limit (for GitHub annotations)."""

    report: Report
    failed: bool
    lines: Dict[str, int]


def judge(
    rows: Sequence[ScoredRecord], meta: ReportMeta, limits: Any, decide: str, old: Optional[Report],
    baseline_path: Optional[Path], skipped: Optional[str], usage: Optional[Mapping[str, Any]], stdout: TextIO,
) -> Judged:
    """Judge saved rows as the plugin does (the level gate, the regression gate against
    ``old``) and print the table, the failures and the comparison."""
    reduce = reduce_of(meta.repeat)
    summary = summarize(rows, reduce)
    verdicts = level.check(summary, limits, decide=decide) if not limits.is_empty else []
    status = builder.gate_status(verdicts, skipped=skipped is not None)
    comparison = None
    if old is not None:
        comparison = regression.judge(old.to_json(), rows, limits, baseline_path=str(baseline_path), skipped=skipped,
                                      noise=meta.repeat, reduce=reduce)
    if not limits.is_empty:
        stdout.write(format_gate_table(summary, limits, verdicts, width=_width(), decide=decide))
    else:
        stdout.write(format_table(summary))
    for v in verdicts:
        if v.status in (level.FAIL, level.INSUFFICIENT):
            stdout.write(f"FAILED gate[{inline(v.scope)}]: {inline(v.message)}\n")
    if skipped is not None:
        stdout.write(f"gates skipped: {skipped}\n")
    if comparison is not None:
        stdout.write(regression.format_comparison(comparison))
    # What the run could catch, as the plugin's report says it (a merged run's summary is the
    # unsharded run's): none for a run whose gates were skipped or that has no limits.
    power = None if skipped is not None or limits.is_empty else regression.power(rows, limits, reduce, comparison)
    report = builder.build_report(
        rows, summary, meta, thresholds=regression.thresholds_meta(limits, summary, decide), verdicts=verdicts,
        gate_status=status, regression=comparison, usage=usage, power=power,
    )
    failed = status == "fail" or (comparison is not None and comparison.get("status") == "fail")
    return Judged(report, failed, regression.annotation_lines(limits, verdicts, comparison))


def judged_context(
    judged: Judged, inputs: Sequence[Input], force: bool, old: Optional[Report], baseline: Optional[Path],
    stdout: TextIO,
) -> formats.Context:
    """How ``defan gate`` and ``defan merge`` write: with the baseline, and in GitHub Actions
    the step summary and the annotations (on ``stdout``)."""
    return formats.Context(
        inputs=tuple(inputs), force=force, force_hint="--force", baseline=old,
        baseline_path=str(baseline) if baseline is not None else None, annotation_lines=judged.lines,
        annotate=lambda line: print(line, file=stdout), environ=os.environ,
    )


def inputs_of(*named: Tuple[str, Optional[Path]]) -> List[Input]:
    """The files a command reads (``(what, path)``; a ``None`` path is left out)."""
    return [(what, path) for what, path in named if path is not None]
