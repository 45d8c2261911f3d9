"""The ``defan`` command: score a file of responses without pytest.

    defan score RESPONSES.jsonl [--json OUT [--force]] [--spacy-model NAME_OR_PATH|none]

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

``--json OUT`` is written by :func:`defan_pytest.outputs.write_output` and checked before
anything is read or scored: never over the responses file or a source file, over another
existing file only if it is an earlier report (or ``--force``), through symlinks to their
target, and into a FIFO or a device (``/dev/stdout``) in place.

Exit codes: 0 success, 2 bad input or usage (or OUT could not be written), 130 interrupted
(Ctrl-C; no partial OUT is left).
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence, TextIO

from defan_pytest.dataset import DatasetError, load_responses
from defan_pytest.errors import MAX_SHOWN, DefanError, format_problems
from defan_pytest.outputs import OutputError, check_output
from defan_pytest.text import printable

__all__ = ["DEFAULT_DOMAIN", "main"]

#: Domain of a line without a ``domain`` key.
DEFAULT_DOMAIN = "custom"

_PROG = "defan"


class _UsageError(DefanError):
    """A problem with the command line the user must fix before anything can run (exit 2)."""


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
        description="Score DefAn-style responses: FCH, PMH, RC and error rate per domain.",
    )
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

    from defan_pytest.scoring import ScoreInput, Scorer

    try:
        scorer = Scorer(nlp=_nlp_option(args.spacy_model))
    except (OSError, ImportError, ValueError) as exc:
        # A pipeline that is not installed (ner.NerError, a ValueError; or spaCy's own OSError)
        # is a usage problem, not a crash: say so and exit 2.
        raise _UsageError(f"--spacy-model {args.spacy_model}: {exc}") from None
    from defan_pytest import ner

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
    scores = scorer.score_many(items)

    from defan_pytest.metrics import summarize
    from defan_pytest.reports import format_table, write_json
    from defan_pytest.run import REPORT_ROW_KEYS, build_report

    rows: list[dict[str, Any]] = []
    for ln, sc in zip(lines, scores):
        row = dict(zip(REPORT_ROW_KEYS, (ln.id, ln.domain, ln.group, ln.type, sc.claim, sc.aligned, sc.correct, sc.error)))
        if sc.note:  # a very long response read in a window, or NER unavailable for it
            row["note"] = sc.note
        rows.append(row)
    summary = summarize(rows)
    stdout.write(format_table(summary))
    if out is not None:
        # OUT may be this very stream (/dev/stdout): the table goes out first, then the report.
        stdout.flush()
        try:
            report = build_report(rows, summary)
            report["scorer"] = {k: v for k, v in scorer_info.items() if k != "text"}
            write_json(out, report, inputs=inputs, force=args.force, force_hint="--force")
        except OutputError as exc:
            print(f"{_PROG}: error: --json {printable(str(exc))}", file=stderr)
            return 2
        print(f"{_PROG}: wrote {printable(str(out))}", file=stderr)
    return 0


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
        print(f"{_PROG}: error: a command is required (try '{_PROG} score --help')", file=sys.stderr)
        return 2
    try:
        return _score(args, sys.stdout, sys.stderr)
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
