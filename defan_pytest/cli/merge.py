"""``defan merge REPORT.json...``: the reports of the shards of one run (``--defan-shard=I/N``)
combined (:func:`defan_pytest.report.merge.combine`) and judged as one run.

It gives the report, verdicts, exit code, step summary and HTML an unsharded run gives: exit 0
when the gates pass, 1 when one fails, 2 (naming the files) for shards of different runs, a
missing or duplicated shard, or a mix of sharded and unsharded reports.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, List, TextIO, Tuple

from defan_pytest.cli.common import (
    PROG, add_format_options, baseline_for, check_outputs, inputs_of, judge, judged_context, outputs_of,
    thresholds_for, verdicts_line, write,
)
from defan_pytest.cli import models
from defan_pytest.dataset.shards import ShardError
from defan_pytest.metrics.repeats import reduce_of
from defan_pytest.metrics.summary import summarize
from defan_pytest.records import ModelsReport, Report
from defan_pytest.errors import format_problems
from defan_pytest.report import builder, merge
from defan_pytest.safetext import inline

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """The ``merge`` command's arguments."""
    cmd = sub.add_parser(
        "merge",
        help="combine the reports of the shards of one run (--defan-shard) and judge the whole run",
        description="Combine the reports of every shard of one run (pytest --defan-shard=I/N --defan-report=...) "
        "into the report, figures, gate verdicts, exit code, step summary and HTML of the unsharded run; exit 0 "
        "when the gates pass, 1 when one fails, 2 for bad input (shards of different runs, a shard missing or "
        "given twice, an unsharded report among them).",
    )
    cmd.add_argument("reports", metavar="REPORT.json", type=Path, nargs="+", help="the shards' reports")
    cmd.add_argument("-o", "--output", metavar="MERGED.json", type=Path, default=None,
                     help="write the merged report here")
    cmd.add_argument("--thresholds", metavar="F", type=Path, default=None,
                     help="thresholds file (default: thresholds.toml here, else the limits the shards record)")
    cmd.add_argument("--baseline", metavar="B.json", type=Path, default=None,
                     help="an earlier report: judge the change by a paired test (the regression gate)")
    cmd.add_argument("--baseline-force", action="store_true",
                     help="compare even with a baseline of another data set or scorer")
    cmd.add_argument("--decide", choices=("point", "interval"), default=None,
                     help="how the level gate decides (default: as the runs did)")
    cmd.add_argument("--html", metavar="PATH", type=Path, default=None, help="also write the HTML report here")
    cmd.add_argument("--force", action="store_true", help="let -o and --html replace a file that is not a defan report")
    add_format_options(cmd)


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """The shards of one run combined and judged as one run."""
    paths: List[Path] = list(args.reports)
    inputs = [("a shard report", p) for p in paths] + inputs_of(
        ("the thresholds file", args.thresholds), ("the baseline report", args.baseline)
    )
    outputs = outputs_of(args, {"json": ("-o", args.output), "html": ("--html", args.html)})
    check_outputs(outputs, inputs, args.force)
    every = [(str(p), models.load_any(p, "shard report")) for p in paths]
    several = [name for name, r in every if isinstance(r, ModelsReport)]
    if several:
        return _merge_models(args, every, outputs, inputs, stdout, stderr)
    loaded = [(name, r) for name, r in every if isinstance(r, Report)]
    try:
        combined = merge.combine(loaded)
    except ShardError as exc:
        print(format_problems(exc.problems, f"{PROG} merge: nothing was merged"), file=stderr)
        return 2
    rows, meta = combined.rows, combined.meta
    first = dict(loaded)[combined.files[0]]
    limits = thresholds_for(args.thresholds, first, meta.model_name, sorted({r.domain for r in rows}),
                            label=f"shard report {combined.files[0]}")
    old = baseline_for(args.baseline, meta.dataset, meta.scorer, rows, args.baseline_force)
    if old is None:
        used = sorted({str(((r.regression or {}).get("baseline") or {}).get("path") or "") for _n, r in loaded} - {""})
        if used:
            print(f"{PROG}: note: the shards were compared with {', '.join(map(inline, used))}; pass --baseline "
                  "to judge the regression gate of the whole run", file=stderr)
    skipped = None
    if meta.selection.narrowed:
        skipped = "a shard ran part of its selection (-k, -m, --deselect, --lf, a path, or a stopped run)"
    judged = judge(rows, builder.rejudged(meta, "defan merge", created=builder.now()), limits,
                   args.decide or combined.decide, old, args.baseline, skipped, combined.usage, stdout)
    if write(judged.report, outputs, judged_context(judged, inputs, args.force, old, args.baseline, stdout),
             stderr) is None:
        return 2
    stdout.write(f"{PROG}: merged {combined.count} shards ({len(rows):,} prompts): {verdicts_line(judged.report)}\n")
    return 1 if judged.failed else 0


def _merge_models(args: argparse.Namespace, every: List[Tuple[str, Any]], outputs: Any, inputs: Any,
                  stdout: TextIO, stderr: TextIO) -> int:
    """Shards of a run of several models: each model's shards combined, every model judged
    and compared again with ``compare_to`` (the shards must all hold the same models)."""
    one = [name for name, r in every if not isinstance(r, ModelsReport)]
    first = every[0][1] if isinstance(every[0][1], ModelsReport) else next(r for _n, r in every if isinstance(r, ModelsReport))
    others = [name for name, r in every if isinstance(r, ModelsReport) and r.models != first.models]
    if one or others:
        problems = [f"{n}: a report of one model among shards of several ({', '.join(first.models)})" for n in one]
        problems += [f"{n}: holds other models than the first shard ({', '.join(first.models)})" for n in others]
        print(format_problems(problems, f"{PROG} merge: nothing was merged"), file=stderr)
        return 2
    runs = []
    for model in first.models:
        try:
            combined = merge.combine([(name, r.run_of(model)) for name, r in every])
        except ShardError as exc:
            print(format_problems(exc.problems, f"{PROG} merge: nothing was merged ({inline(model)})"), file=stderr)
            return 2
        recorded = first.run_of(model)
        runs.append(builder.build_report(
            combined.rows, summarize(combined.rows, reduce_of(combined.meta.repeat)), combined.meta, usage=combined.usage,
            thresholds=recorded.thresholds if recorded is not None else None,  # the limits the shards record
        ))
    return models.judge_and_write(runs, args, first.compare_to, "defan merge", outputs, inputs,
                                  f"merged {len(every)} shards of {len(runs)} models: ", stdout, stderr, created=builder.now())
