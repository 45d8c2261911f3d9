"""``defan compare OLD.json NEW.json``: the per-domain change between two reports and the prompts
that flipped (exit 1 when a scope regressed, as `defan gate --baseline`; 0 otherwise; 2 for bad input)."""
from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, TextIO

from defan_pytest.cli.common import UsageError, load, thresholds_for
from defan_pytest.gates import regression, thresholds
from defan_pytest.gates.comparability import comparability

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """The ``compare`` command's arguments."""
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


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """The per-domain change and the prompts that flipped; exit 1 when a scope regressed
    (beyond its tolerance and significantly), 0 otherwise, 2 for bad input."""
    old = load(args.old, "OLD")
    new = load(args.new, "NEW")
    problems = comparability(old, new.meta.dataset, new.meta.scorer, new.rows, where=str(args.old))
    if problems and not args.baseline_force:
        raise UsageError("; ".join(problems) + "; --baseline-force compares anyway")
    model = new.meta.model_name
    limits = thresholds.Thresholds.empty(model=model)
    if args.thresholds or os.path.lexists("thresholds.toml"):
        limits = thresholds_for(args.thresholds, None, model, sorted({r.domain for r in new.rows}))
    comparison = regression.judge(old.to_json(), new.rows, limits, baseline_path=str(args.old), noise=new.meta.repeat)
    stdout.write(regression.format_comparison(comparison, flipped=50))
    # The same exit codes as `defan gate --baseline`: 1 when a scope regressed.
    return 1 if comparison.get("status") == "fail" else 0
