"""The ``defan`` commands on saved reports: ``gate``, ``compare``, ``html`` and ``merge``.

They read reports (``--defan-report``, ``defan score --json``) through
:func:`defan_pytest.report.schema.load_report`, judge them as the plugin does (:func:`_judge`: the
level gate, the regression gate with a baseline, the GitHub step summary and annotations), and
write through :mod:`defan_pytest.report.writer`.  :mod:`defan_pytest.cli` parses the command line and
dispatches here; see its docstring for the commands and exit codes.
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any, Mapping, Sequence, TextIO

from defan_pytest.errors import DefanError, format_problems
from defan_pytest.report.writer import OutputError, check_output
from defan_pytest.safetext import printable

__all__ = ["PROG", "UsageError", "compare", "gate", "html", "merge"]

#: The command's name, in every message.
PROG = "defan"


class UsageError(DefanError):
    """A problem with the command line the user must fix before anything can run (exit 2)."""


def _thresholds_for(arg: Path | None, report: dict[str, Any], model: str | None, domains: Sequence[str]) -> Any:
    """The thresholds a saved report is judged by: the file named, else ``thresholds.toml``
    here, else the file the run used (when it still exists), else none."""
    from defan_pytest.gates import thresholds

    if arg is not None:
        candidates, required = [arg], True
    else:
        used = (report.get("thresholds") or {}).get("source")
        candidates, required = [Path("thresholds.toml"), *([Path(used)] if used else [])], False
    extra = [d for d in domains]
    for candidate in candidates:
        if candidate.is_file() or required:
            try:
                return thresholds.load_thresholds(candidate, extra_domains=extra, model=model, required=True)
            except thresholds.ThresholdsError as exc:
                raise UsageError(str(exc)) from None
    return thresholds.Thresholds.empty(model=model)


def _load(path: Path, what: str) -> dict[str, Any]:
    from defan_pytest.report.schema import BaselineError, load_report

    try:
        return load_report(path, what=what)
    except BaselineError as exc:
        raise UsageError(str(exc)) from None


def gate(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """``defan gate``: the level gate and, with --baseline, the regression gate, on a report."""
    from defan_pytest.report.tables import write_json

    report_path: Path = args.report
    inputs = [("the report judged", report_path)]
    if args.thresholds is not None:
        inputs.append(("the thresholds file", args.thresholds))
    if args.baseline is not None:
        inputs.append(("the baseline report", args.baseline))
    if args.json is not None:
        try:
            check_output(args.json, inputs=inputs, force=args.force, force_hint="--force")
        except OutputError as exc:
            raise UsageError(f"--json {exc}") from None
    report = _load(report_path, "report")
    meta = dict(report["meta"])
    rows = report["rows"]
    model = (meta.get("model") or {}).get("name")
    limits = _thresholds_for(args.thresholds, report, model, sorted({str(r["domain"]) for r in rows}))
    old = _baseline_for(args.baseline, meta, rows, args.baseline_force)
    decide = args.decide or (report.get("thresholds") or {}).get("decide") or "point"
    skipped = None
    if (meta.get("selection") or {}).get("narrowed"):
        skipped = "the report is of a narrowed selection (part of the selected prompts ran)"
    meta["producer"] = "defan gate"
    judged, failed = _judge(rows, meta, limits, decide, old, args.baseline, skipped, report.get("usage"), stdout)
    if args.json is not None:
        try:
            write_json(args.json, judged, inputs=inputs, force=args.force, force_hint="--force")
        except OutputError as exc:
            print(f"{PROG}: error: --json {printable(str(exc))}", file=stderr)
            return 2
    stdout.write(f"{PROG}: {_verdicts_line(judged)}\n")
    return 1 if failed else 0


def _verdicts_line(report: Mapping[str, Any]) -> str:
    comparison = report.get("regression")
    return f"level gate {report['gate_status']}" + (
        f", regression gate {comparison.get('status')}" if comparison is not None else ""
    )


def _judge(
    rows: Sequence[Mapping[str, Any]], meta: dict[str, Any], limits: Any, decide: str, old: Mapping[str, Any] | None,
    baseline_path: Path | None, skipped: str | None, usage: Any, stdout: TextIO,
) -> tuple[dict[str, Any], bool]:
    """Judge saved rows as the plugin does (level gate, regression gate with ``old``), print the
    table, the failures and the comparison, tell GitHub; the judged report and whether it failed."""
    from defan_pytest.gates import level as gate, regression as regression_gate
    from defan_pytest.gates.table import format_gate_table
    from defan_pytest.report import github
    from defan_pytest.metrics.summary import summarize
    from defan_pytest.report.tables import format_table
    from defan_pytest.run import build_report, gate_status

    summary = summarize(rows)
    verdicts = gate.check(summary, limits, decide=decide) if not limits.is_empty else []
    status = gate_status(verdicts, skipped=skipped is not None)
    comparison = None
    if old is not None:
        comparison = regression_gate.judge(old, rows, limits, baseline_path=str(baseline_path), skipped=skipped)
    if not limits.is_empty:
        stdout.write(format_gate_table(summary, limits, verdicts, width=_width()))
    else:
        stdout.write(format_table(summary))
    for v in verdicts:
        if v.status in (gate.FAIL, gate.INSUFFICIENT):
            stdout.write(printable(f"FAILED gate[{v.scope}]: {v.message}") + "\n")
    if skipped is not None:
        stdout.write(f"gates skipped: {skipped}\n")
    if comparison is not None:
        stdout.write(regression_gate.format_comparison(comparison))
    report = build_report(
        rows, summary, meta, thresholds=regression_gate.thresholds_meta(limits, summary, decide), verdicts=verdicts,
        gate_status=status, regression=comparison, usage=usage,
    )
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        github.append_step_summary(github.step_summary(report))
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for line in github.error_annotations(report, regression_gate.annotation_lines(limits, verdicts, comparison)):
            stdout.write(line + "\n")
    failed = status == "fail" or (comparison is not None and comparison.get("status") == "fail")
    return report, failed


def compare(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """``defan compare OLD NEW``: the per-domain change and the prompts that flipped."""
    from defan_pytest.gates.comparability import comparability
    from defan_pytest.gates import regression as regression_gate

    old = _load(args.old, "OLD")
    new = _load(args.new, "NEW")
    problems = comparability(old, new["meta"], new["rows"], where=str(args.old))
    if problems and not args.baseline_force:
        raise UsageError("; ".join(problems) + "; --baseline-force compares anyway")
    model = ((new.get("meta") or {}).get("model") or {}).get("name")
    domains = sorted({str(r["domain"]) for r in new["rows"]})
    limits = _thresholds_for(args.thresholds, {}, model, domains) if args.thresholds or Path("thresholds.toml").is_file() else None
    from defan_pytest.gates import thresholds

    comparison = regression_gate.judge(old, new["rows"], limits or thresholds.Thresholds.empty(model=model),
                                       baseline_path=str(args.old))
    stdout.write(regression_gate.format_comparison(comparison, flipped=50))
    return 0


def _check_outputs(outputs: Sequence[tuple[str, Path | None]], inputs: Sequence[tuple[str, Path]], force: bool) -> None:
    """Every output path checked before anything is read (and no two the same file)."""
    given = [(flag, out) for flag, out in outputs if out is not None]
    for i, (flag, out) in enumerate(given):
        for other_flag, other in given[:i]:
            if os.path.abspath(out) == os.path.abspath(other):
                raise UsageError(f"{flag} {out}: the same file as {other_flag}; give each its own")
        try:
            check_output(out, inputs=inputs, force=force, force_hint="--force")
        except OutputError as exc:
            raise UsageError(f"{flag} {exc}") from None


def _baseline_for(path: Path | None, meta: Any, rows: Any, force: bool) -> dict[str, Any] | None:
    from defan_pytest.gates.comparability import comparability

    if path is None:
        return None
    old = _load(path, "--baseline")
    problems = comparability(old, meta, rows, where="--baseline")
    if problems and not force:
        raise UsageError("; ".join(problems) + "; --baseline-force compares anyway")
    return old


def html(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """``defan html REPORT.json -o PATH``: the report as one self-contained HTML file."""
    from defan_pytest.report import html as html_report

    inputs = [("the report", args.report)] + ([("the baseline report", args.baseline)] if args.baseline else [])
    _check_outputs([("-o", args.output)], inputs, args.force)
    report = _load(args.report, "report")
    old = _baseline_for(args.baseline, report["meta"], report["rows"], args.baseline_force)
    try:
        out = html_report.write_html(
            args.output, report, baseline=old, baseline_path=str(args.baseline) if args.baseline else None,
            inputs=inputs, force=args.force, force_hint="--force",
        )
    except OutputError as exc:
        print(f"{PROG}: error: -o {printable(str(exc))}", file=stderr)
        return 2
    print(f"{PROG}: wrote {printable(str(out))} ({len(report['rows']):,} prompts)", file=stderr)
    return 0


def merge(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """``defan merge SHARD.json...``: the shards of one run combined and judged as one run."""
    from defan_pytest.report import html as html_report
    from defan_pytest.dataset import shards
    from defan_pytest.report.tables import write_json

    paths: list[Path] = list(args.reports)
    inputs = [("a shard report", p) for p in paths]
    if args.thresholds is not None:
        inputs.append(("the thresholds file", args.thresholds))
    if args.baseline is not None:
        inputs.append(("the baseline report", args.baseline))
    _check_outputs([("-o", args.output), ("--html", args.html)], inputs, args.force)
    loaded = [(str(p), _load(p, "shard report")) for p in paths]
    try:
        combined = shards.combine(loaded)
    except shards.ShardError as exc:
        print(format_problems(exc.problems, f"{PROG} merge: nothing was merged"), file=stderr)
        return 2
    rows, meta = combined.rows, combined.meta
    model = (meta.get("model") or {}).get("name")
    domains = sorted({str(r["domain"]) for r in rows})
    first = dict(loaded)[combined.files[0]]
    limits = _thresholds_for(args.thresholds, first, model, domains)
    old = _baseline_for(args.baseline, meta, rows, args.baseline_force)
    if old is None:
        used = sorted({str(((r.get("regression") or {}).get("baseline") or {}).get("path") or "") for _n, r in loaded} - {""})
        if used:
            print(f"{PROG}: note: the shards were compared with {', '.join(map(printable, used))}; pass --baseline "
                  "to judge the regression gate of the whole run", file=stderr)
    decide = args.decide or combined.decide
    skipped = None
    if (meta.get("selection") or {}).get("narrowed"):
        skipped = "a shard ran part of its selection (-k, -m, --deselect, --lf, a path, or a stopped run)"
    meta["producer"] = "defan merge"
    meta["created"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    merged, failed = _judge(rows, meta, limits, decide, old, args.baseline, skipped,
                            shards.combine_usage([r for _n, r in loaded]), stdout)
    try:
        if args.output is not None:
            write_json(args.output, merged, inputs=inputs, force=args.force, force_hint="--force")
        if args.html is not None:
            html_report.write_html(
                args.html, merged, baseline=old, baseline_path=str(args.baseline) if args.baseline else None,
                inputs=inputs, force=args.force, force_hint="--force",
            )
    except OutputError as exc:
        print(f"{PROG}: error: {printable(str(exc))}", file=stderr)
        return 2
    stdout.write(f"{PROG}: merged {combined.count} shards ({len(rows):,} prompts): {_verdicts_line(merged)}\n")
    return 1 if failed else 0


def _width() -> int:
    try:
        return os.get_terminal_size().columns
    except OSError:
        return 80
