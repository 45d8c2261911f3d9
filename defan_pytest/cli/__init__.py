"""The ``defan`` command: score responses, and judge or compare saved reports, without pytest.

    defan --version
    defan score RESPONSES.jsonl [--json OUT [--force]] [--spacy-model NAME_OR_PATH|none]
    defan gate REPORT.json [--thresholds F] [--baseline B.json [--baseline-force]]
               [--decide point|interval] [--json OUT [--force]]
    defan compare OLD.json NEW.json [--thresholds F] [--baseline-force]
    defan html REPORT.json [--baseline B.json [--baseline-force]] -o PATH [--force]
    defan merge REPORT.json... [-o MERGED.json] [--thresholds F] [--baseline B.json [--baseline-force]]
                [--decide point|interval] [--html PATH] [--force]
    defan history FOLDER [--last N] [--html PATH] [--summary PATH] [--thresholds F] [--force]

One module a command (:mod:`~defan_pytest.cli.score`, :mod:`~defan_pytest.cli.gate`,
:mod:`~defan_pytest.cli.compare`, :mod:`~defan_pytest.cli.html`, :mod:`~defan_pytest.cli.merge`,
:mod:`~defan_pytest.cli.history`;
what they share in :mod:`~defan_pytest.cli.common`), each with its arguments (``add_parser``)
and its ``run``; this module parses the command line and dispatches.  Every report is written
through the report formats (:mod:`defan_pytest.report.formats`): a format another package adds
is ``--<its option> PATH`` of ``score``, ``gate`` and ``merge``.

Exit codes: 0 success, 1 a gate failed (``gate``, ``merge``), 2 bad input or usage (or an
output could not be written), 130 interrupted (Ctrl-C; no partial output is left), 141 the
reader of stdout went away.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from defan_pytest.cli import compare, gate, history, html, merge, score
from defan_pytest.cli.common import PROG
from defan_pytest.errors import DefanError
from defan_pytest.safetext import printable
from defan_pytest.version import __version__

__all__ = ["main"]

#: The commands, by name.
COMMANDS = {"score": score, "gate": gate, "compare": compare, "html": html, "merge": merge, "history": history}


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Score DefAn-style responses (FCH, PMH, RC and error rate per domain), and judge or compare "
        "saved reports.",
    )
    parser.add_argument("--version", action="version", version=f"defan-pytest {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS.values():
        command.add_parser(sub)
    return parser


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
        print(f"{PROG}: error: a command is required (score, gate, compare, html, merge or history; try '{PROG} --help')", file=sys.stderr)
        return 2
    try:
        return int(COMMANDS[args.command].run(args, sys.stdout, sys.stderr))
    except DefanError as exc:  # a UsageError: one problem, already worded for the user
        print(f"{PROG}: error: {printable(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Ctrl-C is the user's decision, not a crash: one line, the shell's code for SIGINT.
        # (The writer removes its temporary file on the way out: no partial OUT is left.)
        print(f"\n{PROG}: interrupted", file=sys.stderr)
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
