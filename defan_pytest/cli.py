"""The ``defan`` command: score a file of responses without pytest.

    defan score RESPONSES.jsonl [--json OUT] [--spacy-model NAME_OR_PATH|none]

RESPONSES.jsonl has one JSON object per line with ``question``, ``answer`` (the raw gold string),
``type`` (``name``, ``numeric``, ``date``, ``rank`` or ``city``) and ``response``, and optionally
``domain`` (default ``custom``), ``group`` (a paraphrase-group label; without it every line is its
own group) and ``error`` (a message: the model call failed; ``response`` may then be missing or
null). Blank lines are skipped.

Every line is validated before anything is scored, and every problem is reported at once as
``FILE:LINE: message`` on stderr (exit code 2): scoring can load a spaCy pipeline and take a
while, and a user fixing a file by hand wants the whole list, not one error per run.

Exit codes: 0 success, 2 bad input or usage.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence, TextIO

__all__ = ["ALLOWED_TYPES", "DEFAULT_DOMAIN", "main"]

#: Answer types the scorer knows.
ALLOWED_TYPES: tuple[str, ...] = ("name", "numeric", "date", "rank", "city")

#: Domain of a line without a ``domain`` key.
DEFAULT_DOMAIN = "custom"

_REQUIRED = ("question", "answer", "type", "response")
_PROG = "defan"


class _UsageError(Exception):
    """A problem the user must fix before anything can run (exit code 2)."""


@dataclass(frozen=True)
class _Line:
    """One validated input line."""

    line: int
    id: str
    domain: str
    group: str
    question: str
    answer: str
    type: str
    response: str | None
    error: str | None


def _json_type(value: Any) -> str:
    # Name JSON types the way the user wrote them, not as Python types.
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _check_line(obj: Any) -> list[str]:
    """Every problem with one parsed line, as messages (empty when the line is fine)."""
    if not isinstance(obj, dict):
        return [f"not a JSON object (got {_json_type(obj)})"]
    problems: list[str] = []

    error = obj.get("error")
    if error is not None and not isinstance(error, str):
        problems.append(f'"error" must be a string or null, got {_json_type(error)}')
    has_error = isinstance(error, str) and bool(error.strip())

    for key in _REQUIRED:
        if key == "response" and has_error:
            continue  # a failed call has nothing to score
        if key not in obj:
            problems.append(f'missing key "{key}"')

    for key in ("question", "answer", "type"):
        if key in obj and not isinstance(obj[key], str):
            hint = ""
            if key == "answer" and isinstance(obj[key], (int, float)) and not isinstance(obj[key], bool):
                # A JSON number loses the gold's written form (42.850 -> 42.85), and the number
                # of decimals decides the numeric tolerance, so the gold must be quoted.
                hint = " (quote it: the gold's written form decides the tolerance)"
            problems.append(f'"{key}" must be a string, got {_json_type(obj[key])}{hint}')
    if isinstance(obj.get("question"), str) and not obj["question"].strip():
        problems.append('"question" is empty')
    if isinstance(obj.get("type"), str) and obj["type"] not in ALLOWED_TYPES:
        problems.append(f'unknown type "{obj["type"]}" (allowed: {", ".join(ALLOWED_TYPES)})')

    if "response" in obj:
        response = obj["response"]
        if response is None:
            if not has_error:
                problems.append('"response" is null but there is no "error" (only a failed call may lack a response)')
        elif not isinstance(response, str):
            problems.append(f'"response" must be a string, got {_json_type(response)}')

    if "domain" in obj:
        domain = obj["domain"]
        if not isinstance(domain, str):
            problems.append(f'"domain" must be a string, got {_json_type(domain)}')
        elif not domain.strip():
            problems.append('"domain" is empty')
    if "group" in obj:
        group = obj["group"]
        if isinstance(group, bool) or not isinstance(group, (str, int)):
            problems.append(f'"group" must be a string or an integer, got {_json_type(group)}')
        elif isinstance(group, str) and not group.strip():
            problems.append('"group" is empty')
    return problems


def _read_lines(path: Path) -> tuple[list[_Line], list[str]]:
    """Parse and validate the whole file; returns the lines and every problem found."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise _UsageError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise _UsageError(f"{path}: is a directory, not a JSONL file") from None
    except OSError as exc:
        raise _UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None

    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]  # a BOM from an editor on Windows is not part of the first object

    lines: list[_Line] = []
    problems: list[str] = []
    group_types: dict[str, tuple[str, int]] = {}
    # Split on "\n" only so LINE matches what an editor shows; "\r\n" loses its "\r" below.
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        raw = raw.rstrip(b"\r")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(f"{path}:{lineno}: not valid UTF-8 (byte {exc.start + 1})")
            continue
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            problems.append(f"{path}:{lineno}: not valid JSON: {exc.msg} (column {exc.colno})")
            continue
        line_problems = _check_line(obj)
        if line_problems:
            problems.extend(f"{path}:{lineno}: {msg}" for msg in line_problems)
            continue

        domain = obj.get("domain", DEFAULT_DOMAIN)
        row_id = f"{domain}-line{lineno}"
        # "group-" keeps a user's group called "line5" apart from the row on line 5.
        group = f"{domain}-group-{obj['group']}" if "group" in obj else row_id
        # RC compares claims under the group's type, so one group must have one type.
        seen = group_types.setdefault(group, (obj["type"], lineno))
        if seen[0] != obj["type"]:
            problems.append(
                f'{path}:{lineno}: type "{obj["type"]}" differs from type "{seen[0]}" of the same '
                f'group on line {seen[1]}'
            )
            continue
        error = obj.get("error")
        lines.append(
            _Line(
                line=lineno,
                id=row_id,
                domain=domain,
                group=group,
                question=obj["question"],
                answer=obj["answer"],
                type=obj["type"],
                response=obj.get("response"),
                # "" or blank is what converters write for "no error"; only a message counts.
                error=error if isinstance(error, str) and error.strip() else None,
            )
        )
    return lines, problems


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
    score.add_argument("--json", metavar="OUT", type=Path, default=None, help="also write the JSON report to OUT")
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
    if out is not None:
        # Checked before scoring so a typo in OUT does not cost a full scoring run.
        if out.is_dir():
            raise _UsageError(f"--json {out}: is a directory")
        parent = out.parent
        if not parent.is_dir():
            raise _UsageError(f"--json {out}: directory {parent} does not exist")
        if out.resolve() == path.resolve():
            raise _UsageError(f"--json {out}: would overwrite the responses file")

    lines, problems = _read_lines(path)
    if problems:
        for msg in problems:
            print(msg, file=stderr)
        print(f"{_PROG}: {len(problems)} problem(s) in {path}; nothing was scored", file=stderr)
        return 2
    if not lines:
        raise _UsageError(f"{path}: no responses (the file is empty)")

    from defan_pytest.scoring import ScoreInput, Scorer

    try:
        scorer = Scorer(nlp=_nlp_option(args.spacy_model))
    except (OSError, ImportError, ValueError) as exc:
        # A pipeline that is not installed (ner.NerError, a ValueError; or spaCy's own OSError)
        # is a usage problem, not a crash: say so and exit 2.
        raise _UsageError(f"--spacy-model {args.spacy_model}: {exc}") from None

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
    from defan_pytest.reports import build_report, format_table, write_json

    rows: list[dict[str, Any]] = [
        {
            "id": ln.id,
            "domain": ln.domain,
            "group": ln.group,
            "type": ln.type,
            "claim": sc.claim,
            "aligned": sc.aligned,
            "correct": sc.correct,
            "error": sc.error,
        }
        for ln, sc in zip(lines, scores)
    ]
    summary = summarize(rows)
    stdout.write(format_table(summary))
    if out is not None:
        try:
            write_json(out, build_report(rows, summary))
        except OSError as exc:
            raise _UsageError(f"--json {out}: cannot write: {exc.strerror or exc}") from None
        print(f"{_PROG}: wrote {out}", file=stderr)
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
    except _UsageError as exc:
        print(f"{_PROG}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
