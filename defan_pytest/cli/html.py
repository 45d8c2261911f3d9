"""``defan html REPORT.json -o PATH``: a report as one self-contained HTML file
(:mod:`defan_pytest.report.html`), compared with ``--baseline`` when given."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from defan_pytest.cli import models
from defan_pytest.cli.common import PROG, UsageError, baseline_for, check_outputs, inputs_of, write
from defan_pytest.records import ModelsReport
from defan_pytest.report import formats
from defan_pytest.safetext import printable

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """The ``html`` command's arguments."""
    html = sub.add_parser(
        "html",
        help="write a report as one self-contained HTML file",
        description="Write REPORT.json as one HTML file that needs nothing at view time: a chart per metric, the "
        "verdicts, every prompt (filters, search), paraphrase groups side by side, the run's metadata.",
    )
    html.add_argument("report", metavar="REPORT.json", type=Path, help="the report to show")
    html.add_argument("--baseline", metavar="B.json", type=Path, default=None,
                      help="an earlier report: its figures in the charts, and the prompts that flipped")
    html.add_argument("--baseline-force", action="store_true", help="show a baseline of another data set or scorer")
    html.add_argument("-o", "--output", metavar="PATH", type=Path, required=True, help="the HTML file to write")
    html.add_argument("--force", action="store_true", help="let -o replace a file that is not a defan report")


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """The report as one self-contained HTML file."""
    inputs = inputs_of(("the report", args.report), ("the baseline report", args.baseline))
    outputs = {"html": formats.Output("-o", str(args.output), args.output)}
    check_outputs(outputs, inputs, args.force)
    loaded = models.load_any(args.report, "report")
    if isinstance(loaded, ModelsReport):  # several models: side by side, each model compared with compare_to
        if args.baseline is not None:
            raise UsageError(f"--baseline: {args.report} holds {len(loaded.runs)} models' runs; compare them model by "
                             "model with defan compare, or show them side by side without --baseline")
        if write(loaded, outputs, formats.Context(inputs=tuple(inputs), force=args.force, force_hint="--force"),
                 stderr) is None:
            return 2
        print(f"{PROG}: wrote {printable(str(args.output))} ({len(loaded.runs)} models side by side)", file=stderr)
        return 0
    report = loaded
    old = baseline_for(args.baseline, report.meta.dataset, report.meta.scorer, report.rows, args.baseline_force)
    context = formats.Context(
        inputs=tuple(inputs), force=args.force, force_hint="--force", baseline=old,
        baseline_path=str(args.baseline) if args.baseline else None,
    )
    written = write(report, outputs, context, stderr)
    if written is None:
        return 2
    print(f"{PROG}: wrote {printable(str(written['html']))} ({len(report.rows):,} prompts)", file=stderr)
    return 0
