"""``defan compare OLD.json NEW.json``: the per-domain change between two reports and the prompts
that flipped (exit 1 when a scope regressed, as `defan gate --baseline`, and when the comparison
could judge nothing: too few paraphrase groups in common, which `--defan-baseline` refuses before
any call; 0 otherwise; 2 for bad input)."""
from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, TextIO

from defan_pytest.cli import models
from defan_pytest.cli.common import UsageError, thresholds_for
from defan_pytest.gates import regression, thresholds
from defan_pytest.gates.comparability import comparability
from defan_pytest.metrics.repeats import reduce_of
from defan_pytest.records import ModelsReport
from defan_pytest.safetext import inline

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
    (worse than the model's own noise and past its tolerance) or nothing could be judged, 0
    otherwise, 2 for bad input."""
    old, new = models.load_any(args.old, "OLD"), models.load_any(args.new, "NEW")
    return _compare_models(args, old, new, stdout)


def _compare_models(args: argparse.Namespace, old_any: Any, new_any: Any, stdout: TextIO) -> int:
    """Each model of NEW (one, or several: a report of version 2) against the same model's run
    in OLD (OLD itself when it is a report of one model); exit 1 when one regressed."""
    runs = new_any.runs if isinstance(new_any, ModelsReport) else (new_any,)
    if isinstance(old_any, ModelsReport):
        # A model of NEW without a run in OLD has no baseline: refused, as --defan-baseline
        # refuses it (a comparison that leaves a model out is no pass).
        missing = [r.meta.model_name or "" for r in runs if old_any.run_of(r.meta.model_name or "") is None]
        if missing:
            raise UsageError(f"OLD {args.old}: no run of model{'s' if len(missing) > 1 else ''} "
                             f"{', '.join(repr(m) for m in missing)} of NEW (it holds {', '.join(old_any.models)})")
    failed = False
    for new in runs:
        model = new.meta.model_name
        name = model or ""
        old = old_any.run_of(name) if isinstance(old_any, ModelsReport) else old_any
        if old is None:  # (checked above)
            continue
        problems = comparability(old, new.meta.dataset, new.meta.scorer, new.rows, where=str(args.old))
        if problems and not args.baseline_force:
            raise UsageError("; ".join(problems) + "; --baseline-force compares anyway")
        limits = thresholds.Thresholds.empty(model=model)
        if args.thresholds or os.path.lexists("thresholds.toml"):
            limits = thresholds_for(args.thresholds, None, model, sorted({r.domain for r in new.rows}))
        comparison = regression.judge(old.to_json(), new.rows, limits, baseline_path=str(args.old), noise=new.meta.repeat,
                                      reduce=reduce_of(new.meta.repeat))
        if isinstance(new_any, ModelsReport):
            stdout.write(f"== {inline(name)} ==\n")
        stdout.write(regression.format_comparison(comparison, flipped=50))
        # Nothing judged is no pass: a comparison of two reports with too little in common.
        failed = failed or comparison.get("status") in ("fail", "skipped")
    return 1 if failed else 0
