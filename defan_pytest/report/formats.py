"""Report formats: every output of a run is a writer of one protocol, in one registry.

A :class:`ReportFormat` has a ``name``, the ``option`` it answers to (``--defan-<option>`` of
the plugin; the ``defan`` commands' flags), a :meth:`~ReportFormat.check` made before any model
is called, and a :meth:`~ReportFormat.write` of a finished :class:`~defan_pytest.records.Report`.
The built-in ones are the JSON report (``json``, ``--defan-report``), the HTML report (``html``,
``--defan-html``) and GitHub Actions' step summary and ``::error`` annotations (``github``: no
option, the environment asks for it).  :data:`FORMATS` holds them (kind ``"report format"``;
third-party packages add theirs as ``format.<name>`` entry points of the ``defan_pytest``
group), and every front end writes through the two functions :func:`check_all` (before any
call) and :func:`write_all` (after the run):

>>> from defan_pytest.report import formats
>>> class Csv(formats.FileFormat):
...     name, option, help = "csv", "csv", "write the rows as CSV to this file"
...     def render(self, report, context):
...         return "".join(f"{r.id},{int(bool(r.correct))}\\n" for r in report.rows)
>>> _ = formats.FORMATS.register(Csv())   # now --defan-csv=PATH, and --csv PATH in defan gate and merge
>>> formats.FORMATS.unregister("csv")

A file format only renders text (:class:`FileFormat`): the one writer of every file
(:mod:`defan_pytest.report.writer`) checks and writes it.  Nothing here imports pytest.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional, Protocol, Tuple, Union, runtime_checkable

from defan_pytest.registry import Registry
from defan_pytest.report import github
from defan_pytest.report.writer import Input, OutputError, check_output, write_output
from defan_pytest.safetext import sanitize

if TYPE_CHECKING:  # the records load when a report is made, not on every pytest start (settings imports this)
    from defan_pytest.records import ModelsReport, Report

__all__ = [
    "BUILT_IN",
    "FORMATS",
    "Context",
    "FileFormat",
    "Output",
    "ReportFormat",
    "Written",
    "added_formats",
    "check_all",
    "write_all",
]


@dataclass(frozen=True)
class Output:
    """Where a format is asked to write: ``flag`` is how the user asked (``--defan-report``,
    ``-o``), ``given`` the path as they wrote it, ``path`` where it is (a relative one already
    taken from where the run started)."""

    flag: str
    given: str
    path: Path


@dataclass(frozen=True)
class Context:
    """What a format may need besides the report.

    ``inputs``: the files the run reads (never replaced); ``force``: an existing file that is
    not a report may be replaced (``force_hint``: how the user says so); ``baseline`` (and its
    path): the report this one is compared with (the HTML report shows it); ``annotation_lines``:
    the line of the thresholds file that set each limit (``scope/metric``,
    ``regression/scope/metric``); ``annotate``: where ``::error`` annotations go (``None``: not
    annotated); ``environ``: the environment (GitHub's variables; empty: not in GitHub Actions).
    """

    inputs: Tuple[Input, ...] = ()
    force: bool = False
    force_hint: str = ""
    baseline: Optional[Report] = None
    baseline_path: Optional[str] = None
    annotation_lines: Mapping[str, int] = field(default_factory=dict)
    annotate: Optional[Callable[[str], None]] = None
    environ: Mapping[str, str] = field(default_factory=dict)


@runtime_checkable
class ReportFormat(Protocol):
    """One output of a run.

    ``name`` is the key in :data:`FORMATS` and in the ``outputs`` given to :func:`write_all`;
    ``option`` the noun of the option that asks for it (``--defan-<option>``, and ``--<option>``
    of ``defan score``, ``gate`` and ``merge`` for an added format), ``help`` that option's help;
    ``option`` ``None``: asked by the environment instead (the format decides from the
    :class:`Context`).
    """

    @property
    def name(self) -> str: ...

    @property
    def option(self) -> Optional[str]: ...

    @property
    def help(self) -> str: ...

    def check(self, output: Output, context: Context) -> List[str]:
        """The problems of writing to ``output`` (empty: it can be written), found before any
        model is called."""

    def write(self, report: Report, output: Optional[Output], context: Context) -> Optional[Path]:
        """Write ``report``; return where it went (``None``: nothing was written).  Raises
        :class:`~defan_pytest.report.writer.OutputError` naming the path when it cannot."""


class FileFormat:
    """A format that is one file: subclass it, name it, and :meth:`render` the report as text;
    the file is checked and written by the rules of :mod:`defan_pytest.report.writer`."""

    name: str = ""
    option: Optional[str] = None
    help: str = ""

    def render(self, report: Report, context: Context) -> str:
        """The file's text."""
        raise NotImplementedError

    def check(self, output: Output, context: Context) -> List[str]:
        try:
            check_output(output.path, inputs=context.inputs, force=context.force, force_hint=context.force_hint)
        except OutputError as exc:
            return [f"{output.flag} {exc}"]
        return []

    def write(self, report: Report, output: Optional[Output], context: Context) -> Optional[Path]:
        if output is None:
            return None
        return write_output(
            output.path, self.render(report, context), inputs=context.inputs, force=context.force,
            force_hint=context.force_hint,
        )


class JsonReport(FileFormat):
    """The JSON report (``report.schema.json``): UTF-8, non-ASCII text kept as it is."""

    name = "json"
    option = "report"
    help = "write the JSON report to this file"

    def render(self, report: Report, context: Context) -> str:
        text = json.dumps(report.to_json(), ensure_ascii=False, indent=1, allow_nan=False) + "\n"
        # Text is sanitised where it enters; this is the last line of defence, so that one lone
        # surrogate that slipped through cannot cost the whole report (UTF-8 cannot encode it).
        return sanitize(text)[0]


class HtmlReport(FileFormat):
    """The self-contained HTML report (:mod:`defan_pytest.report.html`), with the baseline of
    the :class:`Context` when there is one."""

    name = "html"
    option = "html"
    help = "write the self-contained HTML report to this file"

    def render(self, report: Report, context: Context) -> str:
        # lazy: start-up. Imported when a page is written: the page's module pulls the metrics and the scorer
        # (rapidfuzz), which a pytest start that writes no page must not load (settings, and so
        # every pytest start, imports this module).
        from defan_pytest.report import html

        if getattr(report, "runs", None) is not None:  # several models (a ModelsReport): side by side
            return html.render_models(report)
        return html.render(report, baseline=context.baseline, baseline_path=context.baseline_path)


class GithubActions:
    """GitHub Actions: the Markdown step summary appended to ``GITHUB_STEP_SUMMARY`` and, with
    ``GITHUB_ACTIONS=true``, an ``::error`` annotation per breach and regression (to the
    context's ``annotate``).  The summary is appended by the safe writer's append mode, never to
    an input of the run nor to a FIFO or a device: a refusal is an OutputError, as for a file."""

    name = "github"
    option: Optional[str] = None
    help = "GitHub Actions' step summary and annotations"

    def check(self, output: Output, context: Context) -> List[str]:
        return []

    def write(self, report: Report, output: Optional[Output], context: Context) -> Optional[Path]:
        written = None
        target = context.environ.get("GITHUB_STEP_SUMMARY")
        runs = getattr(report, "runs", None)  # several models (a ModelsReport): one table, each model's breaches
        if target:
            text = github.models_step_summary(report) if runs is not None else github.step_summary(report)  # type: ignore[arg-type]
            written = github.append_step_summary(text, target, inputs=context.inputs)
        if context.environ.get("GITHUB_ACTIONS") == "true" and context.annotate is not None:
            for run in runs if runs is not None else (report,):
                for line in github.error_annotations(run, context.annotation_lines):
                    context.annotate(line)
        return written


def _check_format(entry: object) -> Union[bool, str]:
    if isinstance(entry, type):  # an entry point naming the class: it is called for the instance
        return "a class, not an instance of it"
    if not isinstance(entry, ReportFormat):
        return "not a report format (name, option, help, check and write)"
    return True


#: Every report format, built-in ones first (``format.<name>`` entry points add more).
FORMATS: Registry[ReportFormat] = Registry("report format", _check_format, entry_point_prefix="format")
for _format in (JsonReport(), HtmlReport(), GithubActions()):
    FORMATS.register(_format)
FORMATS.seal_built_ins()

#: The names of the built-in formats (their options are the plugin's and the commands' own).
BUILT_IN: Tuple[str, ...] = FORMATS.names()


def added_formats() -> List[ReportFormat]:
    """The formats registered besides the built-in ones that answer to an option."""
    return [f for f in FORMATS.values() if f.name not in BUILT_IN and f.option]


def check_all(outputs: Mapping[str, Output], context: Context) -> List[str]:
    """Every problem of writing the ``outputs`` asked for (format name -> :class:`Output`),
    found before anything is asked or scored: two outputs on one file, and each format's own
    check."""
    problems: List[str] = []
    seen: List[Output] = []
    for fmt in FORMATS.values():
        out = outputs.get(fmt.name)
        if out is None:
            continue
        same = next((o for o in seen if os.path.abspath(o.path) == os.path.abspath(out.path)), None)
        if same is not None:
            problems.append(f"{out.flag} {out.given}: the same file as {same.flag}; give each its own")
            continue
        seen.append(out)
        problems.extend(fmt.check(out, context))
    return problems


@dataclass(frozen=True)
class Written:
    """What :func:`write_all` wrote (format name -> path) and what it could not (one message
    each, naming the option and the path)."""

    paths: Dict[str, Path]
    problems: List[str]


def write_all(report: Union[Report, ModelsReport], outputs: Mapping[str, Output], context: Context) -> Written:
    """Write ``report`` in every format asked for: each one of ``outputs`` (format name ->
    :class:`Output`) and each format asked by the environment, in registration order.  A write
    that fails does not stop the others: its message is in :attr:`Written.problems`."""
    paths: Dict[str, Path] = {}
    problems: List[str] = []
    for fmt in FORMATS.values():
        out = outputs.get(fmt.name)
        if out is None and fmt.option is not None:
            continue
        try:
            path = fmt.write(report, out, context)  # type: ignore[arg-type]
        except OutputError as exc:
            problems.append(f"{out.flag} {exc}" if out is not None else f"{fmt.name}: {exc}")
            continue
        except Exception as exc:  # noqa: BLE001 - an added format written for reports of one model
            if fmt.name in BUILT_IN or getattr(report, "runs", None) is None:
                raise
            where = out.flag if out is not None else fmt.name
            problems.append(f"{where}: the {fmt.name} format cannot write a report of several models "
                            f"({type(exc).__name__}: {exc}); its report's runs are the models' reports")
            continue
        if path is not None:
            paths[fmt.name] = path
    return Written(paths, problems)
