"""Speaking GitHub Actions' language: a Markdown step summary and ``::error`` annotations.

Both are made from a :class:`~defan_pytest.records.Report`, so the plugin, ``defan gate`` and
``defan merge`` say the same thing (they write them through the ``github`` report format,
:mod:`defan_pytest.report.formats`).  :func:`append_step_summary` appends the summary to the
step summary file (``GITHUB_STEP_SUMMARY``, which GitHub sets in every step);
:func:`error_annotations` gives one workflow command per breach and per regression, pointing at
the line of ``thresholds.toml`` that set the limit.  Nothing here imports pytest.

Every text of the report goes into the summary through
:func:`~defan_pytest.safetext.markdown_cell` (no image, link, HTML or broken table row comes
from the data) and into an annotation through :func:`~defan_pytest.safetext.inline` (one line,
no escape sequence), then the runner's own escaping.
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, List

from defan_pytest.gates.baseline import levels_note
from defan_pytest.report.cut import count_cut, cut_text
from defan_pytest.report.writer import Input, OutputError, append_output
from defan_pytest.safetext import inline, markdown_cell
from defan_pytest.verdicts import (
    FLIPPED_WORSE_TEXT,
    NO_PRIZE_TEXT,
    RC_NO_CLAIM,
    count_outcomes,
    counts_text,
    empty_gold,
    figure_parts,
    no_claim_groups,
)

if TYPE_CHECKING:  # the records load when a report is made, not on every pytest start
    from defan_pytest.records import ModelsReport, Report

__all__ = ["error_annotations", "append_step_summary", "escape_data", "escape_property", "models_step_summary", "step_summary"]

#: At most this many flipped prompts are listed in the summary (the report has them all).
TOP_FLIPPED = 10


def escape_data(text: str) -> str:
    """The message of a workflow command, escaped as the runner expects (``%``, CR, LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value of a workflow command (``file=``, ``title=``): also ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _cell(text: Any, limit: int = 120) -> str:
    """Model or data text as a Markdown table cell: no table breaks, no HTML, shortened."""
    return markdown_cell("" if text is None else text, limit)


def _count(value: Any) -> str:
    """A count of the report as a cell: a number as it is, anything else escaped."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else _cell(value, 20)


def _rate(value: Any) -> str:
    return "–" if not isinstance(value, (int, float)) or isinstance(value, bool) else f"{value:.3f}"


def _ci(ci: Any) -> str:
    if isinstance(ci, Sequence) and not isinstance(ci, str) and len(ci) == 2 and None not in ci:
        return f" [{ci[0]:.3f}, {ci[1]:.3f}]"
    return ""


def _signed(value: Any) -> str:
    return "–" if not isinstance(value, (int, float)) else f"{value:+.3f}"


def _repeat_lines(report: Report) -> List[str]:
    """The line of ``--defan-repeat`` (the model against itself), when the run asked it."""
    if not report.meta.repeat:
        return []
    # lazy: start-up. The metrics package pulls the data set and the scorer, which a pytest start
    # (this module loads with the report formats) must not.
    from defan_pytest.metrics.repeats import summary_lines

    return [_cell(summary_lines(report.meta.repeat)[0], 400), ""]


def step_summary(report: Report) -> str:
    """The Markdown summary of a report: verdicts, the domain table with limits, breaches,
    regressions with their intervals, and the top flipped prompts."""
    model = report.meta.model_name or "responses"
    gate_status = report.gate_status
    reg = report.regression or None
    reg_status = reg.get("status") if reg else None
    icon = "❌" if "fail" in (gate_status, reg_status) else "✅" if gate_status == "pass" else "⚠️"
    lines = [f"## {icon} DefAn: {_cell(model, 80)}", ""]
    sel = report.meta.selection
    skipped = gate_status == "skipped"
    facts = [
        f"level gate: **not judged** ({_skip_reason(report)})" if skipped else f"level gate: **{_cell(gate_status, 20)}**",
        f"regression gate: **{_cell(reg_status, 20)}**" if reg else "regression gate: no baseline",
        f"{_count(sel.ran)} prompts",
    ]
    if sel.sample:
        facts.append(f"sample {_cell(sel.sample, 60)} (seed {_count(sel.seed)})")
    lines += [" · ".join(facts), ""]
    lines += _outcome_lines(report.rows)
    cut = count_cut(report.rows)
    if cut:
        m = report.meta.model
        params = (m.params if m is not None else None) or {}
        text = cut_text(cut, sum(1 for r in report.rows if not r.error), m.kind if m is not None else None,
                        m.name if m is not None else None, params.get("max_completion_tokens") or params.get("max_tokens"))
        lines += [f"⚠️ {_cell(text, 400)}", ""]
    lines += _repeat_lines(report)

    lines += _table_lines(report)
    lines.append("")
    breaches = [] if skipped else report.breaches  # a skipped gate breached nothing
    if breaches:
        lines += ["### Breaches", ""]
        lines += [f"- {_cell(v.get('message'), 300)}" for v in breaches]
        lines.append("")
    if reg:
        lines += _regression_lines(reg)
    lines += _power_lines(report)
    return "\n".join(lines).rstrip() + "\n"


def _power_lines(report: Report) -> list[str]:
    """What the run could catch (issue 33): the smallest change each judged scope catches, as
    the terminal says it, one bullet a scope."""
    # lazy: start-up. The gate's module loads the paired test, which a pytest start must not.
    from defan_pytest.gates.regression import power_lines

    found = power_lines(report.power)
    if not found:
        return []
    head, *rest = found
    return (["### What this run could catch", "", f"{_cell(head[:1].upper() + head[1:], 400)}", ""]
            + [f"- {_cell(line.strip(), 500)}" for line in rest if not line.strip().startswith("(")]
            + ["", *(_cell(line.strip(), 500) for line in rest if line.strip().startswith("(")), ""])


def _table_lines(report: Report) -> list[str]:
    """The domain table with its limits (and, decided by interval, its legend)."""
    limits = (report.thresholds or {}).get("limits") or {}
    lines = ["| scope | groups | FCH | max | PMH | max | RC | min | errors |", "|---|--:|---|--:|---|--:|---|--:|--:|"]
    scopes = list(report.domains.items())
    figure = report.figure
    scopes.append((f"overall ({figure})", report.overall.get(figure) or {}))
    for name, figs in scopes:
        lim = limits.get("overall" if name.startswith("overall") else name, {})

        def limit(key: str) -> str:
            v = lim.get(key)
            return "–" if v is None else f"{v:g}"

        scope = "overall" if name.startswith("overall") else name

        def fig(metric: str) -> str:
            return f"{_rate(figs.get(metric))}{_ci(figs.get(metric + '_ci'))}{_undecided(report, scope, metric)}"

        lines.append(
            f"| {_cell(name, 40)} | {_count(figs.get('scored_groups', figs.get('groups', 0)))} "
            f"| {fig('fch')} | {limit('max_fch')} | {fig('pmh')} | {limit('max_pmh')} "
            f"| {fig('rc')} | {limit('min_rc')} | {_count(figs.get('errors', 0))} |"
        )
    if (report.thresholds or {}).get("decide") == "interval":
        marked = any(_undecided(report, str(v.get("scope")), str(v.get("metric"))) for v in report.gate)
        lines += ["", "Decided by interval (`--defan-decide=interval`): a figure fails only when its whole 95% "
                  "interval lies beyond its limit" + ("; ~ = beyond its limit, passed because its interval reaches it."
                                                       if marked else ".")]
    return lines


def _undecided(report: Report, scope: str, metric: str) -> str:
    """`` ~`` after a figure beyond its limit that passed because its interval reaches it
    (``--defan-decide=interval``), else nothing."""
    # lazy: start-up. The page's package loads the scorer's modules, which a pytest start must not (formats import this).
    from defan_pytest.report.html.judged import NOT_DECIDED, verdict_state

    return " ~" if any(v.get("scope") == scope and v.get("metric") == metric and verdict_state(v)[0] == NOT_DECIDED
                       for v in report.gate) else ""


def _skip_reason(report: Report) -> str:
    """Why the level gate was skipped, in words."""
    sel = report.meta.selection
    if sel.shard:
        return f"shard {_cell(sel.shard, 20)}: a shard's gates are skipped; `defan merge` judges the shards together"
    if sel.narrowed:
        return "the selection was narrowed (-k, -m, a path, pytest-split): the gate judges whole runs"
    return "skipped"


def _outcome_lines(rows: Sequence[Any]) -> list[str]:
    """The prompts counted by outcome, the FCH and PMH counts as their sums, and why groups
    with no claim fail RC (the words of the terminal and of pytest's summary line)."""
    if not rows:
        return []
    counts = count_outcomes(rows)
    lines = [f"Outcomes of {len(rows)} prompts: {counts_text(counts)}.", "", "; ".join(figure_parts(counts)) + ".", ""]
    groups = no_claim_groups(rows).values()
    counted, no_claim = sum(g[0] for g in groups), sum(g[1] for g in groups)
    if no_claim:
        lines += [f"RC: {no_claim} of {counted} groups inconsistent for want of a claim: {RC_NO_CLAIM}.", ""]
    return lines


def _regression_lines(reg: Mapping[str, Any]) -> list[str]:
    lines = ["### Compared with the baseline", ""]
    base = reg.get("baseline") or {}
    pairs = reg.get("pairs") or {}
    note = levels_note(base)
    if note:
        lines += [f"⚠️ **Note**: {_cell(note, 600)}.", ""]
    if reg.get("status") == "skipped":
        return lines + [f"Skipped: {_cell(reg.get('reason'), 300)}", ""]
    lines.append(
        f"Baseline {_cell(base.get('model'), 60)} of {_cell(base.get('created'), 30)}: "
        f"{_count(pairs.get('paired', 0))} prompts in common, {_count(pairs.get('groups', 0))} groups; "
        f"{_count(reg.get('judged', 1))} changes judged at {100 * float(reg.get('per_test_confidence', reg.get('confidence', 0.95))):.2f}% "
        f"each, {round(100 * float(reg.get('confidence', 0.95)))}% for the whole gate."
    )
    lines += ["", "| scope | metric | before | after | change | interval | tolerance | flips worse / better | verdict |",
              "|---|---|--:|--:|--:|---|--:|--:|---|"]
    for scope, mets in (reg.get("scopes") or {}).items():
        for metric, c in mets.items():
            interval = c.get("interval")
            iv = f"[{interval[0]:+.3f}, {interval[1]:+.3f}]" if interval else "–"
            tol = c.get("tolerance")
            lines.append(
                f"| {_cell(scope, 40)} | {_cell(str(metric).upper(), 20)} | {_rate(c.get('old'))} | {_rate(c.get('new'))} "
                f"| {_signed(c.get('change'))} | {iv} | {'–' if tol is None else f'{tol:g}'} "
                f"| {_count(c.get('worse_flips', 0))} / {_count(c.get('better_flips', 0))} "
                f"| {'**REGRESSED**' if c.get('regressed') else 'ok'} |"
            )
    if reg.get("noise"):
        lines += ["", f"Noise: {_cell(reg['noise'], 300)}."]
    flipped = [f for f in reg.get("flipped") or () if f.get("direction") == "worse"]
    if flipped:
        lines += ["", f"#### {FLIPPED_WORSE_TEXT[:1].upper()}{FLIPPED_WORSE_TEXT[1:]}: {len(flipped)} (first {min(len(flipped), TOP_FLIPPED)})", "",
                  "| prompt | question | gold | before | now |", "|---|---|---|---|---|"]
        for f in flipped[:TOP_FLIPPED]:
            lines.append(
                f"| {_cell(f.get('id'), 40)} | {_cell(f.get('question'), 80)} | {_cell(NO_PRIZE_TEXT if empty_gold(f.get('answer')) else f.get('answer'), 40)} "
                f"| {_cell(f.get('old_response'), 60)} | {_cell(f.get('new_response'), 60)} |"
            )
    lines.append("")
    return lines


def models_step_summary(report: ModelsReport) -> str:
    """The Markdown summary of several models' runs: the domains-by-models table, each model
    against ``compare_to``, then each model's own summary (folded)."""
    # lazy: start-up. The table's module loads the records, which a pytest start must not (formats import this).
    from defan_pytest.report.models import comparison_lines, markdown_table

    failed = report.failed
    icon = "❌" if failed else "✅" if all(r.gate_status == "pass" for r in report.runs) else "⚠️"
    lines = [f"## {icon} DefAn: {len(report.runs)} models", "", *markdown_table(report), ""]
    compared = comparison_lines(report, every=False)
    if compared:
        # A list, nested as the lines are indented; each line's text one escaped cell.
        lines += [f"### Against {_cell(report.compare_to, 80)}", ""]
        lines += ["  " * ((len(x) - len(x.lstrip(" "))) // 2) + "- " + _cell(x.strip(), 400) for x in compared]
        lines.append("")
    for run in report.runs:
        lines += ["<details>", f"<summary>{_cell(run.meta.model_name or '', 80)}</summary>", "", step_summary(run), "</details>", ""]
    return "\n".join(lines).rstrip() + "\n"


def error_annotations(report: Report, lines_of: Mapping[str, int] | None = None) -> list[str]:
    """``::error`` workflow commands: one per breached limit and one per regression.

    ``lines_of`` maps ``"<scope>/<metric>"`` (``"regression/<scope>/<metric>"`` for a
    regression) to the 1-based line of the thresholds file that set it; the file is the
    report's ``thresholds.source`` (made relative to the working directory, as GitHub wants).
    """
    lines_of = lines_of or {}
    source = (report.thresholds or {}).get("source")
    file = None
    if source:
        try:
            file = os.path.relpath(source)
        except ValueError:
            file = source
    out: list[str] = []

    def command(title: str, message: str, key: str) -> str:
        props = []
        if file:
            props.append(f"file={escape_property(inline(file))}")
            line = lines_of.get(key)
            if line:
                props.append(f"line={line}")
        props.append(f"title={escape_property(inline(title))}")
        # One line, no escape sequence (a domain name of a report judged again may hold them).
        return f"::error {','.join(props)}::{escape_data(inline(message))}"

    for v in [] if report.gate_status == "skipped" else report.breaches:  # a skipped gate breached nothing
        out.append(command(f"DefAn gate[{v.get('scope')}]", str(v.get("message")), f"{v.get('scope')}/{v.get('metric')}"))
    reg = report.regression or {}
    for scope, mets in (reg.get("scopes") or {}).items():
        for metric, c in mets.items():
            if c.get("regressed"):
                out.append(command(f"DefAn regression[{scope}]", str(c.get("message")), f"regression/{scope}/{metric}"))
    return out


def append_step_summary(
    text: str, path: str | os.PathLike[str] | None = None, *, inputs: Iterable[Input] = (),
) -> Path | None:
    """Append ``text`` to the step summary file ``path`` (default: ``GITHUB_STEP_SUMMARY``), if
    there is one; returns its path.

    Through the safe writer's append mode (:func:`~defan_pytest.report.writer.append_output`):
    a FIFO, a device, a directory, an input of the run (``inputs``: the report judged, the
    thresholds file, the baseline, the data set), a source or data file and a report of ours
    are refused without waiting, with an
    :class:`~defan_pytest.report.writer.OutputError` that names the variable and the path."""
    target = path if path is not None else os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return None
    try:
        return append_output(target, text if text.endswith("\n") else text + "\n", inputs=inputs)
    except OutputError as exc:
        raise OutputError(f"the step summary (GITHUB_STEP_SUMMARY) {exc}") from None
