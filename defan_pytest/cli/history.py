"""``defan history FOLDER``: the history of a branch's reports (the default branch's artefacts):
FCH, PMH and RC per domain over time, the regressions between consecutive reports marked, as an
HTML page (``--html``) and a Markdown table (``--summary``: GitHub's step summary).

Every ``*.json`` file under FOLDER is a candidate.  The reports are put in the order of their
own time (``meta.created``, not the files' names or dates), the newest ``--last`` kept, then
read one at a time by the one reader (:func:`defan_pytest.report.schema.load_report`), each
compared with the one before it by the regression gate (:mod:`defan_pytest.report.history`):
two reports are in memory at once, however many the folder holds.  A file that cannot be read
(not a report, not JSON, hostile, a report of several models) is one message on stderr and one
line of the page, and the others are shown; only a folder with no report at all is an error.

Exit codes: 0 the history was written, 2 bad input or usage (no folder, no report, an output
that cannot be written).
"""
from __future__ import annotations

import argparse
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, List, Optional, TextIO, Tuple

from defan_pytest.cli.common import PROG, UsageError, thresholds_for
from defan_pytest.records import Report
from defan_pytest.report import schema, writer
from defan_pytest.report.history import History
from defan_pytest.report.html.history import render_history
from defan_pytest.safetext import inline, printable

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """The ``history`` command's arguments."""
    history = sub.add_parser(
        "history",
        help="FCH, PMH and RC per domain over a folder of reports, regressions marked (HTML, Markdown)",
        description="Read every report (*.json) under FOLDER - the default branch's artefacts - in the order of "
        "their own time, compare each with the one before it by the regression gate's paired test, and write the "
        "figures per domain over time with the regressions marked: an HTML page and a Markdown table.",
    )
    history.add_argument("folder", metavar="FOLDER", type=Path, help="the folder of reports (searched recursively)")
    history.add_argument("--last", metavar="N", type=int, default=None,
                         help="show the newest N reports only (default: every report)")
    history.add_argument("--html", metavar="PATH", type=Path, default=None, help="write the history page here")
    history.add_argument("--summary", metavar="PATH", type=Path, default=None,
                         help="append the Markdown tables here (GitHub's step summary: \"$GITHUB_STEP_SUMMARY\")")
    history.add_argument("--thresholds", metavar="F", type=Path, default=None,
                         help="thresholds file for the regression tolerances (default: thresholds.toml here, "
                         "else the limits each report records)")
    history.add_argument("--force", action="store_true", help="let --html replace a file that is not a defan report")


def _candidates(folder: Path) -> List[Path]:
    """Every ``*.json`` file under ``folder``, in path order (links to folders not followed)."""
    if not folder.is_dir():
        raise UsageError(f"history: {folder}: not a folder" + ("" if folder.exists() else " (it does not exist)"))
    found: List[Path] = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        found.extend(Path(root) / name for name in sorted(files) if name.lower().endswith(".json"))
    return found


def _time(created: str) -> datetime:
    """A report's time (``ValueError`` when it is none): ISO 8601, UTC when it says no zone."""
    when = datetime.fromisoformat(created.strip())
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def _ordered(paths: List[Path], last: Optional[int], skipped: List[Tuple[str, str]]) -> List[Tuple[str, Path]]:
    """The reports of ``paths`` in the order of their own time (oldest first; the newest
    ``last``), each with the time it states; a file that states none is said in ``skipped``."""
    timed: List[Tuple[datetime, str, str, Path]] = []
    for path in paths:
        try:
            created = schema.created_of(path)
        except schema.BaselineError as exc:
            skipped.append((str(path), str(exc)))
            continue
        try:
            timed.append((_time(created), str(path), created, path))
        except ValueError:
            skipped.append((str(path), f"report {path}: its time (meta.created {created[:40]!r}) is not an ISO 8601 "
                                       "date and time"))
    timed.sort(key=lambda t: (t[0], t[1]))
    if last is not None:
        timed = timed[-last:] if last > 0 else []
    return [(created, path) for _when, _name, created, path in timed]


def _history(reports: List[Tuple[str, Path]], skipped: List[Tuple[str, str]], args: argparse.Namespace) -> History:
    """Each report read and compared with the one read before it (two in memory at once)."""
    history = History(skipped=skipped)
    before: Optional[Tuple[Report, str]] = None
    for _created, path in reports:
        try:
            report = schema.load_report(path)
        except schema.BaselineError as exc:
            skipped.append((str(path), str(exc)))
            continue
        try:
            limits = thresholds_for(args.thresholds, report, report.meta.model_name, list(report.domains))
        except UsageError as exc:
            if args.thresholds is not None or os.path.lexists("thresholds.toml"):
                raise  # the file the user gave (or keeps here) is wrong: said once, exit 2
            history.add(report, str(path), before, not_compared=f"its recorded limits: {exc}")
        else:
            history.add(report, str(path), before, limits)
        before = (report, str(path))
    return history


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """Read the folder, write the history (see the module docstring)."""
    if args.last is not None and args.last < 1:
        raise UsageError(f"history: --last {args.last}: give a number of reports of 1 or more")
    paths = _candidates(args.folder)
    inputs = [("a report of the history", p) for p in paths]
    if args.html is not None:
        try:
            writer.check_output(args.html, inputs=inputs, force=args.force, force_hint="--force")
        except writer.OutputError as exc:
            raise UsageError(f"--html {exc}") from None
    skipped: List[Tuple[str, str]] = []
    history = _history(_ordered(paths, args.last, skipped), skipped, args)
    for _path, why in history.skipped:
        print(f"{PROG}: history: not read: {inline(why)}", file=stderr)  # one line a file
    if not history.points:
        raise UsageError(f"history: {args.folder}: no report could be read ({len(paths)} *.json files)")
    for line in history.lines():
        stdout.write(line + "\n")
    try:
        if args.html is not None:
            written = writer.write_output(args.html, render_history(history), inputs=inputs, force=args.force,
                                          force_hint="--force")
            print(f"{PROG}: wrote {printable(str(written))} ({len(history.points)} reports)", file=stderr)
        if args.summary is not None:
            writer.append_output(args.summary, history.markdown(), inputs=inputs)
    except writer.OutputError as exc:
        print(f"{PROG}: error: {printable(str(exc))}", file=stderr)
        return 2
    return 0
