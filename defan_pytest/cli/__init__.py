"""The ``defan`` command: score responses, and judge or compare saved reports, without pytest.

    defan --version
    defan score RESPONSES.jsonl [--json OUT [--force]] [--spacy-model NAME_OR_PATH|none]
    defan gate REPORT.json [--thresholds F] [--baseline B.json [--baseline-force]]
               [--decide point|interval] [--json OUT [--force]]
    defan compare OLD.json NEW.json [--thresholds F] [--baseline-force]
    defan html REPORT.json [--baseline B.json [--baseline-force]] -o PATH [--force]
    defan merge REPORT.json... [-o MERGED.json] [--thresholds F] [--baseline B.json [--baseline-force]]
                [--decide point|interval] [--html PATH] [--force]

``defan gate`` re-judges a saved report (``--defan-report``) as the plugin would: the level gate
against the thresholds (default: ``thresholds.toml`` here, else the file the run used), and with
``--baseline`` the regression gate; exit code 0 when both pass, 1 when either fails, 2 for bad
input.  ``defan compare`` prints the per-domain change between two reports and the prompts that
flipped (exit 0, or 2 for bad input).  ``defan html`` writes a report as one self-contained HTML
file (:mod:`defan_pytest.report.html`).  ``defan merge`` combines the reports of the shards of one
run (``--defan-shard=I/N``, :mod:`defan_pytest.dataset.shards`) into the report, verdicts, exit code,
step summary and HTML an unsharded run gives; it refuses (exit 2, naming the files) shards of
different runs, a missing or duplicated shard, and a mix of sharded and unsharded reports.

RESPONSES.jsonl has one JSON object per line with ``question``, ``answer`` (the raw gold: a
string, or a JSON number kept exactly as written, so ``42.850`` keeps its three decimals),
``type`` (``name``, ``numeric``, ``date``, ``rank`` or ``city``) and ``response``, and optionally
``domain`` (default ``custom``), ``group`` (a paraphrase-group label; without it every line is its
own group) and ``error`` (a message: the model call failed; ``response`` may then be missing or
null). Blank lines are skipped. The lines are read and validated by the same reader and record
validator as a user's own data set (:func:`defan_pytest.dataset.load_responses`).

Every line is validated before anything is scored, and every problem is reported at once as
``FILE:LINE: message`` on stderr (exit code 2) by :func:`defan_pytest.errors.format_problems`:
scoring can load a spaCy pipeline and take a while, and a user fixing a file by hand wants the
whole list, not one error per run.  A CSV file or a JSON array given instead is one hint, not a
problem per line.  Invalid characters (lone surrogates) are replaced by U+FFFD, with a note on
stderr; text printed to the terminal never carries escape codes from the file.

``--json OUT`` is written by :func:`defan_pytest.report.writer.write_output` and checked before
anything is read or scored: never over the responses file or a source file, over another
existing file only if it is an earlier report (or ``--force``), through symlinks to their
target, and into a FIFO or a device (``/dev/stdout``) in place.

Exit codes: 0 success, 2 bad input or usage (or OUT could not be written), 130 interrupted
(Ctrl-C; no partial OUT is left).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence, TextIO

from defan_pytest.version import __version__
from defan_pytest.cli.reports import PROG as _PROG
from defan_pytest.cli.reports import UsageError as _UsageError
from defan_pytest.dataset import DatasetError, load_responses
from defan_pytest.errors import MAX_SHOWN, DefanError, format_problems
from defan_pytest.report.writer import OutputError, check_output
from defan_pytest.safetext import printable

__all__ = ["DEFAULT_DOMAIN", "main"]

#: Domain of a line without a ``domain`` key.
DEFAULT_DOMAIN = "custom"



@dataclass(frozen=True)
class _Line:
    """One validated input line, with the row id and group key the report uses."""

    line: int
    id: str
    domain: str
    group: str
    question: str
    answer: str
    type: str
    response: str | None
    error: str | None


def _read_lines(path: Path, notes: list[str] | None = None) -> list[_Line]:
    """Read and validate the whole file through the dataset's JSONL reader and record
    validator (:func:`~defan_pytest.dataset.load_responses`), then give each line its id.
    ``notes`` gets a line for each line whose text was sanitised.

    Raises :class:`~defan_pytest.dataset.DatasetError` listing every problem of the file.
    """
    lines: list[_Line] = []
    for r in load_responses(path, default_domain=DEFAULT_DOMAIN, notes=notes):
        row_id = f"{r.domain}-line{r.line}"
        # "group-" keeps a user's group called "line5" apart from the row on line 5.
        group = f"{r.domain}-group-{r.group}" if r.group is not None else row_id
        lines.append(
            _Line(
                line=r.line,
                id=row_id,
                domain=r.domain,
                group=group,
                question=r.question,
                answer=r.answer,
                type=r.type,
                response=r.response,
                error=r.error,
            )
        )
    return lines


def _nlp_option(value: str) -> str | None:
    return None if value == "none" else value


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=_PROG,
        description="Score DefAn-style responses (FCH, PMH, RC and error rate per domain), and judge or compare "
        "saved reports.",
    )
    from defan_pytest.version import __version__

    parser.add_argument("--version", action="version", version=f"defan-pytest {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    score = sub.add_parser(
        "score",
        help="score a JSONL file of responses",
        description=(
            "Score RESPONSES.jsonl (one JSON object per line with question, answer, type, response; "
            "optional domain, group, error) and print per-domain figures."
        ),
    )
    score.add_argument("responses", metavar="RESPONSES.jsonl", type=Path, help="the responses to score")
    score.add_argument(
        "--json", metavar="OUT", type=Path, default=None,
        help="also write the JSON report to OUT (an existing OUT is replaced only if it is an earlier "
        "report; a FIFO or a device such as /dev/stdout is written in place)",
    )
    score.add_argument(
        "--force", action="store_true",
        help="let --json replace an existing file that is not a defan report (never the responses "
        "file, nor a .py, .toml, .cfg, .ini, .csv or .jsonl file)",
    )
    score.add_argument(
        "--spacy-model",
        metavar="NAME_OR_PATH|none",
        default="auto",
        help='spaCy pipeline for name extraction: a package name or a path, "none" to use none, '
        'or "auto" (default: the first installed English pipeline, if any)',
    )
    gate = sub.add_parser(
        "gate",
        help="re-judge a saved report: the level gate, and the regression gate with --baseline",
        description="Re-judge REPORT.json (from --defan-report or defan score --json) against the thresholds, "
        "and with --baseline against an earlier report; exit 0 when both gates pass, 1 when one fails.",
    )
    gate.add_argument("report", metavar="REPORT.json", type=Path, help="the report to judge")
    gate.add_argument("--thresholds", metavar="F", type=Path, default=None,
                      help="thresholds file (default: thresholds.toml here, else the one the run used)")
    gate.add_argument("--baseline", metavar="B.json", type=Path, default=None,
                      help="an earlier report: judge the change by a paired test (the regression gate)")
    gate.add_argument("--baseline-force", action="store_true",
                      help="compare even with a baseline of another data set or scorer")
    gate.add_argument("--decide", choices=("point", "interval"), default=None,
                      help="how the level gate decides (default: as the run did)")
    gate.add_argument("--json", metavar="OUT", type=Path, default=None, help="write the re-judged report to OUT")
    gate.add_argument("--force", action="store_true", help="let --json replace a file that is not a defan report")
    compare = sub.add_parser(
        "compare",
        help="print the per-domain change between two reports and the prompts that flipped",
        description="Compare NEW.json with OLD.json on the prompts both hold: the change of FCH, PMH and RC per "
        "domain with its interval (paired test over paraphrase groups), and the prompts that flipped.",
    )
    compare.add_argument("old", metavar="OLD.json", type=Path, help="the earlier report (the baseline)")
    compare.add_argument("new", metavar="NEW.json", type=Path, help="the later report")
    compare.add_argument("--thresholds", metavar="F", type=Path, default=None,
                         help="thresholds file for the tolerances and confidence (default: thresholds.toml here, if any)")
    compare.add_argument("--baseline-force", action="store_true",
                         help="compare even reports of another data set or scorer")
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
    merge = sub.add_parser(
        "merge",
        help="combine the reports of the shards of one run (--defan-shard) and judge the whole run",
        description="Combine the reports of every shard of one run (pytest --defan-shard=I/N --defan-report=...) "
        "into the report, figures, gate verdicts, exit code, step summary and HTML of the unsharded run; exit 0 "
        "when the gates pass, 1 when one fails, 2 for bad input (shards of different runs, a shard missing or "
        "given twice, an unsharded report among them).",
    )
    merge.add_argument("reports", metavar="REPORT.json", type=Path, nargs="+", help="the shards' reports")
    merge.add_argument("-o", "--output", metavar="MERGED.json", type=Path, default=None,
                       help="write the merged report here")
    merge.add_argument("--thresholds", metavar="F", type=Path, default=None,
                       help="thresholds file (default: thresholds.toml here, else the one the runs used)")
    merge.add_argument("--baseline", metavar="B.json", type=Path, default=None,
                       help="an earlier report: judge the change by a paired test (the regression gate)")
    merge.add_argument("--baseline-force", action="store_true",
                       help="compare even with a baseline of another data set or scorer")
    merge.add_argument("--decide", choices=("point", "interval"), default=None,
                       help="how the level gate decides (default: as the runs did)")
    merge.add_argument("--html", metavar="PATH", type=Path, default=None, help="also write the HTML report here")
    merge.add_argument("--force", action="store_true", help="let -o and --html replace a file that is not a defan report")
    return parser


def _score(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    path: Path = args.responses
    out: Path | None = args.json
    inputs = [("the responses file", path)]
    if out is not None:
        # Checked before anything is read or scored, so that a bad OUT costs nothing.
        try:
            check_output(out, inputs=inputs, force=args.force, force_hint="--force")
        except OutputError as exc:
            raise _UsageError(f"--json {exc}") from None

    # Not a problem of the file's content: said as a usage error, like a bad option.
    if path.is_dir():
        raise _UsageError(f"{path}: is a directory, not a JSONL file")
    if not path.exists():
        raise _UsageError(f"{path}: no such file")
    notes: list[str] = []
    try:
        lines = _read_lines(path, notes)
    except DatasetError as exc:
        # Every problem of the file at once: scoring can take a while, and a user fixing a
        # file by hand wants the whole list, not one error per run.
        print(format_problems(exc.problems, f"{_PROG}: nothing was scored"), file=stderr)
        return 2
    for note in notes[:MAX_SHOWN]:
        print(f"{_PROG}: note: {printable(note)}", file=stderr)
    if len(notes) > MAX_SHOWN:
        print(f"{_PROG}: note: ... and {len(notes) - MAX_SHOWN} more", file=stderr)

    from defan_pytest.scoring.scorer import ScoreInput, Scorer

    try:
        scorer = Scorer(nlp=_nlp_option(args.spacy_model))
    except (OSError, ImportError, ValueError) as exc:
        # A pipeline that is not installed (ner.NerError, a ValueError; or spaCy's own OSError)
        # is a usage problem, not a crash: say so and exit 2.
        raise _UsageError(f"--spacy-model {args.spacy_model}: {exc}") from None
    from defan_pytest.scoring import ner

    # Which scorer runs, said up front: an install that silently lacks a pipeline is visible.
    scorer_info = ner.describe(scorer.pipeline)
    print(f"{_PROG}: scorer: {scorer_info['text']}", file=stderr)

    # The domain goes along because the scorer reads math responses differently (last number)
    # and keeps one gazetteer of known answers per domain.
    items = [
        ScoreInput(
            question=ln.question,
            answer=ln.answer,
            type=ln.type,
            response=ln.response,
            error=ln.error,
            domain=ln.domain,
        )
        for ln in lines
    ]
    began = time.monotonic()
    scores = scorer.score_many(items)
    scoring_seconds = round(time.monotonic() - began, 3)

    from defan_pytest.metrics.summary import summarize
    from defan_pytest.report.tables import format_table, write_json
    from defan_pytest.run import REPORT_ROW_KEYS, build_report, error_kind, scorer_meta

    rows: list[dict[str, Any]] = []
    for ln, sc in zip(lines, scores):
        row = dict(zip(REPORT_ROW_KEYS, (ln.id, ln.domain, ln.group, ln.type, sc.claim, sc.aligned, sc.correct, sc.error)))
        row.update(question=ln.question, answer=ln.answer, response=ln.response, error_kind=error_kind(sc.error))
        if sc.note:  # a very long response read in a window, or NER unavailable for it
            row["note"] = sc.note
        rows.append(row)
    summary = summarize(rows)
    stdout.write(format_table(summary))
    if out is not None:
        # OUT may be this very stream (/dev/stdout): the table goes out first, then the report.
        stdout.flush()
        kinds: dict[str, int] = {}
        for row in rows:
            kind = row["error_kind"]
            if isinstance(kind, str):
                kinds[kind] = kinds.get(kind, 0) + 1
        meta = {
            "defan_pytest": __version__,
            "producer": "defan score",
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "model": None,
            "dataset": _questions_identity(path, lines),
            "scorer": scorer_meta(scorer.pipeline),
            "selection": {
                "domains": sorted({ln.domain for ln in lines}), "sample": None, "seed": 0,
                "selected": len(lines), "ran": len(lines), "narrowed": False, "shard": None,
            },
            "calls": {"prompts": len(lines), "errors": sum(kinds.values()), "error_kinds": kinds},
            "durations": {"scoring": scoring_seconds, "total": scoring_seconds},
        }
        try:
            report = build_report(rows, summary, meta)
            write_json(out, report, inputs=inputs, force=args.force, force_hint="--force")
        except OutputError as exc:
            print(f"{_PROG}: error: --json {printable(str(exc))}", file=stderr)
            return 2
        print(f"{_PROG}: wrote {printable(str(out))}", file=stderr)
    return 0


def _questions_identity(path: Path, lines: Sequence[_Line]) -> dict[str, Any]:
    """A responses file's data set: the digest of its questions and golds (not of the
    responses), so that two models' responses to the same questions can be compared."""
    digest = hashlib.sha256()
    for ln in lines:
        digest.update(json.dumps([ln.id, ln.question, ln.answer, ln.type], ensure_ascii=False).encode("utf-8"))
        digest.update(b"\n")
    sha = digest.hexdigest()
    return {"source": path.name, "identity": f"questions:{sha[:16]}", "commit": None, "sha256": {"questions": sha}}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``defan`` command line with ``argv`` (default ``sys.argv[1:]``); return the exit code.

    Never calls :func:`sys.exit` itself, so tests and other tools can call it in-process.
    """
    parser = _build_parser()
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
    except SystemExit as exc:
        # argparse exits on --help (0) and on usage errors (2, message already printed).
        return exc.code if isinstance(exc.code, int) else 2
    if args.command is None:
        parser.print_usage(sys.stderr)
        print(f"{_PROG}: error: a command is required (score, gate, compare, html or merge; try '{_PROG} --help')", file=sys.stderr)
        return 2
    from defan_pytest.cli import reports as cli_reports

    commands = {"score": _score, "gate": cli_reports.gate, "compare": cli_reports.compare, "html": cli_reports.html,
                "merge": cli_reports.merge}
    command = commands[args.command]
    try:
        return command(args, sys.stdout, sys.stderr)
    except DefanError as exc:  # a _UsageError: one problem, already worded for the user
        print(f"{_PROG}: error: {printable(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Ctrl-C is the user's decision, not a crash: one line, the shell's code for SIGINT.
        # (The writer removes its temporary file on the way out: no partial OUT is left.)
        print(f"\n{_PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of stdout went away (``defan score ... | head``): nothing more to say to it.
        # stdout is pointed at devnull so that the flush at exit does not fail a second time.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError):  # stdout is not a real file (a test's capture)
            pass
        return 141


if __name__ == "__main__":
    raise SystemExit(main())
