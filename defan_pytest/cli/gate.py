"""``defan gate REPORT.json``: re-judge a saved report as the plugin would.

The level gate against the thresholds (default: ``thresholds.toml`` here, else the limits the
report records; the file it names is never read), and with ``--baseline`` the regression gate;
exit 0 when both pass, 1 when either fails, 2 for bad input.  ``--json OUT`` writes the
re-judged report.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from defan_pytest.cli.common import (
    PROG, add_format_options, baseline_for, check_outputs, inputs_of, judge, judged_context, outputs_of,
    thresholds_for, verdicts_line, write,
)
from defan_pytest.cli import models
from defan_pytest.records import ModelsReport
from defan_pytest.report import builder

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """The ``gate`` command's arguments."""
    gate = sub.add_parser(
        "gate",
        help="re-judge a saved report: the level gate, and the regression gate with --baseline",
        description="Re-judge REPORT.json (from --defan-report or defan score --json) against the thresholds, "
        "and with --baseline against an earlier report; exit 0 when both gates pass, 1 when one fails.",
    )
    gate.add_argument("report", metavar="REPORT.json", type=Path, help="the report to judge")
    gate.add_argument("--thresholds", metavar="F", type=Path, default=None,
                      help="thresholds file (default: thresholds.toml here, else the limits the report records)")
    gate.add_argument("--baseline", metavar="B.json", type=Path, default=None,
                      help="an earlier report: judge the change by a paired test (the regression gate)")
    gate.add_argument("--baseline-force", action="store_true",
                      help="compare even with a baseline of another data set or scorer")
    gate.add_argument("--decide", choices=("point", "interval"), default=None,
                      help="how the level gate decides (default: as the run did)")
    gate.add_argument("--json", metavar="OUT", type=Path, default=None, help="write the re-judged report to OUT")
    gate.add_argument("--force", action="store_true", help="let --json replace a file that is not a defan report")
    add_format_options(gate)


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """The level gate and, with --baseline, the regression gate, on a report."""
    inputs = inputs_of(("the report judged", args.report), ("the thresholds file", args.thresholds),
                       ("the baseline report", args.baseline))
    outputs = outputs_of(args, {"json": ("--json", args.json)})
    check_outputs(outputs, inputs, args.force)
    loaded = models.load_any(args.report, "report")
    if isinstance(loaded, ModelsReport):  # several models: each judged, then compared again
        return models.judge_and_write(loaded.runs, args, loaded.compare_to, "defan gate", outputs, inputs, "",
                                      stdout, stderr)
    report = loaded
    meta, rows = report.meta, report.rows
    limits = thresholds_for(args.thresholds, report, meta.model_name, sorted({r.domain for r in rows}),
                            label=f"report {args.report}")
    old = baseline_for(args.baseline, meta.dataset, meta.scorer, rows, args.baseline_force)
    decide = args.decide or (report.thresholds or {}).get("decide") or "point"
    skipped = None
    if meta.selection.narrowed:
        skipped = "the report is of a narrowed selection (part of the selected prompts ran)"
    judged = judge(rows, builder.rejudged(meta, "defan gate"), limits, decide, old, args.baseline, skipped,
                   report.usage, stdout)
    if write(judged.report, outputs, judged_context(judged, inputs, args.force, old, args.baseline, stdout),
             stderr) is None:
        return 2
    stdout.write(f"{PROG}: {verdicts_line(judged.report)}\n")
    return 1 if judged.failed else 0
