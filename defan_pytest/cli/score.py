"""``defan score RESPONSES.jsonl``: score a file of responses and print the per-domain figures.

RESPONSES.jsonl has one JSON object per line with ``question``, ``answer`` (the raw gold: a
string, or a JSON number kept exactly as written, so ``42.850`` keeps its three decimals),
``type`` (``name``, ``numeric``, ``date``, ``rank`` or ``city``) and ``response``, and optionally
``domain`` (default ``custom``), ``group`` (a paraphrase-group label; without it every line is its
own group), ``error`` (a message: the model call failed; ``response`` may then be missing or
null), ``finish_reason`` (the provider's word: ``length``, cut by the token limit, is scored as
cut, SCORING.md clarification 14; ``stop``; null or absent: unknown) and ``id`` (the plugin's
prompt id, ``<domain>-q<group>-p<paraphrase>``: the report's row keeps it, and the group is the
id's, so that this report pairs with the plugin's row by row). Blank lines are skipped. The lines are read and validated by the same reader and record
validator as a user's own data set (:func:`defan_pytest.dataset.load_responses`).

Every line is validated before anything is scored, and every problem is reported at once as
``FILE:LINE: message`` on stderr (exit code 2) by :func:`defan_pytest.errors.format_problems`:
scoring can load a spaCy pipeline and take a while, and a user fixing a file by hand wants the
whole list, not one error per run.  A CSV file or a JSON array given instead is one hint, not a
problem per line.  Invalid characters (lone surrogates) are replaced by U+FFFD, with a note on
stderr; text printed to the terminal never carries escape codes from the file.

``--json OUT`` is the JSON report, checked before anything is read or scored and written by the
rules of :mod:`defan_pytest.report.writer`: never over the responses file or a source file, over
another existing file only if it is an earlier report (or ``--force``), through symlinks to
their target, and into a FIFO or a device (``/dev/stdout``) in place.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any, List, Sequence, TextIO, Tuple

from defan_pytest.cli.common import PROG, UsageError, add_format_options, check_outputs, outputs_of, write
from defan_pytest.dataset import DatasetError, Response, load_responses, reader
from defan_pytest.errors import MAX_SHOWN, format_problems
from defan_pytest.metrics.summary import summarize
from defan_pytest.records import ScoredRecord, Selection
from defan_pytest.report import builder, formats
from defan_pytest.report.tables import format_table
from defan_pytest.safetext import printable
from defan_pytest.scoring import ner
from defan_pytest.scoring.scorer import ScoreInput, Scorer

__all__ = ["DEFAULT_DOMAIN", "add_parser", "run"]

#: Domain of a line without a ``domain`` key.
DEFAULT_DOMAIN = "custom"


def add_parser(sub: Any) -> None:
    """The ``score`` command's arguments."""
    score = sub.add_parser(
        "score",
        help="score a JSONL file of responses",
        description=(
            "Score RESPONSES.jsonl (one JSON object per line with question, answer, type, response; "
            "optional domain, group, error, finish_reason, id) and print per-domain figures."
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
    add_format_options(score)


def _scorer(spec: str, stderr: TextIO) -> Scorer:
    """The scorer ``--spacy-model`` asks for, said up front (an install that silently lacks a
    pipeline is visible)."""
    try:
        scorer = Scorer(nlp=None if spec == "none" else spec)
    except (OSError, ImportError, ValueError) as exc:
        # A pipeline that is not installed (ner.NerError, a ValueError; or spaCy's own OSError)
        # is a usage problem, not a crash: say so and exit 2.
        raise UsageError(f"--spacy-model {spec}: {exc}") from None
    print(f"{PROG}: scorer: {ner.describe(scorer.pipeline)['text']}", file=stderr)
    return scorer


def _score(responses: Sequence[Response], scorer: Scorer) -> Tuple[List[ScoredRecord], float]:
    """The records of the responses, scored (each with the row id and group key the report
    uses), and the seconds scoring took."""
    # The domain goes along because the scorer reads math responses differently (last number)
    # and keeps one gazetteer of known answers per domain.
    items = [ScoreInput(question=r.question, answer=r.answer, type=r.type, response=r.response, error=r.error,
                        domain=r.domain, finish_reason=r.finish_reason) for r in responses]
    began = time.monotonic()
    scores = scorer.score_many(items)
    seconds = round(time.monotonic() - began, 3)
    records = []
    for r, sc in zip(responses, scores):
        if r.id is not None:  # the plugin's id, and its group key (the validator made the group that)
            row_id, group = r.id, str(r.group)
        else:
            row_id = f"{r.domain}-line{r.line}"
            # "group-" keeps a user's group called "line5" apart from the row on line 5.
            group = f"{r.domain}-group-{r.group}" if r.group is not None else row_id
        records.append(ScoredRecord(
            id=row_id, domain=r.domain, group=group, type=r.type, claim=sc.claim, aligned=sc.aligned,
            correct=sc.correct, error=sc.error, note=sc.note or None, question=r.question, answer=r.answer,
            response=r.response, finish_reason=r.finish_reason,
        ))
    return records, seconds


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """Score the responses, print the table, write the report."""
    path: Path = args.responses
    inputs = [("the responses file", path)]
    outputs = outputs_of(args, {"json": ("--json", args.json)})
    check_outputs(outputs, inputs, args.force)  # before anything is read or scored: a bad OUT costs nothing
    # Not a problem of the file's content: said as a usage error, like a bad option (a folder, a
    # typo, a symbolic link loop, a FIFO or a device: the one reader's check).
    try:
        reader.check_file(path)
    except reader.InputError as exc:
        raise UsageError(str(exc)) from None
    notes: List[str] = []
    try:
        responses = load_responses(path, default_domain=DEFAULT_DOMAIN, notes=notes)
    except DatasetError as exc:
        # Every problem of the file at once: scoring can take a while, and a user fixing a
        # file by hand wants the whole list, not one error per run.
        print(format_problems(exc.problems, f"{PROG}: nothing was scored"), file=stderr)
        return 2
    for note in notes[:MAX_SHOWN]:
        print(f"{PROG}: note: {printable(note)}", file=stderr)
    if len(notes) > MAX_SHOWN:
        print(f"{PROG}: note: ... and {len(notes) - MAX_SHOWN} more", file=stderr)
    scorer = _scorer(args.spacy_model, stderr)
    records, seconds = _score(responses, scorer)
    summary = summarize(records)
    stdout.write(format_table(summary))
    if not outputs:
        return 0
    # OUT may be this very stream (/dev/stdout): the table goes out first, then the report.
    stdout.flush()
    meta = builder.build_meta(
        producer="defan score", model=None, dataset=builder.questions_meta(path.name, records),
        scorer=builder.scorer_meta(scorer.pipeline),
        selection=Selection(domains=tuple(sorted({r.domain for r in records})), sample=None, seed=0,
                            selected=len(records), ran=len(records)),
        calls=builder.call_counts(records, asked=False), durations={"scoring": seconds, "total": seconds},
    )
    context = formats.Context(inputs=tuple(inputs), force=args.force, force_hint="--force")
    written = write(builder.build_report(records, summary, meta), outputs, context, stderr)
    if written is None:
        return 2
    for name in written:
        print(f"{PROG}: wrote {printable(outputs[name].given)}", file=stderr)
    return 0
