"""What a DefAn run prints: the estimate and the progress line before the items run, each
prompt's letter and word (none in a big run), and the summary at the end (the gate table, the
counts, the outcomes, usage, the regression gate, the questions answered wrong).

Every word comes from :mod:`defan_pytest.verdicts`; text from the data file and the model is
passed through :func:`~defan_pytest.safetext.printable` before it reaches the terminal, each value
placed in a line through :func:`~defan_pytest.safetext.inline` (one line, no workflow command).
"""
from __future__ import annotations

import os
from collections import Counter
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import pytest

from defan_pytest.calls.budget import not_sent
from defan_pytest.calls.pace import summary_of
from defan_pytest.calls.ratelimits import rate_summary
from defan_pytest.gates.baseline import levels_note
from defan_pytest.gates.table import format_gate_table
from defan_pytest.gates.regression import noise_line, power_lines
from defan_pytest.gates.sequential import stop_lines
from defan_pytest.metrics.registry import METRICS
from defan_pytest.metrics.repeats import summary_lines
from defan_pytest.plugin.items import record_of
from defan_pytest.plugin.wording import claim_and_gold, finish_tag, short
from defan_pytest.report.cut import cut_line
from defan_pytest.report.progress import ProgressPrinter
from defan_pytest.report.tables import format_table
from defan_pytest.records import error_kinds
from defan_pytest.run import Run, Worker
from defan_pytest.safetext import inline, printable
from defan_pytest.verdicts import (
    CALL_ERROR,
    FLIPPED_WORSE_TEXT,
    RC_NO_CLAIM,
    Outcome,
    count_outcomes,
    counts_text,
    figure_parts,
    gold_text,
    no_claim_groups,
    outcome_of,
)

__all__ = ["HALLUCINATED_SHOWN", "LINES_ABOVE", "Terminal"]

#: Above this many selected prompts (and without -v), DefAn items print no letter each.
LINES_ABOVE = 1000
#: Questions the summary names, at most (the most hallucinated first).
HALLUCINATED_SHOWN = 10

#: What pytest's status hook answers: category, letter, and the word (with its markup).
Status = Tuple[str, str, Any]


def _prompt_record(report: Any) -> Optional[Dict[str, Any]]:
    """The record of a prompt's passed call report (``None`` for any other report)."""
    if getattr(report, "when", None) != "call" or not report.passed:
        return None
    return record_of(report)


def shown_outcome(report: Any) -> Optional[Outcome]:
    """The outcome a DefAn prompt's passed call report shows (``None``: not a prompt's call
    report, or one that failed under --defan-strict: pytest's own word then)."""
    rec = _prompt_record(report)
    return None if rec is None else outcome_of(rec)


def status(report: Any, verbose: bool = False) -> Optional[Status]:
    """A prompt's own category, letter and word, its outcome's (:mod:`defan_pytest.verdicts`),
    so that pytest's summary line counts the prompts by outcome; with -v each prompt's line says
    its outcome, claim, gold, question and answer (and the finish reason, when not ``stop``)."""
    rec = _prompt_record(report)
    if rec is None:
        return None
    outcome = outcome_of(rec)
    if outcome is CALL_ERROR:
        word = printable(f"{outcome.status} {short(rec['error'], 160)}")
    elif verbose:
        word = printable(
            f"{outcome.status} {claim_and_gold(rec, 40)}; "
            f"Q: {short(rec.get('question'), 70)} A: {short(rec.get('response'), 60)!r}{finish_tag(rec)}"
        )
    else:
        word = outcome.status
    return outcome.category, outcome.letter, (word, {outcome.colour: True})


class Terminal:
    """The terminal output of one run, registered as ``defan-terminal`` beside the run's plugin."""

    def __init__(self, config: pytest.Config, run: Run, worker: Worker, node: str = "defan") -> None:
        self.config = config
        self.run = run
        self.worker = worker
        self.node = node  # the node id of the run's tests' parent (defan::<model> with several models)
        # With several models, each model's estimate and progress lines name it.
        self.tag = "" if node == "defan" else f" [{inline(node.split('::', 1)[1])}]"
        #: The ``::error`` lines of GitHub Actions, printed at the end of the summary.
        self.annotations: List[str] = []
        verbosity = config.get_verbosity() if hasattr(config, "get_verbosity") else config.option.verbose
        # A big run prints no letter a prompt (a wall of them says nothing): the progress line
        # showed the calls, and the summary counts the outcomes by domain.  No line per domain
        # while the items report: they report after the calls, all at once, so such lines would
        # not be progress.
        self.lines_mode = verbosity <= 0 and len(run.rows) > LINES_ABOVE

    @property
    def reporter(self) -> Any:
        """pytest's terminal reporter, if the session has one."""
        return self.config.pluginmanager.get_plugin("terminalreporter")

    # -- before the items run -----------------------------------------------------------------

    def write_estimate(self, rows: Sequence[Any]) -> None:
        """The estimate of what the run will send and cost, before the first call."""
        tr = self.reporter
        if tr is not None and rows:
            tr.ensure_newline()
            tr.write_line(printable(self.tagged(self.run.estimate_line(rows))))

    def tagged(self, line: str) -> str:
        """``defan estimate: ...`` as ``defan estimate [<model>]: ...`` in a session of several models."""
        if not self.tag:
            return line
        head, sep, rest = line.partition(":")
        return f"{head}{self.tag}{sep}{rest}" if sep and head.lstrip("\r").startswith("defan") else line

    def progress(self, source: Callable[[], Any]) -> Optional[ProgressPrinter]:
        """Start the progress line of the calls (``source`` gives their figures), if there is a terminal."""
        tr = self.reporter
        if tr is None:
            return None
        interval = float(os.environ.get("DEFAN_PROGRESS_SECONDS", "10") or 10)
        return ProgressPrinter(
            write=lambda text: tr.write(self.tagged(text), flush=True), source=source, live=bool(tr.isatty), interval=interval,
        ).start()

    # -- while they report --------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)  # first: another plugin (pytest-sugar) answers every report
    def pytest_report_teststatus(self, report: pytest.TestReport, config: pytest.Config) -> Optional[Status]:
        """A prompt's own category, letter and word (they do not fail the run unless
        --defan-strict: the gate decides); a big run prints no letters."""
        ours = status(report, verbose=config.get_verbosity() > 0)
        if ours is None or not self.lines_mode:
            return ours
        category, _letter, word = ours
        # No letter (a word, so pytest still counts the item in its category and its progress).
        return category, "", word

    # -- the summary ------------------------------------------------------------------------------

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if self.worker.is_worker:
            return
        if self.run.summary is not None:
            self._write_results(terminalreporter, self.run.summary)
        if config.get_verbosity() <= 0 and self.run.records:  # -v has shown every prompt
            self._write_hallucinated(terminalreporter)

    def _write_results(self, tr: Any, summary: Mapping[str, Any]) -> None:
        """The gate table, the counts and usage, the regression gate, where the reports went."""
        run = self.run
        tr.write_sep("=", f"DefAn: {inline(run.model_name)}")
        if run.fatal:
            tr.write_line(f"the run stopped: {inline(run.fatal)}", red=True)
        width = int(getattr(getattr(tr, "_tw", None), "fullwidth", 80) or 80)
        # A shard, a narrowed run, a stopped one: the gates were skipped, and the table says so.
        skipped = run.gate_skipped or (f"the run stopped ({run.fatal})" if run.fatal else None)
        if run.thresholds is not None and not run.thresholds.is_empty:
            # The table's legend says why its gates were skipped.
            tr.write_line(printable(format_gate_table(
                summary, run.thresholds, run.verdicts, width=width, not_judged=skipped, decide=run.settings.decide)))
        else:
            tr.write_line(format_table(summary))
            tr.write_line(f"no thresholds file: {run.thresholds.describe([]).split(': ', 1)[1]}")
            if run.gate_skipped:
                tr.write_line(f"gates skipped: {inline(run.gate_skipped)}", yellow=True)
        if run.records:
            self._write_counts(tr)
            self._write_outcomes(tr)
            for line in run.usage_lines():  # tokens, latency, cost and the budget
                tr.write_line(printable(line), yellow=line.startswith("budget") and "reached" in line)
        for line in stop_lines(run.sequential_block().get("sequential")):  # --defan-sequential: where it stopped
            tr.write_line(printable(line), yellow=line.endswith("(judged as a fixed sample)"))
        if run.agreement is not None:  # --defan-repeat: the model against itself
            for line in summary_lines(run.agreement, by_domain=self.config.get_verbosity() > 0):
                tr.write_line(printable(line), yellow=bool((run.agreement.get("overall") or {}).get("flipped_pairs")))
        if run.comparison is not None:
            self._write_regression(tr)
        for line in power_lines(run.catchable(), run.thresholds):  # the smallest change it could catch
            tr.write_line(printable(line))
        if run.report_path is not None:
            tr.write_line(f"report: {printable(str(run.report_path))}")
        if run.html_path is not None:
            tr.write_line(f"html report: {printable(str(run.html_path))}")
        if run.report_error is not None:
            tr.write_line(f"defan-pytest: the report was not written: {inline(run.report_error)}", red=True)
        for note in run.notes[:10]:  # the data's text replaced where it entered (invalid characters)
            tr.write_line(f"note: {inline(note)}", yellow=True)
        if len(run.notes) > 10:
            tr.write_line(f"note: ... and {len(run.notes) - 10} more", yellow=True)
        for line in self.annotations:
            tr.write_line(line)

    def _write_counts(self, tr: Any) -> None:
        """What became of the prompts (answered by the model, from the cache, not sent and
        why, failed: they add up to the prompts), the verdict counts as FCH and PMH count them,
        and the call errors grouped by kind."""
        run = self.run
        c = run.call_counts()
        # Which version (and source) the cached answers belong to: an edited callable must
        # not pass for the one whose answers were reused.
        origin = f" ({c['cached_from']})" if c["cached"] and c.get("cached_from") else ""
        why = Counter(not_sent(r.get("error")) for r in run.records if r.get("error"))
        reasons = [(why[k], text) for k, text in (("budget", "the budget was reached"),
                                                  ("stopped", "the run stopped first")) if why[k]]
        unsent = ""
        if len(reasons) == 1:
            unsent = f" ({reasons[0][1]})"
        elif reasons:
            unsent = " (" + "; ".join(f"{n}: {text}" for n, text in reasons) + ")"
        # Each prompt once, by its final outcome (the four add up to the prompts); how some came
        # (another worker) and the retries are said apart, never as a fifth outcome.
        peer = (f"; {c['peer']} of the {c['prompts']} prompts came through another worker, session or prompt of the "
                "same text" if c.get("peer") else "")
        retries = f"{c['retries']} retr{'y' if c['retries'] == 1 else 'ies'}"
        tr.write_line(
            f"{c['prompts']} prompts: {c['answered']} answered by the model, {c['cached']} from the cache{origin}, "
            f"{c.get('not_sent', 0)} not sent{unsent}, {c.get('failed', 0)} failed; {retries}{peer}"
        )
        cut = cut_line(run.records, run.plan.model)
        if cut:
            tr.write_line(cut, yellow=True)
        pace = run.pace()
        paced = summary_of(pace)  # what the requests in flight settled on, and why
        if paced:
            tr.write_line(printable(paced))
        rated = rate_summary((pace or {}).get("rates"))  # the rate limits kept, and whose
        if rated:
            tr.write_line(printable(rated))
        for kind, n, text in error_kinds(r.get("error") for r in run.records).most_common(10):
            message = text.split(":", 1)[1].strip() if ":" in text else ""
            tr.write_line(printable(f"  {n} x {kind}: {short(message, 100)}" if message else f"  {n} x {kind}"), yellow=True)

    def _write_outcomes(self, tr: Any) -> None:
        """The prompts counted by outcome (the words of pytest's summary line), the FCH and PMH
        counts as sums of them, the same by domain, and why groups with no claim fail RC."""
        records = self.run.records
        counts = count_outcomes(records)
        tr.write_line(f"outcomes of {len(records):,} prompts: {counts_text(counts)}")
        tr.write_line("; ".join(figure_parts(counts)))
        by_domain: Dict[str, List[Mapping[str, Any]]] = {}
        for rec in records:
            by_domain.setdefault(str(rec.get("domain")), []).append(rec)
        if len(by_domain) > 1:
            for domain, recs in by_domain.items():
                tr.write_line(f"  {inline(domain)}: {counts_text(count_outcomes(recs))}")
        groups = no_claim_groups(records).values()
        counted, no_claim = sum(g[0] for g in groups), sum(g[1] for g in groups)
        if no_claim:
            tr.write_line(f"RC: {no_claim:,} of {counted:,} groups inconsistent for want of a claim: {RC_NO_CLAIM}")

    def _write_regression(self, tr: Any) -> None:
        """The regression gate: each scope's changes, and the prompts that went from right to
        hallucinated with both answers."""
        comp = self.run.comparison or {}
        base = comp.get("baseline") or {}
        tr.write_sep("-", "DefAn: compared with the baseline")
        note = levels_note(base)
        if note:
            tr.write_line(f"note: {inline(note)}", yellow=True)
        if comp.get("status") == "skipped":
            tr.write_line(f"regression gate skipped: {inline(comp.get('reason'))}", yellow=True)
            return
        pairs = comp.get("pairs") or {}
        # The baseline's metadata is hostile like any input: one line, no command.
        tr.write_line(
            f"baseline {inline(base.get('path'))} ({inline(base.get('model'))}, {inline(base.get('created'))}): "
            f"{inline(pairs.get('paired', 0))} prompts in common in {inline(pairs.get('groups', 0))} groups"
        )
        noise = noise_line(comp)
        if noise:
            tr.write_line(noise)
        # A regression test that failed has printed its verdicts above (FAILURES): each verdict is
        # printed once, so its scope is named here, not said again.
        failed = {getattr(r, "nodeid", "") for r in (getattr(tr, "stats", {}) or {}).get("failed", ())}
        for scope, mets in (comp.get("scopes") or {}).items():
            regressed = [name for name, change in mets.items() if change.get("regressed")]
            node = f"{self.node}::regression[{scope}]"
            said = node in failed and tr.config.option.tbstyle not in ("no", "line")
            if said and regressed:
                labels = ", ".join(METRICS[m].label if m in METRICS else m for m in regressed)
                tr.write_line(f"REGRESSED {inline(scope)}: {labels} (the failure of {inline(node)} above)", red=True)
            for change in mets.values():
                red = bool(change.get("regressed"))
                if not (red and said):
                    tr.write_line(("REGRESSED " if red else "  ") + inline(change.get("message")), red=red)
        flipped = [f for f in comp.get("flipped") or () if f.get("direction") == "worse"]
        if flipped:
            shown = flipped[:20]
            tr.write_line(f"{FLIPPED_WORSE_TEXT}: {len(flipped)} prompts (first {len(shown)}; all in the report)")
            for f in shown:
                tr.write_line(printable(
                    f"  {inline(f.get('id'))}: gold {gold_text(f.get('answer'), 30)}; before {short(f.get('old_response'), 40)!r}"
                    f" -> now {short(f.get('new_response'), 40)!r}"
                ))

    def _write_hallucinated(self, tr: Any) -> None:
        """The questions answered wrong (what FCH counts), a line per paraphrase group: how many
        of its prompts were wrong, its question, the most frequent wrong outcome and claim, and
        the gold (-v shows every prompt)."""
        groups: Dict[str, List[Mapping[str, Any]]] = {}
        for rec in self.run.records:
            if rec.get("error") is None:
                groups.setdefault(str(rec.get("group")), []).append(rec)
        counted = [(sum(1 for r in g if outcome_of(r).wrong), key, g) for key, g in groups.items()]
        bad = sorted((b for b in counted if b[0]), key=lambda b: (-b[0], b[1]))
        if not bad:
            return
        tr.write_line(f"wrong (FCH): {len(bad)} of {len(groups)} questions (most wrong first; -v shows every prompt)")
        for n, key, g in bad[:HALLUCINATED_SHOWN]:
            wrong = [r for r in g if outcome_of(r).wrong]
            # The most frequent wrong outcome, and its most frequent claim (the first met on a tie).
            word = Counter(outcome_of(r).word for r in wrong).most_common(1)[0][0]
            claim = Counter(r.get("claim") for r in wrong if outcome_of(r).word == word).most_common(1)[0][0]
            tr.write_line(printable(
                f"  {inline(key)}  {n}/{len(g)}  {short(g[0].get('question'), 72)}  {word}: "
                f"{claim_and_gold({'claim': claim, 'answer': g[0].get('answer')}, 40)}"
            ))
        if len(bad) > HALLUCINATED_SHOWN:
            tr.write_line(f"  ... and {len(bad) - HALLUCINATED_SHOWN} more")
